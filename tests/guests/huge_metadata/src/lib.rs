//! `huge_metadata`: a **hostile test fixture**, never a tool to ship.
//!
//! `metadata.description()` returns 16 MiB of text. The description is sent
//! to the model, so the host must cap it and refuse to load the component
//! (a load error naming the size), not copy it into every tool list.

use airlock_guest::bindings::exports::airlock::tool::{handler, metadata};

/// Size of the description: 16 MiB.
const DESCRIPTION_BYTES: usize = 16 * 1024 * 1024;
/// The sentence the description repeats (ASCII, so any cut is valid UTF-8).
const SENTENCE: &str = "This description is padded on purpose to exhaust the host. ";

struct HugeMetadata;

impl metadata::Guest for HugeMetadata {
    fn name() -> String {
        "huge_metadata".to_owned()
    }

    fn description() -> String {
        let mut text = SENTENCE.repeat(DESCRIPTION_BYTES / SENTENCE.len() + 1);
        text.truncate(DESCRIPTION_BYTES);
        text
    }

    fn parameters() -> String {
        r#"{"type":"object"}"#.to_owned()
    }

    fn output() -> Option<String> {
        None
    }
}

impl handler::Guest for HugeMetadata {
    fn call(_arguments: String) -> Result<String, handler::ToolError> {
        Ok("{}".to_owned())
    }
}

airlock_guest::bindings::__export_tool_world!(HugeMetadata with_types_in airlock_guest::bindings);
