use super::*;
use crate::approval::store::tests::{CAPS, FILLED, Steps, answer, approval, the_fair_share_of_max_pending};

fn store() -> (tempfile::TempDir, FileStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::new(Some(dir.path().join("state")));
    (dir, store)
}

fn open(store: &FileStore, approval: Approval, key: &str, now: u64) -> Result<Opened, Full> {
    store.open(&approval, key, CAPS, now).unwrap()
}

#[test]
fn one_live_approval_per_call_and_caps_per_principal_and_host() {
    let (_dir, store) = store();
    assert!(matches!(open(&store, approval("a", "alice"), "k1", 0), Ok(Opened::New { .. })));
    let again = open(&store, approval("b", "alice"), "k1", 0);
    assert!(matches!(again, Ok(Opened::Existing(a)) if a.id == "a"), "the same call finds its approval");
    assert!(matches!(open(&store, approval("c", "alice"), "k2", 0), Ok(Opened::New { .. })));
    assert_eq!(open(&store, approval("d", "alice"), "k3", 0), Err(Full::Principal(2)));
    assert!(matches!(open(&store, approval("e", "bob"), "k4", 0), Ok(Opened::New { .. })));
    assert_eq!(open(&store, approval("f", "bob"), "k5", 0), Err(Full::Host { cap: 3, held: 1, share: 1 }));
    // Expired approvals free their places.
    assert!(matches!(open(&store, approval("g", "alice"), "k3", 1_000), Ok(Opened::New { .. })));
    assert_eq!(store.get("a", 1_000).unwrap(), None);
}

#[test]
fn an_approval_is_answered_once_and_used_once() {
    let (_dir, store) = store();
    let _ = open(&store, approval("a", "alice"), "k", 0);
    assert_eq!(store.take("a", 1).unwrap(), Err(NotUsed::NotApproved));
    assert!(store.answer("a", &answer(true), 1).unwrap().is_ok());
    assert_eq!(store.answer("a", &answer(false), 2).unwrap(), Err(NotAnswered::Answered(answer(true))));
    assert!(store.take("a", 3).unwrap().is_ok());
    assert_eq!(store.take("a", 3).unwrap(), Err(NotUsed::Used));
    assert_eq!(store.answer("nope", &answer(true), 3).unwrap(), Err(NotAnswered::Unknown));
    // A used approval no longer answers for its call: the next call opens
    // another.
    assert!(matches!(open(&store, approval("b", "alice"), "k", 4), Ok(Opened::New { .. })));
    // Nor is an expired one used.
    let _ = store.answer("b", &answer(true), 5);
    assert_eq!(store.take("b", 1_000).unwrap(), Err(NotUsed::Unknown));
}

#[test]
fn a_declined_approval_is_never_used() {
    let (_dir, store) = store();
    let _ = open(&store, approval("a", "alice"), "k", 0);
    assert!(store.answer("a", &answer(false), 1).unwrap().is_ok());
    assert_eq!(store.take("a", 2).unwrap(), Err(NotUsed::NotApproved));
    assert!(matches!(open(&store, approval("b", "alice"), "k", 3), Ok(Opened::Existing(a)) if a.id == "a"));
}

#[test]
fn pending_lists_unanswered_approvals_soonest_first() {
    let (_dir, store) = store();
    let _ = open(&store, Approval { expires_ms: 900, ..approval("a", "alice") }, "k1", 0);
    let _ = open(&store, Approval { expires_ms: 800, ..approval("b", "bob") }, "k2", 0);
    let _ = open(&store, approval("c", "carol"), "k3", 0);
    let _ = store.answer("c", &answer(true), 1);
    let ids: Vec<String> = store.pending(1, 10).unwrap().into_iter().map(|a| a.id).collect();
    assert_eq!(ids, ["b", "a"]);
    assert_eq!(store.pending(850, 10).unwrap().len(), 1);
}

#[test]
fn another_process_sees_every_step_and_uses_an_approval_once() {
    let (dir, opener) = store();
    // A second store on the same directory is what another process has.
    let other = FileStore::new(Some(dir.path().join("state")));
    let _ = open(&opener, approval("a", "alice"), "k", 0);
    assert_eq!(other.pending(1, 10).unwrap().len(), 1);
    assert!(other.answer("a", &answer(true), 1).unwrap().is_ok());
    assert_eq!(opener.get("a", 2).unwrap().and_then(|a| a.answer), Some(answer(true)));
    assert!(opener.take("a", 3).unwrap().is_ok());
    assert_eq!(other.take("a", 3).unwrap(), Err(NotUsed::Used));
}

#[test]
fn pending_is_counted_under_the_lock() {
    let (_dir, store) = store();
    assert_eq!(store.with_pending(0, |n| n).unwrap(), 0);
    let _ = open(&store, approval("a", "alice"), "k", 0);
    assert_eq!(store.with_pending(1, |n| n).unwrap(), 1);
    let _ = store.answer("a", &answer(false), 1);
    assert_eq!(store.with_pending(2, |n| n).unwrap(), 0, "an answered approval waits no more");
}

#[test]
fn a_damaged_file_is_set_aside_and_a_new_one_started() {
    let (dir, store) = store();
    let _ = open(&store, approval("a", "alice"), "k", 0);
    let path = dir.path().join("state").join(APPROVALS_FILE);
    std::fs::write(&path, b"{\"approvals\": {\"a\": 7}}").unwrap();
    assert_eq!(store.get("a", 1).unwrap(), None, "nothing is approved by the loss");
    let kept: Vec<_> = std::fs::read_dir(dir.path().join("state"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("approvals.json.damaged-"))
        .collect();
    assert_eq!(kept.len(), 1, "the damaged file is kept beside");
    assert!(matches!(open(&store, approval("b", "alice"), "k", 1), Ok(Opened::New { .. })));
}

#[test]
fn the_link_key_is_made_once_and_shared() {
    let (dir, store) = store();
    let a = store.link_key().unwrap();
    let b = FileStore::new(Some(dir.path().join("state"))).link_key().unwrap();
    let approval = approval("0123456789abcdef0123456789abcdef", "alice");
    assert!(b.link_checks(&approval, &a.link_mac(&approval)), "another process checks the link");
    std::fs::write(dir.path().join("state").join(LINK_KEY_FILE), b"garbage").unwrap();
    let c = store.link_key().unwrap();
    assert!(!c.link_checks(&approval, &a.link_mac(&approval)), "a damaged key is replaced");
}

#[test]
fn without_a_directory_approvals_say_what_to_set() {
    let store = FileStore::new(None);
    let err = store.pending(0, 1).unwrap_err().to_string();
    assert!(err.contains("set [approvals] state_dir"), "{err}");
}

impl Steps for FileStore {
    fn opens(&self, approval: Approval, key: &str) -> Result<Opened, Full> {
        self.open(&approval, key, FILLED, 0).unwrap()
    }
    fn lookup(&self, id: &str) -> Option<Approval> {
        self.get(id, 0).unwrap()
    }
    fn approve(&self, id: &str) {
        self.answer(id, &answer(true), 0).unwrap().unwrap();
    }
}

#[test]
fn max_pending_is_shared_fairly_between_principals_and_processes() {
    let (dir, store) = store();
    the_fair_share_of_max_pending(&store);
    // Another process finds what was withdrawn gone.
    let other = FileStore::new(Some(dir.path().join("state")));
    assert_eq!(other.get("a2", 0).unwrap(), None);
    assert_eq!(other.pending(0, 10).unwrap().len(), 3);
}
