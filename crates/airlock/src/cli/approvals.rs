//! `airlock approvals list|approve|decline`: what an approver the operator
//! named (four eyes) answers in a terminal, through the running server's
//! approval page (`/approvals/api`), with their own bearer token. The
//! caller's own approvals are answered on the page only, signed in: an MCP
//! client holds the caller's token. Exit codes: 0 done, 1 refused by the
//! server, 2 usage (no server address, no token, no answer).

use airlock::Config;
use airlock::transport::outbound::Outbound;
use serde_json::Value;
use std::io::Write as _;
use std::process::ExitCode;
use std::time::Duration;

/// The most bytes of the server's answer read.
const MAX_ANSWER_BYTES: usize = 1 << 20;
/// How long the server may take to answer.
const TIMEOUT: Duration = Duration::from_secs(30);

/// `airlock approvals`.
#[derive(Debug, clap::Args)]
pub struct ApprovalsArgs {
    #[command(subcommand)]
    pub command: ApprovalsCommand,
    /// The approval page's origin (default: `[approvals] public_url`, else `http://` and `[approvals] listen`).
    #[arg(long, global = true, value_name = "URL")]
    pub url: Option<String>,
    /// Your bearer token (a static token's or a JWT access token), as for MCP over HTTP.
    #[arg(long, global = true, env = "AIRLOCK_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
}

/// What to do.
#[derive(Debug, clap::Subcommand)]
pub enum ApprovalsCommand {
    /// The approvals waiting for you.
    List,
    /// Approve one (its id, from `list`).
    Approve {
        /// The approval's id.
        id: String,
    },
    /// Decline one.
    Decline {
        /// The approval's id.
        id: String,
    },
}

fn say(text: &str) -> bool {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}").and_then(|()| out.flush()).is_ok()
}

fn usage(message: &str) -> ExitCode {
    eprintln!("airlock: {message}");
    ExitCode::from(2)
}

/// Run it.
pub async fn run(config: &Config, args: &ApprovalsArgs) -> ExitCode {
    let settings = &config.approvals;
    let base = args
        .url
        .clone()
        .or_else(|| settings.public_url.clone())
        .or_else(|| settings.listen.map(|addr| format!("http://{addr}")));
    let Some(base) = base.map(|b| b.trim_end_matches('/').to_owned()) else {
        return usage(
            "where is the approval page? Pass --url (the server's origin, e.g. http://127.0.0.1:8080), or set \
             [approvals] public_url or listen in the config",
        );
    };
    let Some(token) = args.token.as_deref() else {
        return usage("pass your bearer token with --token or AIRLOCK_TOKEN");
    };
    let auth = ("authorization", format!("Bearer {token}"));
    let (url, request) = match &args.command {
        ApprovalsCommand::List => {
            let url = format!("{base}/approvals/api/pending");
            (url, None)
        }
        ApprovalsCommand::Approve { id } | ApprovalsCommand::Decline { id } => {
            if !id.bytes().all(|b| b.is_ascii_hexdigit()) || id.len() != 32 {
                return usage(&format!("{id:?} is not an approval id (32 hex digits, from `airlock approvals list`)"));
            }
            let decision = if matches!(args.command, ApprovalsCommand::Approve { .. }) { "approve" } else { "decline" };
            (format!("{base}/approvals/api/{id}"), Some(serde_json::json!({"decision": decision}).to_string()))
        }
    };
    let outbound = Outbound {
        method: if request.is_some() { http::Method::POST } else { http::Method::GET },
        url: &url,
        headers: vec![auth],
        body: request.map(|body| ("application/json", body.into_bytes())),
        max_bytes: MAX_ANSWER_BYTES,
        timeout: TIMEOUT,
    };
    let response = match outbound.send().await {
        Ok(response) => response,
        Err(err) => {
            eprintln!("airlock: {url}: {err}");
            return ExitCode::from(1);
        }
    };
    let body: Value = serde_json::from_slice(&response.body).unwrap_or(Value::Null);
    if !response.status.is_success() {
        let why = body.get("error").and_then(Value::as_str).unwrap_or("the server refused");
        eprintln!("airlock: {why} ({})", response.status);
        return ExitCode::from(1);
    }
    let printed = match &args.command {
        ApprovalsCommand::List => {
            let pending = body.get("pending").and_then(Value::as_array).cloned().unwrap_or_default();
            if pending.is_empty() {
                say("nothing waits for your approval")
            } else {
                pending.iter().all(|a| {
                    let field = |name: &str| a.get(name).and_then(Value::as_str).unwrap_or_default().to_owned();
                    let expires = a.get("expires_in_secs").and_then(Value::as_u64).unwrap_or_default();
                    say(&format!(
                        "{}  {} for {} (lapses in {expires} s)\n    {}\n    why: {}",
                        field("id"),
                        field("tool"),
                        field("principal"),
                        field("card").replace('\n', "\n    "),
                        field("reason")
                    ))
                })
            }
        }
        ApprovalsCommand::Approve { id } => say(&format!("approved {id}")),
        ApprovalsCommand::Decline { id } => say(&format!("declined {id}")),
    };
    if printed { ExitCode::SUCCESS } else { ExitCode::from(2) }
}
