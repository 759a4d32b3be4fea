//! The fair share of a capped pool per principal, one rule for every pool
//! that has one (a tool's live sessions, the host's pending approvals).
//!
//! When the pool is full, a principal holding fewer than its **share**,
//! `cap / P` (rounded down, at least 1, where P counts the principals
//! holding a place, the one asking included), still gets a place: one place
//! of the principal holding the most above the share is given up for it,
//! its oldest (least recently used) among those that may be given up. A
//! principal asking at or above its share is refused, as is one for whom
//! no place above a share may be given up. Ties go to the smallest
//! principal name, then the smallest key, so that every store picks the
//! same place.

use std::collections::HashMap;

/// The share of a pool of `cap` places each of `principals` may hold when
/// it is full: `cap / principals`, rounded down, at least 1.
pub(crate) fn share(cap: usize, principals: usize) -> usize {
    (cap / principals.max(1)).max(1)
}

/// One place in a full pool, as the rule sees it.
pub(crate) struct Holding<'a, K, A> {
    /// Who holds it.
    pub(crate) principal: &'a str,
    /// What names it.
    pub(crate) key: K,
    /// Whether it may be given up (a session not in a call).
    pub(crate) evictable: bool,
    /// When it was last used or opened: the smallest goes first.
    pub(crate) since: A,
}

/// Which place of `holdings` (every place of the full pool of `cap`) to give
/// up so that `principal` can take one; `Err` carries the share when none
/// is: `principal` already holds its share, or no place above a share may
/// be given up.
pub(crate) fn victim<'h, K: Ord, A: Ord + Copy>(
    holdings: &'h [Holding<'_, K, A>],
    principal: &str,
    cap: usize,
) -> Result<&'h K, usize> {
    let mut per_principal: HashMap<&str, usize> = HashMap::new();
    for holding in holdings {
        *per_principal.entry(holding.principal).or_default() += 1;
    }
    let held = per_principal.get(principal).copied().unwrap_or_default();
    let share = share(cap, per_principal.len() + usize::from(held == 0));
    if held >= share {
        return Err(share);
    }
    holdings
        .iter()
        .filter(|holding| holding.evictable && holding.principal != principal)
        .filter_map(|holding| {
            let count = per_principal.get(holding.principal).copied().unwrap_or_default();
            (count > share).then_some((count, holding))
        })
        .max_by(|(count_a, a), (count_b, b)| {
            count_a
                .cmp(count_b)
                .then_with(|| b.since.cmp(&a.since))
                .then_with(|| b.principal.cmp(a.principal))
                .then_with(|| b.key.cmp(&a.key))
        })
        .map(|(_, holding)| &holding.key)
        .ok_or(share)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_share_divides_the_cap_between_principals() {
        assert_eq!(share(8, 2), 4);
        assert_eq!(share(8, 3), 2);
        assert_eq!(share(1, 2), 1, "at least one");
        assert_eq!(share(8, 0), 8);
    }

    fn at(principal: &'static str, key: u32, since: u64) -> Holding<'static, u32, u64> {
        Holding { principal, key, evictable: key != 1, since }
    }

    #[test]
    fn the_largest_holder_gives_up_its_oldest_place_that_may_be_given_up() {
        // alice holds 5 (key 1, her oldest, may not be given up), bob 3.
        let holdings = [at("alice", 1, 0), at("alice", 2, 1), at("alice", 3, 2), at("alice", 4, 3)]
            .into_iter()
            .chain([at("alice", 5, 4), at("bob", 6, 0), at("bob", 7, 1), at("bob", 8, 2)])
            .collect::<Vec<_>>();
        // With carol, three principals share 8: 2 each; alice holds the most.
        assert_eq!(victim(&holdings, "carol", 8), Ok(&2));
        // bob, holding 3 of a share of 4, takes from alice.
        assert_eq!(victim(&holdings, "bob", 8), Ok(&2));
        // alice holds more than her share: nothing is given up.
        assert_eq!(victim(&holdings, "alice", 8), Err(4));
        // Nobody above a share of 1 (8 principals hold one place each).
        let spread: Vec<_> = ["a", "b", "c", "d", "e", "f", "g", "h"].iter().map(|p| at(p, 9, 0)).collect();
        assert_eq!(victim(&spread, "i", 8), Err(1));
        // Equal counts and ages: the smaller principal, then the smaller key.
        let even = [at("bob", 4, 0), at("bob", 3, 0), at("alice", 6, 0), at("alice", 5, 0)];
        assert_eq!(victim(&even, "carol", 3), Ok(&5));
    }
}
