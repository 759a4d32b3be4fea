//! What each protocol revision defines, so that a client is sent only what
//! its revision has: a client reads a message by the revision it speaks,
//! and one that meets something of a later revision can fail on it (a
//! 2025-06-18 client runs `JSON.parse("")` on an SSE priming event).
//!
//! | since | what | where |
//! |---|---|---|
//! | 2025-03-26 | `audio` content blocks; a `message` in `notifications/progress` | `blocks.rs`, `progress.rs` |
//! | 2025-06-18 | `resource_link` content blocks | `blocks.rs` |
//! | 2025-11-25 | SSE priming events (an event id with empty `data`) | `http/gate.rs` |
//! | 2025-11-25 | URL-mode elicitation and `notifications/elicitation/complete` | `server.rs`, `confirm.rs` |
//! | 2026-07-28 | the tasks extension (`io.modelcontextprotocol/tasks`) | `server.rs`, `tasks.rs` |
//!
//! A request whose revision is unknown (`None`) is taken to speak the
//! newest.

use rmcp::model::ProtocolVersion;

/// `audio` content blocks.
pub(crate) const AUDIO: ProtocolVersion = ProtocolVersion::V_2025_03_26;
/// A `message` in `notifications/progress`.
pub(crate) const PROGRESS_MESSAGE: ProtocolVersion = ProtocolVersion::V_2025_03_26;
/// `resource_link` content blocks.
pub(crate) const RESOURCE_LINK: ProtocolVersion = ProtocolVersion::V_2025_06_18;
/// SSE priming events (SEP-1699): an event with an id and empty `data`
/// that opens a stream, for a client to resume from.
pub(crate) const SSE_PRIMING: ProtocolVersion = ProtocolVersion::V_2025_11_25;
/// URL-mode elicitation (a link the client sends its person to) and the
/// `notifications/elicitation/complete` that follows it.
pub(crate) const URL_ELICITATION: ProtocolVersion = ProtocolVersion::V_2025_11_25;
/// The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663): its
/// results (`resultType: "task"`) and its input requests are of this
/// revision's wire. A client of an earlier one that declares it (the MCP
/// Inspector does, on every revision) reads a task handle as an empty
/// tool result, so it is not offered there.
pub(crate) const TASKS_EXTENSION: ProtocolVersion = ProtocolVersion::V_2026_07_28;

/// Whether `revision` (`None`: the newest) has what came with `since`.
pub(crate) fn has(revision: Option<&ProtocolVersion>, since: &ProtocolVersion) -> bool {
    revision.is_none_or(|revision| named_has(revision.as_str(), since))
}

/// Whether the revision a client named (`2025-06-18`) has what came with
/// `since`. Revisions are dated `YYYY-MM-DD`, so they order as text.
pub(crate) fn named_has(revision: &str, since: &ProtocolVersion) -> bool {
    revision >= since.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_revision_has_what_came_with_it_and_before() {
        let at = |revision: ProtocolVersion| has(Some(&revision), &SSE_PRIMING);
        assert!(!at(ProtocolVersion::V_2025_03_26));
        assert!(!at(ProtocolVersion::V_2025_06_18));
        assert!(at(ProtocolVersion::V_2025_11_25));
        assert!(at(ProtocolVersion::V_2026_07_28));
        assert!(has(None, &TASKS_EXTENSION), "an unknown revision is the newest");
        assert!(!has(Some(&ProtocolVersion::V_2025_11_25), &TASKS_EXTENSION));
    }
}
