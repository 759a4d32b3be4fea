//! Validate: check the arguments against the tool's parameters schema
//! (compiled once, when the tool was loaded).
//!
//! The error names each failing JSON pointer and what was expected, in text
//! a model can act on in its next turn, and restates the schema.

use crate::loader::LoadedTool;
use crate::outcome::{ErrorKind, Failure};
use serde_json::Value;

/// At most this many schema violations are listed.
pub const MAX_LISTED_ERRORS: usize = 10;
/// The restated schema is cut at this many bytes.
const MAX_RESTATED_SCHEMA: usize = 2048;

/// Check `arguments` against the parameters schema of `tool`.
///
/// # Errors
///
/// One or more violations, as an [`ErrorKind::InvalidArguments`] failure.
pub fn validate(tool: &LoadedTool, arguments: &Value) -> Result<(), Failure> {
    violations(&tool.parameters_validator, arguments).map_err(|lines| {
        Failure::new(
            ErrorKind::InvalidArguments,
            format!(
                "the arguments do not match the parameters of {}:\n{}\nExpected arguments matching this JSON Schema: {}",
                tool.name,
                lines.join("\n"),
                restate(&tool.parameters),
            ),
        )
    })
}

/// The violations of `value` against `validator`, one line each, as
/// `- at /pointer: message`.
pub(crate) fn violations(validator: &jsonschema::Validator, value: &Value) -> Result<(), Vec<String>> {
    // The common case first: `is_valid` stops at the first violation and
    // builds no error values, several times cheaper than `iter_errors`.
    if validator.is_valid(value) {
        return Ok(());
    }
    let mut lines = Vec::new();
    let mut total = 0usize;
    for error in validator.iter_errors(value) {
        total += 1;
        if lines.len() < MAX_LISTED_ERRORS {
            let pointer = error.instance_path().to_string();
            let at = if pointer.is_empty() { "(root)".to_owned() } else { pointer };
            lines.push(format!("- at {at}: {}", cap(&error.to_string(), 300)));
        }
    }
    if total == 0 {
        return Ok(());
    }
    if total > lines.len() {
        lines.push(format!("- … and {} more", total - lines.len()));
    }
    Err(lines)
}

fn restate(schema: &Value) -> String {
    cap(&schema.to_string(), MAX_RESTATED_SCHEMA)
}

/// Cut `text` to at most `max` bytes on a char boundary, marking the cut.
pub(crate) fn cap(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(schema: Value, value: Value, expect: &[&str]) {
        let validator = jsonschema::validator_for(&schema).unwrap();
        match violations(&validator, &value) {
            Ok(()) => assert!(expect.is_empty(), "expected violations {expect:?}"),
            Err(lines) => {
                assert_eq!(lines.len(), expect.len(), "{lines:#?}");
                for (line, needle) in lines.iter().zip(expect) {
                    assert!(line.contains(needle), "{line:?} should contain {needle:?}");
                }
            }
        }
    }

    #[test]
    fn pointers_and_expectations() {
        let schema = json!({"type":"object","properties":{"path":{"type":"string"},"n":{"type":"integer","minimum":1}},"required":["path"]});
        check(schema.clone(), json!({"path":"a"}), &[]);
        check(schema.clone(), json!({}), &["at (root): \"path\" is a required property"]);
        check(
            schema.clone(),
            json!({"path":1,"n":0}),
            &["at /path: 1 is not of type \"string\"", "at /n: 0 is less than the minimum of 1"],
        );
    }

    #[test]
    fn long_lists_are_capped() {
        let schema = json!({"type":"array","items":{"type":"string"}});
        let lines =
            violations(&jsonschema::validator_for(&schema).unwrap(), &json!((0..50).collect::<Vec<_>>())).unwrap_err();
        assert_eq!(lines.len(), MAX_LISTED_ERRORS + 1);
        assert_eq!(lines.last().unwrap(), "- … and 40 more");
    }

    #[test]
    fn cap_respects_char_boundaries() {
        assert_eq!(cap("héllo", 2), "h…");
        assert_eq!(cap("abc", 3), "abc");
    }
}
