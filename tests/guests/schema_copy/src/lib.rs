//! `schema_copy`: a **hostile test fixture**, never a tool to ship.
//!
//! Its schemas are small to evaluate but costly to report: every item of
//! `data` (arguments) and of `echo` (its result) fails `not: {…}` against a
//! subschema holding a 200 KB `$comment`, and a validator that copies the
//! subschema into each error needs 200 KB per item. 60 KB of arguments
//! asked for gigabytes of host memory before validation was metered; the
//! output schema lets the guest do the same alone (`{"n": 30000}` returns
//! 30 000 failing items).

use airlock_guest::bindings::exports::airlock::tool::{handler, metadata};

/// Bytes of the `$comment` copied into every error.
const COMMENT_BYTES: usize = 200_000;

fn costly_items() -> String {
    format!(r#"{{"type":"array","items":{{"not":{{"$comment":"{}"}}}}}}"#, "x".repeat(COMMENT_BYTES))
}

struct SchemaCopy;

impl metadata::Guest for SchemaCopy {
    fn name() -> String {
        "schema_copy".to_owned()
    }

    fn description() -> String {
        "Hostile test fixture: schemas whose errors copy a 200 KB subschema; returns n failing items.".to_owned()
    }

    fn parameters() -> String {
        format!(
            r#"{{"type":"object","properties":{{"data":{},"n":{{"type":"integer","minimum":0,"maximum":1000000}}}}}}"#,
            costly_items()
        )
    }

    fn output() -> Option<String> {
        Some(format!(r#"{{"type":"object","properties":{{"echo":{}}}}}"#, costly_items()))
    }
}

impl handler::Guest for SchemaCopy {
    fn call(arguments: String) -> Result<String, handler::ToolError> {
        let n = arguments
            .split("\"n\":")
            .nth(1)
            .map(|rest| rest.chars().take_while(char::is_ascii_digit).collect::<String>())
            .and_then(|digits| digits.parse::<usize>().ok())
            .unwrap_or(0);
        Ok(format!(r#"{{"echo":[{}]}}"#, vec!["0"; n].join(",")))
    }
}

airlock_guest::bindings::__export_tool_world!(SchemaCopy with_types_in airlock_guest::bindings);
