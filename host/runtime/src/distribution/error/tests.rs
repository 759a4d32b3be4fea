//! What each refusal of the OCI API says and whom it blames.

use super::*;

const D: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// `error` renders as `text` and is blamed on `blame`.
#[track_caller]
fn check(error: DistributionError, blame: Blame, text: &str) {
    assert_eq!(error.to_string(), text);
    assert_eq!(error.blame(), blame, "{text}");
}

#[test]
fn refusals_by_the_settings_name_what_to_do() {
    let tag = "oci://r:5000/tools/echo:v1".to_owned();
    check(
        DistributionError::Unpinned { tag: tag.clone(), lock_file: "airlock.lock".into() },
        Blame::Settings,
        "oci://r:5000/tools/echo:v1 is a tag that airlock.lock does not pin yet: run `airlock pull` to resolve \
         it and pin its digest",
    );
    check(
        DistributionError::TagMoved { tag, now: "sha256:b".into(), pinned: "sha256:a".into(), lock_file: "l".into() },
        Blame::Settings,
        "oci://r:5000/tools/echo:v1 now names sha256:b, but l pins sha256:a: refusing the changed tag (the pinned \
         component stays in use); to accept the new one run `airlock pull --update oci://r:5000/tools/echo:v1`",
    );
    check(
        DistributionError::NoStore,
        Blame::Settings,
        "no store for pulled components: set [distribution] store = \"DIR\" (or HOME or XDG_CACHE_HOME)",
    );
    let unset = RequestError::Credentials(CredentialError::EnvUnset { registry: "r".into(), var: "PW".into() });
    check(
        DistributionError::Request { reference: "oci://r/a:1".into(), problem: unset },
        Blame::Settings,
        "oci://r/a:1: [distribution.credentials.\"r\"] names the environment variable PW, which is not set",
    );
}

#[test]
fn a_bad_reference_is_usage_and_names_the_part_and_the_form() {
    check(
        InvalidReference { text: "oci://r/A:1".into(), problem: ReferenceProblem::Repository("A".into()) }.into(),
        Blame::Usage,
        "\"oci://r/A:1\" is not an OCI reference: repository \"A\" must be lowercase path components [a-z0-9] \
         joined by . _ - and separated by /; expected oci://REGISTRY/REPOSITORY:TAG or \
         oci://REGISTRY/REPOSITORY@sha256:<64 hex digits>",
    );
}

#[test]
fn registry_refusals_carry_the_status_and_the_registrys_words() {
    check(
        DistributionError::Answered {
            reference: "oci://r/a:1".into(),
            status: 403,
            request: Asked::Manifest("v1".into()),
            message: "denied".into(),
        },
        Blame::Registry,
        "oci://r/a:1: the registry answered 403 Forbidden for the manifest v1: denied",
    );
    check(
        DistributionError::Answered {
            reference: "oci://r/a:1".into(),
            status: 599,
            request: Asked::BlobUpload,
            message: String::new(),
        },
        Blame::Registry,
        "oci://r/a:1: the registry answered 599 <unknown status code> to a blob upload: ",
    );
    let unreachable = RequestError::Unreachable { registry: "r:9".into(), why: "refused".into() };
    check(
        DistributionError::Request { reference: "oci://r:9/a:1".into(), problem: unreachable },
        Blame::Registry,
        "oci://r:9/a:1: registry r:9 cannot be reached: refused",
    );
    let too_large = RequestError::TooLarge { url: "http://r/x".into(), size: None, cap: 10, body: Body::Empty };
    assert_eq!(
        too_large.to_string(),
        "http://r/x: the answer is more than 10 bytes, over the 10-byte cap (a fixed cap: this answer should \
         carry no body)"
    );
}

#[test]
fn caps_name_the_key_that_raises_them() {
    let over = |what: Capped| DistributionError::OverCap { subject: "S".into(), what, size: 7, cap: 6 };
    check(
        over(Capped::SignaturePayload),
        Blame::Check,
        "S: a payload of 7 bytes is over the 6-byte cap for a signature payload ([distribution] \
         max_signature_payload_bytes raises it, up to 1048576)",
    );
    check(
        over(Capped::Layers),
        Blame::Check,
        "S has 7 layers: at most 6 are accepted ([distribution] max_layers raises it, up to 1024)",
    );
    check(
        over(Capped::StoredBlob { digest: D.into(), body: Body::Manifest }),
        Blame::Check,
        &format!("S: stored blob {D} is larger than the 6-byte cap ([distribution] max_manifest_bytes raises it)"),
    );
    for (what, key) in [
        (Capped::ComponentLayer, Some("max_component_bytes")),
        (Capped::LockFile { writing: true }, Some("max_lock_bytes")),
        (Capped::ComponentFile, None),
    ] {
        assert_eq!(what.key(), key);
        let text = over(what).to_string();
        assert!(key.is_none_or(|key| text.contains(&format!("[distribution] {key}"))), "{text}");
    }
}

#[test]
fn failed_checks_name_the_digests_and_the_accepted_keys() {
    check(
        DistributionError::DigestMismatch {
            subject: "P".into(),
            what: Blob::Manifest,
            expected: "sha256:a".into(),
            actual: "sha256:b".into(),
        },
        Blame::Check,
        "P: the registry sent a manifest whose sha256 is sha256:b, not the sha256:a asked for: refusing it (the \
         registry or something between is serving other content)",
    );
    check(
        DistributionError::NoAcceptedSignature {
            reference: "P".into(),
            signatures: 2,
            checked: 1,
            accepted: vec!["dev.pub sha256:12".into()],
        },
        Blame::Check,
        "P has 2 signature(s), but none verifies with the accepted key(s) [\"dev.pub sha256:12\"]: refusing it; \
         only the first 1 of its 2 signatures were checked ([distribution] max_signatures raises it, up to 256)",
    );
    check(
        DistributionError::NoAcceptedSignature { reference: "P".into(), signatures: 1, checked: 1, accepted: vec![] },
        Blame::Check,
        "P has 1 signature(s), but none verifies with the accepted key(s) []: refusing it",
    );
}

#[test]
fn local_files_are_named_with_what_is_wrong() {
    check(
        DistributionError::Key { path: "k.key".into(), problem: KeyProblem::Encrypted },
        Blame::Local,
        "key k.key: an encrypted cosign key is not read here; use a PKCS#8 key (`airlock keygen`, or `openssl \
         genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256`), whose public key cosign verifies too",
    );
    check(
        DistributionError::LockFile { path: "airlock.lock".into(), problem: LockProblem::Version(2) },
        Blame::Local,
        "airlock.lock: version = 2 is not known: accepted 1",
    );
    let missing = CredentialError::PasswordFile {
        registry: "r".into(),
        path: "pw".into(),
        problem: PasswordFileProblem::Missing,
    };
    assert_eq!(missing.to_string(), "[distribution.credentials.\"r\"] password_file pw does not exist");
}
