//! A crash at any instant: two `airlock serve --stdio` processes on one
//! audited config (the first writes the configured file, the second its
//! sibling `<file>.1`) run concurrent `write_file` calls and are killed
//! with SIGKILL at random instants, round after round, with
//! `durability = "fsync"` and with `"flush"`. After every round of kills,
//! whatever instants they fell on:
//!
//! - `airlock audit verify` never says `TAMPERED`: it passes, or says
//!   `NOT RECOVERED` for a chain the crash left (exit 3);
//! - every file a call wrote has its call's `started` record in a chain;
//! - two servers start again on the logs (recovering them) and serve a
//!   call each, and once they exited `verify` passes with nothing left to
//!   recover, each chain that was not recovered now holding one more
//!   `recovered` record.
//!
//! And a log torn or tampered with by hand is refused by `verify`, saying
//! which, until a start recovers the torn one.
//!
//! The instants are random (the seed is printed; `AIRLOCK_CRASH_SEED`
//! replays its choices), the assertions hold for every instant, and no
//! wait depends on machine speed: a kill "after start" waits for the
//! server's `initialize` answer, however long it takes.

use crate::service::{Served, binary};
use crate::support::{cache_dir, temp_dir, tool};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Rounds per durability; each kills both servers.
const ROUNDS: usize = 28;
/// Calls each server keeps in flight.
const IN_FLIGHT: usize = 6;
/// Longest wait before a kill, from the server's start or its answer to
/// `initialize`.
const MAX_KILL_DELAY_MS: u64 = 250;
/// Liveness bound for anything a server must eventually do.
const DEADLINE: Duration = Duration::from_secs(120);

/// xorshift64*: the kill instants, replayable from the printed seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn config(audit: &Path, work: &Path, policy: &Path, durability: &str) -> String {
    format!(
        "[engine]\ncache_dir = {:?}\n[tools.write_file]\ncomponent = {:?}\nside_effect = true\nconcurrency_safe = true\ntimeout_ms = 120000\n\
         dirs = [{{ host = {:?}, guest = \"/work\", access = \"rw\" }}]\n\
         [audit]\nfile = {:?}\ndurability = {durability:?}\nrecord_arguments = true\n[policy]\npolicies = {:?}\n",
        cache_dir().display().to_string(),
        tool("write_file").display().to_string(),
        work.display().to_string(),
        audit.display().to_string(),
        policy.display().to_string(),
    )
}

/// A line to a server that may be dead already: false when it is.
fn send(stdin: &mut ChildStdin, message: &Value) -> bool {
    stdin.write_all(format!("{message}\n").as_bytes()).and_then(|()| stdin.flush()).is_ok()
}

/// The server's JSON-RPC messages; a partial last line (the kill cut it)
/// is dropped.
fn replies(server: &mut Served) -> mpsc::Receiver<Value> {
    let stdout = server.child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            let Ok(message) = serde_json::from_str(&line) else { continue };
            if tx.send(message).is_err() {
                return;
            }
        }
    });
    rx
}

/// Drives one server until it dies: `initialize` (announced on `ready`),
/// then `write_file` calls, [`IN_FLIGHT`] at a time, each writing a file
/// of its own named `tag-N.txt`. Returns whether it answered `initialize`.
fn drive(mut stdin: ChildStdin, replies: mpsc::Receiver<Value>, tag: String, ready: mpsc::Sender<()>) -> bool {
    if !send(&mut stdin, &initialize()) {
        return false;
    }
    match replies.recv_timeout(DEADLINE) {
        Ok(reply) if reply["id"] == 0 => {}
        Ok(other) => panic!("{tag}: expected the answer to initialize, got {other}"),
        // Killed before it answered.
        Err(mpsc::RecvTimeoutError::Disconnected) => return false,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{tag}: no answer to initialize in {DEADLINE:?}"),
    }
    let _ = ready.send(());
    if !send(&mut stdin, &json!({"jsonrpc": "2.0", "method": "notifications/initialized"})) {
        return true;
    }
    let call = |n: u64| {
        json!({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params":
            {"name": "write_file", "arguments": {"path": format!("/work/{tag}-{n}.txt"), "content": "x"}}})
    };
    let mut next = 1;
    while next <= IN_FLIGHT as u64 {
        if !send(&mut stdin, &call(next)) {
            return true;
        }
        next += 1;
    }
    // One more call per answer, until the kill closes stdout.
    while let Ok(reply) = replies.recv_timeout(DEADLINE) {
        if reply.get("id").is_some() {
            if !send(&mut stdin, &call(next)) {
                return true;
            }
            next += 1;
        }
    }
    true
}

/// The `initialize` request.
fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params":
        {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "crash", "version": "0"}}})
}

/// A server that is not killed: started, answering `initialize` (its log
/// is open), then stopped cleanly.
struct Clean {
    server: Served,
    lines: mpsc::Receiver<Value>,
    stdin: ChildStdin,
    tag: String,
}

impl Clean {
    fn start(config: &str, tag: String) -> Clean {
        let mut server = Served::start(config, &["serve", "--stdio"]);
        let lines = replies(&mut server);
        let stdin = server.child.stdin.take().expect("stdin");
        let mut clean = Clean { server, lines, stdin, tag };
        assert!(send(&mut clean.stdin, &initialize()), "{}: {}", clean.tag, clean.log());
        let answer = clean.lines.recv_timeout(DEADLINE).map(|r| r["id"].clone()).ok();
        assert_eq!(answer, Some(json!(0)), "{}: no answer to initialize: {}", clean.tag, clean.log());
        assert!(send(&mut clean.stdin, &json!({"jsonrpc": "2.0", "method": "notifications/initialized"})));
        clean
    }

    fn log(&self) -> String {
        self.server.stderr.lock().unwrap().clone()
    }

    /// Writes `calls` files named `tag-N.txt` (every call must succeed),
    /// then closes stdin: the server exits 0. Its stderr.
    fn finish(mut self, calls: u64) -> String {
        let tag = self.tag.clone();
        for n in 1..=calls {
            let call = json!({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params":
                {"name": "write_file", "arguments": {"path": format!("/work/{tag}-{n}.txt"), "content": "x"}}});
            assert!(send(&mut self.stdin, &call), "{tag}: {}", self.log());
        }
        for _ in 1..=calls {
            let Ok(reply) = self.lines.recv_timeout(DEADLINE) else {
                panic!("{tag}: a call was not answered: {}", self.log())
            };
            assert_eq!(crate::service::kind(&reply["result"]), "ok", "{tag}: {reply}");
        }
        let Clean { mut server, stdin, .. } = self;
        drop(stdin);
        assert_eq!(server.exit_code(), Some(0), "{tag}: {}", server.stderr.lock().unwrap());
        server.stderr.lock().unwrap().clone()
    }
}

/// Starts a server on `config` and drives it; kills it `delay_ms` after
/// its start, or, when `after_initialize`, after its answer to
/// `initialize`. Panics when it exits by itself first (it refused to
/// start).
fn start_and_kill(config: &str, tag: String, delay_ms: u64, after_initialize: bool) {
    let mut server = Served::start(config, &["serve", "--stdio"]);
    let lines = replies(&mut server);
    let stdin = server.child.stdin.take().expect("stdin");
    let (ready, initialized) = mpsc::channel();
    let driver = {
        let tag = tag.clone();
        std::thread::spawn(move || drive(stdin, lines, tag, ready))
    };
    if after_initialize && initialized.recv_timeout(DEADLINE).is_err() {
        panic!("{tag}: the server did not start: {}", server.stderr.lock().unwrap());
    }
    std::thread::sleep(Duration::from_millis(delay_ms));
    if let Some(status) = server.child.try_wait().expect("wait") {
        panic!("{tag}: the server exited by itself ({status}): {}", server.stderr.lock().unwrap());
    }
    server.child.kill().expect("SIGKILL");
    server.child.wait().expect("reaped");
    driver.join().unwrap_or_else(|_| panic!("{tag}: the driver failed: {}", server.stderr.lock().unwrap()));
}

/// `airlock audit verify FILE`: its exit code and output.
fn verify_cli(audit: &Path) -> (Option<i32>, String) {
    let verify = Command::new(binary()).args(["audit", "verify"]).arg(audit).output().expect("verify runs");
    let text = format!("{}{}", String::from_utf8_lossy(&verify.stdout), String::from_utf8_lossy(&verify.stderr));
    (verify.status.code(), text)
}

/// `verify` after a crash: it passes, or says what the crash left; never
/// `TAMPERED`. Whether a chain was left to recover.
fn verify_after_crash(audit: &Path, when: &str) -> bool {
    match verify_cli(audit) {
        (Some(0), text) if !text.contains("NOT RECOVERED") => false,
        (Some(3), text) if text.contains("NOT RECOVERED") && !text.contains("TAMPERED") => true,
        (code, text) => panic!("{when}: verify exited {code:?}: {text}"),
    }
}

/// `verify` of logs no crash left: it passes, with nothing to recover.
fn verify_passes(audit: &Path, when: &str) -> String {
    let (code, text) = verify_cli(audit);
    assert!(code == Some(0) && !text.contains("NOT RECOVERED") && !text.contains("TAMPERED"), "{when}: {text}");
    text
}

/// The paths of the `started` records of `write_file` calls in the
/// complete lines of every chain.
fn started_paths(audit: &Path) -> BTreeSet<String> {
    let chains = [audit.to_path_buf()].into_iter().chain(airlock::audit_siblings(audit));
    let mut paths = BTreeSet::new();
    for chain in chains {
        let text = std::fs::read(&chain).unwrap_or_default();
        let complete = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        for line in text[..complete].split(|&b| b == b'\n').filter(|line| !line.is_empty()) {
            let record: Value = serde_json::from_slice(line).expect("a complete line is a record");
            if record["outcome"] == "started" && record["tool"] == "write_file" {
                paths.insert(record["arguments"]["path"].as_str().expect("recorded arguments").to_owned());
            }
        }
    }
    paths
}

/// Every file in `work` has its call's `started` record.
fn check_side_effects(audit: &Path, work: &Path, when: &str) -> usize {
    let started = started_paths(audit);
    let mut files = 0;
    for entry in std::fs::read_dir(work).expect("work dir") {
        let name = entry.expect("entry").file_name().to_string_lossy().into_owned();
        assert!(started.contains(&format!("/work/{name}")), "{when}: {name} was written without a started record");
        files += 1;
    }
    files
}

/// What verify says about each chain: (its file, what a crash left for
/// the next start to recover, how many times it was recovered).
fn chain_states(audit: &Path) -> Vec<(PathBuf, Option<airlock::AuditRecovery>, u64)> {
    let report = airlock::audit_verify_all(audit).unwrap_or_else(|e| panic!("TAMPERED: {e}"));
    report.chains.into_iter().map(|(path, chain)| (path, chain.recoverable, chain.recoveries)).collect()
}

/// What one durability's rounds measured.
#[derive(Default)]
struct Counts {
    kills: usize,
    /// Rounds after which a chain was left to recover.
    rounds_to_recover: usize,
    /// Chains left with records past the head file, with a partial last
    /// line, with a torn copy of the head.
    adopted: usize,
    torn: usize,
    torn_head: usize,
    /// `recovered` records at the end.
    recoveries: u64,
}

/// Both servers started again on the logs (the first takes the configured
/// file, the second, started once the first has it open, the sibling),
/// each serving one call and exiting cleanly.
fn restart(config: &str, tag: &str) {
    let first = Clean::start(config, format!("{tag}-restart-0"));
    let second = Clean::start(config, format!("{tag}-restart-1"));
    first.finish(1);
    second.finish(1);
}

fn crash_rounds(durability: &str, rng: &mut Rng) -> Counts {
    let dir = temp_dir();
    let audit = dir.path().join("audit.jsonl");
    let work = dir.path().join("work");
    std::fs::create_dir(&work).expect("work dir");
    let policy = dir.path().join("policy.cedar");
    std::fs::write(&policy, "permit (principal, action, resource);\n").expect("policy");
    let config = config(&audit, &work, &policy, durability);

    // The component compiled (or found in the cache) before any kill.
    Clean::start(&config, format!("{durability}-first")).finish(1);
    let mut counts = Counts::default();
    for round in 0..ROUNDS {
        // The first server usually takes the configured file (it is started
        // first), the second the sibling; a server killed during its start
        // may leave either to the other.
        let plans: Vec<(u64, bool)> = (0..2).map(|_| (rng.below(MAX_KILL_DELAY_MS), rng.below(5) > 0)).collect();
        std::thread::scope(|scope| {
            for (server, &(delay, after_initialize)) in plans.iter().enumerate() {
                let tag = format!("{durability}-{round}-{server}");
                let config = &config;
                scope.spawn(move || start_and_kill(config, tag, delay, after_initialize));
                // Staggered, so that the first usually holds the main file.
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        counts.kills += 2;
        let when = format!("{durability}, round {round} (seed in the output)");
        if verify_after_crash(&audit, &when) {
            counts.rounds_to_recover += 1;
        }
        check_side_effects(&audit, &work, &when);
        let before = chain_states(&audit);
        assert!(before.len() <= 2, "{when}: two processes at a time need two chains: {before:?}");
        for recovery in before.iter().filter_map(|(_, recovery, _)| recovery.as_ref()) {
            counts.adopted += usize::from(recovery.adopted > 0);
            counts.torn += usize::from(recovery.torn_bytes > 0);
            counts.torn_head += usize::from(recovery.torn_head);
        }

        restart(&config, &format!("{durability}-{round}"));
        let text = verify_passes(&audit, &format!("{when}, restarted"));
        check_side_effects(&audit, &work, &format!("{when}, restarted"));
        let after = chain_states(&audit);
        for (path, recoverable, recoveries) in &before {
            let now = after.iter().find(|(p, _, _)| p == path).expect("chains do not vanish");
            let expected = recoveries + u64::from(recoverable.is_some());
            assert_eq!(now.2, expected, "{when}: {} after the restart: {text}", path.display());
        }
    }
    let text = verify_passes(&audit, &format!("{durability}, at the end"));
    let files = check_side_effects(&audit, &work, &format!("{durability}, at the end"));
    counts.recoveries = chain_states(&audit).iter().map(|(_, _, n)| n).sum();
    eprintln!(
        "{durability}: {} kills, {} rounds left a chain to recover ({} with records past the head, {} with a torn \
         line, {} with a torn head copy), {files} files written, {} recoveries\n{text}",
        counts.kills, counts.rounds_to_recover, counts.adopted, counts.torn, counts.torn_head, counts.recoveries
    );
    counts
}

#[test]
fn kills_at_random_instants_leave_logs_that_verify_recover_and_hold_every_side_effect() {
    let seed = std::env::var("AIRLOCK_CRASH_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64) | 1
    });
    eprintln!("crash test seed: {seed} (AIRLOCK_CRASH_SEED={seed} replays its choices)");
    let mut rng = Rng(seed);
    let started = Instant::now();
    let mut kills = 0;
    for durability in ["fsync", "flush"] {
        // How often a kill leaves something to recover depends on where it
        // falls (the unit tests in `audit/tests/recovery.rs` make every
        // such state by hand): printed, not asserted.
        kills += crash_rounds(durability, &mut rng).kills;
    }
    eprintln!("{kills} kills in {:?}", started.elapsed());
    assert!(kills >= 100);
}

#[test]
fn a_torn_or_tampered_log_is_refused_saying_which_until_a_start_recovers_the_torn_one() {
    let dir = temp_dir();
    let audit = dir.path().join("audit.jsonl");
    let work = dir.path().join("work");
    std::fs::create_dir(&work).expect("work dir");
    let policy = dir.path().join("policy.cedar");
    std::fs::write(&policy, "permit (principal, action, resource);\n").expect("policy");
    let config = config(&audit, &work, &policy, "fsync");
    Clean::start(&config, "torn-0".to_owned()).finish(2);
    verify_passes(&audit, "written");

    // A partial last line, as a kill inside a write leaves.
    let mut text = std::fs::read(&audit).expect("log");
    text.extend_from_slice(b"{\"seq\":99,\"time\":");
    std::fs::write(&audit, &text).expect("torn");
    let (code, said) = verify_cli(&audit);
    assert_eq!(code, Some(3), "{said}");
    assert!(said.contains("NOT RECOVERED") && said.contains("a last line of 17 bytes without a line end"), "{said}");
    assert!(said.contains("not tampering") && !said.contains("TAMPERED"), "{said}");

    // The next start recovers it and says so.
    let warning = Clean::start(&config, "torn-1".to_owned()).finish(1);
    assert!(warning.contains("recovered the audit log after a crash"), "{warning}");
    let said = verify_passes(&audit, "recovered");
    assert!(said.contains("recovered: ") && said.contains("1 time(s)"), "{said}");
    let kept = std::fs::read(dir.path().join("audit.jsonl.torn")).expect("the partial line is kept");
    assert_eq!(kept, b"{\"seq\":99,\"time\":\n");

    // An edited record is tampering, and says so.
    let text = std::fs::read_to_string(&audit).expect("log");
    std::fs::write(&audit, text.replacen("\"write_file\"", "\"write_fil3\"", 1)).expect("tamper");
    let (code, said) = verify_cli(&audit);
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("TAMPERED") && said.contains("hash mismatch") && !said.contains("NOT RECOVERED"), "{said}");
}
