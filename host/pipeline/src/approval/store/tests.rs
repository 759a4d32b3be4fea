//! The stores' steps, and the fair share of `max_pending`, which every
//! store runs through the same steps ([`the_fair_share_of_max_pending`]).

use super::*;
pub(super) use crate::approval::tests::{answer, sample as approval};

pub(super) const CAPS: Caps = Caps { per_principal: 2, total: 3 };

/// A store as the fair-share steps use it: alice alone may fill the
/// host (`max_pending` 3), every approval opened at 0 ms.
pub(super) trait Steps {
    fn opens(&self, approval: Approval, key: &str) -> Result<Opened, Full>;
    fn lookup(&self, id: &str) -> Option<Approval>;
    fn approve(&self, id: &str);
}

pub(super) const FILLED: Caps = Caps { per_principal: 3, total: 3 };

impl Steps for Local {
    fn opens(&self, approval: Approval, key: &str) -> Result<Opened, Full> {
        self.open(approval, key, FILLED, 0)
    }
    fn lookup(&self, id: &str) -> Option<Approval> {
        self.get(id, 0)
    }
    fn approve(&self, id: &str) {
        self.answer(id, answer(true), 0).unwrap();
    }
}

/// `max_pending` shared fairly, in any store: alice fills the host;
/// bob's and carol's approvals withdraw her oldest; a principal at its
/// share, or when nobody is above theirs, is refused; an answered
/// approval is never withdrawn.
pub(super) fn the_fair_share_of_max_pending(store: &impl Steps) {
    let open = |id: &str, principal: &str, created_ms: u64| {
        store.opens(Approval { created_ms, ..approval(id, principal) }, &format!("k-{id}"))
    };
    let withdrew = |opened: Result<Opened, Full>| match opened {
        Ok(Opened::New { withdrawn, .. }) => withdrawn.map(|a| a.id),
        other => panic!("not opened: {other:?}"),
    };
    // Opened out of order: a2 is alice's oldest, then a3.
    assert_eq!(withdrew(open("a1", "alice", 30)), None);
    assert_eq!(withdrew(open("a2", "alice", 10)), None);
    assert_eq!(withdrew(open("a3", "alice", 20)), None);
    // bob holds fewer than his share (3 / 2): alice's oldest goes.
    assert_eq!(withdrew(open("b1", "bob", 40)), Some("a2".to_owned()));
    assert_eq!(store.lookup("a2"), None, "its link names nothing");
    assert_eq!(open("b2", "bob", 41), Err(Full::Host { cap: 3, held: 1, share: 1 }), "bob holds his share");
    // alice's withdrawn call made again is a new approval, refused:
    // she holds two, above her share.
    let again = store.opens(approval("a4", "alice"), "k-a2");
    assert_eq!(again, Err(Full::Host { cap: 3, held: 2, share: 1 }));
    // carol (a share of 3 / 3): alice is still above it.
    assert_eq!(withdrew(open("c1", "carol", 50)), Some("a3".to_owned()));
    // One each: nobody is above the share, so dave is refused.
    assert_eq!(open("d1", "dave", 60), Err(Full::Host { cap: 3, held: 0, share: 1 }));
    // An answered approval waiting for its call holds no place, and is
    // never withdrawn.
    store.approve("a1");
    assert_eq!(withdrew(open("d1", "dave", 60)), None);
    assert_eq!(open("e1", "erin", 70), Err(Full::Host { cap: 3, held: 0, share: 1 }));
    assert!(store.lookup("a1").is_some_and(|a| a.answer.is_some()));
}

#[test]
fn max_pending_is_shared_fairly_between_principals() {
    the_fair_share_of_max_pending(&Local::default());
}

#[test]
fn one_live_approval_per_call_and_caps_per_principal_and_host() {
    let store = Local::default();
    assert!(matches!(store.open(approval("a", "alice"), "k1", CAPS, 0), Ok(Opened::New { .. })));
    let again = store.open(approval("b", "alice"), "k1", CAPS, 0);
    assert!(matches!(again, Ok(Opened::Existing(a)) if a.id == "a"), "the same call finds its approval");
    assert!(matches!(store.open(approval("c", "alice"), "k2", CAPS, 0), Ok(Opened::New { .. })));
    assert_eq!(store.open(approval("d", "alice"), "k3", CAPS, 0), Err(Full::Principal(2)));
    assert!(matches!(store.open(approval("e", "bob"), "k4", CAPS, 0), Ok(Opened::New { .. })));
    // The host is full and bob holds his fair share (3 / 2 principals).
    assert_eq!(store.open(approval("f", "bob"), "k5", CAPS, 0), Err(Full::Host { cap: 3, held: 1, share: 1 }));
    // Expired approvals free their places.
    assert!(matches!(store.open(approval("g", "alice"), "k3", CAPS, 1_000), Ok(Opened::New { .. })));
    assert_eq!(store.get("a", 1_000), None);
}

#[test]
fn an_approval_is_answered_once_and_used_once() {
    let store = Local::default();
    let _ = store.open(approval("a", "alice"), "k", CAPS, 0);
    assert_eq!(store.take("a", 1), Err(NotUsed::NotApproved));
    assert!(store.answer("a", answer(true), 1).is_ok());
    assert_eq!(store.answer("a", answer(false), 2), Err(NotAnswered::Answered(answer(true))));
    assert!(store.take("a", 3).is_ok());
    assert_eq!(store.take("a", 3), Err(NotUsed::Used));
    assert_eq!(store.answer("nope", answer(true), 3), Err(NotAnswered::Unknown));
    // A used approval no longer answers for its call: the next call
    // opens another.
    assert!(matches!(store.open(approval("b", "alice"), "k", CAPS, 4), Ok(Opened::New { .. })));
    // Nor is an expired one used.
    let _ = store.answer("b", answer(true), 5);
    assert_eq!(store.take("b", 1_000), Err(NotUsed::Unknown));
}

#[test]
fn a_declined_approval_is_never_used() {
    let store = Local::default();
    let _ = store.open(approval("a", "alice"), "k", CAPS, 0);
    assert!(store.answer("a", answer(false), 1).is_ok());
    assert_eq!(store.take("a", 2), Err(NotUsed::NotApproved));
    assert!(matches!(store.open(approval("b", "alice"), "k", CAPS, 3), Ok(Opened::Existing(a)) if a.id == "a"));
}

#[test]
fn pending_lists_unanswered_approvals_soonest_first() {
    let store = Local::default();
    let _ = store.open(Approval { expires_ms: 900, ..approval("a", "alice") }, "k1", CAPS, 0);
    let _ = store.open(Approval { expires_ms: 800, ..approval("b", "bob") }, "k2", CAPS, 0);
    let _ = store.open(approval("c", "carol"), "k3", CAPS, 0);
    let _ = store.answer("c", answer(true), 1);
    let ids: Vec<String> = store.pending(1, 10).into_iter().map(|a| a.id).collect();
    assert_eq!(ids, ["b", "a"]);
    assert_eq!(store.pending(850, 10).len(), 1);
}
