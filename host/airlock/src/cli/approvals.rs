//! `airlock approvals`: what an approver and the operator do in a
//! terminal.
//!
//! - `list`: the approvals waiting for a named approver (four eyes), with
//!   the link each is answered at, through the running server's page
//!   (`/approvals/api/pending`) with the approver's bearer token. A terminal
//!   lists; the answer is given on the page, where the person proves they
//!   are there (a passkey, or sign-in): a bearer token proves only that its
//!   holder has it.
//! - `enroll NAME`: a one-time link that adds NAME's passkey, written
//!   where the approvals' passkeys are kept (`[approvals] state_dir`, or the
//!   fleet's Redis).
//! - `passkeys list`, `passkeys revoke NAME [ID]`: the passkeys kept.
//!
//! What `enroll` proves is only that whoever ran it can write the state
//! the server keeps (the same user, or root, or the fleet's Redis): the
//! book's approvals page says what that means for an agent with a shell.
//! Exit codes: 0 done, 1 refused or failed, 2 usage.

use airlock::Config;
use airlock::transport::approval::{ENROLMENT_TTL, Passkeys, now_ms};
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
    /// The approval page's origin (default: `[approvals] public_url`, else `http://localhost:PORT` of `[approvals] listen`).
    #[arg(long, global = true, value_name = "URL")]
    pub url: Option<String>,
    /// Your bearer token (a static token's or a JWT access token), as for MCP over HTTP: `list` only.
    #[arg(long, global = true, env = "AIRLOCK_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
}

/// What to do.
#[derive(Debug, clap::Subcommand)]
pub enum ApprovalsCommand {
    /// The approvals waiting for you, each with the link you answer it at.
    List,
    /// Make a one-time link that adds a passkey for PRINCIPAL (open it in their browser, on their device).
    Enroll {
        /// Whose passkey.
        #[arg(value_parser = super::confirm::principal)]
        principal: String,
    },
    /// The passkeys that answer approvals.
    Passkeys {
        #[command(subcommand)]
        command: PasskeysCommand,
    },
}

/// `airlock approvals passkeys`.
#[derive(Debug, clap::Subcommand)]
pub enum PasskeysCommand {
    /// Every principal's passkeys.
    List,
    /// Remove a principal's passkey (every one of theirs without ID).
    Revoke {
        /// Whose.
        principal: String,
        /// The passkey's id, from `list` (base64url: it may start with `-`).
        #[arg(allow_hyphen_values = true)]
        id: Option<String>,
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

fn failed(message: &str) -> ExitCode {
    eprintln!("airlock: {message}");
    ExitCode::from(1)
}

fn done(printed: bool) -> ExitCode {
    if printed { ExitCode::SUCCESS } else { ExitCode::from(2) }
}

/// Where the page is, as a browser reaches it.
fn page_base(config: &Config, args: &ApprovalsArgs) -> Option<String> {
    let settings = &config.approvals;
    let listen = settings.listen.map(|addr| match addr.ip().is_loopback() {
        true => format!("http://localhost:{}", addr.port()),
        false => format!("http://{addr}"),
    });
    args.url.clone().or_else(|| settings.public_url.clone()).or(listen).map(|b| b.trim_end_matches('/').to_owned())
}

/// Run it.
pub async fn run(config: &Config, args: &ApprovalsArgs) -> ExitCode {
    match &args.command {
        ApprovalsCommand::List => list(config, args).await,
        ApprovalsCommand::Enroll { principal } => enroll(config, args, principal).await,
        ApprovalsCommand::Passkeys { command } => passkeys(config, command).await,
    }
}

/// The passkeys where the server keeps them.
fn kept(config: &Config) -> Result<Passkeys, ExitCode> {
    let passkeys = Passkeys::open(config.fleet.as_ref(), config.state_dir()).map_err(|e| failed(&e))?;
    if !passkeys.kept() {
        return Err(usage(
            "there is nowhere to keep passkeys: set [approvals] state_dir (or [fleet]) in the config the server uses",
        ));
    }
    Ok(passkeys)
}

async fn enroll(config: &Config, args: &ApprovalsArgs, principal: &str) -> ExitCode {
    let Some(base) = page_base(config, args) else {
        return usage(
            "where is the approval page? Pass --url (its origin as browsers reach it, e.g. http://localhost:8080), \
             or set [approvals] public_url or listen in the config",
        );
    };
    let passkeys = match kept(config) {
        Ok(passkeys) => passkeys,
        Err(code) => return code,
    };
    let has = match passkeys.person(principal).await {
        Ok(person) => person.map_or(0, |p| p.passkeys.len()),
        Err(err) => return failed(&err.to_string()),
    };
    let token = match passkeys.enrolment_link(principal, now_ms()).await {
        Ok(token) => token,
        Err(err) => return failed(&err.to_string()),
    };
    let minutes = ENROLMENT_TTL.as_secs() / 60;
    let who = match has {
        0 => format!("{principal} has no passkey yet: whoever opens the link first adds it, so hand it to them alone."),
        n => format!("{principal} has {n} passkey(s): one of them must confirm the new one."),
    };
    done(say(&format!(
        "Open this link in {principal}'s browser, on the device that will keep the passkey, within {minutes} \
         minutes:\n\n  {base}/approvals/enroll/{token}\n\nIt adds one passkey and then stops working. {who}"
    )))
}

/// How long ago `ms` (Unix milliseconds) was, roughly.
fn ago(ms: u64) -> String {
    let secs = now_ms().saturating_sub(ms) / 1000;
    match secs {
        0..=119 => format!("{secs} s ago"),
        120..=7199 => format!("{} min ago", secs / 60),
        7200..=172_799 => format!("{} h ago", secs / 3600),
        _ => format!("{} days ago", secs / 86_400),
    }
}

async fn passkeys(config: &Config, command: &PasskeysCommand) -> ExitCode {
    let passkeys = match kept(config) {
        Ok(passkeys) => passkeys,
        Err(code) => return code,
    };
    match command {
        PasskeysCommand::List => {
            let people = match passkeys.people().await {
                Ok(people) => people,
                Err(err) => return failed(&err.to_string()),
            };
            if people.is_empty() {
                return done(say(
                    "nobody has a passkey yet: `airlock approvals enroll NAME` makes a link that adds one",
                ));
            }
            let printed =
                people.iter().flat_map(|(who, p)| p.passkeys.iter().map(move |c| (who, c))).all(|(who, c)| {
                    let used =
                        if c.used_ms == 0 { "never used".to_owned() } else { format!("used {}", ago(c.used_ms)) };
                    say(&format!("{who}  {}  added {} by {}, {used}", c.id, ago(c.added_ms), c.added_by))
                });
            done(printed)
        }
        PasskeysCommand::Revoke { principal, id } => match passkeys.revoke(principal, id.as_deref()).await {
            Ok(removed) if removed.is_empty() => failed(&format!("{principal} has no such passkey")),
            Ok(removed) => done(removed.iter().all(|c| say(&format!("revoked {principal}'s passkey {}", c.id)))),
            Err(err) => failed(&err.to_string()),
        },
    }
}

async fn list(config: &Config, args: &ApprovalsArgs) -> ExitCode {
    let Some(base) = page_base(config, args) else {
        return usage(
            "where is the approval page? Pass --url (the server's origin, e.g. http://localhost:8080), or set \
             [approvals] public_url or listen in the config",
        );
    };
    let Some(token) = args.token.as_deref() else {
        return usage("pass your bearer token with --token or AIRLOCK_TOKEN");
    };
    let url = format!("{base}/approvals/api/pending");
    let outbound = Outbound {
        method: http::Method::GET,
        url: &url,
        headers: vec![("authorization", format!("Bearer {token}"))],
        body: None,
        max_bytes: MAX_ANSWER_BYTES,
        timeout: TIMEOUT,
    };
    let response = match outbound.send().await {
        Ok(response) => response,
        Err(err) => return failed(&format!("{url}: {err}")),
    };
    let body: Value = serde_json::from_slice(&response.body).unwrap_or(Value::Null);
    if !response.status.is_success() {
        let why = body.get("error").and_then(Value::as_str).unwrap_or("the server refused");
        return failed(&format!("{why} ({})", response.status));
    }
    let pending = body.get("pending").and_then(Value::as_array).cloned().unwrap_or_default();
    if pending.is_empty() {
        return done(say("nothing waits for your approval"));
    }
    done(pending.iter().all(|a| {
        let field = |name: &str| a.get(name).and_then(Value::as_str).unwrap_or_default().to_owned();
        let expires = a.get("expires_in_secs").and_then(Value::as_u64).unwrap_or_default();
        say(&format!(
            "{}  {} for {} (lapses in {expires} s)\n    {}\n    why: {}\n    answer at: {}",
            field("id"),
            field("tool"),
            field("principal"),
            field("card").replace('\n', "\n    "),
            field("reason"),
            field("link"),
        ))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser as _;

    #[derive(clap::Parser)]
    struct Args {
        #[command(subcommand)]
        command: PasskeysCommand,
    }

    #[test]
    fn a_passkey_id_may_start_with_a_hyphen() {
        // One credential id in 64 does (base64url has `-`).
        let parsed = Args::try_parse_from(["passkeys", "revoke", "alice", "-3nq0T5HpLqzTN3v_1w9e1A"]);
        let (principal, id) = match parsed {
            Ok(Args { command: PasskeysCommand::Revoke { principal, id } }) => (principal, id),
            Ok(_) => panic!("not a revoke"),
            Err(err) => panic!("not parsed: {err}"),
        };
        assert_eq!((principal.as_str(), id.as_deref()), ("alice", Some("-3nq0T5HpLqzTN3v_1w9e1A")));
    }
}
