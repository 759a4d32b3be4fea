//! Where a tool's component is fetched, compiled, loaded and run.
//!
//! - The component layer: the wasmtime [`engine`] and its [`compile_cache`],
//!   the metered [`compiler`] process, a tool's [`upgrade`] from its
//!   baseline build to its optimized one, the OCI [`distribution`] of
//!   components, the WIT [`bindings`], [`loader`] (reading, checking and
//!   describing a component) with the metered schema [`validator`], a
//!   tool's [`revision`] (what it is, as one digest, and what changed
//!   against a pin), and what a model's schemas look like
//!   ([`schema_portable`], [`strict`]) and an untrusted component is
//!   ([`inspect`]); the runtime's keys of `[tools.NAME]` are read by
//!   [`tool_settings`].
//! - The [`sandbox`]: a fresh store per call (or a session's live instance)
//!   whose capabilities each own their state and link their own interface
//!   into the engine: directory and environment [`grants`], the [`network`]
//!   grant, the [`caller`] identity, the content blocks a call attaches,
//!   its progress reports and its log lines (contract 0.3.0, in the
//!   sandbox's own modules), the host [`budget`] of open files, bodies and
//!   writes, and the captured output ([`capture`]).

#![deny(missing_docs)]

pub mod bindings;
pub mod budget;
pub mod caller;
pub mod capture;
pub mod compile_cache;
pub mod compiler;
pub mod distribution;
pub mod engine;
pub mod grants;
pub mod inspect;
pub mod loader;
pub mod memory_budget;
pub mod network;
pub mod revision;
pub mod sandbox;
pub mod schema_portable;
pub mod secrets;
pub mod strict;
pub mod tier_compiler;
pub mod tls;
pub mod tool_settings;
pub mod upgrade;
pub mod validator;
pub mod wasmtime_config;
