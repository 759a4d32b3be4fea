//! `[http]` and `[http.jwt]`: what is accepted, what is refused and how
//! the error says it, and the generated documents.

use super::*;

/// A file with only `[http]` (and its subtables).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    http: RawHttp,
}

/// `text` read as a config file's `[http]`, relative paths as they are.
fn parse(text: &str) -> Result<HttpSettings, String> {
    let file: File = toml::from_str(text).map_err(|err| err.to_string())?;
    HttpSettings::from_raw(file.http, &|path| path.to_owned())
}

/// `text` is refused with a message containing every one of `expect`.
#[track_caller]
fn check_err(text: &str, expect: &[&str]) {
    let err = parse(text).err().unwrap_or_else(|| panic!("accepted: {text}"));
    for needle in expect {
        assert!(err.contains(needle), "{err:?} should contain {needle:?}");
    }
}

#[test]
fn generated_docs_are_current() {
    crate::generated::all([
        HTTP.ensure_documents("book/src/operator/http.md"),
        JWT.ensure_documents("book/src/operator/jwt.md"),
    ])
    .unwrap();
}

#[test]
fn config_errors_name_the_token_and_what_is_accepted() {
    check_err("[[http.tokens]]\ntoken = \"short\"\nprincipal = \"a\"", &["[[http.tokens]] #1", "at least 16"]);
    check_err("[[http.tokens]]\nprincipal = \"a\"", &["exactly one of"]);
    check_err("[[http.tokens]]\ntoken_file = \"/no/such/token\"\nprincipal = \"a\"", &["token_file", "/no/such/token"]);
    check_err(
        "[[http.tokens]]\ntoken_env = \"AIRLOCK_SURELY_UNSET_VAR\"\nprincipal = \"a\"",
        &["AIRLOCK_SURELY_UNSET_VAR", "not set"],
    );
    check_err("[http]\nbogus = 1", &["bogus", "allowed_origins"]);
    let jwt = "[http.jwt]\nissuer = \"https://idp\"\naudience = \"https://a/mcp\"\n";
    check_err(jwt, &["[http.jwt]", "exactly one of `jwks_file` or `jwks_url`"]);
    check_err(&format!("{jwt}jwks_file = \"k.json\"\nalgorithms = [\"HS256\"]"), &["\"HS256\"", "RS256"]);
    check_err(&format!("{jwt}jwks_url = \"ftp://x\""), &["https://"]);
    check_err(
        &format!("{jwt}jwks_file = \"k.json\"\njwks_min_refresh_seconds = 0"),
        &["[http.jwt] jwks_min_refresh_seconds = 0 is out of range: accepted at least 1 s"],
    );
    check_err(
        &format!("{jwt}jwks_file = \"k.json\"\nattribute_claims = {{ \"has\" = \"x\" }}"),
        &["\"has\"", "letters"],
    );
    check_err(
        &format!("{jwt}jwks_file = \"k.json\"\nattribute_claims = {{ \"1a\" = \"x\" }}"),
        &["not an attribute name"],
    );
    check_err(
        &format!("{jwt}jwks_file = \"k.json\"\nattribute_claims = {{ a = \"\" }}"),
        &["attribute_claims.a", "1 to 64"],
    );
    let many: Vec<String> = (0..=MAX_ATTRIBUTE_CLAIMS).map(|i| format!("a{i} = \"c{i}\"")).collect();
    check_err(
        &format!("{jwt}jwks_file = \"k.json\"\nattribute_claims = {{ {} }}", many.join(", ")),
        &["names 33 claims", "at most 32"],
    );
    // Exactly at the caps: 32 mappings, names of 64 bytes.
    let name = |i: usize| format!("a{i}{}", "x".repeat(MAX_ATTRIBUTE_NAME_BYTES - 1 - i.to_string().len()));
    let at_cap: Vec<String> = (0..MAX_ATTRIBUTE_CLAIMS).map(|i| format!("{} = \"{}\"", name(i), name(i))).collect();
    let config =
        parse(&format!("{jwt}jwks_file = \"k.json\"\nattribute_claims = {{ {} }}", at_cap.join(", "))).unwrap();
    let claims = config.jwt.expect("jwt").attribute_claims;
    assert_eq!(claims.len(), MAX_ATTRIBUTE_CLAIMS);
    assert!(claims.iter().all(|(a, c)| a.len() == MAX_ATTRIBUTE_NAME_BYTES && c.len() == MAX_ATTRIBUTE_NAME_BYTES));
    let long = "a".repeat(MAX_ATTRIBUTE_NAME_BYTES + 1);
    check_err(&format!("{jwt}jwks_file = \"k.json\"\nattribute_claims = {{ {long} = \"c\" }}"), &["at most 64 bytes"]);
    check_err(&format!("{jwt}jwks_file = \"k.json\"\nattribute_claims = {{ a = \"{long}\" }}"), &["1 to 64"]);
}

/// Each `(key, below, top)`: `top` (the top of the range) is accepted,
/// `top + 1` and `below` are refused naming the key and the range.
fn check_ranges(section: &str, prefix: &str, keys: &[(&str, u64, u64)]) {
    for &(key, below, top) in keys {
        let at = parse(&format!("{prefix}{key} = {top}")).unwrap_or_else(|e| panic!("{key} = {top}: {e}"));
        drop(at);
        for value in [below, top + 1] {
            check_err(
                &format!("{prefix}{key} = {value}"),
                &[&format!("{section} {key} = {value} is out of range"), "accepted"],
            );
        }
    }
}

#[test]
fn http_caps_are_ranged() {
    check_ranges(
        "[http]",
        "[http]\n",
        &[
            ("header_timeout_secs", 0, 300),
            ("body_timeout_secs", 0, 600),
            ("max_connections", 0, 65_536),
            ("max_body_bytes", 1023, 64 << 20),
            ("max_sessions", 0, 65_536),
            ("max_pending_confirmations", 0, 65_536),
            ("max_unauthenticated_connections", 0, 65_536),
            ("unauthenticated_timeout_secs", 0, 300),
        ],
    );
    let config = parse("[http]\nmax_unauthenticated_connections = 8\nunauthenticated_timeout_secs = 2").unwrap();
    assert_eq!(config.caps.max_unauthenticated_connections, 8);
    assert_eq!(config.caps.unauthenticated_timeout, Duration::from_secs(2));
    check_err("[http]\nmax_body_bytes = 1023", &["accepted 1024..=67108864"]);
    // Per peer: at most max_connections (a load balancer may take all).
    let config = parse("[http]\nmax_connections = 8\nmax_connections_per_peer = 8").unwrap();
    assert_eq!((config.caps.max_connections, config.caps.max_connections_per_peer), (8, 8));
    check_err(
        "[http]\nmax_connections = 8\nmax_connections_per_peer = 9",
        &["[http] max_connections_per_peer = 9 is out of range: accepted 1..=8 (at most max_connections)"],
    );
    check_err("[http]\nmax_connections_per_peer = 0", &["max_connections_per_peer = 0", "accepted 1..=256"]);
    // Lowering the total alone lowers the per-peer default with it.
    let config = parse("[http]\nmax_connections = 4").unwrap();
    assert_eq!(config.caps.max_connections_per_peer, 4);
    assert_eq!(parse("").unwrap().caps, HttpCaps::default());
    let config = parse("[http]\nheader_timeout_secs = 1\nbody_timeout_secs = 2\nmax_body_bytes = 1024").unwrap();
    assert_eq!(config.caps.header_timeout, Duration::from_secs(1));
    assert_eq!(config.caps.body_timeout, Duration::from_secs(2));
    assert_eq!(config.caps.max_body_bytes, 1024);
}

#[test]
fn jwt_caps_are_ranged() {
    let jwt = "[http.jwt]\nissuer = \"https://idp\"\naudience = \"https://a/mcp\"\njwks_file = \"k.json\"\n";
    check_ranges(
        "[http.jwt]",
        jwt,
        &[
            ("max_token_bytes", 511, 64 << 10),
            ("max_principal_bytes", 0, 256),
            ("max_jwks_bytes", 1023, 16 << 20),
            ("max_jwks_keys", 0, 1024),
            ("jwks_fetch_timeout_secs", 0, 120),
            ("max_claim_list_items", 0, 1024),
        ],
    );
    // No skew at all is a choice; more than ten minutes is not.
    let config = parse(&format!("{jwt}leeway_secs = 0")).unwrap();
    assert_eq!(config.jwt.expect("jwt").caps.leeway, Duration::ZERO);
    check_err(&format!("{jwt}leeway_secs = 601"), &["[http.jwt] leeway_secs = 601 is out of range: accepted 0..=600"]);
    let config = parse(&format!("{jwt}max_token_bytes = 1024\nmax_claim_list_items = 2")).unwrap();
    let caps = config.jwt.expect("jwt").caps;
    assert_eq!((caps.max_token_bytes, caps.max_claim_list_items), (1024, 2));
    assert_eq!(caps.max_jwks_keys, DEFAULT_MAX_JWKS_KEYS);
}

#[test]
fn jwt_defaults() {
    let config =
        parse("[http.jwt]\nissuer = \"https://idp\"\naudience = \"https://a/mcp\"\njwks_url = \"https://idp/jwks\"")
            .unwrap();
    let jwt = config.jwt.expect("jwt");
    assert_eq!(jwt.principal_claim, "sub");
    assert!(!jwt.shared_principals, "JWT principals are apart from static tokens' unless the operator says");
    assert_eq!(jwt.authorization_servers, vec!["https://idp".to_owned()]);
    assert_eq!(jwt.resource, "https://a/mcp");
    assert_eq!(jwt.algorithms, JWT_ALGORITHMS.map(str::to_owned).to_vec());
    assert_eq!(jwt.jwks, JwksSource::Url("https://idp/jwks".into()));
    assert!(jwt.attribute_claims.is_empty());
    assert_eq!(jwt.caps, JwtCaps::default());
    let mapped = parse(
        "[http.jwt]\nissuer = \"https://idp\"\naudience = \"https://a/mcp\"\njwks_url = \"https://idp/jwks\"\n\
         attribute_claims = { tenant = \"org_id\", accounts = \"accounts\" }",
    )
    .unwrap();
    let claims = mapped.jwt.expect("jwt").attribute_claims;
    assert_eq!(claims, [("accounts".to_owned(), "accounts".to_owned()), ("tenant".to_owned(), "org_id".to_owned())]);
}

#[test]
fn jwt_principals_are_shared_with_static_tokens_only_when_asked() {
    let jwt = "[http.jwt]\nissuer = \"https://idp\"\naudience = \"https://a/mcp\"\njwks_url = \"https://idp/jwks\"\n";
    let shared = parse(&format!("{jwt}shared_principals = true")).unwrap();
    assert!(shared.jwt.expect("jwt").shared_principals);
    assert!(!parse(&format!("{jwt}shared_principals = false")).unwrap().jwt.expect("jwt").shared_principals);
    check_err(&format!("{jwt}shared_principals = \"yes\""), &["shared_principals"]);
}

#[test]
fn tokens_map_to_principals() {
    let config = parse(
        "[http]\nallowed_origins = [\"https://app.example.com\"]\n[[http.tokens]]\ntoken = \"0123456789abcdef\"\nprincipal = \"alice\"",
    )
    .unwrap();
    let expected = BearerToken { token: "0123456789abcdef".into(), principal: "alice".into(), file: None };
    assert_eq!(config.tokens, vec![expected]);
    assert_eq!(config.allowed_origins, vec!["https://app.example.com".to_owned()]);
}

#[test]
fn trusted_proxies_are_addresses_or_blocks() {
    assert!(parse("").unwrap().trusted_proxies.is_empty(), "no proxy is trusted by default");
    let config = parse("[http]\ntrusted_proxies = [\"10.0.0.5\", \"10.1.2.3/16\", \"fd00::/8\", \"::1\"]").unwrap();
    let shown: Vec<String> = config.trusted_proxies.iter().map(ToString::to_string).collect();
    assert_eq!(shown, ["10.0.0.5/32", "10.1.0.0/16", "fd00::/8", "::1/128"]);
    check_err(
        "[http]\ntrusted_proxies = [\"proxy.internal\"]",
        &["[http] trusted_proxies", "\"proxy.internal\"", "10.0.0.0/8"],
    );
    check_err("[http]\ntrusted_proxies = [\"10.0.0.0/33\"]", &["[http] trusted_proxies", "not an address or a block"]);
    let many: Vec<String> = (0..=MAX_TRUSTED_PROXIES).map(|i| format!("\"10.0.{}.{}\"", i / 256, i % 256)).collect();
    check_err(&format!("[http]\ntrusted_proxies = [{}]", many.join(", ")), &["257 entries", "at most 256"]);
}

#[test]
fn jwks_urls_are_checked_at_load() {
    let jwt = "[http.jwt]\nissuer = \"https://idp\"\naudience = \"https://a/mcp\"\n";
    for ok in
        ["https://idp.example.com/jwks", "http://127.0.0.1:8080/jwks", "http://localhost/jwks", "http://[::1]:9/k"]
    {
        let config = parse(&format!("{jwt}jwks_url = {ok:?}")).unwrap_or_else(|e| panic!("{ok}: {e}"));
        assert_eq!(config.jwt.expect("jwt").jwks, JwksSource::Url(ok.into()));
    }
    check_err(
        &format!("{jwt}jwks_url = \"http://example.com/jwks\""),
        &["[http.jwt] jwks_url = \"http://example.com/jwks\"", "loopback", "use https://"],
    );
    check_err(&format!("{jwt}jwks_url = \"http://10.0.0.1/jwks\""), &["[http.jwt] jwks_url", "loopback"]);
    check_err(&format!("{jwt}jwks_url = \"https:///jwks\""), &["[http.jwt] jwks_url"]);
    check_err(&format!("{jwt}jwks_url = \"https://user:pw@idp/jwks\""), &["[http.jwt] jwks_url"]);
    check_err(&format!("{jwt}jwks_url = \"jwks.json\""), &["[http.jwt] jwks_url"]);
}
