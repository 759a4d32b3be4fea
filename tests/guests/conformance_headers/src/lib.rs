//! Test fixture for the MCP conformance suite (tests/conformance): a tool
//! whose string parameter `region` carries `x-mcp-header: "Region"`
//! (SEP-2243), so that 2026-07-28 clients mirror its value into an
//! `Mcp-Param-Region` HTTP header, and the `http-custom-header-server-validation`
//! scenario can check that the server refuses a header that is missing,
//! malformed or does not match the body (`-32020`). The schema is written
//! by hand: the SDK derives schemas without annotations. Never a tool to
//! ship.

use airlock_guest::bindings::exports::airlock::tool::{handler, metadata};

/// One mirrored string parameter, and one that is not mirrored.
const PARAMETERS: &str = r#"{
  "type": "object",
  "properties": {
    "region": { "type": "string", "description": "Where to run.", "x-mcp-header": "Region" },
    "query": { "type": "string", "description": "Not mirrored." }
  },
  "required": ["region"],
  "additionalProperties": false
}"#;

struct Headers;

impl metadata::Guest for Headers {
    fn name() -> String {
        "test_param_headers".to_owned()
    }

    fn description() -> String {
        "Returns the region it was asked for; its region is mirrored into Mcp-Param-Region (MCP conformance fixture)."
            .to_owned()
    }

    fn parameters() -> String {
        PARAMETERS.to_owned()
    }

    fn output() -> Option<String> {
        None
    }
}

impl handler::Guest for Headers {
    fn call(arguments: String) -> Result<String, handler::ToolError> {
        // The host validated the arguments against the schema: an object
        // whose `region` is a string. Echoed back as a JSON string.
        Ok(format!("{{\"arguments\":{arguments}}}"))
    }
}

airlock_guest::bindings::__export_tool_world!(Headers with_types_in airlock_guest::bindings);
