//! Unit tests of `read_file`, run natively over files in a temp directory.

use super::*;
use std::path::PathBuf;

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("airlock-read_file-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    /// Write `bytes` to `name` inside the directory and return its path.
    fn file(&self, name: &str, bytes: impl AsRef<[u8]>) -> String {
        let path = self.0.join(name);
        std::fs::write(&path, bytes).unwrap();
        path.to_str().unwrap().to_owned()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn args(path: &str) -> Args {
    Args { path: path.to_owned(), ..Args::default() }
}

fn code(result: Result<FileContent, ToolError>) -> String {
    result.unwrap_err().code.unwrap()
}

#[test]
fn reads_whole_file() {
    let dir = TempDir::new("whole");
    let path = dir.file("a.txt", "héllo\nworld\n");
    let out = read_file(args(&path)).unwrap();
    assert_eq!(out.content, "héllo\nworld\n");
    assert_eq!((out.total_bytes, out.offset, out.end_offset), (13, 0, 13));
    assert!(!out.truncated);
    assert_eq!((out.start_line, out.end_line, out.total_lines), (None, None, None));
}

#[test]
fn reads_byte_range() {
    let dir = TempDir::new("bytes");
    let path = dir.file("a.txt", "0123456789");
    let out = read_file(Args { offset: Some(2), length: Some(3), ..args(&path) }).unwrap();
    assert_eq!(out.content, "234");
    assert_eq!((out.offset, out.end_offset, out.total_bytes), (2, 5, 10));
    assert!(!out.truncated, "a short length asked for is not truncation");
    let out = read_file(Args { offset: Some(7), ..args(&path) }).unwrap();
    assert_eq!(out.content, "789");
    let out = read_file(Args { offset: Some(10), ..args(&path) }).unwrap();
    assert_eq!(out.content, "");
    let out = read_file(Args { length: Some(100), ..args(&path) }).unwrap();
    assert_eq!(out.content, "0123456789");
}

#[test]
fn byte_range_snaps_to_character_boundaries() {
    let dir = TempDir::new("snap");
    let path = dir.file("a.txt", "aé€b"); // a(1) é(2) €(3) b(1)
    let out = read_file(Args { offset: Some(2), ..args(&path) }).unwrap();
    assert_eq!((out.content.as_str(), out.offset), ("€b", 3), "starts after the cut character");
    let out = read_file(Args { offset: Some(0), length: Some(5), ..args(&path) }).unwrap();
    assert_eq!((out.content.as_str(), out.end_offset), ("aé", 3), "ends before the cut character");
}

#[test]
fn offset_past_end_is_an_error() {
    let dir = TempDir::new("past");
    let path = dir.file("a.txt", "abc");
    let err = read_file(Args { offset: Some(4), ..args(&path) }).unwrap_err();
    assert_eq!(err.code.as_deref(), Some("out_of_range"));
    assert!(err.message.contains("3 bytes"), "{}", err.message);
}

#[test]
fn large_file_is_truncated_at_the_cap() {
    let dir = TempDir::new("large");
    let text = "x".repeat(MAX_READ_BYTES + 10);
    let path = dir.file("big.txt", &text);
    let out = read_file(args(&path)).unwrap();
    assert!(out.truncated);
    assert_eq!(out.content.len(), MAX_READ_BYTES);
    assert_eq!(out.total_bytes, (MAX_READ_BYTES + 10) as u64);
    let rest = read_file(Args { offset: Some(out.end_offset), ..args(&path) }).unwrap();
    assert_eq!((rest.content.len(), rest.truncated), (10, false));
}

#[test]
fn truncation_never_splits_a_character() {
    let dir = TempDir::new("split");
    let text = format!("{}é", "x".repeat(MAX_READ_BYTES - 1));
    let path = dir.file("big.txt", &text);
    let out = read_file(args(&path)).unwrap();
    assert!(out.truncated);
    assert_eq!(out.content.len(), MAX_READ_BYTES - 1);
}

#[test]
fn reads_line_ranges() {
    let dir = TempDir::new("lines");
    let path = dir.file("a.txt", "one\ntwo\nthree\nfour");
    let out = read_file(Args { start_line: Some(2), end_line: Some(3), ..args(&path) }).unwrap();
    assert_eq!(out.content, "two\nthree\n");
    assert_eq!((out.start_line, out.end_line, out.total_lines), (Some(2), Some(3), Some(4)));
    assert_eq!((out.offset, out.end_offset), (4, 14));
    let out = read_file(Args { start_line: Some(3), ..args(&path) }).unwrap();
    assert_eq!(out.content, "three\nfour");
    assert_eq!(out.end_line, Some(4));
    let out = read_file(Args { end_line: Some(1), ..args(&path) }).unwrap();
    assert_eq!((out.content.as_str(), out.start_line), ("one\n", Some(1)));
    let out = read_file(Args { start_line: Some(4), end_line: Some(99), ..args(&path) }).unwrap();
    assert_eq!(out.content, "four");
}

#[test]
fn counts_lines_with_trailing_newline() {
    let dir = TempDir::new("count");
    let path = dir.file("a.txt", "a\nb\n");
    let out = read_file(Args { start_line: Some(1), ..args(&path) }).unwrap();
    assert_eq!(out.total_lines, Some(2));
    let empty = dir.file("empty.txt", "");
    let out = read_file(Args { start_line: Some(1), ..args(&empty) }).unwrap();
    assert_eq!((out.content.as_str(), out.total_lines), ("", Some(0)));
}

#[test]
fn start_line_past_end_is_an_error() {
    let dir = TempDir::new("line-past");
    let path = dir.file("a.txt", "a\nb\n");
    let err = read_file(Args { start_line: Some(3), ..args(&path) }).unwrap_err();
    assert_eq!(err.code.as_deref(), Some("out_of_range"));
    assert!(err.message.contains("has 2 lines"), "{}", err.message);
}

#[test]
fn bad_line_ranges_are_errors() {
    let dir = TempDir::new("bad-lines");
    let path = dir.file("a.txt", "a\nb\n");
    assert_eq!(code(read_file(Args { start_line: Some(2), end_line: Some(1), ..args(&path) })), "invalid_arguments");
    assert_eq!(code(read_file(Args { start_line: Some(0), ..args(&path) })), "invalid_arguments");
}

#[test]
fn long_line_range_is_truncated() {
    let dir = TempDir::new("line-cap");
    let text = format!("short\n{}\nlast\n", "y".repeat(MAX_READ_BYTES));
    let path = dir.file("a.txt", &text);
    let out = read_file(Args { start_line: Some(1), ..args(&path) }).unwrap();
    assert!(out.truncated);
    assert_eq!(out.content.len(), MAX_READ_BYTES);
    assert_eq!((out.end_line, out.total_lines), (Some(2), Some(3)));
}

#[test]
fn mixing_byte_and_line_ranges_is_an_error() {
    let dir = TempDir::new("mix");
    let path = dir.file("a.txt", "a");
    let err = read_file(Args { offset: Some(0), start_line: Some(1), ..args(&path) }).unwrap_err();
    assert!(err.message.contains("not both"), "{}", err.message);
    assert_eq!(code(read_file(Args { length: Some(1), end_line: Some(1), ..args(&path) })), "invalid_arguments");
}

#[test]
fn binary_file_is_refused() {
    let dir = TempDir::new("binary");
    let path = dir.file("a.bin", [b'o', b'k', 0xFF, b'!']);
    let err = read_file(args(&path)).unwrap_err();
    assert_eq!(err.code.as_deref(), Some("not_text"));
    assert!(err.message.contains("offset 2"), "{}", err.message);
    let nul = dir.file("nul.bin", "ok\0bin");
    let err = read_file(args(&nul)).unwrap_err();
    assert!(err.message.contains("offset 2"), "valid UTF-8 with NUL is binary too: {}", err.message);
    let cut = dir.file("cut.txt", [b'a', 0xC3]);
    assert_eq!(code(read_file(args(&cut))), "not_text", "a character cut at end of file is invalid");
}

#[test]
fn missing_file_and_directory_and_empty_path() {
    let dir = TempDir::new("missing");
    let missing = dir.0.join("nope.txt");
    let err = read_file(args(missing.to_str().unwrap())).unwrap_err();
    assert_eq!(err.code.as_deref(), Some("not_found"));
    assert!(err.message.contains("list_dir"), "{}", err.message);
    assert_eq!(code(read_file(args(dir.0.to_str().unwrap()))), "is_directory");
    assert_eq!(code(read_file(args(""))), "invalid_arguments");
}

#[test]
fn errors_outside_the_grants_say_so() {
    // Inside the sandbox a path under no grant fails as "not found"; its
    // missing ancestors tell it apart from a missing file in a granted one.
    let err = read_file(args("/airlock-no-such-root/etc/passwd")).unwrap_err();
    assert_eq!(err.code.as_deref(), Some("permission_denied"));
    assert_eq!(
        err.message,
        "cannot read /airlock-no-such-root/etc/passwd: permission denied (this tool can only reach the directories the operator granted)"
    );
    assert_eq!(code(read_file(args("relative.txt"))), "permission_denied", "relative paths resolve from /");
    let denied = io::Error::from(io::ErrorKind::PermissionDenied);
    assert_eq!(fs_error("/x", &denied).code.as_deref(), Some("permission_denied"));
    let other = io::Error::other("disk on fire");
    let err = fs_error("/x", &other);
    assert_eq!((err.code.as_deref(), err.message.as_str()), (Some("io_error"), "cannot read /x: disk on fire"));
}

#[test]
fn scan_stops_counting_at_the_scan_cap() {
    let big = vec![b'\n'; (MAX_SCAN_BYTES + 10) as usize];
    let scan = scan_lines(io::Cursor::new(&big), 1, Some(1)).unwrap();
    assert_eq!((scan.offset, scan.end_line, scan.total_lines), (Some(0), 1, None));
    let scan = scan_lines(io::Cursor::new(&big), MAX_SCAN_BYTES + 5, None).unwrap();
    assert_eq!(scan.offset, None);
}

#[test]
fn schema_documents_every_field() {
    let schema = airlock_guest::schema::parameters::<Args>();
    for (name, field) in schema["properties"].as_object().unwrap() {
        assert!(field.get("description").is_some(), "field {name} has no description");
    }
    assert_eq!(schema["required"], serde_json::json!(["path"]));
}

#[test]
fn output_schema_requires_only_fields_always_present() {
    let schema = airlock_guest::schema::output::<FileContent>();
    let required = serde_json::json!(["path", "content", "truncated", "total_bytes", "offset", "end_offset"]);
    assert_eq!(schema["required"], required);
}
