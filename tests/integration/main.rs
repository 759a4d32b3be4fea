//! Airlock's integration tests: one binary, one module per area. The guests
//! they use are built by `make guests` (see `support`).

// Test code may unwrap, expect, panic and index: a failed assertion should
// read as one (the host's code denies them, Cargo.toml `[workspace.lints.clippy]`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

mod audit_shipping;
mod approvals;
mod approvals_per_call;
mod cards;
mod cgroup;
mod chart;
mod cli;
mod compile;
mod content;
mod crash;
mod deployments;
mod distribution;
mod examples;
mod host_limits;
mod hostile_wasm;
mod identity;
mod interpreters;
mod jwt;
mod jwt_keys;
mod limits_schema;
mod loading;
mod memory_budget;
mod network;
mod pipeline;
mod progress;
mod protocol_errors;
mod quotas;
mod reload;
mod revisions;
mod sandbox;
mod service;
mod softkey;
mod sessions;
mod shared_audit;
mod startup;
mod strict_schemas;
mod support;
mod tasks;
mod tiers;
mod tool_log;
mod traces;
mod transports;
mod write_ahead;
