//! Render: what the model reads about a result, and a short presentation
//! for humans (CLI, logs).
//!
//! The model never reads raw host data: it reads the tool's JSON result (or
//! an error narration), cut at [`MAX_MODEL_TEXT`] bytes with a note saying
//! how much was cut and what to do. Captured stdout/stderr are for humans
//! and logs only.

use crate::outcome::{ErrorKind, Failure};
use crate::validate::cap;
use serde_json::Value;

/// The model reads at most this many bytes of one result.
pub const MAX_MODEL_TEXT: usize = 32 << 10;

/// The model-facing text of a successful result.
pub fn success_text(value: &Value) -> String {
    let text = match value {
        // A bare string result reads better without JSON quoting.
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    truncate(text)
}

/// The model-facing text of a failed call.
pub fn failure_text(failure: &Failure) -> String {
    let prefix = match failure.kind {
        ErrorKind::ToolError => match &failure.code {
            Some(code) => format!("error ({code})"),
            None => "error".to_owned(),
        },
        kind => format!("error ({kind})"),
    };
    truncate(format!("{prefix}: {}", failure.message))
}

fn truncate(text: String) -> String {
    if text.len() <= MAX_MODEL_TEXT {
        return text;
    }
    let kept = cap(&text, MAX_MODEL_TEXT);
    let cut = text.len() - (kept.len() - '…'.len_utf8());
    format!(
        "{kept}\n[{cut} more bytes cut: the result was {} bytes; ask for a narrower result to see the rest]",
        text.len()
    )
}

/// A one-line human summary, e.g. `echo ok in 0.4 ms: {"text":"hi"}`.
pub fn human_line(tool: &str, is_error: bool, kind: Option<ErrorKind>, millis: f64, content: &str) -> String {
    let status = match (is_error, kind) {
        (false, _) => "ok".to_owned(),
        (true, Some(kind)) => kind.to_string(),
        (true, None) => "error".to_owned(),
    };
    let first_line = content.lines().next().unwrap_or_default();
    format!("{tool} {status} in {millis:.1} ms: {}", cap(first_line, 160))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn success_is_compact_json_or_plain_string() {
        assert_eq!(success_text(&json!({"a": 1})), r#"{"a":1}"#);
        assert_eq!(success_text(&json!("hi")), "hi");
    }

    #[test]
    fn long_results_are_cut_with_a_note() {
        let text = success_text(&json!("x".repeat(MAX_MODEL_TEXT + 500)));
        assert!(text.contains("[500 more bytes cut"), "{}", &text[text.len() - 120..]);
        assert!(text.len() < MAX_MODEL_TEXT + 200);
    }

    #[test]
    fn failures_name_the_kind_or_tool_code() {
        assert_eq!(failure_text(&Failure::new(ErrorKind::Timeout, "late")), "error (timeout): late");
        let tool = Failure { kind: ErrorKind::ToolError, message: "gone".into(), code: Some("not_found".into()) };
        assert_eq!(failure_text(&tool), "error (not_found): gone");
    }

    #[test]
    fn human_line_is_one_line() {
        let line = human_line("echo", false, None, 0.42, "{\"a\":1}\nmore");
        assert_eq!(line, "echo ok in 0.4 ms: {\"a\":1}");
    }
}
