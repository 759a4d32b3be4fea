//! A tool as the host serves it: the component the runtime loaded, and
//! the operator's settings for the pipeline's stages.
//!
//! The runtime knows a tool as a [`LoadedTool`] (its definition, its
//! compiled component, the settings its sandbox runs under) and nothing of
//! the pipeline above it; the pipeline's keys of `[tools.NAME]`
//! ([`PipelineSettings`]) join it here, once, when the registry is built,
//! so that a call reads both from the one tool it resolved.

use crate::tool_settings::PipelineSettings;
use airlock_runtime::loader::LoadedTool;
use airlock_settings::limits::Limits;
use std::ops::Deref;

/// A loaded tool with the pipeline's settings of it.
pub struct Tool {
    /// The component as the runtime loaded it, with the settings of its
    /// sandbox.
    pub loaded: LoadedTool,
    /// How the pipeline treats its calls.
    pub pipeline: PipelineSettings,
}

impl Tool {
    /// `loaded` with the pipeline's settings `pipeline`.
    pub fn new(loaded: LoadedTool, pipeline: PipelineSettings) -> Self {
        Tool { loaded, pipeline }
    }

    /// The limits of one call: the tool's own, or, for a call that runs as
    /// an MCP task (`as_task`), the same with the tool's
    /// `task_timeout_ms` as the deadline when it allows tasks and sets one.
    pub fn limits_for(&self, as_task: bool) -> Limits {
        self.pipeline.limits_for(self.loaded.settings.limits, as_task)
    }
}

/// A tool is its loaded component to everything that only runs it (the
/// stages that parse, validate, execute and check a call, sessions,
/// telemetry): they read its name, schemas and sandbox settings as they
/// would a `LoadedTool`'s.
impl Deref for Tool {
    type Target = LoadedTool;

    fn deref(&self) -> &LoadedTool {
        &self.loaded
    }
}

impl std::fmt::Debug for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool").field("loaded", &self.loaded).field("pipeline", &self.pipeline).finish()
    }
}
