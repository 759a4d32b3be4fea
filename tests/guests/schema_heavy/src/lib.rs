//! `schema_heavy`: a test fixture whose parameters schema is costly per
//! item: every item of `data` is checked against `$defs` that fan out
//! `LEVELS` times (2^9 evaluations per item). Large arguments are checked
//! within the call's deadline by the host's metered validator.

use airlock_guest::bindings::exports::airlock::tool::{handler, metadata};

/// Levels of fan-out: 2^LEVELS evaluations per item.
const LEVELS: usize = 9;

struct SchemaHeavy;

impl metadata::Guest for SchemaHeavy {
    fn name() -> String {
        "schema_heavy".to_owned()
    }

    fn description() -> String {
        "Test fixture: a costly but accepted parameters schema; returns {}.".to_owned()
    }

    fn parameters() -> String {
        let mut defs = Vec::new();
        for level in 0..LEVELS {
            let next = format!(r##"{{"$ref":"#/$defs/a{}"}}"##, level + 1);
            defs.push(format!(r#""a{level}":{{"allOf":[{next},{next}]}}"#));
        }
        defs.push(format!(r#""a{LEVELS}":{{"type":"integer"}}"#));
        format!(
            r##"{{"type":"object","properties":{{"data":{{"type":"array","items":{{"$ref":"#/$defs/a0"}}}}}},"$defs":{{{}}}}}"##,
            defs.join(",")
        )
    }

    fn output() -> Option<String> {
        None
    }
}

impl handler::Guest for SchemaHeavy {
    fn call(_arguments: String) -> Result<String, handler::ToolError> {
        Ok("{}".to_owned())
    }
}

airlock_guest::bindings::__export_tool_world!(SchemaHeavy with_types_in airlock_guest::bindings);
