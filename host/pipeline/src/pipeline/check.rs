//! Check: the result a guest returned is untrusted. Its size is
//! capped, it must be JSON, and when the tool declared an output schema the
//! result must match it. Its content blocks (contract 0.3.0) were checked
//! one by one as they were attached (`airlock_runtime::sandbox`'s content
//! capability: sizes, media types, URIs); here the first refusal becomes
//! the call's failure whatever the handler returned, and a failed call
//! loses its blocks ([`with_content`]).
//!
//! The output schema is the tool's too: the result is checked under the same
//! meter as arguments (`validate.rs`), within what is left of the call's
//! deadline and the tool's `validation_memory_mib`.
//!
//! The operator's one-line presentation of the result (`[tools.NAME]
//! present_result`, for logs and UIs) is rendered here too, from the
//! checked value: this is the one stage that holds it, so a value that
//! failed its check is never presented, and the audit stage after it only
//! records what it is handed.

use super::execute::Returned;
use super::validate::{self, Deadline, Unchecked};
use super::{Call, Pipeline, Stop};
use airlock_core::content::Block;
use airlock_core::outcome::{ErrorKind, Failure, Success};
use airlock_core::timeline::Stage;
use airlock_policy::card;
use airlock_runtime::loader::LoadedTool;
use airlock_runtime::sandbox::Attached;
use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::cell::Cell;
use std::fmt;

impl Pipeline {
    /// Check what the guest returned within what is left of the call's
    /// deadline; a result that passes is the call's [`Success`], with its
    /// presentation rendered.
    pub(super) async fn check(&self, call: &mut Call<'_>, returned: Returned) -> Result<Success, Stop> {
        let tool = call.tool()?;
        let deadline = Deadline {
            at: tokio::time::Instant::now() + call.time_left,
            timeout_ms: call.limits(&tool).timeout.as_millis(),
            cancel: call.cancel,
        };
        let Returned { text, content, note } = returned;
        let checked = check_output(&tool, &text, deadline).await;
        // A refused content block is the call's failure, whatever the tool
        // returned; a failed call returns no blocks. A session reset by a
        // call that still produced a result (the interpreter recovered from
        // its memory cap) is said after it.
        let checked = with_content(checked, content).map(|(value, blocks)| Success { value, note, blocks });
        if let (Some(template), Ok(success)) = (&tool.pipeline.present_result, &checked) {
            let caller = call.caller_value();
            let caps = call.state.config().cards;
            let scope = card::Scope { value: &success.value, caller: &caller };
            call.presented = Some(template.render(scope, caps.max_presented_bytes, caps.max_value_bytes));
        }
        call.timeline.lap(Stage::Check);
        checked.map_err(Stop::Failed)
    }
}

/// Check the raw result text of a call of `tool` within `deadline`.
///
/// # Errors
///
/// [`ErrorKind::OutputTooLarge`] past the tool's output cap or past what its
/// output schema can be checked on, [`ErrorKind::InvalidOutput`] for non-JSON
/// or a schema mismatch, [`ErrorKind::InvalidSchema`] when the validator fails
/// on the output schema itself, [`ErrorKind::Timeout`] / [`ErrorKind::Cancelled`]
/// when the deadline passes or the call is cancelled during the check.
async fn check_output(tool: &LoadedTool, text: &str, deadline: Deadline<'_>) -> Result<Value, Failure> {
    let cap = tool.settings.limits.max_output_bytes;
    if text.len() > cap {
        return Err(Failure::new(
            ErrorKind::OutputTooLarge,
            format!(
                "the tool returned {} bytes, more than its {cap}-byte output limit; ask for less (a narrower range, a filter, fewer items)",
                text.len()
            ),
        ));
    }
    let max_values = tool.settings.limits.max_output_values;
    if too_many_values(text, max_values) {
        return Err(Failure::new(
            ErrorKind::OutputTooLarge,
            format!(
                "the tool returned more than {max_values} JSON values (max_output_values) in {} bytes; ask for \
                 less (a narrower range, a filter, fewer items)",
                text.len()
            ),
        ));
    }
    let value: Value = serde_json::from_str(text).map_err(|err| {
        Failure::new(ErrorKind::InvalidOutput, format!("the tool returned a result that is not JSON ({err})"))
    })?;
    // An integer serde_json would have rounded is refused, not shown rounded.
    if airlock_core::integers::has_float(&value)
        && let Some(found) = airlock_core::integers::inexact_in_text(text)
    {
        return Err(Failure::new(
            ErrorKind::InvalidOutput,
            format!(
                "the tool returned the integer {} at {}, beyond the integers the host holds exactly ({}), so it \
                 would have been rounded (the tool should send such a value as a string)",
                found.shown,
                found.at(),
                airlock_core::integers::EXACT_RANGE
            ),
        ));
    }
    let Some(schema) = &tool.output else { return Ok(value) };
    let memory_bytes = tool.settings.limits.validation_memory_bytes;
    match validate::check(schema, text, memory_bytes, deadline, "the tool's result").await {
        Ok(Ok(())) => Ok(value),
        Ok(Err(lines)) => Err(Failure::new(
            ErrorKind::InvalidOutput,
            format!("the tool returned a result that does not match its declared output schema:\n{}", lines.join("\n")),
        )),
        Err(Unchecked::Failed(failure)) => Err(failure),
        Err(Unchecked::Memory(mib)) => Err(Failure::new(
            ErrorKind::OutputTooLarge,
            format!(
                "the tool returned {} bytes, too large to check against its output schema: the check needed more \
                 memory than this tool's validation_memory_mib = {mib} allows; ask for less (a narrower range, a \
                 filter, fewer items)",
                text.len()
            ),
        )),
        Err(Unchecked::Fault(why)) => Err(Failure::new(
            ErrorKind::InvalidSchema,
            format!(
                "the tool's result could not be checked against its declared output schema: the validator failed \
                 on the tool's schema ({why})"
            ),
        )),
    }
}

/// The checked result with the blocks the call attached: a refused block
/// is the call's failure, whatever `checked` is (a tool cannot quietly
/// lose a picture it meant to show, nor return a result without it); a
/// call that failed returns no blocks.
///
/// # Errors
///
/// The refusal of the first block the host refused (`output_too_large`
/// for a count or a size, `invalid_output` for a media type, bytes or a
/// URI), else `checked`'s failure.
pub(crate) fn with_content(
    checked: Result<Value, Failure>,
    attached: Attached,
) -> Result<(Value, Vec<Block>), Failure> {
    match (checked, attached.refused) {
        (_, Some(refused)) => Err(refused),
        (Ok(value), None) => Ok((value, attached.blocks)),
        (Err(failure), None) => Err(failure),
    }
}

/// Whether `text` holds more than `max` JSON values (object keys count as
/// values too), found without building any of them: the parsed form of a
/// result takes memory per value whatever its text, so the count is
/// checked before the result is parsed. Text that is not JSON is left to
/// the parse that follows, which says what is wrong with it.
fn too_many_values(text: &str, max: usize) -> bool {
    let (left, over) = (Cell::new(max), Cell::new(false));
    let mut deserializer = serde_json::Deserializer::from_str(text);
    // Whether the count finished does not matter: it stops at the cap.
    let _ = Counter { left: &left, over: &over }.deserialize(&mut deserializer);
    over.get()
}

/// Counts the values it is shown down from `left`, failing when none are
/// left; builds nothing.
#[derive(Clone, Copy)]
struct Counter<'a> {
    left: &'a Cell<usize>,
    /// Set when a value past the cap was met.
    over: &'a Cell<bool>,
}

impl Counter<'_> {
    fn take<E: serde::de::Error>(self) -> Result<(), E> {
        match self.left.get().checked_sub(1) {
            Some(left) => {
                self.left.set(left);
                Ok(())
            }
            None => {
                self.over.set(true);
                Err(E::custom("too many values"))
            }
        }
    }
}

impl<'de> DeserializeSeed<'de> for Counter<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Counter<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<(), E> {
        self.take()
    }

    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<(), E> {
        self.take()
    }

    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<(), E> {
        self.take()
    }

    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<(), E> {
        self.take()
    }

    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<(), E> {
        self.take()
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        self.take()
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.take()?;
        while seq.next_element_seed(self)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.take()?;
        while map.next_key_seed(self)?.is_some() {
            map.next_value_seed(self)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{too_many_values, with_content};
    use airlock_core::content::{Block, Content};
    use airlock_core::outcome::{ErrorKind, Failure};
    use airlock_runtime::sandbox::Attached;
    use serde_json::json;

    #[test]
    fn a_refused_block_decides_the_call_and_a_failure_loses_its_blocks() {
        let block = || Block::new(Content::Text("shown".into()), "sha256:00".into());
        let kept = Attached { blocks: vec![block()], refused: None };
        assert_eq!(with_content(Ok(json!(1)), kept.clone()), Ok((json!(1), vec![block()])));
        let failed = Failure::new(ErrorKind::ToolError, "no");
        assert_eq!(with_content(Err(failed.clone()), kept), Err(failed.clone()));
        let refused = Failure::new(ErrorKind::InvalidOutput, "content block 1 (image) …");
        let attached = Attached { blocks: Vec::new(), refused: Some(refused.clone()) };
        assert_eq!(with_content(Ok(json!(1)), attached.clone()), Err(refused.clone()), "whatever the handler returned");
        assert_eq!(with_content(Err(failed), attached), Err(refused));
    }

    #[test]
    fn values_are_counted_before_anything_is_built() {
        // An object and its key and value: three.
        assert!(!too_many_values(r#"{"a":1}"#, 3));
        assert!(too_many_values(r#"{"a":1}"#, 2));
        assert!(!too_many_values("[[],{},null,true,\"s\",1.5,-1]", 8));
        assert!(too_many_values("[[],{},null,true,\"s\",1.5,-1]", 7));
        // 20 000 empty objects in 60 kB of text.
        let flood = format!("[{}{{}}]", "{},".repeat(19_999));
        assert!(too_many_values(&flood, 20_000));
        assert!(!too_many_values(&flood, 20_001));
        // Not JSON: left to the parse, which says what is wrong.
        assert!(!too_many_values("{\"a\":", 10));
        assert!(!too_many_values("[1,", 2));
        assert!(!too_many_values("nope", 1));
    }
}
