//! Unit tests of `jwt`.

use super::*;
use airlock_settings::http::{DEFAULT_MAX_CLAIM_LIST_ITEMS, DEFAULT_MAX_JWKS_BYTES, DEFAULT_MAX_JWKS_KEYS};
use std::time::Duration;

fn settings(resource: &str) -> JwtSettings {
    JwtSettings {
        issuer: "https://idp".into(),
        audience: "aud".into(),
        jwks: JwksSource::Url("https://idp/jwks".into()),
        principal_claim: "sub".into(),
        algorithms: vec!["EdDSA".into()],
        authorization_servers: vec!["https://idp".into()],
        resource: resource.into(),
        jwks_refresh: Duration::from_secs(3600),
        jwks_min_refresh: Duration::from_secs(60),
        attribute_claims: Vec::new(),
        shared_principals: false,
        caps: JwtCaps::default(),
    }
}

/// A verifier holding one fresh Ed25519 key (kid `k`), with `caps`, and
/// a signer for that key.
fn with_key(caps: JwtCaps) -> (Verifier, impl Fn(&Value) -> String) {
    use ring::signature::{Ed25519KeyPair, KeyPair as _};
    let pkcs8 = Ed25519KeyPair::generate_pkcs8(&ring::rand::SystemRandom::new()).unwrap();
    let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
    let key = Key {
        kid: Some("k".into()),
        algorithm: Algorithm::EdDSA,
        key: DecodingKey::from_ed_der(pair.public_key().as_ref()),
    };
    let settings = JwtSettings { jwks: JwksSource::File("unused.json".into()), caps, ..settings("https://a/mcp") };
    let keys =
        Keys { keys: Arc::new([key]), loaded: Some(Instant::now()), tried: None, failing: false, fetching: None };
    let store = Arc::new(KeyStore {
        url: None,
        caps,
        refresh: settings.jwks_refresh,
        min_refresh: settings.jwks_min_refresh,
        keys: Mutex::new(keys),
    });
    let verifier = Verifier { settings, algorithms: vec![Algorithm::EdDSA], store };
    let private = jsonwebtoken::EncodingKey::from_ed_der(pkcs8.as_ref());
    let sign = move |claims: &Value| {
        let mut header = jsonwebtoken::Header::new(Algorithm::EdDSA);
        header.kid = Some("k".into());
        jsonwebtoken::encode(&header, claims, &private).unwrap()
    };
    (verifier, sign)
}

fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}

fn claims(sub: &str, pad: usize) -> Value {
    json!({"iss": "https://idp", "aud": "aud", "sub": sub, "exp": now() + 600, "pad": "p".repeat(pad)})
}

fn refusal(result: Result<(String, TokenAttributes), Rejection>) -> String {
    match result {
        Err(Rejection::Invalid(why)) => why,
        other => panic!("not refused: {other:?}"),
    }
}

#[tokio::test]
async fn the_token_size_cap_holds_at_the_byte_before_decoding() {
    let (mut verifier, sign) = with_key(JwtCaps::default());
    let token = sign(&claims("alice", 100));
    verifier.settings.caps.max_token_bytes = token.len();
    assert_eq!(verifier.principal(&token).await.map(|(p, _)| p).ok().as_deref(), Some("alice"), "at the cap");
    let longer = sign(&claims("alice", 101));
    assert!(longer.len() > token.len());
    let why = refusal(verifier.principal(&longer).await);
    let expected =
        format!("the token is {} bytes, over the {}-byte cap ([http.jwt] max_token_bytes)", longer.len(), token.len());
    assert_eq!(why, expected);
    // Garbage at the cap is decoded (and refused for what it is); one
    // byte more is refused for its size alone.
    let cap = token.len();
    assert!(refusal(verifier.principal(&"a".repeat(cap)).await).contains("not a JWT"));
    assert!(refusal(verifier.principal(&"a".repeat(cap + 1)).await).contains("max_token_bytes"));
}

#[tokio::test]
async fn one_fetch_runs_at_a_time_and_known_keys_verify_while_it_does() {
    // A key server that accepts the fetch and never answers it.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/jwks", listener.local_addr().unwrap());
    let (mut verifier, sign) = with_key(JwtCaps::default());
    let held = std::mem::replace(
        &mut *verifier.store.keys.lock().unwrap(),
        Keys { keys: Arc::new([]), loaded: None, tried: None, failing: false, fetching: None },
    );
    verifier.store = Arc::new(KeyStore {
        url: Some(url),
        caps: JwtCaps::default(),
        refresh: Duration::from_secs(3600),
        min_refresh: Duration::from_secs(60),
        keys: Mutex::new(held),
    });
    assert_eq!(verifier.store.unavailable(), None, "keys are held and no fetch failed");
    let first = verifier.store.fetch().expect("a fetch starts");
    let second = verifier.store.fetch().expect("a second asker joins it");
    assert!(first.same_channel(&second), "one fetch at a time");
    let (_connection, _) = listener.accept().await.unwrap();
    // The fetch is connected and waiting for an answer: a token with a
    // known key verifies meanwhile, and an unknown kid would be told to
    // retry.
    let accepted = verifier.principal(&sign(&claims("alice", 0))).await;
    assert_eq!(accepted.map(|(p, _)| p).ok().as_deref(), Some("alice"));
    assert!(!*first.borrow(), "the fetch is still running");
    assert!(verifier.store.unavailable().is_some_and(|retry| (1..=60).contains(&retry)));
}

#[test]
fn crit_headers_are_found() {
    use base64::Engine as _;
    let encode = |header: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(header);
    let token = |header: &str| format!("{}.e30.sig", encode(header));
    assert_eq!(critical_extensions(&token(r#"{"alg":"EdDSA","crit":["exp"]}"#)).as_deref(), Some(r#"["exp"]"#));
    assert_eq!(critical_extensions(&token(r#"{"alg":"EdDSA","crit":[]}"#)).as_deref(), Some("[]"));
    assert_eq!(critical_extensions(&token(r#"{"alg":"EdDSA","kid":"crit"}"#)), None);
}

#[tokio::test]
async fn the_principal_cap_holds_at_the_byte() {
    let (verifier, sign) = with_key(JwtCaps { max_principal_bytes: 8, ..JwtCaps::default() });
    let accepted = verifier.principal(&sign(&claims("abcdefgh", 0))).await;
    assert_eq!(accepted.map(|(p, _)| p).ok().as_deref(), Some("abcdefgh"));
    let why = refusal(verifier.principal(&sign(&claims("abcdefghi", 0))).await);
    assert!(why.contains("9 bytes: accepted 1 to 8 bytes ([http.jwt] max_principal_bytes)"), "{why}");
}

#[tokio::test]
async fn the_leeway_is_the_configured_one() {
    // Expired 30 s ago: refused with no skew allowed, accepted with ten
    // minutes (a margin of minutes, not a timing bound).
    let mut late = claims("alice", 0);
    late["exp"] = json!(now() - 30);
    let (strict, sign) = with_key(JwtCaps { leeway: Duration::ZERO, ..JwtCaps::default() });
    let why = refusal(strict.principal(&sign(&late)).await);
    assert!(why.contains("allowing 0 s of clock skew, [http.jwt] leeway_secs"), "{why}");
    let (lenient, sign) = with_key(JwtCaps { leeway: Duration::from_secs(600), ..JwtCaps::default() });
    assert!(lenient.principal(&sign(&late)).await.is_ok());
}

#[test]
fn only_plain_claims_become_attributes() {
    let claims = json!({"org": "acme", "roles": ["teller", "auditor"], "level": 3, "admin": false,
                        "ratio": 0.5, "nested": {"a": 1}, "mixed": ["a", {"b": 1}],
                        "long": "x".repeat(MAX_CALLER_ATTRIBUTE_BYTES + 1),
                        "many": vec![1; DEFAULT_MAX_CLAIM_LIST_ITEMS + 1]});
    let Value::Object(claims) = claims else { unreachable!() };
    let mapping: Vec<(String, String)> =
        ["admin", "level", "long", "many", "mixed", "missing", "nested", "org", "ratio", "roles"]
            .iter()
            .map(|c| ((*c).to_owned() + "_attr", (*c).to_owned()))
            .collect();
    let attributes = claim_attributes(&claims, &mapping, "alice", DEFAULT_MAX_CLAIM_LIST_ITEMS);
    let names: Vec<&str> = attributes.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["admin_attr", "level_attr", "org_attr", "roles_attr"]);
    assert_eq!(attributes[3].1, json!(["teller", "auditor"]));
}

#[test]
fn a_claim_fits_with_its_attribute_name_as_the_tool_sees_it() {
    // The cap counts the name with the JSON value, as the tool's view
    // (`PrincipalFacts::with_token_attributes`) does: policy and tool
    // see the same attributes.
    let name = "tenant_name";
    let fits = MAX_CALLER_ATTRIBUTE_BYTES - name.len() - 2;
    for (len, kept) in [(fits, true), (fits + 1, false)] {
        let Value::Object(claims) = json!({"t": "x".repeat(len)}) else { unreachable!() };
        let attributes = claim_attributes(&claims, &[(name.to_owned(), "t".to_owned())], "alice", 4);
        assert_eq!(attributes.len() == 1, kept, "a {len}-byte claim");
        let facts = airlock_core::caller::PrincipalFacts::default().with_token_attributes(&attributes);
        assert_eq!(facts.attributes.len() == 1, kept, "the tool sees what the policy sees");
    }
}

#[test]
fn list_claims_are_capped_at_the_configured_count() {
    let claims = json!({"two": ["a", "b"], "three": ["a", "b", "c"]});
    let Value::Object(claims) = claims else { unreachable!() };
    let mapping = [("two".to_owned(), "two".to_owned()), ("three".to_owned(), "three".to_owned())];
    let attributes = claim_attributes(&claims, &mapping, "alice", 2);
    let names: Vec<&str> = attributes.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["two"], "a list of max_claim_list_items is kept, one more item gives no attribute");
}

#[test]
fn the_metadata_url_puts_the_well_known_path_before_the_resource_path() {
    let url = |r: &str| Verifier::new(&settings(r)).unwrap().metadata_url();
    assert_eq!(url("https://a.example/mcp"), "https://a.example/.well-known/oauth-protected-resource/mcp");
    assert_eq!(url("https://a.example:8443/"), "https://a.example:8443/.well-known/oauth-protected-resource");
    assert_eq!(url("http://127.0.0.1:9"), "http://127.0.0.1:9/.well-known/oauth-protected-resource");
}

#[test]
fn descriptions_are_header_safe() {
    assert_eq!(header_safe("kid \"x\\y\"\n"), "kid 'x/y'?");
}

#[test]
fn jwks_documents_are_capped_and_unusable_keys_skipped() {
    let defaults = JwtCaps::default();
    let too_many: Vec<Value> = (0..=DEFAULT_MAX_JWKS_KEYS).map(|_| json!({})).collect();
    let err = parse_jwks(json!({ "keys": too_many }).to_string().as_bytes(), &defaults).err().unwrap();
    assert!(err.contains("at most 64"), "{err}");
    assert!(parse_jwks(&vec![b' '; DEFAULT_MAX_JWKS_BYTES + 1], &defaults).is_err());
    let keys = parse_jwks(
        json!({ "keys": [
            { "kty": "oct", "k": "c2VjcmV0" },
            { "kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo", "kid": "a" },
            { "kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo", "use": "enc" },
            { "kty": "what" }
        ]})
        .to_string()
        .as_bytes(),
        &defaults,
    )
    .unwrap();
    assert_eq!(keys.len(), 1, "only the Ed25519 signing key is usable");
    assert!(find(&keys, Some("a"), Algorithm::EdDSA).is_some());
    assert!(find(&keys, None, Algorithm::EdDSA).is_some(), "the only key serves a token without kid");
    assert!(find(&keys, Some("b"), Algorithm::EdDSA).is_none());
    assert!(find(&keys, Some("a"), Algorithm::ES256).is_none());
}

#[test]
fn jwks_caps_hold_at_the_configured_values() {
    let caps = JwtCaps { max_jwks_keys: 2, max_jwks_bytes: 1024, ..JwtCaps::default() };
    let document = |keys: usize| {
        let mut text = json!({ "keys": vec![json!({}); keys] }).to_string();
        text.push_str(&" ".repeat(1024 - text.len()));
        text
    };
    assert_eq!(document(2).len(), 1024);
    assert!(parse_jwks(document(2).as_bytes(), &caps).is_ok(), "2 keys in 1024 bytes: at both caps");
    let err = parse_jwks(document(3).as_bytes(), &caps).err().unwrap();
    assert!(err.contains("has 3 keys; at most 2 are accepted ([http.jwt] max_jwks_keys)"), "{err}");
    let over = document(2) + " ";
    let err = parse_jwks(over.as_bytes(), &caps).err().unwrap();
    assert!(err.contains("1025 bytes, over the 1024-byte cap ([http.jwt] max_jwks_bytes)"), "{err}");
}

#[tokio::test]
async fn a_principal_with_control_or_format_characters_is_refused_naming_the_code_point() {
    let (verifier, sign) = with_key(JwtCaps::default());
    for (sub, expected) in [
        ("alice\nbob", "holds U+000A, a line break, at character 6"),
        ("alice\r", "holds U+000D, a line break, at character 6"),
        ("al\0ice", "holds U+0000, a control character, at character 3"),
        ("alice\u{2028}", "holds U+2028, a line break"),
        ("alice\u{85}", "holds U+0085, a line break"),
        ("\u{202e}ecila", "holds U+202E, a bidirectional control, at character 1"),
        ("alice\u{2066}", "holds U+2066, a bidirectional control"),
        ("ali\u{200b}ce", "holds U+200B, an invisible format character, at character 4"),
        ("alice\u{e0041}", "holds U+E0041, an invisible format character"),
        ("alice\u{feff}", "holds U+FEFF, an invisible format character"),
        ("alice\u{1b}[31m", "holds U+001B, a control character"),
        ("alice\u{7f}", "holds U+007F, a control character"),
    ] {
        let why = refusal(verifier.principal(&sign(&claims(sub, 0))).await);
        assert!(why.starts_with("the token's sub claim ") && why.contains(expected), "{sub:?}: {why}");
        assert!(why.contains("may not hold control characters, format characters"), "{why}");
        assert!(why.chars().all(|c| (' '..='~').contains(&c)), "the refusal repeats no character of {sub:?}: {why:?}");
        // The challenge carries the same description.
        let response = verifier.unauthorized(&Rejection::Invalid(why.clone()));
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        let challenge = response.headers()[header::WWW_AUTHENTICATE].to_str().unwrap().to_owned();
        assert!(challenge.contains(&format!("error_description=\"{why}\"")), "{challenge}");
    }
    // Empty, and one byte over the principal cap of the pipeline.
    let why = refusal(verifier.principal(&sign(&claims("", 0))).await);
    assert!(why.contains("sub claim is 0 bytes: accepted 1 to 256 bytes ([http.jwt] max_principal_bytes)"), "{why}");
    let long = "a".repeat(airlock_core::call::MAX_PRINCIPAL_LEN + 1);
    let why = refusal(verifier.principal(&sign(&claims(&long, 0))).await);
    assert!(why.contains("sub claim is 257 bytes: accepted 1 to 256 bytes"), "{why}");
    // Printable text in any script, with spaces and punctuation, is a
    // principal, up to the cap.
    for sub in
        ["zoë", "用户-42", "alice@example.com", "Alice Smith", &"a".repeat(airlock_core::call::MAX_PRINCIPAL_LEN)]
    {
        let accepted = verifier.principal(&sign(&claims(sub, 0))).await;
        assert_eq!(accepted.map(|(p, _)| p).ok().as_deref(), Some(sub));
    }
}

#[tokio::test]
async fn an_access_token_cannot_act_as_a_static_tokens_principal_unless_the_operator_shares_them() {
    let access = Access::new(&airlock_pipeline::HttpSettings {
        tokens: vec![airlock_pipeline::BearerToken {
            token: "0123456789abcdef-alice".into(),
            principal: "alice".into(),
            file: None,
        }],
        ..airlock_pipeline::HttpSettings::default()
    });
    let (mut verifier, sign) = with_key(JwtCaps::default());
    let bearer = |token: String| {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, HeaderValue::from_str(&format!("Bearer {token}")).unwrap());
        headers
    };
    let alice = bearer(sign(&claims("alice", 0)));
    let bob = bearer(sign(&claims("bob", 0)));
    // By default: the token naming the static token's principal is
    // refused, naming the key that would allow it; another is accepted.
    assert!(!verifier.shares_principals());
    let why = refusal(verifier.authenticate(&alice, &access).await);
    assert_eq!(
        why,
        "the token's sub claim names \"alice\", a principal of a static bearer token ([[http.tokens]]); an access \
         token cannot act as one unless the operator sets [http.jwt] shared_principals = true"
    );
    let accepted = verifier.authenticate(&bob, &access).await;
    assert_eq!(accepted.map(|(p, _)| p).ok().as_deref(), Some("bob"));
    // Without static tokens (the bank demo's JWT users) nothing collides.
    let accepted = verifier.authenticate(&alice, &Access::default()).await;
    assert_eq!(accepted.map(|(p, _)| p).ok().as_deref(), Some("alice"));
    // Also through another principal claim.
    verifier.settings.principal_claim = "email".into();
    let mut by_email = claims("someone", 0);
    by_email["email"] = json!("alice");
    let why = refusal(verifier.authenticate(&bearer(sign(&by_email)), &access).await);
    assert!(why.starts_with("the token's email claim names \"alice\""), "{why}");
    // Shared by the operator: the token acts as alice.
    verifier.settings.principal_claim = "sub".into();
    verifier.settings.shared_principals = true;
    assert!(verifier.shares_principals());
    let accepted = verifier.authenticate(&alice, &access).await;
    assert_eq!(accepted.map(|(p, _)| p).ok().as_deref(), Some("alice"));
}
