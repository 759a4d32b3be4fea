//! Unit tests of `search_files`, run natively over a tree in a temp directory.

use super::*;
use std::path::PathBuf;

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("airlock-search_files-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    /// Create the file `rel` (and its parent directories) with `bytes`.
    fn file(&self, rel: &str, bytes: impl AsRef<[u8]>) -> &Self {
        let path = self.0.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
        self
    }

    fn path(&self) -> String {
        self.0.to_str().unwrap().to_owned()
    }

    /// A tree used by most tests.
    fn sample(name: &str) -> Self {
        let dir = Self::new(name);
        dir.file("a.rs", "fn alpha() {}\n// TODO one\n")
            .file("b.txt", "Todo: two\r\nnothing\r\n")
            .file("src/main.rs", "fn main() {\n    todo!()\n}\n")
            .file("src/deep/x.rs", "// TODO deep\n")
            .file("bin.dat", b"TODO\0\x01\x02")
            .file(".git/config", "TODO in git\n");
        dir
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn args(dir: &TempDir, pattern: &str) -> Args {
    Args { path: dir.path(), pattern: pattern.to_owned(), ..Args::default() }
}

/// The matches as `(relative path, line, text)`.
fn found(dir: &TempDir, result: &SearchResult) -> Vec<(String, u64, String)> {
    let prefix = format!("{}/", dir.path());
    result.matches.iter().map(|m| (m.path.trim_start_matches(&prefix).to_owned(), m.line, m.text.clone())).collect()
}

fn row(path: &str, line: u64, text: &str) -> (String, u64, String) {
    (path.to_owned(), line, text.to_owned())
}

#[test]
fn finds_matches_recursively_in_path_order() {
    let dir = TempDir::sample("basic");
    let out = search_files(args(&dir, "TODO")).unwrap();
    assert_eq!(found(&dir, &out), [row("a.rs", 2, "// TODO one"), row("src/deep/x.rs", 1, "// TODO deep")]);
    assert!(!out.truncated);
    assert_eq!((out.files_scanned, out.files_skipped), (4, 1), "bin.dat is skipped, .git is never entered");
    assert!(out.matches[0].path.starts_with(&dir.path()), "paths are usable with read_file");
}

#[test]
fn case_insensitive_and_line_anchors() {
    let dir = TempDir::sample("case");
    let out = search_files(Args { case_insensitive: true, ..args(&dir, "^todo") }).unwrap();
    assert_eq!(found(&dir, &out), [row("b.txt", 1, "Todo: two")], "CRLF lines are matched and returned without \\r");
    let out = search_files(Args { case_insensitive: true, ..args(&dir, r"todo!\(\)$") }).unwrap();
    assert_eq!(found(&dir, &out), [row("src/main.rs", 2, "    todo!()")]);
}

#[test]
fn glob_filters_names_or_relative_paths() {
    let dir = TempDir::sample("glob");
    let out = search_files(Args { glob: Some("*.rs".into()), ..args(&dir, "fn") }).unwrap();
    assert_eq!(found(&dir, &out), [row("a.rs", 1, "fn alpha() {}"), row("src/main.rs", 1, "fn main() {")]);
    let out = search_files(Args { glob: Some("src/**/*.rs".into()), ..args(&dir, "TODO") }).unwrap();
    assert_eq!(found(&dir, &out), [row("src/deep/x.rs", 1, "// TODO deep")]);
    assert_eq!(out.files_scanned, 2);
    let err = search_files(Args { glob: Some("a**".into()), ..args(&dir, "x") }).unwrap_err();
    assert_eq!(err.code.as_deref(), Some("invalid_glob"));
}

#[test]
fn max_depth_limits_the_walk() {
    let dir = TempDir::sample("depth");
    let out = search_files(Args { max_depth: Some(1), ..args(&dir, "TODO") }).unwrap();
    assert_eq!(found(&dir, &out), [row("a.rs", 2, "// TODO one")]);
    for depth in [0, MAX_DEPTH + 1] {
        let err = search_files(Args { max_depth: Some(depth), ..args(&dir, "x") }).unwrap_err();
        assert_eq!(err.code.as_deref(), Some("invalid_arguments"));
    }
}

#[test]
fn max_matches_truncates() {
    let dir = TempDir::new("cap");
    dir.file("many.txt", "hit\n".repeat(150));
    let out = search_files(args(&dir, "hit")).unwrap();
    assert_eq!((out.matches.len(), out.truncated), (MAX_MATCHES as usize, true));
    let out = search_files(Args { max_matches: Some(3), ..args(&dir, "hit") }).unwrap();
    assert_eq!((out.matches.len(), out.truncated), (3, true));
    assert_eq!(out.matches[2].line, 3);
    let exact = TempDir::new("cap-exact");
    exact.file("three.txt", "hit\nhit\nhit\n");
    let out = search_files(Args { max_matches: Some(3), ..args(&exact, "hit") }).unwrap();
    assert_eq!((out.matches.len(), out.truncated), (3, false), "exactly max_matches is not truncation");
    for bad in [0, MAX_MATCHES + 1] {
        let err = search_files(Args { max_matches: Some(bad), ..args(&dir, "x") }).unwrap_err();
        assert_eq!(err.code.as_deref(), Some("invalid_arguments"));
    }
}

#[test]
fn searches_a_single_file() {
    let dir = TempDir::sample("single");
    let path = format!("{}/src/main.rs", dir.path());
    let out = search_files(Args { path: path.clone(), ..args(&dir, "main") }).unwrap();
    assert_eq!(out.matches, [Match { path, line: 1, text: "fn main() {".into() }]);
    let bin = Args { path: format!("{}/bin.dat", dir.path()), ..args(&dir, "TODO") };
    let err = search_files(bin).unwrap_err();
    assert_eq!(err.code.as_deref(), Some("not_searchable"));
    assert!(err.message.contains("binary"), "{}", err.message);
}

#[test]
fn skips_large_and_non_utf8_files() {
    let dir = TempDir::new("skip");
    dir.file("big.txt", "x".repeat(MAX_FILE_BYTES as usize + 1)).file("latin1.txt", b"caf\xe9 x").file("ok.txt", "x");
    let out = search_files(args(&dir, "x")).unwrap();
    assert_eq!((out.matches.len(), out.files_scanned, out.files_skipped), (1, 1, 2));
}

#[test]
fn long_lines_are_cut_around_the_match() {
    let line = format!("{}NEEDLE{}", "a".repeat(1000), "b".repeat(1000));
    let text = snippet(&line, 1000);
    assert!(text.starts_with('…') && text.ends_with('…'), "{text}");
    assert!(text.contains("NEEDLE"));
    assert_eq!(text.chars().count(), MAX_LINE_CHARS + 2);
    let head = snippet(&format!("NEEDLE{}", "é".repeat(500)), 0);
    assert!(head.starts_with("NEEDLE") && head.ends_with('…'));
    let tail = snippet(&format!("{}NEEDLE", "é".repeat(500)), 1000);
    assert!(tail.starts_with('…') && tail.ends_with("NEEDLE"));
    assert_eq!(snippet("short", 0), "short");
}

#[test]
fn invalid_and_oversized_patterns_are_errors() {
    let dir = TempDir::sample("bad-regex");
    let err = search_files(args(&dir, "fn (")).unwrap_err();
    assert_eq!(err.code.as_deref(), Some("invalid_regex"));
    assert!(err.message.contains("\"fn (\"") && err.message.contains("unclosed group"), "{}", err.message);
    let err = search_files(args(&dir, r"\w{1000}{1000}")).unwrap_err();
    assert_eq!(err.code.as_deref(), Some("invalid_regex"), "the compiled size is capped");
    assert!(err.message.contains("size limit"), "{}", err.message);
    assert_eq!(search_files(args(&dir, "")).unwrap_err().code.as_deref(), Some("invalid_arguments"));
    let long = "a".repeat(MAX_PATTERN_LEN + 1);
    assert_eq!(search_files(args(&dir, &long)).unwrap_err().code.as_deref(), Some("invalid_arguments"));
}

#[test]
fn root_errors() {
    let dir = TempDir::sample("root");
    let err = search_files(Args { path: format!("{}/nope", dir.path()), ..args(&dir, "x") }).unwrap_err();
    assert_eq!(err.code.as_deref(), Some("not_found"));
    let err = search_files(Args { path: String::new(), ..args(&dir, "x") }).unwrap_err();
    assert_eq!(err.code.as_deref(), Some("invalid_arguments"));
    let err = search_files(Args { path: "/airlock-no-such-root/etc".into(), ..args(&dir, "x") }).unwrap_err();
    assert_eq!(err.code.as_deref(), Some("permission_denied"));
    assert!(err.message.contains("only reach the directories the operator granted"), "{}", err.message);
}

#[cfg(unix)]
#[test]
fn symlinks_are_not_followed() {
    let dir = TempDir::sample("symlink");
    std::os::unix::fs::symlink(dir.0.join("src"), dir.0.join("link")).unwrap();
    std::os::unix::fs::symlink(dir.0.join("a.rs"), dir.0.join("link.rs")).unwrap();
    let out = search_files(args(&dir, "TODO")).unwrap();
    assert_eq!(out.matches.len(), 2);
}

#[test]
fn schemas_document_every_field() {
    let schema = airlock_guest::schema::parameters::<Args>();
    for (name, field) in schema["properties"].as_object().unwrap() {
        assert!(field.get("description").is_some(), "field {name} has no description");
    }
    assert_eq!(schema["required"], serde_json::json!(["path", "pattern"]));
    let case = &schema["properties"]["case_insensitive"];
    assert_eq!(case["type"], serde_json::json!(["boolean", "null"]));
    assert!(case.get("default").is_none(), "{case}");
    let out = airlock_guest::schema::output::<SearchResult>();
    assert_eq!(out["required"], serde_json::json!(["matches", "truncated", "files_scanned", "files_skipped"]));
}
