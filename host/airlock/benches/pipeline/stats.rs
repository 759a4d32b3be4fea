//! Distributions and table rows: every figure is p50, p99, mean and the
//! number of samples, measured in this run.

use std::time::{Duration, Instant};

/// A distribution of durations.
#[derive(Debug, Clone, Copy)]
pub struct Stats {
    pub n: usize,
    pub p50: Duration,
    pub p99: Duration,
    pub mean: Duration,
    pub max: Duration,
}

/// The distribution of `samples` (empty → zeros).
pub fn stats(mut samples: Vec<Duration>) -> Stats {
    samples.sort();
    let n = samples.len();
    if n == 0 {
        return Stats { n, p50: Duration::ZERO, p99: Duration::ZERO, mean: Duration::ZERO, max: Duration::ZERO };
    }
    let total: Duration = samples.iter().sum();
    Stats {
        n,
        p50: samples[n / 2],
        p99: samples[(n * 99 / 100).min(n - 1)],
        mean: total / n as u32,
        max: samples[n - 1],
    }
}

/// Microseconds with one decimal.
pub fn us(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e6)
}

/// Milliseconds with two decimals.
pub fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e3)
}

/// `| name | n | p50 | p99 | mean |` in microseconds.
pub fn row_us(name: &str, s: &Stats) -> String {
    format!("| {name} | {} | {} | {} | {} |", s.n, us(s.p50), us(s.p99), us(s.mean))
}

/// `| name | n | p50 | p99 | mean |` in milliseconds.
pub fn row_ms(name: &str, s: &Stats) -> String {
    format!("| {name} | {} | {} | {} | {} |", s.n, ms(s.p50), ms(s.p99), ms(s.mean))
}

/// The header of a table of [`row_us`] rows.
pub const HEADER_US: &str = "| measurement | iterations | p50 µs | p99 µs | mean µs |\n|---|---|---|---|---|";
/// The header of a table of [`row_ms`] rows.
pub const HEADER_MS: &str = "| measurement | iterations | p50 ms | p99 ms | mean ms |\n|---|---|---|---|---|";

/// Time `n` runs of `f` after `n / 10` warm-up runs.
pub fn measure_sync(n: usize, mut f: impl FnMut()) -> Stats {
    for _ in 0..n / 10 {
        f();
    }
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        f();
        samples.push(started.elapsed());
    }
    stats(samples)
}

/// Time `n` runs of the future `f` makes, after `n / 10` warm-up runs.
pub async fn measure<F, Fut>(n: usize, mut f: F) -> Stats
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    for _ in 0..n / 10 {
        f().await;
    }
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        f().await;
        samples.push(started.elapsed());
    }
    stats(samples)
}

/// One target line: what, the measured figure, the bound, met or not.
pub fn target(what: &str, measured: f64, bound: f64, unit: &str, at_least: bool) -> String {
    let met = if at_least { measured >= bound } else { measured <= bound };
    let op = if at_least { "≥" } else { "≤" };
    let verdict = if met {
        "met".to_owned()
    } else {
        let gap = if at_least { bound - measured } else { measured - bound };
        let digits = if gap.abs() < 10.0 { 2 } else { 1 };
        format!("**missed** by {gap:.digits$} {unit}")
    };
    let digits = if measured.abs() < 10.0 { 2 } else { 1 };
    format!("| {what} | {measured:.digits$} {unit} | {op} {bound} {unit} | {verdict} |")
}
