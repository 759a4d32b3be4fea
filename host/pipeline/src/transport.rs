//! What the MCP transports (`airlock-mcp`) use of the host besides the
//! library API of the crate root: the pieces of the HTTP gate, the
//! approval page, the fleet's signed states and start-up that a transport
//! serves, but an embedder calling [`Host`](crate::Host) has no use for.
//!
//! **API boundary.** Each item here has this one path (none is also at the
//! crate root), grouped by the part of the host it comes from. Nothing here
//! reaches the pipeline: a transport still calls tools only through
//! [`Host`](crate::Host).

/// The HTTP bearer tokens and allowed origins of the state in force.
pub mod access {
    pub use crate::access::{Access, normalize_origin};
}

/// Approvals on Airlock's page: what the page shows, who may answer, the
/// signed link.
pub mod approval {
    pub use crate::approval::link::LinkKey;
    pub use crate::approval::page_lease::{Holder, PAGE_LOCK_FILE, PageLease, holder};
    pub use crate::approval::passkey::store::{
        Credential, ENROLMENT_TTL, Enrolment, MAX_PASSKEYS_PER_PRINCIPAL, NotAdded, Passkeys, Person,
        Unavailable as PasskeysUnavailable, is_token, token_digest,
    };
    pub use crate::approval::passkey::{
        Challenge, MAX_CREDENTIAL_BYTES, MAX_SEALED_BYTES, NotProven, Purpose, RelyingParty, credential_id,
    };
    pub use crate::approval::state_file::{Generation, MAX_STATE_FILE_BYTES, StateError, StateFile};
    pub use crate::approval::store::{NotAnswered, Unavailable};
    pub use crate::approval::{
        Answer, Approval, Approvals, MAX_LISTED, NewApproval, NotYours, Opening, PAGE_PATH, Proof, eligible,
        may_answer, now_ms,
    };
    pub use webauthn_rs::prelude::Uuid;
}

/// Errors a client causes, logged without letting a client fill the log.
pub mod client_log {
    pub use crate::client_log::refused;
}

/// The fleet's signed 2026-07-28 confirmation states and their single use
/// in Redis.
pub mod fleet {
    pub use crate::fleet::redeem::{Redeemed, Redeemer, StoreLimits, StoreUnavailable};
    pub use crate::fleet::token;
}

/// The Prometheus registry a server counts its requests in and serves.
pub mod metrics {
    pub use crate::metrics::{CONTENT_TYPE, Metrics};
}

/// The host's outbound HTTP client (a JWT key set, the sign-in issuer, the
/// approvals API), on the runtime's one TLS configuration.
pub mod outbound {
    pub use crate::outbound::{Outbound, Response};
}

/// Per-principal quotas, as a refusal names them.
pub mod quota {
    pub use crate::quota::raise_hint;
}

/// MCP tasks: where a call that runs as a task keeps its state and result
/// while the client is away, under `[tasks]`.
pub mod tasks {
    pub use crate::tasks::store::SHARED_POLL;
    pub use crate::tasks::{Finished, Input, NewTask, Status, Task, Tasks, Unavailable, now_ms, result_reserve};
}

/// Start-up in the background, as a transport waits on it.
pub mod startup {
    pub use crate::api::startup::{Startup, settle, wait_for_tool};
}
