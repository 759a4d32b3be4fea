//! Operator settings, each key declared once ([`section`]): the per-call
//! limits of `[defaults]` and `[tools.NAME]` and the engine-wide ceilings
//! ([`limits`]), `[engine]` ([`engine`]), the MCP HTTP transport's
//! `[http]` and `[http.jwt]` ([`http`]), and the sections of a running
//! service, `[metrics]`, `[traces]`, `[serve]` and `[log]` ([`service`]).
//! The sections other layers own are declared there with the same
//! [`section!`] macro.
//!
//! **API boundary.** Each section is a raw serde type that refuses unknown
//! keys, checked into a settings value; every error names the key as the
//! operator wrote it and what is accepted.
//!
//! **Architecture invariant.** Nothing here does I/O beyond reading a file
//! an operator's key names, and nothing knows wasmtime: `cargo test -p
//! airlock-settings` checks these sections without building it.

#![deny(missing_docs)]

pub mod engine;
#[doc(hidden)]
pub mod generated;
pub mod http;
pub mod key_doc;
pub mod limits;
pub mod section;
pub mod service;
pub mod shared_table;
