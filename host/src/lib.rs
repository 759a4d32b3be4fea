//! Airlock: a host that runs LLM tools as sandboxed WebAssembly components.
//!
//! A model never runs a tool: it proposes a call as JSON and the host
//! decides. Every call goes through one pipeline — resolve, parse,
//! validate, authorize, schedule, execute (a fresh instance under fuel,
//! deadline and memory limits, with only the granted directories and
//! origins, or the live instance of an opt-in session), check output,
//! render, audit — and every call comes back as an ordinary [`ToolResult`]
//! whose outcome is a [`Success`] or a [`Failure`] with an [`ErrorKind`].
//!
//! Start with [`Host::builder`]. See `ARCHITECTURE.md` for the map.

#![deny(missing_docs)]
// No unwrap, expect, panic or indexing outside tests: denied for the whole
// workspace in Cargo.toml `[workspace.lints.clippy]`.

mod access;
mod audit;
mod authorize;
mod bindings;
mod budget;
mod caller;
mod capture;
mod card;
mod check;
pub mod client_log;
mod compiler;
mod config;
mod confirm;
pub mod distribution;
mod engine;
mod engine_settings;
mod fleet;
mod formats;
mod grants;
mod host;
mod http_settings;
mod inspect;
mod limits;
mod loader;
pub mod mcp;
mod messages;
mod metrics;
mod network;
mod observe;
mod otel;
mod pipeline;
mod projection;
mod quota;
mod registry;
mod resolve;
mod sandbox;
mod schedule;
mod schema_portable;
mod service_settings;
mod session;
mod state;
mod strict;
mod tool_settings;
mod validate;
mod validator;

pub use airlock_core::arguments::{MAX_ARGUMENT_BYTES, MAX_ARGUMENT_DEPTH, RawArguments};
pub use airlock_core::call::Captured;
pub use airlock_core::call::{CallRequest, ToolResult};
pub use airlock_core::caller::{MAX_CALLER_ATTRIBUTE_BYTES, MAX_CALLER_ATTRIBUTES, MAX_CALLER_PARENTS};
pub use airlock_core::outcome::{
    Decision, ErrorKind, Failure, INVALID_TOOL_CODE, MAX_TOOL_ERROR_CODE, MAX_TOOL_ERROR_MESSAGE, Success,
};
pub use airlock_core::trace_parent::{MAX_TRACEPARENT_LEN, TraceParent};
pub use audit::postgres::{MAX_REPORTED_PROBLEMS, ReplicaReport, VERIFY_PAGE_ROWS, verify as audit_verify_postgres};
pub use audit::ship::{MAX_REPLICA_ID_BYTES, PostgresSettings};
pub use audit::{
    AuditSettings, Durability, VerifyError, VerifyReport, argument_digest, redact, tail as audit_tail,
    verify as audit_verify,
};
pub use authorize::{Policy, PolicyError, ToolFacts, Verdict};
pub use bindings::Contract;
pub use card::{
    CardSettings, DEFAULT_MAX_CARD_BYTES, DEFAULT_MAX_CARD_VALUE_BYTES, DEFAULT_MAX_PRESENTED_BYTES,
    MAX_TEMPLATE_BYTES, Template,
};
pub use compiler::{COMPILE_SUBCOMMAND, MAX_COMPONENT_BYTES, check_header, child_main as compile_child_main};
pub use config::{BearerToken, BundledTools, Config, ConfigError, HttpSettings, TOOLS_DIR_ENV};
pub use confirm::{ConfirmRequest, Confirmer, FixedConfirmer, FnConfirmer};
pub use engine::{Runtime, digest};
pub use engine_settings::{
    DEFAULT_COMPILE_MEMORY_MIB, DEFAULT_COMPILE_TIMEOUT_SECS, EngineSettings, MAX_COMPILE_MEMORY_MIB,
    MAX_COMPILE_TIMEOUT_SECS, MIN_COMPILE_MEMORY_MIB,
};
pub use fleet::{FleetSettings, MAX_REQUEST_STATE_BYTES, MIN_STATE_KEY_BYTES, StateKey};
pub use formats::Format;
pub use grants::{DirAccess, DirGrant, EnvGrant, Grants};
pub use host::startup::Readiness;
pub use host::{Host, HostBuilder, HostError, StrictReport, bench, provider_of};
pub use inspect::{Inspection, inspect};
pub use limits::Limits;
pub use loader::{LoadError, LoadedTool, PORTABLE_DESCRIPTION_CHARS, description_too_long, load as load_component};
pub use messages::{read_calls, write_results};
pub use metrics::{OTHER, UNKNOWN_TOOL};
pub use network::{
    DEFAULT_MAX_SECRET_FILE_BYTES, HostPattern, MAX_CREDENTIAL_NAME_BYTES, NetworkGrant, OriginPattern, OriginRule,
    RequestOrigin, Scheme, SecretHeader, SecretSource, SecretValue,
};
pub use projection::{McpExtras, ModelTool, mcp_extras, project};
pub use quota::{Quota, Quotas};
pub use registry::{LoadProgress, MAX_PARALLEL_LOADS, Registry, RegistryError, parallel_loads};
pub use sandbox::Execution;
pub use service_settings::{LogSettings, MetricsSettings, PrincipalInSpans, ServeSettings, TraceSettings};
pub use session::MAX_SESSION_ID_LEN;
pub use state::{Sources, State};
pub use strict::{Provider, lint as strict_lint};
pub use tool_settings::{SessionSettings, ToolSettings};

/// Re-exported so front ends can cancel calls without another dependency.
pub use tokio_util::sync::CancellationToken;
