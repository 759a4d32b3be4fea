//! What a principal's name may be ([`principal_fault`]), checked wherever
//! a name enters as a principal: a JWT's claim, an ID token's, a static
//! bearer token's `principal`, `--principal`, a named approver, a passkey's
//! enrolment.

use icu_properties::CodePointMapData;
use icu_properties::props::GeneralCategory;
use unicode_security::mixed_script::AugmentedScriptSet;

/// What is wrong with `principal` as a principal's name, said without
/// repeating a character that is wrong (as `U+XXXX` instead), or `None`
/// when it is a name: 1 to `max_bytes` bytes (`cap` names the setting that
/// says so), no character a confirmation card would show escaped (controls,
/// format characters such as bidirectional controls and zero-width marks,
/// line and paragraph separators, spaces other than U+0020, private-use,
/// unassigned and default-ignorable code points), no space at either end,
/// and no word (a run of letters and digits) that mixes scripts, as
/// Unicode's mixed-script detection (UTS #39, with Japanese, Korean and
/// Han with Bopomofo as one script each) tells them. A principal is
/// written into audit records and logs, matched by policies and shown on
/// approval pages: `аlice` with a Cyrillic `а`, or `" alice"`, would read
/// as `alice` there while being another principal.
pub fn principal_fault(principal: &str, max_bytes: usize, cap: &str) -> Option<String> {
    if principal.is_empty() || principal.len() > max_bytes {
        return Some(format!("is {} bytes: accepted 1 to {max_bytes} bytes ({cap})", principal.len()));
    }
    if let Some((at, c)) = principal.chars().enumerate().find(|(_, c)| crate::card::is_hidden(*c)) {
        return Some(format!(
            "holds U+{:04X}, {}, at character {}: a principal may not hold control characters, format characters \
             (bidirectional controls, invisible marks), line breaks, spaces other than U+0020, or invisible, \
             private-use or unassigned code points",
            u32::from(c),
            hidden_kind(c),
            at + 1
        ));
    }
    if principal.starts_with(' ') || principal.ends_with(' ') {
        return Some("starts or ends with a space: a principal may not, since it would read as another".to_owned());
    }
    mixed_script(principal)
}

/// What kind of hidden character `c` is, in words.
fn hidden_kind(c: char) -> &'static str {
    match c {
        '\n' | '\r' | '\u{0b}' | '\u{0c}' | '\u{85}' => "a line break",
        '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => {
            "a bidirectional control"
        }
        c => match CodePointMapData::<GeneralCategory>::new().get(c) {
            GeneralCategory::Control => "a control character",
            GeneralCategory::Format => "an invisible format character",
            GeneralCategory::LineSeparator | GeneralCategory::ParagraphSeparator => "a line break",
            GeneralCategory::SpaceSeparator => "a space other than U+0020",
            _ => "an invisible, private-use or unassigned code point",
        },
    }
}

/// Why `principal` mixes scripts within a word, naming the first character
/// that has no script in common with the letters before it in its word.
fn mixed_script(principal: &str) -> Option<String> {
    let mut word = AugmentedScriptSet::default();
    for (at, c) in principal.chars().enumerate() {
        if !c.is_alphanumeric() {
            word = AugmentedScriptSet::default();
            continue;
        }
        let mut with = word;
        with.intersect_with(AugmentedScriptSet::for_char(c));
        if with.is_empty() {
            return Some(format!(
                "mixes scripts within one word: character {} (U+{:04X}) is {}, the letters before it {}; a principal \
                 may use any script, one per word, since a letter of another script can look the same",
                at + 1,
                u32::from(c),
                AugmentedScriptSet::for_char(c),
                word
            ));
        }
        word = with;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_principal_is_a_name_that_reads_as_itself() {
        let fault = |name: &str| principal_fault(name, 256, "the cap");
        for name in
            ["alice", "zoë", "用户-42", "山田たろう", "김민준", "alice@example.com", "Alice Smith", "Иван Smith"]
        {
            assert_eq!(fault(name), None, "{name}");
        }
        let why = fault("\u{430}lice").unwrap();
        assert!(why.contains("character 2 (U+006C) is Latin, the letters before it Cyrillic"), "{why}");
        assert!(!why.contains('\u{430}'), "the character is named, never repeated: {why}");
        let why = fault("acc\u{2010}\u{430}b\u{441}").unwrap();
        assert!(why.contains("mixes scripts within one word"), "{why}");
        for spaced in [" alice", "alice ", " "] {
            assert!(fault(spaced).unwrap().contains("starts or ends with a space"), "{spaced:?}");
        }
        assert!(fault("ali\u{a0}ce").unwrap().contains("U+00A0, a space other than U+0020"));
        assert!(fault("alice\u{200b}").unwrap().contains("U+200B, an invisible format character, at character 6"));
        assert!(fault("al\u{202e}ice").unwrap().contains("a bidirectional control"));
        assert!(fault("alice\nbob").unwrap().contains("a line break"));
        assert!(fault("\u{3164}").unwrap().contains("U+3164"), "a Hangul filler is blank");
        assert_eq!(fault("").unwrap(), "is 0 bytes: accepted 1 to 256 bytes (the cap)");
        assert!(fault(&"a".repeat(257)).unwrap().starts_with("is 257 bytes"));
    }

    #[test]
    fn principal_faults_are_found_in_every_category_refused() {
        // Every code point a card would show escaped is refused in a
        // principal, and every other one is accepted (alone, a word of one
        // character is in one script).
        let mut refused = 0;
        for c in (0..=0x10_ffff_u32).filter_map(char::from_u32) {
            let expected = crate::card::is_hidden(c) || c == ' ';
            let name = c.to_string();
            assert_eq!(principal_fault(&name, 256, "cap").is_some(), expected, "U+{:04X}", u32::from(c));
            refused += usize::from(expected);
        }
        assert!(refused > 65 + 150, "Cc and Cf hold hundreds of code points, {refused} refused");
    }
}
