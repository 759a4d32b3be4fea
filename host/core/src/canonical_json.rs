//! Canonical JSON, and the digest a JSON value is known by.
//!
//! Canonical JSON here means: no whitespace, object members sorted by name
//! (UTF-8 byte order) at every depth, strings escaped as in RFC 8785 (only
//! `"`, `\` and control characters), numbers as `serde_json` writes them.
//! Equal values give equal text whatever their members' order, so
//! [`json_digest`], the SHA-256 of that text, names a value rather than one
//! way of writing it.
//!
//! It lives in the vocabulary because two layers that know nothing of each
//! other must agree on it byte for byte: the audit log digests a call's
//! arguments and hash-chains its records with it (`airlock-policy`), and a
//! tool's revision is the digest of its definition (`airlock-runtime`),
//! which approvals, sessions and pins compare with what the audit log and
//! the lock file recorded. One writer, in the lowest crate both depend on,
//! keeps them from drifting apart.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// `"sha256:<hex>"` of the canonical JSON of `value`: what a call's
/// arguments are recorded by (`argument_digest` in the audit log) and what
/// a tool's definition is known by (its revision).
pub fn json_digest(value: &Value) -> String {
    sha256_digest(&canonical(value))
}

/// Canonical JSON of `value`; see the module documentation.
///
/// Recursion is bounded by the nesting of `value`; values parsed by
/// `serde_json` are at most 128 levels deep.
pub fn canonical(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => push_json_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            // Sorted here, whatever order the map keeps (serde_json's
            // `preserve_order` feature may be on in the dependency tree).
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            members.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (name, value)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_json_string(out, name);
                out.push(':');
                write_canonical(value, out);
            }
            out.push('}');
        }
    }
}

/// Appends `s` as a JSON string, escaped as RFC 8785 (and `serde_json`) do:
/// `"` and `\`, the short escapes for `\b \f \n \r \t`, `\u00xx` for other
/// control characters, everything else as is.
pub fn push_json_string(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    // Most values (hashes, names, ids) need no escaping: one scan, one copy.
    if !s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
        out.push_str(s);
        out.push('"');
        return;
    }
    // Every byte that needs escaping is ASCII, hence a character boundary:
    // the text between two of them is copied as one slice.
    let mut start = 0;
    for (i, &b) in s.as_bytes().iter().enumerate() {
        let short = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0x08 => "\\b",
            0x0c => "\\f",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x00..=0x1f => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        if short.is_empty() {
            out.push_str("\\u00");
            push_hex(out, &[b]);
        } else {
            out.push_str(short);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// `"sha256:<hex>"` of `text`, the canonical JSON of a value already
/// written (as [`json_digest`] takes it, without writing it again).
pub fn sha256_digest(text: &str) -> String {
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    push_hex(&mut out, &Sha256::digest(text.as_bytes()));
    out
}

/// Appends `bytes` as lowercase hex (as `hex::encode`, without its
/// per-character iterator), as a digest here is written.
pub fn push_hex(out: &mut String, bytes: &[u8]) {
    out.reserve(bytes.len() * 2);
    for &b in bytes {
        out.push(hex_digit(b >> 4));
        out.push(hex_digit(b & 0xf));
    }
}

/// The lowercase hex digit of the low four bits of `nibble`.
fn hex_digit(nibble: u8) -> char {
    let nibble = nibble & 0xf;
    char::from(if nibble < 10 { b'0' + nibble } else { b'a' + nibble - 10 })
}
