//! Operator settings that every layer reads: the per-call limits of
//! `[defaults]` and `[tools.NAME]` and the engine-wide ceilings
//! ([`limits`]), `[engine]` ([`engine`]), and the sections of a running
//! service, `[metrics]`, `[traces]`, `[serve]` and `[log]` ([`service`]).
//!
//! Each section is a raw serde type that refuses unknown keys, checked into
//! a settings value; every error names the key as the operator wrote it
//! and what is accepted.

#![deny(missing_docs)]

pub mod engine;
#[doc(hidden)]
pub mod generated;
pub mod limits;
pub mod section;
pub mod service;
