//! The task keys of `[tools.NAME]`: whether a call to the tool may run as
//! an MCP task (the `io.modelcontextprotocol/tasks` extension), and the
//! longer deadline it then gets.
//!
//! A task is a call whose result is kept for the client to fetch later; it
//! goes through every stage of the pipeline like any other call. What
//! differs is the deadline: `task_timeout_ms` replaces `timeout_ms` for a
//! call that runs as a task, and is never below it.

use airlock_settings::limits::Limits;
use std::time::Duration;

/// Most `task_timeout_ms` accepted: a day.
pub const MAX_TASK_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

/// Whether a call to a tool becomes a task.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TaskSupport {
    /// Never: every call runs while the client waits (as without tasks).
    #[default]
    Never,
    /// For a client that declared the tasks extension, the call runs as a
    /// task; any other client waits for it as before.
    Optional,
    /// Only as a task: a client that did not declare the tasks extension is
    /// refused (MCP error `-32021`).
    Required,
}

impl TaskSupport {
    /// As the operator writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskSupport::Never => "never",
            TaskSupport::Optional => "optional",
            TaskSupport::Required => "required",
        }
    }

    /// From what the operator wrote.
    ///
    /// # Errors
    ///
    /// Anything but the three names, saying which are accepted.
    pub fn parse(text: &str) -> Result<TaskSupport, String> {
        match text {
            "never" => Ok(TaskSupport::Never),
            "optional" => Ok(TaskSupport::Optional),
            "required" => Ok(TaskSupport::Required),
            other => Err(format!("{other:?} is not accepted: accepted \"never\", \"optional\", \"required\"")),
        }
    }

    /// Whether a call may run as a task at all.
    pub fn allows_tasks(self) -> bool {
        self != TaskSupport::Never
    }
}

/// `task_timeout` checked against the tool's own deadline and task
/// support: it is only for a tool whose calls may be tasks, and never
/// shorter than `timeout_ms` (a task is the slower path, not a way to cut
/// the deadline). Errors name the keys after `ctx`, the tool's table.
///
/// # Errors
///
/// `task_timeout_ms` set on a tool whose `task` is `"never"`, or below its
/// `timeout_ms`.
pub(super) fn check(
    ctx: &str,
    task: TaskSupport,
    task_timeout: Option<Duration>,
    limits: &Limits,
) -> Result<(), String> {
    let Some(task_timeout) = task_timeout else { return Ok(()) };
    if !task.allows_tasks() {
        return Err(format!(
            "{ctx} task_timeout_ms = {} applies only to calls that run as tasks, and task is \"never\": set task = \
             \"optional\" or \"required\", or remove task_timeout_ms",
            task_timeout.as_millis()
        ));
    }
    if task_timeout < limits.timeout {
        return Err(format!(
            "{ctx} task_timeout_ms = {} is below timeout_ms = {}: a call that runs as a task gets at least the \
             tool's own deadline; raise task_timeout_ms or remove it",
            task_timeout.as_millis(),
            limits.timeout.as_millis()
        ));
    }
    Ok(())
}
