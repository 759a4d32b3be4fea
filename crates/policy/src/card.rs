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
            return cut(&out, max);
        }
        let separator = if self.one_line { " — " } else { "\n" };
        let body = cut(&out, max.saturating_sub(separator.len() + HIDDEN_WARNING.len()));
        cut(&format!("{body}{separator}{HIDDEN_WARNING}"), max)
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
fn is_hidden(c: char) -> bool {
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

    /// `text` read as `[cards]`.
    fn cards(text: &str) -> Result<CardSettings, String> {
        CardSettings::from_raw(toml::from_str(text).map_err(|err| err.to_string())?)
    }

    #[test]
    fn generated_docs_are_current() {
        CARDS.ensure_documents("book/src/operator/cards.md").unwrap();
    }

    #[test]
    fn card_caps_are_ranged() {
        let set = cards("max_card_bytes = 64\nmax_presented_bytes = 8192\nmax_value_bytes = 16").unwrap();
        assert_eq!(set, CardSettings { max_card_bytes: 64, max_presented_bytes: 8192, max_value_bytes: 16 });
        assert_eq!(cards("").unwrap(), CardSettings::default());
        for (key, below, top) in
            [("max_card_bytes", 63, 65_536), ("max_presented_bytes", 63, 8192), ("max_value_bytes", 15, 8192)]
        {
            for value in [below, top + 1] {
                let err = cards(&format!("{key} = {value}")).unwrap_err();
                let expect = format!("[cards] {key} = {value} is out of range: accepted {}..={top} bytes", below + 1);
                assert!(err.contains(&expect), "{err:?} should contain {expect:?}");
            }
        }
        let err = cards("bogus = 1").unwrap_err();
        assert!(err.contains("bogus") && err.contains("max_card_bytes"), "{err}");
    }

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
    fn a_word_that_mixes_scripts_shows_its_odd_letters_escaped() {
        // `acc-1234` with a Cyrillic а (U+0430): the lookalike is shown.
        let card = render("Pay {to}", json!({"to": "\u{430}cc-1234"}));
        assert_eq!(card, format!("Pay \\u{{0430}}cc-1234\n{HIDDEN_WARNING}"));
        // Latin with a Greek ο (U+03BF) inside a word.
        assert!(render("{n}", json!({"n": "g\u{3bf}ogle"})).starts_with("g\\u{03bf}ogle"));
        // Words in one script each are shown as they are, whatever the script,
        // and digits or punctuation mix with any.
        for plain in ["Олег Петров", "José Müller", "東京 2024", "acc-1234", "Ελένη-7"] {
            assert_eq!(render("{n}", json!({"n": plain})), plain, "{plain}");
        }
    }

    #[test]
    fn inserted_text_cannot_forge_lines_or_reorder_the_card() {
        let card = render(
            "Pay {amount} to {payee}",
            json!({"amount": 20000, "payee": "bob\n\nAmount: 1\r\u{2028}x\u{202e}evil\u{2066}\u{200f}\u{1b}[2J"}),
        );
        assert_eq!(
            card,
            "Pay 20000 to bob\\n\\nAmount: 1\\r\\u{2028}x\\u{202e}evil\\u{2066}\\u{200f}\\u{001b}[2J\n\
             Warning: hidden characters are shown as \\u{…}"
        );
        assert!(!card.chars().any(|c| c != '\n' && is_hidden(c)), "{card:?}");
        assert_eq!(card.lines().count(), 2, "only the warning's line break: {card:?}");
        // The operator's own line breaks stay.
        assert_eq!(render("Pay\n{amount}", json!({"amount": 1})), "Pay\n1");
    }

    /// `input`, inserted as a value, reads `expected`.
    #[track_caller]
    fn check(input: &str, expected: &str) {
        assert_eq!(escape(input, 10_000), expected, "{input:?}");
    }

    #[test]
    fn tag_characters_are_shown_escaped() {
        // "acc-1234" followed by the tag spelling of "A1" and the cancel tag.
        check("acc-1234\u{e0041}\u{e0031}\u{e007f}", "acc-1234\\u{e0041}\\u{e0031}\\u{e007f}");
        check("\u{e0001}x\u{e0020}", "\\u{e0001}x\\u{e0020}");
        // A tag-sequence flag (Scotland) shows its tags.
        check("\u{1f3f4}\u{e0067}\u{e0062}\u{e007f}", "\u{1f3f4}\\u{e0067}\\u{e0062}\\u{e007f}");
    }

    #[test]
    fn default_ignorable_code_points_are_shown_escaped() {
        check("a\u{2060}b\u{2061}\u{2062}\u{2063}\u{2064}c", "a\\u{2060}b\\u{2061}\\u{2062}\\u{2063}\\u{2064}c");
        check("pay\u{00ad}ee", "pay\\u{00ad}ee");
        check("a\u{034f}b", "a\\u{034f}b");
        check("x\u{180e}\u{17b4}\u{17b5}", "x\\u{180e}\\u{17b4}\\u{17b5}");
        // Unassigned but reserved as default-ignorable.
        check("a\u{2065}\u{fff0}\u{e0000}\u{e0fff}", "a\\u{2065}\\u{fff0}\\u{e0000}\\u{e0fff}");
        check("\u{206a}\u{206f}\u{1bca0}\u{1d173}\u{1d17a}", "\\u{206a}\\u{206f}\\u{1bca0}\\u{1d173}\\u{1d17a}");
    }

    #[test]
    fn fillers_and_blank_glyphs_are_shown_escaped() {
        check("bob\u{3164}", "bob\\u{3164}");
        check("\u{115f}\u{1160}\u{ffa0}", "\\u{115f}\\u{1160}\\u{ffa0}");
        check("acc\u{2800}1", "acc\\u{2800}1");
        check("x\u{1d159}", "x\\u{1d159}");
        // Spaces other than U+0020 look like one and are not.
        check(
            "20\u{a0}000\u{2003}\u{3000}\u{202f}\u{205f}\u{1680}",
            "20\\u{00a0}000\\u{2003}\\u{3000}\\u{202f}\\u{205f}\\u{1680}",
        );
        check("a b", "a b");
    }

    #[test]
    fn variation_selectors_are_shown_escaped() {
        check("0\u{fe00}1\u{fe0f}", "0\\u{fe00}1\\u{fe0f}");
        check("a\u{e0100}\u{e01ef}", "a\\u{e0100}\\u{e01ef}");
        check("\u{1820}\u{180b}\u{180f}", "\u{1820}\\u{180b}\\u{180f}");
    }

    #[test]
    fn interlinear_annotations_and_other_format_characters_are_shown_escaped() {
        check("\u{fff9}acc-1\u{fffa}acc-2\u{fffb}", "\\u{fff9}acc-1\\u{fffa}acc-2\\u{fffb}");
        check("\u{0600}1\u{06dd}\u{110bd}\u{13430}\u{feff}", "\\u{0600}1\\u{06dd}\\u{110bd}\\u{13430}\\u{feff}");
        check("a\u{200b}\u{200c}\u{200d}\u{200e}\u{200f}b", "a\\u{200b}\\u{200c}\\u{200d}\\u{200e}\\u{200f}b");
    }

    #[test]
    fn private_use_and_unassigned_code_points_are_shown_escaped() {
        check("\u{e000}\u{f8ff}\u{f0000}\u{10fffd}", "\\u{e000}\\u{f8ff}\\u{f0000}\\u{10fffd}");
        check("a\u{0378}\u{ffff}\u{10ffff}", "a\\u{0378}\\u{ffff}\\u{10ffff}");
    }

    #[test]
    fn controls_and_separators_are_shown_escaped() {
        check("a\u{85}b\u{2028}c\u{2029}d\u{7f}\u{9b}", "a\\u{0085}b\\u{2028}c\\u{2029}d\\u{007f}\\u{009b}");
        check("a\nb\rc\td\u{1b}", "a\\nb\\rc\\td\\u{001b}");
    }

    #[test]
    fn floods_of_combining_marks_are_cut_to_three_per_character() {
        // Three marks on one base are shown; the fourth and later are escaped.
        check("a\u{300}\u{301}\u{302}", "a\u{300}\u{301}\u{302}");
        check("a\u{300}\u{301}\u{302}\u{303}\u{304}b", "a\u{300}\u{301}\u{302}\\u{0303}\\u{0304}b");
        let zalgo = format!("1{}2", "\u{336}".repeat(40));
        check(&zalgo, &format!("1{}{}2", "\u{336}".repeat(3), "\\u{0336}".repeat(37)));
        // Enclosing marks count too.
        check("x\u{20dd}\u{20dd}\u{20dd}\u{20dd}", "x\u{20dd}\u{20dd}\u{20dd}\\u{20dd}");
        // A mark with no character before it in the value would combine with
        // the operator's text.
        check("\u{338}1", "\\u{0338}1");
        // A mark after an escaped character would sit on the escape.
        check("\u{2060}\u{301}", "\\u{2060}\\u{0301}");
    }

    #[test]
    fn ordinary_text_stays_readable() {
        for text in [
            "José Müller",
            "Jose\u{301} Mu\u{308}ller",
            // Vietnamese: two marks on one letter.
            "Vie\u{323}\u{302}t Nam",
            "東京都渋谷区",
            "서울특별시",
            "مرحبا بالعالم",
            "שָׁלוֹם",
            "नमस्ते दुनिया",
            "བསྒྲུབས",
            "ภาษาไทย",
            "Ελληνικά Русский",
            "😀 🇮🇳 👍🏽",
            "20 000 € — “quoted” ‘x’ …",
        ] {
            check(text, text);
        }
        // Emoji joined by U+200D or with U+FE0F show the joiner and the
        // selector: exactness over the picture.
        check("👨\u{200d}👩\u{200d}👧", "👨\\u{200d}👩\\u{200d}👧");
        check("❤\u{fe0f}", "❤\\u{fe0f}");
    }

    #[test]
    fn no_code_point_that_renders_invisible_is_shown_as_itself() {
        let gc = CodePointMapData::<GeneralCategory>::new();
        let ignorable = CodePointSetData::new::<DefaultIgnorableCodePoint>();
        for c in (0..=u32::from(char::MAX)).filter_map(char::from_u32) {
            let shown = escape(&format!("a{c}"), 64);
            let visible = shown.chars().all(|s| {
                !ignorable.contains(s)
                    && !matches!(
                        gc.get(s),
                        GeneralCategory::Control
                            | GeneralCategory::Format
                            | GeneralCategory::PrivateUse
                            | GeneralCategory::Unassigned
                            | GeneralCategory::LineSeparator
                            | GeneralCategory::ParagraphSeparator
                    )
                    && (s == ' ' || gc.get(s) != GeneralCategory::SpaceSeparator)
            });
            assert!(visible, "U+{:04X} is shown as {shown:?}", u32::from(c));
        }
    }

    #[test]
    fn a_card_with_hidden_characters_carries_a_warning() {
        let card = render("Pay {amount} to {to}\nOK?", json!({"amount": 5, "to": "acc-1234\u{e0041}\u{e0042}"}));
        assert_eq!(card, "Pay 5 to acc-1234\\u{e0041}\\u{e0042}\nOK?\nWarning: hidden characters are shown as \\u{…}");
        assert_ne!(
            render("Pay {to}", json!({"to": "acc-1234\u{e0041}"})),
            render("Pay {to}", json!({"to": "acc-1234"})),
            "a payee followed by tag characters does not read like the payee"
        );
        // No warning without hidden characters: escaped line breaks are
        // visible as they are.
        assert_eq!(render("Pay {to}", json!({"to": "a\nb"})), "Pay a\\nb");
        assert_eq!(render("Pay {to}", json!({"to": "Jose\u{301}"})), "Pay Jose\u{301}");
        // The warning survives the cut of a long card.
        let caller = caller_value("alice", &[]);
        let long = json!({"to": format!("{}\u{2060}", "x".repeat(200))});
        let card =
            Template::parse("{to}{to}{to}", false).unwrap().render(Scope { value: &long, caller: &caller }, 100, 256);
        assert!(card.len() <= 100 && card.ends_with("…\nWarning: hidden characters are shown as \\u{…}"), "{card}");
        // A presented result stays one line.
        let line = Template::parse("Sent to {to}", true).unwrap().render(
            Scope { value: &json!({"to": "bob\u{ad}"}), caller: &caller },
            DEFAULT_MAX_PRESENTED_BYTES,
            DEFAULT_MAX_CARD_VALUE_BYTES,
        );
        assert_eq!(line, "Sent to bob\\u{00ad} — Warning: hidden characters are shown as \\u{…}");
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
