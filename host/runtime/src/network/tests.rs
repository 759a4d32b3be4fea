use super::address::{Restricted, restricted};
use super::grant::{DEFAULT_MAX_REQUESTS, DEFAULT_MAX_RESPONSE_BYTES};
use super::*;
use std::path::{Path, PathBuf};

fn grant(text: &str) -> Result<NetworkGrant, String> {
    let raw: RawNetwork = toml::from_str(text).map_err(|e| e.to_string())?;
    NetworkGrant::from_raw(raw, &|p: &Path| PathBuf::from("/base").join(p))
}

fn origin(text: &str) -> RequestOrigin {
    let uri: http::Uri = text.parse().unwrap();
    request_origin(&uri).unwrap()
}

#[test]
fn origins_parse_and_match() {
    let p = OriginPattern::parse("https://api.example.com").unwrap();
    assert!(p.matches(&origin("https://api.example.com/v1?q=1")));
    assert!(p.matches(&origin("https://API.example.com.:443/")));
    assert!(!p.matches(&origin("http://api.example.com/")), "other scheme");
    assert!(!p.matches(&origin("https://api.example.com:8443/")), "other port");
    assert!(!p.matches(&origin("https://example.com/")));
    assert!(!p.matches(&origin("https://api.example.com.evil.net/")));

    let wild = OriginPattern::parse("https://*.example.com").unwrap();
    assert!(wild.matches(&origin("https://a.example.com/")));
    assert!(wild.matches(&origin("https://a.b.example.com/")));
    assert!(!wild.matches(&origin("https://example.com/")), "a wildcard does not match its base");
    assert!(!wild.matches(&origin("https://badexample.com/")));

    let ip = OriginPattern::parse("http://127.0.0.1:8080").unwrap();
    assert!(ip.matches(&origin("http://127.0.0.1:8080/x")));
    assert!(!ip.matches(&origin("http://127.0.0.1:8081/x")));
    assert!(!ip.matches(&origin("http://localhost:8080/x")), "a literal address does not match a name");

    let v6 = OriginPattern::parse("http://[::1]:9000").unwrap();
    assert!(v6.matches(&origin("http://[::1]:9000/")));

    let any = OriginPattern::parse("https://*").unwrap();
    assert!(any.matches(&origin("https://anything.example/")));
    assert!(!any.matches(&origin("http://anything.example/")));
}

#[test]
fn bad_origins_say_what_is_accepted() {
    for bad in [
        "api.example.com",
        "ftp://example.com",
        "https://example.com/path",
        "https://user@example.com",
        "https://example.com:0",
        "https://example.com:99999",
        "https://a.*.example.com",
        "https://*.1.2.3.4",
        "https://exa mple.com",
        "https://",
    ] {
        let err = OriginPattern::parse(bad).unwrap_err();
        assert!(err.contains("scheme://host[:port]"), "{bad}: {err}");
    }
    assert_eq!(OriginPattern::parse("https://example.com/").unwrap().port, 443);
}

#[test]
fn restricted_addresses_are_classified() {
    let class = |s: &str| restricted(s.parse().unwrap());
    assert_eq!(class("127.0.0.1"), Some(Restricted::Loopback));
    assert_eq!(class("::1"), Some(Restricted::Loopback));
    assert_eq!(class("::ffff:127.0.0.1"), Some(Restricted::Loopback), "IPv4-mapped");
    assert_eq!(class("10.1.2.3"), Some(Restricted::Private));
    assert_eq!(class("172.16.0.1"), Some(Restricted::Private));
    assert_eq!(class("192.168.1.1"), Some(Restricted::Private));
    assert_eq!(class("100.64.0.1"), Some(Restricted::Private));
    assert_eq!(class("fd12::1"), Some(Restricted::Private));
    assert_eq!(class("169.254.169.254"), Some(Restricted::Metadata));
    assert_eq!(class("fd00:ec2::254"), Some(Restricted::Metadata));
    assert_eq!(class("169.254.1.1"), Some(Restricted::LinkLocal));
    assert_eq!(class("fe80::1"), Some(Restricted::LinkLocal));
    assert_eq!(class("0.0.0.0"), Some(Restricted::Unroutable));
    assert_eq!(class("::"), Some(Restricted::Unroutable));
    assert_eq!(class("224.0.0.1"), Some(Restricted::Unroutable));
    assert_eq!(class("64:ff9b::7f00:1"), Some(Restricted::Loopback), "NAT64 of 127.0.0.1");
    assert_eq!(class("2002:a00:1::"), Some(Restricted::Private), "6to4 of 10.0.0.1");
    assert_eq!(class("93.184.216.34"), None);
    assert_eq!(class("2606:2800:220:1::1"), None);
}

#[test]
fn restricted_addresses_need_an_explicit_grant() {
    let g = grant(
        r#"
        allow = ["http://127.0.0.1:8080", "http://localhost:8080", "https://internal.corp"]
        private_addresses = ["10.0.0.0/8"]
        "#,
    )
    .unwrap();
    let loopback = "127.0.0.1".parse().unwrap();
    assert!(address::check(&g, &g.allow[0].pattern, loopback).is_ok(), "named literally");
    assert_eq!(address::check(&g, &g.allow[1].pattern, loopback), Err(Restricted::Loopback), "only by name");
    assert!(address::check(&g, &g.allow[2].pattern, "10.2.3.4".parse().unwrap()).is_ok(), "listed network");
    assert_eq!(address::check(&g, &g.allow[2].pattern, "192.168.0.1".parse().unwrap()), Err(Restricted::Private));
    assert!(address::check(&g, &g.allow[2].pattern, "93.184.216.34".parse().unwrap()).is_ok(), "public");
}

#[test]
fn grants_are_validated() {
    let g = grant(
        r#"
        allow = ["https://api.example.com", { origin = "https://up.example.com", methods = ["post", "PUT"] }]
        max_requests = 3
        max_response_bytes = 1000
        "#,
    )
    .unwrap();
    assert_eq!(g.max_requests, 3);
    assert_eq!(g.max_response_bytes, 1000);
    assert_eq!(g.allow[1].methods.as_deref(), Some(&[http::Method::POST, http::Method::PUT][..]));
    assert_eq!(g.summary(), "net https://api.example.com, https://up.example.com");
    let defaults = grant(r#"allow = ["https://x.example"]"#).unwrap();
    assert_eq!(defaults.max_requests, DEFAULT_MAX_REQUESTS);
    assert_eq!(defaults.max_response_bytes, DEFAULT_MAX_RESPONSE_BYTES);

    for (text, expect) in [
        (
            r#"allow = ["https://x.example"]
            max_requests = 0"#,
            "accepted 1..=",
        ),
        (r#"allow = [{ origin = "https://x.example", methods = ["BREW"] }]"#, "GET, HEAD"),
        (r#"allow = [{ origin = "https://x.example", methods = [] }]"#, "leave it out"),
        (r#"private_addresses = ["not-a-net"]"#, "10.0.0.0/8"),
        (r#"allowed = ["https://x.example"]"#, "unknown field"),
        (
            r#"allow = ["https://x.example"]
            secret_headers = [{ origin = "https://y.example", header = "authorization", value_env = "PATH" }]"#,
            "not in network.allow",
        ),
        (
            r#"allow = ["https://*.x.example"]
            secret_headers = [{ origin = "https://*.x.example", header = "authorization", value_env = "PATH" }]"#,
            "not a wildcard",
        ),
        (
            r#"allow = ["https://x.example"]
            secret_headers = [{ origin = "https://x.example", header = "authorization" }]"#,
            "exactly one of",
        ),
        (
            r#"allow = ["https://x.example"]
            secret_headers = [{ origin = "https://x.example", header = "authorization", value_env = "AIRLOCK_UNSET_SECRET_VAR" }]"#,
            "is not set",
        ),
        (
            r#"allow = ["https://x.example"]
            secret_headers = [{ origin = "https://x.example", header = "authorization", value_file = "missing" }]"#,
            "/base/missing",
        ),
    ] {
        let err = grant(text).unwrap_err();
        assert!(err.contains(expect), "{text}\n=> {err}");
    }
}

#[test]
fn secrets_are_redacted_in_debug_and_scrubbed_from_text() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("token"), "s3cr3t-\"token\"\n").unwrap();
    let raw: RawNetwork = toml::from_str(
        r#"
        allow = ["https://api.example.com"]
        secret_headers = [{ origin = "https://api.example.com", header = "Authorization", value_file = "token", prefix = "Bearer " }]
        "#,
    )
    .unwrap();
    let g = NetworkGrant::from_raw(raw, &|p: &Path| dir.path().join(p)).unwrap();
    let SecretSource::Fixed(value) = &g.secrets[0].value else { panic!("a fixed secret") };
    assert_eq!(value.header_value(), "Bearer s3cr3t-\"token\"");
    assert!(value.header_value().is_sensitive());
    assert!(!format!("{g:?}").contains("s3cr3t"), "Debug prints the secret");
    assert!(g.is_secret_header(&http::header::AUTHORIZATION));

    let mut text = r#"{"echo":"s3cr3t-\"token\"","raw":"x s3cr3t-"token" y"}"#.to_owned();
    scrub(&g, &mut text);
    assert!(!text.contains("s3cr3t"), "{text}");
    assert_eq!(text.matches("[secret withheld]").count(), 2, "{text}");
}

#[tokio::test]
async fn requests_are_refused_before_any_connection() {
    use http_body_util::BodyExt;
    let request = |method: &str, uri: &str| {
        let body = http_body_util::Empty::<bytes::Bytes>::new().map_err(|_| Error::HttpProtocolError).boxed_unsync();
        Request::builder().method(method).uri(uri).body(body).unwrap()
    };
    let usage = Usage::default();
    let refused = |r: Result<_, String>| match r {
        Ok(_) => panic!("was not refused"),
        Err(message) => message,
    };

    let none = refused(check(None, &usage, request("GET", "http://127.0.0.1:1/")).await);
    assert!(none.contains("http://127.0.0.1:1 was refused") && none.contains("no network grant"), "{none}");

    let g = grant(
        r#"
        allow = [{ origin = "http://127.0.0.1:1", methods = ["GET"] }, "http://localhost:2"]
        max_requests = 2
        "#,
    )
    .unwrap();
    let other = refused(check(Some(&g), &usage, request("GET", "http://127.0.0.1:3/")).await);
    assert!(other.contains("http://127.0.0.1:3 was refused") && other.contains("network.allow"), "{other}");
    let method = refused(check(Some(&g), &usage, request("POST", "http://127.0.0.1:1/")).await);
    assert!(method.contains("may send only GET"), "{method}");
    let tunnel = refused(check(Some(&g), &usage, request("CONNECT", "http://localhost:2/")).await);
    assert!(tunnel.contains("CONNECT to http://localhost:2 was refused"), "{tunnel}");
    let by_name = refused(check(Some(&g), &usage, request("GET", "http://localhost:2/")).await);
    assert!(by_name.contains("loopback") && by_name.contains("private_addresses"), "{by_name}");
    assert!(check(Some(&g), &usage, request("GET", "http://127.0.0.1:1/")).await.is_ok());
    let count = refused(check(Some(&g), &usage, request("GET", "http://127.0.0.1:1/")).await);
    assert!(count.contains("already sent 2 requests"), "{count}");
}

/// A grant whose `authorization` header to `https://api.example.com` is
/// kept per principal in a fresh directory.
fn per_principal_grant() -> (tempfile::TempDir, NetworkGrant) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("creds")).unwrap();
    let raw: RawNetwork = toml::from_str(
        r#"
        allow = ["https://api.example.com"]
        secret_headers = [{ origin = "https://api.example.com", header = "authorization", value_dir = "creds", prefix = "Bearer " }]
        "#,
    )
    .unwrap();
    let g = NetworkGrant::from_raw(raw, &|p: &Path| dir.path().join(p)).unwrap();
    (dir, g)
}

fn resolved(g: &NetworkGrant, principal: &str) -> SecretSource {
    g.for_principal(principal).expect("a per-principal grant resolves").secrets[0].value.clone()
}

#[test]
fn per_principal_credentials_are_read_from_the_principal_file_only() {
    let (dir, g) = per_principal_grant();
    let creds = dir.path().join("creds");
    std::fs::write(creds.join("alice"), "alice-token-1234\n").unwrap();
    std::fs::write(creds.join(".hidden"), "hidden-token-1234").unwrap();
    std::fs::write(dir.path().join("outside"), "outside-token-1234").unwrap();
    std::fs::write(creds.join("short"), "abc").unwrap();
    std::fs::write(creds.join("huge"), "x".repeat(DEFAULT_MAX_SECRET_FILE_BYTES as usize + 1)).unwrap();
    std::fs::create_dir(creds.join("adir")).unwrap();

    let SecretSource::Fixed(alice) = resolved(&g, "alice") else { panic!("alice has a credential") };
    assert_eq!(alice.header_value(), "Bearer alice-token-1234");
    assert!(alice.header_value().is_sensitive());
    let mut text = "echo: alice-token-1234".to_owned();
    scrub(&g.for_principal("alice").unwrap(), &mut text);
    assert_eq!(text, "echo: [secret withheld]", "a resolved value is scrubbed");

    let too_long = "a".repeat(MAX_CREDENTIAL_NAME_BYTES + 1);
    for principal in
        ["bob", "", ".", "..", ".hidden", "../outside", "creds/../alice", "a\0b", "a\\b", "short", "huge", "adir"]
            .into_iter()
            .chain([too_long.as_str()])
    {
        assert_eq!(
            resolved(&g, principal),
            SecretSource::Missing { principal: principal.to_owned() },
            "{principal:?} gets no credential"
        );
    }
    // The unresolved grant holds no value, and a grant with fixed secrets
    // only is not copied per call.
    assert!(!format!("{g:?}").contains("alice-token"));
    let (_dir, fixed) = {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("token"), "fixed-token-1234").unwrap();
        let raw: RawNetwork = toml::from_str(
            r#"
            allow = ["https://api.example.com"]
            secret_headers = [{ origin = "https://api.example.com", header = "x-key", value_file = "token" }]
            "#,
        )
        .unwrap();
        let g = NetworkGrant::from_raw(raw, &|p: &Path| dir.path().join(p)).unwrap();
        (dir, g)
    };
    assert!(fixed.for_principal("alice").is_none());
}

#[tokio::test]
async fn a_credential_file_of_exactly_max_value_bytes_is_used_and_one_byte_more_is_refused() {
    use http_body_util::BodyExt;
    let dir = tempfile::tempdir().unwrap();
    let creds = dir.path().join("creds");
    std::fs::create_dir(&creds).unwrap();
    std::fs::write(creds.join("alice"), "a".repeat(32)).unwrap();
    std::fs::write(creds.join("bob"), "b".repeat(33)).unwrap();
    let raw: RawNetwork = toml::from_str(
        r#"
        allow = ["http://127.0.0.1:1"]
        secret_headers = [{ origin = "http://127.0.0.1:1", header = "x-key", value_dir = "creds", max_value_bytes = 32 }]
        "#,
    )
    .unwrap();
    let g = NetworkGrant::from_raw(raw, &|p: &Path| dir.path().join(p)).unwrap();
    let SecretSource::Fixed(alice) = resolved(&g, "alice") else { panic!("a file at the cap is used") };
    assert_eq!(alice.secret(), "a".repeat(32));
    assert_eq!(resolved(&g, "bob"), SecretSource::Missing { principal: "bob".into() }, "one byte more is not");
    let request = || {
        let body = http_body_util::Empty::<bytes::Bytes>::new().map_err(|_| Error::HttpProtocolError).boxed_unsync();
        Request::builder().method("GET").uri("http://127.0.0.1:1/").body(body).unwrap()
    };
    let usage = Usage::default();
    assert!(check(Some(&g.for_principal("alice").unwrap()), &usage, request()).await.is_ok());
    let Err(refused) = check(Some(&g.for_principal("bob").unwrap()), &usage, request()).await else {
        panic!("bob's request was not refused")
    };
    assert!(refused.contains("x-key") && refused.contains("principal \"bob\" has none"), "{refused}");
}

#[test]
fn max_value_bytes_is_ranged_and_only_for_a_value_dir() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("d")).unwrap();
    let with = |extra: &str| {
        let raw: RawNetwork = toml::from_str(&format!(
            r#"allow = ["https://a.example"]
               secret_headers = [{{ origin = "https://a.example", header = "x-key", {extra} }}]"#
        ))
        .unwrap();
        NetworkGrant::from_raw(raw, &|p: &Path| dir.path().join(p))
    };
    assert!(with("value_dir = \"d\", max_value_bytes = 8").is_ok());
    assert!(with("value_dir = \"d\", max_value_bytes = 1048576").is_ok());
    for value in [7, 1_048_577] {
        let err = with(&format!("value_dir = \"d\", max_value_bytes = {value}")).unwrap_err();
        assert!(err.contains(&format!("max_value_bytes = {value} is out of range: accepted 8..=1048576")), "{err}");
    }
    let err = with("value_env = \"HOME\", max_value_bytes = 64").unwrap_err();
    assert!(err.contains("max_value_bytes caps the credential files of a `value_dir`"), "{err}");
}

#[test]
fn a_value_dir_must_be_a_directory_and_the_only_source() {
    for (text, expect) in [
        (
            r#"allow = ["https://a.example"]
               secret_headers = [{ origin = "https://a.example", header = "x-key", value_dir = "missing" }]"#,
            "is not a directory",
        ),
        (
            r#"allow = ["https://a.example"]
               secret_headers = [{ origin = "https://a.example", header = "x-key", value_dir = "d", value_env = "HOME" }]"#,
            "exactly one of `value_env`, `value_file` or `value_dir`",
        ),
    ] {
        let err = grant(text).unwrap_err();
        assert!(err.contains(expect), "{text}\n=> {err}");
    }
}
