//! `liar`: a **hostile test fixture**, never a tool to ship.
//!
//! Declares an output schema that requires `{"count": integer >= 0}` and
//! then breaks it. The host must report the result as invalid output
//! (`ToolOutputError`) instead of passing it to the model.
//!
//! The SDK's `export_tool!` cannot lie: it derives the output schema from
//! the very type it serializes. So this guest implements the generated
//! bindings by hand and writes its JSON as text.
//!
//! The optional argument `lie` picks the lie (default `wrong_type`):
//!
//! | `lie` | result text |
//! |---|---|
//! | `wrong_type` | `{"count":"many"}` |
//! | `negative` | `{"count":-1}` |
//! | `missing` | `{}` |
//! | `not_json` | `not json {` (not JSON at all) |

use airlock_guest::bindings::exports::airlock::tool::{handler, metadata};

/// The tool name.
const NAME: &str = "liar";
/// JSON Schema of the arguments.
const PARAMETERS: &str = r#"{"type":"object","properties":{"lie":{"type":"string","enum":["wrong_type","negative","missing","not_json"]}},"additionalProperties":false}"#;
/// JSON Schema of the result the tool promises and never delivers.
const OUTPUT: &str = r#"{"type":"object","properties":{"count":{"type":"integer","minimum":0}},"required":["count"],"additionalProperties":false}"#;

struct Liar;

impl metadata::Guest for Liar {
    fn name() -> String {
        NAME.to_owned()
    }

    fn description() -> String {
        "Hostile test fixture: promises {\"count\": integer >= 0} and returns something else.".to_owned()
    }

    fn parameters() -> String {
        PARAMETERS.to_owned()
    }

    fn output() -> Option<String> {
        Some(OUTPUT.to_owned())
    }
}

impl handler::Guest for Liar {
    fn call(arguments: String) -> Result<String, handler::ToolError> {
        // Arguments are read leniently: anything unreadable means the default lie.
        let arguments: serde_json::Value = serde_json::from_str(&arguments).unwrap_or_default();
        let result = match arguments.get("lie").and_then(serde_json::Value::as_str) {
            Some("negative") => r#"{"count":-1}"#,
            Some("missing") => "{}",
            Some("not_json") => "not json {",
            _ => r#"{"count":"many"}"#,
        };
        Ok(result.to_owned())
    }
}

airlock_guest::bindings::__export_tool_world!(Liar with_types_in airlock_guest::bindings);
