//! Building the Cedar request for one call: the principal, the resource
//! entity with the operator's facts, and the call's arguments as the context.
//!
//! The principal string and the arguments are untrusted. Any principal is a
//! valid (possibly unknown) user; the arguments are converted with explicit
//! caps ([`MAX_ARGUMENT_DEPTH`], [`MAX_ARGUMENT_VALUES`]) and a failure is a
//! denial reason for the model, never a panic.

use cedar_policy::{Context, Entity, EntityId, RestrictedExpression};

use super::*;

/// Cedar entity type of principals.
pub(super) const USER_TYPE: &str = "Airlock::User";
/// Cedar entity type of resources.
pub(super) const TOOL_TYPE: &str = "Airlock::Tool";
/// Cedar entity type of the only action.
pub(super) const ACTION_TYPE: &str = "Airlock::Action";
/// Id of the only action.
pub(super) const CALL_ACTION: &str = "call";
/// Resource attribute carrying [`ToolFacts::side_effect`].
const SIDE_EFFECT_ATTR: &str = "side_effect";
/// Context attribute carrying the call's arguments.
const ARGUMENTS_KEY: &str = "arguments";

impl Policy {
    /// Builds the Cedar request; `Err` is a denial reason for the model.
    pub(super) fn request(&self, principal: &str, tool: &ToolFacts<'_>, arguments: &Value) -> Result<Request, String> {
        convertible(arguments)?;
        let arguments = to_cedar(arguments).map_err(ArgumentsError::reason)?;
        let context = Context::from_pairs(arguments.map(|a| (ARGUMENTS_KEY.to_string(), a))).map_err(|e| {
            format!(
                "the arguments could not be checked against the policy ({}), so the call was denied",
                describe_error(&e)
            )
        })?;
        Request::new(
            EntityUid::from_type_name_and_id(self.user_type.clone(), EntityId::new(principal)),
            self.action.clone(),
            self.tool_uid(tool.name),
            context,
            None,
        )
        .map_err(|e| {
            format!("the call could not be checked against the policy ({}), so it was denied", describe_error(&e))
        })
    }

    /// Whether `principal` is in the entity `group` (`Airlock::Role::"x"`)
    /// by the operator's entities file: who may answer an approval that
    /// names a group. An unknown principal or group is in nothing.
    pub fn principal_is_in(&self, principal: &str, group: &str) -> bool {
        let Ok(group) = group.parse::<EntityUid>() else { return false };
        let uid = EntityUid::from_type_name_and_id(self.user_type.clone(), EntityId::new(principal));
        uid != group && self.entities.is_ancestor_of(&group, &uid)
    }

    /// `entities` with the principal's entity carrying `attributes` (from
    /// its token) in place of those of the same name; the entities file's
    /// other attributes, tags and parents stay. The values are only
    /// strings, booleans, integers and flat lists of those (the JWT layer
    /// drops anything else), so their Cedar JSON is never read as an entity
    /// reference or an extension value.
    pub(super) fn with_principal_attributes(
        &self,
        entities: &Entities,
        principal: &str,
        attributes: &[(String, Value)],
    ) -> Result<Entities, String> {
        let uid = EntityUid::from_type_name_and_id(self.user_type.clone(), EntityId::new(principal));
        let mut json = match entities.get(&uid) {
            Some(existing) => existing.to_json_value().map_err(|e| describe_error(&e))?,
            None => serde_json::json!({
                "uid": { "type": USER_TYPE, "id": principal },
                "attrs": {},
                "parents": [],
            }),
        };
        let attrs = json
            .as_object_mut()
            .map(|entity| entity.entry("attrs").or_insert_with(|| Value::Object(serde_json::Map::default())))
            .and_then(Value::as_object_mut)
            .ok_or("the principal entity has no attribute map")?;
        for (name, value) in attributes {
            attrs.insert(name.clone(), value.clone());
        }
        let entity = Entity::from_json_value(json, None).map_err(|e| describe_error(&e))?;
        entities.clone().upsert_entities([entity], None).map_err(|e| describe_error(&e))
    }

    fn tool_uid(&self, name: &str) -> EntityUid {
        EntityUid::from_type_name_and_id(self.tool_type.clone(), EntityId::new(name))
    }

    /// The operator's entities plus the resource entity for this call: the
    /// file's entity for the tool (if any) with `side_effect` from `tool`.
    pub(super) fn entities_for(&self, tool: &ToolFacts<'_>) -> Result<Entities, String> {
        let uid = self.tool_uid(tool.name);
        let entity = match self.entities.get(&uid) {
            // Going through JSON keeps the file's attributes, tags and parents
            // exactly; `Entity::into_inner` would drop tags.
            Some(existing) => {
                let mut json = existing.to_json_value().map_err(|e| describe_error(&e))?;
                let attrs = json
                    .as_object_mut()
                    .map(|entity| entity.entry("attrs").or_insert_with(|| Value::Object(serde_json::Map::default())))
                    .and_then(Value::as_object_mut)
                    .ok_or("the tool entity has no attribute map")?;
                attrs.insert(SIDE_EFFECT_ATTR.to_string(), Value::Bool(tool.side_effect));
                Entity::from_json_value(json, None).map_err(|e| describe_error(&e))?
            }
            None => Entity::new(
                uid,
                HashMap::from([(SIDE_EFFECT_ATTR.to_string(), RestrictedExpression::new_bool(tool.side_effect))]),
                HashSet::new(),
            )
            .map_err(|e| describe_error(&e))?,
        };
        self.entities.clone().upsert_entities([entity], None).map_err(|e| describe_error(&e))
    }
}

/// Why arguments could not be converted into a Cedar context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ArgumentsError {
    TooDeep,
    TooMany,
}

impl ArgumentsError {
    fn reason(self) -> String {
        match self {
            ArgumentsError::TooDeep => format!(
                "the arguments are nested more than {MAX_ARGUMENT_DEPTH} levels deep, too deep for the policy \
                 to check, so the call was denied; send flatter arguments"
            ),
            ArgumentsError::TooMany => format!(
                "the arguments hold more than {MAX_ARGUMENT_VALUES} values, too many for the policy to check, \
                 so the call was denied; send fewer values"
            ),
        }
    }
}

/// Whether `arguments` can become the Cedar context: `Err` is the denial
/// reason for the model. The only arguments that cannot are those past the
/// caps ([`MAX_ARGUMENT_DEPTH`], [`MAX_ARGUMENT_VALUES`]): [`to_cedar`]
/// maps every other JSON value, and the decimals it writes are in range by
/// construction ([`decimal_text`]). So a cached decision needs only this
/// walk, not the request ([`Policy::decide_as`]).
pub(super) fn convertible(arguments: &Value) -> Result<(), String> {
    let mut budget = MAX_ARGUMENT_VALUES;
    within_caps(arguments, 1, &mut budget).map_err(ArgumentsError::reason)
}

/// Counts `value` and everything in it against `budget`, and checks that
/// no array or object is nested deeper than [`MAX_ARGUMENT_DEPTH`].
fn within_caps(value: &Value, depth: usize, budget: &mut usize) -> Result<(), ArgumentsError> {
    *budget = budget.checked_sub(1).ok_or(ArgumentsError::TooMany)?;
    match value {
        Value::Array(items) => nested(items.iter(), depth, budget),
        Value::Object(fields) => nested(fields.values(), depth, budget),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => Ok(()),
    }
}

/// [`within_caps`] for what an array or object at `depth` holds.
fn nested<'a>(
    mut children: impl Iterator<Item = &'a Value>,
    depth: usize,
    budget: &mut usize,
) -> Result<(), ArgumentsError> {
    if depth > MAX_ARGUMENT_DEPTH {
        return Err(ArgumentsError::TooDeep);
    }
    children.try_for_each(|child| within_caps(child, depth + 1, budget))
}

/// Converts JSON that is [`convertible`] into a Cedar restricted expression
/// (see the module docs for the mapping). `None` means "omit" (JSON
/// `null`).
fn to_cedar(value: &Value) -> Result<Option<RestrictedExpression>, ArgumentsError> {
    let expression = match value {
        Value::Null => return Ok(None),
        Value::Bool(b) => RestrictedExpression::new_bool(*b),
        Value::String(s) => RestrictedExpression::new_string(s.clone()),
        Value::Number(n) => match n.as_i64() {
            Some(i) => RestrictedExpression::new_long(i),
            None => match n.as_f64().and_then(decimal_text) {
                Some(text) => RestrictedExpression::new_decimal(text),
                None => RestrictedExpression::new_string(n.to_string()),
            },
        },
        Value::Array(items) => {
            let mut set = Vec::with_capacity(items.len());
            for item in items {
                if let Some(item) = to_cedar(item)? {
                    set.push(item);
                }
            }
            RestrictedExpression::new_set(set)
        }
        Value::Object(fields) => {
            let mut record = Vec::with_capacity(fields.len());
            for (key, field) in fields {
                if let Some(field) = to_cedar(field)? {
                    record.push((key.clone(), field));
                }
            }
            // Keys of a JSON object are unique, so this cannot fail; if it
            // ever did, treating it as "too many" still denies the call.
            RestrictedExpression::new_record(record).map_err(|_| ArgumentsError::TooMany)?
        }
    };
    Ok(Some(expression))
}

/// The Cedar `decimal` literal for `x`, if `x` has at most 4 fractional digits
/// (in its shortest decimal form) and fits Cedar's decimal range.
pub(super) fn decimal_text(x: f64) -> Option<String> {
    if !x.is_finite() {
        return None;
    }
    // `Display` for f64 prints the shortest text that reads back as the same
    // number, never in exponent form.
    let text = x.to_string();
    let (integer, fraction) = text.split_once('.').unwrap_or((&text, "0"));
    if fraction.is_empty() || fraction.len() > 4 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Cedar stores a decimal as an i64 counting ten-thousandths.
    let whole: i128 = integer.parse().ok()?;
    let frac: i128 = format!("{fraction:0<4}").parse().ok()?;
    let scaled = whole.checked_mul(10_000)?;
    let scaled = if integer.starts_with('-') { scaled.checked_sub(frac)? } else { scaled.checked_add(frac)? };
    i64::try_from(scaled).ok()?;
    Some(format!("{integer}.{fraction}"))
}
