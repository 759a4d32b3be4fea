//! `schema_deep`: a **hostile test fixture**, never a tool to ship.
//!
//! `metadata.parameters()` returns a valid schema (about 180 KB, under the
//! loader's cap) whose `$ref`s chain through `LEVELS` definitions, each
//! naming the next. It compiles, so the tool loads; evaluating it follows
//! the whole chain, deeper than the validator's call stack, so every check
//! of its arguments traps the validator whatever the arguments are. The
//! host must refuse the call as the tool's fault (`invalid_schema`), not
//! the caller's.

use airlock_guest::bindings::exports::airlock::tool::{handler, metadata};

/// Definitions in the chain: well past the depth at which the validator's
/// stack runs out (about 3 500), well within `MAX_SCHEMA_BYTES`.
const LEVELS: usize = 6000;

struct SchemaDeep;

impl metadata::Guest for SchemaDeep {
    fn name() -> String {
        "schema_deep".to_owned()
    }

    fn description() -> String {
        "Hostile test fixture: its parameters schema chains references deeper than the validator's stack.".to_owned()
    }

    fn parameters() -> String {
        let mut defs: Vec<String> =
            (0..LEVELS).map(|level| format!(r##""{level}":{{"$ref":"#/$defs/{}"}}"##, level + 1)).collect();
        defs.push(format!(r#""{LEVELS}":{{}}"#));
        format!(r##"{{"type":"object","$ref":"#/$defs/0","$defs":{{{}}}}}"##, defs.join(","))
    }

    fn output() -> Option<String> {
        None
    }
}

impl handler::Guest for SchemaDeep {
    fn call(_arguments: String) -> Result<String, handler::ToolError> {
        Ok("{}".to_owned())
    }
}

airlock_guest::bindings::__export_tool_world!(SchemaDeep with_types_in airlock_guest::bindings);
