//! Confirmation cards and result presenters: the operator's per-tool
//! templates `confirm` (what a human approves) and `present_result` (one
//! line for logs and UIs), and the tiny language they are written in.
//!
//! # The language
//!
//! Literal text with substitutions: `{amount}` inserts a field, `{to|last4}`
//! passes it through filters (`last4`, `upper`, `lower`, `json`), `{{` and
//! `}}` are literal braces. A field is a dotted path (`payee.name`,
//! `items.0`) or a JSON pointer (`/payee/name`) into the arguments (for
//! `confirm`) or the tool's structured result (for `present_result`); a
//! dotted path that starts with `caller.` reads the caller instead:
//! `caller.principal` and `caller.attributes.NAME` (from the operator's
//! entities file). An argument named `caller` is reached with a pointer,
//! `{/caller}`. There are no loops, conditions or calls: a template can only
//! copy values. A syntax error is a configuration error at load time, naming
//! the key and the character position; a field a call does not have renders
//! as the visible placeholder `{name?}`, never as an error.
//!
//! The language is hand-written rather than taken from a template engine:
//! it is a few dozen lines, and every engine offers what a card must not
//! have (expressions, loops, includes, HTML-oriented escaping that is wrong
//! for a plain-text card), so its safety would rest on configuring features
//! off.
//!
//! # Trust
//!
//! The template is the operator's and is trusted, newlines included. Every
//! inserted value is not: arguments come from the model, results from the
//! guest. Inserted text cannot forge the card's structure: control
//! characters (newlines included), Unicode line and paragraph separators,
//! bidirectional overrides and isolates (U+202A–U+202E, U+2066–U+2069),
//! directional and zero-width marks are shown escaped (`\n`, `\u{202e}`),
//! each value is cut at `[cards] max_value_bytes` and the whole card at
//! `max_card_bytes` (a presented result at `max_presented_bytes`), cuts
//! marked with `…` ([`CardSettings`]). Templates are host-only: they never
//! reach a model.

use serde::Deserialize;
use serde_json::Value;
use std::fmt::Write as _;
use std::ops::RangeInclusive;

/// Longest template accepted in `confirm` or `present_result` (a limit on
/// the operator's own file).
pub const MAX_TEMPLATE_BYTES: usize = 2048;
/// Each inserted value is cut at this many bytes (after escaping) unless
/// `[cards] max_value_bytes` says otherwise.
pub const DEFAULT_MAX_CARD_VALUE_BYTES: usize = 256;
/// Accepted `[cards] max_value_bytes`.
pub const MAX_VALUE_BYTES_RANGE: RangeInclusive<usize> = 16..=8192;
/// A rendered confirmation card is cut at this many bytes unless `[cards]
/// max_card_bytes` says otherwise.
pub const DEFAULT_MAX_CARD_BYTES: usize = 2048;
/// Accepted `[cards] max_card_bytes`.
pub const MAX_CARD_BYTES_RANGE: RangeInclusive<usize> = 64..=65_536;
/// A presented result (one line) is cut at this many bytes unless `[cards]
/// max_presented_bytes` says otherwise.
pub const DEFAULT_MAX_PRESENTED_BYTES: usize = 512;
/// Accepted `[cards] max_presented_bytes`.
pub const MAX_PRESENTED_BYTES_RANGE: RangeInclusive<usize> = 64..=8192;
/// Most substitutions in one template.
const MAX_FIELDS: usize = 64;

/// `[cards]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCards {
    max_card_bytes: Option<usize>,
    max_presented_bytes: Option<usize>,
    max_value_bytes: Option<usize>,
}

/// `[cards]`: how long the cards and presented results rendered from
/// every tool's templates may be. Read for each call, so a reload applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CardSettings {
    /// A confirmation card is cut at this many bytes (`max_card_bytes`).
    pub max_card_bytes: usize,
    /// A presented result is cut at this many bytes (`max_presented_bytes`).
    pub max_presented_bytes: usize,
    /// Each inserted value is cut at this many bytes, after escaping
    /// (`max_value_bytes`).
    pub max_value_bytes: usize,
}

impl Default for CardSettings {
    fn default() -> Self {
        CardSettings {
            max_card_bytes: DEFAULT_MAX_CARD_BYTES,
            max_presented_bytes: DEFAULT_MAX_PRESENTED_BYTES,
            max_value_bytes: DEFAULT_MAX_CARD_VALUE_BYTES,
        }
    }
}

impl CardSettings {
    /// Check `[cards]`: each cap within its range.
    ///
    /// # Errors
    ///
    /// The key out of range, its value and the accepted range.
    pub fn from_raw(raw: RawCards) -> Result<CardSettings, String> {
        let ranged = |key: &str, value: Option<usize>, default: usize, range: RangeInclusive<usize>| {
            let value = value.unwrap_or(default);
            if range.contains(&value) {
                Ok(value)
            } else {
                Err(format!("[cards] {key} = {value} is out of range: accepted {}..={}", range.start(), range.end()))
            }
        };
        Ok(CardSettings {
            max_card_bytes: ranged("max_card_bytes", raw.max_card_bytes, DEFAULT_MAX_CARD_BYTES, MAX_CARD_BYTES_RANGE)?,
            max_presented_bytes: ranged(
                "max_presented_bytes",
                raw.max_presented_bytes,
                DEFAULT_MAX_PRESENTED_BYTES,
                MAX_PRESENTED_BYTES_RANGE,
            )?,
            max_value_bytes: ranged(
                "max_value_bytes",
                raw.max_value_bytes,
                DEFAULT_MAX_CARD_VALUE_BYTES,
                MAX_VALUE_BYTES_RANGE,
            )?,
        })
    }
}

/// A filter applied to a value before it is inserted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Filter {
    /// The last four characters (account numbers).
    Last4,
    /// Upper case.
    Upper,
    /// Lower case.
    Lower,
    /// The JSON text of the value (strings quoted).
    Json,
}

impl Filter {
    fn parse(name: &str) -> Option<Filter> {
        Some(match name {
            "last4" => Filter::Last4,
            "upper" => Filter::Upper,
            "lower" => Filter::Lower,
            "json" => Filter::Json,
            _ => return None,
        })
    }
}

/// One piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    /// Operator text, copied as it is.
    Text(String),
    /// A substitution: the path as written, and its filters.
    Field { path: String, filters: Vec<Filter> },
}

/// A parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    source: String,
    parts: Vec<Part>,
}

/// What a template reads: the arguments or the result, and the caller.
#[derive(Debug, Clone, Copy)]
pub struct Scope<'a> {
    /// The arguments (for `confirm`) or the structured result (for
    /// `present_result`).
    pub value: &'a Value,
    /// `{"principal": ..., "attributes": {...}}`, for `caller.` paths.
    pub caller: &'a Value,
}

impl Template {
    /// Parse `source`. `one_line` refuses line breaks in the operator's text
    /// (`present_result`).
    ///
    /// # Errors
    ///
    /// What is wrong and at which character (1-based), and what is accepted.
    pub fn parse(source: &str, one_line: bool) -> Result<Template, String> {
        if source.len() > MAX_TEMPLATE_BYTES {
            return Err(format!(
                "is {} bytes long: accepted at most {MAX_TEMPLATE_BYTES} bytes (MAX_TEMPLATE_BYTES)",
                source.len()
            ));
        }
        let mut parts = Vec::new();
        let mut text = String::new();
        let mut chars = source.chars().enumerate().peekable();
        while let Some((at, c)) = chars.next() {
            let position = at + 1;
            match c {
                '{' if chars.peek().is_some_and(|&(_, n)| n == '{') => {
                    chars.next();
                    text.push('{');
                }
                '}' if chars.peek().is_some_and(|&(_, n)| n == '}') => {
                    chars.next();
                    text.push('}');
                }
                '}' => {
                    return Err(format!(
                        "has an unmatched '}}' at character {position}: write '}}}}' for a literal brace"
                    ));
                }
                '\n' | '\r' if one_line => {
                    return Err(format!("has a line break at character {position}: accepted is one line"));
                }
                '{' => {
                    let mut inner = String::new();
                    let closed = loop {
                        match chars.next() {
                            Some((_, '}')) => break true,
                            Some((_, '{')) | None => break false,
                            Some((_, c)) => inner.push(c),
                        }
                    };
                    if !closed {
                        return Err(format!(
                            "has a '{{' at character {position} that is not closed by '}}': write '{{{{' for a literal brace"
                        ));
                    }
                    if !text.is_empty() {
                        parts.push(Part::Text(std::mem::take(&mut text)));
                    }
                    parts.push(field(&inner).map_err(|m| format!("has {m} in the field at character {position}"))?);
                }
                c => text.push(c),
            }
        }
        if !text.is_empty() {
            parts.push(Part::Text(text));
        }
        let fields = parts.iter().filter(|p| matches!(p, Part::Field { .. })).count();
        if fields > MAX_FIELDS {
            return Err(format!("has {fields} fields: accepted at most {MAX_FIELDS}"));
        }
        Ok(Template { source: source.to_owned(), parts })
    }

    /// The template as the operator wrote it.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Render over `scope`, each value cut at `max_value` bytes and the
    /// whole at `max` bytes. Missing fields render as `{path?}`.
    pub fn render(&self, scope: Scope<'_>, max: usize, max_value: usize) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(text) => out.push_str(text),
                Part::Field { path, filters } => match lookup(scope, path) {
                    Some(value) => out.push_str(&escape(&apply(value, filters), max_value)),
                    None => {
                        let _ = write!(out, "{{{path}?}}");
                    }
                },
            }
            if out.len() > max {
                break;
            }
        }
        cut(&out, max)
    }
}

/// Parse the inside of `{...}`: a path and filters.
fn field(inner: &str) -> Result<Part, String> {
    let mut pieces = inner.split('|').map(str::trim);
    let path = pieces.next().unwrap_or_default();
    let path_ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | '~');
    if path.is_empty() {
        return Err("no field name: expected e.g. {amount} or {/payee/name}".to_owned());
    }
    if let Some(bad) = path.chars().find(|&c| !path_ok(c)) {
        return Err(format!(
            "{bad:?} in {path:?}: field names are letters, digits, '_', '-', '.' (dotted path) or '/' (JSON pointer)"
        ));
    }
    let filters = pieces
        .map(|name| {
            Filter::parse(name)
                .ok_or_else(|| format!("the unknown filter {name:?}: accepted are last4, upper, lower, json"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Part::Field { path: path.to_owned(), filters })
}

/// The value at `path`: a JSON pointer, `caller.…`, or a dotted path.
fn lookup<'a>(scope: Scope<'a>, path: &str) -> Option<&'a Value> {
    if path.starts_with('/') {
        return scope.value.pointer(path);
    }
    let mut segments = path.split('.');
    let mut value = match path.strip_prefix("caller.") {
        Some(_) => {
            segments.next();
            scope.caller
        }
        None => scope.value,
    };
    for segment in segments {
        value = match value {
            Value::Object(map) => map.get(segment)?,
            Value::Array(items) => items.get(segment.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(value)
}

/// The text of `value` after `filters`. A value not yet filtered is shown
/// as its string, or as its JSON for anything else; `json` of a value not yet
/// filtered is its JSON, of filtered text a JSON string.
fn apply(value: &Value, filters: &[Filter]) -> String {
    let plain = || match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut text: Option<String> = None;
    for filter in filters {
        text = Some(match (filter, text.take()) {
            (Filter::Json, None) => value.to_string(),
            (Filter::Json, Some(t)) => Value::String(t).to_string(),
            (Filter::Last4, t) => {
                let t = t.unwrap_or_else(plain);
                let count = t.chars().count();
                t.chars().skip(count.saturating_sub(4)).collect()
            }
            (Filter::Upper, t) => t.unwrap_or_else(plain).to_uppercase(),
            (Filter::Lower, t) => t.unwrap_or_else(plain).to_lowercase(),
        });
    }
    text.unwrap_or_else(plain)
}

/// Whether `c` could change how the card reads beyond its own glyph: line
/// breaks and other controls, bidirectional controls, invisible marks.
fn is_structural(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{061c}' | '\u{200b}'..='\u{200f}' | '\u{feff}')
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with structural characters shown escaped, cut at `max` bytes.
pub fn escape(text: &str, max: usize) -> String {
    let mut out = String::new();
    for c in text.chars() {
        let piece = match c {
            '\n' => "\\n".to_owned(),
            '\r' => "\\r".to_owned(),
            '\t' => "\\t".to_owned(),
            c if is_structural(c) => format!("\\u{{{:04x}}}", u32::from(c)),
            c => c.to_string(),
        };
        if out.len() + piece.len() > max {
            out.push('…');
            return out;
        }
        out.push_str(&piece);
    }
    out
}

/// `text` cut at `max` bytes on a character boundary, the cut marked `…`.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max.saturating_sub('…'.len_utf8());
    while !text.is_char_boundary(end) {
        end = end.saturating_sub(1);
    }
    format!("{}…", text.get(..end).unwrap_or_default())
}

/// The caller as templates read it: `{"principal": ..., "attributes": {...}}`.
/// Attribute values are the entities file's JSON; one that is not JSON is
/// kept as text.
pub fn caller_value(principal: &str, attributes: &[(String, String)]) -> Value {
    let attributes = attributes
        .iter()
        .map(|(name, json)| {
            let value = serde_json::from_str(json).unwrap_or_else(|_| Value::String(json.clone()));
            (name.clone(), value)
        })
        .collect::<serde_json::Map<_, _>>();
    serde_json::json!({ "principal": principal, "attributes": attributes })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn render(template: &str, value: Value) -> String {
        let caller = caller_value("alice", &[("tenant".into(), "\"acme\"".into())]);
        Template::parse(template, false).unwrap().render(
            Scope { value: &value, caller: &caller },
            DEFAULT_MAX_CARD_BYTES,
            DEFAULT_MAX_CARD_VALUE_BYTES,
        )
    }

    #[test]
    fn fields_filters_pointers_and_the_caller() {
        let args = json!({"amount": 20000, "currency": "inr", "to_account": "998112345678",
                          "payee": {"name": "Bob"}, "tags": ["a", "b"], "caller": "arg"});
        assert_eq!(
            render(
                "Transfer {amount} {currency|upper} to account {to_account|last4} — payee: {payee.name}",
                args.clone()
            ),
            "Transfer 20000 INR to account 5678 — payee: Bob"
        );
        assert_eq!(
            render("{/payee/name} {tags.1} {tags|json} {payee.name|json}", args.clone()),
            r#"Bob b ["a","b"] "Bob""#
        );
        assert_eq!(render("{caller.principal}@{caller.attributes.tenant} {/caller}", args.clone()), "alice@acme arg");
        assert_eq!(render("{{literal}} {amount}", args.clone()), "{literal} 20000");
        assert_eq!(render("{missing} {payee.nope} {tags.9}", args), "{missing?} {payee.nope?} {tags.9?}");
    }

    #[test]
    fn inserted_text_cannot_forge_lines_or_reorder_the_card() {
        let card = render(
            "Pay {amount} to {payee}",
            json!({"amount": 20000, "payee": "bob\n\nAmount: 1\r\u{2028}x\u{202e}evil\u{2066}\u{200f}\u{1b}[2J"}),
        );
        assert_eq!(card, "Pay 20000 to bob\\n\\nAmount: 1\\r\\u{2028}x\\u{202e}evil\\u{2066}\\u{200f}\\u{001b}[2J");
        assert!(!card.chars().any(is_structural), "{card:?}");
        // The operator's own line breaks stay.
        assert_eq!(render("Pay\n{amount}", json!({"amount": 1})), "Pay\n1");
    }

    #[test]
    fn values_and_cards_are_capped_with_a_mark() {
        let card = render("[{payee}] end", json!({"payee": "é".repeat(1000)}));
        assert!(card.starts_with("[é") && card.ends_with("…] end"), "{card}");
        assert!(card.len() <= DEFAULT_MAX_CARD_VALUE_BYTES + "[…] end".len(), "{}", card.len());
        let template = "{a}".repeat(MAX_FIELDS);
        let card = render(&template, json!({"a": "x".repeat(1000)}));
        assert!(card.len() <= DEFAULT_MAX_CARD_BYTES && card.ends_with('…'), "{}", card.len());
    }

    #[test]
    fn the_configured_caps_hold_at_the_byte() {
        let caller = caller_value("alice", &[]);
        let template = Template::parse("<{v}>", false).unwrap();
        let at = |v: &str, max: usize, max_value: usize| {
            template.render(Scope { value: &json!({ "v": v }), caller: &caller }, max, max_value)
        };
        // A value of exactly max_value bytes is kept whole; one byte more
        // is cut, marked.
        assert_eq!(at(&"x".repeat(16), 1000, 16), format!("<{}>", "x".repeat(16)));
        assert_eq!(at(&"x".repeat(17), 1000, 16), format!("<{}…>", "x".repeat(16)));
        // A card of exactly max bytes is kept whole; one byte more is cut to
        // at most max, marked.
        assert_eq!(at(&"y".repeat(62), 64, 100).len(), 64);
        assert!(!at(&"y".repeat(62), 64, 100).contains('…'));
        let over = at(&"y".repeat(63), 64, 100);
        assert!(over.len() <= 64 && over.ends_with('…'), "{over}");
    }

    #[test]
    fn syntax_errors_name_the_position_and_what_is_accepted() {
        let err = |t: &str| Template::parse(t, false).unwrap_err();
        assert!(err("Pay {amount").contains("'{' at character 5 that is not closed"), "{}", err("Pay {amount"));
        assert!(err("a } b").contains("unmatched '}' at character 3"));
        assert!(err("x {}").contains("no field name"));
        assert!(err("x {a|shout}").contains("unknown filter \"shout\": accepted are last4"));
        assert!(err("x {a b}").contains("' ' in \"a b\""));
        assert!(err(&"x".repeat(MAX_TEMPLATE_BYTES + 1)).contains("accepted at most 2048 bytes"));
        assert!(Template::parse(&"x".repeat(MAX_TEMPLATE_BYTES), false).is_ok(), "a template at the cap is accepted");
        assert!(err(&"{a}".repeat(MAX_FIELDS + 1)).contains("fields: accepted at most"));
        let one_line = Template::parse("a\nb", true).unwrap_err();
        assert!(one_line.contains("line break at character 2"), "{one_line}");
    }
}
