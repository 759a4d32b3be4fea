use super::*;

/// A component header and nothing else.
const EMPTY: [u8; 8] = [0, b'a', b's', b'm', 0x0d, 0, 0x01, 0];

fn raw() -> RawMetadata {
    RawMetadata {
        name: "echo".into(),
        description: "Echo the text back.".into(),
        parameters: r#"{"type":"object"}"#.into(),
        output: None,
    }
}

/// `bytes` with a custom section `name` holding `payload` appended.
fn with_section(bytes: &[u8], name: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    let section = wasm_encoder::CustomSection { name: name.into(), data: payload.into() };
    out.push(0);
    wasm_encoder::Encode::encode(&section, &mut out);
    out
}

#[test]
fn a_stamped_component_carries_its_metadata_once() {
    let other = with_section(&EMPTY, "producers-like", b"kept");
    let once = stamp(&other, &raw()).unwrap();
    let recorded = find(&once).unwrap().unwrap();
    assert_eq!(recorded.raw, raw());
    assert_eq!(recorded.contract, None, "no exports");
    let mut changed = raw();
    changed.output = Some(r#"{"type":"string"}"#.into());
    let twice = stamp(&once, &changed).unwrap();
    assert_eq!(find(&twice).unwrap().unwrap().raw, changed, "stamping again replaces the section");
    assert!(twice.starts_with(&other), "other sections are kept as they were");
    assert_eq!(twice.windows(SECTION.len()).filter(|w| *w == SECTION.as_bytes()).count(), 1);
}

#[test]
fn a_component_without_the_section_has_none() {
    assert!(find(&EMPTY).unwrap().is_none());
    assert!(find(&with_section(&EMPTY, "name", b"x")).unwrap().is_none());
}

#[test]
fn a_bad_section_is_named() {
    let err = find(&with_section(&EMPTY, SECTION, b"{not json")).err().unwrap();
    assert!(err.contains("not the JSON document") && err.contains(SECTION), "{err}");
    let err = find(&with_section(&EMPTY, SECTION, br#"{"name":"x"}"#)).err().unwrap();
    assert!(err.contains("missing field"), "{err}");
    let big = vec![b' '; MAX_RECORDED_BYTES + 1];
    let err = find(&with_section(&EMPTY, SECTION, &big)).err().unwrap();
    assert!(err.contains(&format!("at most {MAX_RECORDED_BYTES}")), "{err}");
    let stamped = stamp(&EMPTY, &raw()).unwrap();
    let doubled = with_section(&stamped, SECTION, b"{}");
    assert!(find(&doubled).err().unwrap().contains("more than one"));
    let mut truncated = stamped.clone();
    truncated.pop();
    assert!(find(&truncated).err().unwrap().contains("malformed"));
}

#[test]
fn a_difference_names_the_field() {
    assert!(compare(&raw(), &raw()).is_ok());
    let mut other = raw();
    other.description = "Something else.".into();
    let err = compare(&raw(), &other).err().unwrap();
    assert!(err.contains("(the description differs)") && err.contains("airlock tool stamp"), "{err}");
    other.parameters = "{}".into();
    assert!(compare(&raw(), &other).err().unwrap().contains("the description, parameters differ"));
}
