//! What a record holds and how it is written: the members built from an
//! [`AuditEntry`], canonical JSON, the record hash, redaction and the caps.
//!
//! Everything in an entry is untrusted. Every string is cut at its cap
//! ([`MAX_FIELD_BYTES`], [`MAX_MESSAGE_BYTES`]) and written as an escaped JSON
//! string; recorded arguments are bounded by [`MAX_RECORDED_ARGUMENTS_BYTES`]
//! and [`MAX_RECORDED_ARGUMENTS_DEPTH`] or replaced by a note.
//!
//! Two forms of a record: its canonical JSON ([`record_line`], RFC 8785
//! escapes), which the hash covers and from which `argument_digest` is
//! taken, and the line written to the file ([`written_line`]), the same text
//! with the non-ASCII line ends U+0085, U+2028 and U+2029 escaped, so that
//! no reader that splits lines the Unicode way sees a record split.

use std::borrow::Cow;

use sha2::{Digest, Sha256};

use super::*;
use airlock_core::canonical_json::{canonical, json_digest, push_hex, push_json_string, sha256_digest};
use airlock_core::content::Summary;
use airlock_core::text::{ELLIPSIS, cap};

/// What replaces a redacted value.
const REDACTED: &str = "[redacted]";

impl AuditLog {
    /// The members from `call_id` to `fuel_used`, encoded, in record order.
    pub(super) fn record_body(&self, entry: &AuditEntry) -> Vec<(&'static str, String)> {
        let capped = |s: &str, max| json_string(&cap(s, max));
        let optional = |s: &Option<String>, max| s.as_deref().map_or_else(|| "null".to_owned(), |s| capped(s, max));

        let arguments = redact_for_record(&entry.arguments, &self.redact_keys);
        let canonical_arguments = canonical(&arguments);
        let mut body = Vec::with_capacity(12);
        body.push(("call_id", capped(&entry.call_id, MAX_FIELD_BYTES)));
        body.push(("principal", capped(&entry.principal, MAX_FIELD_BYTES)));
        body.push(("tool", capped(&entry.tool, MAX_FIELD_BYTES)));
        if let Some(session) = &entry.session {
            body.push(("session", capped(session, MAX_FIELD_BYTES)));
        }
        // Only for a call that ran as a task, so that records of other
        // calls (and those written before tasks) keep their members.
        if let Some(task) = &entry.task {
            body.push(("task", capped(task, MAX_FIELD_BYTES)));
        }
        body.push(("component_digest", optional(&entry.component_digest, MAX_FIELD_BYTES)));
        // Only for components from a registry, so records of local files
        // keep their members.
        if let Some(reference) = &entry.component_ref {
            body.push(("component_ref", capped(reference, MAX_FIELD_BYTES)));
            body.push(("signer", optional(&entry.signer, MAX_FIELD_BYTES)));
        }
        // Only for a tool that was found, so that records of unknown tools
        // (and those written before revisions) keep their members.
        if let Some(revision) = &entry.revision {
            body.push(("revision", capped(revision, MAX_FIELD_BYTES)));
        }
        body.push(("argument_digest", json_string(&sha256_digest(&canonical_arguments))));
        if self.record_arguments {
            body.push(("arguments", recorded_arguments(&arguments, canonical_arguments)));
        }
        body.push(("decision", json_string(entry.event.decision().as_str())));
        body.push(("policy", optional(&entry.policy, MAX_FIELD_BYTES)));
        if let Some(approval) = &entry.approval {
            let mut note = serde_json::json!({
                "id": cap(&approval.id, MAX_FIELD_BYTES),
                "by": cap(&approval.by, MAX_FIELD_BYTES),
                "how": approval.how,
                "proof": approval.proof,
                "at": approval.at_ms,
                "revision": cap(&approval.revision, MAX_FIELD_BYTES),
            });
            if let (Some(credential), Some(fields)) = (&approval.credential, note.as_object_mut()) {
                fields.insert("credential".into(), cap(credential, MAX_FIELD_BYTES).into());
            }
            body.push(("approval", canonical(&note)));
        }
        body.push(("outcome", json_string(entry.event.outcome())));
        body.push(("message", optional(&entry.event.message(), MAX_MESSAGE_BYTES)));
        // Only for a call that failed, so that other records keep their
        // members.
        if let (Some(blame), Some(retry)) = (entry.event.blame(), entry.event.retry()) {
            body.push(("blame", json_string(blame.as_str())));
            body.push(("retry", json_string(retry.as_str())));
        }
        // Only for a call that returned content blocks, so that other
        // records (and those written before content blocks) keep their
        // members.
        if !entry.content.is_empty() {
            body.push(("content", content_member(&entry.content)));
        }
        body.push(("duration_us", entry.duration_us.to_string()));
        body.push(("fuel_used", entry.fuel_used.map_or_else(|| "null".to_owned(), |f| f.to_string())));
        body
    }
}

/// The `content` member: one object per block, `{"kind", "media_type",
/// "size", "sha256"}` (at most [`MAX_RECORDED_BLOCKS`], strings capped),
/// in the order attached; never a block's bytes.
fn content_member(blocks: &[Summary]) -> String {
    let blocks: Vec<Value> = blocks
        .iter()
        .take(MAX_RECORDED_BLOCKS)
        .map(|block| {
            serde_json::json!({
                "kind": block.kind.as_str(),
                "media_type": block.media_type.as_deref().map(|media| cap(media, MAX_FIELD_BYTES)),
                "size": block.size,
                "sha256": cap(&block.sha256, MAX_FIELD_BYTES),
            })
        })
        .collect();
    canonical(&Value::Array(blocks))
}

/// The members of an `approval_refused` record from `event` to `reason`,
/// encoded, in record order.
pub(super) fn refusal_body(refusal: &RefusedApproval) -> Vec<(&'static str, String)> {
    let RefusedApproval { approval_id, tool, principal, person, reason } = refusal;
    let person = person.as_deref().map_or_else(|| "null".to_owned(), |p| json_string(&cap(p, MAX_FIELD_BYTES)));
    approval_body(APPROVAL_REFUSED, [approval_id, tool, principal], Some(person), reason)
}

/// The members of an `approval_withdrawn` record from `event` to `reason`,
/// encoded, in record order.
pub(super) fn withdrawal_body(withdrawn: &WithdrawnApproval) -> Vec<(&'static str, String)> {
    let WithdrawnApproval { approval_id, tool, principal, reason } = withdrawn;
    approval_body(APPROVAL_WITHDRAWN, [approval_id, tool, principal], None, reason)
}

/// The members of a record of an approval's `event`: its id, tool and
/// principal, `person` (encoded) when the event has one, and `reason`.
fn approval_body(
    event: &str,
    [approval_id, tool, principal]: [&String; 3],
    person: Option<String>,
    reason: &str,
) -> Vec<(&'static str, String)> {
    let capped = |s: &str| json_string(&cap(s, MAX_FIELD_BYTES));
    let mut body = vec![
        ("event", json_string(event)),
        ("approval_id", capped(approval_id)),
        ("tool", capped(tool)),
        ("principal", capped(principal)),
    ];
    body.extend(person.map(|person| ("person", person)));
    body.push(("reason", json_string(&cap(reason, MAX_MESSAGE_BYTES))));
    body
}

/// The members of a `tool_changed` record from `event` to
/// `new_definition_digest`, encoded, in record order.
pub(super) fn change_body(change: &ToolChange) -> Vec<(&'static str, String)> {
    let capped = |s: &str| json_string(&cap(s, MAX_FIELD_BYTES));
    let ToolChange {
        tool,
        old_revision,
        new_revision,
        old_component_digest,
        new_component_digest,
        old_definition_digest,
        new_definition_digest,
    } = change;
    vec![
        ("event", json_string(TOOL_CHANGED)),
        ("tool", capped(tool)),
        ("old_revision", capped(old_revision)),
        ("new_revision", capped(new_revision)),
        ("old_component_digest", capped(old_component_digest)),
        ("new_component_digest", capped(new_component_digest)),
        ("old_definition_digest", capped(old_definition_digest)),
        ("new_definition_digest", capped(new_definition_digest)),
    ]
}

/// `"sha256:<hex>"` of the canonical JSON of `arguments`: no whitespace, object
/// members sorted by name at every depth. Equal values give equal digests
/// whatever their key order. It is [`json_digest`], the digest a tool's
/// definition is known by too.
///
/// A record's `argument_digest` is this digest of the arguments *after*
/// redaction, so that it cannot be used to confirm a guess at a redacted value.
pub fn argument_digest(arguments: &Value) -> String {
    json_digest(arguments)
}

/// Returns `arguments` with the value of every object member whose name
/// equals one of `keys` (case-insensitively, at any depth, inside arrays too)
/// replaced by `"[redacted]"`.
pub fn redact(arguments: &Value, keys: &[String]) -> Value {
    let keys: Vec<String> = keys.iter().map(|k| k.to_lowercase()).collect();
    redact_lowercase(arguments, &keys)
}

/// The line of a record: `fields` (name, canonical value) in the given order.
pub(super) fn record_line<'a>(fields: impl IntoIterator<Item = &'a (&'a str, String)>) -> String {
    let mut line = String::with_capacity(512);
    line.push('{');
    for (i, (name, value)) in fields.into_iter().enumerate() {
        if i > 0 {
            line.push(',');
        }
        push_json_string(&mut line, name);
        line.push(':');
        line.push_str(value);
    }
    line.push('}');
    line
}

/// The line ends outside ASCII (NEL, LINE SEPARATOR, PARAGRAPH SEPARATOR):
/// RFC 8785 leaves them raw, and readers that split on Unicode line ends
/// (Python's `str.splitlines`, JavaScript's `/^/m`) would see two records.
/// The ASCII ones (`\n`, `\r`, VT, FF, FS, GS, RS) are controls, which
/// canonical JSON escapes already.
const NON_ASCII_LINE_ENDS: [char; 3] = ['\u{85}', '\u{2028}', '\u{2029}'];

/// The line of a record as written to the file: its canonical JSON `line`
/// with each of [`NON_ASCII_LINE_ENDS`] as `\u0085`, `\u2028`, `\u2029`.
/// They can only stand inside JSON strings there (everything structural is
/// ASCII) and a backslash in a string is always escaped itself, so the
/// line reads back to the same values. Most lines have none: returned as
/// they are.
pub(super) fn written_line(line: String) -> String {
    // Most lines are ASCII, which a vectorized scan tells at once.
    if line.is_ascii() || !line.contains(NON_ASCII_LINE_ENDS) {
        return line;
    }
    let mut out = String::with_capacity(line.len() + 16);
    for c in line.chars() {
        match c {
            '\u{85}' => out.push_str("\\u0085"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// The hash of a record: SHA-256 of its canonical JSON without `hash`.
pub(super) fn record_hash(fields: &[(&str, String)]) -> String {
    let mut sorted: Vec<&(&str, String)> = fields.iter().filter(|(name, _)| *name != "hash").collect();
    sorted.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let mut hash = String::with_capacity(64);
    push_hex(&mut hash, &Sha256::digest(record_line(sorted).as_bytes()));
    hash
}

/// The `arguments` member: the canonical JSON of the redacted arguments, or a
/// note saying why they were left out.
fn recorded_arguments(arguments: &Value, text: String) -> String {
    if nested_deeper_than(arguments, MAX_RECORDED_ARGUMENTS_DEPTH) {
        return json_string(&format!(
            "[omitted: nested deeper than {MAX_RECORDED_ARGUMENTS_DEPTH} levels; see argument_digest]"
        ));
    }
    if text.len() > MAX_RECORDED_ARGUMENTS_BYTES {
        return json_string(&format!(
            "[omitted: {} bytes of JSON, over the {MAX_RECORDED_ARGUMENTS_BYTES}-byte cap; see argument_digest]",
            text.len()
        ));
    }
    if !rereads_the_same(arguments, &text) {
        return json_string("[omitted: some numbers would not read back exactly; see argument_digest]");
    }
    text
}

/// Whether [`verify`], which re-reads records with `serde_json`, will encode
/// these arguments to exactly `text` again.
///
/// Integers and strings always read back as themselves. Floating-point numbers
/// do only if `serde_json`'s `float_roundtrip` feature is on somewhere in the
/// build: its default parser can be one unit in the last place off (for about
/// a third of all bit patterns, rarely for the short decimals models write).
/// Such arguments are left out rather than recorded with altered numbers.
fn rereads_the_same(arguments: &Value, text: &str) -> bool {
    !contains_float(arguments) || serde_json::from_str::<Value>(text).is_ok_and(|reread| canonical(&reread) == text)
}

/// The arguments as they are recorded and digested: redacted, and a non-JSON
/// string hidden entirely when it mentions a redacted key, since there is no
/// structure in it to redact.
fn redact_for_record<'a>(arguments: &'a Value, keys: &[String]) -> Cow<'a, Value> {
    if keys.is_empty() {
        return Cow::Borrowed(arguments);
    }
    match arguments {
        Value::String(raw) => {
            let lower = raw.to_lowercase();
            if keys.iter().any(|k| !k.is_empty() && lower.contains(k.as_str())) {
                Cow::Owned(Value::String(REDACTED.to_owned()))
            } else {
                Cow::Borrowed(arguments)
            }
        }
        _ => Cow::Owned(redact_lowercase(arguments, keys)),
    }
}

/// [`redact`] with `keys` already lowercased.
fn redact_lowercase(value: &Value, keys: &[String]) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(name, value)| {
                    let lower = name.to_lowercase();
                    if keys.contains(&lower) {
                        (name.clone(), Value::String(REDACTED.to_owned()))
                    } else {
                        (name.clone(), redact_lowercase(value, keys))
                    }
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|item| redact_lowercase(item, keys)).collect()),
        other => other.clone(),
    }
}

/// `s` as a JSON string, escaped as canonical JSON escapes it.
pub(super) fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    push_json_string(&mut out, s);
    out
}

fn contains_float(value: &Value) -> bool {
    match value {
        Value::Number(n) => n.is_f64(),
        Value::Array(items) => items.iter().any(contains_float),
        Value::Object(map) => map.values().any(contains_float),
        _ => false,
    }
}

/// Whether arrays and objects nest more than `limit` levels; stops looking
/// below the limit.
fn nested_deeper_than(value: &Value, limit: usize) -> bool {
    let children: Box<dyn Iterator<Item = &Value>> = match value {
        Value::Array(items) => Box::new(items.iter()),
        Value::Object(map) => Box::new(map.values()),
        _ => return false,
    };
    if limit == 0 {
        return true;
    }
    children.into_iter().any(|child| nested_deeper_than(child, limit - 1))
}

pub(super) fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The start of a hash, enough to tell two apart in a message.
pub(super) fn short(hash: &str) -> String {
    format!("{}…", cap(hash, 12).trim_end_matches(ELLIPSIS))
}

#[cfg(test)]
mod tests;
