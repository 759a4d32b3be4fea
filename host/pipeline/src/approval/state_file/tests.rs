use super::*;
use serde::Deserialize;
use std::os::unix::fs::PermissionsExt as _;

#[derive(Debug, Default, Serialize, Deserialize, PartialEq)]
struct Counter {
    n: u64,
    #[serde(default)]
    notes: Vec<String>,
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn a_document_starts_empty_and_is_kept_private() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("a/state");
    let file = StateFile::open(&dir, "counter.json").unwrap();
    assert_eq!(mode(&dir), 0o700, "made for this user only");
    assert_eq!(file.read::<Counter>().unwrap(), Counter::default());
    assert_eq!(file.generation(), None);
    assert_eq!(file.update(|c: &mut Counter| std::mem::replace(&mut c.n, 7)).unwrap(), 0);
    assert_eq!(file.read::<Counter>().unwrap().n, 7);
    assert_eq!(mode(&dir.join("counter.json")), 0o600);
    assert_eq!(mode(&dir.join("counter.json.lock")), 0o600);
    // A change that changes nothing writes nothing.
    let before = file.generation().unwrap();
    file.update(|c: &mut Counter| c.n = 7).unwrap();
    assert_eq!(file.generation(), Some(before));
    file.update(|c: &mut Counter| c.n = 8).unwrap();
    assert_ne!(file.generation(), Some(before), "a write is seen with one stat");
    // Another handle (another process would do the same) reads it.
    assert_eq!(StateFile::open(&dir, "counter.json").unwrap().read::<Counter>().unwrap().n, 8);
}

#[test]
fn names_are_plain_file_names() {
    let root = tempfile::tempdir().unwrap();
    for name in ["", "../x.json", "a/b.json", ".hidden", "sp ace", &"x".repeat(65)] {
        let err = StateFile::open(root.path(), name).unwrap_err().to_string();
        assert!(err.contains("is not a state file name"), "{name}: {err}");
    }
}

#[test]
fn concurrent_writers_in_threads_lose_nothing() {
    let root = tempfile::tempdir().unwrap();
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let dir = root.path().to_owned();
            std::thread::spawn(move || {
                // Each thread its own handle, as separate processes have.
                let file = StateFile::open(&dir, "counter.json").unwrap();
                for _ in 0..50 {
                    file.update(|c: &mut Counter| c.n += 1).unwrap();
                }
            })
        })
        .collect();
    let shared = Arc::new(StateFile::open(root.path(), "counter.json").unwrap());
    let same: Vec<_> = (0..4)
        .map(|_| {
            let file = shared.clone();
            std::thread::spawn(move || {
                for _ in 0..50 {
                    file.update(|c: &mut Counter| c.n += 1).unwrap();
                }
            })
        })
        .collect();
    for thread in threads.into_iter().chain(same) {
        thread.join().unwrap();
    }
    assert_eq!(shared.read::<Counter>().unwrap().n, 12 * 50);
}

use std::sync::Arc;

/// The variable that makes [`writer_process`] a writer.
const WRITER_DIR: &str = "AIRLOCK_STATE_FILE_TEST_DIR";

/// Run by [`concurrent_writers_in_processes_lose_nothing`] in child
/// processes (ignored otherwise).
#[test]
#[ignore = "run as a child process by concurrent_writers_in_processes_lose_nothing"]
fn writer_process() {
    let Some(dir) = std::env::var_os(WRITER_DIR) else { return };
    let file = StateFile::open(Path::new(&dir), "counter.json").unwrap();
    for _ in 0..100 {
        file.update(|c: &mut Counter| c.n += 1).unwrap();
    }
}

#[test]
fn concurrent_writers_in_processes_lose_nothing() {
    let root = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..4)
        .map(|_| {
            std::process::Command::new(&exe)
                .args(["--exact", "approval::state_file::tests::writer_process", "--ignored", "--quiet"])
                .env(WRITER_DIR, root.path())
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let file = StateFile::open(root.path(), "counter.json").unwrap();
    for _ in 0..100 {
        file.update(|c: &mut Counter| c.n += 1).unwrap();
    }
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    assert_eq!(file.read::<Counter>().unwrap().n, 500);
}

#[test]
fn a_write_cut_short_by_a_kill_leaves_the_old_content() {
    let root = tempfile::tempdir().unwrap();
    let file = StateFile::open(root.path(), "counter.json").unwrap();
    file.update(|c: &mut Counter| c.n = 1).unwrap();
    // A process killed mid-write leaves its temporary file, half written.
    std::fs::write(root.path().join(".counter.json.tmp"), b"{\"n\": 99, \"no").unwrap();
    assert_eq!(file.read::<Counter>().unwrap().n, 1, "the temporary file is never read");
    file.update(|c: &mut Counter| c.n += 1).unwrap();
    assert_eq!(file.read::<Counter>().unwrap().n, 2, "and the next change overwrites it");
}

#[test]
fn a_damaged_file_is_reported_and_set_aside_only_when_asked() {
    let root = tempfile::tempdir().unwrap();
    let file = StateFile::open(root.path(), "counter.json").unwrap();
    let path = root.path().join("counter.json");
    // Serde would take a struct written as an array; Airlock never writes one.
    for (content, says) in [
        (&b""[..], "it is empty"),
        (b" \n", "it is empty"),
        (b"{\"n\": 1", "not the document expected"),
        (b"[]", "a JSON object was expected"),
        (b"[1]", "a JSON object was expected"),
    ] {
        std::fs::write(&path, content).unwrap();
        let err = file.read::<Counter>().unwrap_err().to_string();
        assert!(err.contains("counter.json is damaged") && err.contains(says), "{err}");
        let err = file.update(|c: &mut Counter| c.n = 5).unwrap_err().to_string();
        assert!(err.contains("is damaged"), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), content, "left as it is");
    }
    let aside = file.set_aside::<Counter>().unwrap().unwrap();
    assert!(aside.file_name().unwrap().to_string_lossy().starts_with("counter.json.damaged-"), "{aside:?}");
    assert_eq!(std::fs::read(&aside).unwrap(), b"[1]");
    assert_eq!(file.read::<Counter>().unwrap(), Counter::default());
    file.update(|c: &mut Counter| c.n = 1).unwrap();
    assert_eq!(file.set_aside::<Counter>().unwrap(), None, "a sound file stays");
    // Set aside twice in the same second: both kept.
    std::fs::write(&path, b"x").unwrap();
    let second = file.set_aside::<Counter>().unwrap().unwrap();
    assert_ne!(second, aside);
    assert!(aside.exists() && second.exists());
}

#[test]
fn a_symbolic_link_in_the_state_directory_leads_nowhere() {
    let root = tempfile::tempdir().unwrap();
    let state = root.path().join("state");
    let outside = root.path().join("outside.json");
    std::fs::write(&outside, b"{\"n\": 42}").unwrap();
    let file = StateFile::open(&state, "counter.json").unwrap();
    std::os::unix::fs::symlink(&outside, state.join("counter.json")).unwrap();
    let err = file.read::<Counter>().unwrap_err().to_string();
    assert!(err.contains("symbolic link"), "{err}");
    assert!(file.update(|c: &mut Counter| c.n = 1).is_err());
    // Nor through the temporary file, nor a relative link, nor the lock.
    std::fs::remove_file(state.join("counter.json")).unwrap();
    std::os::unix::fs::symlink(&outside, state.join(".counter.json.tmp")).unwrap();
    assert!(file.update(|c: &mut Counter| c.n = 1).is_err());
    std::fs::remove_file(state.join(".counter.json.tmp")).unwrap();
    std::os::unix::fs::symlink("../outside.json", state.join("counter.json")).unwrap();
    assert!(file.read::<Counter>().is_err());
    std::os::unix::fs::symlink(&outside, state.join("other.json.lock")).unwrap();
    assert!(StateFile::open(&state, "other.json").is_err());
    assert_eq!(std::fs::read(&outside).unwrap(), b"{\"n\": 42}", "the file elsewhere is untouched");
}

#[test]
fn a_directory_others_can_write_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("open");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let err = StateFile::open(&dir, "counter.json").unwrap_err().to_string();
    assert!(err.contains("other users can write it (mode 777)") && err.contains("chmod 700"), "{err}");
}

#[test]
fn a_document_over_the_cap_is_refused_and_the_file_kept() {
    let root = tempfile::tempdir().unwrap();
    let file = StateFile::open(root.path(), "counter.json").unwrap();
    file.update(|c: &mut Counter| c.n = 1).unwrap();
    let big = "x".repeat(usize::try_from(MAX_STATE_FILE_BYTES).unwrap());
    let err = file.update(|c: &mut Counter| c.notes.push(big)).unwrap_err().to_string();
    assert!(err.contains("more than the 33554432 a state file may hold; nothing was changed"), "{err}");
    assert_eq!(file.read::<Counter>().unwrap().n, 1);
    // Nor is a file over the cap read.
    std::fs::write(root.path().join("counter.json"), vec![b' '; usize::try_from(MAX_STATE_FILE_BYTES).unwrap() + 1])
        .unwrap();
    assert!(matches!(file.read::<Counter>(), Err(StateError::TooLarge { .. })));
}
