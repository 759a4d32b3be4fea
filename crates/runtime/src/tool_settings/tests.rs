//! `[tools.NAME]` and `[tools.NAME.sessions]`: names, pins, grants,
//! sessions and per-tool limits, what is refused and how the error says
//! it, and the generated documents.

use super::*;
use crate::grants::{DirAccess, EnvGrant};
use serde::Deserialize;
use std::time::Duration;

/// A file with only `[defaults]` and `[tools.NAME]` tables.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    defaults: RawLimits,
    #[serde(default)]
    tools: BTreeMap<String, RawTool>,
}

/// Every tool of `text`, over its `[defaults]`, relative paths from `.`.
fn parse(text: &str) -> Result<BTreeMap<String, ToolConfig>, String> {
    let file: File = toml::from_str(text).map_err(|err| err.to_string())?;
    let defaults = Limits::from_raw(Limits::default(), &file.defaults, "[defaults]")?;
    let resolve = |path: &Path| Path::new(".").join(path);
    file.tools
        .into_iter()
        .map(|(name, raw)| Ok((name.clone(), ToolConfig::from_raw(&name, raw, defaults, &resolve)?)))
        .collect()
}

/// The settings of the one tool `name` in `text`.
fn settings(text: &str, name: &str) -> ToolSettings {
    parse(text).unwrap().remove(name).unwrap_or_else(|| panic!("no [tools.{name}]")).settings
}

/// `text` is refused with a message containing every one of `expect`.
#[track_caller]
fn check_err(text: &str, expect: &[&str]) {
    let err = parse(text).err().unwrap_or_else(|| panic!("accepted: {text}"));
    for needle in expect {
        assert!(err.contains(needle), "{err:?} should contain {needle:?}");
    }
}

fn check(name: &str, ok: bool) {
    assert_eq!(check_name(name).is_ok(), ok, "{name:?}");
}

#[test]
fn generated_docs_are_current() {
    airlock_settings::generated::all([
        TOOL.ensure_documents("book/src/operator/configuration.md"),
        SESSIONS.ensure_documents("book/src/operator/sessions.md"),
    ])
    .unwrap();
}

#[test]
fn names() {
    check("read_file", true);
    check("a-B_9", true);
    check(&"x".repeat(64), true);
    check(&"x".repeat(65), false);
    check("", false);
    check("bad name!", false);
    check("ünïcode", false);
}

#[test]
fn config_errors_name_the_tool_the_key_and_what_is_accepted() {
    check_err("[tools.echo]\ntimeout = 5", &["[tools.echo]", "unknown field `timeout`"]);
    check_err("[tools.\"bad name\"]", &["bad name", "^[A-Za-z0-9_-]"]);
    check_err("[tools.echo]\nsha256 = \"abc\"", &["[tools.echo]", "sha256", "64 hex"]);
    check_err("[tools.echo]\npin = \"abc\"", &["[tools.echo] pin = \"abc\" is not a revision", "sha256:"]);
    let upper = format!("[tools.echo]\npin = \"sha256:{}\"", "AB".repeat(32));
    check_err(&upper, &["is not a revision", "lowercase hex"]);
    let pin = format!("sha256:{}", "ab".repeat(32));
    assert_eq!(settings(&format!("[tools.echo]\npin = \"{pin}\""), "echo").pin, Some(pin));
    check_err(
        "[tools.echo]\nmax_open_files = 1\ndirs = [{ host = \".\", guest = \"/w\" }]",
        &["max_open_files = 1", "1 granted directories", "accepted 2..="],
    );
    check_err("[tools.echo]\ndirs = 5", &["line 2", "dirs = 5", "expected a sequence"]);
    check_err(
        "[tools.echo]\nconfirm = \"Pay {amount\"",
        &["[tools.echo] confirm = \"Pay {amount\"", "character 5", "not closed"],
    );
    check_err(
        "[tools.echo]\npresent_result = \"{id|shout}\"",
        &["[tools.echo] present_result", "unknown filter \"shout\"", "accepted are last4"],
    );
    check_err("[tools.echo]\npresent_result = \"a\\nb\"", &["present_result", "line break at character 2"]);
    check_err("[tools.echo]\nallow_tags = true", &["[tools.echo] allow_tags", "oci://"]);
}

#[test]
fn a_pin_is_kept_in_lowercase_and_tools_have_side_effects_unless_told() {
    let pin = "AB".repeat(32);
    let tools = parse(&format!("[tools.echo]\nsha256 = \"{pin}\"\ncomponent = \"echo.wasm\"")).unwrap();
    let echo = &tools["echo"];
    assert_eq!(echo.settings.sha256.as_deref(), Some("ab".repeat(32).as_str()));
    assert_eq!(echo.component.as_deref(), Some(Path::new("./echo.wasm")));
    assert!(echo.settings.side_effect);
    assert!(!echo.settings.concurrency_safe && !echo.settings.defer_loading);
}

#[test]
fn grants_are_parsed_and_canonicalized() {
    let dir = std::env::temp_dir();
    let text =
        format!("[tools.rf]\ndirs = [{{ host = {:?}, guest = \"/data\" }}]\nenv = {{ LANG = \"C\" }}\n", dir.display());
    let grants = settings(&text, "rf").grants;
    assert_eq!(grants.dirs[0].access, DirAccess::ReadOnly, "directories are read-only unless rw");
    assert_eq!(grants.dirs[0].host_path, dir.canonicalize().unwrap());
    assert_eq!(grants.env, vec![EnvGrant { name: "LANG".into(), value: "C".into() }]);
}

#[test]
fn grant_errors_name_the_grant_and_what_is_accepted() {
    check_err(
        "[tools.echo]\ndirs = [{ host = \".\", guest = \"/w\", access = \"rwx\" }]",
        &["[tools.echo]", "access", "\"ro\" or \"rw\""],
    );
    check_err("[tools.echo]\ndirs = [{ host = \".\", guest = \"w\" }]", &["guest", "absolute"]);
    check_err("[tools.echo]\ndirs = [{ host = \"/no/such/dir\", guest = \"/w\" }]", &["/no/such/dir"]);
    check_err("[tools.echo]\ndirs = [{ host = \"/\", guest = \"/w\" }]", &["root directory"]);
    check_err("[tools.echo]\nenv_from_host = [\"AIRLOCK_SURELY_UNSET_VAR\"]", &["AIRLOCK_SURELY_UNSET_VAR"]);
}

#[test]
fn sessions_are_off_unless_configured() {
    let text = "[tools.a]\nmemory_mib = 64\n[tools.a.sessions]\nidle_secs = 9\n[tools.b]\n[tools.c.sessions]\nenabled = false\n";
    let a = settings(text, "a").sessions.unwrap();
    assert_eq!((a.max_live, a.idle, a.memory_bytes), (DEFAULT_MAX_LIVE, Duration::from_secs(9), 64 << 20));
    assert_eq!(settings(text, "b").sessions, None);
    assert_eq!(settings(text, "c").sessions, None);
}

#[test]
fn session_errors_name_the_tool_the_key_and_the_range() {
    check_err("[tools.echo.sessions]\nmax_live = 0", &["[tools.echo.sessions] max_live = 0", "accepted 1..="]);
    check_err("[tools.echo.sessions]\nidle_secs = 0", &["[tools.echo.sessions] idle_secs", "accepted"]);
    check_err("[tools.echo.sessions]\nmemory_mib = 0", &["memory_mib", "accepted"]);
    check_err("[tools.echo.sessions]\nttl = 5", &["ttl"]);
}

#[test]
fn per_tool_limits_override_the_defaults() {
    let text =
        "[defaults]\ntimeout_ms = 500\n[tools.echo]\nfuel = 1000\nside_effect = false\nconcurrency_safe = true\n";
    let echo = settings(text, "echo");
    assert_eq!(echo.limits.timeout, Duration::from_millis(500));
    assert_eq!(echo.limits.fuel, 1000);
    assert!(echo.concurrency_safe && !echo.side_effect);
    let echo = settings("[tools.echo]\nhost_memory_mib = 16\nmax_open_files = 8\n", "echo").limits;
    assert_eq!((echo.host_memory_bytes, echo.max_open_files), (16 << 20, 8));
    let text = "[defaults]\ntimeout_ms = 500\n[tools.a]\ntimeout_ms = 2000\n[tools.b]\nfuel = 7\ntimeout_ms = 2000\n";
    assert_eq!(settings(text, "a").limits.fuel, Limits::fuel_for(Duration::from_secs(2)), "unset fuel follows");
    assert_eq!(settings(text, "b").limits.fuel, 7, "set fuel is kept");
    assert_eq!(settings("[defaults]\nfuel = 5\n[tools.a]\ntimeout_ms = 2000\n", "a").limits.fuel, 5);
    check_err("[tools.echo]\ntimeout_ms = 0", &["[tools.echo] timeout_ms = 0", "accepted"]);
    check_err("[tools.echo]\nhost_memory_mib = 0", &["[tools.echo] host_memory_mib = 0", "accepted 4..=4096"]);
    check_err("[tools.echo]\nmax_write_bytes = 68719476737", &["[tools.echo]", "accepted 0..=68719476736"]);
}

#[test]
fn a_tool_names_its_approval_mode_and_approver() {
    let text = "[tools.pay]\napprovals = \"page\"\napprover = 'Role::\"supervisors\"'\n";
    let pay = settings(text, "pay");
    assert_eq!(pay.approvals, Some(ApprovalMode::Page));
    assert_eq!(pay.approver, Some(Approver::Group("Airlock::Role::\"supervisors\"".into())));
    let plain = settings("[tools.pay]\n", "pay");
    assert_eq!((plain.approvals, plain.approver), (None, None), "unset: [approvals] mode and the caller");
    assert_eq!(
        settings("[tools.pay]\napprover = \"carol\"\n", "pay").approver,
        Some(Approver::Principal("carol".into()))
    );
    check_err(
        "[tools.pay]\napprovals = \"browser\"\n",
        &["[tools.pay] approvals = \"browser\" is not a mode", "accepted \"client\", \"page\", \"page-when-possible\""],
    );
    check_err(
        "[tools.pay]\napprover = 'Role::\"'\n",
        &["[tools.pay] approver = ", "is not an entity such as Role::\"supervisors\""],
    );
}

#[test]
fn task_keys_say_when_a_call_is_a_task_and_its_deadline() {
    let plain = settings("[tools.echo]", "echo");
    assert_eq!(plain.task, TaskSupport::Never, "unset: calls run as without tasks");
    assert_eq!(plain.limits_for(true), plain.limits, "no task deadline without tasks");
    let slow = settings("[tools.slow]\ntask = \"optional\"\ntimeout_ms = 5000\ntask_timeout_ms = 600000", "slow");
    assert_eq!(slow.task, TaskSupport::Optional);
    assert_eq!(slow.limits_for(false).timeout, Duration::from_secs(5), "a call that waits keeps timeout_ms");
    let task = slow.limits_for(true);
    assert_eq!(task.timeout, Duration::from_secs(600), "a task gets task_timeout_ms");
    assert_eq!(task.fuel, Limits::fuel_for(Duration::from_secs(600)), "fuel follows the task's deadline");
    let required = settings("[tools.job]\ntask = \"required\"", "job");
    assert_eq!(required.limits_for(true), required.limits, "without task_timeout_ms a task keeps timeout_ms");
    check_err(
        "[tools.a]\ntask = \"sometimes\"",
        &["[tools.a] task = \"sometimes\"", "\"never\", \"optional\", \"required\""],
    );
    check_err("[tools.a]\ntask_timeout_ms = 60000", &["[tools.a] task_timeout_ms = 60000", "task is \"never\""]);
    check_err(
        "[tools.a]\ntask = \"optional\"\ntimeout_ms = 5000\ntask_timeout_ms = 1000",
        &["[tools.a] task_timeout_ms = 1000 is below timeout_ms = 5000"],
    );
    check_err(
        "[tools.a]\ntask = \"optional\"\ntask_timeout_ms = 0",
        &["task_timeout_ms = 0 is out of range", "1..=86400000 ms"],
    );
}
