//! `[approvals] max_pending` shared fairly between principals: a principal
//! holding fewer than its share still gets an approval when the host is
//! full, and the oldest pending approval of the principal holding the most
//! above its share is withdrawn for it (audited, its link no longer
//! answers); a principal at its share is refused. Through the binary, and
//! in a fleet's Redis.

use super::{ALICE, BOB, link_in, records, served, transfer, verifies};
use crate::service::{Mcp, fetch, kind};
use crate::support::{Redis, temp_dir};
use airlock::ApprovalSettings;
use airlock::transport::approval::{Approvals, NewApproval, Opening};
use airlock::{Approver, ErrorKind, Failure};
use std::time::Duration;

#[test]
fn bobs_call_gets_a_link_when_alice_filled_max_pending_and_her_oldest_is_withdrawn() {
    let (_server, addr, _base, audit) = served("max_pending = 3\nmax_pending_per_principal = 3", |c| c);
    let alice = Mcp::connect(&addr, Some(ALICE));
    let links: Vec<String> = (1..=3)
        .map(|n| {
            let asked = alice.call(n, "create_transfer", transfer(20_000 + n), &[]);
            assert_eq!(kind(&asked), "approval_required", "{asked}");
            link_in(&asked)
        })
        .collect();
    let bob = Mcp::connect(&addr, Some(BOB));
    let asked = bob.call(4, "create_transfer", transfer(30_000), &[]);
    assert_eq!(kind(&asked), "approval_required", "bob still gets a link: {asked}");
    // Its page names an open approval (bob has no passkey yet, so it asks
    // for one: not the 404 of a link naming nothing).
    assert_ne!(fetch(&link_in(&asked), "GET", &[], "").status, 404);
    // alice's oldest was withdrawn, and the audit log says so.
    let oldest = id_of(&links[0]);
    let withdrawn: Vec<_> = records(&audit).into_iter().filter(|r| r["event"] == "approval_withdrawn").collect();
    assert_eq!(withdrawn.len(), 1, "{withdrawn:#?}");
    assert_eq!(
        (withdrawn[0]["approval_id"].as_str(), withdrawn[0]["principal"].as_str()),
        (Some(oldest), Some("alice"))
    );
    let reason = withdrawn[0]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("withdrawn to make room for another principal's (fair share of max_pending = 3)"),
        "{reason}"
    );
    let gone = fetch(&links[0], "GET", &[], "");
    assert_eq!(gone.status, 404, "{}", gone.body);
    assert!(gone.body.contains("no approval that is still open"), "{}", gone.body);
    assert_ne!(fetch(&links[1], "GET", &[], "").status, 404, "her others stay");
    // alice's call made again asks for a new approval: she holds two, above
    // her share of 3 / 2, so it is refused, saying why.
    let again = alice.call(5, "create_transfer", transfer(20_001), &[]);
    assert_eq!(kind(&again), "busy", "{again}");
    let text = again["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("`[approvals] max_pending = 3`") && text.contains("already holds 2 of them"), "{text}");
    verifies(&audit);
}

/// The approval id in a page link.
fn id_of(link: &str) -> &str {
    link.split("/approvals/").nth(1).and_then(|rest| rest.split('?').next()).unwrap_or_default()
}

#[tokio::test]
async fn in_a_fleet_max_pending_is_shared_fairly_in_redis_across_replicas() {
    let dir = temp_dir();
    let Some(redis) = Redis::start(dir.path()) else { return };
    let fleet = redis.fleet(dir.path());
    let settings = ApprovalSettings { max_pending: 3, max_pending_per_principal: 3, ..ApprovalSettings::default() };
    // Two replicas: two stores on one Redis.
    let (one, two) = (
        Approvals::new(Some(&fleet), &settings, None).unwrap(),
        Approvals::new(Some(&fleet), &settings, None).unwrap(),
    );
    let mut alices = Vec::new();
    for (n, replica) in [&one, &two, &one].into_iter().enumerate() {
        let Opening { approval, withdrawn } = open_on(replica, &settings, "alice", &format!("a{n}")).await.unwrap();
        assert_eq!(withdrawn, None);
        alices.push(approval.id);
    }
    // bob, below his share: alice's oldest is withdrawn, atomically in
    // Redis, and is gone for every replica.
    let bobs = open_on(&two, &settings, "bob", "b1").await.unwrap();
    assert_eq!(bobs.withdrawn.map(|a| (a.id, a.principal)), Some((alices[0].clone(), "alice".to_owned())));
    assert_eq!(one.get(&alices[0]).await.unwrap(), None);
    assert!(one.get(&alices[1]).await.unwrap().is_some());
    assert_eq!(one.pending().await.unwrap().len(), 3);
    // bob at his share, and alice above hers (her withdrawn call made
    // again), are refused.
    for (principal, call) in [("bob", "b2"), ("alice", "a0")] {
        let refused = open_on(&one, &settings, principal, call).await.unwrap_err();
        assert_eq!(refused.kind, ErrorKind::Busy, "{}", refused.message);
        assert!(refused.message.contains("`[approvals] max_pending = 3`"), "{}", refused.message);
        assert!(refused.message.contains("its fair share"), "{}", refused.message);
    }
    // carol: alice is still above the share of 3 / 3; her next oldest goes.
    let carols = open_on(&one, &settings, "carol", "c1").await.unwrap();
    assert_eq!(carols.withdrawn.map(|a| a.id), Some(alices[1].clone()));
    // One each: nobody above the share, so dave is refused.
    let refused = open_on(&two, &settings, "dave", "d1").await.unwrap_err();
    assert!(refused.message.contains("no principal holds more than its fair share (1"), "{}", refused.message);
}

/// `principal`'s approval of `call` opened on `replica`, a millisecond
/// after the one before at least, so that the oldest is known.
async fn open_on(
    replica: &Approvals,
    settings: &ApprovalSettings,
    principal: &str,
    call: &str,
) -> Result<Opening, Failure> {
    tokio::time::sleep(Duration::from_millis(2)).await;
    let new = NewApproval {
        principal: principal.into(),
        tool: "create_transfer".into(),
        revision: "sha256:r".into(),
        argument_digest: format!("sha256:{call}"),
        call_id: call.into(),
        card: "card".into(),
        reason: "why".into(),
        approver: Approver::Caller,
    };
    replica.open(new, settings).await
}
