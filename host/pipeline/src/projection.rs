//! The trust boundary for schemas: what a model is told about a tool.
//!
//! [`project`] is the one function that builds the model-facing view of a
//! tool. It destructures [`Tool`] (the component the runtime loaded and the
//! pipeline's settings) by name and copies only the allowed fields; the
//! host-side types have no `Serialize`, so nothing else can leak by
//! accident. Limits, grants, `concurrency_safe`, `side_effect`, the
//! digest, the output schema and the source path stay on the host. The MCP
//! encoding may carry the output schema, hints derived from operator
//! settings and the tool's revision; [`mcp_extras`] is the one function
//! that selects those.
//!
//! The revision is not host-only data: it is a hash of what the model
//! already sees (name, description, schemas) and of the component digest,
//! from which neither the component's bytes nor its path nor any operator
//! setting can be read back. A client uses it to tell that a tool changed
//! under the same name.

use crate::session;
use crate::tool::Tool;
use crate::tool_settings::PipelineSettings;
use airlock_runtime::loader::LoadedTool;
use airlock_runtime::schema_portable;
use serde::Serialize;
use serde_json::Value;

/// A tool as a model sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelTool {
    /// Tool name.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of the arguments.
    pub parameters: Value,
    /// The operator deferred this tool (providers with tool search load it
    /// on demand).
    pub defer_loading: bool,
}

/// Build the model-facing view of a tool: name, description, parameters (in
/// their portable form, `schema_portable.rs`) and `defer_loading`, and
/// nothing else.
pub fn project(tool: &Tool) -> ModelTool {
    let Tool { loaded, pipeline } = tool;
    let LoadedTool { name, description, parameters, .. } = loaded;
    let PipelineSettings { defer_loading, .. } = pipeline;
    ModelTool {
        name: name.clone(),
        description: description.clone(),
        parameters: schema_portable::portable(parameters.json()),
        defer_loading: *defer_loading,
    }
}

/// What the MCP encoding adds to [`ModelTool`]: the declared output schema
/// and behaviour hints derived from operator settings.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct McpExtras {
    /// The tool's declared output schema (MCP `outputSchema`).
    pub output_schema: Option<Value>,
    /// `readOnlyHint`: the operator marked the tool `side_effect = false`.
    pub read_only: bool,
    /// The tool keeps sessions (`[tools.NAME.sessions]`) and the host is a
    /// fleet replica (`[fleet]`): its `session_id` parameter is marked for mirroring into the `Mcp-Param-Session` HTTP
    /// header (MCP 2026-07-28 `x-mcp-header`), which a load balancer can
    /// hash to keep a session on one replica.
    pub session_header: bool,
    /// The tool's revision (`sha256:HEX`, [`LoadedTool::revision`]), sent
    /// as `_meta["airlock/revision"]` so that a client can tell a changed
    /// tool from the one it trusted.
    pub revision: String,
    /// Calls may still name the session `session`, the deprecated name of
    /// `session_id` ([`session::accepts_deprecated_name`]): the MCP schema
    /// lists it, marked deprecated, so that clients which check arguments
    /// against the schema keep accepting calls that use it.
    pub deprecated_session: bool,
}

/// Select the MCP-only extras of a tool; `fleet`: replicas behind a load
/// balancer (`[fleet]`), which hash the session header.
pub fn mcp_extras(tool: &Tool, fleet: bool) -> McpExtras {
    let Tool { loaded, pipeline } = tool;
    let LoadedTool { output, settings, revision, .. } = loaded;
    let PipelineSettings { side_effect, .. } = pipeline;
    McpExtras {
        revision: revision.clone(),
        output_schema: output.as_ref().map(|schema| schema_portable::portable(schema.json())),
        read_only: !*side_effect,
        session_header: fleet && settings.sessions.is_some(),
        deprecated_session: session::accepts_deprecated_name(loaded),
    }
}
