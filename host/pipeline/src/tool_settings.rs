//! `[tools.NAME]` as the operator writes it, and the pipeline's keys of it.
//!
//! One table, whose keys three owners declare and check: the limit keys of
//! `[defaults]` ([`airlock_settings::limits`]), the keys that load and run
//! the tool ([`airlock_runtime::tool_settings`]: component, pins, grants,
//! sessions) and, here ([`PIPELINE`]), the keys the pipeline enforces: the
//! confirmation card and the presented result (`pipeline/confirm.rs`,
//! `pipeline.rs`), how and by whom an asked call is approved
//! (`pipeline/confirm.rs`, `approval.rs`), whether the tool has side
//! effects (the policy's default and the write-ahead record), whether its
//! calls may share the scheduler (`pipeline/schedule.rs`), whether it is
//! offered deferred (`projection.rs`) and whether its calls may run as MCP
//! tasks, with what deadline (`task.rs`). The table is read into the three
//! parts at once ([`RawTool`]), each value straight from the file so that
//! an error keeps its line, and a key none of them declares is refused.
//!
//! None of it comes from the component, and none of it but `defer_loading`
//! reaches a model (through the projection).

use airlock_policy::card::Template;
use airlock_policy::confirm::{ApprovalMode, Approver};
use airlock_runtime::tool_settings::TOOL;
use airlock_settings::key_doc::{KeyDoc, Value};
use airlock_settings::limits::{Limits, RawLimits};
use airlock_settings::shared_table::SharedTable;
use std::path::{Path, PathBuf};

mod task;

pub use task::{MAX_TASK_TIMEOUT, TaskSupport};

airlock_settings::section! {
    /// The pipeline's keys of `[tools.NAME]`; the runtime's keys of the same
    /// table are [`airlock_runtime::tool_settings::TOOL`].
    pub const PIPELINE: Section<PipelineSettings> = "tools.NAME";
    /// The pipeline's keys of `[tools.NAME]` as written, one part of
    /// [`RawTool`].
    pub struct RawPipeline {}
    hand {
        /// the confirmation card a person approves, rendered from the validated arguments and the caller
        confirm: Option<String>, Reload, accepts "a card template", unset "not set: the generic question",
            example "\"Write {content|json} to {path} for {caller.principal}\"";
        /// one line for logs and UIs, rendered from the result; never sent to a model
        present_result: Option<String>, Reload, accepts "a one-line card template", unset "not set",
            example "\"Wrote {bytes_written} bytes to {path}\"";
        /// how a call the policy asks about is confirmed for this tool: by the MCP client, on Airlock's page, or on the page when one is served
        approvals: Option<String>, Reload, accepts "`\"client\"`, `\"page\"` or `\"page-when-possible\"`",
            unset "`[approvals] mode`", example "\"page\"";
        /// who must approve this tool's calls instead of the caller (four eyes): a principal, or a Cedar entity whose members may; a policy's `@approver` comes first
        approver: Option<String>, Reload, accepts "a principal (`\"carol\"`) or an entity (`\"Role::\\\"supervisors\\\"\"`)",
            unset "not set: the caller (or the policy's `@approver`)", example "\"Role::\\\"supervisors\\\"\"";
        /// whether a call may run as an MCP task (its result kept for the client to fetch): never, for a client that declared the tasks extension, or only as a task
        task: Option<String>, Reload, accepts "`\"never\"`, `\"optional\"` or `\"required\"`",
            unset "`\"never\"`: every call runs while the client waits",
            show |t: &PipelineSettings| Some(Value::Text(t.task.as_str().to_owned())),
            example "\"optional\"";
    }
    /// How the pipeline treats the calls of one tool: the operator's
    /// settings the stages read. None of it comes from the component.
    /// `PipelineSettings::default()` is a tool with no operator settings at
    /// all (no side effects); a `[tools.NAME]` table that does not say
    /// otherwise has side effects.
    #[derive(Debug, Clone, Default, PartialEq, Eq)]
    group pub struct PipelineSettings (RawPipelineKeys) at () {
        /// The confirmation card (`confirm`), rendered from the validated
        /// arguments and the caller when a call asks for confirmation.
        pub confirm: Option<Template> = None,
        /// The one-line presentation of a result (`present_result`) for logs
        /// and UIs, rendered from the structured result; never sent to a model.
        pub present_result: Option<Template> = None,
        /// How this tool's asked calls are confirmed (`approvals`); `None`:
        /// `[approvals] mode`.
        pub approvals: Option<ApprovalMode> = None,
        /// Who must approve this tool's asked calls (`approver`) when the
        /// policy names no `@approver`; `None`: the caller.
        pub approver: Option<Approver> = None,
        /// Whether a call may run as an MCP task (`task`).
        pub task: TaskSupport = TaskSupport::Never;
        /// calls may run in parallel with other calls that may
        concurrency_safe => concurrency_safe: bool = false, Reload;
        /// the tool changes something outside itself (writes, sends, pays): the default policy asks first
        side_effect => side_effect: bool = true, Reload;
        /// offer the tool to models as deferred (loaded on demand by providers with tool search)
        defer_loading => defer_loading: bool = false, Reload;
        /// send this tool's log lines to the MCP client too, as notifications/message (a client may show them to the model); off: the operator's log only
        client_log => client_log: bool = false, Reload;
        /// the deadline of a call that runs as a task, instead of `timeout_ms` (never below it); fuel that follows the deadline follows this one
        task_timeout_ms => task_timeout: Option<std::time::Duration> = None, Reload,
            range Millis 1..=MAX_TASK_TIMEOUT.as_millis() as u64, unset "the tool's `timeout_ms`", example "600000";
    }
}

impl PipelineSettings {
    /// The limits of one call of a tool whose own are `limits`: those, or,
    /// for a call that runs as a task of a tool whose calls may be tasks,
    /// the same with its `task_timeout_ms` (when set) as the deadline.
    pub fn limits_for(&self, limits: Limits, as_task: bool) -> Limits {
        match self.task_timeout {
            Some(timeout) if as_task && self.task.allows_tasks() => limits.with_deadline(timeout),
            _ => limits,
        }
    }
}

/// `[tools.NAME]` as written: its limit keys, the runtime's keys and the
/// pipeline's, each part reading its own keys; any other key is refused
/// ("unknown field `KEY`").
pub type RawTool = SharedTable<(RawLimits, airlock_runtime::tool_settings::RawTool, RawPipeline)>;

/// One `[tools.NAME]` table, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolConfig {
    /// What the runtime needs: where the component is, and the settings it
    /// is loaded and run under.
    pub runtime: airlock_runtime::tool_settings::ToolConfig,
    /// How the pipeline treats its calls.
    pub pipeline: PipelineSettings,
}

impl ToolConfig {
    /// Check `[tools.NAME]` over the `defaults` limits, each part by its
    /// owner; relative paths are resolved by `resolve`. A tool that does
    /// not say otherwise has side effects.
    ///
    /// # Errors
    ///
    /// The first key refused, as `[tools.NAME] KEY ...` with what is
    /// accepted.
    pub fn from_raw(
        name: &str,
        raw: RawTool,
        defaults: Limits,
        resolve: &dyn Fn(&Path) -> PathBuf,
    ) -> Result<ToolConfig, String> {
        let SharedTable((limits, runtime, pipeline)) = raw;
        let runtime = airlock_runtime::tool_settings::ToolConfig::from_raw(name, runtime, &limits, defaults, resolve)?;
        let pipeline = PipelineSettings::from_raw(name, &pipeline)?;
        task::check(&format!("[tools.{name}]"), pipeline.task, pipeline.task_timeout, &runtime.settings.limits)?;
        Ok(ToolConfig { runtime, pipeline })
    }
}

impl PipelineSettings {
    /// Check the pipeline's keys of `[tools.NAME]`.
    ///
    /// # Errors
    ///
    /// A template that does not parse, an unknown approval mode, an
    /// approver that is neither a principal nor an entity, each as
    /// `[tools.NAME] KEY = ...` with what is accepted.
    fn from_raw(name: &str, raw: &RawPipeline) -> Result<PipelineSettings, String> {
        let ctx = format!("[tools.{name}]");
        let mut settings = PipelineSettings::from_keys(&raw.into(), &PipelineSettings::defaults(), &ctx)?;
        // Templates are checked now: a call never meets a syntax error.
        let template = |key: &str, text: Option<&String>, one_line: bool| {
            text.map(|t| Template::parse(t, one_line).map_err(|m| format!("{ctx} {key} = {t:?} {m}"))).transpose()
        };
        settings.confirm = template("confirm", raw.confirm.as_ref(), false)?;
        settings.present_result = template("present_result", raw.present_result.as_ref(), true)?;
        settings.approvals = raw
            .approvals
            .as_deref()
            .map(ApprovalMode::parse)
            .transpose()
            .map_err(|m| format!("{ctx} approvals = {m}"))?;
        settings.approver =
            raw.approver.as_deref().map(Approver::parse).transpose().map_err(|m| format!("{ctx} approver = {m}"))?;
        settings.task = raw
            .task
            .as_deref()
            .map(TaskSupport::parse)
            .transpose()
            .map_err(|m| format!("{ctx} task = {m}"))?
            .unwrap_or_default();
        Ok(settings)
    }
}

/// Every key of `[tools.NAME]` but the limits, as the guide and `airlock
/// config` list them: the runtime's, then the pipeline's.
#[cfg(test)]
pub(crate) fn keys() -> Vec<KeyDoc> {
    TOOL.docs().into_iter().chain(PIPELINE.docs()).collect()
}

/// Each key of [`keys`] with its value in `tool` (`None`: not set, or only
/// in the table as written).
pub(crate) fn values(tool: &ToolConfig) -> Vec<(KeyDoc, Option<Value>)> {
    let runtime = TOOL.keys.iter().map(|key| (key.doc, (key.show)(&tool.runtime)));
    let pipeline = PIPELINE.keys.iter().map(|key| (key.doc, (key.show)(&tool.pipeline)));
    runtime.chain(pipeline).collect()
}

#[cfg(test)]
mod tests;
