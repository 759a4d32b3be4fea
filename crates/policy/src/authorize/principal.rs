//! The facts a tool may see about its caller (`airlock:tool/caller`), read
//! once from the operator's entities file when the policy is loaded: the
//! attributes of each `Airlock::User` entity as Cedar's JSON, and the
//! entities it is in (transitively, as Cedar's `in` sees them).
//!
//! The entities file is the operator's, but what a tool receives is still
//! capped ([`MAX_CALLER_ATTRIBUTES`], [`MAX_CALLER_ATTRIBUTE_BYTES`],
//! [`MAX_CALLER_PARENTS`]): an attribute over a cap is left out of what the
//! tool sees (the policy still uses it) and the load logs a warning naming
//! the principal and the attribute.
//!
//! Also what a principal's name may be ([`principal_fault`]), checked
//! wherever a name enters as a principal: a JWT's claim, an ID token's, a
//! static bearer token's `principal`, `--principal`, a named approver, a
//! passkey's enrolment.

use super::*;
use airlock_core::caller::{MAX_CALLER_ATTRIBUTE_BYTES, MAX_CALLER_ATTRIBUTES, MAX_CALLER_PARENTS, PrincipalFacts};
use icu_properties::CodePointMapData;
use icu_properties::props::GeneralCategory;
use unicode_security::mixed_script::AugmentedScriptSet;

/// The facts of every principal the entities file describes.
pub(super) fn principal_facts(entities: &Entities, user_type: &EntityTypeName) -> HashMap<String, Arc<PrincipalFacts>> {
    let mut facts = HashMap::new();
    for entity in entities.iter() {
        let uid = entity.uid();
        if uid.type_name() != user_type {
            continue;
        }
        let principal = uid.id().unescaped().to_owned();
        facts.insert(principal.clone(), Arc::new(facts_of(entities, entity, &principal)));
    }
    facts
}

fn facts_of(entities: &Entities, entity: &cedar_policy::Entity, principal: &str) -> PrincipalFacts {
    let json = entity.to_json_value().unwrap_or_default();
    let mut attributes: Vec<(String, String)> = json
        .get("attrs")
        .and_then(Value::as_object)
        .map(|attrs| attrs.iter().map(|(name, value)| (name.clone(), value.to_string())).collect())
        .unwrap_or_default();
    attributes.sort();
    attributes.retain(|(name, value)| {
        let fits = name.len() + value.len() <= MAX_CALLER_ATTRIBUTE_BYTES;
        if !fits {
            tracing::warn!(
                principal,
                attribute = name.as_str(),
                "the attribute is longer than {MAX_CALLER_ATTRIBUTE_BYTES} bytes: tools do not see it"
            );
        }
        fits
    });
    if attributes.len() > MAX_CALLER_ATTRIBUTES {
        tracing::warn!(
            principal,
            "the principal has more than {MAX_CALLER_ATTRIBUTES} attributes: tools see the first"
        );
        attributes.truncate(MAX_CALLER_ATTRIBUTES);
    }
    let mut parents: Vec<(String, String)> = entities
        .ancestors(&entity.uid())
        .map(|ancestors| ancestors.map(|uid| (uid.type_name().to_string(), uid.id().unescaped().to_owned())).collect())
        .unwrap_or_default();
    parents.sort();
    parents.dedup();
    if parents.len() > MAX_CALLER_PARENTS {
        tracing::warn!(principal, "the principal is in more than {MAX_CALLER_PARENTS} entities: tools see the first");
        parents.truncate(MAX_CALLER_PARENTS);
    }
    PrincipalFacts { attributes, parents }
}

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
    use serde_json::json;

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

    fn policy(entities: &Value) -> Policy {
        Policy::from_text("permit (principal, action, resource);", "p.cedar", Some((&entities.to_string(), "e.json")))
            .unwrap()
    }

    #[test]
    fn facts_come_from_the_user_entity_and_are_capped() {
        let mut attrs = serde_json::Map::new();
        for n in 0..MAX_CALLER_ATTRIBUTES + 5 {
            attrs.insert(format!("a{n:03}"), json!(n));
        }
        attrs.insert("big".into(), json!("x".repeat(MAX_CALLER_ATTRIBUTE_BYTES)));
        attrs.insert("account".into(), json!({"__entity": {"type": "Bank::Account", "id": "acc-1"}}));
        let parents: Vec<Value> =
            (0..MAX_CALLER_PARENTS + 3).map(|n| json!({"type": "Airlock::Role", "id": format!("r{n:03}")})).collect();
        let policy = policy(&json!([
            { "uid": { "type": "Airlock::User", "id": "alice" }, "attrs": attrs, "parents": parents },
            { "uid": { "type": "Airlock::Tool", "id": "alice" }, "attrs": { "x": 1 }, "parents": [] }
        ]));
        let facts = policy.principal_facts("alice");
        assert_eq!(facts.attributes.len(), MAX_CALLER_ATTRIBUTES);
        assert!(facts.attributes.iter().all(|(name, _)| name != "big"), "an attribute over the cap is left out");
        assert_eq!(facts.attributes[0], ("a000".to_owned(), "0".to_owned()), "sorted by name");
        assert_eq!(facts.parents.len(), MAX_CALLER_PARENTS);
        assert_eq!(facts.parents[0], ("Airlock::Role".to_owned(), "r000".to_owned()));
        assert_eq!(*policy.principal_facts("nobody"), PrincipalFacts::default());

        let small = policy_with_account();
        let facts = small.principal_facts("bob");
        let [(name, value)] = facts.attributes.as_slice() else { panic!("one attribute: {facts:?}") };
        assert_eq!(name, "account");
        let value: Value = serde_json::from_str(value).unwrap();
        assert_eq!(value, json!({"__entity": {"type": "Bank::Account", "id": "acc-1"}}), "Cedar's JSON form");
    }

    fn policy_with_account() -> Policy {
        policy(&json!([
            { "uid": { "type": "Airlock::User", "id": "bob" },
              "attrs": { "account": {"__entity": {"type": "Bank::Account", "id": "acc-1"}} }, "parents": [] }
        ]))
    }
}
