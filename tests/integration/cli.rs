//! The `airlock` binary, run as a user would: exit codes, JSON output,
//! dispatch round trips, inspect and audit.

use crate::support::{cache_dir, fixture, guests, temp_dir, tool};
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn binary() -> PathBuf {
    if let Some(bin) = std::env::var_os("AIRLOCK_BIN") {
        return PathBuf::from(bin);
    }
    PathBuf::from(env!("CARGO_BIN_EXE_airlock"))
}

/// Run `airlock ARGS` in `cwd` with the bundled tools, feeding `stdin`.
pub(crate) fn airlock(cwd: &Path, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(binary())
        .args(args)
        .current_dir(cwd)
        .env("AIRLOCK_TOOLS_DIR", guests())
        .env_remove("AIRLOCK_CONFIG")
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("airlock runs");
    child.stdin.take().expect("stdin").write_all(stdin.as_bytes()).expect("write stdin");
    child.wait_with_output().expect("airlock finishes")
}

pub(crate) fn json_out(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|err| {
        panic!(
            "stdout is not JSON ({err}): {}\nstderr: {}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

#[test]
fn call_prints_json_and_exit_codes_follow_the_outcome() {
    let dir = temp_dir();
    let ok = airlock(dir.path(), &["call", "echo", r#"{"text":"hi"}"#], "");
    assert_eq!(ok.status.code(), Some(0), "{}", String::from_utf8_lossy(&ok.stderr));
    assert_eq!(json_out(&ok), json!({"is_error": false, "kind": "ok", "content": {"text": "hi"}}));

    let bad = airlock(dir.path(), &["call", "echo", "{}"], "");
    assert_eq!(bad.status.code(), Some(1));
    let out = json_out(&bad);
    assert_eq!(out["kind"], "invalid_arguments");
    assert!(out["content"].as_str().unwrap_or_default().contains("\"text\" is a required property"));

    let usage = airlock(dir.path(), &["call"], "");
    assert_eq!(usage.status.code(), Some(2));
}

#[test]
fn ask_follows_yes_no_and_declines_without_a_terminal() {
    let dir = temp_dir();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).expect("mkdir");
    let config = format!(
        "[tools.write_file]\ncomponent = {:?}\nside_effect = true\ndirs = [{{ host = {:?}, guest = \"/work\", access = \"rw\" }}]\n",
        tool("write_file").display().to_string(),
        work.display().to_string()
    );
    std::fs::write(dir.path().join("airlock.toml"), config).expect("config");
    let args = r#"{"path":"/work/a.txt","content":"hello"}"#;
    let declined = airlock(dir.path(), &["call", "write_file", args], "");
    assert_eq!(declined.status.code(), Some(1));
    assert_eq!(json_out(&declined)["kind"], "declined");
    let no = airlock(dir.path(), &["call", "write_file", args, "--no"], "");
    assert_eq!(json_out(&no)["kind"], "declined");
    assert!(!work.join("a.txt").exists(), "a declined call runs nothing");
    let yes = airlock(dir.path(), &["call", "write_file", args, "--yes"], "");
    assert_eq!(yes.status.code(), Some(0), "{}", String::from_utf8_lossy(&yes.stdout));
    assert_eq!(std::fs::read_to_string(work.join("a.txt")).expect("written"), "hello");
}

#[test]
fn config_errors_exit_2_and_name_the_key() {
    let dir = temp_dir();
    std::fs::write(dir.path().join("bad.toml"), "[tools.echo]\ntimeout = 5\n").expect("write");
    let out = airlock(dir.path(), &["--config", "bad.toml", "tools"], "");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("bad.toml") && stderr.contains("timeout"), "{stderr}");
}

#[test]
fn tools_and_schema_list_the_bundled_tools() {
    let dir = temp_dir();
    let tools = airlock(dir.path(), &["tools"], "");
    assert_eq!(tools.status.code(), Some(0));
    let table = String::from_utf8_lossy(&tools.stdout);
    for name in ["echo", "read_file", "list_dir", "write_file", "search_files", "json_query", "http_fetch", "chart"] {
        assert!(table.contains(name), "{table}");
    }
    for format in ["openai", "openai-responses", "anthropic", "mcp"] {
        let out = airlock(dir.path(), &["schema", "--format", format], "");
        assert_eq!(out.status.code(), Some(0));
        assert!(json_out(&out).as_array().is_some_and(|a| a.len() >= 6), "{format}");
    }
    let strict = airlock(dir.path(), &["schema", "--format", "openai", "--strict"], "");
    let tools = json_out(&strict);
    // Every tool with a strict form is marked strict; http_fetch (`headers`
    // is a map with arbitrary keys) and json_query (`json` is any value)
    // have none and are emitted as they are.
    for tool in tools.as_array().expect("array") {
        let name = tool["function"]["name"].as_str().unwrap_or_default();
        let strict = !matches!(name, "http_fetch" | "json_query");
        assert_eq!(tool["function"]["strict"], json!(strict), "{name}");
    }
    // stderr is a report, a line per tool, that names no warning.
    assert_eq!(strict.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&strict.stderr);
    assert!(!stderr.contains("warning"), "{stderr}");
    let line = |tool: &str| stderr.lines().find(|l| l.split_whitespace().next() == Some(tool)).unwrap_or_default();
    for tool in ["echo", "read_file", "list_dir", "write_file", "search_files", "chart", "run_js", "run_python"] {
        assert!(line(tool).contains("strict: yes"), "{tool}: {stderr}");
    }
    assert!(line("http_fetch").contains("strict: no — `headers`: an object with arbitrary keys"), "{stderr}");
    assert!(line("json_query").contains("strict: no — `json`: an object with arbitrary keys"), "{stderr}");
}

#[test]
fn dispatch_round_trips_openai_and_anthropic_messages() {
    let dir = temp_dir();
    let openai = json!({"role": "assistant", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "echo", "arguments": "{\"text\":\"one\"}"}},
        {"id": "call_2", "type": "function", "function": {"name": "nope", "arguments": "{}"}}
    ]});
    let out = airlock(dir.path(), &["dispatch", "--format", "openai"], &openai.to_string());
    assert_eq!(out.status.code(), Some(1), "one call failed");
    let messages = json_out(&out);
    assert_eq!(messages[0], json!({"role": "tool", "tool_call_id": "call_1", "content": "{\"text\":\"one\"}"}));
    assert_eq!(messages[1]["tool_call_id"], "call_2");
    assert!(messages[1]["content"].as_str().unwrap_or_default().contains("unknown_tool"));

    let anthropic = json!({"role": "assistant", "content": [
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "toolu_1", "name": "echo", "input": {"text": "two"}},
        {"type": "tool_use", "id": "toolu_2", "name": "echo", "input": {}}
    ]});
    let out = airlock(dir.path(), &["dispatch", "--format", "anthropic"], &anthropic.to_string());
    let messages = json_out(&out);
    let blocks = &messages[0]["content"];
    assert_eq!(messages[0]["role"], "user");
    assert_eq!(blocks[0], json!({"type": "tool_result", "tool_use_id": "toolu_1", "content": "{\"text\":\"two\"}"}));
    assert_eq!(blocks[1]["is_error"], json!(true));

    let garbage = airlock(dir.path(), &["dispatch", "--format", "openai"], "not json");
    assert_eq!(garbage.status.code(), Some(2));
}

#[test]
fn inspect_describes_and_explains() {
    let dir = temp_dir();
    let out = airlock(dir.path(), &["inspect", &tool("echo").display().to_string()], "");
    assert_eq!(out.status.code(), Some(0));
    let report = json_out(&out);
    assert_eq!(report["world"], "airlock:tool/tool@0.3.0");
    assert_eq!(report["contract"], "0.3.0");
    assert_eq!(report["metadata"]["name"], "echo");
    assert!(
        report["imports"]
            .as_array()
            .expect("imports")
            .iter()
            .all(|i| i.as_str().unwrap_or_default().starts_with("wasi:"))
    );
    let wrong = airlock(dir.path(), &["inspect", &fixture("wrong_world").display().to_string()], "");
    assert_eq!(wrong.status.code(), Some(1));
    assert!(json_out(&wrong)["rejected_because"].as_str().unwrap_or_default().contains("airlock:tool"));
}

#[test]
fn inspect_and_tools_show_the_contract_version() {
    let dir = temp_dir();
    let legacy = fixture("contract_v0_1").display().to_string();
    let out = airlock(dir.path(), &["inspect", &legacy], "");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    let report = json_out(&out);
    assert_eq!(report["world"], "airlock:tool/tool@0.1.0");
    assert_eq!(report["contract"], "0.1.0");
    let legacy_whoami = fixture("contract_v0_2").display().to_string();
    let report = json_out(&airlock(dir.path(), &["inspect", &legacy_whoami], ""));
    assert_eq!(
        (report["world"].as_str(), report["contract"].as_str()),
        (Some("airlock:tool/tool@0.2.0"), Some("0.2.0"))
    );
    let imports: Vec<&str> = report["imports"].as_array().expect("imports").iter().filter_map(Value::as_str).collect();
    assert!(imports.contains(&"airlock:tool/caller@0.2.0"), "{imports:?}");
    let whoami = airlock(dir.path(), &["inspect", &fixture("whoami").display().to_string()], "");
    let report = json_out(&whoami);
    assert_eq!(report["contract"], "0.3.0");
    let imports: Vec<&str> = report["imports"].as_array().expect("imports").iter().filter_map(Value::as_str).collect();
    assert!(imports.contains(&"airlock:tool/caller@0.3.0"), "{imports:?}");

    let config = format!(
        "builtin_settings = false\n[tools.legacy_echo]\ncomponent = {legacy:?}\n[tools.legacy_whoami]\n\
         component = {legacy_whoami:?}\n[tools.whoami]\ncomponent = {:?}\n",
        fixture("whoami").display().to_string()
    );
    std::fs::write(dir.path().join("airlock.toml"), config).expect("write config");
    let tools = airlock(dir.path(), &["--config", "airlock.toml", "tools"], "");
    let table = String::from_utf8_lossy(&tools.stdout);
    assert_eq!(tools.status.code(), Some(0), "{table}{}", String::from_utf8_lossy(&tools.stderr));
    assert!(table.lines().next().unwrap_or_default().contains("CONTRACT"), "{table}");
    let row = |name: &str| table.lines().find(|line| line.starts_with(name)).unwrap_or_default().to_owned();
    assert!(row("legacy_echo").contains(" 0.1.0 "), "{table}");
    assert!(row("legacy_whoami").contains(" 0.2.0 "), "{table}");
    assert!(row("whoami").contains(" 0.3.0 "), "{table}");
}

#[test]
fn audit_verify_detects_tampering() {
    let dir = temp_dir();
    let config = format!(
        "tool_dirs = [{:?}]\n[tools.echo]\nside_effect = false\n[audit]\nfile = \"audit.jsonl\"\n",
        guests().display().to_string()
    );
    std::fs::write(dir.path().join("airlock.toml"), config).expect("config");
    for text in ["a", "b", "c"] {
        let out = airlock(dir.path(), &["call", "echo", &json!({"text": text}).to_string()], "");
        assert_eq!(out.status.code(), Some(0));
    }
    let log = dir.path().join("audit.jsonl");
    let verify = airlock(dir.path(), &["audit", "verify", "audit.jsonl"], "");
    assert_eq!(verify.status.code(), Some(0), "{}", String::from_utf8_lossy(&verify.stdout));
    assert!(String::from_utf8_lossy(&verify.stdout).contains("3 records"));
    let tail = airlock(dir.path(), &["audit", "tail", "audit.jsonl", "-n", "2"], "");
    assert_eq!(String::from_utf8_lossy(&tail.stdout).lines().count(), 2);

    let text = std::fs::read_to_string(&log).expect("log");
    std::fs::write(&log, text.replacen("\"echo\"", "\"ech0\"", 1)).expect("tamper");
    let verify = airlock(dir.path(), &["audit", "verify", "audit.jsonl"], "");
    assert_eq!(verify.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&verify.stdout).contains("TAMPERED"));
}

/// A file that only adds a grant keeps every built-in setting of the
/// bundled tools; `builtin_settings = false` starts from nothing; `airlock
/// config` says where each value came from.
#[test]
fn a_config_file_overrides_the_built_in_settings_key_by_key() {
    let dir = temp_dir();
    let tools = guests().display().to_string();
    let grant = format!("tool_dirs = [{tools:?}]\n[tools.read_file]\ndirs = [{{ host = \".\", guest = \"/w\" }}]\n");
    std::fs::write(dir.path().join("airlock.toml"), &grant).expect("config");
    // echo is read-only in the built-in settings, so it runs without asking.
    let echo = airlock(dir.path(), &["call", "echo", r#"{"text":"hi"}"#], "");
    assert_eq!(json_out(&echo)["kind"], "ok", "{}", String::from_utf8_lossy(&echo.stderr));
    let config = airlock(dir.path(), &["config"], "");
    assert_eq!(config.status.code(), Some(0));
    let text = String::from_utf8_lossy(&config.stdout);
    let after = |section: &str| text.split(&format!("[{section}]\n")).nth(1).unwrap_or_default().to_owned();
    let python = after("tools.run_python");
    assert!(python.contains("timeout_ms = 30000") && python.contains("# built-in"), "{text}");
    let read = after("tools.read_file");
    assert!(read.lines().any(|l| l.starts_with("dirs = ") && l.ends_with("airlock.toml")), "{text}");

    let nothing = format!("builtin_settings = false\n{grant}");
    std::fs::write(dir.path().join("airlock.toml"), nothing).expect("config");
    let echo = airlock(dir.path(), &["call", "echo", r#"{"text":"hi"}"#], "");
    assert_eq!(json_out(&echo)["kind"], "declined", "without the built-in settings, echo asks");
}

/// Every command that prints, with its stdout a pipe whose reader has
/// already gone (as with `airlock tools | head` once `head` is done).
#[test]
fn a_closed_stdout_ends_each_command_quietly() {
    let dir = temp_dir();
    let config = format!(
        "tool_dirs = [{:?}]\n[tools.echo]\nside_effect = false\n[audit]\nfile = \"audit.jsonl\"\n",
        guests().display().to_string()
    );
    std::fs::write(dir.path().join("airlock.toml"), config).expect("config");
    let made = airlock(dir.path(), &["call", "echo", r#"{"text":"hi"}"#], "");
    assert_eq!(made.status.code(), Some(0), "{}", String::from_utf8_lossy(&made.stderr));
    let echo = tool("echo").display().to_string();
    let commands: [&[&str]; 6] = [
        &["tools"],
        &["config"],
        &["schema", "--format", "mcp"],
        &["inspect", &echo],
        &["audit", "tail", "audit.jsonl"],
        &["call", "echo", r#"{"text":"hi"}"#],
    ];
    for args in commands {
        // The reader is closed before the command starts: every write to
        // stdout fails with a broken pipe.
        let (reader, writer) = std::io::pipe().expect("pipe");
        drop(reader);
        let output = Command::new(binary())
            .args(args)
            .current_dir(dir.path())
            .env("AIRLOCK_TOOLS_DIR", guests())
            .env_remove("AIRLOCK_CONFIG")
            .env_remove("RUST_LOG")
            .env("RUST_BACKTRACE", "1")
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .expect("airlock runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!stderr.contains("panicked") && !stderr.contains("Broken pipe"), "{args:?}: {stderr}");
        assert_eq!(output.status.code(), Some(0), "{args:?} exits quietly with 0: {stderr}");
    }
}

#[test]
fn cards_are_presented_in_the_log_line_listed_by_tools_and_shown_by_config() {
    let dir = temp_dir();
    let config = format!(
        "builtin_settings = false\n[tools.create_transfer]\ncomponent = {:?}\nside_effect = true\n\
         confirm = \"Transfer {{amount}} to {{to}}\"\npresent_result = \"Transfer to {{to}}: {{status|upper}}\"\n\
         [tools.echo]\ncomponent = {:?}\nside_effect = false\n",
        fixture("create_transfer").display().to_string(),
        tool("echo").display().to_string()
    );
    std::fs::write(dir.path().join("airlock.toml"), config).expect("config");
    let args = r#"{"to":"acc-bob","amount":20000}"#;
    let out = airlock(dir.path(), &["-v", "call", "create_transfer", args, "--yes"], "");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("create_transfer ok in") && stderr.contains(": Transfer to acc-bob: DONE"), "{stderr}");
    assert_eq!(json_out(&out)["content"], json!({"to": "acc-bob", "amount": 20000, "status": "done"}));

    let tools = airlock(dir.path(), &["tools"], "");
    let table = String::from_utf8_lossy(&tools.stdout);
    assert!(table.lines().next().unwrap_or_default().contains(" CARD "), "{table}");
    let row = |name: &str| table.lines().find(|line| line.starts_with(name)).unwrap_or_default().to_owned();
    assert!(row("create_transfer").contains(" both "), "{table}");
    assert!(row("echo ").contains(" - "), "{table}");

    let shown = airlock(dir.path(), &["config"], "");
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(text.contains("confirm = \"Transfer {amount} to {to}\""), "{text}");
    assert!(text.contains("present_result = \"Transfer to {to}: {status|upper}\""), "{text}");
}

/// `airlock ARGS` as a new user runs it: `exe` from `cwd`, with a clean
/// `HOME` (`cwd`) and no `AIRLOCK_*` variable but the compile cache.
fn as_a_new_user(exe: &Path, cwd: &Path, args: &[&str]) -> Output {
    Command::new(exe)
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", cwd)
        .env("AIRLOCK_CACHE_DIR", cache_dir())
        .output()
        .expect("airlock runs")
}

/// The binary laid out as `make install` lays it out (PREFIX/bin/airlock,
/// PREFIX/share/airlock/tools), run from another directory: it finds the
/// bundled tools; a config that only adds a grant keeps them. With no
/// bundled tools anywhere, it says where it looked and what to set.
#[test]
fn an_installed_binary_finds_the_bundled_tools_from_any_directory() {
    let prefix = temp_dir();
    let (bin, share) = (prefix.path().join("bin"), prefix.path().join("share/airlock/tools"));
    std::fs::create_dir_all(&bin).expect("mkdir");
    std::fs::create_dir_all(&share).expect("mkdir");
    std::fs::copy(binary(), bin.join("airlock")).expect("copy the binary");
    for name in ["echo", "read_file"] {
        std::fs::copy(tool(name), share.join(format!("{name}.wasm"))).expect("copy a tool");
    }
    let installed = bin.join("airlock");
    let elsewhere = temp_dir();
    let echo = as_a_new_user(&installed, elsewhere.path(), &["call", "echo", r#"{"text":"hi"}"#]);
    assert_eq!(json_out(&echo)["content"], json!({"text": "hi"}), "{}", String::from_utf8_lossy(&echo.stderr));

    // The layering example of book/src/operator/configuration.md: a file
    // with one grant and nothing else.
    std::fs::write(
        elsewhere.path().join("airlock.toml"),
        "[tools.read_file]\ndirs = [{ host = \".\", guest = \"/w\" }]\n",
    )
    .expect("config");
    std::fs::write(elsewhere.path().join("note.txt"), "granted").expect("write");
    let read = as_a_new_user(&installed, elsewhere.path(), &["call", "read_file", r#"{"path":"/w/note.txt"}"#]);
    assert_eq!(json_out(&read)["kind"], "ok", "{}", String::from_utf8_lossy(&read.stderr));
    assert!(json_out(&read)["content"].to_string().contains("granted"), "{:?}", json_out(&read));
    let echo = as_a_new_user(&installed, elsewhere.path(), &["call", "echo", r#"{"text":"hi"}"#]);
    assert_eq!(json_out(&echo)["kind"], "ok", "the built-in settings of echo are kept too");
    let config = as_a_new_user(&installed, elsewhere.path(), &["config"]);
    assert!(String::from_utf8_lossy(&config.stdout).contains("share/airlock/tools"), "{config:?}");

    // The binary alone: nothing found, and the message says where it looked.
    let bare = temp_dir();
    std::fs::create_dir(bare.path().join("bin")).expect("mkdir");
    std::fs::copy(binary(), bare.path().join("bin/airlock")).expect("copy the binary");
    let nowhere = temp_dir();
    let out = as_a_new_user(&bare.path().join("bin/airlock"), nowhere.path(), &["call", "echo", r#"{"text":"hi"}"#]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let places = [bare.path().join("guests"), bare.path().join("share/airlock/tools")];
    for needle in places.iter().map(|p| p.display().to_string()).chain(["AIRLOCK_TOOLS_DIR".into(), "tool_dirs".into()])
    {
        assert!(stderr.contains(&needle), "{stderr} should name {needle}");
    }
}

/// `make install`'s completions and man page come from the CLI definition.
#[test]
fn completions_and_the_man_page_are_generated() {
    let dir = temp_dir();
    let man = airlock(dir.path(), &["man"], "");
    let page = String::from_utf8_lossy(&man.stdout);
    assert_eq!(man.status.code(), Some(0));
    assert!(page.starts_with(".ie") || page.contains(".TH airlock"), "{page}");
    assert!(page.contains("serve") && !page.contains("completions"), "hidden commands stay hidden: {page}");
    for (shell, needle) in [("bash", "_airlock()"), ("zsh", "#compdef airlock"), ("fish", "complete -c airlock")] {
        let out = airlock(dir.path(), &["completions", shell], "");
        assert_eq!(out.status.code(), Some(0), "{shell}");
        assert!(String::from_utf8_lossy(&out.stdout).contains(needle), "{shell}");
    }
    assert_eq!(airlock(dir.path(), &["completions", "tcsh"], "").status.code(), Some(2));
}

/// Every bundled tool's metadata is what the strictest converters accept:
/// a description of at most 1024 characters, no boolean schema where a
/// subschema is expected, `json_query.json` typed.
#[test]
fn bundled_tools_have_portable_metadata() {
    fn no_boolean_subschemas(schema: &Value, at: &str) {
        let Some(object) = schema.as_object() else { return };
        for (key, sub) in object {
            let here = format!("{at}/{key}");
            match (key.as_str(), sub) {
                ("properties" | "$defs" | "definitions" | "patternProperties", Value::Object(map)) => {
                    for (name, s) in map {
                        assert!(s.is_object(), "{here}/{name} is {s}");
                        no_boolean_subschemas(s, &format!("{here}/{name}"));
                    }
                }
                ("anyOf" | "oneOf" | "allOf" | "prefixItems", Value::Array(list)) => {
                    for (i, s) in list.iter().enumerate() {
                        assert!(s.is_object(), "{here}/{i} is {s}");
                        no_boolean_subschemas(s, &format!("{here}/{i}"));
                    }
                }
                ("items" | "not" | "if" | "then" | "else" | "contains" | "propertyNames", s) => {
                    assert!(s.is_object(), "{here} is {s}");
                    no_boolean_subschemas(s, &here);
                }
                _ => {}
            }
        }
    }
    let dir = temp_dir();
    let mcp = json_out(&airlock(dir.path(), &["schema", "--format", "mcp"], ""));
    let tools = mcp.as_array().expect("a list");
    assert!(tools.len() >= 9, "every bundled tool: {mcp}");
    for tool in tools {
        let name = tool["name"].as_str().unwrap_or_default();
        let chars = tool["description"].as_str().unwrap_or_default().chars().count();
        assert!((1..=1024).contains(&chars), "{name}: {chars} characters");
        no_boolean_subschemas(&tool["inputSchema"], &format!("{name}/inputSchema"));
        no_boolean_subschemas(&tool["outputSchema"], &format!("{name}/outputSchema"));
    }
    let json_query = tools.iter().find(|t| t["name"] == "json_query").expect("json_query");
    let types: Vec<&Value> = json_query["inputSchema"]["properties"]["json"]["anyOf"]
        .as_array()
        .expect("anyOf")
        .iter()
        .map(|s| &s["type"])
        .collect();
    assert_eq!(types, [&json!("object"), &json!("string")]);
    let openai = airlock(dir.path(), &["schema", "--format", "openai"], "");
    let stderr = String::from_utf8_lossy(&openai.stderr);
    assert!(!stderr.contains("characters; some clients refuse"), "{stderr}");
}
