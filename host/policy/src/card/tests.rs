//! Cards: the template language (fields, filters, parse errors at load),
//! the escaping and caps of values from a model or a guest, and `[cards]`.

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
        render("Transfer {amount} {currency|upper} to account {to_account|last4} — payee: {payee.name}", args.clone()),
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
