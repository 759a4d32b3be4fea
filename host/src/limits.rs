//! Resource limits applied to every call (and to every metadata read).
//!
//! Limits always apply: there is no "unlimited". The defaults below hold for
//! every tool unless the operator lowers or raises them in `airlock.toml`,
//! within the engine-wide ceilings at the bottom of this file.

use std::time::Duration;

/// Default wall-clock deadline of one call.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Fuel per second of deadline given to a call whose operator set no fuel
/// budget: ten times the fastest rate measured (7–12 G units/s), so that on
/// any plausible hardware the wall-clock deadline binds first and the error
/// kind (`timeout`) does not depend on the CPU. Fuel is the deterministic
/// budget an operator opts into by setting `fuel` for a tool.
pub const FUEL_PER_DEADLINE_SECOND: u64 = 100_000_000_000;
/// Default fuel budget of one call: [`FUEL_PER_DEADLINE_SECOND`] times the
/// default deadline.
pub const DEFAULT_FUEL: u64 = Limits::fuel_for(DEFAULT_TIMEOUT);
/// Default cap on the linear memory of one instance.
pub const DEFAULT_MEMORY_BYTES: usize = 128 << 20;
/// Default cap on elements of any one table.
pub const DEFAULT_TABLE_ELEMENTS: usize = 50_000;
/// Default cap on core + component instances in one store.
pub const DEFAULT_INSTANCES: usize = 64;
/// Default cap on the JSON result of one call.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 1 << 20;
/// Default cap on each of captured stdout and stderr.
pub const DEFAULT_MAX_STDIO_BYTES: usize = 64 << 10;

/// Engine-wide ceiling of the linear memory of any instance. Per-tool limits
/// above it are load errors.
pub const MAX_MEMORY_BYTES: usize = 4 << 30;
/// Engine-wide ceiling of the elements of any table.
pub const MAX_TABLE_ELEMENTS: usize = 200_000;
/// Engine-wide ceiling of the deadline of any call.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(3600);
/// Engine-wide ceiling of the result size of any call.
pub const MAX_OUTPUT_BYTES: usize = 64 << 20;
/// Engine-wide ceiling of captured stdout/stderr.
pub const MAX_STDIO_BYTES: usize = 16 << 20;
/// Default maximum wasm stack (engine-wide: wasmtime sets it per engine).
pub const DEFAULT_WASM_STACK_BYTES: usize = 1 << 20;

/// The limits of one call. Built from [`Limits::default`] and the operator's
/// per-tool overrides; never from anything a component declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Wall-clock deadline, enforced by epoch interruption and by the async
    /// executor (so it also holds while the guest waits in a host call).
    pub timeout: Duration,
    /// Fuel budget (wasm instructions, roughly).
    pub fuel: u64,
    /// Maximum size of any linear memory.
    pub memory_bytes: usize,
    /// Maximum elements of any table.
    pub table_elements: usize,
    /// Maximum number of instances in the store.
    pub instances: usize,
    /// Maximum size of the JSON result.
    pub max_output_bytes: usize,
    /// Maximum bytes kept of each of stdout and stderr; the rest is counted
    /// and dropped.
    pub max_stdio_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            timeout: DEFAULT_TIMEOUT,
            fuel: DEFAULT_FUEL,
            memory_bytes: DEFAULT_MEMORY_BYTES,
            table_elements: DEFAULT_TABLE_ELEMENTS,
            instances: DEFAULT_INSTANCES,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            max_stdio_bytes: DEFAULT_MAX_STDIO_BYTES,
        }
    }
}

impl Limits {
    /// The fuel budget that follows a deadline when the operator set none:
    /// [`FUEL_PER_DEADLINE_SECOND`] per second, rounded up to whole
    /// milliseconds.
    pub const fn fuel_for(timeout: Duration) -> u64 {
        let millis = timeout.as_millis() as u64;
        millis.saturating_mul(FUEL_PER_DEADLINE_SECOND / 1000)
    }

    /// Check the limits against the engine-wide ceilings; the error says
    /// which limit is out of range and what is accepted.
    pub fn check(&self) -> Result<(), String> {
        let in_range = |what: &str, value: u128, min: u128, max: u128| {
            if value < min || value > max {
                Err(format!("{what} = {value} is out of range: accepted {min}..={max}"))
            } else {
                Ok(())
            }
        };
        in_range("timeout_ms", self.timeout.as_millis(), 1, MAX_TIMEOUT.as_millis())?;
        in_range("fuel", self.fuel.into(), 1, u64::MAX.into())?;
        in_range("memory_bytes", self.memory_bytes as u128, 64 << 10, MAX_MEMORY_BYTES as u128)?;
        in_range("table_elements", self.table_elements as u128, 1, MAX_TABLE_ELEMENTS as u128)?;
        in_range("instances", self.instances as u128, 1, 10_000)?;
        in_range("max_output_bytes", self.max_output_bytes as u128, 1, MAX_OUTPUT_BYTES as u128)?;
        in_range("max_stdio_bytes", self.max_stdio_bytes as u128, 0, MAX_STDIO_BYTES as u128)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_within_ceilings() {
        assert_eq!(Limits::default().check(), Ok(()));
    }

    #[test]
    fn default_fuel_follows_the_deadline() {
        assert_eq!(DEFAULT_FUEL, 1_000_000_000_000);
        assert_eq!(Limits::fuel_for(Duration::from_secs(30)), 3_000_000_000_000);
        // The longest deadline still fits.
        assert!(Limits::fuel_for(MAX_TIMEOUT) < u64::MAX / 1000);
    }

    #[test]
    fn out_of_range_names_the_limit_and_range() {
        let limits = Limits { memory_bytes: MAX_MEMORY_BYTES + 1, ..Limits::default() };
        let err = limits.check().unwrap_err();
        assert!(err.starts_with("memory_bytes = "), "{err}");
        assert!(err.contains("accepted"), "{err}");
        let limits = Limits { timeout: Duration::ZERO, ..Limits::default() };
        assert!(limits.check().unwrap_err().starts_with("timeout_ms = 0"));
    }
}
