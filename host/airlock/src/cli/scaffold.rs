//! `airlock new --lang rust|python|js NAME`: a working tool project in one
//! command, and the commands that build and try it.
//!
//! Each project is self-contained and builds outside this repository:
//! - **rust**: a crate depending on `airlock-guest` by git (`--sdk-git`,
//!   default `$AIRLOCK_REPO`) or by path (`--sdk-path`, default the
//!   checkout this binary was built from, if it is still there), with a
//!   `[workspace]` of its own;
//! - **python**: `app.py`, the SDK package `airlock_tool/` and the contract's
//!   WIT, built with componentize-py;
//! - **js**: `app.js`, the SDK module `airlock-tool.js`, the WIT, and a
//!   `package.json` / `package-lock.json` pinning jco, built with `npm run build`.
//!
//! The SDK files and the WIT are compiled into the binary from `sdk/` and
//! `wit/`, so a project matches the host that made it.
//!
//! Trust: the arguments are the local user's. The name is checked against
//! what the host accepts as a tool name (and what cargo accepts as a crate
//! name); nothing is written into a directory that already has files in it.

use serde_json::Value;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The contract the projects target.
const WIT: &str = include_str!("../../../../wit/tool.wit");
const PY_SDK_INIT: &str = include_str!("../../../../sdk/python/airlock_tool/__init__.py");
const PY_SDK_SCHEMA: &str = include_str!("../../../../sdk/python/airlock_tool/schema.py");
const PY_SDK_CONTENT: &str = include_str!("../../../../sdk/python/airlock_tool/content.py");
const PY_SDK_PROGRESS: &str = include_str!("../../../../sdk/python/airlock_tool/progress.py");
const PY_SDK_LOG: &str = include_str!("../../../../sdk/python/airlock_tool/log.py");
const JS_SDK: &str = include_str!("../../../../sdk/js/airlock-tool.js");
const JS_PACKAGE: &str = include_str!("../../../../sdk/js/package.json");
const JS_LOCK: &str = include_str!("../../../../sdk/js/package-lock.json");
const RUST_MANIFEST: &str = include_str!("scaffold/Cargo.toml.in");
const RUST_LIB: &str = include_str!("scaffold/lib.rs.in");
const PY_APP: &str = include_str!("scaffold/app.py.in");
const JS_APP: &str = include_str!("scaffold/app.js.in");
/// The componentize-py a Python project is built with; the same pin as
/// `mk/interpreters.mk` (its CPython is the one the tool runs on).
pub const COMPONENTIZE_PY_VERSION: &str = "0.25.1";
/// Longest tool name the host accepts (see `wit/tool.wit`).
const MAX_NAME_LEN: usize = 64;
/// The checkout this binary was built from: its `guest-sdk` is the default
/// path dependency of a Rust project when no git URL is given.
const BUILT_FROM: &str = env!("CARGO_MANIFEST_DIR");

/// The language of a new tool.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    /// A Rust crate on `airlock-guest`.
    Rust,
    /// A Python module on componentize-py.
    Python,
    /// A JavaScript module on jco.
    Js,
}

impl Lang {
    /// The name `--lang` takes.
    pub fn name(self) -> &'static str {
        match self {
            Self::Rust => "rust",
            Self::Python => "python",
            Self::Js => "js",
        }
    }
}

/// `airlock new`: the flags.
#[derive(clap::Args, Debug)]
pub struct NewArgs {
    /// Tool name: a letter, then up to 63 letters, digits, `_` or `-`.
    pub name: String,
    /// rust, python or js.
    #[arg(long, value_enum)]
    pub lang: Lang,
    /// Directory to create [default: ./NAME]; it must not exist or be empty.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Rust: depend on the SDK by this path (a checkout's `guest-sdk` directory); wins over --sdk-git.
    #[arg(long, value_name = "DIR")]
    pub sdk_path: Option<PathBuf>,
    /// Rust: depend on the SDK by git from this repository URL.
    #[arg(long, env = "AIRLOCK_REPO", value_name = "URL")]
    pub sdk_git: Option<String>,
}

/// One file of a project: its path inside the project and its text.
#[derive(Debug)]
pub struct ProjectFile {
    /// Relative path, `/`-separated.
    pub path: &'static str,
    /// The file's contents.
    pub text: String,
}

/// What `new` made: the files and the commands to build and try them.
#[derive(Debug)]
pub struct Project {
    /// The files, in the order they are written.
    pub files: Vec<ProjectFile>,
    /// The build command, run in the project directory.
    pub build: String,
    /// The component the build writes, relative to the project directory.
    pub component: String,
}

/// Whether `name` can be a tool name and a crate / module name.
pub fn check_name(name: &str) -> Result<(), String> {
    let starts_with_letter = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic());
    let allowed = name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !starts_with_letter || !allowed || name.len() > MAX_NAME_LEN {
        return Err(format!(
            "the tool name {name:?} is not accepted: use a letter, then up to {} letters, digits, `_` or `-`",
            MAX_NAME_LEN - 1
        ));
    }
    Ok(())
}

/// Where a Rust project's `airlock-guest` comes from.
#[derive(Debug, PartialEq, Eq)]
pub enum SdkSource {
    /// `airlock-guest = { git = URL }`.
    Git(String),
    /// `airlock-guest = { path = DIR }`.
    Path(PathBuf),
}

impl SdkSource {
    /// The explicit choice, else the checkout this binary was built from.
    fn choose(path: Option<&Path>, git: Option<&str>) -> Result<Self, String> {
        if let Some(path) = path {
            let absolute = std::path::absolute(path).map_err(|e| format!("--sdk-path {}: {e}", path.display()))?;
            if !absolute.join("Cargo.toml").is_file() {
                return Err(format!(
                    "--sdk-path {}: no Cargo.toml there; pass the `guest-sdk` directory of an Airlock checkout",
                    path.display()
                ));
            }
            return Ok(Self::Path(absolute));
        }
        if let Some(url) = git.filter(|url| !url.trim().is_empty()) {
            return Ok(Self::Git(url.trim().to_owned()));
        }
        let built_from = Path::new(BUILT_FROM).ancestors().nth(2).map(|root| root.join("guest-sdk"));
        match built_from {
            Some(dir) if dir.join("Cargo.toml").is_file() => Ok(Self::Path(dir)),
            _ => Err("a Rust tool depends on the SDK `airlock-guest`: pass --sdk-git URL (or set AIRLOCK_REPO) \
                      with the URL of the Airlock repository, or --sdk-path with the `guest-sdk` directory of a \
                      checkout"
                .to_owned()),
        }
    }

    /// The dependency line of `Cargo.toml`.
    fn dependency(&self) -> String {
        match self {
            Self::Git(url) => format!("airlock-guest = {{ git = {} }}", toml_string(url)),
            Self::Path(dir) => format!("airlock-guest = {{ path = {} }}", toml_string(&dir.display().to_string())),
        }
    }
}

/// `text` as a TOML basic string.
fn toml_string(text: &str) -> String {
    // JSON string escapes are valid TOML basic-string escapes.
    Value::String(text.to_owned()).to_string()
}

/// The files of a new project.
pub fn project(lang: Lang, name: &str, sdk: Option<&SdkSource>) -> Result<Project, String> {
    check_name(name)?;
    let ident = name.replace('-', "_");
    let fill =
        |template: &str| template.replace("{{name}}", name).replace("{{crate}}", name).replace("{{wasm}}", &ident);
    let file = |path: &'static str, text: String| ProjectFile { path, text };
    Ok(match lang {
        Lang::Rust => {
            let sdk = sdk.ok_or("a Rust project needs the SDK's source")?;
            Project {
                files: vec![
                    file("Cargo.toml", fill(RUST_MANIFEST).replace("{{airlock_guest}}", &sdk.dependency())),
                    file("src/lib.rs", fill(RUST_LIB)),
                    file(".gitignore", "/target\n".to_owned()),
                ],
                build: "cargo build --release --target wasm32-wasip2".to_owned(),
                component: format!("target/wasm32-wasip2/release/{ident}.wasm"),
            }
        }
        Lang::Python => Project {
            files: vec![
                file("app.py", fill(PY_APP)),
                file("airlock_tool/__init__.py", PY_SDK_INIT.to_owned()),
                file("airlock_tool/schema.py", PY_SDK_SCHEMA.to_owned()),
                file("airlock_tool/content.py", PY_SDK_CONTENT.to_owned()),
                file("airlock_tool/progress.py", PY_SDK_PROGRESS.to_owned()),
                file("airlock_tool/log.py", PY_SDK_LOG.to_owned()),
                file("wit/tool.wit", WIT.to_owned()),
                file(".gitignore", "/.venv\n__pycache__/\n*.wasm\n".to_owned()),
            ],
            build: format!(
                "python3 -m venv .venv && .venv/bin/pip install componentize-py=={COMPONENTIZE_PY_VERSION} && \
                 .venv/bin/componentize-py -d wit -w tool componentize -p . app -o {name}.wasm"
            ),
            component: format!("{name}.wasm"),
        },
        Lang::Js => Project {
            files: vec![
                file("app.js", fill(JS_APP)),
                file("airlock-tool.js", JS_SDK.to_owned()),
                file("wit/tool.wit", WIT.to_owned()),
                file("package.json", js_package(name)?),
                file("package-lock.json", js_lock(name)?),
                file(".gitignore", "node_modules/\n*.wasm\n".to_owned()),
            ],
            build: "npm ci && npm run build".to_owned(),
            component: format!("{name}.wasm"),
        },
    })
}

/// The SDK's `package.json` renamed, with the build script.
fn js_package(name: &str) -> Result<String, String> {
    let mut package: Value = serde_json::from_str(JS_PACKAGE).map_err(|e| format!("sdk/js/package.json: {e}"))?;
    let object = package.as_object_mut().ok_or("sdk/js/package.json is not an object")?;
    object.insert("name".into(), Value::String(npm_name(name)));
    object.insert("description".into(), Value::String("An Airlock tool.".into()));
    // The QuickJS backend of jco: a component of about 1.6 MB that wasmtime
    // compiles in seconds (StarlingMonkey's is about 12 MB); synchronous,
    // because the host does not run the component-model async ABI.
    let build = format!(
        "jco componentize app.js --wit wit/tool.wit -n tool --backend qjs --backend-qjs-disable-async -o {name}.wasm"
    );
    object.insert("scripts".into(), serde_json::json!({ "build": build }));
    serde_json::to_string_pretty(&package).map(|text| text + "\n").map_err(|e| e.to_string())
}

/// The SDK's `package-lock.json` with the project's name, so `npm ci`
/// installs exactly the jco the SDK was tested with.
fn js_lock(name: &str) -> Result<String, String> {
    let mut lock: Value = serde_json::from_str(JS_LOCK).map_err(|e| format!("sdk/js/package-lock.json: {e}"))?;
    let npm = Value::String(npm_name(name));
    if let Some(object) = lock.as_object_mut() {
        object.insert("name".into(), npm.clone());
    }
    if let Some(root) = lock.pointer_mut("/packages/").and_then(Value::as_object_mut) {
        root.insert("name".into(), npm);
    }
    serde_json::to_string_pretty(&lock).map(|text| text + "\n").map_err(|e| e.to_string())
}

/// npm package names are lower case.
fn npm_name(name: &str) -> String {
    name.to_ascii_lowercase()
}

/// Write the project into `dir` (created; refused if it has files).
fn write(dir: &Path, project: &Project) -> Result<(), String> {
    if dir.exists() {
        let mut entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        if entries.next().is_some() {
            return Err(format!("{} already exists and is not empty: pick another --dir", dir.display()));
        }
    }
    for file in &project.files {
        let path = dir.join(file.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        std::fs::write(&path, &file.text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}

/// Run `airlock new`: write the project, and return what to tell the user.
pub fn run(args: &NewArgs) -> Result<String, String> {
    check_name(&args.name)?;
    let sdk = match args.lang {
        Lang::Rust => Some(SdkSource::choose(args.sdk_path.as_deref(), args.sdk_git.as_deref())?),
        Lang::Python | Lang::Js => None,
    };
    let project = project(args.lang, &args.name, sdk.as_ref())?;
    let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from(&args.name));
    write(&dir, &project)?;
    let mut text = String::new();
    let _ = writeln!(text, "created {} ({} tool `{}`):", dir.display(), args.lang.name(), args.name);
    for file in &project.files {
        let _ = writeln!(text, "  {}", file.path);
    }
    if let Some(SdkSource::Path(path)) = &sdk {
        let _ = writeln!(
            text,
            "airlock-guest is a path dependency on {}; for a crate that builds anywhere, use \
             `airlock-guest = {{ git = \"<Airlock repository URL>\" }}` (or pass --sdk-git / set AIRLOCK_REPO)",
            path.display()
        );
    }
    let dir_arg = shell_word(&dir.display().to_string());
    let _ = writeln!(text, "\nbuild:\n  cd {dir_arg} && {}", project.build);
    if args.lang == Lang::Rust {
        let _ = writeln!(text, "  (needs the target once: rustup target add wasm32-wasip2)");
    }
    let _ = writeln!(
        text,
        "try it:\n  airlock inspect {dir_arg}/{component}\n  \
         printf '[tools.{name}]\\ncomponent = \"{component}\"\\nside_effect = false\\n' > {dir_arg}/airlock.toml\n  \
         cd {dir_arg} && airlock call {name} '{{\"text\": \"hello world\"}}'",
        component = project.component,
        name = args.name,
    );
    Ok(text)
}

/// `word` quoted for a POSIX shell when it needs it.
fn shell_word(word: &str) -> String {
    if !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+=:,".contains(c)) {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_like_tool_and_crate_names() {
        assert!(check_name("word_count").is_ok());
        assert!(check_name("word-count2").is_ok());
        for bad in ["", "2words", "a b", "ünï", "_x", &"a".repeat(65)] {
            assert!(check_name(bad).unwrap_err().contains("letters, digits"), "{bad:?}");
        }
    }

    #[test]
    fn a_rust_project_depends_on_the_sdk_by_git_or_path() {
        let git = SdkSource::Git("https://example.org/airlock.git".into());
        let project = project(Lang::Rust, "word-count", Some(&git)).unwrap();
        let manifest = &project.files.first().unwrap().text;
        assert!(manifest.contains(r#"airlock-guest = { git = "https://example.org/airlock.git" }"#), "{manifest}");
        assert!(manifest.contains("name = \"word-count\"") && manifest.contains("\n[workspace]\n"));
        assert_eq!(project.component, "target/wasm32-wasip2/release/word_count.wasm");
        let path = SdkSource::Path(PathBuf::from("/src/air\"lock/guest-sdk"));
        let project = project_files(Lang::Rust, "t", Some(&path));
        assert!(project.contains(r#"airlock-guest = { path = "/src/air\"lock/guest-sdk" }"#), "{project}");
    }

    fn project_files(lang: Lang, name: &str, sdk: Option<&SdkSource>) -> String {
        project(lang, name, sdk).unwrap().files.into_iter().map(|f| f.text).collect()
    }

    #[test]
    fn python_and_js_projects_carry_the_sdk_and_the_contract() {
        let py = project(Lang::Python, "count", None).unwrap();
        let paths: Vec<_> = py.files.iter().map(|f| f.path).collect();
        assert_eq!(
            paths,
            [
                "app.py",
                "airlock_tool/__init__.py",
                "airlock_tool/schema.py",
                "airlock_tool/content.py",
                "airlock_tool/progress.py",
                "airlock_tool/log.py",
                "wit/tool.wit",
                ".gitignore"
            ]
        );
        assert!(py.build.contains(COMPONENTIZE_PY_VERSION));
        let js = project(Lang::Js, "Count", None).unwrap();
        let text = |path: &str| js.files.iter().find(|f| f.path == path).unwrap().text.clone();
        assert!(text("app.js").contains("name: \"Count\""));
        assert!(text("wit/tool.wit").contains("package airlock:tool@0.3.0;"));
        let package: Value = serde_json::from_str(&text("package.json")).unwrap();
        let lock: Value = serde_json::from_str(&text("package-lock.json")).unwrap();
        assert_eq!(package["name"], "count");
        assert_eq!(lock["name"], "count");
        assert_eq!(lock["packages"][""]["name"], "count");
        assert_eq!(lock["packages"][""]["devDependencies"], package["devDependencies"]);
        assert!(package["scripts"]["build"].as_str().unwrap().contains("-o Count.wasm"));
    }

    #[test]
    fn a_directory_with_files_is_refused() {
        let dir = std::env::temp_dir().join(format!("airlock-new-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("keep"), "x").unwrap();
        let project = project(Lang::Python, "count", None).unwrap();
        assert!(write(&dir, &project).unwrap_err().contains("not empty"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
