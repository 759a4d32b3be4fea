//! Who a one-shot call acts as, and how its "ask" decisions are answered:
//! `--yes` / `--no`, else a prompt on the terminal, else declined.

use airlock::{ConfirmRequest, Confirmer, FixedConfirmer};
use futures::future::BoxFuture;
use std::io::{IsTerminal, Read, Write};

#[derive(clap::Args)]
pub struct Who {
    /// Who is asking (as known to the policy).
    #[arg(long, default_value = "local", value_parser = principal)]
    pub principal: String,
    /// Confirm every call that asks for confirmation.
    #[arg(long, conflicts_with = "no")]
    pub yes: bool,
    /// Decline every call that asks for confirmation.
    #[arg(long)]
    pub no: bool,
}

/// A principal given on the command line, refused as any front end
/// refuses one that is not a name (`airlock::principal_fault`).
///
/// # Errors
///
/// What is wrong with it.
pub fn principal(text: &str) -> Result<String, String> {
    match airlock::principal_fault(text, airlock::MAX_PRINCIPAL_LEN, "the longest principal") {
        Some(fault) => Err(format!("the principal {fault}")),
        None => Ok(text.to_owned()),
    }
}

/// Answers "ask" decisions: `--yes`/`--no`, else a prompt on the terminal,
/// else declined.
pub fn confirmer(who: &Who) -> Option<Box<dyn Confirmer>> {
    if who.yes || who.no {
        return Some(Box::new(FixedConfirmer(who.yes)));
    }
    if std::io::stderr().is_terminal() { Some(Box::new(TerminalConfirmer)) } else { None }
}

/// Asks on `/dev/tty`, showing the confirmation card when the tool has one.
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
