//! A tool component bound to the contract version it targets, in the
//! sandbox's store: pre-instantiated ([`ToolPre`]) and live ([`Tool`]).
//!
//! The exports are found once, when the component loads: each interface's
//! indices ([`Exports`]) are looked up by name from the pre-instance. A new
//! instance then type-checks only the function a call runs (`handler.call`);
//! the four `metadata` functions, read once per load, are bound only when
//! they are read.

use super::{CallCtx, RawMetadata};
use crate::bindings::{Contract, v0_1, v0_2, v0_3};
use airlock_core::outcome::Failure;
use wasmtime::Store;
use wasmtime::component::{Instance, InstancePre};

/// A component pre-instantiated for the world it targets.
#[derive(Clone)]
pub struct ToolPre {
    instance_pre: InstancePre<CallCtx>,
    exports: Exports,
}

/// The indices of the `metadata` and `handler` exports, for the contract
/// version the component targets.
#[derive(Clone)]
enum Exports {
    V0_1(v0_1::exports::airlock::tool::metadata::GuestIndices, v0_1::exports::airlock::tool::handler::GuestIndices),
    V0_2(v0_2::exports::airlock::tool::metadata::GuestIndices, v0_2::exports::airlock::tool::handler::GuestIndices),
    V0_3(v0_3::exports::airlock::tool::metadata::GuestIndices, v0_3::exports::airlock::tool::handler::GuestIndices),
}

/// The `handler` of a live instance, its one function type-checked.
enum Handler {
    V0_1(v0_1::exports::airlock::tool::handler::Guest),
    V0_2(v0_2::exports::airlock::tool::handler::Guest),
    V0_3(v0_3::exports::airlock::tool::handler::Guest),
}

impl ToolPre {
    /// Bind the exports of `instance_pre`, newest contract first.
    ///
    /// # Errors
    ///
    /// The component fits no version; the error is the newest version's.
    pub(crate) fn new(instance_pre: InstancePre<CallCtx>) -> wasmtime::Result<Self> {
        // The generated world's own check first (every interface and
        // function it exports, by name), then the indices kept for
        // instantiation.
        let exports = match v0_3::ToolPre::new(instance_pre.clone()) {
            Ok(_) => Exports::V0_3(
                v0_3::exports::airlock::tool::metadata::GuestIndices::new(&instance_pre)?,
                v0_3::exports::airlock::tool::handler::GuestIndices::new(&instance_pre)?,
            ),
            Err(newest) => {
                if v0_2::ToolPre::new(instance_pre.clone()).is_ok() {
                    Exports::V0_2(
                        v0_2::exports::airlock::tool::metadata::GuestIndices::new(&instance_pre)?,
                        v0_2::exports::airlock::tool::handler::GuestIndices::new(&instance_pre)?,
                    )
                } else if v0_1::ToolPre::new(instance_pre.clone()).is_ok() {
                    Exports::V0_1(
                        v0_1::exports::airlock::tool::metadata::GuestIndices::new(&instance_pre)?,
                        v0_1::exports::airlock::tool::handler::GuestIndices::new(&instance_pre)?,
                    )
                } else {
                    return Err(newest);
                }
            }
        };
        Ok(Self { instance_pre, exports })
    }

    /// The contract version the component targets.
    pub(crate) fn contract(&self) -> Contract {
        match self.exports {
            Exports::V0_1(..) => Contract::V0_1,
            Exports::V0_2(..) => Contract::V0_2,
            Exports::V0_3(..) => Contract::V0_3,
        }
    }

    /// The engine the component was compiled for.
    pub(crate) fn engine(&self) -> &wasmtime::Engine {
        self.instance_pre.engine()
    }

    /// A new instance in `store`, its handler bound.
    pub(crate) async fn instantiate_async(&self, store: &mut Store<CallCtx>) -> wasmtime::Result<Tool> {
        let instance = self.instance_pre.instantiate_async(&mut *store).await?;
        let handler = match &self.exports {
            Exports::V0_1(_, handler) => Handler::V0_1(handler.load(&mut *store, &instance)?),
            Exports::V0_2(_, handler) => Handler::V0_2(handler.load(&mut *store, &instance)?),
            Exports::V0_3(_, handler) => Handler::V0_3(handler.load(&mut *store, &instance)?),
        };
        Ok(Tool { instance, exports: self.exports.clone(), handler })
    }
}

/// A live instance of a tool component.
pub(crate) struct Tool {
    instance: Instance,
    exports: Exports,
    handler: Handler,
}

impl Tool {
    /// `handler.call`: the tool's JSON text, or its own error as a
    /// [`airlock_core::outcome::ErrorKind::ToolError`] failure. `Err` is a trap.
    pub(crate) async fn call(
        &self,
        store: &mut Store<CallCtx>,
        arguments: &str,
    ) -> wasmtime::Result<Result<String, Failure>> {
        // The guest's code and message are checked and cleaned here, where
        // they first become host data.
        let tool_error = |message: String, code: Option<String>| Failure::tool_error(&message, code.as_deref());
        Ok(match &self.handler {
            Handler::V0_1(handler) => {
                handler.call_call(store, arguments).await?.map_err(|err| tool_error(err.message, err.code))
            }
            Handler::V0_2(handler) => {
                handler.call_call(store, arguments).await?.map_err(|err| tool_error(err.message, err.code))
            }
            Handler::V0_3(handler) => {
                handler.call_call(store, arguments).await?.map_err(|err| tool_error(err.message, err.code))
            }
        })
    }

    /// Every `metadata` function, in order. `Err` is a trap.
    pub(crate) async fn metadata(&self, store: &mut Store<CallCtx>) -> wasmtime::Result<RawMetadata> {
        macro_rules! read {
            ($indices:expr) => {{
                let meta = $indices.load(&mut *store, &self.instance)?;
                let name = meta.call_name(&mut *store).await?;
                let description = meta.call_description(&mut *store).await?;
                let parameters = meta.call_parameters(&mut *store).await?;
                let output = meta.call_output(&mut *store).await?;
                RawMetadata { name, description, parameters, output }
            }};
        }
        Ok(match &self.exports {
            Exports::V0_1(metadata, _) => read!(metadata),
            Exports::V0_2(metadata, _) => read!(metadata),
            Exports::V0_3(metadata, _) => read!(metadata),
        })
    }
}
