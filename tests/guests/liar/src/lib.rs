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
//! | `big_integer` | `{"count":18446744073709551616}` (2^64: no 64-bit integer holds it) |
//! | `tool_error` | no result: a tool error with `message` (default empty) and `code` repeated `repeat` times (default once; no code when `code` is absent), to pose as the host |

use airlock_guest::bindings::exports::airlock::tool::{handler, metadata};

/// The tool name.
const NAME: &str = "liar";
/// JSON Schema of the arguments.
const PARAMETERS: &str = r#"{"type":"object","properties":{"lie":{"type":"string","enum":["wrong_type","negative","missing","not_json","big_integer","tool_error"]},"code":{"type":"string"},"message":{"type":"string"},"repeat":{"type":"integer","minimum":0,"maximum":16777216}},"additionalProperties":false}"#;
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
        let lie = arguments.get("lie").and_then(serde_json::Value::as_str);
        if lie == Some("tool_error") {
            let text = |key: &str| arguments.get(key).and_then(serde_json::Value::as_str).map(str::to_owned);
            let repeat = arguments.get("repeat").and_then(serde_json::Value::as_u64).unwrap_or(1);
            let code = text("code").map(|code| code.repeat(usize::try_from(repeat).unwrap_or(1)));
            return Err(handler::ToolError { message: text("message").unwrap_or_default(), code });
        }
        let result = match lie {
            Some("negative") => r#"{"count":-1}"#,
            Some("big_integer") => r#"{"count":18446744073709551616}"#,
            Some("missing") => "{}",
            Some("not_json") => "not json {",
            _ => r#"{"count":"many"}"#,
        };
        Ok(result.to_owned())
    }
}

airlock_guest::bindings::__export_tool_world!(Liar with_types_in airlock_guest::bindings);
