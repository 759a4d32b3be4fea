//! The host memory budget: reservations add up to at most the total, a
//! holder's share beyond its first reservation, the poorest waiter first, and
//! the total found from the configuration, the cgroup or the machine.

use super::*;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const M: u64 = MIB;

fn budget(total_mib: u64, share: u8) -> MemoryBudget {
    MemoryBudget::with_total(total_mib * M, share, Source::Configured)
}

fn soon() -> tokio::time::Instant {
    tokio::time::Instant::now() + Duration::from_millis(50)
}

fn p(name: &str) -> Holder {
    Holder::principal(name)
}

#[tokio::test]
async fn reservations_add_up_to_the_budget_and_are_given_back() {
    let budget = budget(100, 100);
    let never = CancellationToken::new();
    let a = budget.reserve(&p("a"), 60 * M, soon(), &never).await.unwrap();
    let b = budget.reserve(&p("b"), 40 * M, soon(), &never).await.unwrap();
    assert_eq!(budget.snapshot().reserved, 100 * M);
    assert_eq!(budget.reserve(&p("c"), M, soon(), &never).await.unwrap_err(), Refusal::Deadline);
    drop(a);
    assert_eq!(budget.snapshot().reserved, 40 * M);
    drop(b);
    assert_eq!(budget.snapshot(), Snapshot { total: 100 * M, reserved: 0, waiting: 0, holders: 0 });
}

#[tokio::test]
async fn more_than_the_budget_is_refused_at_once() {
    let budget = budget(100, 50);
    let refused = budget.reserve(&p("a"), 101 * M, soon(), &CancellationToken::new()).await.unwrap_err();
    assert_eq!(refused, Refusal::TooLarge { bytes: 101 * M, total: 100 * M });
}

#[tokio::test]
async fn one_principal_cannot_hold_more_than_its_share() {
    let budget = budget(100, 50);
    let never = CancellationToken::new();
    // The first call is let in whatever its size; the next only within
    // the share.
    let first = budget.reserve(&p("a"), 30 * M, soon(), &never).await.unwrap();
    let second = budget.reserve(&p("a"), 20 * M, soon(), &never).await.unwrap();
    assert_eq!(budget.reserve(&p("a"), M, soon(), &never).await.unwrap_err(), Refusal::Deadline);
    // Another principal reserves what is left at once.
    let other = budget.reserve(&p("b"), 50 * M, soon(), &never).await.unwrap();
    drop((first, second, other));
}

#[tokio::test]
async fn a_waiting_call_gets_room_as_it_is_given_back() {
    let budget = budget(100, 100);
    let never = CancellationToken::new();
    let held = budget.reserve(&p("a"), 80 * M, soon(), &never).await.unwrap();
    let waiting = {
        let budget = budget.clone();
        tokio::spawn(async move {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
            budget.reserve(&p("b"), 50 * M, deadline, &CancellationToken::new()).await.map(|r| r.bytes())
        })
    };
    while budget.snapshot().waiting == 0 {
        tokio::task::yield_now().await;
    }
    drop(held);
    assert_eq!(waiting.await.unwrap(), Ok(50 * M));
    assert_eq!(budget.snapshot().reserved, 0);
}

#[tokio::test]
async fn a_poorer_principal_is_not_overtaken() {
    let budget = budget(100, 100);
    let never = CancellationToken::new();
    let rich = budget.reserve(&p("rich"), 90 * M, soon(), &never).await.unwrap();
    // The poor principal waits for 50; the rich one's small request
    // (which would fit in the 10 left) must queue behind it.
    let far = tokio::time::Instant::now() + Duration::from_secs(60);
    let poor = {
        let budget = budget.clone();
        tokio::spawn(async move {
            budget.reserve(&p("poor"), 50 * M, far, &CancellationToken::new()).await.map(|r| r.bytes())
        })
    };
    while budget.snapshot().waiting == 0 {
        tokio::task::yield_now().await;
    }
    assert_eq!(budget.reserve(&p("rich"), 5 * M, soon(), &never).await.unwrap_err(), Refusal::Deadline);
    // A third principal holding nothing is as poor: it queues too.
    assert_eq!(budget.reserve(&p("third"), 5 * M, soon(), &never).await.unwrap_err(), Refusal::Deadline);
    drop(rich);
    assert_eq!(poor.await.unwrap(), Ok(50 * M));
}

#[tokio::test]
async fn a_waiting_compilation_blocks_no_call_behind_it() {
    // A principal's idle session holds 30 of 100; a compilation asking for
    // 80 waits. Calls of every principal behind it are granted what fits
    // meanwhile, and the compilation gets its turn once the room is free.
    let budget = budget(100, 100);
    let never = CancellationToken::new();
    let session = budget.reserve(&p("alice"), 30 * M, soon(), &never).await.unwrap();
    let compiling = {
        let budget = budget.clone();
        std::thread::spawn(move || {
            budget.reserve_blocking(&Holder::Compiler, 80 * M, Duration::from_secs(60)).map(|r| r.bytes())
        })
    };
    while budget.snapshot().waiting == 0 {
        tokio::task::yield_now().await;
    }
    for who in ["bob", "carol", "alice"] {
        let call = budget.reserve(&p(who), 10 * M, soon(), &never).await;
        assert_eq!(call.map(|r| r.bytes()), Ok(10 * M), "{who}'s call behind the compilation");
    }
    assert_eq!(budget.snapshot().waiting, 1, "the compilation still waits");
    drop(session);
    assert_eq!(compiling.join().unwrap(), Ok(80 * M));
    assert_eq!(budget.snapshot().reserved, 0);
}

#[tokio::test]
async fn a_cancelled_wait_leaves_the_queue() {
    let budget = budget(10, 100);
    let never = CancellationToken::new();
    let held = budget.reserve(&p("a"), 10 * M, soon(), &never).await.unwrap();
    let cancel = CancellationToken::new();
    cancel.cancel();
    let far = tokio::time::Instant::now() + Duration::from_secs(60);
    assert_eq!(budget.reserve(&p("b"), M, far, &cancel).await.unwrap_err(), Refusal::Cancelled);
    assert_eq!(budget.snapshot().waiting, 0);
    drop(held);
    assert_eq!(budget.snapshot().reserved, 0);
}

#[test]
fn a_blocking_reservation_waits_for_room() {
    let budget = budget(10, 100);
    let held = budget.reserve_blocking(&Holder::Compiler, 10 * M, Duration::from_millis(10)).unwrap();
    assert_eq!(budget.reserve_blocking(&p("a"), M, Duration::from_millis(10)).unwrap_err(), Refusal::Deadline);
    let waiter = {
        let budget = budget.clone();
        std::thread::spawn(move || budget.reserve_blocking(&p("a"), 5 * M, Duration::from_secs(60)).map(|r| r.bytes()))
    };
    while budget.snapshot().waiting == 0 {
        std::thread::yield_now();
    }
    drop(held);
    assert_eq!(waiter.join().unwrap(), Ok(5 * M));
}

#[test]
fn the_queue_is_bounded() {
    let budget = budget(1, 100);
    let held = budget.reserve_blocking(&p("a"), M, Duration::ZERO).unwrap();
    let mut receivers = Vec::new();
    for _ in 0..MAX_WAITERS {
        let placed = budget.place(&p("b"), M, || {
            let (tx, rx) = std::sync::mpsc::sync_channel(1);
            (Grant::Thread(tx), rx)
        });
        receivers.push(placed.unwrap());
    }
    let full = budget.reserve_blocking(&p("c"), M, Duration::ZERO).unwrap_err();
    assert_eq!(full, Refusal::QueueFull);
    drop(held);
}

#[test]
fn the_budget_leaves_headroom() {
    assert_eq!(budget_under(4096 * M), 3072 * M);
    assert_eq!(budget_under(512 * M), 256 * M);
    assert_eq!(budget_under(100 * M), MIN_DERIVED_BUDGET_BYTES);
}

#[test]
fn the_cgroup_limit_is_read_for_v1_and_v2() {
    let files = |path: &std::path::Path| -> Option<String> {
        match path.to_str()? {
            "/sys/fs/cgroup/memory/box/memory.limit_in_bytes" => Some("4294967296\n".into()),
            "/sys/fs/cgroup/user.slice/app/memory.max" => Some("max\n".into()),
            "/sys/fs/cgroup/user.slice/memory.max" => Some("2147483648\n".into()),
            _ => None,
        }
    };
    assert_eq!(parse_cgroup_limit("4:memory:/box\n2:cpu,cpuacct:/box\n", &files), Some(4 << 30));
    // v2: "max" is no limit; the nearest ancestor's limit counts.
    assert_eq!(parse_cgroup_limit("0::/user.slice/app\n", &files), Some(2 << 30));
    assert_eq!(parse_cgroup_limit("0::/elsewhere\n", &files), None);
}
