//! Test fixture for the MCP conformance suite (tests/conformance): the tool
//! its `tools-call-embedded-resource` scenario calls by name, attaching a
//! text resource. Never a tool to ship.

use airlock_guest::content::{self, Content};
use airlock_guest::{ToolError, export_tool};
use schemars::JsonSchema;
use serde::Deserialize;

/// No arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {}

fn test_embedded_resource(_args: Args) -> Result<String, ToolError> {
    content::attach(Content::embedded_text(
        "airlock:embedded-resource.txt",
        "text/plain",
        "This is an embedded resource content.",
    ))?;
    Ok("An embedded resource follows.".into())
}

export_tool!(name: "test_embedded_resource", description: "Returns an embedded resource (MCP conformance fixture).", handler: test_embedded_resource);
