//! Unit tests of `write_file`, run natively in a temp directory.

use super::*;
use std::path::PathBuf;

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("airlock-write_file-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    /// The path of `rel` inside the directory, as a string.
    fn join(&self, rel: &str) -> String {
        self.0.join(rel).to_str().unwrap().to_owned()
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.0.join(rel)).unwrap()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn args(path: &str, content: &str, mode: Mode) -> Args {
    Args { path: path.to_owned(), content: content.to_owned(), create_dirs: false, mode }
}

#[test]
fn creates_then_overwrites() {
    let dir = TempDir::new("overwrite");
    let path = dir.join("a.txt");
    let out = write_file(args(&path, "héllo", Mode::Overwrite)).unwrap();
    assert_eq!((out.bytes_written, out.created, out.path.as_str()), (6, true, path.as_str()));
    let out = write_file(args(&path, "new", Mode::Overwrite)).unwrap();
    assert_eq!((out.bytes_written, out.created), (3, false));
    assert_eq!(dir.read("a.txt"), "new");
}

#[test]
fn appends() {
    let dir = TempDir::new("append");
    let path = dir.join("log.txt");
    assert!(write_file(args(&path, "one\n", Mode::Append)).unwrap().created);
    let out = write_file(args(&path, "two\n", Mode::Append)).unwrap();
    assert!(!out.created);
    assert_eq!(dir.read("log.txt"), "one\ntwo\n");
}

#[test]
fn create_new_refuses_existing_files() {
    let dir = TempDir::new("create-new");
    let path = dir.join("a.txt");
    assert!(write_file(args(&path, "first", Mode::CreateNew)).unwrap().created);
    let err = write_file(args(&path, "second", Mode::CreateNew)).unwrap_err();
    assert_eq!(err.code.as_deref(), Some("already_exists"));
    assert!(err.message.contains("overwrite"), "{}", err.message);
    assert_eq!(dir.read("a.txt"), "first");
}

#[test]
fn missing_parent_needs_create_dirs() {
    let dir = TempDir::new("parents");
    let path = dir.join("x/y/a.txt");
    let err = write_file(args(&path, "a", Mode::Overwrite)).unwrap_err();
    assert_eq!(err.code.as_deref(), Some("not_found"));
    assert!(err.message.contains("create_dirs: true"), "{}", err.message);
    let out = write_file(Args { create_dirs: true, ..args(&path, "a", Mode::Overwrite) }).unwrap();
    assert!(out.created);
    assert_eq!(dir.read("x/y/a.txt"), "a");
}

#[test]
fn directory_and_bad_paths_are_errors() {
    let dir = TempDir::new("dir");
    let err = write_file(args(&dir.join(""), "a", Mode::Overwrite)).unwrap_err();
    assert_eq!(err.code.as_deref(), Some("invalid_arguments"), "a trailing slash names no file");
    std::fs::create_dir(dir.0.join("sub")).unwrap();
    let err = write_file(args(&dir.join("sub"), "a", Mode::Overwrite)).unwrap_err();
    assert_eq!(err.code.as_deref(), Some("is_directory"));
    assert_eq!(write_file(args("", "a", Mode::Overwrite)).unwrap_err().code.as_deref(), Some("invalid_arguments"));
    std::fs::write(dir.0.join("file"), "").unwrap();
    let err = write_file(args(&dir.join("file/a.txt"), "a", Mode::Overwrite)).unwrap_err();
    assert_eq!(err.code.as_deref(), Some("not_a_directory"), "{}", err.message);
}

#[test]
fn content_over_the_cap_is_refused_before_writing() {
    let dir = TempDir::new("cap");
    let path = dir.join("big.txt");
    let big = "x".repeat(MAX_CONTENT_BYTES + 1);
    let err = write_file(args(&path, &big, Mode::Overwrite)).unwrap_err();
    assert_eq!(err.code.as_deref(), Some("too_large"));
    assert!(err.message.contains("append"), "{}", err.message);
    assert!(!dir.0.join("big.txt").exists());
    let exact = "x".repeat(MAX_CONTENT_BYTES);
    assert_eq!(write_file(args(&path, &exact, Mode::Overwrite)).unwrap().bytes_written, MAX_CONTENT_BYTES as u64);
}

#[test]
fn permission_errors_explain_the_grant() {
    for create_dirs in [false, true] {
        let outside = Args { create_dirs, ..args("/airlock-no-such-root/x/a.txt", "a", Mode::Overwrite) };
        let err = write_file(outside).unwrap_err();
        assert_eq!(err.code.as_deref(), Some("permission_denied"));
        assert!(err.message.contains("only reach the directories the operator granted"), "{}", err.message);
    }
    assert!(!Path::new("/airlock-no-such-root").exists(), "nothing is created outside the grants");
    let dir = TempDir::new("perm");
    let inside = dir.join("a");
    for kind in [io::ErrorKind::PermissionDenied, io::ErrorKind::ReadOnlyFilesystem] {
        let err = fs_error(&inside, &io::Error::from(kind));
        assert_eq!(err.code.as_deref(), Some("read_only"));
        assert!(err.message.contains("the directory is read-only to this tool"), "{}", err.message);
    }
    let err = fs_error(&inside, &io::Error::other("disk full"));
    assert_eq!((err.code.as_deref(), err.message), (Some("io_error"), format!("cannot write {inside}: disk full")));
    let escaped = fs_error("/airlock-no-such-root/a", &io::Error::from(io::ErrorKind::PermissionDenied));
    assert_eq!(escaped.code.as_deref(), Some("permission_denied"), "a path escaping every grant is not read-only");
}

#[test]
fn arguments_parse_with_defaults_and_reject_unknown_modes() {
    let parsed: Args = serde_json::from_str(r#"{"path":"/w/a","content":"x"}"#).unwrap();
    assert_eq!((parsed.mode, parsed.create_dirs), (Mode::Overwrite, false));
    let parsed: Args = serde_json::from_str(r#"{"path":"/w/a","content":"x","mode":"create_new"}"#).unwrap();
    assert_eq!(parsed.mode, Mode::CreateNew);
    assert!(serde_json::from_str::<Args>(r#"{"path":"/w/a","content":"x","mode":"replace"}"#).is_err());
}

#[test]
fn schema_documents_every_field() {
    let schema = airlock_guest::schema::parameters::<Args>();
    for (name, field) in schema["properties"].as_object().unwrap() {
        assert!(field.get("description").is_some(), "field {name} has no description");
    }
    assert_eq!(schema["required"], serde_json::json!(["path", "content"]));
    // The mode is written in place, and the optional members accept null.
    assert!(schema.get("$defs").is_none(), "{schema:#}");
    let mode = &schema["properties"]["mode"];
    assert_eq!(mode["type"], serde_json::json!(["string", "null"]));
    assert_eq!(mode["enum"], serde_json::json!(["overwrite", "append", "create_new", null]));
    assert_eq!(schema["properties"]["create_dirs"]["type"], serde_json::json!(["boolean", "null"]));
    let out = airlock_guest::schema::output::<Written>();
    assert_eq!(out["required"], serde_json::json!(["path", "bytes_written", "created"]));
}
