//! `airlock:tool/progress` (contract 0.3.0): how far the call being served
//! has come, forwarded to the front end's [`ProgressSink`] at most once per
//! `progress_interval_ms`.
//!
//! Trusts nothing the guest reports. A report is dropped when its
//! `progress` is not finite or does not grow, or its `total` is not
//! finite; its message is cleaned to one line and cut at
//! `max_progress_message_bytes`. What is left only replaces the one report
//! waiting to be sent (a `watch` channel), so a guest reporting a million
//! times costs the host one check and one replacement per report, and the
//! client at most one notification per interval: [`forward`] sends the
//! newest report, waits out the interval, and sends the newest again,
//! until the call ends, when the last report not yet sent goes at once,
//! before the result. A call whose client gave no sink (no
//! `progressToken`) has no channel, and its reports are dropped unread.

use airlock_core::content::clean_line;
use airlock_core::progress::{Progress, ProgressSink};
use airlock_settings::limits::Limits;
use std::time::Duration;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use wasmtime::component::{HasSelf, Linker};

use crate::bindings::v0_3::airlock::tool::progress as wit;

/// Where the reports of the call being served go.
pub(crate) struct ProgressSlot {
    /// The newest report not yet sent, while a call whose client asked for
    /// progress runs.
    sender: Option<watch::Sender<Option<Progress>>>,
    /// The last `progress` accepted (−∞ before the first).
    last: f64,
    /// `max_progress_message_bytes` of the call.
    message_bytes: usize,
}

impl ProgressSlot {
    /// A slot that sends nothing.
    pub(crate) fn new(limits: &Limits) -> Self {
        Self { sender: None, last: f64::NEG_INFINITY, message_bytes: limits.max_progress_message_bytes }
    }

    /// Start a call under `limits` whose reports go to `sender` (none:
    /// dropped).
    pub(crate) fn renew(&mut self, limits: &Limits, sender: Option<watch::Sender<Option<Progress>>>) {
        *self = Self { sender, ..Self::new(limits) };
    }

    /// The call is over: the channel closes, and [`forward`] sends what is
    /// left and returns.
    pub(crate) fn end(&mut self) {
        self.sender = None;
    }

    /// Link `airlock:tool/progress` (0.3.0), answering from the slot
    /// `project` finds in the store's data.
    pub(crate) fn add_to_linker<T: Send + 'static>(
        linker: &mut Linker<T>,
        project: fn(&mut T) -> &mut ProgressSlot,
    ) -> wasmtime::Result<()> {
        wit::add_to_linker::<T, HasSelf<ProgressSlot>>(linker, project)
    }
}

impl wit::Host for ProgressSlot {
    fn report(&mut self, progress: f64, total: Option<f64>, message: Option<String>) {
        let Some(sender) = &self.sender else { return };
        if !progress.is_finite() || progress <= self.last || total.is_some_and(|total| !total.is_finite()) {
            return;
        }
        self.last = progress;
        let message =
            message.map(|message| airlock_core::text::cap(&clean_line(&message), self.message_bytes).into_owned());
        sender.send_replace(Some(Progress { progress, total, message }));
    }
}

/// A channel for one call's reports: the slot's end and [`forward`]'s.
pub(crate) fn channel() -> (watch::Sender<Option<Progress>>, watch::Receiver<Option<Progress>>) {
    watch::channel(None)
}

/// Send the reports arriving on `reports` to `sink`: the newest at once,
/// then at most one per `interval`, until the channel closes (the call is
/// over); the newest report not yet sent then goes at once. `ended` fires
/// when the call is over, so that the last report does not wait out an
/// interval.
pub(crate) async fn forward(
    mut reports: watch::Receiver<Option<Progress>>,
    sink: &dyn ProgressSink,
    interval: Duration,
    ended: CancellationToken,
) {
    // `changed` delivers a report not yet seen even after the channel
    // closed, and fails only when there is none left.
    while reports.changed().await.is_ok() {
        let report = reports.borrow_and_update().clone();
        if let Some(report) = report {
            sink.send(report).await;
        }
        tokio::select! {
            () = tokio::time::sleep(interval) => {}
            () = ended.cancelled() => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[derive(Debug, Default)]
    struct Kept(Mutex<Vec<Progress>>);

    impl ProgressSink for Kept {
        fn send(&self, report: Progress) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send + '_>> {
            self.0.lock().unwrap().push(report);
            Box::pin(async {})
        }
    }

    #[test]
    fn reports_that_do_not_grow_or_are_not_finite_are_dropped() {
        let limits = Limits { max_progress_message_bytes: 8, ..Limits::default() };
        let (sender, receiver) = channel();
        let mut slot = ProgressSlot::new(&limits);
        slot.renew(&limits, Some(sender));
        let report = |slot: &mut ProgressSlot, progress, total| wit::Host::report(slot, progress, total, None);
        report(&mut slot, 1.0, Some(10.0));
        report(&mut slot, 1.0, None);
        report(&mut slot, 0.5, None);
        report(&mut slot, f64::NAN, None);
        report(&mut slot, f64::INFINITY, None);
        report(&mut slot, 2.0, Some(f64::NAN));
        assert_eq!(receiver.borrow().as_ref().map(|p| (p.progress, p.total)), Some((1.0, Some(10.0))));
        wit::Host::report(&mut slot, 3.0, None, Some("line\none\u{202e} and more".into()));
        assert_eq!(receiver.borrow().as_ref().and_then(|p| p.message.clone()).as_deref(), Some("line …"));
        slot.end();
        let mut receiver = receiver;
        assert!(futures::executor::block_on(receiver.changed()).is_ok(), "the last report is still there to be read");
        assert!(futures::executor::block_on(receiver.changed()).is_err(), "and then the channel is closed");
    }

    #[test]
    fn without_a_sink_reports_are_dropped_unread() {
        let limits = Limits::default();
        let mut slot = ProgressSlot::new(&limits);
        wit::Host::report(&mut slot, 1.0, None, Some("x".into()));
        assert!(slot.sender.is_none());
    }

    #[tokio::test]
    async fn reports_between_two_sends_are_coalesced_and_the_last_is_not_held() {
        let limits = Limits::default();
        let (sender, receiver) = channel();
        let mut slot = ProgressSlot::new(&limits);
        slot.renew(&limits, Some(sender));
        let kept = Kept::default();
        let ended = CancellationToken::new();
        // Far longer than the test: a last report held for the interval
        // would show.
        let interval = Duration::from_secs(30);
        let guest = async {
            for i in 1..=100_000u32 {
                wit::Host::report(&mut slot, f64::from(i), Some(100_000.0), None);
                if i == 50_000 {
                    // The forwarder runs here (both futures share a task).
                    tokio::task::yield_now().await;
                }
            }
            slot.end();
            ended.cancel();
        };
        let started = std::time::Instant::now();
        tokio::join!(guest, forward(receiver, &kept, interval, ended.clone()));
        let sent: Vec<f64> = kept.0.lock().unwrap().iter().map(|p| p.progress).collect();
        assert_eq!(sent, [50_000.0, 100_000.0], "the newest at once, then the last when the call ended");
        assert!(started.elapsed() < interval / 2, "the last report did not wait out the interval");
    }
}
