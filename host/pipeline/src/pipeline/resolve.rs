//! Resolve: find the tool a call names. An unknown name becomes an error
//! result listing the available tools, closest match first, so the model
//! can correct a typo on its next turn.

use super::{Call, Pipeline, Stop};
use crate::registry::Registry;
use crate::tool::Tool;
use airlock_core::outcome::{Blame, ErrorKind, Failure, Retry};
use airlock_core::timeline::Stage;
use std::sync::Arc;

/// At most this many names are listed in an unknown-tool error.
pub const MAX_LISTED_TOOLS: usize = 20;
/// The unknown name is echoed back at most this long.
const MAX_ECHOED_NAME: usize = 64;

impl Pipeline {
    /// Find the tool the call names in the call's state.
    pub(super) fn resolve(&self, call: &mut Call<'_>) -> Result<(), Stop> {
        let found = find(call.state.registry(), &call.request.tool);
        call.timeline.lap(Stage::Resolve);
        call.tool = Some(found.map_err(Stop::not_reached)?);
        Ok(())
    }
}

/// The tool called `name`, or an [`ErrorKind::UnknownTool`] failure.
///
/// # Errors
///
/// No tool has that name.
fn find(registry: &Registry, name: &str) -> Result<Arc<Tool>, Failure> {
    if let Some(tool) = registry.get(name) {
        return Ok(tool.clone());
    }
    let pending = registry.still_loading();
    if pending > 0 {
        // Start-up in the background: the name may be declared by one of
        // the components still compiling. The host waited for it for the
        // tool's deadline before resolving (see `startup.rs`).
        // Nothing is wrong with the call: the host is not ready yet.
        let failure = Failure::new(ErrorKind::Timeout, not_ready_message(registry.names(), name, pending));
        return Err(failure.blame(Blame::Host).retry(Retry::Later));
    }
    Err(Failure::new(ErrorKind::UnknownTool, unknown_tool_message(registry.names(), name)))
}

/// The text of a call for a name no loaded tool has while components are
/// still loading at start-up.
fn not_ready_message<'a>(names: impl Iterator<Item = &'a str>, name: &str, pending: usize) -> String {
    let echoed: String = name.chars().take(MAX_ECHOED_NAME).collect();
    let mut names: Vec<&str> = names.collect();
    let more = names.len().saturating_sub(MAX_LISTED_TOOLS);
    names.truncate(MAX_LISTED_TOOLS);
    let ready = if names.is_empty() { "none yet".to_owned() } else { names.join(", ") };
    let more = if more > 0 { format!(" (and {more} more)") } else { String::new() };
    format!(
        "tool {echoed:?} is not ready: the server is still compiling {pending} tool component(s) after start-up, \
         and none of those done so far declares this name; the call waited for it until its deadline (the tool's \
         timeout_ms) and nothing was run. Ready now: {ready}{more}"
    )
}

/// The text of an unknown-tool error: the names, closest to `name` first.
pub fn unknown_tool_message<'a>(names: impl Iterator<Item = &'a str>, name: &str) -> String {
    let echoed: String = name.chars().take(MAX_ECHOED_NAME).collect();
    let mut names: Vec<&str> = names.collect();
    if names.is_empty() {
        return format!("there is no tool named {echoed:?}; no tools are loaded");
    }
    let lower = name.to_ascii_lowercase();
    names.sort_by(|a, b| {
        let score = |n: &str| strsim::jaro_winkler(&lower, &n.to_ascii_lowercase());
        score(b).total_cmp(&score(a)).then(a.cmp(b))
    });
    let more = names.len().saturating_sub(MAX_LISTED_TOOLS);
    names.truncate(MAX_LISTED_TOOLS);
    let mut text = format!("there is no tool named {echoed:?}; available tools: {}", names.join(", "));
    if more > 0 {
        text.push_str(&format!(" (and {more} more)"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closest_match_first() {
        let names = ["echo", "list_dir", "read_file", "write_file"];
        let text = unknown_tool_message(names.into_iter(), "read_fiel");
        assert!(text.starts_with("there is no tool named \"read_fiel\"; available tools: read_file, "), "{text}");
        let text = unknown_tool_message(names.into_iter(), "ECHO");
        assert!(text.contains("available tools: echo,"), "{text}");
    }

    #[test]
    fn long_names_and_long_lists_are_capped() {
        let many: Vec<String> = (0..30).map(|i| format!("tool{i:02}")).collect();
        let text = unknown_tool_message(many.iter().map(String::as_str), &"x".repeat(10_000));
        assert!(text.len() < 1000, "{}", text.len());
        assert!(text.ends_with("(and 10 more)"));
    }

    #[test]
    fn empty_registry() {
        let err = find(&Registry::default(), "echo").unwrap_err();
        assert_eq!(err.kind, ErrorKind::UnknownTool);
        assert!(err.message.contains("no tools are loaded"));
    }

    #[test]
    fn a_name_not_ready_during_start_up_is_a_timeout_not_an_unknown_tool() {
        let err = find(&Registry::pending(2), "run_python").unwrap_err();
        assert_eq!(err.kind, ErrorKind::Timeout);
        assert!(err.message.contains("still compiling 2 tool component(s)"), "{}", err.message);
        assert!(err.message.contains("timeout_ms") && err.message.contains("Ready now: none yet"), "{}", err.message);
    }
}
