//! The URIs of resource links and embedded resources, and the media types
//! of links and embedded resources: what a tool may put in front of a
//! client, which may show them, open them or fetch them.
//!
//! Trusts nothing: a URI must have a scheme the host allows
//! ([`URI_SCHEMES`]: no `data:`, whose bytes would dodge the content caps'
//! media checks, and no `javascript:`), fit in `max_uri_bytes`, and hold
//! no whitespace, control or bidirectional formatting characters (which
//! could make a link read as another).

use airlock_core::text::tool_char;

/// The schemes a URI may have: web resources, local files, and `airlock:`,
/// the name of a resource the tool made (nothing fetches it).
pub(crate) const URI_SCHEMES: [&str; 4] = ["https", "http", "file", "airlock"];

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
    /// A scheme not in [`URI_SCHEMES`] (as written, capped).
    Scheme(String),
    /// Whitespace, a control or a bidirectional formatting character.
    Characters,
}

/// Check `uri` against the scheme list and `max_bytes`.
pub(crate) fn check(uri: &str, max_bytes: usize) -> Result<(), Refused> {
    if uri.len() > max_bytes {
        return Err(Refused::TooLong(uri.len()));
    }
    let Some((scheme, _)) = uri.split_once(':') else { return Err(Refused::NoScheme) };
    let well_formed = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !well_formed {
        return Err(Refused::NoScheme);
    }
    if !URI_SCHEMES.iter().any(|allowed| allowed.eq_ignore_ascii_case(scheme)) {
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
    fn media_types_have_their_form() {
        for good in ["text/plain", "application/vnd.ms-excel", "image/svg+xml", "text/plain; charset=utf-8"] {
            assert!(is_media_type(good), "{good}");
        }
        for bad in ["", "text", "text/", "/plain", "text/plain\n", "téxt/plain", "a/b c", &"a/".repeat(200)] {
            assert!(!is_media_type(bad), "{bad:?}");
        }
    }
}
