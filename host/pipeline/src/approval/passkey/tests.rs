use super::*;
use crate::approval::Approver;
use serde_json::Value;

#[path = "../../../../../tests/integration/softkey.rs"]
mod softkey;
use softkey::SoftKey;

fn approval(id: &str) -> Approval {
    Approval {
        id: id.into(),
        principal: "alice".into(),
        tool: "create_transfer".into(),
        revision: "sha256:r".into(),
        argument_digest: "sha256:a".into(),
        call_id: "c".into(),
        card: "card".into(),
        reason: "why".into(),
        approver: Approver::Caller,
        created_ms: 0,
        expires_ms: u64::MAX,
        answer: None,
        used: false,
    }
}

fn options(challenge: &Challenge) -> Value {
    serde_json::from_str(&challenge.options).unwrap()
}

const ORIGIN: &str = "http://localhost:8080";

/// A relying party, its key, and alice's soft passkey registered on it.
fn enrolled() -> (RelyingParty, LinkKey, SoftKey, Passkey) {
    let rp = RelyingParty::for_page(ORIGIN).unwrap();
    let key = LinkKey::random().unwrap();
    let user = Uuid::new_v4();
    let registration = rp.register(&key, "alice", user, "link L", &[], 0).unwrap();
    let (soft, credential) = SoftKey::create(&options(&registration), ORIGIN);
    let (passkey, made_for) = rp.registered(&key, "alice", "link L", &registration.sealed, &credential, 1).unwrap();
    assert_eq!(made_for, user);
    assert_eq!(credential_id(passkey.cred_id()), soft.name());
    (rp, key, soft, passkey)
}

#[test]
fn a_relying_party_is_a_name_browsers_make_passkeys_for() {
    for good in ["http://localhost:8080", "http://approvals.localhost:9", "https://approvals.bank.example"] {
        let rp = RelyingParty::for_page(good).unwrap_or_else(|e| panic!("{good}: {e}"));
        assert_eq!(rp.origin(), good);
    }
    assert_eq!(RelyingParty::for_page("https://approvals.bank.example/").unwrap().id(), "approvals.bank.example");
    for (bad, says) in [
        ("http://127.0.0.1:8080", "names an IP address"),
        ("https://[::1]:8443", "names an IP address"),
        ("http://approvals.bank.example", "plain http at another host than localhost"),
        ("not a url", "is not an origin"),
    ] {
        let why = RelyingParty::for_page(bad).unwrap_err();
        assert!(why.contains(says), "{bad}: {why}");
    }
}

#[test]
fn an_assertion_answers_the_one_approval_and_answer_it_was_made_for() {
    let (rp, key, mut soft, passkey) = enrolled();
    let first = approval("a1");
    let purpose = Purpose::answer(&first, true);
    let challenge = rp.ask(&key, purpose.clone(), std::slice::from_ref(&passkey), 10).unwrap();
    let assertion = soft.get(&options(&challenge), ORIGIN);
    let result = rp.check(&key, &purpose, &challenge.sealed, &assertion, 11).unwrap();
    assert_eq!(credential_id(result.cred_id()), soft.name());
    assert!(result.user_verified());

    // The same assertion, its state: for declining the approval, for
    // another approval, or from another host's page, proves nothing.
    let not = |purpose: &Purpose, sealed: &str, credential: &str| rp.check(&key, purpose, sealed, credential, 12);
    let why = not(&Purpose::answer(&first, false), &challenge.sealed, &assertion).unwrap_err();
    assert!(why.0.contains("made for another approval or answer"), "{why}");
    let other = approval("a2");
    assert!(not(&Purpose::answer(&other, true), &challenge.sealed, &assertion).is_err());
    let theirs = LinkKey::random().unwrap();
    assert!(rp.check(&theirs, &purpose, &challenge.sealed, &assertion, 12).unwrap_err().0.contains("not made by"));
    // Another approval's challenge, answered with this assertion: the
    // challenge signed is not the one sealed.
    let second = rp.ask(&key, Purpose::answer(&other, true), std::slice::from_ref(&passkey), 10).unwrap();
    let why = not(&Purpose::answer(&other, true), &second.sealed, &assertion).unwrap_err();
    assert!(why.0.contains("does not verify"), "{why}");
    // A challenge lapses.
    let late = rp.check(&key, &purpose, &challenge.sealed, &assertion, 10 + ttl_ms());
    assert!(late.unwrap_err().0.contains("lapsed"));
    // Made at another origin (a look-alike site relaying the challenge).
    let phished = soft.get(&options(&challenge), "http://localhost:9999");
    assert!(not(&purpose, &challenge.sealed, &phished).is_err());
    // Not an assertion at all, or none.
    assert!(not(&purpose, &challenge.sealed, "{}").is_err());
    assert!(not(&purpose, &challenge.sealed, "").unwrap_err().0.contains("no passkey answered"));
    assert!(not(&purpose, &challenge.sealed, &"x".repeat(MAX_CREDENTIAL_BYTES + 1)).is_err());
}

#[test]
fn a_registration_is_bound_to_its_principal_and_link() {
    let rp = RelyingParty::for_page(ORIGIN).unwrap();
    let key = LinkKey::random().unwrap();
    let registration = rp.register(&key, "alice", Uuid::new_v4(), "link L", &[], 0).unwrap();
    let (_, credential) = SoftKey::create(&options(&registration), ORIGIN);
    for (principal, through) in [("bob", "link L"), ("alice", "link M")] {
        let why = rp.registered(&key, principal, through, &registration.sealed, &credential, 1).unwrap_err();
        assert!(why.0.contains("another person or link"), "{why}");
    }
    assert!(rp.registered(&key, "alice", "link L", &registration.sealed, &credential, ttl_ms()).is_err(), "lapsed");
    assert!(rp.ask(&key, Purpose::Enrol { principal: "a".into(), through: "t".into() }, &[], 0).is_err());
}
