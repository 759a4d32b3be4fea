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
//! guest. Inserted text cannot forge the card's structure or hide in it:
//! line breaks and tabs are shown as `\n`, `\r`, `\t`, and every code point
//! that renders as nothing or as a blank, or that changes how the text
//! around it reads, as `\u{XXXX}` (lowercase hex): controls (Cc), format
//! characters (Cf: bidirectional overrides and isolates, zero-width
//! characters, the soft hyphen, tags U+E0000–U+E007F, interlinear
//! annotations), private-use code points (Co), unassigned ones and
//! noncharacters (Cn), line and paragraph separators (Zl, Zp), every space
//! but U+0020 (Zs), every Default_Ignorable_Code_Point (variation
//! selectors, U+034F, the Hangul fillers), U+2800 and U+1D159 (blank
//! glyphs), and a combining mark (Mn, Me) past [`MAX_COMBINING_MARKS`] on
//! one character or with no character before it in the value. Emoji joined
//! by U+200D or styled by U+FE0F show that joiner or selector: a card is
//! read for exactness, not for its pictures. A card with any `\u{…}` ends
//! with the line [`HIDDEN_WARNING`]. Each value is cut at `[cards]
//! max_value_bytes` and the whole card at `max_card_bytes` (a presented
//! result at `max_presented_bytes`, its warning on the same line), cuts
//! marked with `…` ([`CardSettings`]). Templates are host-only: they never
//! reach a model.

use airlock_core::text::cap;
use icu_properties::props::{DefaultIgnorableCodePoint, GeneralCategory, Script};
use icu_properties::{CodePointMapData, CodePointSetData};
use serde_json::Value;
use std::fmt::Write as _;

/// Longest template accepted in `confirm` or `present_result` (a limit on
/// the operator's own file).
pub const MAX_TEMPLATE_BYTES: usize = 2048;
/// Each inserted value is cut at this many bytes (after escaping) unless
/// `[cards] max_value_bytes` says otherwise.
pub const DEFAULT_MAX_CARD_VALUE_BYTES: usize = 256;
/// A rendered confirmation card is cut at this many bytes unless `[cards]
/// max_card_bytes` says otherwise.
pub const DEFAULT_MAX_CARD_BYTES: usize = 2048;
/// A presented result (one line) is cut at this many bytes unless `[cards]
/// max_presented_bytes` says otherwise.
pub const DEFAULT_MAX_PRESENTED_BYTES: usize = 512;
/// Most substitutions in one template.
const MAX_FIELDS: usize = 64;
/// Most combining marks (nonspacing or enclosing) shown on one character of
/// an inserted value; the rest are escaped. Three keep every ordinary
/// script readable (Vietnamese stacks two, pointed Hebrew and Tibetan three)
/// while a flood of marks cannot paint over the lines around it.
pub const MAX_COMBINING_MARKS: usize = 3;
/// The line a card (or, after ` — `, a presented result) ends with when an
/// inserted value had a character shown as `\u{…}`: the human is told that
/// the text they read differs from what it looks like it would be.
pub const HIDDEN_WARNING: &str = "Warning: hidden characters are shown as \\u{…}";

airlock_settings::section! {
    /// The keys of `[cards]`.
    pub const CARDS: Section<CardSettings> = "cards";
    /// `[cards]` as written.
    pub struct RawCards {}
    hand {}
    /// `[cards]`: how long the cards and presented results rendered from
    /// every tool's templates may be. Read for each call, so a reload applies.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    group pub struct CardSettings: Default (RawCardKeys) at () {
        ;
        /// a confirmation card is cut here, marked `…`
        max_card_bytes => max_card_bytes: usize = DEFAULT_MAX_CARD_BYTES, Reload, range Bytes 64..=65_536;
        /// a presented result (one line) is cut here, marked `…`
        max_presented_bytes => max_presented_bytes: usize = DEFAULT_MAX_PRESENTED_BYTES, Reload,
            range Bytes 64..=8192;
        /// each value inserted in a card or presented result is cut here after escaping, marked `…`
        max_value_bytes => max_value_bytes: usize = DEFAULT_MAX_CARD_VALUE_BYTES, Reload, range Bytes 16..=8192;
    }
}

impl CardSettings {
    /// Check `[cards]`: each cap within its range.
    ///
    /// # Errors
    ///
    /// The key out of range, its value and the accepted range.
    pub fn from_raw(raw: RawCards) -> Result<CardSettings, String> {
        Self::from_keys(&(&raw).into(), &Self::defaults(), &CARDS.scope())
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
    /// Parsed for one line (`present_result`): the warning goes on the same
    /// line.
    one_line: bool,
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
        Ok(Template { source: source.to_owned(), parts, one_line })
    }

    /// The template as the operator wrote it.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Render over `scope`, each value cut at `max_value` bytes and the
    /// whole at `max` bytes. Missing fields render as `{path?}`. When a
    /// value had a character shown as `\u{…}`, the result ends with
    /// [`HIDDEN_WARNING`] (on its own line, or after ` — ` for a one-line
    /// template), kept within `max` by cutting what comes before it.
    pub fn render(&self, scope: Scope<'_>, max: usize, max_value: usize) -> String {
        let mut out = String::new();
        let mut hidden = false;
        for part in &self.parts {
            match part {
                Part::Text(text) => out.push_str(text),
                Part::Field { path, filters } => match lookup(scope, path) {
                    Some(value) => {
                        let escaped = escape_value(&apply(value, filters), max_value);
                        hidden |= escaped.hidden;
                        out.push_str(&escaped.text);
                    }
                    None => {
                        let _ = write!(out, "{{{path}?}}");
                    }
                },
            }
            if out.len() > max {
                break;
            }
        }
        if !hidden {
            return cap(&out, max).into_owned();
        }
        let separator = if self.one_line { " — " } else { "\n" };
        let body = cap(&out, max.saturating_sub(separator.len() + HIDDEN_WARNING.len()));
        cap(&format!("{body}{separator}{HIDDEN_WARNING}"), max).into_owned()
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

/// Whether `c` is shown escaped wherever it appears in an inserted value:
/// it renders as nothing or as a blank, or changes how the text around it
/// reads (line breaks, direction, joining), or has no agreed glyph.
///
/// That is: controls (Cc), format characters (Cf: bidirectional controls,
/// zero-width characters, tags, interlinear annotations), private-use (Co),
/// unassigned code points and noncharacters (Cn), line and paragraph
/// separators (Zl, Zp), every space other than U+0020 (Zs), every
/// Default_Ignorable_Code_Point (variation selectors, U+034F, Hangul
/// fillers), and the blank-looking U+2800 and U+1D159. The Unicode data is
/// ICU4X's.
pub(crate) fn is_hidden(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_control();
    }
    matches!(
        CodePointMapData::<GeneralCategory>::new().get(c),
        GeneralCategory::Control
            | GeneralCategory::Format
            | GeneralCategory::PrivateUse
            | GeneralCategory::Surrogate
            | GeneralCategory::Unassigned
            | GeneralCategory::LineSeparator
            | GeneralCategory::ParagraphSeparator
            | GeneralCategory::SpaceSeparator
    ) || CodePointSetData::new::<DefaultIgnorableCodePoint>().contains(c)
        || BLANK_GLYPHS.contains(&c)
}

/// Graphic characters whose glyph is empty: U+2800 BRAILLE PATTERN BLANK and
/// U+1D159 MUSICAL SYMBOL NULL NOTEHEAD.
const BLANK_GLYPHS: [char; 2] = ['\u{2800}', '\u{1d159}'];

/// Whether `c` is a combining mark that stacks on the character before it
/// (nonspacing Mn or enclosing Me).
fn is_stacking_mark(c: char) -> bool {
    matches!(
        CodePointMapData::<GeneralCategory>::new().get(c),
        GeneralCategory::NonspacingMark | GeneralCategory::EnclosingMark
    )
}

/// An inserted value as it is shown.
struct Escaped {
    /// The value with every hidden character and every excess mark escaped.
    text: String,
    /// Whether any character of `text` was shown as `\u{…}`: the card then
    /// carries [`HIDDEN_WARNING`].
    hidden: bool,
}

/// `text` with structural characters shown escaped, cut at `max` bytes:
/// line breaks and tabs as `\n`, `\r`, `\t`; every hidden character (see
/// the module documentation) and every combining mark past
/// [`MAX_COMBINING_MARKS`] on one character, or with no character before it
/// in the value, as `\u{XXXX}` (lowercase hex, at least four digits).
pub fn escape(text: &str, max: usize) -> String {
    escape_value(text, max).text
}

/// [`escape`], also saying whether anything was shown as `\u{…}`.
fn escape_value(text: &str, max: usize) -> Escaped {
    let mut out = Escaped { text: String::new(), hidden: false };
    let mixed = mixed_script_letters(text);
    // Marks shown on the last character shown as itself; `None` when there
    // is no such character for a mark to sit on (the value's start, or an
    // escape just written).
    let mut marks: Option<usize> = None;
    let mut buf = [0; 4];
    let mut hex = String::new();
    for (position, c) in text.chars().enumerate() {
        let mark = !c.is_ascii() && is_stacking_mark(c);
        let (piece, shown) = match c {
            '\n' => ("\\n", Shown::Short),
            '\r' => ("\\r", Shown::Short),
            '\t' => ("\\t", Shown::Short),
            c if is_hidden(c)
                || (mark && marks.is_none_or(|n| n >= MAX_COMBINING_MARKS))
                || mixed.contains(&position) =>
            {
                hex.clear();
                let _ = write!(hex, "\\u{{{:04x}}}", u32::from(c));
                (hex.as_str(), Shown::Hex)
            }
            c => (&*c.encode_utf8(&mut buf), Shown::Itself),
        };
        if out.text.len() + piece.len() > max {
            out.text.push('…');
            return out;
        }
        out.text.push_str(piece);
        marks = match shown {
            Shown::Itself if mark => marks.map(|n| n + 1),
            Shown::Itself => Some(0),
            Shown::Short | Shown::Hex => None,
        };
        out.hidden |= shown == Shown::Hex;
    }
    out
}

/// The positions (in characters) of the letters of `text` shown escaped
/// because the word they are in mixes scripts: a payee `acc-1234` whose
/// `a` is Cyrillic looks like the Latin one. In each run of letters and
/// digits that holds letters of more than one script (Common and
/// Inherited characters, digits among them, belong to any), the letters
/// not of the run's most frequent script are escaped (on a tie, those not
/// Latin). A word in one script, whatever it is, is shown as it is.
fn mixed_script_letters(text: &str) -> Vec<usize> {
    let scripts = CodePointMapData::<Script>::new();
    let mut escaped = Vec::new();
    let mut word: Vec<(usize, Script)> = Vec::new();
    let mut flush = |word: &mut Vec<(usize, Script)>| {
        let mut counts: Vec<(Script, usize)> = Vec::new();
        for (_, script) in word.iter() {
            match counts.iter_mut().find(|(s, _)| s == script) {
                Some((_, n)) => *n += 1,
                None => counts.push((*script, 1)),
            }
        }
        if counts.len() > 1 {
            let main =
                counts.iter().max_by_key(|(script, n)| (*n, *script == Script::Latin)).map(|(script, _)| *script);
            escaped.extend(word.iter().filter(|(_, script)| Some(*script) != main).map(|(at, _)| *at));
        }
        word.clear();
    };
    for (position, c) in text.chars().enumerate() {
        if !c.is_alphanumeric() {
            flush(&mut word);
            continue;
        }
        let script = scripts.get(c);
        if !matches!(script, Script::Common | Script::Inherited) {
            word.push((position, script));
        }
    }
    flush(&mut word);
    escaped
}

/// How [`escape_value`] showed one character.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shown {
    /// As itself.
    Itself,
    /// As `\n`, `\r` or `\t`.
    Short,
    /// As `\u{XXXX}`.
    Hex,
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
mod tests;
