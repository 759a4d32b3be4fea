//! The store's limiter: the memory, table and instance caps of a store,
//! and the host's record of a growth it refused.

use airlock_settings::limits::Limits;
use wasmtime::{ResourceLimiter, StoreLimits, StoreLimitsBuilder};

/// The store's limiter: wasmtime's [`StoreLimits`], plus a note of any
/// growth it refused. The note is the host's own record of the memory or
/// table cap being hit: a call that fails after it is `out_of_memory`
/// whatever the trap says (a Rust guest aborts, an interpreter may raise
/// its own error). A session's instance whose guest hit the memory cap is
/// discarded even when the guest recovered (a Python `MemoryError`, a
/// JavaScript out-of-memory error): an interpreter that ran out of memory in
/// the middle of an allocation is not trusted to be consistent afterwards.
pub(crate) struct GrowthLimiter {
    limits: StoreLimits,
    /// A growth was refused (or failed) since the last call began.
    pub(crate) refused: bool,
}

impl GrowthLimiter {
    /// The caps of `limits`, which hold for the store's whole life.
    pub(crate) fn new(limits: &Limits) -> Self {
        let store_limits = StoreLimitsBuilder::new()
            .memory_size(limits.memory_bytes)
            .table_elements(limits.table_elements)
            .instances(limits.instances)
            .tables(limits.instances * 4)
            .memories(limits.instances)
            // A failed grow returns -1 to the guest instead of trapping, so
            // an interpreter can raise its own MemoryError; a Rust guest
            // aborts, and the limiter's record of the refused growth makes
            // that `out_of_memory` (see `failure::classify`).
            .trap_on_grow_failure(false)
            .build();
        Self { limits: store_limits, refused: false }
    }

    /// Note a growth the limits refused (or that failed) and pass the answer on.
    fn record(&mut self, allowed: wasmtime::Result<bool>) -> wasmtime::Result<bool> {
        self.refused |= !matches!(allowed, Ok(true));
        allowed
    }
}

impl ResourceLimiter for GrowthLimiter {
    fn memory_growing(&mut self, current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        let allowed = self.limits.memory_growing(current, desired, maximum);
        self.record(allowed)
    }

    fn memory_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.refused = true;
        self.limits.memory_grow_failed(error)
    }

    fn table_growing(&mut self, current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        let allowed = self.limits.table_growing(current, desired, maximum);
        self.record(allowed)
    }

    fn table_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.refused = true;
        self.limits.table_grow_failed(error)
    }

    fn instances(&self) -> usize {
        self.limits.instances()
    }

    fn tables(&self) -> usize {
        self.limits.tables()
    }

    fn memories(&self) -> usize {
        self.limits.memories()
    }
}
