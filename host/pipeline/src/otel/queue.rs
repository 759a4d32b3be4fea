//! The bound on finished spans held for export (`[traces]
//! max_queued_spans`): a span processor in front of the SDK's batch
//! processor counts each span it hands on, and the exporter behind the
//! batch processor releases them when their export has ended (sent, failed
//! or timed out). A span that finds the bound reached is dropped at once
//! and counted in `airlock_spans_dropped_total`; the call that finished it
//! never waits.
//!
//! Trusts nothing about the collector: a collector that is slow or never
//! answers holds at most the bound of spans (those waiting in the batch
//! processor's queue and those in the export under way), never more.

use opentelemetry::Context;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{Span, SpanData, SpanExporter, SpanProcessor};
use prometheus_client::metrics::counter::Counter;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// How many spans are held for export, and the most that may be.
#[derive(Debug)]
pub(super) struct Held {
    count: AtomicUsize,
    max: usize,
}

impl Held {
    /// Room for `max` spans.
    pub(super) fn new(max: usize) -> Arc<Self> {
        Arc::new(Self { count: AtomicUsize::new(0), max })
    }

    /// Take room for one more span; `false` when the bound is reached.
    fn take(&self) -> bool {
        self.count.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < self.max).then_some(n + 1)).is_ok()
    }

    /// Give back the room of `spans` spans.
    fn release(&self, spans: usize) {
        // The closure always returns `Some`, so the update cannot fail.
        let _ = self.count.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| Some(n.saturating_sub(spans)));
    }
}

/// A span processor that hands `inner` only the spans there is room for
/// and counts the others in `dropped`.
#[derive(Debug)]
pub(super) struct Bounded<P> {
    inner: P,
    held: Arc<Held>,
    dropped: Counter,
}

impl<P> Bounded<P> {
    pub(super) fn new(inner: P, held: Arc<Held>, dropped: Counter) -> Self {
        Self { inner, held, dropped }
    }
}

impl<P: SpanProcessor> SpanProcessor for Bounded<P> {
    fn on_start(&self, span: &mut Span, cx: &Context) {
        self.inner.on_start(span, cx);
    }

    fn on_end(&self, span: SpanData) {
        if self.held.take() {
            self.inner.on_end(span);
        } else {
            self.dropped.inc();
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// An exporter that releases the room of the spans it exported once the
/// export has ended, however it ended.
#[derive(Debug)]
pub(super) struct Releasing<E> {
    inner: E,
    held: Arc<Held>,
}

impl<E> Releasing<E> {
    pub(super) fn new(inner: E, held: Arc<Held>) -> Self {
        Self { inner, held }
    }
}

/// Releases the room of a batch when dropped: at the end of its export, or
/// if the export is abandoned half-way.
struct Release<'a> {
    held: &'a Held,
    spans: usize,
}

impl Drop for Release<'_> {
    fn drop(&mut self) {
        self.held.release(self.spans);
    }
}

impl<E: SpanExporter> SpanExporter for Releasing<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let _release = Release { held: &self.held, spans: batch.len() };
        self.inner.export(batch).await
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_is_taken_up_to_the_bound_and_given_back() {
        let held = Held::new(2);
        assert!(held.take() && held.take());
        assert!(!held.take(), "the third span finds no room");
        held.release(1);
        assert!(held.take());
        held.release(5);
        assert_eq!(held.count.load(Ordering::Acquire), 0, "never below zero");
    }
}
