//! A tool component bound to the contract version it targets, in the
//! sandbox's store: pre-instantiated ([`ToolPre`]) and live ([`Tool`]).

use super::{CallCtx, RawMetadata};
use crate::bindings::{Contract, v0_1, v0_2, v0_3};
use airlock_core::outcome::Failure;
use wasmtime::Store;
use wasmtime::component::InstancePre;

/// A component pre-instantiated for the world it targets.
#[derive(Clone)]
pub struct ToolPre(Pre);

/// The pre-instance of each contract version.
#[derive(Clone)]
enum Pre {
    V0_1(v0_1::ToolPre<CallCtx>),
    V0_2(v0_2::ToolPre<CallCtx>),
    V0_3(v0_3::ToolPre<CallCtx>),
}

impl ToolPre {
    /// Bind the exports of `instance_pre`, newest contract first.
    ///
    /// # Errors
    ///
    /// The component fits no version; the error is the newest version's.
    pub(crate) fn new(instance_pre: InstancePre<CallCtx>) -> wasmtime::Result<Self> {
        let newest = match v0_3::ToolPre::new(instance_pre.clone()) {
            Ok(pre) => return Ok(Self(Pre::V0_3(pre))),
            Err(newest) => newest,
        };
        if let Ok(pre) = v0_2::ToolPre::new(instance_pre.clone()) {
            return Ok(Self(Pre::V0_2(pre)));
        }
        v0_1::ToolPre::new(instance_pre).map(|pre| Self(Pre::V0_1(pre))).map_err(|_| newest)
    }

    /// The contract version the component targets.
    pub(crate) fn contract(&self) -> Contract {
        match self.0 {
            Pre::V0_1(_) => Contract::V0_1,
            Pre::V0_2(_) => Contract::V0_2,
            Pre::V0_3(_) => Contract::V0_3,
        }
    }

    /// The engine the component was compiled for.
    pub(crate) fn engine(&self) -> &wasmtime::Engine {
        match &self.0 {
            Pre::V0_1(pre) => pre.engine(),
            Pre::V0_2(pre) => pre.engine(),
            Pre::V0_3(pre) => pre.engine(),
        }
    }

    /// A new instance in `store`.
    pub(crate) async fn instantiate_async(&self, store: &mut Store<CallCtx>) -> wasmtime::Result<Tool> {
        Ok(match &self.0 {
            Pre::V0_1(pre) => Tool::V0_1(pre.instantiate_async(store).await?),
            Pre::V0_2(pre) => Tool::V0_2(pre.instantiate_async(store).await?),
            Pre::V0_3(pre) => Tool::V0_3(pre.instantiate_async(store).await?),
        })
    }
}

/// A live instance of a tool component.
pub(crate) enum Tool {
    V0_1(v0_1::Tool),
    V0_2(v0_2::Tool),
    V0_3(v0_3::Tool),
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
            Self::V0_3(tool) => tool
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
            Self::V0_3(tool) => read!(tool.airlock_tool_metadata()),
        })
    }
}
