//! How far a call has come, as a front end forwards it: a [`Progress`]
//! report, and the [`ProgressSink`] a front end hands over with a call
//! when its client asked to be told (an MCP `progressToken`).
//!
//! Reports come from the guest (`airlock:tool/progress`, contract 0.3.0).
//! The sandbox checks each one (a finite, growing `progress`, a finite
//! `total`, a cleaned and capped message) and the host sends at most one
//! per `progress_interval_ms` of the tool, the last one before the result;
//! a sink only ever sees reports that passed those checks.

use std::fmt;
use std::future::Future;
use std::pin::Pin;

/// One progress report.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// How far the call has come; finite, and greater than in the report
    /// before.
    pub progress: f64,
    /// What `progress` reaches at the end, when known; finite.
    pub total: Option<f64>,
    /// One line for a person, cleaned and cut at the tool's
    /// `max_progress_message_bytes`.
    pub message: Option<String>,
}

/// Where a call's progress goes. A front end implements it for a client
/// that asked to be told; a call without one reports nothing, and the
/// guest's reports cost the host one check each.
pub trait ProgressSink: fmt::Debug + Send + Sync {
    /// Send `report`. The host awaits it before sending the next, and the
    /// last before the call's result: reports arrive in order, before the
    /// result.
    fn send(&self, report: Progress) -> Pin<Box<dyn Future<Output = ()> + Send + '_>>;
}
