//! Schema cost: a load-time upper bound on the work the host does to
//! evaluate a tool's JSON Schema, per byte of the instance.
//!
//! Trusts nothing in the schema: it is declared by the component. A few
//! kilobytes of `$defs` whose references fan out (each level pointing twice
//! at the next) make jsonschema evaluate 2^depth subschemas at one instance
//! node, so the loader refuses any schema whose bound exceeds
//! [`MAX_SCHEMA_COST`], and each call multiplies the bound by the size of
//! its instance to decide how (and whether) to evaluate it (`validate.rs`).
//!
//! The bound is conservative for what jsonschema 0.61 does:
//!
//! - every schema evaluated in place at an instance node (through `allOf`,
//!   `anyOf`, `oneOf`, `not`, `if`/`then`/`else`, `dependentSchemas`,
//!   `dependencies`, `$ref`, `$dynamicRef`, `$recursiveRef`) is summed, with
//!   memoization, so fan-out is counted and not re-walked;
//! - a child instance node (property, item, property name) pays the sum
//!   over those schemas of what applies to one child; the cost at any
//!   descendant is bounded per remaining instance depth, so a recursive
//!   schema that descends is bounded by the instance depth cap, and a
//!   reference cycle that does not descend is refused;
//! - keywords whose work grows with the instance are weighted per byte
//!   (`pattern`, `format`, content keywords), per listed item
//!   (`properties`, `required`, `enum`, `const`) or per descendant
//!   (`uniqueItems` hashes the whole array); `unevaluatedProperties` and
//!   `unevaluatedItems` re-evaluate the in-place subschemas once per level of
//!   nesting to collect annotations, so they multiply the cost by it.
//!
//! References must stay inside the schema: `#` JSON pointers, anchors
//! (`$anchor`, `$dynamicAnchor`, `#name` ids) and the root `$id`. Anything
//! else (another document, a nested `$id` that starts a new base URI) is
//! refused rather than guessed. The analysis itself is bounded by
//! [`MAX_ANALYSIS_STEPS`] and [`MAX_EVALUATION_NESTING`].

use serde_json::{Map, Value};
use std::collections::HashMap;
use std::fmt;

/// Largest accepted evaluation cost of a schema, in work units per byte of
/// the instance's JSON text (one unit is roughly one keyword evaluated at
/// one instance node). The bundled tools' schemas cost below 100.
pub const MAX_SCHEMA_COST: u64 = 4096;
/// Most memoized (subschema, depth) evaluations the analysis of one schema
/// may take; a schema needing more is refused as too complex.
pub const MAX_ANALYSIS_STEPS: usize = 1_000_000;
/// Deepest nesting of subschemas and references one evaluation may go
/// through (jsonschema recurses as deep, on the host's stack).
pub const MAX_EVALUATION_NESTING: usize = 1024;

/// Weight per instance byte of a `pattern` (and of each `patternProperties`
/// pattern matched against a key): regexes are compiled by the linear-time
/// `regex` engine under `loader::MAX_REGEX_BYTES`.
const PATTERN_WEIGHT: u64 = 32;
/// Weight per instance byte of a `format` check (a parser over the string).
const FORMAT_WEIGHT: u64 = 16;
/// Weight per instance byte of `contentEncoding` / `contentMediaType`
/// (base64 decoding, JSON parsing of the string).
const CONTENT_WEIGHT: u64 = 16;
/// Weight of `uniqueItems` per descendant (each item is hashed).
const UNIQUE_WEIGHT: u64 = 4;

/// Why a schema's cost cannot be accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CostError {
    /// JSON pointer (in the schema) of the subschema where it happens;
    /// empty for the root.
    pub path: String,
    /// What happens there.
    pub problem: Problem,
}

/// What is wrong with a schema's cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// Evaluating the subschema costs more than [`MAX_SCHEMA_COST`].
    TooCostly {
        /// The cost reached there (saturating), in units per instance byte.
        cost: u64,
    },
    /// A reference cycle that does not descend into the instance: its
    /// evaluation never ends.
    Cycle,
    /// A reference the analysis cannot resolve inside the schema.
    Unresolvable {
        /// The reference as written.
        reference: String,
    },
    /// A nested `$id` that changes the base URI.
    NestedId,
    /// More than [`MAX_ANALYSIS_STEPS`] steps or [`MAX_EVALUATION_NESTING`]
    /// levels.
    TooComplex,
}

impl fmt::Display for CostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.path.is_empty() { "/" } else { &self.path };
        match &self.problem {
            Problem::TooCostly { cost } => write!(
                f,
                "at {at} evaluation costs {} work units per instance byte, more than MAX_SCHEMA_COST = \
                 {MAX_SCHEMA_COST}; references or combinators multiply there (avoid a subschema referenced \
                 several times from one level, or chains of allOf/anyOf/oneOf)",
                if *cost == u64::MAX { "at least 2^64".to_owned() } else { cost.to_string() },
            ),
            Problem::Cycle => write!(
                f,
                "at {at} a reference cycle never descends into the instance (only allOf/anyOf/oneOf/not/if/\
                 then/else/$ref between its members), so its evaluation never ends"
            ),
            Problem::Unresolvable { reference } => write!(
                f,
                "at {at} the reference {reference:?} cannot be resolved inside the schema; accepted are \
                 \"#\" JSON pointers, anchors and the root $id"
            ),
            Problem::NestedId => {
                write!(f, "at {at} a nested $id changes the base URI; only the root schema may have an $id")
            }
            Problem::TooComplex => write!(
                f,
                "at {at} the schema is too complex to bound (more than MAX_ANALYSIS_STEPS = \
                 {MAX_ANALYSIS_STEPS} steps or MAX_EVALUATION_NESTING = {MAX_EVALUATION_NESTING} nested \
                 subschemas and references)"
            ),
        }
    }
}

/// The evaluation cost of `schema` per byte of an instance at most `depth`
/// levels deep, or why it cannot be accepted.
///
/// # Errors
///
/// See [`Problem`].
pub fn cost(schema: &Value, depth: usize) -> Result<u64, CostError> {
    let mut walker = Walker::new(schema)?;
    let cost = walker.walk(schema, &Loc::Root, depth, 0)?;
    Ok(cost.per_node())
}

/// Where a subschema is, as a chain of pointer segments rendered only for
/// an error message.
enum Loc<'a> {
    Root,
    Key(&'a Loc<'a>, &'a str),
    Index(&'a Loc<'a>, usize),
    At(&'a str),
}

impl Loc<'_> {
    fn render(&self) -> String {
        match self {
            Loc::Root => String::new(),
            Loc::Key(parent, key) => format!("{}/{}", parent.render(), key.replace('~', "~0").replace('/', "~1")),
            Loc::Index(parent, index) => format!("{}/{index}", parent.render()),
            Loc::At(path) => (*path).to_owned(),
        }
    }
}

/// The cost of a subschema at one remaining depth.
#[derive(Debug, Clone, Copy, Default)]
struct Cost {
    /// Weighted evaluations at the instance node itself.
    here: u64,
    /// Weighted evaluations at any one descendant node.
    below: u64,
    /// Nesting of in-place subschemas (annotation collection re-walks it).
    height: u64,
    /// The value depends on the remaining depth (a descent hit the cap).
    deep: bool,
}

impl Cost {
    fn per_node(self) -> u64 {
        self.here.max(self.below)
    }

    /// Both apply.
    fn plus(self, other: Cost) -> Cost {
        Cost {
            here: self.here.saturating_add(other.here),
            below: self.below.saturating_add(other.below),
            height: self.height.max(other.height),
            deep: self.deep | other.deep,
        }
    }

    /// One of them applies.
    fn or(self, other: Cost) -> Cost {
        Cost {
            here: self.here.max(other.here),
            below: self.below.max(other.below),
            height: self.height.max(other.height),
            deep: self.deep | other.deep,
        }
    }
}

type Key = (usize, usize);

struct Walker<'s> {
    root: &'s Value,
    root_id: Option<String>,
    /// Anchor name → (subschema, its location).
    anchors: HashMap<String, Vec<(&'s Value, String)>>,
    /// Results that do not depend on the remaining depth.
    shallow: HashMap<usize, Cost>,
    /// Results at one remaining depth.
    deep: HashMap<Key, Cost>,
    /// (subschema, depth) pairs being evaluated: meeting one again is a
    /// cycle that did not descend.
    active: std::collections::HashSet<Key>,
    steps: usize,
    draft4: bool,
}

fn address(value: &Value) -> usize {
    std::ptr::from_ref(value) as usize
}

/// Keywords whose value is one subschema evaluated in place.
const IN_PLACE_ONE: &[&str] = &["not", "if", "then", "else"];
/// Keywords whose value is a list of subschemas evaluated in place.
const IN_PLACE_LIST: &[&str] = &["allOf", "anyOf", "oneOf"];

impl<'s> Walker<'s> {
    fn new(root: &'s Value) -> Result<Self, CostError> {
        let draft4 = root.get("$schema").and_then(Value::as_str).is_some_and(|s| s.contains("draft-04"));
        let root_id = root
            .get("$id")
            .or_else(|| if draft4 { root.get("id") } else { None })
            .and_then(Value::as_str)
            .map(|id| id.trim_end_matches('#').to_owned());
        let mut walker = Self {
            root,
            root_id,
            anchors: HashMap::new(),
            shallow: HashMap::new(),
            deep: HashMap::new(),
            active: Default::default(),
            steps: 0,
            draft4,
        };
        let mut path = String::new();
        walker.collect_anchors(root, &mut path, 0)?;
        Ok(walker)
    }

    /// Record every anchor; refuse nested `$id`s that start a new base URI.
    /// Walks the document as a tree (no references), so it is bounded by
    /// its size and its nesting (at most serde_json's recursion limit).
    fn collect_anchors(&mut self, schema: &'s Value, path: &mut String, level: usize) -> Result<(), CostError> {
        let Some(object) = schema.as_object() else { return Ok(()) };
        let error = |path: &str, problem| CostError { path: path.to_owned(), problem };
        if level > MAX_EVALUATION_NESTING {
            return Err(error(path, Problem::TooComplex));
        }
        for (keyword, names) in [("$anchor", false), ("$dynamicAnchor", false), ("$id", true), ("id", true)] {
            let Some(name) = object.get(keyword).and_then(Value::as_str) else { continue };
            if !names {
                self.anchors.entry(name.to_owned()).or_default().push((schema, path.clone()));
            } else if keyword == "id" && !self.draft4 {
                // Not a keyword after draft 4.
            } else if let Some(anchor) = name.strip_prefix('#') {
                self.anchors.entry(anchor.to_owned()).or_default().push((schema, path.clone()));
            } else if level > 0 {
                return Err(error(path, Problem::NestedId));
            }
        }
        for (keyword, value) in object {
            let len = path.len();
            path.push('/');
            path.push_str(&escape(keyword));
            match value {
                Value::Object(map) if is_map_of_schemas(keyword) => {
                    for (name, sub) in map {
                        let len = path.len();
                        path.push('/');
                        path.push_str(&escape(name));
                        self.collect_anchors(sub, path, level + 1)?;
                        path.truncate(len);
                    }
                }
                Value::Array(list) if is_list_of_schemas(keyword) => {
                    for (index, sub) in list.iter().enumerate() {
                        let len = path.len();
                        path.push_str(&format!("/{index}"));
                        self.collect_anchors(sub, path, level + 1)?;
                        path.truncate(len);
                    }
                }
                Value::Object(_) if is_one_schema(keyword) => self.collect_anchors(value, path, level + 1)?,
                _ => {}
            }
            path.truncate(len);
        }
        Ok(())
    }

    fn walk(&mut self, schema: &'s Value, loc: &Loc<'_>, depth: usize, nesting: usize) -> Result<Cost, CostError> {
        let here = address(schema);
        if let Some(cost) = self.shallow.get(&here).or_else(|| self.deep.get(&(here, depth))) {
            return Ok(*cost);
        }
        self.steps += 1;
        if self.steps > MAX_ANALYSIS_STEPS || nesting > MAX_EVALUATION_NESTING {
            return Err(CostError { path: loc.render(), problem: Problem::TooComplex });
        }
        if !self.active.insert((here, depth)) {
            return Err(CostError { path: loc.render(), problem: Problem::Cycle });
        }
        let cost = self.walk_object(schema, loc, depth, nesting);
        self.active.remove(&(here, depth));
        let cost = cost?;
        if cost.per_node() > MAX_SCHEMA_COST {
            return Err(CostError { path: loc.render(), problem: Problem::TooCostly { cost: cost.per_node() } });
        }
        if cost.deep {
            self.deep.insert((here, depth), cost);
        } else {
            self.shallow.insert(here, cost);
        }
        Ok(cost)
    }

    fn walk_object(
        &mut self,
        schema: &'s Value,
        loc: &Loc<'_>,
        depth: usize,
        nesting: usize,
    ) -> Result<Cost, CostError> {
        let Some(object) = schema.as_object() else {
            // `true`, `false` (and anything meta-validation would refuse).
            return Ok(Cost { here: 1, below: 0, height: 1, deep: false });
        };
        // A reference can reach a subschema the anchor walk did not visit.
        let nested_id = object.get("$id").or_else(|| if self.draft4 { object.get("id") } else { None });
        if address(schema) != address(self.root)
            && nested_id.and_then(Value::as_str).is_some_and(|id| !id.starts_with('#'))
        {
            return Err(CostError { path: loc.render(), problem: Problem::NestedId });
        }
        let mut cost = Cost { here: own_weight(object), below: 0, height: 1, deep: false };
        if object.get("uniqueItems") == Some(&Value::Bool(true)) {
            cost.below = UNIQUE_WEIGHT;
        }
        let add_in_place = |this: &mut Self, cost: &mut Cost, sub: &'s Value, loc: &Loc<'_>| {
            let sub = this.walk(sub, loc, depth, nesting + 1)?;
            cost.here = cost.here.saturating_add(sub.here);
            cost.below = cost.below.saturating_add(sub.below);
            cost.height = cost.height.max(sub.height.saturating_add(1));
            cost.deep |= sub.deep;
            Ok::<(), CostError>(())
        };
        for keyword in IN_PLACE_ONE {
            if let Some(sub) = object.get(*keyword) {
                add_in_place(self, &mut cost, sub, &Loc::Key(loc, keyword))?;
            }
        }
        for keyword in IN_PLACE_LIST {
            if let Some(list) = object.get(*keyword).and_then(Value::as_array) {
                let at = Loc::Key(loc, keyword);
                for (index, sub) in list.iter().enumerate() {
                    add_in_place(self, &mut cost, sub, &Loc::Index(&at, index))?;
                }
            }
        }
        for keyword in ["dependentSchemas", "dependencies"] {
            if let Some(map) = object.get(keyword).and_then(Value::as_object) {
                let at = Loc::Key(loc, keyword);
                for (name, sub) in map.iter().filter(|(_, sub)| !sub.is_array()) {
                    add_in_place(self, &mut cost, sub, &Loc::Key(&at, name))?;
                }
            }
        }
        for keyword in ["$ref", "$dynamicRef", "$recursiveRef"] {
            let Some(reference) = object.get(keyword).and_then(Value::as_str) else { continue };
            let at = Loc::Key(loc, keyword);
            for (target, target_path) in self.resolve(keyword, reference, &at)? {
                // A cycle is reported at the reference that closes it.
                add_in_place(self, &mut cost, target, &Loc::At(&target_path)).map_err(|mut err| {
                    if err.problem == Problem::Cycle && err.path == target_path {
                        err.path = at.render();
                    }
                    err
                })?;
            }
        }
        if !has_child_keywords(object) {
            // Nothing applies to children.
        } else if depth == 0 {
            cost.deep = true;
        } else {
            // Any descendant is either a child or below one.
            let child = self.child_cost(object, loc, depth - 1, nesting)?;
            cost.below = cost.below.saturating_add(child.per_node());
            cost.deep |= child.deep;
        }
        // Annotation collection for `unevaluated*` re-evaluates the in-place
        // subschemas once per level of their nesting.
        let unevaluated =
            ["unevaluatedProperties", "unevaluatedItems"].iter().filter(|k| object.contains_key(**k)).count() as u64;
        if unevaluated > 0 {
            let factor = unevaluated.saturating_mul(cost.height).saturating_add(1);
            cost.here = cost.here.saturating_mul(factor);
            cost.below = cost.below.saturating_mul(factor);
        }
        Ok(cost)
    }

    /// What one child node (property value, property name or item) and its
    /// descendants can cost under the keywords of `object`, `depth` being
    /// the child's.
    fn child_cost(
        &mut self,
        object: &'s Map<String, Value>,
        loc: &Loc<'_>,
        depth: usize,
        nesting: usize,
    ) -> Result<Cost, CostError> {
        let largest = |this: &mut Self, keyword: &str| this.largest(object, keyword, loc, depth, nesting);
        // A child of an object: its key picks one of `properties` or
        // `additionalProperties`; every pattern is matched against the key
        // and each matching one applies.
        let properties = largest(self, "properties")?;
        let additional = largest(self, "additionalProperties")?;
        let names = largest(self, "propertyNames")?;
        let unevaluated_properties = largest(self, "unevaluatedProperties")?;
        // A child of an array: one of `prefixItems`/`items`/`additionalItems`
        // applies, plus `contains` and `unevaluatedItems`.
        let items = largest(self, "items")?;
        let prefix = largest(self, "prefixItems")?;
        let additional_items = largest(self, "additionalItems")?;
        let contains = largest(self, "contains")?;
        let unevaluated_items = largest(self, "unevaluatedItems")?;
        let mut patterns = Cost::default();
        if let Some(map) = object.get("patternProperties").and_then(Value::as_object) {
            let at = Loc::Key(loc, "patternProperties");
            for (name, sub) in map {
                let cost = self.walk(sub, &Loc::Key(&at, name), depth, nesting + 1)?;
                patterns = patterns.plus(cost).plus(Cost { here: PATTERN_WEIGHT, ..Cost::default() });
            }
        }
        let object_child = properties.or(additional).plus(patterns).plus(names).plus(unevaluated_properties);
        let array_child = items.or(prefix).or(additional_items).plus(contains).plus(unevaluated_items);
        let mut child = object_child.or(array_child);
        child.here = child.here.saturating_add(1);
        Ok(child)
    }

    /// The most costly subschema of `keyword` (one schema, a list or a map
    /// of them) for one child, `here` and `below` bounded separately.
    fn largest(
        &mut self,
        object: &'s Map<String, Value>,
        keyword: &str,
        loc: &Loc<'_>,
        depth: usize,
        nesting: usize,
    ) -> Result<Cost, CostError> {
        let at = Loc::Key(loc, keyword);
        let mut max = Cost::default();
        let mut one = |this: &mut Self, sub: &'s Value, loc: &Loc<'_>| {
            max = max.or(this.walk(sub, loc, depth, nesting + 1)?);
            Ok::<(), CostError>(())
        };
        match object.get(keyword) {
            Some(Value::Object(map)) if is_map_of_schemas(keyword) => {
                for (name, sub) in map {
                    one(self, sub, &Loc::Key(&at, name))?;
                }
            }
            Some(Value::Array(list)) => {
                for (index, sub) in list.iter().enumerate() {
                    one(self, sub, &Loc::Index(&at, index))?;
                }
            }
            Some(sub) => one(self, sub, &at)?,
            None => {}
        }
        Ok(max)
    }

    /// The subschemas a reference can lead to, with their locations.
    fn resolve(&self, keyword: &str, reference: &str, at: &Loc<'_>) -> Result<Vec<(&'s Value, String)>, CostError> {
        let unresolvable =
            || CostError { path: at.render(), problem: Problem::Unresolvable { reference: reference.to_owned() } };
        if keyword == "$recursiveRef" {
            // Only `#` is defined; in one resource it is the root.
            return if reference == "#" { Ok(vec![(self.root, String::new())]) } else { Err(unresolvable()) };
        }
        let (base, fragment) = reference.split_once('#').unwrap_or((reference, ""));
        if !base.is_empty() && self.root_id.as_deref() != Some(base) {
            return Err(unresolvable());
        }
        let fragment = percent_decode(fragment).ok_or_else(unresolvable)?;
        if fragment.is_empty() || fragment.starts_with('/') {
            let target = self.root.pointer(&fragment).ok_or_else(unresolvable)?;
            return Ok(vec![(target, fragment)]);
        }
        match self.anchors.get(&fragment) {
            Some(targets) if !targets.is_empty() => Ok(targets.clone()),
            _ => Err(unresolvable()),
        }
    }
}

/// What one evaluation of `object` costs at its instance node, before its
/// subschemas.
fn own_weight(object: &Map<String, Value>) -> u64 {
    let mut weight = 1u64.saturating_add(object.len() as u64);
    let count = |keyword: &str| match object.get(keyword) {
        Some(Value::Object(map)) => map.len() as u64,
        Some(Value::Array(list)) => list.len() as u64,
        _ => 0,
    };
    weight = weight.saturating_add(count("properties")).saturating_add(count("required"));
    for keyword in ["enum", "const"] {
        if let Some(value) = object.get(keyword) {
            weight = weight.saturating_add(size(value));
        }
    }
    for keyword in ["dependentRequired", "dependencies"] {
        if let Some(map) = object.get(keyword).and_then(Value::as_object) {
            weight = weight.saturating_add(map.values().map(size).fold(0, u64::saturating_add));
        }
    }
    if object.contains_key("pattern") {
        weight = weight.saturating_add(PATTERN_WEIGHT);
    }
    if object.contains_key("format") {
        weight = weight.saturating_add(FORMAT_WEIGHT);
    }
    for keyword in ["contentEncoding", "contentMediaType"] {
        if object.contains_key(keyword) {
            weight = weight.saturating_add(CONTENT_WEIGHT);
        }
    }
    if object.get("uniqueItems") == Some(&Value::Bool(true)) {
        weight = weight.saturating_add(UNIQUE_WEIGHT);
    }
    weight
}

/// The work of comparing an instance with `value`: its nodes, and its
/// string bytes (compared 16 at a time).
fn size(value: &Value) -> u64 {
    match value {
        Value::String(text) => 1 + text.len() as u64 / 16,
        Value::Array(list) => list.iter().map(size).fold(1, u64::saturating_add),
        Value::Object(map) => {
            map.iter().map(|(k, v)| size(v).saturating_add(1 + k.len() as u64 / 16)).fold(1, u64::saturating_add)
        }
        _ => 1,
    }
}

fn has_child_keywords(object: &Map<String, Value>) -> bool {
    [
        "properties",
        "patternProperties",
        "additionalProperties",
        "propertyNames",
        "unevaluatedProperties",
        "items",
        "prefixItems",
        "additionalItems",
        "contains",
        "unevaluatedItems",
    ]
    .iter()
    .any(|k| object.contains_key(*k))
}

/// Keywords whose value maps names to subschemas.
fn is_map_of_schemas(keyword: &str) -> bool {
    matches!(
        keyword,
        "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas" | "dependencies"
    )
}

/// Keywords whose value is one subschema.
fn is_one_schema(keyword: &str) -> bool {
    IN_PLACE_ONE.contains(&keyword)
        || matches!(
            keyword,
            "additionalProperties"
                | "propertyNames"
                | "unevaluatedProperties"
                | "items"
                | "additionalItems"
                | "contains"
                | "unevaluatedItems"
                | "contentSchema"
        )
}

/// Keywords whose value is a list of subschemas.
fn is_list_of_schemas(keyword: &str) -> bool {
    matches!(keyword, "allOf" | "anyOf" | "oneOf" | "prefixItems" | "items")
}

fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// Decode `%XX` escapes of a URI fragment; `None` if malformed.
fn percent_decode(text: &str) -> Option<String> {
    if !text.contains('%') {
        return Some(text.to_owned());
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while let Some(&byte) = bytes.get(index) {
        if byte == b'%' {
            let hex = bytes.get(index + 1..index + 3)?;
            let hex = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            index += 3;
        } else {
            out.push(byte);
            index += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests;
