//! Airlock: a host that runs LLM tools as sandboxed WebAssembly components.
//!
//! A model never runs a tool: it proposes a call as JSON and the host
//! decides. Every call goes through one pipeline, whose stages are:
//!
//! admit → resolve → parse → validate → authorize → confirm → schedule → execute → check → audit
//!
//! Execute runs a fresh instance under fuel, deadline and memory limits,
//! with only the granted directories and origins, or the live instance of
//! an opt-in session. Every call comes back as an ordinary [`ToolResult`]
//! whose outcome is a [`Success`] or a [`Failure`] with an [`ErrorKind`];
//! front ends render it at their edge.
//!
//! Start with [`Host::builder`]. This crate is the library API: it
//! re-exports what an embedder needs from the crates it is built on
//! (`airlock-pipeline`, and below it `airlock-runtime`, `airlock-policy`,
//! `airlock-settings` and `airlock-core`) and the MCP transports
//! ([`mcp`], `airlock-mcp`); it also builds the `airlock` binary. See
//! `ARCHITECTURE.md` for the map of the crates, and the book's embedding
//! part (`book/src/embedding/`) for a guide.
//!
//! ```no_run
//! # async fn demo() -> Result<(), airlock::HostError> {
//! use airlock::{CallRequest, Host};
//! // Components are compiled by an `airlock` executable, in metered child
//! // processes (see `EngineSettings::compiler`).
//! let host = Host::builder().config_file("airlock.toml")?.compiler("/usr/local/bin/airlock").build().await?;
//! let result = host.call(CallRequest::new("alice", "echo", serde_json::json!({"text": "hi"})), None).await;
//! match result.result() {
//!     Ok(success) => println!("{}", success.value),
//!     Err(failure) => println!("{}: {}", failure.kind, failure.message),
//! }
//! # Ok(()) }
//! ```
//!
//! When the policy answers "ask", the host asks the [`Confirmer`] passed to
//! the call, for example one from a synchronous callback:
//!
//! ```
//! use airlock::{ConfirmRequest, FnConfirmer};
//! let only_small = FnConfirmer(|req: ConfirmRequest<'_>| req.arguments["amount"].as_i64() < Some(20_000));
//! # let _ = only_small;
//! ```

#![deny(missing_docs)]

/// The MCP transports: stdio and streamable HTTP, serving a built [`Host`].
pub use airlock_mcp as mcp;
#[doc(inline)]
pub use airlock_pipeline::*;
