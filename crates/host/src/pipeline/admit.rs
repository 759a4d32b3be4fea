//! Admit: before anything else, a call is admitted under its principal's
//! quotas `calls_in_flight` and `calls_per_minute` (`[quotas]`), and counts
//! in flight until its result is returned. A principal at a quota is
//! refused with a message that names it; no other principal is affected.
//! The tracker is `quota.rs`'s, which the session table and the HTTP gate
//! share for the other two quotas.

use crate::quota::{Admission, Quota, QuotaTracker};
use crate::state::State;
use airlock_core::outcome::Failure;

/// The quotas of `principal` in `state`, and its admission under them:
/// the call counts in flight until the [`Admission`] is dropped.
pub(super) fn admit<'a>(
    tracker: &'a QuotaTracker,
    state: &State,
    principal: &str,
) -> (Quota, Result<Admission<'a>, Failure>) {
    let quota = state.quotas().for_principal(principal);
    (quota, tracker.admit(principal, quota))
}
