//! The caller's trace context: a W3C `traceparent`, from the HTTP
//! request's header or `_meta.traceparent` of a 2026-07-28 request, read by
//! the OpenTelemetry SDK's W3C propagator. The host's span exporter makes the call's
//! span a child of it.

use opentelemetry::propagation::{Extractor, TextMapPropagator as _};
use opentelemetry::trace::{SpanContext, TraceContextExt as _};
use opentelemetry_sdk::propagation::TraceContextPropagator;

/// Longest `traceparent` read (a version-00 one is 55 bytes; later versions
/// may append fields). Not a setting: it bounds a header, not a workload.
pub const MAX_TRACEPARENT_LEN: usize = 256;
/// The caller's span, from a W3C `traceparent`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceParent(SpanContext);

impl TraceParent {
    /// Parse a `traceparent` value; `None` when it is too long, malformed
    /// or names the all-zero trace or span.
    pub fn parse(value: &str) -> Option<Self> {
        if value.len() > MAX_TRACEPARENT_LEN || !well_formed(value) {
            return None;
        }
        let context = TraceContextPropagator::new().extract(&OneHeader(value));
        let span = context.span().span_context().clone();
        span.is_valid().then_some(TraceParent(span))
    }

    /// The span context, for the span exporter.
    pub fn span_context(&self) -> &SpanContext {
        &self.0
    }

    /// The trace id, hex.
    pub fn trace_id(&self) -> String {
        self.0.trace_id().to_string()
    }
}

/// `VERSION-TRACEID-PARENTID-FLAGS` with the lengths W3C Trace Context
/// gives them (2, 32, 16 and 2 hex digits); the SDK's propagator also
/// accepts shorter ids.
fn well_formed(value: &str) -> bool {
    let lengths = [2, 32, 16, 2];
    let mut parts = value.trim().split('-');
    let fixed = lengths
        .iter()
        .all(|len| parts.next().is_some_and(|part| part.len() == *len && part.bytes().all(|b| b.is_ascii_hexdigit())));
    // Version 00 has exactly these four fields; later versions may add more.
    fixed && (!value.trim().starts_with("00-") || parts.next().is_none())
}

/// A carrier with just the `traceparent`.
struct OneHeader<'a>(&'a str);

impl Extractor for OneHeader<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        key.eq_ignore_ascii_case("traceparent").then_some(self.0)
    }

    fn keys(&self) -> Vec<&str> {
        vec!["traceparent"]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparent_is_read_as_w3c_says() {
        let parent = TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
        assert_eq!(parent.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert!(parent.0.is_sampled() && parent.0.is_remote());
        for bad in [
            "",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "garbage",
        ] {
            assert_eq!(TraceParent::parse(bad), None, "{bad:?}");
        }
        let long = format!("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-{}", "a".repeat(300));
        assert_eq!(TraceParent::parse(&long), None);
    }

    #[test]
    fn a_traceparent_is_read_up_to_exactly_its_cap() {
        // A later version may append fields: one of exactly the cap is read,
        // one byte more is ignored.
        let base = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-";
        let at_cap = format!("{base}{}", "a".repeat(MAX_TRACEPARENT_LEN - base.len()));
        assert_eq!(at_cap.len(), MAX_TRACEPARENT_LEN);
        assert_eq!(
            TraceParent::parse(&at_cap).map(|p| p.trace_id()).as_deref(),
            Some("4bf92f3577b34da6a3ce929d0e0e4736")
        );
        let over = format!("{at_cap}a");
        assert_eq!(TraceParent::parse(&over), None);
    }
}
