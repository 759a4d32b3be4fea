//! A JSON document kept in one file of Airlock's state directory (`[approvals]
//! state_dir`), read and changed by every Airlock process of the host: the
//! approvals waiting for an answer, the key that signs their links, and
//! whatever else must outlive the process that made it.
//!
//! ```no_run
//! # use airlock_pipeline::transport::approval::StateFile;
//! # #[derive(Default, serde::Serialize, serde::Deserialize)]
//! # struct Counter { n: u64 }
//! # fn main() -> Result<(), airlock_pipeline::transport::approval::StateError> {
//! let file = StateFile::open(std::path::Path::new("/var/lib/airlock"), "counter.json")?;
//! let n = file.update(|doc: &mut Counter| {
//!     doc.n += 1;
//!     doc.n
//! })?;
//! let now: Counter = file.read()?;
//! # Ok(()) }
//! ```
//!
//! What it guarantees, whatever instant a process dies at:
//!
//! - **One writer at a time, across processes.** [`StateFile::update`] holds
//!   an exclusive advisory lock (`flock`) on `NAME.lock` (a file of its own,
//!   never replaced) while it reads, changes and writes the document, so two
//!   processes (or threads) never lose each other's change. A process killed
//!   while it holds the lock releases it with its last descriptor.
//! - **Old or new, never half.** The new document is written to `.NAME.tmp`,
//!   synced, renamed over `NAME` and the directory synced: a reader, or the
//!   next start after a `kill -9` or a power cut, finds the old content or
//!   the new one. A temporary file left by a crash is overwritten by the next
//!   change and never read. Readers take no lock.
//! - **Bounded.** A document is at most [`MAX_STATE_FILE_BYTES`], read and
//!   written: a change that would make it larger is refused
//!   ([`StateError::TooLarge`]) and the file keeps its content.
//! - **Damage is reported, not hidden.** A file that is not the document
//!   (cut, edited, another version's, anything but a JSON object) is an
//!   error naming it ([`StateError::Damaged`]); nothing reads it as empty or
//!   overwrites it.
//!   Its owner decides, and says so: [`StateFile::set_aside`] renames it to
//!   `NAME.damaged-<unix seconds>` so that a fresh document starts beside it.
//!
//! # Trust
//!
//! The directory is the operator's (`[approvals] state_dir`); its files are
//! trusted to be Airlock's own only because nobody else can write them: the
//! directory is created with mode 0700, one that another user can write, or
//! that is not the user's own, is refused, and files are created with mode
//! 0600. Everything under the directory is reached through a cap-std [`Dir`]
//! and opened without following a final symbolic link, so a link or a `..`
//! planted there cannot make Airlock read or write a file elsewhere.
//!
//! # Ambient Authority
//!
//! [`StateFile::open`] opens (and creates) the directory by its path; every
//! file after that is reached through the directory's handle only.

use cap_std::fs::{Dir, MetadataExt as _, OpenOptions, OpenOptionsExt as _};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::io::{self, Read as _, Write as _};
use std::os::unix::fs::DirBuilderExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The most bytes one state file may hold, read or written.
pub const MAX_STATE_FILE_BYTES: u64 = 32 << 20;
/// The longest file name accepted.
const MAX_NAME_LEN: usize = 64;

/// Why a state file could not be read or changed. Every message names the
/// directory or file.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// The state directory cannot be made, opened, or is not safe to use.
    #[error("the state directory {} cannot be used ([approvals] state_dir): {why}", dir.display())]
    Dir {
        /// The directory.
        dir: PathBuf,
        /// Why.
        why: String,
    },
    /// An operation on a file failed.
    #[error("cannot {action} the state file {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done (`read`, `lock`, `replace`, …).
        action: &'static str,
        /// The system's error.
        source: io::Error,
    },
    /// The file is not a document of the expected shape.
    #[error(
        "the state file {} is damaged ({why}); it was left as it is: move it aside (or remove it) and Airlock starts \
         a new one",
        path.display()
    )]
    Damaged {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// The change would make the document larger than a state file may be.
    #[error(
        "the state file {} would hold {bytes} bytes, more than the {MAX_STATE_FILE_BYTES} a state file may hold; \
         nothing was changed",
        path.display()
    )]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The size the change would have made.
        bytes: u64,
    },
}

/// The identity of a file's content as last written: it changes with every
/// [`StateFile::update`] that writes (each write is a new file renamed into
/// place), so a process can tell that another changed it with one `stat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Generation {
    ino: u64,
    mtime_ns: i128,
    len: u64,
}

/// A [`StateFile`] opened when it is first used, not when its owner is
/// made: a host that never needs it never touches the directory (an audit
/// log's directory that another user can write, say), and a directory that
/// cannot be used yet is tried again at the next use.
#[derive(Debug)]
pub struct LazyStateFile {
    dir: PathBuf,
    name: &'static str,
    opened: Mutex<Option<Arc<StateFile>>>,
}

impl LazyStateFile {
    /// `name` in `dir`, opened by the first [`LazyStateFile::get`].
    pub fn new(dir: PathBuf, name: &'static str) -> Self {
        LazyStateFile { dir, name, opened: Mutex::new(None) }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file, opened now if it was not yet.
    ///
    /// # Errors
    ///
    /// As [`StateFile::open`].
    pub fn get(&self) -> Result<Arc<StateFile>, StateError> {
        let mut slot = self.opened.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(file) = slot.as_ref() {
            return Ok(file.clone());
        }
        let file = Arc::new(StateFile::open(&self.dir, self.name)?);
        *slot = Some(file.clone());
        Ok(file)
    }
}

/// One JSON document in one file of the state directory; see the module
/// documentation.
pub struct StateFile {
    dir: Dir,
    /// The directory, as a file, to sync after a rename.
    dir_file: std::fs::File,
    name: String,
    /// The directory's path joined with the name, for messages only.
    path: PathBuf,
    /// `NAME.lock`: the process's one descriptor of it, so that threads
    /// take turns here and processes at the `flock`.
    lock: Mutex<std::fs::File>,
}

impl std::fmt::Debug for StateFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateFile").field("path", &self.path).finish_non_exhaustive()
    }
}

impl StateFile {
    /// The state file `name` in `dir`, creating `dir` (mode 0700, with its
    /// missing parents) and the lock file when they are missing; the
    /// document itself is written by the first [`StateFile::update`].
    ///
    /// # Ambient Authority
    ///
    /// Opens `dir` by its path.
    ///
    /// # Errors
    ///
    /// `name` is not a plain file name (a path, hidden, too long), the
    /// directory cannot be made or opened, another user can write it or it
    /// is not this user's, or the lock file cannot be opened.
    pub fn open(dir: &Path, name: &str) -> Result<Self, StateError> {
        let dir_error = |why: String| StateError::Dir { dir: dir.to_owned(), why };
        if name.is_empty()
            || name.len() > MAX_NAME_LEN
            || name.starts_with('.')
            || !name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
        {
            return Err(dir_error(format!(
                "{name:?} is not a state file name: accepted up to {MAX_NAME_LEN} letters, digits, '.', '-' and '_', \
                 not starting with '.'"
            )));
        }
        let handle = open_dir(dir)?;
        // The handle is a path descriptor, which cannot be synced: the
        // directory opened for reading (used for nothing else).
        let dir_file = std::fs::File::open(dir).map_err(|err| dir_error(format!("cannot open it: {err}")))?;
        let path = dir.join(name);
        let lock_name = format!("{name}.lock");
        let lock = open_private(&handle, &lock_name, false).map_err(|source| StateError::Io {
            path: dir.join(&lock_name),
            action: "open the lock of",
            source,
        })?;
        Ok(StateFile { dir: handle, dir_file, name: name.to_owned(), path, lock: Mutex::new(lock) })
    }

    /// The file's path, for messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The document as last written (`T::default()` when there is none
    /// yet). Takes no lock: a reader sees one whole version.
    ///
    /// # Errors
    ///
    /// The file cannot be read, is over [`MAX_STATE_FILE_BYTES`], or is
    /// damaged.
    pub fn read<T: DeserializeOwned + Default>(&self) -> Result<T, StateError> {
        let bytes = self.read_bytes()?;
        self.parse(bytes.as_deref())
    }

    /// Change the document under the exclusive lock: read it, hand it to
    /// `change`, write it back if it changed (atomically, see the module
    /// documentation), and return what `change` returned.
    ///
    /// Blocks while another process or thread changes the same file; the
    /// lock is held only for the read, the change and the write. Call it
    /// from a thread that may block (`tokio::task::spawn_blocking`).
    ///
    /// # Errors
    ///
    /// The lock cannot be taken, the file cannot be read or written, it is
    /// damaged (nothing is written), or the new document would be over
    /// [`MAX_STATE_FILE_BYTES`] (nothing is written).
    pub fn update<T, R>(&self, change: impl FnOnce(&mut T) -> R) -> Result<R, StateError>
    where
        T: Serialize + DeserializeOwned + Default,
    {
        let lock = self.lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        lock.lock().map_err(|source| self.io("lock", source))?;
        let result = self.update_locked(change);
        // Unlocked also when the descriptor closes; an error here leaves it
        // locked until then, and the next `lock` by this process succeeds.
        let _ = lock.unlock();
        result
    }

    fn update_locked<T, R>(&self, change: impl FnOnce(&mut T) -> R) -> Result<R, StateError>
    where
        T: Serialize + DeserializeOwned + Default,
    {
        let before = self.read_bytes()?;
        let mut doc: T = self.parse(before.as_deref())?;
        let result = change(&mut doc);
        let mut after = serde_json::to_vec(&doc).map_err(|err| self.io("encode", io::Error::other(err)))?;
        after.push(b'\n');
        if before.as_deref() == Some(after.as_slice()) {
            return Ok(result);
        }
        if after.len() as u64 > MAX_STATE_FILE_BYTES {
            return Err(StateError::TooLarge { path: self.path.clone(), bytes: after.len() as u64 });
        }
        self.replace(&after)?;
        Ok(result)
    }

    /// What identifies the content as last written (`None`: no file yet, or
    /// it cannot be read). Costs one `stat`.
    pub fn generation(&self) -> Option<Generation> {
        let meta = self.dir.symlink_metadata(&self.name).ok()?;
        let mtime_ns = i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec());
        Some(Generation { ino: meta.ino(), mtime_ns, len: meta.len() })
    }

    /// Move a damaged file aside, to `NAME.damaged-<unix seconds>` beside
    /// it, under the lock (a later one the same second gets a `-2`, `-3`…
    /// suffix), and return its new path; the next change starts a new
    /// document. Does nothing (`None`) when there is no file or it is not
    /// damaged any more.
    ///
    /// # Errors
    ///
    /// The lock cannot be taken or the file cannot be renamed.
    pub fn set_aside<T: DeserializeOwned + Default>(&self) -> Result<Option<PathBuf>, StateError> {
        let lock = self.lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        lock.lock().map_err(|source| self.io("lock", source))?;
        let result = self.set_aside_locked::<T>();
        let _ = lock.unlock();
        result
    }

    fn set_aside_locked<T: DeserializeOwned + Default>(&self) -> Result<Option<PathBuf>, StateError> {
        match self.read_bytes().and_then(|bytes| self.parse::<T>(bytes.as_deref())) {
            Ok(_) => return Ok(None),
            Err(StateError::Damaged { .. } | StateError::TooLarge { .. }) => {}
            Err(err) => return Err(err),
        }
        let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let mut aside = format!("{}.damaged-{secs}", self.name);
        let mut n = 1u32;
        while self.dir.symlink_metadata(&aside).is_ok() {
            n = n.saturating_add(1);
            aside = format!("{}.damaged-{secs}-{n}", self.name);
        }
        self.dir.rename(&self.name, &self.dir, &aside).map_err(|source| self.io("move aside", source))?;
        self.dir_file.sync_all().map_err(|source| self.io("sync the directory of", source))?;
        Ok(Some(self.path.with_file_name(aside)))
    }

    /// The file's bytes, `None` when there is none; at most one byte over
    /// the cap (refused).
    fn read_bytes(&self) -> Result<Option<Vec<u8>>, StateError> {
        let file = match open_existing(&self.dir, &self.name) {
            Ok(file) => file,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(err) if err.raw_os_error() == Some(libc::ELOOP) => {
                return Err(StateError::Damaged {
                    path: self.path.clone(),
                    why: "it is a symbolic link, and a state file is only ever a file of Airlock's own".to_owned(),
                });
            }
            Err(source) => return Err(self.io("open", source)),
        };
        let meta = file.metadata().map_err(|source| self.io("read", source))?;
        if !meta.is_file() {
            return Err(StateError::Damaged { path: self.path.clone(), why: "it is not a regular file".to_owned() });
        }
        let mut bytes = Vec::new();
        file.take(MAX_STATE_FILE_BYTES.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|source| self.io("read", source))?;
        if bytes.len() as u64 > MAX_STATE_FILE_BYTES {
            return Err(StateError::TooLarge { path: self.path.clone(), bytes: meta.len() });
        }
        Ok(Some(bytes))
    }

    /// The document in `bytes`: a JSON object, and nothing else (serde
    /// would also take a struct written as an array, `[1]`, which Airlock
    /// never writes).
    fn parse<T: DeserializeOwned + Default>(&self, bytes: Option<&[u8]>) -> Result<T, StateError> {
        let Some(bytes) = bytes else { return Ok(T::default()) };
        let damaged = |why: String| StateError::Damaged { path: self.path.clone(), why };
        match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
            None => return Err(damaged("it is empty".to_owned())),
            Some(b'{') => {}
            Some(_) => return Err(damaged("not the document expected: a JSON object was expected".to_owned())),
        }
        serde_json::from_slice(bytes).map_err(|err| damaged(format!("not the document expected: {err}")))
    }

    /// Write `bytes` as the new content: temporary file, sync, rename,
    /// directory sync.
    fn replace(&self, bytes: &[u8]) -> Result<(), StateError> {
        let temp = format!(".{}.tmp", self.name);
        let mut file = open_private(&self.dir, &temp, true).map_err(|source| self.io("write", source))?;
        file.write_all(bytes).map_err(|source| self.io("write", source))?;
        file.sync_all().map_err(|source| self.io("sync", source))?;
        drop(file);
        self.dir.rename(&temp, &self.dir, &self.name).map_err(|source| self.io("replace", source))?;
        self.dir_file.sync_all().map_err(|source| self.io("sync the directory of", source))
    }

    fn io(&self, action: &'static str, source: io::Error) -> StateError {
        StateError::Io { path: self.path.clone(), action, source }
    }
}

/// The state directory `dir`, created (mode 0700, with its missing
/// parents) when missing, and refused when another user can write it or it
/// is not this user's.
///
/// # Ambient Authority
///
/// Opens `dir` by its path.
///
/// # Errors
///
/// Why the directory cannot be made, opened or used.
pub(crate) fn open_dir(dir: &Path) -> Result<Dir, StateError> {
    let dir_error = |why: String| StateError::Dir { dir: dir.to_owned(), why };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|err| dir_error(format!("cannot create it: {err}")))?;
    let handle = Dir::open_ambient_dir(dir, cap_std::ambient_authority())
        .map_err(|err| dir_error(format!("cannot open it: {err}")))?;
    let meta = handle.dir_metadata().map_err(|err| dir_error(format!("cannot read it: {err}")))?;
    let mode = meta.mode();
    if mode & 0o022 != 0 {
        return Err(dir_error(format!(
            "other users can write it (mode {:o}); what Airlock keeps there decides what runs: `chmod 700` it",
            mode & 0o7777
        )));
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(dir_error(format!(
            "it belongs to user {}, not to the user Airlock runs as ({me}); give it to that user",
            meta.uid()
        )));
    }
    Ok(handle)
}

/// Open `name` in `dir` for reading, never through a symbolic link.
fn open_existing(dir: &Dir, name: &str) -> io::Result<std::fs::File> {
    let mut options = OpenOptions::new();
    options.read(true).custom_flags(libc::O_NOFOLLOW);
    Ok(dir.open_with(name, &options)?.into_std())
}

/// Open (create, mode 0600) `name` in `dir` for writing, never through a
/// symbolic link; `truncate` empties it.
pub(crate) fn open_private(dir: &Dir, name: &str, truncate: bool) -> io::Result<std::fs::File> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(truncate).mode(0o600).custom_flags(libc::O_NOFOLLOW);
    let file = dir.open_with(name, &options)?.into_std();
    if !file.metadata()?.is_file() {
        return Err(io::Error::other("it is not a regular file"));
    }
    Ok(file)
}

#[cfg(test)]
mod tests;
