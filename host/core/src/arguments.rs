//! Parse: the arguments of a proposed call, as a JSON object.
//!
//! Trusts nothing: arguments come from a model (through a client). They
//! arrive as a JSON value or as JSON text (OpenAI sends a string); the size
//! and nesting depth are capped before and while parsing, and anything but
//! an object is refused with a message saying what is accepted. An integer
//! the host would have to round (beyond the 64-bit range, see
//! `integers.rs`) is refused with its JSON pointer, never passed on rounded.

use crate::integers::{self, EXACT_RANGE, Inexact};
use crate::outcome::{ErrorKind, Failure};
use serde_json::Value;

/// Largest arguments accepted, in bytes of JSON text.
pub const MAX_ARGUMENT_BYTES: usize = 1 << 20;
/// Deepest nesting of arrays/objects accepted.
pub const MAX_ARGUMENT_DEPTH: usize = 64;

/// Arguments as proposed, before parsing.
#[derive(Debug, Clone, PartialEq)]
pub enum RawArguments {
    /// Already a JSON value (Anthropic `input`, MCP `arguments`).
    Json(Value),
    /// JSON text (OpenAI `arguments`).
    Text(String),
}

impl RawArguments {
    /// The arguments as a JSON value for the audit record: the value, or the
    /// text itself when it is not valid JSON.
    pub fn into_audit(self) -> Value {
        match self {
            RawArguments::Json(v) => v,
            RawArguments::Text(t) => serde_json::from_str(&t).unwrap_or(Value::String(t)),
        }
    }
}

fn invalid(message: String) -> Failure {
    Failure::new(ErrorKind::InvalidArguments, message)
}

fn too_large(bytes: usize) -> Failure {
    invalid(format!("the arguments are {bytes} bytes; at most {MAX_ARGUMENT_BYTES} are accepted"))
}

fn inexact(found: &Inexact, written: bool) -> Failure {
    let how = if written { "" } else { ", read as a whole number too large to be exact" };
    invalid(format!(
        "the arguments hold the integer {} at {}{how}: integers are accepted from {EXACT_RANGE}, beyond that they \
         would be rounded; send a larger value as a string",
        found.shown,
        found.at()
    ))
}

fn too_deep(depth: usize) -> Failure {
    invalid(format!("the arguments nest {depth} levels deep; at most {MAX_ARGUMENT_DEPTH} are accepted"))
}

/// Arguments that passed [`parse`]: the object, and its JSON text as the
/// guest receives it (serialized from the object, never the raw text, so
/// the guest reads exactly what was validated and authorized).
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    /// The arguments object.
    pub value: Value,
    /// `value` as compact JSON text.
    pub text: String,
}

/// Parse and shape-check the arguments.
///
/// # Errors
///
/// Too large, too deep, not JSON, or not an object.
pub fn parse(raw: &RawArguments) -> Result<Parsed, Failure> {
    let (value, text) = match raw {
        RawArguments::Text(text) => {
            if text.len() > MAX_ARGUMENT_BYTES {
                return Err(too_large(text.len()));
            }
            if text.trim().is_empty() {
                return Ok(empty());
            }
            let depth = text_depth(text, MAX_ARGUMENT_DEPTH);
            if depth > MAX_ARGUMENT_DEPTH {
                return Err(too_deep(depth));
            }
            let value: Value = serde_json::from_str(text).map_err(|err| {
                invalid(format!(
                    "the arguments are not valid JSON ({err}); send a JSON object such as {{\"path\": \"notes.txt\"}}"
                ))
            })?;
            if integers::has_float(&value)
                && let Some(found) = integers::inexact_in_text(text)
            {
                return Err(inexact(&found, true));
            }
            // Re-serialized, not passed through: duplicate keys, for one,
            // must reach the guest as the one value that was checked.
            let text = if value.is_object() { value.to_string() } else { String::new() };
            (value, text)
        }
        RawArguments::Json(value) => {
            let depth = value_depth(value, 0);
            if depth > MAX_ARGUMENT_DEPTH {
                return Err(too_deep(depth));
            }
            // The literal is gone (a front end parsed it): a whole number
            // beyond the 64-bit range may have been rounded.
            if let Some(found) = integers::rounded_in_value(value) {
                return Err(inexact(&found, false));
            }
            // The text the size is measured on is the one the guest gets.
            let text = value.to_string();
            if text.len() > MAX_ARGUMENT_BYTES {
                return Err(too_large(text.len()));
            }
            (value.clone(), text)
        }
    };
    match value {
        Value::Object(_) => Ok(Parsed { value, text }),
        // Some clients send `null` for a call without arguments.
        Value::Null => Ok(empty()),
        other => Err(invalid(format!(
            "the arguments must be a JSON object, not {}; wrap them as {{\"name\": value}}",
            kind_of(&other)
        ))),
    }
}

fn empty() -> Parsed {
    Parsed { value: Value::Object(Default::default()), text: "{}".to_owned() }
}

/// What kind of JSON value `value` is, as an error message says it ("an
/// array").
pub fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Maximum nesting of `[`/`{` in JSON text, ignoring brackets in strings,
/// counted without parsing. Stops counting past `cap` (the text is refused
/// anyway).
pub fn text_depth(text: &str, cap: usize) -> usize {
    let (mut depth, mut max, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for byte in text.bytes() {
        if in_string {
            match (escaped, byte) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
                if max > cap {
                    return max;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

fn value_depth(value: &Value, level: usize) -> usize {
    if level > MAX_ARGUMENT_DEPTH {
        return level;
    }
    match value {
        Value::Array(items) => items.iter().map(|v| value_depth(v, level + 1)).max().unwrap_or(level + 1),
        Value::Object(map) => map.values().map(|v| value_depth(v, level + 1)).max().unwrap_or(level + 1),
        _ => level,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(raw: RawArguments, expect: Result<Value, &str>) {
        match (parse(&raw), expect) {
            (Ok(got), Ok(want)) => {
                assert_eq!(got.text, want.to_string());
                assert_eq!(got.value, want);
            }
            (Err(got), Err(needle)) => {
                assert_eq!(got.kind, ErrorKind::InvalidArguments);
                assert!(got.message.contains(needle), "{:?} should contain {needle:?}", got.message);
            }
            (got, want) => panic!("{raw:?}: got {got:?}, want {want:?}"),
        }
    }

    #[test]
    fn cases() {
        use RawArguments::{Json, Text};
        check(Text(r#"{"a":1}"#.into()), Ok(json!({"a":1})));
        check(Text("".into()), Ok(json!({})));
        check(Json(json!({"a":[1]})), Ok(json!({"a":[1]})));
        check(Json(Value::Null), Ok(json!({})));
        check(Text("{bad".into()), Err("not valid JSON"));
        check(Text("[1,2]".into()), Err("must be a JSON object, not an array"));
        check(Json(json!("x")), Err("not a string"));
        check(Text("x".repeat(MAX_ARGUMENT_BYTES + 1)), Err("bytes; at most"));
        check(Text("[".repeat(100_000)), Err("levels deep"));
        check(Text(format!("{{\"a\":\"{}\"}}", "[".repeat(1000))), Ok(json!({"a": "[".repeat(1000)})));
        let mut deep = json!(1);
        for _ in 0..100 {
            deep = json!([deep]);
        }
        check(Json(json!({ "a": deep })), Err("levels deep"));
    }

    #[test]
    fn integers_the_host_would_round_are_refused_with_their_pointer() {
        use RawArguments::{Json, Text};
        check(Text(r#"{"amount":18446744073709551617}"#.into()), Err("integer 18446744073709551617 at /amount"));
        check(Text(r#"{"a":[-9223372036854775809]}"#.into()), Err("at /a/0"));
        check(Text(r#"{"a":[-9223372036854775809]}"#.into()), Err(EXACT_RANGE));
        check(Json(json!({"a": {"b": 1.8446744073709552e19}})), Err("at /a/b, read as a whole number"));
        // What fits, and floats, pass unchanged.
        check(
            Text(r#"{"a":18446744073709551615,"b":1e20,"c":0.5}"#.into()),
            Ok(json!({"a":u64::MAX,"b":1e20,"c":0.5})),
        );
        check(Json(json!({"a": 9007199254740993u64, "b": 1e15})), Ok(json!({"a": 9007199254740993u64, "b": 1e15})));
    }
}
