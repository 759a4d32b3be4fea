//! Test fixture for the MCP conformance suite (tests/conformance): the tool
//! its `tools-call-mixed-content` scenario calls by name, attaching a text
//! block, a picture and a JSON resource after its result. Never a tool to
//! ship.

use airlock_guest::content::{self, Content};
use airlock_guest::{ToolError, export_tool};
use schemars::JsonSchema;
use serde::Deserialize;

/// A 1 × 1 red pixel (`tests/fixtures/media`).
const PIXEL: &[u8] = include_bytes!("../../../fixtures/media/red-pixel.png");

/// No arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {}

fn test_multiple_content_types(_args: Args) -> Result<String, ToolError> {
    content::attach(Content::text("Multiple content types test:"))?;
    content::attach(Content::image("image/png", PIXEL.to_vec()))?;
    content::attach(Content::embedded_text(
        "airlock:mixed-content-resource.json",
        "application/json",
        r#"{"test":"data","value":123}"#,
    ))?;
    Ok("Three content blocks follow.".into())
}

export_tool!(name: "test_multiple_content_types", description: "Returns text, an image and a resource (MCP conformance fixture).", handler: test_multiple_content_types);
