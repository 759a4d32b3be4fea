//! OpenTelemetry traces: one span per call with a child per pipeline
//! stage, sent over OTLP/HTTP (protobuf) to the collector `[traces]
//! endpoint` names; off when it names none.
//!
//! # What a span carries, and what it never does
//!
//! A call's span (`tools/call TOOL`, kind server) has the tool (resolved
//! names only; an unknown tool is `_unknown`), the outcome (`ok` or the
//! error kind), the decision, the fuel used, the duration, and the
//! principal as `[traces] principal` says: hashed (SHA-256, the first 16
//! bytes in hex; the default), omitted, or plain. A failed call's status
//! is an error described by its kind alone. Arguments, results, failure
//! messages and captured output are never put in a span: they are the
//! model's and the tool's data.
//!
//! Spans are built after the call, from its [`Timeline`] (each stage's
//! start and length) with explicit timestamps: the call path only reads
//! the clock, and a host without `[traces]` builds nothing.
//!
//! # The caller's trace context
//!
//! A W3C `traceparent` from the client (the HTTP request's header, or
//! `_meta.traceparent` of a 2026-07-28 request) makes the call's span a
//! child of the client's, in the client's trace; its sampled flag is
//! honoured (a parent that is not sampled gets no spans). It is parsed by
//! the SDK's W3C propagator, at most
//! [`MAX_TRACEPARENT_LEN`](airlock_core::trace_parent::MAX_TRACEPARENT_LEN) bytes; one
//! that does not parse is ignored (the call starts a trace of its own).
//!
//! # Export
//!
//! The SDK's batch processor queues finished spans and exports them from
//! its own thread through `client` (plain HTTP/1.1 over hyper on the host's
//! tokio runtime), each export abandoned after `[traces]
//! export_timeout_secs` (`DEFAULT_OTLP_EXPORT_TIMEOUT`). At most `[traces]
//! max_queued_spans` (`DEFAULT_MAX_QUEUED_SPANS`) are held, queued or being
//! exported (`queue`); past it, spans are dropped and counted
//! (`airlock_spans_dropped_total`), never calls delayed.
//! [`Traces::shutdown`] flushes what is queued.

mod client;
mod queue;

use crate::metrics::UNKNOWN_TOOL;
use airlock_core::call::ToolResult;
use airlock_core::timeline::Timeline;
use airlock_core::trace_parent::TraceParent;
use airlock_settings::service::{PrincipalInSpans, TraceSettings};
use opentelemetry::trace::{
    Span as _, SpanBuilder, SpanKind, Status, TraceContextExt as _, Tracer as _, TracerProvider as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracer, SdkTracerProvider};
use prometheus_client::metrics::counter::Counter;
use sha2::{Digest as _, Sha256};
use std::time::Duration;

/// How often queued spans are exported.
const EXPORT_INTERVAL: Duration = Duration::from_secs(1);
/// How long shutdown waits for the last export.
const SHUTDOWN_FLUSH: Duration = Duration::from_secs(5);

/// The span exporter of one host.
pub(crate) struct Traces {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
    principal: PrincipalInSpans,
}

impl Traces {
    /// Start exporting to `settings.endpoint`, from the tokio runtime this
    /// is called on; spans dropped at the queue are counted in `dropped`.
    ///
    /// # Errors
    ///
    /// Not on a tokio runtime, or the exporter cannot be built.
    pub(crate) fn start(settings: &TraceSettings, dropped: Counter) -> anyhow::Result<Self> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|err| anyhow::anyhow!("spans are exported from the tokio runtime: {err}"))?;
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_endpoint(settings.endpoint.clone())
            .with_timeout(settings.export_timeout)
            .with_http_client(client::Client::new(runtime, settings.export_timeout))
            .build()
            .map_err(|err| anyhow::anyhow!("cannot build the OTLP exporter for {}: {err}", settings.endpoint))?;
        // The batch processor's own queue is as long as the bound, which
        // `queue::Bounded` keeps before a span reaches it.
        let held = queue::Held::new(settings.max_queued_spans);
        let batch = BatchConfigBuilder::default()
            .with_max_queue_size(settings.max_queued_spans)
            .with_scheduled_delay(EXPORT_INTERVAL)
            .build();
        let exporter = queue::Releasing::new(exporter, held.clone());
        let processor =
            queue::Bounded::new(BatchSpanProcessor::builder(exporter).with_batch_config(batch).build(), held, dropped);
        let resource = opentelemetry_sdk::Resource::builder_empty()
            .with_service_name(settings.service_name.clone())
            .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
            .build();
        let provider = SdkTracerProvider::builder().with_span_processor(processor).with_resource(resource).build();
        let tracer = provider.tracer("airlock");
        Ok(Self { provider, tracer, principal: settings.principal })
    }

    /// The spans of a finished call: one for the call, a child per stage.
    pub(crate) fn call_finished(
        &self,
        timeline: &Timeline,
        result: &ToolResult,
        tool: Option<&str>,
        principal: &str,
        parent: Option<&TraceParent>,
    ) {
        let Some(received) = timeline.wall else { return };
        let parent = match parent {
            Some(parent) => Context::new().with_remote_span_context(parent.span_context().clone()),
            None => Context::new(),
        };
        let tool = tool.unwrap_or(UNKNOWN_TOOL);
        let mut attributes = vec![
            KeyValue::new("airlock.tool", tool.to_owned()),
            KeyValue::new("airlock.outcome", result.outcome_name()),
            KeyValue::new("airlock.decision", result.decision().as_str()),
            KeyValue::new("airlock.duration_us", i64::try_from(result.duration.as_micros()).unwrap_or(i64::MAX)),
        ];
        if let Some(fuel) = result.fuel_used {
            attributes.push(KeyValue::new("airlock.fuel_used", i64::try_from(fuel).unwrap_or(i64::MAX)));
        }
        match self.principal {
            PrincipalInSpans::Omit => {}
            PrincipalInSpans::Plain => attributes.push(KeyValue::new("airlock.principal", principal.to_owned())),
            PrincipalInSpans::Hash => {
                attributes.push(KeyValue::new("airlock.principal_hash", principal_hash(principal)))
            }
        }
        let call = SpanBuilder::from_name(format!("tools/call {tool}"))
            .with_kind(SpanKind::Server)
            .with_start_time(received)
            .with_attributes(attributes);
        let mut span = self.tracer.build_with_context(call, &parent);
        if let Some(kind) = result.kind() {
            span.set_status(Status::error(kind.as_str()));
        }
        let context = parent.with_span(span);
        for (stage, lap) in timeline.laps() {
            let start = received + lap.start;
            let child = SpanBuilder::from_name(stage.as_str()).with_kind(SpanKind::Internal).with_start_time(start);
            let mut child = self.tracer.build_with_context(child, &context);
            child.end_with_timestamp(start + lap.length);
        }
        context.span().end_with_timestamp(received + result.duration);
    }

    /// Export what is queued and stop (waits at most [`SHUTDOWN_FLUSH`]).
    pub(crate) async fn shutdown(&self) {
        let provider = self.provider.clone();
        let flushed = tokio::task::spawn_blocking(move || provider.shutdown_with_timeout(SHUTDOWN_FLUSH)).await;
        match flushed {
            Ok(Ok(())) => {}
            Ok(Err(err)) => tracing::warn!("spans not exported at shutdown: {err}"),
            Err(err) => tracing::warn!("spans not exported at shutdown: {err}"),
        }
    }
}

/// How a span names a principal by default: SHA-256, first 16 bytes, hex.
fn principal_hash(principal: &str) -> String {
    let digest = Sha256::digest(principal.as_bytes());
    hex::encode(digest.get(..16).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn past_max_queued_spans_a_span_is_dropped_and_counted_without_waiting() {
        use crate::metrics::{Metrics, Snapshot};
        use airlock_core::outcome::{Authority, CallOutcome, Success};
        // A collector that takes connections (the kernel's backlog does)
        // and never answers: with a 300 s export timeout, no export ends
        // while the spans are finished, so the first two stay held.
        let collector = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}/v1/traces", collector.local_addr().unwrap());
        let text = format!("[traces]\nendpoint = {endpoint:?}\nmax_queued_spans = 2\nexport_timeout_secs = 300\n");
        let settings = crate::config::testing::parse(&text).unwrap().traces.unwrap();
        let metrics = Metrics::new(0);
        let traces = Traces::start(&settings, metrics.spans_dropped()).unwrap();
        let result = ToolResult::new(
            "c",
            "echo",
            CallOutcome::Ran { authority: Authority::Allowed, result: Ok(Success::new(serde_json::json!("hi"))) },
        );
        // Each call (no stages) is one span; the third finds the queue full.
        for _ in 0..3 {
            traces.call_finished(&Timeline::start(true), &result, Some("echo"), "alice", None);
        }
        let text = metrics.render(Snapshot::default());
        assert!(text.contains("airlock_spans_dropped_total 1\n"), "{text}");
        // Closing the collector ends the export under way.
        drop(collector);
        traces.shutdown().await;
    }

    #[test]
    fn principals_are_hashed_to_a_fixed_length() {
        assert_eq!(principal_hash("alice").len(), 32);
        assert_ne!(principal_hash("alice"), principal_hash("bob"));
    }
}
