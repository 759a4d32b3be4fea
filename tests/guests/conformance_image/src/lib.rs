//! Test fixture for the MCP conformance suite (tests/conformance): the tool
//! its `tools-call-image` scenario calls by name, attaching a 1 × 1 red
//! PNG as an image content block. Never a tool to ship.

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

fn test_image_content(_args: Args) -> Result<String, ToolError> {
    content::attach(Content::image("image/png", PIXEL.to_vec()))?;
    Ok("A 1 × 1 red pixel follows.".into())
}

export_tool!(name: "test_image_content", description: "Returns an image (MCP conformance fixture).", handler: test_image_content);
