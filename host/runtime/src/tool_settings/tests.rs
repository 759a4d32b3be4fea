//! `[tools.NAME]` and `[tools.NAME.sessions]`: names, pins, grants,
//! sessions and per-tool limits, what is refused and how the error says
//! it, and the generated documents.

use super::*;
use crate::grants::{DirAccess, EnvGrant};
use airlock_settings::shared_table::SharedTable;
use serde::Deserialize;
use std::time::Duration;

/// A file with only `[defaults]` and `[tools.NAME]` tables, the latter with
/// the runtime's keys and the limit keys only.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    defaults: RawLimits,
    #[serde(default)]
    tools: BTreeMap<String, SharedTable<(RawLimits, RawTool)>>,
}

/// Every tool of `text`, over its `[defaults]`, relative paths from `.`.
fn parse(text: &str) -> Result<BTreeMap<String, ToolConfig>, String> {
    let file: File = toml::from_str(text).map_err(|err| err.to_string())?;
    let defaults = Limits::from_raw(Limits::default(), &file.defaults, "[defaults]")?;
    let resolve = |path: &Path| Path::new(".").join(path);
    file.tools
        .into_iter()
        .map(|(name, SharedTable((limits, raw)))| {
            Ok((name.clone(), ToolConfig::from_raw(&name, raw, &limits, defaults, &resolve)?))
        })
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
    // The keys of [tools.NAME] are documented with the pipeline's, by the
    // host, which reads the whole table.
    SESSIONS.ensure_documents("book/src/operator/sessions.md").unwrap();
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
    check_err("[tools.echo]\ntimeout_ms = \"x\"", &["line 2", "timeout_ms = \"x\"", "expected u64"]);
    check_err("[tools.echo]\nallow_tags = true", &["[tools.echo] allow_tags", "oci://"]);
}

#[test]
fn a_pin_is_kept_in_lowercase() {
    let pin = "AB".repeat(32);
    let tools = parse(&format!("[tools.echo]\nsha256 = \"{pin}\"\ncomponent = \"echo.wasm\"")).unwrap();
    let echo = &tools["echo"];
    assert_eq!(echo.settings.sha256.as_deref(), Some("ab".repeat(32).as_str()));
    assert_eq!(echo.component.as_deref(), Some(Path::new("./echo.wasm")));
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
    let text = "[defaults]\ntimeout_ms = 500\n[tools.echo]\nfuel = 1000\n";
    let echo = settings(text, "echo");
    assert_eq!(echo.limits.timeout, Duration::from_millis(500));
    assert_eq!(echo.limits.fuel, 1000);
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
