//! Test fixture for the MCP conformance suite (tests/conformance): the tool
//! its `tools-call-audio` scenario calls by name, attaching a tenth of a
//! second of a 440 Hz tone as an `audio/wav` content block. Never a tool to
//! ship.

use airlock_guest::content::{self, Content};
use airlock_guest::{ToolError, export_tool};
use schemars::JsonSchema;
use serde::Deserialize;

/// 0.1 s of 440 Hz, 8 kHz 16-bit mono PCM (`tests/fixtures/media`).
const TONE: &[u8] = include_bytes!("../../../fixtures/media/tone.wav");

/// No arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {}

fn test_audio_content(_args: Args) -> Result<String, ToolError> {
    content::attach(Content::audio("audio/wav", TONE.to_vec()))?;
    Ok("A tenth of a second of 440 Hz follows.".into())
}

export_tool!(name: "test_audio_content", description: "Returns a sound (MCP conformance fixture).", handler: test_audio_content);
