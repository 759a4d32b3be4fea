//! Test fixture for the MCP conformance suite (tests/conformance): the tool
//! its `json-schema-2020-12` scenario lists, `json_schema_2020_12_tool`,
//! whose parameters schema uses JSON Schema 2020-12 keywords the SDK's
//! derived schemas never do (`$schema`, `$defs` with an `$anchor`, `$ref`,
//! `allOf`/`anyOf`, `if`/`then`/`else`, `additionalProperties: false`). It
//! is written by hand, as the scenario gives it, so the suite checks that
//! the host serves a tool's schema with those keywords kept. Never a tool
//! to ship.

use airlock_guest::bindings::exports::airlock::tool::{handler, metadata};

/// The scenario's schema, verbatim.
const PARAMETERS: &str = r##"{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "$defs": {
    "address": {
      "$anchor": "addressDef",
      "type": "object",
      "properties": { "street": { "type": "string" }, "city": { "type": "string" } }
    }
  },
  "properties": {
    "name": { "type": "string" },
    "address": { "$ref": "#/$defs/address" },
    "contactMethod": { "type": "string", "enum": ["phone", "email"] },
    "phone": { "type": "string" },
    "email": { "type": "string" }
  },
  "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
  "if": { "properties": { "contactMethod": { "const": "phone" } }, "required": ["contactMethod"] },
  "then": { "required": ["phone"] },
  "else": { "required": ["email"] },
  "additionalProperties": false
}"##;

struct Schema;

impl metadata::Guest for Schema {
    fn name() -> String {
        "json_schema_2020_12_tool".to_owned()
    }

    fn description() -> String {
        "Tool with JSON Schema 2020-12 features (MCP conformance fixture).".to_owned()
    }

    fn parameters() -> String {
        PARAMETERS.to_owned()
    }

    fn output() -> Option<String> {
        None
    }
}

impl handler::Guest for Schema {
    fn call(_arguments: String) -> Result<String, handler::ToolError> {
        Ok(r#""The arguments matched the schema.""#.to_owned())
    }
}

airlock_guest::bindings::__export_tool_world!(Schema with_types_in airlock_guest::bindings);
