//! When each stage of one call began and how long it took ([`Timeline`]),
//! by [`Stage`]: what metrics and traces report about a call's way through
//! the pipeline. The pipeline takes a lap at the end of each stage (one
//! clock read, no allocation).

use std::time::{Duration, Instant, SystemTime};

/// The stages of a call, in pipeline order (see `pipeline.rs`); their
/// names are the `stage` label of `airlock_stage_duration_seconds` and the
/// names of the child spans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// The principal's quotas.
    Admit,
    /// The tool by name.
    Resolve,
    /// The arguments parsed.
    Parse,
    /// The arguments checked against the schema.
    Validate,
    /// The policy's decision.
    Authorize,
    /// Waiting for the user to answer a confirmation.
    Confirm,
    /// Waiting for room in the host memory budget, the write-ahead record
    /// of a tool with side effects, and waiting for the scheduler (an
    /// exclusive tool, the cap on calls in flight).
    Schedule,
    /// The guest running (in a fresh instance, or in its session once the
    /// session is free).
    Execute,
    /// The result checked against the output cap and schema.
    Check,
    /// The audit record written.
    Audit,
}

impl Stage {
    /// Every stage, in order.
    pub const ALL: [Stage; 10] = [
        Stage::Admit,
        Stage::Resolve,
        Stage::Parse,
        Stage::Validate,
        Stage::Authorize,
        Stage::Confirm,
        Stage::Schedule,
        Stage::Execute,
        Stage::Check,
        Stage::Audit,
    ];

    /// The label value and span name.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Admit => "admit",
            Stage::Resolve => "resolve",
            Stage::Parse => "parse",
            Stage::Validate => "validate",
            Stage::Authorize => "authorize",
            Stage::Confirm => "confirm",
            Stage::Schedule => "schedule",
            Stage::Execute => "execute",
            Stage::Check => "check",
            Stage::Audit => "audit",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// One stage as it ran: its start as an offset from the call's receipt,
/// and its length.
#[derive(Debug, Clone, Copy, Default)]
pub struct Lap {
    /// When it began, from the call's receipt.
    pub start: Duration,
    /// How long it took.
    pub length: Duration,
}

/// When each stage of one call began and how long it took. Fixed size, on
/// the call's own stack: taking a lap reads the clock once and allocates
/// nothing.
#[derive(Debug, Clone)]
pub struct Timeline {
    started: Instant,
    /// The wall clock at receipt, for span timestamps (read only when
    /// spans are sent).
    pub wall: Option<SystemTime>,
    last: Instant,
    laps: [Option<Lap>; Stage::ALL.len()],
}

impl Timeline {
    /// A call received now; `wall` when its spans will be sent.
    pub fn start(wall: bool) -> Self {
        let now = Instant::now();
        Self { started: now, wall: wall.then(SystemTime::now), last: now, laps: [None; Stage::ALL.len()] }
    }

    /// When the call was received.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// `stage` ended now; it began where the previous one ended.
    pub fn lap(&mut self, stage: Stage) {
        let now = Instant::now();
        self.record(stage, self.last, now);
        self.last = now;
    }

    /// Restart the clock of the next stage now (time between stages that
    /// belongs to none, e.g. before the confirmation prompt is shown).
    pub fn mark(&mut self) {
        self.last = Instant::now();
    }

    fn record(&mut self, stage: Stage, from: Instant, to: Instant) {
        if let Some(slot) = self.laps.get_mut(stage.index()) {
            *slot = Some(Lap {
                start: from.saturating_duration_since(self.started),
                length: to.saturating_duration_since(from),
            });
        }
    }

    /// The stages that ran, in order.
    pub fn laps(&self) -> impl Iterator<Item = (Stage, Lap)> + '_ {
        Stage::ALL.iter().zip(self.laps.iter()).filter_map(|(stage, lap)| lap.map(|lap| (*stage, lap)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn laps_follow_each_other() {
        let mut timeline = Timeline::start(false);
        timeline.lap(Stage::Admit);
        timeline.lap(Stage::Resolve);
        std::thread::sleep(Duration::from_millis(2));
        timeline.lap(Stage::Schedule);
        timeline.mark();
        timeline.lap(Stage::Execute);
        let laps: Vec<_> = timeline.laps().collect();
        let names: Vec<_> = laps.iter().map(|(stage, _)| stage.as_str()).collect();
        assert_eq!(names, ["admit", "resolve", "schedule", "execute"]);
        let (_, resolve) = laps[1];
        let (_, schedule) = laps[2];
        let (_, execute) = laps[3];
        assert_eq!(resolve.start + resolve.length, schedule.start, "a lap begins where the one before ended");
        assert!(schedule.length >= Duration::from_millis(2));
        assert!(execute.start >= schedule.start + schedule.length, "a mark restarts the clock");
        assert!(timeline.wall.is_none(), "the wall clock is read only for spans");
    }
}
