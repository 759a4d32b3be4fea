//! Item 3 over stdio, Airlock beside its peers: a plain rmcp echo server
//! (the floor for a Rust MCP server) and the official Python SDK's, driven
//! by the same raw client in interleaved rounds.

use crate::Setup;
use crate::process::{StdioServer, assert_ok, cpu_time};
use crate::stats::{self, Stats, us};
use serde_json::json;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One stdio server's figures for item 3: one call at a time, calls/s
/// with 8 in flight, the time for 8 in flight, and its CPU per call one at
/// a time.
pub(crate) struct StdioFigures {
    pub(crate) sequential: Stats,
    pub(crate) rate: f64,
    pub(crate) batches: Stats,
    pub(crate) cpu_per_call: Duration,
}

/// A stdio MCP server measured in item 3, and what it has measured so far.
struct Measured {
    name: &'static str,
    server: StdioServer,
    samples: Vec<Duration>,
    cpu: Duration,
    batches: Vec<Duration>,
    eight_calls: usize,
    eight_time: Duration,
}

impl Measured {
    fn new(name: &'static str, mut server: StdioServer) -> Self {
        server.initialize();
        Self {
            name,
            server,
            samples: Vec::new(),
            cpu: Duration::ZERO,
            batches: Vec::new(),
            eight_calls: 0,
            eight_time: Duration::ZERO,
        }
    }

    fn echo(&mut self) {
        self.server.call("echo", json!({"text": "hi"}));
        assert_ok(&self.server.response());
    }

    /// `n` calls one at a time, timed, and the server's CPU for them.
    fn one_at_a_time(&mut self, n: usize) {
        let before = cpu_time(self.server.pid());
        for _ in 0..n {
            let started = Instant::now();
            self.echo();
            self.samples.push(started.elapsed());
        }
        self.cpu += cpu_time(self.server.pid()).saturating_sub(before);
    }

    /// `rounds` batches of 8 calls in flight.
    fn eight_in_flight(&mut self, rounds: usize) {
        let started = Instant::now();
        for _ in 0..rounds {
            let batch = Instant::now();
            for _ in 0..8 {
                self.server.call("echo", json!({"text": "hi"}));
            }
            for _ in 0..8 {
                assert_ok(&self.server.response());
            }
            self.batches.push(batch.elapsed());
        }
        self.eight_time += started.elapsed();
        self.eight_calls += rounds * 8;
    }

    fn figures(self) -> (&'static str, StdioFigures) {
        let calls = self.samples.len().max(1) as u32;
        let figures = StdioFigures {
            cpu_per_call: self.cpu / calls,
            sequential: stats::stats(self.samples),
            rate: self.eight_calls as f64 / self.eight_time.as_secs_f64().max(f64::MIN_POSITIVE),
            batches: stats::stats(self.batches),
        };
        (self.name, figures)
    }
}

/// How many rounds item 3 interleaves its stdio servers over.
const STDIO_ROUNDS: usize = 5;

/// A peer server for item 3: `program` with `args`, on stdio.
fn peer(program: &Path, args: &[&Path]) -> StdioServer {
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|err| {
            panic!("{} starts ({err}): `make bench` builds and installs the peers", program.display())
        });
    StdioServer::over(child)
}

/// Item 3 over stdio, Airlock and its peers: each server is warmed up,
/// then in each of [`STDIO_ROUNDS`] rounds every server takes its share
/// of the calls one at a time and then 8 in flight, in turn, so that what
/// else the machine does falls on all of them alike.
pub(crate) fn mcp_stdio(setup: &Setup, config: &Path) -> Vec<(&'static str, StdioFigures)> {
    let mut servers = vec![
        Measured::new("airlock", StdioServer::spawn(setup, Some(config))),
        Measured::new("rmcp", peer(&setup.rmcp_echo, &[])),
        Measured::new("python", peer(&setup.python, &[&setup.python_echo])),
    ];
    let n = setup.mcp_iterations;
    for server in &mut servers {
        for _ in 0..n / 10 {
            server.echo();
        }
    }
    for _ in 0..STDIO_ROUNDS {
        for server in &mut servers {
            server.one_at_a_time(n / STDIO_ROUNDS);
            server.eight_in_flight(n / 8 / STDIO_ROUNDS);
        }
    }
    servers.into_iter().map(Measured::figures).collect()
}

/// Item 3's peers: every stdio server of the run, against the rmcp floor.
pub(crate) fn peers_table(rows: &[(&str, &StdioFigures)], floor: &StdioFigures) -> String {
    let mut s = format!(
        "Peers in the same run: the same raw client and `echo` call against each server over stdio, {STDIO_ROUNDS} \
         interleaved rounds (each server in turn takes its share of the calls one at a time, then 8 in flight).\n\n\
         | server | p50 µs, 1 in flight | p99 µs | server CPU µs/call | calls/s, 8 in flight | p50 / rmcp | CPU / rmcp | \
         8 in flight / rmcp |\n|---|---|---|---|---|---|---|---|\n"
    );
    for (name, figures) in rows {
        s += &format!(
            "| {name} | {} | {} | {} | {:.0} | {} | {} | {} |\n",
            us(figures.sequential.p50),
            us(figures.sequential.p99),
            us(figures.cpu_per_call),
            figures.rate,
            times(figures.sequential.p50.as_secs_f64(), floor.sequential.p50.as_secs_f64()),
            times(figures.cpu_per_call.as_secs_f64(), floor.cpu_per_call.as_secs_f64()),
            times(figures.rate, floor.rate),
        );
    }
    s.push('\n');
    s
}

/// `over` / `under` as a ratio, or "n/a" when `under` was not measured.
fn times(over: f64, under: f64) -> String {
    if under > 0.0 { format!("{:.2} ×", over / under) } else { "n/a".to_owned() }
}
