//! The host's bindings of the `airlock:tool` worlds, one `bindgen!` per
//! contract version, and the two small enums that hide which version a
//! component targets. Generated types stay private to the crate: the rest of
//! the host speaks its own types.
//!
//! Two versions are linked side by side because a component names the
//! version of every interface it exports (`airlock:tool/handler@0.1.0`):
//! a component built for 0.1.0 keeps loading unchanged, and one built for
//! 0.2.0 may also import `airlock:tool/caller` (see `caller.rs`). Which
//! world a component targets is found by binding its exports, newest
//! first.

use crate::outcome::Failure;
use crate::sandbox::{CallCtx, RawMetadata};
use wasmtime::Store;
use wasmtime::component::InstancePre;

/// `airlock:tool@0.1.0` (`wit/0.1.0/tool.wit`): frozen.
pub(crate) mod v0_1 {
    wasmtime::component::bindgen!({
        path: "../wit/0.1.0",
        world: "tool",
        exports: { default: async },
    });
}

/// `airlock:tool@0.2.0` (`wit/tool.wit`): adds the `caller` import.
pub(crate) mod v0_2 {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "tool",
        // `get` outside a call (while the metadata is read) traps.
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
}

impl Contract {
    /// The version, e.g. `0.2.0`.
    pub fn version(self) -> &'static str {
        match self {
            Self::V0_1 => "0.1.0",
            Self::V0_2 => "0.2.0",
        }
    }

    /// The world's full name, e.g. `airlock:tool/tool@0.2.0`.
    pub fn world(self) -> &'static str {
        match self {
            Self::V0_1 => "airlock:tool/tool@0.1.0",
            Self::V0_2 => "airlock:tool/tool@0.2.0",
        }
    }
}

impl std::fmt::Display for Contract {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.world())
    }
}

/// A component pre-instantiated for the world it targets.
#[derive(Clone)]
pub(crate) enum ToolPre {
    V0_1(v0_1::ToolPre<CallCtx>),
    V0_2(v0_2::ToolPre<CallCtx>),
}

impl ToolPre {
    /// Bind the exports of `instance_pre`, newest contract first.
    ///
    /// # Errors
    ///
    /// The component fits no version; the error is the newest version's.
    pub(crate) fn new(instance_pre: InstancePre<CallCtx>) -> wasmtime::Result<Self> {
        match v0_2::ToolPre::new(instance_pre.clone()) {
            Ok(pre) => Ok(Self::V0_2(pre)),
            Err(newest) => v0_1::ToolPre::new(instance_pre).map(Self::V0_1).map_err(|_| newest),
        }
    }

    /// The contract version the component targets.
    pub(crate) fn contract(&self) -> Contract {
        match self {
            Self::V0_1(_) => Contract::V0_1,
            Self::V0_2(_) => Contract::V0_2,
        }
    }

    /// The engine the component was compiled for.
    pub(crate) fn engine(&self) -> &wasmtime::Engine {
        match self {
            Self::V0_1(pre) => pre.engine(),
            Self::V0_2(pre) => pre.engine(),
        }
    }

    /// A new instance in `store`.
    pub(crate) async fn instantiate_async(&self, store: &mut Store<CallCtx>) -> wasmtime::Result<Tool> {
        Ok(match self {
            Self::V0_1(pre) => Tool::V0_1(pre.instantiate_async(store).await?),
            Self::V0_2(pre) => Tool::V0_2(pre.instantiate_async(store).await?),
        })
    }
}

/// A live instance of a tool component.
pub(crate) enum Tool {
    V0_1(v0_1::Tool),
    V0_2(v0_2::Tool),
}

impl Tool {
    /// `handler.call`: the tool's JSON text, or its own error as a
    /// [`crate::outcome::ErrorKind::ToolError`] failure. `Err` is a trap.
    pub(crate) async fn call(
        &self,
        store: &mut Store<CallCtx>,
        arguments: &str,
    ) -> wasmtime::Result<Result<String, Failure>> {
        // The guest's code and message are checked and cleaned here, where
        // they first become host data.
        let tool_error = |message: String, code: Option<String>| Failure::tool_error(&message, code.as_deref());
        Ok(match self {
            Self::V0_1(tool) => tool
                .airlock_tool_handler()
                .call_call(store, arguments)
                .await?
                .map_err(|err| tool_error(err.message, err.code)),
            Self::V0_2(tool) => tool
                .airlock_tool_handler()
                .call_call(store, arguments)
                .await?
                .map_err(|err| tool_error(err.message, err.code)),
        })
    }

    /// Every `metadata` function, in order. `Err` is a trap.
    pub(crate) async fn metadata(&self, store: &mut Store<CallCtx>) -> wasmtime::Result<RawMetadata> {
        macro_rules! read {
            ($meta:expr) => {{
                let meta = $meta;
                let name = meta.call_name(&mut *store).await?;
                let description = meta.call_description(&mut *store).await?;
                let parameters = meta.call_parameters(&mut *store).await?;
                let output = meta.call_output(&mut *store).await?;
                RawMetadata { name, description, parameters, output }
            }};
        }
        Ok(match self {
            Self::V0_1(tool) => read!(tool.airlock_tool_metadata()),
            Self::V0_2(tool) => read!(tool.airlock_tool_metadata()),
        })
    }
}
