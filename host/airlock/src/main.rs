//! The `airlock` command line: every subcommand goes through the library's
//! one pipeline; this file parses flags and hands each command to its body
//! in `cli/` (the binary's modules: output, logging, progress, confirm,
//! commands, scaffold).
//!
//! Exit codes: 0 for a successful result, 1 for an error result (or a
//! failed audit verification), 2 for usage and configuration errors.
//!
//! Everything printed to stdout goes through `cli::output::Out`, which
//! reports a write error instead of panicking: when the reader has gone
//! (`airlock tools | head`), the command ends quietly with 0, as Unix tools
//! do.

use airlock::{Config, Format, Host};
use clap::{CommandFactory, Parser, Subcommand};
use cli::confirm::Who;
use cli::logging::{LogFormat, init_logging};
use cli::output::{Out, finish, usage_error};
use cli::progress::TerminalProgress;
use cli::{approvals, commands, distribution, scaffold};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

mod cli;

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

#[derive(Subcommand)]
enum Command {
    /// List the loaded tools: name, digest, revision, grants, limits, side effect.
    Tools,
    /// Pin the revision of every loaded tool in airlock.lock: a tool whose revision later differs is not served.
    Lock,
    /// Print the model-facing tool list as JSON (which tools have a strict form goes to stderr).
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
        /// Write the content blocks the tool returns (pictures, sounds, files, text) into this directory, one file each.
        #[arg(long, value_name = "DIR")]
        content_dir: Option<PathBuf>,
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
        #[arg(long, default_value = "local", value_parser = cli::confirm::principal)]
        principal: String,
        /// Reload tools when the config or tool directories change.
        #[arg(long)]
        watch: bool,
    },
    /// Print the effective configuration, each value with where it came from (secrets redacted).
    Config,
    /// Create a new tool project (rust, python or js) and print the command that builds it.
    New(scaffold::NewArgs),
    /// Passkeys that answer approvals (enroll, list, revoke), and the approvals waiting for a named approver.
    Approvals(approvals::ApprovalsArgs),
    /// Audit log tools.
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
    /// Print a shell completion script (used by `make install`).
    #[command(hide = true)]
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Print the manual page, in roff (used by `make install`).
    #[command(hide = true)]
    Man,
    /// Serve only the approval page a stdio server handed over as it ended
    /// with approvals waiting (started by that server; see `airlock-mcp`).
    #[command(name = airlock::mcp::PAGE_SUBCOMMAND, hide = true)]
    Page {
        /// Standard output is the page's lease.
        #[arg(long)]
        lease: bool,
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

fn main() -> ExitCode {
    // `airlock __compile …`: the metered compiler process the host starts
    // for each component (no logging, no async runtime, no clap).
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|arg| arg == airlock_runtime::compiler::COMPILE_SUBCOMMAND) {
        return airlock_runtime::compiler::child_main(args.get(2..).unwrap_or_default());
    }
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

async fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Audit { command: AuditCommand::Verify { postgres: Some(url), .. } } => {
            return finish(commands::verify_postgres(&url).await);
        }
        Command::Audit { command } => return finish(commands::audit(command)),
        Command::Inspect { file } if !airlock::distribution::is_reference(&file) => {
            return finish(commands::inspect(&file).await);
        }
        Command::New(args) => {
            return match scaffold::run(&args) {
                Ok(text) => finish(Out::new().line(format_args!("{}", text.trim_end())).map(|()| ExitCode::SUCCESS)),
                Err(err) => usage_error(err),
            };
        }
        Command::Keygen(args) => return distribution::keygen(&args),
        Command::Completions { shell } => return finish(commands::completions(shell, &mut Cli::command())),
        Command::Man => return finish(commands::man(Cli::command())),
        _ => {}
    }
    let mut config = match load_config(cli.config.as_deref()) {
        Ok(config) => config,
        Err(err) => return usage_error(err),
    };
    // Components are compiled by this executable, in metered child processes.
    config.engine.compiler = compiler_exe();
    // `airlock lock` loads the tools as they are, the lock file's pins
    // aside, in order to pin them anew.
    if matches!(cli.command, Command::Lock) {
        config.lock_pins = false;
    }
    match &cli.command {
        Command::Config => {
            let text = config.describe();
            return finish(Out::new().line(format_args!("{}", text.trim_end())).map(|()| ExitCode::SUCCESS));
        }
        Command::Pull(args) => return distribution::pull(&config, args).await,
        Command::Approvals(args) => return approvals::run(&config, args).await,
        Command::Push(args) => return distribution::push(&config, args).await,
        Command::Inspect { file } => return distribution::inspect(&config, file).await,
        _ => {}
    }
    // The page after a stdio server keeps no audit log (the next server
    // holds it), serves no metrics and exports no spans; its state is the
    // server's, wherever that was by default.
    if matches!(cli.command, Command::Page { .. }) {
        config.approvals.state_dir = config.state_dir();
        config.audit = None;
        config.metrics.listen = None;
        config.traces = None;
    }
    // `serve` answers clients at once and loads its tools in the
    // background; the one-shot commands load every tool before they act,
    // with progress on a terminal.
    let builder = match cli.command {
        Command::Serve { .. } | Command::Page { .. } => Host::builder().config(config).load_in_background(true),
        _ => Host::builder().config(config).progress(Box::new(TerminalProgress::new())),
    };
    let host = match builder.build().await {
        Ok(host) => host,
        Err(err) => return usage_error(err),
    };
    // An empty tool list is almost always a missing directory: say where
    // Airlock looked and which key names it (`serve` logs it once its
    // background load is done).
    if matches!(cli.command, Command::Serve { .. }) {
        let loading = host.clone();
        tokio::spawn(async move {
            loading.ready().await;
            if loading.tools().is_empty() {
                tracing::warn!("no tools are loaded: {}", loading.config().no_tools_hint());
            }
        });
    } else if host.tools().is_empty() {
        eprintln!("airlock: no tools are loaded: {}", host.config().no_tools_hint());
    }
    match cli.command {
        Command::Tools => {
            let listed = commands::tools(&host);
            // `airlock tools` is also how a cache is warmed (`make install`):
            // it returns once every tool's optimized build is in the cache,
            // not only the baseline build it was first served from.
            while host.runtime().upgrades_pending() > 0 {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            finish(listed)
        }
        Command::Lock => finish(commands::lock(&host)),
        Command::Schema { format, strict } => finish(commands::schema(&host, format, strict)),
        Command::Call { tool, args, content_dir, who } => {
            finish(commands::call(&host, tool, args, content_dir.as_deref(), &who).await)
        }
        Command::Dispatch { format, who } => finish(commands::dispatch(&host, format, &who).await),
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
        Command::Page { lease } => match airlock::mcp::serve_handed_page(host, lease).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => usage_error(format!("{err:#}")),
        },
        Command::Audit { .. }
        | Command::Approvals(_)
        | Command::Inspect { .. }
        | Command::New(_)
        | Command::Config
        | Command::Pull(_)
        | Command::Push(_)
        | Command::Keygen(_)
        | Command::Completions { .. }
        | Command::Man => unreachable!("handled above"),
    }
}

/// This executable, which compiles components when started as
/// `airlock __compile` (`None` if it cannot be found: then nothing is
/// compiled and components not in the cache are refused).
pub(crate) fn compiler_exe() -> Option<PathBuf> {
    std::env::current_exe().ok()
}

/// The config in force: `--config`, else `./airlock.toml`, else the built-in
/// configuration over the bundled tools (wherever
/// [`airlock::BundledTools::find`] finds them).
fn load_config(path: Option<&Path>) -> Result<Config, String> {
    if let Some(path) = path {
        return Config::from_file(path).map_err(|e| e.to_string());
    }
    let local = Path::new("airlock.toml");
    if local.is_file() {
        return Config::from_file(local).map_err(|e| e.to_string());
    }
    Ok(Config::builtin_bundled())
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::CommandFactory;

    /// The book's command table (`book/src/operator/cli.md`) is generated
    /// from this definition: every visible subcommand, its usage and its
    /// help line, so a new subcommand is in the book the day it is added.
    #[test]
    fn the_books_command_table_is_the_cli() {
        let mut cli = Cli::command();
        cli.build();
        let mut rows = String::from("| command | what it does |\n|---|---|\n");
        let mut stack: Vec<&clap::Command> = cli.get_subcommands().collect();
        stack.reverse();
        while let Some(command) = stack.pop() {
            if command.is_hide_set() || command.get_name() == "help" {
                continue;
            }
            if command.has_subcommands() {
                let at = stack.len();
                stack.extend(command.get_subcommands());
                stack[at..].reverse();
                continue;
            }
            let usage = usage(&path_of(&cli, command), command).replace('|', "\\|");
            let about = command.get_about().map(ToString::to_string).unwrap_or_default();
            rows.push_str(&format!("| `{usage}` | {} |\n", about.replace('|', "\\|")));
        }
        let begin = "<!-- generated from the CLI definition";
        let ensured = airlock_settings::generated::ensure(
            "book/src/operator/cli.md",
            begin,
            "<!-- end of generated -->",
            &rows,
            "the CLI definition (host/airlock/src/main.rs)",
        );
        if let Err(err) = ensured {
            panic!("{err}");
        }
    }

    /// `airlock audit verify`: the subcommand names from the root down to
    /// `command`.
    fn path_of(root: &clap::Command, command: &clap::Command) -> String {
        fn find(at: &clap::Command, target: &clap::Command, path: &mut Vec<String>) -> bool {
            path.push(at.get_name().to_owned());
            if std::ptr::eq(at, target) || at.get_subcommands().any(|sub| find(sub, target, path)) {
                return true;
            }
            path.pop();
            false
        }
        let mut path = Vec::new();
        find(root, command, &mut path);
        path.join(" ")
    }

    /// The command line of one subcommand: its own options and arguments
    /// (not the global ones, said once above the table), optional ones in
    /// brackets.
    fn usage(path: &str, command: &clap::Command) -> String {
        let mut line = path.to_owned();
        let own = command.get_arguments().filter(|arg| !arg.is_global_set() && !arg.is_hide_set());
        for arg in own.filter(|arg| !matches!(arg.get_id().as_str(), "help" | "version")) {
            let value = arg
                .get_value_names()
                .and_then(|names| names.first())
                .map_or_else(|| arg.get_id().as_str().to_uppercase(), ToString::to_string);
            let takes_value = arg.get_num_args().is_some_and(|range| range.takes_values());
            let shown = match (arg.get_long(), arg.get_short(), takes_value) {
                (Some(long), _, true) => format!("--{long} {value}"),
                (Some(long), _, false) => format!("--{long}"),
                (None, Some(short), true) => format!("-{short} {value}"),
                (None, Some(short), false) => format!("-{short}"),
                (None, None, _) => value,
            };
            if arg.is_required_set() {
                line.push_str(&format!(" {shown}"));
            } else {
                line.push_str(&format!(" [{shown}]"));
            }
        }
        line
    }
}
