//! The page's request rate: `[approvals] page_requests_per_second` for each
//! principal a request is about (the approval's, the enrolment's), or for
//! its client's address while that is not known yet (a link naming no
//! approval, the sign-in), under `page_requests_per_second_total` for the
//! whole page. A flood of requests from one address (every local process
//! is 127.0.0.1) spends that address's share and the flood's own
//! principal's, never the share of the person at their page; the total
//! still bounds what all of them cost together.
//!
//! At most [`MAX_TRACKED`] buckets are kept: past it, the ones idle for a
//! second go, and a new one is refused while none is.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The most principals and addresses whose rate is tracked at once.
pub(super) const MAX_TRACKED: usize = 4096;
/// The window a rate is counted in.
const WINDOW: Duration = Duration::from_secs(1);

/// Whose share a request spends.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Bucket {
    /// The principal a request is about.
    Principal(String),
    /// The client's address, before a principal is known.
    Address(IpAddr),
}

/// Requests per bucket, and in all, in the current second.
pub(super) struct Limiter {
    rate: u32,
    total: u32,
    seen: Mutex<Seen>,
}

struct Seen {
    buckets: HashMap<Bucket, (Instant, u32)>,
    all: (Instant, u32),
}

impl Limiter {
    /// `rate` requests per second per bucket, `total` in all.
    pub(super) fn new(rate: u32, total: u32) -> Self {
        Limiter { rate, total, seen: Mutex::new(Seen { buckets: HashMap::new(), all: (Instant::now(), 0) }) }
    }

    /// Whether one more request of `bucket` may be answered now; a request
    /// its bucket refuses does not count against the total.
    pub(super) fn allow(&self, bucket: Bucket) -> bool {
        let mut seen = self.seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        if seen.buckets.len() >= MAX_TRACKED {
            seen.buckets.retain(|_, (since, _)| now.duration_since(*since) < WINDOW);
        }
        if seen.buckets.len() >= MAX_TRACKED && !seen.buckets.contains_key(&bucket) {
            return false;
        }
        let entry = seen.buckets.entry(bucket).or_insert((now, 0));
        if now.duration_since(entry.0) >= WINDOW {
            *entry = (now, 0);
        }
        if entry.1 >= self.rate {
            return false;
        }
        entry.1 = entry.1.saturating_add(1);
        if now.duration_since(seen.all.0) >= WINDOW {
            seen.all = (now, 0);
        }
        if seen.all.1 >= self.total {
            return false;
        }
        seen.all.1 = seen.all.1.saturating_add(1);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_spends_its_own_share_not_the_persons() {
        let limiter = Limiter::new(3, 10);
        let local = Bucket::Address("127.0.0.1".parse().unwrap());
        let flood: Vec<bool> = (0..50).map(|_| limiter.allow(local.clone())).collect();
        assert_eq!(flood.iter().filter(|ok| **ok).count(), 3, "{flood:?}");
        // The same address, about alice's approval: her share is whole.
        let alice = Bucket::Principal("alice".into());
        assert!((0..3).all(|_| limiter.allow(alice.clone())));
        assert!(!limiter.allow(alice), "her own rate still holds");
        // The total bounds every bucket together.
        let others: usize = (0..20).filter(|n| limiter.allow(Bucket::Principal(format!("p{n}")))).count();
        assert_eq!(others, 10 - 3 - 3, "the total left");
    }
}
