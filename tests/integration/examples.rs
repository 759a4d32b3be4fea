//! The example tools of `examples/` (one per SDK: Rust, Python, JavaScript,
//! built by `make examples`), run through the `airlock` binary as a user
//! would: listed, called, refused by the host's schema validation, and
//! failing with their own tool errors. The three are the same tool, so the
//! same calls give the same answers; and `airlock new` lays out a project.

use crate::support::{cache_dir, temp_dir};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn binary() -> PathBuf {
    std::env::var_os("AIRLOCK_BIN").map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_airlock")), PathBuf::from)
}

/// Where `make examples` puts the components.
fn examples_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("AIRLOCK_EXAMPLES") {
        return PathBuf::from(dir);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::support::repo_root().join("target"));
    target.join("examples")
}

fn example(name: &str) -> PathBuf {
    let path = examples_dir().join(format!("{name}.wasm"));
    assert!(path.is_file(), "{} is missing: run `make examples`", path.display());
    path
}

/// Run `airlock ARGS` in `dir` (which holds the airlock.toml).
fn airlock(dir: &Path, args: &[&str]) -> Output {
    Command::new(binary())
        .args(args)
        .current_dir(dir)
        .env("AIRLOCK_CACHE_DIR", cache_dir())
        .env_remove("AIRLOCK_CONFIG")
        .env_remove("AIRLOCK_REPO")
        .env_remove("RUST_LOG")
        .output()
        .expect("airlock runs")
}

fn json_out(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|err| {
        panic!(
            "stdout is not JSON ({err}): {}\nstderr: {}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

/// `airlock call TOOL ARGS` in `dir`: the exit code and the printed result.
fn call(dir: &Path, tool: &str, args: Value) -> (Option<i32>, Value) {
    let output = airlock(dir, &["call", tool, &args.to_string()]);
    (output.status.code(), json_out(&output))
}

/// The checks every language's example passes.
fn check_example(tool: &str) {
    let dir = temp_dir();
    let config = format!(
        "builtin_settings = false\n[tools.{tool}]\ncomponent = {:?}\nside_effect = false\n",
        example(tool).display().to_string()
    );
    std::fs::write(dir.path().join("airlock.toml"), config).unwrap();

    // Listed, with the current contract (the Python and JS SDKs target 0.3.0 too).
    let tools = airlock(dir.path(), &["tools"]);
    let listing = String::from_utf8_lossy(&tools.stdout);
    assert_eq!(tools.status.code(), Some(0), "{listing}\n{}", String::from_utf8_lossy(&tools.stderr));
    let line = listing.lines().find(|l| l.starts_with(tool)).unwrap_or_else(|| panic!("{tool} not listed: {listing}"));
    assert!(line.contains("0.3.0"), "{line}");

    // The schema the model sees was derived from the author's types.
    let schema = airlock(dir.path(), &["schema", "--format", "openai"]);
    let schema = json_out(&schema);
    let parameters = &schema[0]["function"]["parameters"];
    assert_eq!(parameters["required"], json!(["value", "from_unit", "to_unit"]), "{parameters}");
    assert_eq!(parameters["properties"]["value"]["type"], "number", "{parameters}");
    assert_eq!(parameters["properties"]["precision"]["maximum"], 12, "{parameters}");
    assert_eq!(parameters["properties"]["from_unit"]["description"], "The unit of `value`, e.g. `km`.", "{parameters}");
    assert!(schema[0]["function"]["description"].as_str().unwrap().starts_with("Converts a quantity"), "{schema}");

    // Real calls.
    let (code, out) = call(dir.path(), tool, json!({"value": 5, "from_unit": "km", "to_unit": "mi"}));
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(out["content"], json!({"value": 3.106856, "unit": "mi", "dimension": "length"}));
    let (code, out) = call(dir.path(), tool, json!({"value": 100, "from_unit": "C", "to_unit": "F", "precision": 1}));
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(out["content"]["value"].as_f64(), Some(212.0), "{out}");

    // Bad arguments never reach the tool: the host validates them against
    // the derived schema (a string for a number, a precision out of range,
    // an unknown argument).
    let (code, out) = call(dir.path(), tool, json!({"value": "five", "from_unit": "km", "to_unit": "mi"}));
    assert_eq!((code, out["kind"].as_str()), (Some(1), Some("invalid_arguments")), "{out}");
    assert!(out["content"].as_str().unwrap().contains("at /value"), "{out}");
    let (code, out) = call(dir.path(), tool, json!({"value": 1, "from_unit": "km", "to_unit": "mi", "precision": 13}));
    assert_eq!((code, out["kind"].as_str()), (Some(1), Some("invalid_arguments")), "{out}");
    let (code, out) = call(dir.path(), tool, json!({"value": 1, "from_unit": "km", "to_unit": "mi", "units": "x"}));
    assert_eq!((code, out["kind"].as_str()), (Some(1), Some("invalid_arguments")), "{out}");

    // The tool's own errors, with their codes.
    let (code, out) = call(dir.path(), tool, json!({"value": 1, "from_unit": "kg", "to_unit": "mi"}));
    assert_eq!((code, out["kind"].as_str()), (Some(1), Some("tool_error")), "{out}");
    assert_eq!(
        out["content"],
        "tool error (incompatible_units): cannot convert kg (mass) to mi (length): pick two units of one dimension"
    );
    let (code, out) = call(dir.path(), tool, json!({"value": 1, "from_unit": "parsec", "to_unit": "m"}));
    assert_eq!((code, out["kind"].as_str()), (Some(1), Some("tool_error")), "{out}");
    assert!(
        out["content"]
            .as_str()
            .unwrap()
            .starts_with("tool error (unknown_unit): unknown unit 'parsec'; known units: m, km")
    );
}

#[test]
fn the_rust_example_works_through_the_binary() {
    check_example("convert_units_rust");
}

#[test]
fn the_python_example_works_through_the_binary() {
    check_example("convert_units_python");
}

#[test]
fn the_js_example_works_through_the_binary() {
    check_example("convert_units_js");
}

#[test]
fn new_lays_out_a_project_per_language_and_refuses_to_overwrite() {
    let dir = temp_dir();
    let new = |args: &[&str]| airlock(dir.path(), &[&["new"], args].concat());
    let rust = new(&["--lang", "rust", "word_count", "--sdk-git", "https://example.org/airlock.git"]);
    assert_eq!(rust.status.code(), Some(0), "{}", String::from_utf8_lossy(&rust.stderr));
    let manifest = std::fs::read_to_string(dir.path().join("word_count/Cargo.toml")).unwrap();
    assert!(manifest.contains(r#"airlock-guest = { git = "https://example.org/airlock.git" }"#), "{manifest}");
    let printed = String::from_utf8_lossy(&rust.stdout);
    assert!(printed.contains("cargo build --release --target wasm32-wasip2"), "{printed}");

    let python = new(&["--lang", "python", "word-count", "--dir", "py"]);
    assert_eq!(python.status.code(), Some(0), "{}", String::from_utf8_lossy(&python.stderr));
    for file in ["app.py", "airlock_tool/__init__.py", "airlock_tool/schema.py", "wit/tool.wit"] {
        assert!(dir.path().join("py").join(file).is_file(), "{file}");
    }
    assert!(String::from_utf8_lossy(&python.stdout).contains("componentize-py -d wit -w tool componentize -p . app"));

    let js = new(&["--lang", "js", "wordcount", "--dir", "js"]);
    assert_eq!(js.status.code(), Some(0), "{}", String::from_utf8_lossy(&js.stderr));
    for file in ["app.js", "airlock-tool.js", "wit/tool.wit", "package.json", "package-lock.json"] {
        assert!(dir.path().join("js").join(file).is_file(), "{file}");
    }

    // A directory with files in it is not written into; a bad name is refused.
    let again = new(&["--lang", "js", "wordcount", "--dir", "js"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("not empty"));
    let bad = new(&["--lang", "python", "9lives"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("letters, digits"));
}
