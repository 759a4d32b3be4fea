//! The host: the call pipeline, whose stages are:
//!
//! admit → resolve → parse → validate → authorize → confirm → schedule → execute → check → audit
//!
//! with the host state it runs under (the `State` built from the operator's
//! files, swapped whole on reload), start-up, the configuration file,
//! quotas and sessions, metrics, traces and logs, the fleet, and the
//! provider formats. Execute runs a fresh instance under fuel, deadline and
//! memory limits, with only the granted directories and origins, or the
//! live instance of an opt-in session. Every call comes back as an
//! ordinary [`ToolResult`] whose outcome is a [`Success`] or a [`Failure`]
//! with an [`ErrorKind`]; front ends render it at their edge.
//!
//! **API boundary.** The crate root is the library API that `airlock`
//! re-exports: start with [`Host::builder`]. Every module is private and
//! every public item has one path: the root for what an embedder uses,
//! [`transport`] for what only the MCP transports (`airlock-mcp`, the
//! layer above) use besides it, and the hidden `bench` for the
//! measurement hooks of `make bench`. See `ARCHITECTURE.md` for the map of
//! the crates.

#![deny(missing_docs)]
// No unwrap, expect, panic or indexing outside tests: denied for the whole
// workspace in Cargo.toml `[workspace.lints.clippy]`.

mod access;
mod approval;
#[doc(hidden)]
pub mod bench;
mod client_log;
mod config;
mod fair_share;
mod fleet;
mod formats;
mod api;
mod messages;
mod metrics;
mod observe;
mod otel;
mod outbound;
mod pipeline;
mod projection;
mod quota;
mod registry;
mod reservation;
mod session;
mod state;
mod tasks;
mod tool;
mod tool_settings;
pub mod transport;

pub use airlock_core::arguments::{MAX_ARGUMENT_BYTES, MAX_ARGUMENT_DEPTH, RawArguments};
pub use airlock_core::call::Captured;
pub use airlock_core::call::{CallRequest, MAX_PRINCIPAL_LEN, ToolResult};
pub use airlock_core::caller::{MAX_CALLER_ATTRIBUTE_BYTES, MAX_CALLER_ATTRIBUTES, MAX_CALLER_PARENTS};
/// A result's content blocks (`Success::blocks`): `content::Block`,
/// `Content`, `Summary`.
pub use airlock_core::content;
pub use airlock_core::outcome::{
    Authority, Blame, CallOutcome, Decision, ErrorKind, Failure, INVALID_TOOL_CODE, MAX_TOOL_ERROR_CODE,
    MAX_TOOL_ERROR_MESSAGE, Refusal, Retry, Success,
};
pub use airlock_core::progress::{Progress, ProgressSink};
pub use airlock_core::trace_parent::{MAX_TRACEPARENT_LEN, TraceParent};
pub use airlock_policy::audit::postgres::{
    MAX_REPORTED_PROBLEMS, ReplicaReport, VERIFY_PAGE_ROWS, verify as audit_verify_postgres,
};
pub use airlock_policy::audit::{
    AuditSettings, ChainsReport, Durability, MAX_AUDIT_SIBLINGS, MAX_REPLICA_ID_BYTES, PostgresSettings,
    Recovery as AuditRecovery, VerifyError, VerifyReport, argument_digest, existing_siblings as audit_siblings, redact,
    tail as audit_tail, verify as audit_verify, verify_all as audit_verify_all,
};
pub use airlock_policy::authorize::PolicyFiles;
pub use airlock_policy::authorize::{Policy, PolicyError, ToolFacts, Verdict};
pub use airlock_policy::card::{
    CardSettings, DEFAULT_MAX_CARD_BYTES, DEFAULT_MAX_CARD_VALUE_BYTES, DEFAULT_MAX_PRESENTED_BYTES,
    MAX_TEMPLATE_BYTES, Template,
};
pub use airlock_policy::confirm::{ApprovalMode, Approver, ConfirmRequest, Confirmer, FixedConfirmer, FnConfirmer};
pub use airlock_policy::principal::principal_fault;
pub use airlock_runtime::bindings::Contract;
pub use airlock_runtime::compile_cache::digest;
pub use airlock_runtime::compiler::{MAX_COMPONENT_BYTES, NotAComponent, check_header};
/// Components from OCI registries: pull, push, keys, the store and the lock file.
pub use airlock_runtime::distribution;
pub use airlock_runtime::engine::Runtime;
pub use airlock_runtime::grants::{DirAccess, DirGrant, EnvGrant, Grants};
pub use airlock_runtime::inspect::{Inspection, inspect};
pub use airlock_runtime::loader::{
    LoadError, LoadedTool, PORTABLE_DESCRIPTION_CHARS, description_too_long, load as load_component,
};
pub use airlock_runtime::memory_budget;
pub use airlock_runtime::network::{
    DEFAULT_MAX_SECRET_FILE_BYTES, HostPattern, MAX_CREDENTIAL_NAME_BYTES, NetworkGrant, OriginPattern, OriginRule,
    RequestOrigin, Scheme, SecretHeader, SecretSource, SecretValue,
};
pub use airlock_runtime::sandbox::{Execution, TOOL_LOG_TARGET};
pub use airlock_runtime::strict::{Problem as StrictProblem, Provider, lint as strict_lint};
pub use airlock_runtime::tool_settings::{SessionSettings, ToolSettings};
pub use airlock_runtime::wasmtime_config::Tier;
pub use airlock_settings::engine::{
    DEFAULT_COMPILE_MEMORY_MIB, DEFAULT_COMPILE_TIMEOUT_SECS, EngineSettings, MAX_COMPILE_MEMORY_MIB,
    MAX_COMPILE_TIMEOUT_SECS, MIN_COMPILE_MEMORY_MIB,
};
pub use airlock_settings::limits::Limits;
pub use airlock_settings::service::{LogSettings, MetricsSettings, PrincipalInSpans, ServeSettings, TraceSettings};
pub use api::startup::Readiness;
pub use api::{Host, HostBuilder, StrictReport, provider_of};
pub use approval::ApprovalSettings;
pub use client_log::QuietClientErrors;
pub use config::{
    BearerToken, BundledTools, Config, ConfigError, HttpCaps, HttpSettings, JwksSource, JwtCaps, JwtSettings, Restart,
    TOOLS_DIR_ENV,
};
pub use fleet::{FleetSettings, MAX_REQUEST_STATE_BYTES, MIN_STATE_KEY_BYTES, StateKey};
pub use formats::Format;
pub use messages::{read_calls, write_results};
pub use projection::{McpExtras, ModelTool, mcp_extras, project};
pub use quota::{Quota, Quotas};
pub use registry::{LoadProgress, MAX_PARALLEL_LOADS, Registry, RegistryError, parallel_loads};
pub use session::MAX_SESSION_ID_LEN;
pub use state::{HostError, LoadErrors, Sources, State};
pub use tasks::TaskSettings;
pub use tool::Tool;
pub use tool_settings::{PipelineSettings, TaskSupport, ToolConfig};

/// Re-exported so front ends can cancel calls without another dependency.
pub use tokio_util::sync::CancellationToken;
