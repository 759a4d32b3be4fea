//! Admit: before anything else, a call is admitted under its principal's
//! quotas `calls_in_flight` and `calls_per_minute` (`[quotas]`), and counts
//! in flight until its result is returned. A principal at a quota is
//! refused with a message that names it; no other principal is affected.
//! The tracker is `quota.rs`'s, which the session table and the HTTP gate
//! share for the other two quotas.

use super::{Call, Pipeline, Stop};
use airlock_core::timeline::Stage;

impl Pipeline {
    /// Admit `call` under its principal's quotas in the call's state: it
    /// holds its place in the tracker until its result is returned, and
    /// learns the principal's quota of sessions of one tool.
    pub(super) fn admit<'a>(&'a self, call: &mut Call<'a>) -> Result<(), Stop> {
        let quota = call.state.quotas().for_principal(&call.request.principal);
        let admitted = self.quota.admit(&call.request.principal, quota);
        call.timeline.lap(Stage::Admit);
        call.admission = Some(admitted.map_err(Stop::not_reached)?);
        call.sessions_per_tool = quota.sessions_per_tool;
        Ok(())
    }
}
