//! Integers the host cannot hold exactly.
//!
//! Trusts nothing: the text scanned here is a model's arguments or a
//! tool's result. The host reads JSON with serde_json: an integer literal
//! from -2^63 to 2^64 - 1 is kept exactly (as an `i64` or `u64`), but one
//! beyond that range is read as an `f64` and silently rounded
//! (`18446744073709551617` becomes `1.8446744073709552e19`). Rounding an
//! amount or an id without a word is worse than refusing it, so the
//! arguments parser (`arguments.rs`) and the output check (`check.rs`) look
//! for such literals and refuse the call, naming the JSON pointer.
//!
//! A number written with a fraction or an exponent (`1.5`, `1e20`) is a
//! float and is read as one, as everywhere in JSON. Arguments that arrive
//! already parsed (MCP `arguments`, an Anthropic `input`) have lost their
//! literal: there, a whole number beyond the 64-bit range is refused
//! whatever way it was written, since the host cannot tell whether it was
//! rounded ([`rounded_in_value`]).

use crate::text::cap;
use serde_json::Value;

/// The integers the host holds exactly, as an error message says it.
pub const EXACT_RANGE: &str = "-9223372036854775808 to 18446744073709551615";

/// An integer literal is shown in a message up to this many bytes.
const MAX_SHOWN_LITERAL: usize = 48;

/// 2^64, the first whole `f64` beyond `u64`.
const TWO_POW_64: f64 = 18_446_744_073_709_551_616.0;
/// -2^63, the smallest `i64`.
const MINUS_TWO_POW_63: f64 = -9_223_372_036_854_775_808.0;

/// An integer the host would have rounded, and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inexact {
    /// The JSON pointer of the number (`""` for the whole document).
    pub pointer: String,
    /// The number as written (cut for display), or as read when the
    /// literal is gone.
    pub shown: String,
}

impl Inexact {
    /// The pointer as messages show it: `(root)` for the whole document.
    pub fn at(&self) -> &str {
        if self.pointer.is_empty() { "(root)" } else { &self.pointer }
    }
}

/// Whether `value` holds a number serde_json read as a float: only then can
/// its text hold an integer literal that was rounded.
pub fn has_float(value: &Value) -> bool {
    match value {
        Value::Number(number) => number.is_f64(),
        Value::Array(items) => items.iter().any(has_float),
        Value::Object(map) => map.values().any(has_float),
        _ => false,
    }
}

/// The first integer literal in `text` (JSON that serde_json accepted) that
/// no `i64` or `u64` holds, with its pointer. Runs in one pass over the
/// bytes; callers skip it when the parsed value [`has_float`] is false.
pub fn inexact_in_text(text: &str) -> Option<Inexact> {
    enum Frame {
        Object { key: String, expect_key: bool },
        Array { index: usize },
    }
    let bytes = text.as_bytes();
    let mut stack: Vec<Frame> = Vec::new();
    let mut i = 0;
    while let Some(&byte) = bytes.get(i) {
        match byte {
            b'{' => stack.push(Frame::Object { key: String::new(), expect_key: true }),
            b'[' => stack.push(Frame::Array { index: 0 }),
            b'}' | b']' => {
                stack.pop();
            }
            b',' => match stack.last_mut() {
                Some(Frame::Object { expect_key, .. }) => *expect_key = true,
                Some(Frame::Array { index }) => *index += 1,
                None => {}
            },
            b'"' => {
                let start = i;
                i += 1;
                let mut escaped = false;
                while let Some(&b) = bytes.get(i) {
                    match (escaped, b) {
                        (true, _) => escaped = false,
                        (false, b'\\') => escaped = true,
                        (false, b'"') => break,
                        _ => {}
                    }
                    i += 1;
                }
                if let Some(Frame::Object { key, expect_key }) = stack.last_mut()
                    && *expect_key
                {
                    let literal = text.get(start..=i).unwrap_or_default();
                    *key = serde_json::from_str(literal).unwrap_or_default();
                    *expect_key = false;
                }
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while bytes.get(i + 1).is_some_and(|&b| matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')) {
                    i += 1;
                }
                let literal = text.get(start..=i).unwrap_or_default();
                let integer = !literal.contains(['.', 'e', 'E']);
                if integer && literal.parse::<i64>().is_err() && literal.parse::<u64>().is_err() {
                    let pointer = stack.iter().fold(String::new(), |mut pointer, frame| {
                        pointer.push('/');
                        match frame {
                            Frame::Object { key, .. } => pointer.push_str(&key.replace('~', "~0").replace('/', "~1")),
                            Frame::Array { index } => pointer.push_str(&index.to_string()),
                        }
                        pointer
                    });
                    return Some(Inexact { pointer, shown: cap(literal, MAX_SHOWN_LITERAL).into_owned() });
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The first number in an already parsed `value` that is a whole number
/// beyond the 64-bit integer range: the host cannot tell whether it was
/// written as an integer and rounded.
pub fn rounded_in_value(value: &Value) -> Option<Inexact> {
    fn walk(value: &Value, pointer: &mut String) -> Option<Inexact> {
        match value {
            Value::Number(number) => {
                let float = number.as_f64().filter(|_| number.is_f64())?;
                let whole = float.is_finite() && float.fract() == 0.0;
                (whole && !(MINUS_TWO_POW_63..TWO_POW_64).contains(&float))
                    .then(|| Inexact { pointer: pointer.clone(), shown: number.to_string() })
            }
            Value::Array(items) => items.iter().enumerate().find_map(|(index, item)| {
                let len = pointer.len();
                pointer.push_str(&format!("/{index}"));
                let found = walk(item, pointer);
                pointer.truncate(len);
                found
            }),
            Value::Object(map) => map.iter().find_map(|(key, item)| {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
                let found = walk(item, pointer);
                pointer.truncate(len);
                found
            }),
            _ => None,
        }
    }
    walk(value, &mut String::new())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(text: &str) -> Option<(String, String)> {
        let value: Value = serde_json::from_str(text).unwrap();
        let found = inexact_in_text(text).map(|found| (found.pointer, found.shown));
        // The fast path never skips a text that holds one.
        if found.is_some() {
            assert!(has_float(&value), "{text}");
        }
        found
    }

    #[test]
    fn integers_beyond_64_bits_are_found_with_their_pointer() {
        let pair = |p: &str, s: &str| Some((p.to_owned(), s.to_owned()));
        assert_eq!(text(r#"{"a":18446744073709551616}"#), pair("/a", "18446744073709551616"));
        assert_eq!(text(r#"{"a":-9223372036854775809}"#), pair("/a", "-9223372036854775809"));
        assert_eq!(
            text(r#"{"a":[1, 2.5, {"b/~c": 99999999999999999999999}]}"#),
            pair("/a/2/b~1~0c", "99999999999999999999999")
        );
        assert_eq!(
            text(r#"{"x\"y,[": "{[,", "k": [[], [0, 1e300, 18446744073709551616]]}"#),
            pair("/k/1/2", "18446744073709551616")
        );
        assert_eq!(text("18446744073709551616"), pair("", "18446744073709551616"));
        let long = format!(r#"{{"a":{}}}"#, "9".repeat(300));
        assert_eq!(text(&long).unwrap().1.len(), MAX_SHOWN_LITERAL);
    }

    #[test]
    fn what_fits_or_is_a_float_is_not_found() {
        for ok in [
            r#"{"a":18446744073709551615,"b":-9223372036854775808}"#,
            r#"{"a":9007199254740993}"#,
            r#"{"a":1e20,"b":1.5,"c":-0.0,"d":100000000000000000000.0}"#,
            r#"{"18446744073709551616": "18446744073709551616"}"#,
        ] {
            assert_eq!(text(ok), None, "{ok}");
        }
    }

    #[test]
    fn parsed_values_refuse_whole_numbers_beyond_64_bits() {
        let found = rounded_in_value(&json!({"a": [1, {"b": 1.8446744073709552e19}]})).unwrap();
        assert_eq!((found.at(), found.shown.as_str()), ("/a/1/b", "1.8446744073709552e+19"));
        assert_eq!(rounded_in_value(&json!(-1e19)).unwrap().at(), "(root)");
        assert_eq!(rounded_in_value(&json!({"a": u64::MAX, "b": i64::MIN, "c": 1.5, "d": 1e15})), None);
        // The literal is gone: a float written 1.5e300 is refused too.
        assert_eq!(rounded_in_value(&json!({"e": 1.5e300})).unwrap().at(), "/e");
    }
}
