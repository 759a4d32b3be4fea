//! The URIs of resource links and embedded resources, and the media types
//! of links and embedded resources: what a tool may put in front of a
//! client, which may show them, open them or fetch them.
//!
//! Trusts nothing: a URI must fit in `max_uri_bytes` and hold no
//! whitespace, control or bidirectional formatting characters (which
//! could make a link read as another). An embedded resource's URI only
//! names the bytes it carries: it needs a scheme the host allows
//! ([`URI_SCHEMES`]: no `data:`, whose bytes would dodge the content caps'
//! media checks, and no `javascript:`). A resource link is what a client
//! opens or fetches, on the client's machine and network, so it must be a
//! web address anyone could reach ([`check_link`], [`LINK_RULE`]): `https:`
//! or `http:`, parsed as a browser parses it (so `http://2130706433/` is
//! the loopback address it means), no user name or password, and a host
//! that is neither `localhost` (nor a name under it) nor a loopback,
//! private, shared (CGNAT), link-local, cloud metadata or otherwise
//! unroutable address, IPv4-mapped IPv6 included (`network/address.rs`
//! classes the addresses, as it does for the tools' own requests). The rule
//! is fixed: no setting widens it.

use crate::network::{Restricted, restricted};
use airlock_core::text::tool_char;
use std::net::IpAddr;
use url::{Host, Url};

/// The schemes an embedded resource's URI may have: web resources, local
/// files, and `airlock:`, the name of a resource the tool made (nothing
/// fetches it).
pub(crate) const URI_SCHEMES: [&str; 4] = ["https", "http", "file", "airlock"];

/// The schemes a resource link may have: the web.
pub(crate) const LINK_SCHEMES: [&str; 2] = ["https", "http"];

/// What a resource link may be, as a refusal says it.
pub(crate) const LINK_RULE: &str = "a resource link must be an https: or http: URL of a public host (a domain name \
                                    other than localhost, or a public IP address), without a user name or password";

/// Longest media type accepted, in bytes (RFC 6838 allows 127 for each of
/// type and subtype).
pub(crate) const MAX_MEDIA_TYPE_BYTES: usize = 255;

/// Why a URI is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Longer than the cap (its length in bytes).
    TooLong(usize),
    /// Not of the form `scheme:rest`.
    NoScheme,
    /// A scheme not accepted (as written, capped).
    Scheme(String),
    /// Whitespace, a control or a bidirectional formatting character.
    Characters,
    /// A link that is not a URL (the parser's reason).
    Malformed(String),
    /// A link with a user name or password before its host.
    Userinfo,
    /// A link to `localhost` or a name under it.
    Localhost,
    /// A link to an address that is not public: the address, its class.
    Address(IpAddr, Restricted),
}

/// Check an embedded resource's `uri` against [`URI_SCHEMES`] and
/// `max_bytes`.
pub(crate) fn check(uri: &str, max_bytes: usize) -> Result<(), Refused> {
    check_form(uri, max_bytes, &URI_SCHEMES)
}

/// Check a resource link's `uri` against `max_bytes` and [`LINK_RULE`];
/// the URL as the parser wrote it back, which is what the client gets: a
/// client whose parser is not a browser's reads it as the host checked it
/// (`http://a.example\@127.0.0.1/` is `http://a.example/@127.0.0.1/`).
pub(crate) fn check_link(uri: &str, max_bytes: usize) -> Result<String, Refused> {
    check_form(uri, max_bytes, &LINK_SCHEMES)?;
    let url = Url::parse(uri).map_err(|err| Refused::Malformed(err.to_string()))?;
    let written = url.as_str();
    if written.len() > max_bytes {
        return Err(Refused::TooLong(written.len()));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(Refused::Userinfo);
    }
    let ip = match url.host() {
        // `http:` and `https:` URLs always have a host once parsed.
        None => return Err(Refused::Malformed("no host".into())),
        Some(Host::Domain(name)) => {
            // The parser lowercased the name and mapped its IDNA forms.
            let name = name.trim_end_matches('.');
            if name == "localhost" || name.ends_with(".localhost") {
                return Err(Refused::Localhost);
            }
            return Ok(written.to_owned());
        }
        Some(Host::Ipv4(ip)) => IpAddr::V4(ip),
        Some(Host::Ipv6(ip)) => IpAddr::V6(ip),
    };
    match restricted(ip) {
        Some(class) => Err(Refused::Address(ip, class)),
        None => Ok(written.to_owned()),
    }
}

/// `uri` is at most `max_bytes`, of one of `schemes`, without characters
/// that could make it read as another.
fn check_form(uri: &str, max_bytes: usize, schemes: &[&str]) -> Result<(), Refused> {
    if uri.len() > max_bytes {
        return Err(Refused::TooLong(uri.len()));
    }
    let Some((scheme, _)) = uri.split_once(':') else { return Err(Refused::NoScheme) };
    let well_formed = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !well_formed {
        return Err(Refused::NoScheme);
    }
    if !schemes.iter().any(|allowed| allowed.eq_ignore_ascii_case(scheme)) {
        return Err(Refused::Scheme(airlock_core::text::cap(scheme, 32).into_owned()));
    }
    if uri.chars().any(|c| c.is_whitespace() || tool_char(c) != Some(c)) {
        return Err(Refused::Characters);
    }
    Ok(())
}

/// Whether `media_type` has the form of a media type (`type/subtype`,
/// optional `; name=value` parameters) in printable ASCII, at most
/// [`MAX_MEDIA_TYPE_BYTES`].
pub(crate) fn is_media_type(media_type: &str) -> bool {
    let token = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b));
    let (essence, parameters) = media_type.split_once(';').unwrap_or((media_type, ""));
    let printable = media_type.bytes().all(|b| (0x20..0x7F).contains(&b));
    media_type.len() <= MAX_MEDIA_TYPE_BYTES
        && printable
        && essence.split_once('/').is_some_and(|(kind, subtype)| token(kind) && token(subtype))
        && !parameters.contains(['\\', '\r', '\n'])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemes_outside_the_list_are_refused() {
        for good in ["https://example.com/a.pdf", "HTTP://x", "file:///workspace/r.pdf", "airlock:dots.svg"] {
            assert_eq!(check(good, 2048), Ok(()), "{good}");
        }
        assert_eq!(check("data:image/png;base64,AAAA", 2048), Err(Refused::Scheme("data".into())));
        assert_eq!(check("javascript:alert(1)", 2048), Err(Refused::Scheme("javascript".into())));
        assert_eq!(check("no scheme here", 2048), Err(Refused::NoScheme));
        assert_eq!(check("/etc/passwd", 2048), Err(Refused::NoScheme));
        assert_eq!(check("1http://x", 2048), Err(Refused::NoScheme));
        assert_eq!(check("https://a b", 2048), Err(Refused::Characters));
        assert_eq!(check("https://evil\u{202e}fdp.exe", 2048), Err(Refused::Characters));
        assert_eq!(check("https://x\n", 2048), Err(Refused::Characters));
        assert_eq!(check(&format!("https://{}", "a".repeat(3000)), 2048), Err(Refused::TooLong(3008)));
    }

    #[test]
    fn links_go_to_public_web_hosts_only() {
        for (good, written) in [
            ("https://example.com/a.pdf", "https://example.com/a.pdf"),
            ("HTTP://Example.COM:8080/x?y#z", "http://example.com:8080/x?y#z"),
            ("https://93.184.215.14", "https://93.184.215.14/"),
            ("https://[2606:2800:21f:cb07:6820:80da:af6b:8b2c]/", "https://[2606:2800:21f:cb07:6820:80da:af6b:8b2c]/"),
            ("https://localhost.example.com/", "https://localhost.example.com/"),
            ("https://b\u{fc}cher.example/", "https://xn--bcher-kva.example/"),
            ("http://a.example\\@127.0.0.1/", "http://a.example/@127.0.0.1/"),
        ] {
            assert_eq!(check_link(good, 2048).as_deref(), Ok(written), "{good}");
        }
        let scheme = |uri| check_link(uri, 2048);
        assert_eq!(scheme("file:///etc/passwd"), Err(Refused::Scheme("file".into())));
        assert_eq!(scheme("airlock:made.txt"), Err(Refused::Scheme("airlock".into())));
        assert_eq!(scheme("data:text/html,x"), Err(Refused::Scheme("data".into())));
        assert_eq!(scheme("javascript:alert(1)"), Err(Refused::Scheme("javascript".into())));
        assert_eq!(scheme("ftp://example.com/"), Err(Refused::Scheme("ftp".into())));
        for userinfo in ["https://user@example.com/", "https://u:p@example.com/", "https://:p@example.com/"] {
            assert_eq!(check_link(userinfo, 2048), Err(Refused::Userinfo), "{userinfo}");
        }
        for local in ["http://localhost/", "http://LOCALHOST.:8080/", "http://a.b.localhost/"] {
            assert_eq!(check_link(local, 2048), Err(Refused::Localhost), "{local}");
        }
        let class = |uri: &str| match check_link(uri, 2048) {
            Err(Refused::Address(_, class)) => Some(class),
            _ => None,
        };
        assert_eq!(class("http://127.0.0.1/"), Some(Restricted::Loopback));
        assert_eq!(class("http://2130706433/"), Some(Restricted::Loopback), "the decimal form a browser reads");
        assert_eq!(class("http://0x7f.1/"), Some(Restricted::Loopback), "the hexadecimal form");
        assert_eq!(class("http://[::1]/"), Some(Restricted::Loopback));
        assert_eq!(class("http://[::ffff:127.0.0.1]/"), Some(Restricted::Loopback), "IPv4-mapped");
        assert_eq!(class("http://169.254.169.254/latest/meta-data/"), Some(Restricted::Metadata));
        assert_eq!(class("http://169.254.1.1/"), Some(Restricted::LinkLocal));
        assert_eq!(class("http://[fe80::1]/"), Some(Restricted::LinkLocal));
        assert_eq!(class("http://10.0.0.1/"), Some(Restricted::Private));
        assert_eq!(class("http://192.168.1.1/"), Some(Restricted::Private));
        assert_eq!(class("http://100.64.0.1/"), Some(Restricted::Private), "shared (CGNAT)");
        assert_eq!(class("http://[fd00::1]/"), Some(Restricted::Private), "unique local");
        assert_eq!(class("http://0.0.0.0/"), Some(Restricted::Unroutable));
        assert_eq!(class("http://[::]/"), Some(Restricted::Unroutable));
        assert!(matches!(check_link("http://[::1/", 2048), Err(Refused::Malformed(_))));
        assert!(matches!(check_link("http://999.1.1.1/", 2048), Err(Refused::Malformed(_))));
        assert_eq!(check_link("https://a b/", 2048), Err(Refused::Characters));
        assert_eq!(check_link("https://example.com/aaaa", 10), Err(Refused::TooLong(24)));
        assert_eq!(check_link("https://example.com", 19), Err(Refused::TooLong(20)), "as written back");
    }

    #[test]
    fn media_types_have_their_form() {
        for good in ["text/plain", "application/vnd.ms-excel", "image/svg+xml", "text/plain; charset=utf-8"] {
            assert!(is_media_type(good), "{good}");
        }
        for bad in ["", "text", "text/", "/plain", "text/plain\n", "téxt/plain", "a/b c", &"a/".repeat(200)] {
            assert!(!is_media_type(bad), "{bad:?}");
        }
    }
}
