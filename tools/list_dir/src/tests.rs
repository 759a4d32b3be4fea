//! Unit tests of `list_dir`, run natively over a tree in a temp directory.

use super::*;
use std::path::PathBuf;

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("airlock-list_dir-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    /// Create the file `rel` (and its parent directories) with `text`.
    fn file(&self, rel: &str, text: &str) -> &Self {
        let path = self.0.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
        self
    }

    fn path(&self) -> String {
        self.0.to_str().unwrap().to_owned()
    }

    /// A tree used by most tests.
    fn sample(name: &str) -> Self {
        let dir = Self::new(name);
        dir.file("b.txt", "bb").file("a.rs", "a").file("src/main.rs", "fn main() {}").file("src/lib/deep.rs", "");
        dir.file(".hidden", "h");
        dir
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn list(dir: &TempDir, glob: Option<&str>, max_depth: Option<u32>) -> Result<Listing, ToolError> {
    list_dir(Args { path: dir.path(), glob: glob.map(str::to_owned), max_depth })
}

fn paths(listing: &Listing) -> Vec<&str> {
    listing.entries.iter().map(|e| e.path.as_str()).collect()
}

#[test]
fn lists_own_entries_sorted_by_default() {
    let dir = TempDir::sample("default");
    let out = list(&dir, None, None).unwrap();
    assert_eq!(paths(&out), [".hidden", "a.rs", "b.txt", "src"]);
    assert_eq!(out.entries[2], Entry { path: "b.txt".into(), kind: Kind::File, size: Some(2) });
    assert_eq!(out.entries[3], Entry { path: "src".into(), kind: Kind::Dir, size: None });
    assert!(!out.truncated && out.unreadable.is_empty());
    assert_eq!(out.path, dir.path());
}

#[test]
fn descends_to_max_depth() {
    let dir = TempDir::sample("depth");
    let out = list(&dir, None, Some(2)).unwrap();
    assert_eq!(paths(&out), [".hidden", "a.rs", "b.txt", "src", "src/lib", "src/main.rs"]);
    let out = list(&dir, None, Some(MAX_DEPTH)).unwrap();
    assert_eq!(paths(&out), [".hidden", "a.rs", "b.txt", "src", "src/lib", "src/lib/deep.rs", "src/main.rs"]);
}

#[test]
fn glob_without_slash_matches_names_at_any_depth() {
    let dir = TempDir::sample("glob-name");
    let out = list(&dir, Some("*.rs"), Some(3)).unwrap();
    assert_eq!(paths(&out), ["a.rs", "src/lib/deep.rs", "src/main.rs"]);
}

#[test]
fn glob_with_slash_matches_relative_paths() {
    let dir = TempDir::sample("glob-path");
    let out = list(&dir, Some("src/*.rs"), Some(3)).unwrap();
    assert_eq!(paths(&out), ["src/main.rs"], "`*` does not cross `/`");
    let out = list(&dir, Some("src/**/*.rs"), Some(3)).unwrap();
    assert_eq!(paths(&out), ["src/lib/deep.rs", "src/main.rs"]);
}

#[test]
fn invalid_glob_is_an_error() {
    let dir = TempDir::sample("bad-glob");
    let err = list(&dir, Some("a**b"), None).unwrap_err();
    assert_eq!(err.code.as_deref(), Some("invalid_glob"));
    assert!(err.message.contains("\"a**b\""), "{}", err.message);
    let long = "a".repeat(MAX_GLOB_LEN + 1);
    assert_eq!(list(&dir, Some(&long), None).unwrap_err().code.as_deref(), Some("invalid_arguments"));
}

#[test]
fn max_depth_out_of_range_is_an_error() {
    let dir = TempDir::sample("bad-depth");
    for depth in [0, MAX_DEPTH + 1] {
        let err = list(&dir, None, Some(depth)).unwrap_err();
        assert_eq!(err.code.as_deref(), Some("invalid_arguments"));
        assert!(err.message.contains("max_depth"), "{}", err.message);
    }
}

#[test]
fn caps_entries_and_reports_truncation() {
    let dir = TempDir::new("cap");
    for i in 0..MAX_ENTRIES + 5 {
        dir.file(&format!("f{i:05}"), "");
    }
    let out = list(&dir, None, None).unwrap();
    assert_eq!(out.entries.len(), MAX_ENTRIES);
    assert!(out.truncated);
    assert_eq!(out.entries[0].path, "f00000");
    let out = list(&dir, Some("f0000?"), None).unwrap();
    assert_eq!((out.entries.len(), out.truncated), (10, false), "the cap counts matching entries only");
}

#[cfg(unix)]
#[test]
fn symlinks_are_listed_not_followed() {
    let dir = TempDir::sample("symlink");
    std::os::unix::fs::symlink(dir.0.join("src"), dir.0.join("link")).unwrap();
    let out = list(&dir, None, Some(3)).unwrap();
    let link = out.entries.iter().find(|e| e.path == "link").unwrap();
    assert_eq!((link.kind, link.size), (Kind::Symlink, None));
    assert!(!paths(&out).iter().any(|p| p.starts_with("link/")));
}

#[test]
fn errors_for_missing_file_and_empty_paths() {
    let dir = TempDir::sample("errors");
    let missing = list_dir(Args { path: format!("{}/nope", dir.path()), ..Args::default() }).unwrap_err();
    assert_eq!(missing.code.as_deref(), Some("not_found"));
    let file = list_dir(Args { path: format!("{}/a.rs", dir.path()), ..Args::default() }).unwrap_err();
    assert_eq!(file.code.as_deref(), Some("not_a_directory"));
    assert!(file.message.contains("read_file"), "{}", file.message);
    let empty = list_dir(Args::default()).unwrap_err();
    assert_eq!(empty.code.as_deref(), Some("invalid_arguments"));
}

#[test]
fn errors_outside_the_grants_say_so() {
    let err = list_dir(Args { path: "/airlock-no-such-root/etc".into(), ..Args::default() }).unwrap_err();
    assert_eq!(err.code.as_deref(), Some("permission_denied"));
    assert!(err.message.contains("only reach the directories the operator granted"), "{}", err.message);
    let err = list_dir(Args { path: "/".into(), ..Args::default() });
    assert!(err.is_ok(), "natively / exists; in the sandbox it is outside every grant");
    let denied = fs_error("/x", &io::Error::from(io::ErrorKind::PermissionDenied));
    assert_eq!(denied.code.as_deref(), Some("permission_denied"));
    let other = fs_error("/x", &io::Error::other("boom"));
    assert_eq!((other.code.as_deref(), other.message.as_str()), (Some("io_error"), "cannot list /x: boom"));
}

#[test]
fn output_serializes_with_documented_names() {
    let out = Listing {
        path: "/w".into(),
        entries: vec![
            Entry { path: "a".into(), kind: Kind::File, size: Some(1) },
            Entry { path: "d".into(), kind: Kind::Dir, size: None },
        ],
        truncated: false,
        unreadable: vec![],
    };
    let json = serde_json::to_value(&out).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"path": "/w", "truncated": false, "entries": [
            {"path": "a", "kind": "file", "size": 1}, {"path": "d", "kind": "dir"}]})
    );
}

#[test]
fn schema_documents_every_field() {
    let schema = airlock_guest::schema::parameters::<Args>();
    for (name, field) in schema["properties"].as_object().unwrap() {
        assert!(field.get("description").is_some(), "field {name} has no description");
    }
    assert_eq!(schema["required"], serde_json::json!(["path"]));
    assert_eq!(schema["properties"]["max_depth"]["maximum"], MAX_DEPTH);
}

#[test]
fn output_schema_requires_only_fields_always_present() {
    let schema = airlock_guest::schema::output::<Listing>();
    assert_eq!(schema["required"], serde_json::json!(["path", "entries", "truncated"]));
    assert_eq!(schema["properties"]["entries"]["items"]["required"], serde_json::json!(["path", "kind"]));
}
