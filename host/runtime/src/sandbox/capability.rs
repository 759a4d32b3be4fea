//! The sandbox's capabilities and the store type that composes them.
//!
//! Each capability a guest can hold is one unit, as wasmtime-wasi's
//! interfaces and Spin's factors are: its own state in the store, its own
//! `add_to_linker`, and one per-call [`Capability::renew`], which says what
//! a session's live instance resets before each call. The capability's own
//! module keeps its host interface generic over the store (linked by
//! projection: [`crate::caller::add_to_linker`] with a `CallerView`,
//! [`crate::budget::Metered`], wasmtime-wasi's `WasiView` and
//! wasmtime-wasi-http's `WasiHttpView`), so none of them names
//! [`CallCtx`]; this module is where each meets the store.
//!
//! # How adding a capability cannot skip a step
//!
//! The capabilities are one list, the invocation of `capabilities!` below.
//! The macro makes [`CallCtx`] from it (one field per capability, beside
//! the resource table they share) and the three loops over it:
//! construction for a new store ([`Capability::new`]), linking into the
//! engine's linker ([`CallCtx::add_to_linker`], in list order) and renewal
//! before each call ([`CallCtx::renew`]). A type enters the list only if it
//! implements [`Capability`], whose three methods have no default, so a
//! capability cannot be added without saying how it is built, what it
//! links (even if nothing) and what it renews (even if nothing); and a
//! capability not in the list has no field in the store, so no guest can
//! reach it. Nothing else has to be edited by hand for it to be linked and
//! renewed.

use crate::budget::{HostBudget, Metered};
use crate::capture::CapturedOutput;
use crate::grants::Grants;
use crate::network::NetworkHooks;
use airlock_core::caller::Caller;
use airlock_core::progress::Progress;
use airlock_settings::limits::{HTTP_FIELDS_BYTES, Limits};
use anyhow::Context as _;
use std::sync::Arc;
use tokio::sync::watch;
use wasmtime::component::{Linker, ResourceTable};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use super::content::ContentSlot;
use super::limiter::GrowthLimiter;
use super::progress::ProgressSlot;
use super::tool_log::{Tags, ToolLog};

/// One capability of the sandbox: its state in a store, its host
/// interface and its per-call renewal. See the module documentation for
/// how the list of capabilities is kept whole.
pub(crate) trait Capability: Sized + Send + 'static {
    /// The capability's state for a new store (a fresh call, or a
    /// session's instance for its whole life).
    ///
    /// # Errors
    ///
    /// The capability cannot be given (a granted directory is gone).
    fn new(setup: &Setup<'_>) -> anyhow::Result<Self>;

    /// Link the capability's interface into the engine's linker, once per
    /// engine. Capabilities are linked in list order, so one that wraps
    /// another's functions comes after it.
    ///
    /// # Errors
    ///
    /// The interface cannot be linked (already linked, or not at the
    /// version expected).
    fn add_to_linker(linker: &mut Linker<CallCtx>) -> anyhow::Result<()>;

    /// Reset what is per call before the next call on the same store: a
    /// session's live instance serves many calls, a fresh one serves one
    /// (and renewing a fresh capability changes nothing).
    fn renew(&mut self, renewal: &Renewal<'_>);
}

/// What a new store's capabilities are built from: the call's limits (the
/// memory, table and instance caps hold for the store's whole life), the
/// tool's grants and the sinks its output is captured in.
pub(crate) struct Setup<'a> {
    pub(crate) limits: &'a Limits,
    pub(crate) grants: &'a Grants,
    /// Made before the capabilities: the WASI context writes into them and
    /// the capture reads them.
    stdout: CapturedOutput,
    stderr: CapturedOutput,
}

impl<'a> Setup<'a> {
    /// The setup of a store under `limits` with `grants`.
    pub(crate) fn new(limits: &'a Limits, grants: &'a Grants) -> Self {
        Self {
            limits,
            grants,
            stdout: CapturedOutput::new(limits.max_stdio_bytes),
            stderr: CapturedOutput::new(limits.max_stdio_bytes),
        }
    }
}

/// What is new for each call: its limits (a session's call may run under
/// other caps than the call that made its instance), the tool's name, who
/// it acts for (`None` while the metadata is read), where its progress
/// reports go (`None`: nowhere) and where its log lines go besides the
/// operator's log (`None`: nowhere else).
pub(crate) struct Renewal<'a> {
    pub(crate) limits: &'a Limits,
    pub(crate) tool: &'a str,
    pub(crate) caller: Option<&'a Arc<Caller>>,
    pub(crate) progress: Option<watch::Sender<Option<Progress>>>,
    pub(crate) log: Option<super::tool_log::Sender>,
}

/// Make [`CallCtx`] from the list of capabilities, and the loops over it.
macro_rules! capabilities {
    ($($(#[$doc:meta])* $field:ident: $ty:ty,)+) => {
        /// Per-call state held by a store: the capabilities (one field
        /// each, from the list in `sandbox/capability.rs`) and the resource
        /// table they share. Dropped with the store: after the call, or
        /// when a session ends.
        pub struct CallCtx {
            /// Every WASI and `wasi:http` resource the guest holds; capped
            /// at `host_memory_mib`'s share ([`Limits::max_host_resources`]).
            /// Shared by the capabilities and renewed by none: what the
            /// guest holds stays across a session's calls.
            table: ResourceTable,
            $($(#[$doc])* pub(crate) $field: $ty,)+
        }

        impl CallCtx {
            /// A new store's state: each capability built from `setup`.
            ///
            /// # Errors
            ///
            /// A capability cannot be given (a granted directory is gone).
            pub(crate) fn new(setup: &Setup<'_>) -> anyhow::Result<Self> {
                // Every WASI resource the guest holds (descriptor, stream,
                // pollable, header map, request, body) is one table entry;
                // past the cap the call traps and is classified as
                // `host_limit`.
                let mut table = ResourceTable::new();
                table.set_max_capacity(setup.limits.max_host_resources());
                Ok(Self { table, $($field: <$ty as Capability>::new(setup)?,)+ })
            }

            /// Link every capability's interface, in list order.
            ///
            /// # Errors
            ///
            /// A capability's interface cannot be linked.
            pub(crate) fn add_to_linker(linker: &mut Linker<CallCtx>) -> anyhow::Result<()> {
                $(<$ty as Capability>::add_to_linker(linker)?;)+
                Ok(())
            }

            /// Renew every capability for the next call.
            pub(crate) fn renew(&mut self, renewal: &Renewal<'_>) {
                $(Capability::renew(&mut self.$field, renewal);)+
            }
        }
    };
}

capabilities! {
    /// Directories, environment, clocks, random bytes and stdio, as
    /// granted (`grants.rs`).
    wasi: Wasi,
    /// The guest's captured stdout and stderr (`capture.rs`).
    capture: Capture,
    /// `wasi:http`, every request checked against the network grant
    /// (`network.rs`).
    network: Network,
    /// `airlock:tool/caller`: who the call being served acts for
    /// (`caller.rs`).
    caller: CallerSlot,
    /// `airlock:tool/content`: the content blocks the call attaches, each
    /// checked as it arrives (`sandbox/content.rs`).
    content: ContentSlot,
    /// `airlock:tool/progress`: the call's progress reports, checked and
    /// forwarded at most once per interval (`sandbox/progress.rs`).
    progress: ProgressSlot,
    /// `airlock:tool/log`: the call's lines for the operator's log
    /// (`sandbox/tool_log.rs`).
    log: ToolLog,
    /// The host's own spending on the call: open files, outgoing bodies,
    /// writes (`budget.rs`). Its wrappers shadow functions of WASI and
    /// `wasi:http`, so it is linked after them.
    budget: HostBudget,
    /// The store's memory, table and instance caps, and its record of a
    /// refused growth (`sandbox/limiter.rs`); the store's limiter.
    limits: GrowthLimiter,
}

/// The WASI context built from the grants, the only one a guest gets
/// ([`Grants::wasi_ctx`]).
pub(crate) struct Wasi(WasiCtx);

impl Capability for Wasi {
    fn new(setup: &Setup<'_>) -> anyhow::Result<Self> {
        setup.grants.wasi_ctx(setup.stdout.clone(), setup.stderr.clone()).map(Wasi)
    }

    fn add_to_linker(linker: &mut Linker<CallCtx>) -> anyhow::Result<()> {
        wasmtime_wasi::p2::add_to_linker_async(linker).map_err(anyhow::Error::from).context("linking WASI")
    }

    /// Nothing: the directories, files and streams the guest opened stay
    /// open across a session's calls.
    fn renew(&mut self, _: &Renewal<'_>) {}
}

/// The sinks the guest's stdout and stderr go to.
pub(crate) struct Capture {
    pub(crate) stdout: CapturedOutput,
    pub(crate) stderr: CapturedOutput,
}

impl Capability for Capture {
    fn new(setup: &Setup<'_>) -> anyhow::Result<Self> {
        Ok(Self { stdout: setup.stdout.clone(), stderr: setup.stderr.clone() })
    }

    /// Nothing: the sinks are the WASI context's stdout and stderr.
    fn add_to_linker(_: &mut Linker<CallCtx>) -> anyhow::Result<()> {
        Ok(())
    }

    /// Each call reports only its own output.
    fn renew(&mut self, _: &Renewal<'_>) {
        self.stdout.clear();
        self.stderr.clear();
    }
}

/// `wasi:http`'s context and the host's hooks that check and send every
/// request.
pub(crate) struct Network {
    http: WasiHttpCtx,
    hooks: NetworkHooks,
}

impl Capability for Network {
    fn new(setup: &Setup<'_>) -> anyhow::Result<Self> {
        let mut http = WasiHttpCtx::new();
        http.set_field_size_limit(HTTP_FIELDS_BYTES);
        Ok(Self { http, hooks: NetworkHooks::new(setup.grants.network.clone()) })
    }

    /// `wasi:http` is there for components that import it; every request
    /// is refused unless the tool has a network grant (see `network.rs`).
    fn add_to_linker(linker: &mut Linker<CallCtx>) -> anyhow::Result<()> {
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(linker)
            .map_err(anyhow::Error::from)
            .context("linking wasi:http")
    }

    /// A new allowance of requests and response bytes (requests still in
    /// flight keep counting against the old one).
    fn renew(&mut self, _: &Renewal<'_>) {
        self.hooks.renew();
    }
}

/// The caller of the call being served; `None` while the metadata is
/// read.
pub(crate) struct CallerSlot(Option<Arc<Caller>>);

impl Capability for CallerSlot {
    fn new(_: &Setup<'_>) -> anyhow::Result<Self> {
        Ok(Self(None))
    }

    /// `airlock:tool/caller` (contracts 0.2.0 and 0.3.0) answers with the
    /// caller of the call being served.
    fn add_to_linker(linker: &mut Linker<CallCtx>) -> anyhow::Result<()> {
        crate::caller::add_to_linker(linker, |ctx: &mut CallCtx| crate::caller::CallerView(ctx.caller.0.as_deref()))
            .map_err(anyhow::Error::from)
            .context("linking airlock:tool/caller")
    }

    /// The next call's caller.
    fn renew(&mut self, renewal: &Renewal<'_>) {
        self.0 = renewal.caller.cloned();
    }
}

impl Capability for ContentSlot {
    fn new(setup: &Setup<'_>) -> anyhow::Result<Self> {
        Ok(ContentSlot::new(setup.limits))
    }

    /// `airlock:tool/content` (contract 0.3.0).
    fn add_to_linker(linker: &mut Linker<CallCtx>) -> anyhow::Result<()> {
        ContentSlot::add_to_linker(linker, |ctx: &mut CallCtx| &mut ctx.content)
            .map_err(anyhow::Error::from)
            .context("linking airlock:tool/content")
    }

    /// Nothing attached, under the call's caps; serving only a call, not
    /// a metadata read.
    fn renew(&mut self, renewal: &Renewal<'_>) {
        ContentSlot::renew(self, renewal.limits, renewal.caller.is_some());
    }
}

impl Capability for ProgressSlot {
    fn new(setup: &Setup<'_>) -> anyhow::Result<Self> {
        Ok(ProgressSlot::new(setup.limits))
    }

    /// `airlock:tool/progress` (contract 0.3.0).
    fn add_to_linker(linker: &mut Linker<CallCtx>) -> anyhow::Result<()> {
        ProgressSlot::add_to_linker(linker, |ctx: &mut CallCtx| &mut ctx.progress)
            .map_err(anyhow::Error::from)
            .context("linking airlock:tool/progress")
    }

    /// The call's channel (if its client asked for progress), and no
    /// report seen yet.
    fn renew(&mut self, renewal: &Renewal<'_>) {
        ProgressSlot::renew(self, renewal.limits, renewal.progress.clone());
    }
}

impl Capability for ToolLog {
    fn new(setup: &Setup<'_>) -> anyhow::Result<Self> {
        Ok(ToolLog::new(setup.limits))
    }

    /// `airlock:tool/log` (contract 0.3.0).
    fn add_to_linker(linker: &mut Linker<CallCtx>) -> anyhow::Result<()> {
        ToolLog::add_to_linker(linker, |ctx: &mut CallCtx| &mut ctx.log)
            .map_err(anyhow::Error::from)
            .context("linking airlock:tool/log")
    }

    /// The call's tags and caps, no line written yet.
    fn renew(&mut self, renewal: &Renewal<'_>) {
        let tags = renewal.caller.map(|caller| Tags { tool: renewal.tool.to_owned(), caller: Arc::clone(caller) });
        ToolLog::renew(self, renewal.limits, tags, renewal.log.clone());
    }
}

impl Capability for HostBudget {
    fn new(setup: &Setup<'_>) -> anyhow::Result<Self> {
        let (limits, grants) = (setup.limits, setup.grants);
        Ok(HostBudget::new(limits.max_open_files, grants.dirs.len(), limits.max_outgoing_bodies())
            .with_write_caps(limits.max_write_bytes, limits.max_created_files))
    }

    /// Open files and outgoing HTTP bodies are counted per call.
    fn add_to_linker(linker: &mut Linker<CallCtx>) -> anyhow::Result<()> {
        crate::budget::add_to_linker(linker).context("linking the host budget")
    }

    /// What the guest holds is still counted; the write caps and the
    /// refusal note start over.
    fn renew(&mut self, _: &Renewal<'_>) {
        HostBudget::renew(self);
    }
}

impl Capability for GrowthLimiter {
    fn new(setup: &Setup<'_>) -> anyhow::Result<Self> {
        Ok(GrowthLimiter::new(setup.limits))
    }

    /// Nothing: the limiter is the store's (`Store::limiter`), not an
    /// interface.
    fn add_to_linker(_: &mut Linker<CallCtx>) -> anyhow::Result<()> {
        Ok(())
    }

    /// A clean record of refused growth.
    fn renew(&mut self, _: &Renewal<'_>) {
        self.refused = false;
    }
}

impl Metered for CallCtx {
    fn budget_and_table(&mut self) -> (&mut HostBudget, &ResourceTable) {
        (&mut self.budget, &self.table)
    }
}

impl WasiView for CallCtx {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi.0, table: &mut self.table }
    }
}

impl WasiHttpView for CallCtx {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView { ctx: &mut self.network.http, table: &mut self.table, hooks: &mut self.network.hooks }
    }
}
