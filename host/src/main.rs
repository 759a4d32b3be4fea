//! The `airlock` command line: every subcommand goes through the library's
//! one pipeline; this file only parses flags, prompts and prints.
//!
//! Exit codes: 0 for a successful result, 1 for an error result (or a
//! failed audit verification), 2 for usage and configuration errors.
//!
//! Everything printed to stdout goes through [`Out`], which reports a write
//! error instead of panicking: when the reader has gone (`airlock tools |
//! head`), the command ends quietly with 0, as Unix tools do.

// As in the library (lib.rs): no unwrap, expect, panic or indexing outside tests.
#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use airlock::distribution::cli as distribution;
use airlock::{
    CallRequest, Config, ConfirmRequest, Confirmer, FixedConfirmer, Format, Host, LoadProgress, RawArguments,
    ToolResult,
};
use clap::{Parser, Subcommand};
use futures::future::BoxFuture;
use serde_json::{Value, json};
use std::fmt;
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod scaffold;

/// Run LLM tools as sandboxed WebAssembly components.
#[derive(Parser)]
#[command(name = "airlock", version, about)]
struct Cli {
    /// Operator config file [default: ./airlock.toml if present, else the bundled tools with safe defaults].
    #[arg(long, global = true, env = "AIRLOCK_CONFIG")]
    config: Option<PathBuf>,
    /// More log output on stderr (-v info, -vv debug); RUST_LOG overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    /// Log lines on stderr as text, or as one JSON object per line (for a log collector).
    #[arg(long, global = true, value_enum, default_value = "text", env = "AIRLOCK_LOG_FORMAT")]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

/// How log lines are written.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line: `timestamp`, `level`, `target`, `message` and the event's fields.
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// List the loaded tools: name, digest, grants, limits, side effect.
    Tools,
    /// Print the model-facing tool list as JSON (strict-mode warnings go to stderr).
    Schema {
        /// openai, openai-responses, anthropic or mcp.
        #[arg(long, default_value = "openai")]
        format: Format,
        /// Emit strict-mode compatible schemas and mark the tools strict.
        #[arg(long)]
        strict: bool,
    },
    /// Run one call through the pipeline and print the result as JSON.
    Call {
        /// Tool name.
        tool: String,
        /// Arguments as a JSON object.
        #[arg(default_value = "{}")]
        args: String,
        #[command(flatten)]
        who: Who,
    },
    /// Read an assistant message on stdin, run its tool calls as one batch, print the result messages.
    Dispatch {
        /// openai, openai-responses or anthropic.
        #[arg(long)]
        format: Format,
        #[command(flatten)]
        who: Who,
    },
    /// Describe a component file: world, metadata, imports, size, sha256, and why it would be refused.
    Inspect {
        /// The .wasm file, or oci://REGISTRY/REPOSITORY@sha256:… (pulled and verified, with its signer).
        file: PathBuf,
    },
    /// Pull components from an OCI registry into the store, verify them, pin tags in airlock.lock.
    Pull(distribution::PullArgs),
    /// Push a component to an OCI registry (WebAssembly OCI artifact), optionally signed (cosign format).
    Push(distribution::PushArgs),
    /// Generate an ECDSA P-256 key pair for `push --sign` and `keys = [...]`.
    Keygen(distribution::KeygenArgs),
    /// Serve the tools over MCP.
    Serve {
        /// Serve on stdin/stdout.
        #[arg(long, conflicts_with = "http", required_unless_present = "http")]
        stdio: bool,
        /// Serve streamable HTTP on this address (loopback unless you say otherwise).
        #[arg(long, value_name = "ADDR")]
        http: Option<std::net::SocketAddr>,
        /// Principal for requests without a bearer token (stdio, or HTTP with no tokens configured).
        #[arg(long, default_value = "local")]
        principal: String,
        /// Reload tools when the config or tool directories change.
        #[arg(long)]
        watch: bool,
    },
    /// Print the effective configuration, each value with where it came from (secrets redacted).
    Config,
    /// Create a new tool project (rust, python or js) and print the command that builds it.
    New(scaffold::NewArgs),
    /// Audit log tools.
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
}

#[derive(Subcommand)]
enum AuditCommand {
    /// Check the hash chain of an audit log, or of every replica's log
    /// shipped to PostgreSQL.
    Verify {
        /// The log file.
        #[arg(required_unless_present = "postgres", conflicts_with = "postgres")]
        file: Option<PathBuf>,
        /// Verify every replica's chain in this database
        /// (postgresql://USER@HOST:PORT/DB): gaps and breaks are reported.
        #[arg(long, value_name = "URL")]
        postgres: Option<String>,
    },
    /// Print the last records of an audit log.
    Tail {
        /// The log file.
        file: PathBuf,
        /// How many records.
        #[arg(short, default_value_t = 10)]
        n: usize,
    },
}

#[derive(clap::Args)]
struct Who {
    /// Who is asking (as known to the policy).
    #[arg(long, default_value = "local")]
    principal: String,
    /// Confirm every call that asks for confirmation.
    #[arg(long, conflicts_with = "no")]
    yes: bool,
    /// Decline every call that asks for confirmation.
    #[arg(long)]
    no: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.verbose, cli.log_format);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("airlock: cannot start the async runtime: {err}");
            return ExitCode::from(2);
        }
    };
    let code = runtime.block_on(run(cli));
    // Dropping a runtime waits for every blocking task without limit (a
    // validation or a read still running on the blocking pool); the work
    // that matters (results, audit records) is done by now.
    runtime.shutdown_timeout(RUNTIME_SHUTDOWN_GRACE);
    code
}

/// How long the runtime's leftover blocking tasks may delay the exit.
const RUNTIME_SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_millis(500);

fn init_logging(verbose: u8, format: LogFormat) {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // Colour codes only for a person at a terminal: a client or a log file
    // reading a pipe would get them as literal escape sequences.
    let text = (format == LogFormat::Text).then(|| {
        tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(std::io::stderr().is_terminal())
            .with_target(false)
    });
    let json = (format == LogFormat::Json).then(|| {
        tracing_subscriber::fmt::layer()
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(false)
            .with_writer(std::io::stderr)
    });
    // Client errors rmcp would log as warnings with the client's data are
    // counted and logged at a bounded rate instead (see `client_log`).
    let _ = tracing_subscriber::registry()
        .with(airlock::client_log::QuietClientErrors)
        .with(filter)
        .with(text)
        .with(json)
        .try_init();
}

/// Standard output, locked and written with errors as values.
struct Out(std::io::StdoutLock<'static>);

impl Out {
    fn new() -> Self {
        Out(std::io::stdout().lock())
    }

    /// Write one line and flush it, so that a closed pipe is seen here.
    fn line(&mut self, args: fmt::Arguments<'_>) -> std::io::Result<()> {
        self.0.write_fmt(args)?;
        self.0.write_all(b"\n")?;
        self.0.flush()
    }

    /// Pretty JSON and a newline.
    fn json(&mut self, value: &Value) -> std::io::Result<()> {
        match serde_json::to_string_pretty(value) {
            Ok(text) => self.line(format_args!("{text}")),
            Err(err) => {
                eprintln!("airlock: cannot print JSON: {err}");
                Ok(())
            }
        }
    }
}

/// The exit code of a command whose output may have failed: a reader that
/// went away (broken pipe) ends it quietly with 0; any other write error is
/// said on stderr.
fn finish(printed: std::io::Result<ExitCode>) -> ExitCode {
    match printed {
        Ok(code) => code,
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("airlock: cannot write to stdout: {err}");
            ExitCode::from(2)
        }
    }
}

/// Fail with exit code 2 and a message.
fn usage_error(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("airlock: {message}");
    ExitCode::from(2)
}

async fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Audit { command: AuditCommand::Verify { postgres: Some(url), .. } } => {
            return finish(verify_postgres(&url).await);
        }
        Command::Audit { command } => return finish(audit(command)),
        Command::Inspect { file } if !airlock::distribution::is_reference(&file) => {
            return finish(inspect(&file).await);
        }
        Command::New(args) => {
            return match scaffold::run(&args) {
                Ok(text) => finish(Out::new().line(format_args!("{}", text.trim_end())).map(|()| ExitCode::SUCCESS)),
                Err(err) => usage_error(err),
            };
        }
        Command::Keygen(args) => return distribution::keygen(&args),
        _ => {}
    }
    let config = match load_config(cli.config.as_deref()) {
        Ok(config) => config,
        Err(err) => return usage_error(err),
    };
    match &cli.command {
        Command::Config => {
            let text = config.describe();
            return finish(Out::new().line(format_args!("{}", text.trim_end())).map(|()| ExitCode::SUCCESS));
        }
        Command::Pull(args) => return distribution::pull(&config, args).await,
        Command::Push(args) => return distribution::push(&config, args).await,
        Command::Inspect { file } => return distribution::inspect(&config, file).await,
        _ => {}
    }
    // `serve` answers clients at once and loads its tools in the
    // background; the one-shot commands load every tool before they act,
    // with progress on a terminal.
    let builder = match cli.command {
        Command::Serve { .. } => Host::builder().config(config).load_in_background(true),
        _ => Host::builder().config(config).progress(Box::new(TerminalProgress::new())),
    };
    let host = match builder.build().await {
        Ok(host) => host,
        Err(err) => return usage_error(err),
    };
    match cli.command {
        Command::Tools => finish(tools(&host)),
        Command::Schema { format, strict } => finish(schema(&host, format, strict)),
        Command::Call { tool, args, who } => finish(call(&host, tool, args, &who).await),
        Command::Dispatch { format, who } => finish(dispatch(&host, format, &who).await),
        Command::Serve { stdio, http, principal, watch } => {
            let result = if stdio {
                airlock::mcp::serve_stdio(host, principal, watch).await
            } else {
                let addr = http.unwrap_or_else(|| std::net::SocketAddr::from(([127, 0, 0, 1], 8080)));
                airlock::mcp::serve_http(host, addr, principal, watch).await
            };
            match result {
                Ok(()) => ExitCode::SUCCESS,
                Err(err) => usage_error(format!("{err:#}")),
            }
        }
        Command::Audit { .. }
        | Command::Inspect { .. }
        | Command::New(_)
        | Command::Config
        | Command::Pull(_)
        | Command::Push(_)
        | Command::Keygen(_) => unreachable!("handled above"),
    }
}

/// The config in force: `--config`, else `./airlock.toml`, else the built-in
/// configuration over the bundled tools.
fn load_config(path: Option<&Path>) -> Result<Config, String> {
    if let Some(path) = path {
        return Config::from_file(path).map_err(|e| e.to_string());
    }
    let local = Path::new("airlock.toml");
    if local.is_file() {
        return Config::from_file(local).map_err(|e| e.to_string());
    }
    Ok(Config::builtin(&bundled_tools_dir()))
}

/// Where the bundled tools are: `$AIRLOCK_TOOLS_DIR`, else `guests/` beside
/// the binary's directory (`target/guests` for `target/release/airlock`),
/// else `./target/guests`.
fn bundled_tools_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("AIRLOCK_TOOLS_DIR") {
        return PathBuf::from(dir);
    }
    let beside = std::env::current_exe().ok().and_then(|exe| Some(exe.parent()?.parent()?.join("guests")));
    match beside {
        Some(dir) if dir.is_dir() => dir,
        _ => PathBuf::from("target/guests"),
    }
}

/// Per-component progress on stderr while the tools load, for a person at
/// a terminal: how many components are done and which are compiling, each
/// with its elapsed time, redrawn every [`PROGRESS_REDRAW`]. Nothing is
/// drawn on a pipe, nor before [`PROGRESS_AFTER`] (a warm cache has loaded
/// everything by then).
struct TerminalProgress {
    state: Option<Arc<Mutex<ProgressState>>>,
}

/// Progress is drawn only for loads that take longer than this.
const PROGRESS_AFTER: Duration = Duration::from_millis(300);
/// How often the progress line is redrawn.
const PROGRESS_REDRAW: Duration = Duration::from_millis(200);
/// At most this many compiling components are named on the line.
const PROGRESS_NAMES: usize = 3;

struct ProgressState {
    began: Instant,
    total: usize,
    done: usize,
    compiling: Vec<(String, Instant)>,
    drawn: bool,
    stopped: bool,
}

impl ProgressState {
    fn draw(&mut self) {
        if self.stopped || self.began.elapsed() < PROGRESS_AFTER || self.total == 0 {
            return;
        }
        let mut line = format!("[{}/{}] loading tools", self.done, self.total);
        if !self.compiling.is_empty() {
            let names: Vec<String> = self
                .compiling
                .iter()
                .take(PROGRESS_NAMES)
                .map(|(name, since)| format!("{name} {:.1}s", since.elapsed().as_secs_f64()))
                .collect();
            let more = self.compiling.len().saturating_sub(PROGRESS_NAMES);
            line = format!("{line}; compiling {}", names.join(", "));
            if more > 0 {
                line.push_str(&format!(" and {more} more"));
            }
        }
        let mut err = std::io::stderr();
        let _ = write!(err, "\r\x1b[2K{line}");
        let _ = err.flush();
        self.drawn = true;
    }

    fn clear(&mut self) {
        if self.drawn {
            let mut err = std::io::stderr();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
            self.drawn = false;
        }
    }
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

impl TerminalProgress {
    /// Progress on stderr if it is a terminal, else nothing.
    fn new() -> Self {
        if !std::io::stderr().is_terminal() {
            return TerminalProgress { state: None };
        }
        let state = Arc::new(Mutex::new(ProgressState {
            began: Instant::now(),
            total: 0,
            done: 0,
            compiling: Vec::new(),
            drawn: false,
            stopped: false,
        }));
        let ticking = Arc::downgrade(&state);
        // Redraws the elapsed times; it ends once the progress is dropped.
        let started = std::thread::Builder::new().name("airlock-progress".into()).spawn(move || {
            loop {
                std::thread::sleep(PROGRESS_REDRAW);
                let Some(state) = ticking.upgrade() else { return };
                let mut state = state.lock().unwrap_or_else(|e| e.into_inner());
                if state.stopped {
                    return;
                }
                state.draw();
            }
        });
        if started.is_err() {
            return TerminalProgress { state: None };
        }
        TerminalProgress { state: Some(state) }
    }

    fn update(&self, change: impl FnOnce(&mut ProgressState)) {
        if let Some(state) = &self.state {
            let mut state = state.lock().unwrap_or_else(|e| e.into_inner());
            change(&mut state);
            if state.total > 0 && state.done >= state.total {
                state.clear();
            } else {
                state.draw();
            }
        }
    }
}

impl Drop for TerminalProgress {
    fn drop(&mut self) {
        if let Some(state) = &self.state {
            let mut state = state.lock().unwrap_or_else(|e| e.into_inner());
            state.clear();
            state.stopped = true;
        }
    }
}

impl LoadProgress for TerminalProgress {
    fn started(&self, _path: &Path, total: usize) {
        self.update(|state| state.total = total);
    }

    fn compiling(&self, path: &Path) {
        self.update(|state| state.compiling.push((file_name(path), Instant::now())));
    }

    fn finished(&self, path: &Path, _loaded: bool) {
        let name = file_name(path);
        self.update(|state| {
            state.done = state.done.saturating_add(1);
            if let Some(at) = state.compiling.iter().position(|(n, _)| *n == name) {
                state.compiling.remove(at);
            }
        });
    }
}

fn tools(host: &Host) -> std::io::Result<ExitCode> {
    let registry = host.tools();
    let mut out = Out::new();
    out.line(format_args!(
        "{:<16} {:<12} {:<8} {:<5} {:<8} {:<28} GRANTS",
        "NAME", "DIGEST", "CONTRACT", "SIDE", "CARD", "LIMITS"
    ))?;
    for tool in registry.iter() {
        let s = &tool.settings;
        let limits = format!(
            "{}ms {}MiB {}Gfuel",
            s.limits.timeout.as_millis(),
            s.limits.memory_bytes >> 20,
            s.limits.fuel / 1_000_000_000
        );
        let side = if s.side_effect { "yes" } else { "no" };
        // Which templates the operator wrote: a confirmation card, a result
        // presenter, both or neither.
        let card = match (s.confirm.is_some(), s.present_result.is_some()) {
            (true, true) => "both",
            (true, false) => "confirm",
            (false, true) => "result",
            (false, false) => "-",
        };
        let digest = tool.digest.get(..12).unwrap_or(&tool.digest);
        let contract = tool.contract().version();
        out.line(format_args!(
            "{:<16} {digest:<12} {contract:<8} {side:<5} {card:<8} {limits:<28} {}",
            tool.name,
            s.grants.summary()
        ))?;
        if let Some(origin) = &tool.origin {
            let signer = origin.signer.as_deref().map_or_else(|| "unsigned".to_owned(), |s| format!("signed by {s}"));
            out.line(format_args!("{:<16} from {}, {signer}", "", origin.reference))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn schema(host: &Host, format: Format, strict: bool) -> std::io::Result<ExitCode> {
    let provider = airlock::provider_of(format);
    for report in host.strict_report() {
        if Some(report.provider) != provider || report.problems.is_empty() {
            continue;
        }
        let (fix, problems) = match (strict, report.no_strict_form.is_empty()) {
            (true, true) => ("strict variant emitted", &report.problems),
            (true, false) => ("no strict form: emitted as it is, not marked strict", &report.no_strict_form),
            (false, true) => ("use --strict for a compatible variant", &report.problems),
            (false, false) => ("it has no strict form", &report.no_strict_form),
        };
        eprintln!("warning: {}: not accepted by {} strict mode ({fix}):", report.tool, report.provider.as_str());
        for problem in problems {
            eprintln!("  {problem}");
        }
    }
    Out::new().json(&Value::Array(host.schemas(format, strict)))?;
    Ok(ExitCode::SUCCESS)
}

/// Answers "ask" decisions: `--yes`/`--no`, else a prompt on the terminal,
/// else declined.
fn confirmer(who: &Who) -> Option<Box<dyn Confirmer>> {
    if who.yes || who.no {
        return Some(Box::new(FixedConfirmer(who.yes)));
    }
    if std::io::stderr().is_terminal() { Some(Box::new(TerminalConfirmer)) } else { None }
}

struct TerminalConfirmer;

impl Confirmer for TerminalConfirmer {
    fn confirm<'a>(&'a self, request: ConfirmRequest<'a>) -> BoxFuture<'a, bool> {
        // A confirmation card (escaped and capped by the host) replaces the
        // raw arguments, which could carry terminal escapes.
        let prompt = match request.card {
            Some(card) => {
                format!(
                    "{card}\n{} wants to call {}\n({}) Allow? [y/N] ",
                    request.principal, request.tool, request.reason
                )
            }
            None => format!(
                "{} wants to call {} with {}\n({}) Allow? [y/N] ",
                request.principal, request.tool, request.arguments, request.reason
            ),
        };
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                // Read the answer from the terminal itself: stdin may carry
                // the message being dispatched.
                let Ok(mut tty) = std::fs::OpenOptions::new().read(true).write(true).open("/dev/tty") else {
                    return false;
                };
                if tty.write_all(prompt.as_bytes()).is_err() {
                    return false;
                }
                let mut answer = String::new();
                let mut byte = [0u8; 1];
                while answer.len() < 16 && tty.read(&mut byte).is_ok_and(|n| n == 1) && byte[0] != b'\n' {
                    answer.push(byte[0] as char);
                }
                matches!(answer.trim(), "y" | "Y" | "yes")
            })
            .await
            .unwrap_or(false)
        })
    }
}

/// `airlock call`'s answer: the tool's JSON result, or the error text the
/// model would read.
fn result_json(result: &ToolResult) -> Value {
    let content = match &result.outcome {
        Ok(success) => success.value.clone(),
        Err(_) => Value::String(result.text()),
    };
    json!({ "is_error": result.is_error(), "kind": result.outcome_name(), "content": content })
}

async fn call(host: &Host, tool: String, args: String, who: &Who) -> std::io::Result<ExitCode> {
    let request = CallRequest {
        call_id: "cli".into(),
        tool,
        arguments: RawArguments::Text(args),
        principal: who.principal.clone(),
        attributes: Default::default(),
        trace_parent: None,
    };
    let confirmer = confirmer(who);
    let result = host.call(request, confirmer.as_deref()).await;
    tracing::info!("{}", result.human_line());
    if !result.stderr.text.is_empty() {
        tracing::info!("guest stderr: {}", result.stderr.text.trim_end());
    }
    Out::new().json(&result_json(&result))?;
    Ok(if result.is_error() { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// Largest message `dispatch` reads from stdin.
const MAX_MESSAGE_BYTES: u64 = 8 << 20;

async fn dispatch(host: &Host, format: Format, who: &Who) -> std::io::Result<ExitCode> {
    let mut text = String::new();
    if let Err(err) = std::io::stdin().take(MAX_MESSAGE_BYTES + 1).read_to_string(&mut text) {
        return Ok(usage_error(format!("cannot read the message from stdin: {err}")));
    }
    if text.len() as u64 > MAX_MESSAGE_BYTES {
        return Ok(usage_error(format!("the message on stdin is larger than {MAX_MESSAGE_BYTES} bytes")));
    }
    let message: Value = match serde_json::from_str(&text) {
        Ok(message) => message,
        Err(err) => return Ok(usage_error(format!("stdin is not a JSON message: {err}"))),
    };
    let requests = match airlock::read_calls(format, &message, &who.principal) {
        Ok(requests) => requests,
        Err(err) => return Ok(usage_error(err)),
    };
    let confirmer = confirmer(who);
    let results = host.dispatch(requests, confirmer.as_deref(), &airlock::CancellationToken::new()).await;
    for result in &results {
        tracing::info!("{}", result.human_line());
    }
    Out::new().json(&airlock::write_results(format, &results))?;
    Ok(if results.iter().any(ToolResult::is_error) { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

async fn inspect(file: &Path) -> std::io::Result<ExitCode> {
    let runtime = match airlock::Runtime::new(&airlock::EngineSettings::default()) {
        Ok(runtime) => runtime,
        Err(err) => return Ok(usage_error(format!("{err:#}"))),
    };
    let report = airlock::inspect(&runtime, file).await;
    let accepted = report.accepted;
    match serde_json::to_value(&report) {
        Ok(value) => Out::new().json(&value)?,
        Err(err) => return Ok(usage_error(err)),
    }
    Ok(if accepted { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// `audit verify --postgres URL`: one line per replica; exit 1 if any
/// replica's chain has gaps or breaks, 2 if the database cannot be read.
async fn verify_postgres(url: &str) -> std::io::Result<ExitCode> {
    let reports = match airlock::audit_verify_postgres(url).await {
        Ok(reports) => reports,
        Err(err) => return Ok(usage_error(err)),
    };
    let mut out = Out::new();
    if reports.is_empty() {
        out.line(format_args!("ok: no records in the database"))?;
    }
    for report in &reports {
        out.line(format_args!("{report}"))?;
    }
    Ok(if reports.iter().all(airlock::ReplicaReport::is_intact) { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn audit(command: AuditCommand) -> std::io::Result<ExitCode> {
    let mut out = Out::new();
    Ok(match command {
        AuditCommand::Verify { file: None, .. } => usage_error("audit verify needs a log file or --postgres URL"),
        AuditCommand::Verify { file: Some(file), .. } => match airlock::audit_verify(&file) {
            Ok(report) => {
                let head = report.last_hash.as_deref().unwrap_or("(empty)");
                out.line(format_args!("ok: {} records, chain intact; head {head}", report.records))?;
                ExitCode::SUCCESS
            }
            Err(err) => {
                out.line(format_args!("TAMPERED: {err}"))?;
                ExitCode::from(1)
            }
        },
        AuditCommand::Tail { file, n } => match airlock::audit_tail(&file, n) {
            Ok(records) => {
                for record in records {
                    out.line(format_args!("{record}"))?;
                }
                ExitCode::SUCCESS
            }
            Err(err) => usage_error(err),
        },
    })
}
