//! Loading a policy: reading the policy and entities files, checking the
//! annotations this module gives meaning to, and load-time errors that name
//! the file, line and column. Everything here is the operator's input.

use std::fmt::Write as _;
use std::path::Path;
use std::str::FromStr;

use cedar_policy::{EntityId, PolicySet};
use miette::Diagnostic;

use super::cache::{context_free_forbids, is_context_free, read_annotations};
use super::request::{ACTION_TYPE, CALL_ACTION, TOOL_TYPE, USER_TYPE};
use super::*;
use airlock_settings::key_doc::Value as Shown;

airlock_settings::section! {
    /// The keys of `[policy]`.
    pub const POLICY: Section<PolicyFiles> = "policy";
    /// `[policy]` as written.
    pub struct RawPolicy {}
    hand {
        /// the Cedar policy file: allow, deny or ask for each call (book/src/operator/policy.md)
        policies: Option<PathBuf>, Reload, accepts "a path",
            unset "not set: tools without side effects run, the others ask",
            show |p: &PolicyFiles| p.policies.as_deref().map(Shown::path),
            example "\"policy.cedar\"";
        /// the Cedar entities (JSON): users, their attributes and parents, what they own
        entities: Option<PathBuf>, Reload, accepts "a path", unset "not set: no entities",
            show |p: &PolicyFiles| p.entities.as_deref().map(Shown::path),
            example "\"entities.json\"";
    }
}

/// Cedar policy and entity files named in the config (`[policy]`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PolicyFiles {
    /// Cedar policies; `None` uses the default policy (allow tools without
    /// side effects, ask for the others).
    pub policies: Option<PathBuf>,
    /// Cedar entities (JSON): users, roles, what they own.
    pub entities: Option<PathBuf>,
}

impl PolicyFiles {
    /// `[policy]` with relative paths resolved by `resolve`. The files are
    /// read, and their errors reported, when the policy is loaded
    /// ([`Policy::from_files`]).
    pub fn from_raw(raw: RawPolicy, resolve: &dyn Fn(&Path) -> PathBuf) -> PolicyFiles {
        PolicyFiles { policies: raw.policies.as_deref().map(resolve), entities: raw.entities.as_deref().map(resolve) }
    }
}

impl Policy {
    /// Load Cedar policies from `policies` and optional entities JSON from `entities`.
    ///
    /// # Errors
    ///
    /// [`PolicyError::Read`] when a file cannot be read; otherwise as
    /// [`Policy::from_text`].
    pub fn from_files(policies: &Path, entities: Option<&Path>) -> Result<Policy, PolicyError> {
        let read = |what, path: &Path| {
            std::fs::read_to_string(path).map_err(|source| PolicyError::Read { what, path: path.to_path_buf(), source })
        };
        let policy_text = read("policy", policies)?;
        let entities_text = match entities {
            Some(path) => Some((read("entities", path)?, path.display().to_string())),
            None => None,
        };
        Policy::from_text(
            &policy_text,
            &policies.display().to_string(),
            entities_text.as_ref().map(|(text, name)| (text.as_str(), name.as_str())),
        )
    }

    /// Same from text (file names only used in messages): `entities` is
    /// `(json_text, file_name)`.
    ///
    /// # Errors
    ///
    /// [`PolicyError::Syntax`] for text that is not Cedar,
    /// [`PolicyError::Invalid`] for a policy that cannot be used as written,
    /// [`PolicyError::Entities`] for entities JSON that Cedar rejects.
    pub fn from_text(
        policies: &str,
        policies_name: &str,
        entities: Option<(&str, &str)>,
    ) -> Result<Policy, PolicyError> {
        let (policies, order) = parse_policies(policies, policies_name)?;
        let entities = match entities {
            Some((json, name)) => {
                parse_entities(json).map_err(|message| PolicyError::Entities { file: name.to_string(), message })?
            }
            None => Entities::empty(),
        };
        #[expect(clippy::expect_used, reason = "constant names, exercised by every unit test")]
        let (user_type, tool_type, action) = (
            EntityTypeName::from_str(USER_TYPE).expect("valid type name"),
            EntityTypeName::from_str(TOOL_TYPE).expect("valid type name"),
            EntityUid::from_type_name_and_id(
                EntityTypeName::from_str(ACTION_TYPE).expect("valid type name"),
                EntityId::new(CALL_ACTION),
            ),
        );
        let annotations = read_annotations(&policies);
        let context_free = is_context_free(&policies);
        let context_free_forbids = if context_free { None } else { context_free_forbids(&policies) };
        let principals = super::principal::principal_facts(&entities, &user_type);
        Ok(Policy {
            principals,
            context_free,
            context_free_forbids,
            decisions: RwLock::default(),
            policies,
            entities,
            order,
            annotations,
            authorizer: Authorizer::new(),
            user_type,
            tool_type,
            action,
            resolved: RwLock::default(),
        })
    }
}

/// Parses the policy text, re-ids policies from `@id`, and checks the
/// annotations this module gives meaning to. Returns the set and the ids in
/// file order.
fn parse_policies(text: &str, file: &str) -> Result<(PolicySet, Vec<PolicyId>), PolicyError> {
    let parsed = PolicySet::from_str(text).map_err(|errors| syntax_error(text, file, &errors))?;

    // Cedar names statements `policy0`, `policy1`, … in file order (templates
    // included); sort by that number to recover the order and each
    // statement's position in the text.
    let position = |id: &PolicyId| id.to_string().strip_prefix("policy").and_then(|n| n.parse::<usize>().ok());
    let mut statements: Vec<(usize, String, Result<&cedar_policy::Policy, String>)> = parsed
        .policies()
        .map(|p| (position(p.id()).unwrap_or(usize::MAX), p.to_cedar().unwrap_or_default(), Ok(p)))
        .chain(parsed.templates().map(|t| {
            let id = t.annotation("id").map_or_else(|| t.id().to_string(), str::to_string);
            (position(t.id()).unwrap_or(usize::MAX), t.to_cedar(), Err(id))
        }))
        .collect();
    statements.sort_by_key(|(n, _, _)| *n);

    let mut set = PolicySet::new();
    let mut order = Vec::with_capacity(statements.len());
    let mut seen: HashMap<String, (usize, usize)> = HashMap::new();
    let mut cursor = 0;
    for (_, source, policy) in statements {
        // Locate the statement: it is a verbatim slice of the text, after the
        // previous one.
        let offset = text.get(cursor..).and_then(|rest| rest.find(source.as_str())).map_or(cursor, |at| cursor + at);
        cursor = offset + source.len();
        let (line, column) = line_column(text, offset);
        let invalid = |policy: &str, message: String| PolicyError::Invalid {
            file: file.to_string(),
            line,
            column,
            policy: policy.to_string(),
            message,
        };

        let policy = match policy {
            Ok(policy) => policy,
            Err(template) => {
                return Err(invalid(
                    &template,
                    "templates (policies with ?principal or ?resource slots) are not supported; \
                     write the principal or resource out"
                        .to_string(),
                ));
            }
        };
        let id = match policy.annotation("id") {
            Some(id) if id.trim().is_empty() => {
                return Err(invalid(policy.id().as_ref(), "@id must not be empty".to_string()));
            }
            Some(id) => PolicyId::new(id),
            None => policy.id().clone(),
        };
        match (policy.effect(), policy.annotation("ask"), policy.annotation("reason")) {
            (Effect::Forbid, Some(_), _) => {
                return Err(invalid(
                    id.as_ref(),
                    "@ask only applies to permit policies; a forbid always denies (use @reason to say why)".to_string(),
                ));
            }
            (Effect::Permit, _, Some(_)) => {
                return Err(invalid(
                    id.as_ref(),
                    "@reason only applies to forbid policies; use @ask on a permit that needs confirmation".to_string(),
                ));
            }
            _ => {}
        }
        if let Some(approver) = policy.annotation("approver") {
            if policy.annotation("ask").is_none() {
                return Err(invalid(
                    id.as_ref(),
                    "@approver only applies to a permit with @ask: it names who must approve what @ask asks"
                        .to_string(),
                ));
            }
            if let Err(why) = crate::confirm::Approver::parse(approver) {
                return Err(invalid(id.as_ref(), format!("@approver: {why}")));
            }
        }
        if let Some((first_line, first_column)) = seen.insert(id.to_string(), (line, column)) {
            return Err(invalid(
                id.as_ref(),
                format!(
                    "duplicate policy id: {file}:{first_line}:{first_column} has the same id; give each policy \
                     its own @id"
                ),
            ));
        }
        set.add(policy.new_id(id.clone())).map_err(|e| invalid(id.as_ref(), describe_error(&e)))?;
        order.push(id);
    }
    Ok((set, order))
}

/// Keys of one entity in Cedar's entities JSON format.
const ENTITY_KEYS: [&str; 4] = ["uid", "attrs", "parents", "tags"];

/// Parses an entities file. Cedar ignores unknown keys in an entity; a typo
/// such as `"parent"` would then silently drop a role, so unknown keys are
/// refused here first.
fn parse_entities(json: &str) -> Result<Entities, String> {
    let value: Value = serde_json::from_str(json).map_err(|e| format!("invalid JSON: {e}"))?;
    let list =
        value.as_array().ok_or("expected a JSON array of entities, each with \"uid\", \"attrs\" and \"parents\"")?;
    for (index, entity) in list.iter().enumerate() {
        let Some(fields) = entity.as_object() else {
            return Err(format!("entity #{} is not a JSON object", index + 1));
        };
        if let Some(key) = fields.keys().find(|key| !ENTITY_KEYS.contains(&key.as_str())) {
            return Err(format!(
                "entity #{} ({}): unknown key `{key}`; an entity has only {}",
                index + 1,
                uid_text(fields.get("uid")),
                ENTITY_KEYS.join(", ")
            ));
        }
    }
    Entities::from_json_value(value, None).map_err(|e| describe_error(&e))
}

/// `Type::"id"` for an entity's `uid` field, for messages.
fn uid_text(uid: Option<&Value>) -> String {
    match uid.map(|uid| (uid.get("type"), uid.get("id"))) {
        Some((Some(Value::String(ty)), Some(Value::String(id)))) => format!("{ty}::{id:?}"),
        _ => "no valid uid".to_string(),
    }
}

/// Turns Cedar's parse errors into one [`PolicyError::Syntax`] with
/// `file:line:column` positions computed from the diagnostics' byte offsets.
fn syntax_error(text: &str, file: &str, errors: &cedar_policy::ParseErrors) -> PolicyError {
    let mut first = None;
    let mut message = String::new();
    for error in errors.iter() {
        let offset = error.labels().and_then(|mut labels| labels.next()).map(|label| label.offset());
        let (line, column) = offset.map_or((1, 1), |offset| line_column(text, offset));
        let mut text_of_error = describe_error(error);
        if let Some(help) = error.help() {
            let _ = write!(text_of_error, " (help: {help})");
        }
        if offset.is_none() {
            text_of_error.push_str(" (Cedar gave no position for this error)");
        }
        match first {
            None => {
                first = Some((line, column));
                message.push_str(&text_of_error);
                message.push_str(&source_excerpt(text, line, column));
            }
            Some(_) => {
                let _ = write!(message, "\n{file}:{line}:{column}: {text_of_error}");
            }
        }
    }
    let (line, column) = first.unwrap_or((1, 1));
    PolicyError::Syntax { file: file.to_string(), line, column, message }
}

/// 1-based line and column (in characters) of byte `offset` in `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

/// The source line `line` with a caret under `column`, for error messages.
fn source_excerpt(text: &str, line: usize, column: usize) -> String {
    match text.lines().nth(line.saturating_sub(1)) {
        Some(source) => {
            let number = line.to_string();
            format!("\n {number} | {source}\n {pad} | {caret:>column$}", pad = " ".repeat(number.len()), caret = "^")
        }
        None => String::new(),
    }
}
