//! Text the host cuts or cleans before a model or a person reads it: the
//! cap on what a model reads, the cut with its ellipsis, and the one rule
//! for the characters of a tool's text. A leaf: every module that shows
//! text (`outcome`, `content`, `render`) uses it, and it uses none of them.

use std::borrow::Cow;

/// The model reads at most this many bytes of one result.
pub const MAX_MODEL_TEXT: usize = 32 << 10;

/// What marks text cut by [`cap`].
pub const ELLIPSIS: &str = "…";

/// `text` cut to at most `max` bytes at a character boundary, ending in
/// [`ELLIPSIS`] when cut (the ellipsis counts toward `max`).
pub fn cap(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    let end = text.floor_char_boundary(max.saturating_sub(ELLIPSIS.len()));
    Cow::Owned(format!("{}{ELLIPSIS}", text.get(..end).unwrap_or_default()))
}

/// A character of a tool's text as kept wherever a model or a person reads
/// it: `\n` and `\t` as they are, the Unicode line and paragraph
/// separators as `\n`, nothing for other control characters and the
/// bidirectional overrides and marks; any other character as it is. The
/// one rule for tool error messages ([`crate::outcome::tool_message`]) and content blocks'
/// text (`content::clean_text`).
pub fn tool_char(c: char) -> Option<char> {
    match c {
        '\n' | '\t' => Some(c),
        '\u{2028}' | '\u{2029}' | '\u{0085}' => Some('\n'),
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' => None,
        c if c.is_control() => None,
        c => Some(c),
    }
}
