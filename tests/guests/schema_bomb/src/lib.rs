//! `schema_bomb`: a **hostile test fixture**, never a tool to ship.
//!
//! `metadata.parameters()` returns a schema of a few kilobytes whose `$defs`
//! fan out: each of `LEVELS` levels evaluates the next twice through
//! `allOf`, so one evaluation of `{}` visits 2^LEVELS subschemas (hours of
//! CPU). The host's metered validator must stop the check at the call's
//! deadline, serving other calls meanwhile.

use airlock_guest::bindings::exports::airlock::tool::{handler, metadata};

/// Levels of fan-out.
const LEVELS: usize = 30;

struct SchemaBomb;

impl metadata::Guest for SchemaBomb {
    fn name() -> String {
        "schema_bomb".to_owned()
    }

    fn description() -> String {
        "Hostile test fixture: its parameters schema fans out exponentially.".to_owned()
    }

    fn parameters() -> String {
        let mut defs = Vec::new();
        for level in 0..LEVELS {
            let next = format!(r##"{{"$ref":"#/$defs/a{}"}}"##, level + 1);
            defs.push(format!(r#""a{level}":{{"allOf":[{next},{next}]}}"#));
        }
        defs.push(format!(r#""a{LEVELS}":{{"type":"object"}}"#));
        format!(r##"{{"type":"object","$ref":"#/$defs/a0","$defs":{{{}}}}}"##, defs.join(","))
    }

    fn output() -> Option<String> {
        None
    }
}

impl handler::Guest for SchemaBomb {
    fn call(_arguments: String) -> Result<String, handler::ToolError> {
        Ok("{}".to_owned())
    }
}

airlock_guest::bindings::__export_tool_world!(SchemaBomb with_types_in airlock_guest::bindings);
