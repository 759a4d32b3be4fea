//! The host's bindings of the `airlock:tool` worlds, one `bindgen!` per
//! contract version, and the [`Contract`] a component targets. Generated
//! types stay private to the crate: the sandbox wraps them in two small
//! enums that hide the version (`sandbox/tool.rs`), and the rest of the
//! host speaks its own types.
//!
//! Three versions are linked side by side because a component names the
//! version of every interface it exports (`airlock:tool/handler@0.1.0`):
//! a component built for 0.1.0 keeps loading unchanged, one built for
//! 0.2.0 may also import `airlock:tool/caller` (see `caller.rs`), and one
//! built for 0.3.0 may also import `content`, `progress` and `log` (see
//! `sandbox/content.rs`, `sandbox/progress.rs` and `sandbox/tool_log.rs`).
//! Which world a component targets is found by binding its exports,
//! newest first.

/// `airlock:tool@0.1.0` (`wit/0.1.0/tool.wit`): frozen.
pub(crate) mod v0_1 {
    wasmtime::component::bindgen!({
        path: "../../wit/0.1.0",
        world: "tool",
        exports: { default: async },
    });
}

/// `airlock:tool@0.2.0` (`wit/0.2.0/tool.wit`): adds the `caller` import;
/// frozen.
pub(crate) mod v0_2 {
    wasmtime::component::bindgen!({
        path: "../../wit/0.2.0",
        world: "tool",
        // `get` outside a call (while the metadata is read) traps.
        imports: { "airlock:tool/caller.get": trappable },
        exports: { default: async },
    });
}

/// `airlock:tool@0.3.0` (`wit/tool.wit`): adds the `content`, `progress`
/// and `log` imports.
pub(crate) mod v0_3 {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "tool",
        // `get` outside a call (while the metadata is read) traps; the
        // other imports answer outside a call too (`attach` with an error,
        // `report` and `write` by dropping what they are given).
        imports: { "airlock:tool/caller.get": trappable },
        exports: { default: async },
    });
}

/// The contract version a component targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Contract {
    /// `airlock:tool@0.1.0`: metadata and handler, no host imports.
    V0_1,
    /// `airlock:tool@0.2.0`: adds the `caller` import.
    V0_2,
    /// `airlock:tool@0.3.0`: adds the `content`, `progress` and `log`
    /// imports.
    V0_3,
}

impl Contract {
    /// Every version the host loads, newest first: the order in which a
    /// component's exports are bound.
    pub const ALL: [Contract; 3] = [Contract::V0_3, Contract::V0_2, Contract::V0_1];

    /// The version, e.g. `0.2.0`.
    pub fn version(self) -> &'static str {
        match self {
            Self::V0_1 => "0.1.0",
            Self::V0_2 => "0.2.0",
            Self::V0_3 => "0.3.0",
        }
    }

    /// Whether a component of this version can attach content blocks, and
    /// so whether a call of it reserves room for them.
    pub fn has_content(self) -> bool {
        matches!(self, Self::V0_3)
    }

    /// The world's full name, e.g. `airlock:tool/tool@0.2.0`.
    pub fn world(self) -> &'static str {
        match self {
            Self::V0_1 => "airlock:tool/tool@0.1.0",
            Self::V0_2 => "airlock:tool/tool@0.2.0",
            Self::V0_3 => "airlock:tool/tool@0.3.0",
        }
    }
}

impl std::fmt::Display for Contract {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.world())
    }
}
