//! Which Airlock process of a host serves the approval page on `[approvals]
//! listen`: the one that holds the page's lease, an exclusive advisory lock
//! (`flock`) on [`PAGE_LOCK_FILE`] in the state directory.
//!
//! Only one process can listen on the address; the lease tells the others
//! that the process holding it is Airlock's own (and not some other program
//! that took the port), so that they leave the page to it, both serving the
//! same approvals from the state directory. The lease ends with its last
//! descriptor, so a process killed with `kill -9` leaves it free for the
//! next. Its holder writes who it is into the file ([`Holder`]); the file is
//! read only while someone holds the lease, so a crashed holder's note is
//! never taken for a live one.
//!
//! The lease and the listening socket are handed over together, as open
//! descriptors, to the process that serves the page after a stdio server
//! (`airlock-mcp`'s `page` module has that story).

use super::state_file::{StateError, open_dir, open_private};
use serde::{Deserialize, Serialize};
use std::fs::{File, TryLockError};
use std::io::{Read as _, Seek as _, Write as _};
use std::path::Path;

/// The lease's file in the state directory.
pub const PAGE_LOCK_FILE: &str = "page.lock";
/// The most bytes of a holder's note read.
const MAX_NOTE_BYTES: u64 = 4096;

/// Who serves the page, as its process says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    /// Its process id.
    pub pid: u32,
    /// The page's origin (`http://127.0.0.1:8081`).
    pub base: String,
    /// Since when (Unix milliseconds).
    pub since_ms: u64,
    /// Whether it serves only the page, after the stdio server that handed
    /// it over ended.
    pub handed_over: bool,
}

/// The lease on the page: held as long as this value (or a descriptor
/// handed on from it) is open.
#[derive(Debug)]
pub struct PageLease {
    file: File,
}

impl PageLease {
    /// The lease in the state directory `dir`, if nobody holds it.
    ///
    /// # Ambient Authority
    ///
    /// Opens `dir` by its path.
    ///
    /// # Errors
    ///
    /// The directory or the file cannot be used.
    pub fn try_take(dir: &Path) -> Result<Option<PageLease>, StateError> {
        let file = open_lock(dir)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(PageLease { file })),
            Err(TryLockError::WouldBlock) => Ok(None),
            Err(TryLockError::Error(source)) => {
                Err(StateError::Io { path: dir.join(PAGE_LOCK_FILE), action: "lock", source })
            }
        }
    }

    /// The lease held by the descriptor `file` was handed over with.
    pub fn inherited(file: File) -> PageLease {
        PageLease { file }
    }

    /// Write who holds it into the file.
    ///
    /// # Errors
    ///
    /// The file cannot be written.
    pub fn note(&mut self, holder: &Holder) -> std::io::Result<()> {
        let text = serde_json::to_vec(holder).map_err(std::io::Error::other)?;
        self.file.set_len(0)?;
        self.file.rewind()?;
        self.file.write_all(&text)
    }

    /// The descriptor to hand over to the process that serves next (the
    /// lease is held as long as any copy of it is open).
    ///
    /// # Errors
    ///
    /// The descriptor cannot be duplicated.
    pub fn handover(&self) -> std::io::Result<File> {
        self.file.try_clone()
    }

    /// Give the lease up now, for every copy of its descriptor.
    pub fn release(self) {
        let _ = self.file.set_len(0);
        let _ = self.file.unlock();
    }
}

/// Who holds the page's lease in `dir`, if anyone does (and wrote a note).
///
/// # Ambient Authority
///
/// Opens `dir` by its path.
pub fn holder(dir: &Path) -> Option<Holder> {
    let mut file = open_lock(dir).ok()?;
    match file.try_lock_shared() {
        // Nobody holds it: whatever note is there is a crashed holder's.
        Ok(()) => {
            let _ = file.unlock();
            None
        }
        Err(TryLockError::WouldBlock) => {
            let mut text = Vec::new();
            (&mut file).take(MAX_NOTE_BYTES).read_to_end(&mut text).ok()?;
            serde_json::from_slice(&text).ok()
        }
        Err(TryLockError::Error(_)) => None,
    }
}

impl super::Approvals {
    /// The state directory the approvals are kept in (`None` for a fleet's,
    /// in Redis, or when there is none: then in this process alone).
    pub fn state_dir(&self) -> Option<&Path> {
        match &self.kept {
            super::Kept::File(file) => file.dir(),
            super::Kept::Local(_) | super::Kept::Shared(_) => None,
        }
    }

    /// `decide` with the number of approvals pending, atomically with
    /// respect to any process of the host opening one: under the state
    /// file's lock, on the blocking pool. (A fleet's approvals are counted
    /// in Redis first, which is not atomic; a fleet serves its page from
    /// its replicas, not from stdio servers.)
    ///
    /// # Errors
    ///
    /// The store cannot be read.
    pub async fn with_pending<R: Send + 'static>(
        &self,
        decide: impl FnOnce(usize) -> R + Send + 'static,
    ) -> Result<R, super::Unavailable> {
        match &self.kept {
            super::Kept::File(file) => {
                let file = file.clone();
                super::blocking(move || file.with_pending(super::now_ms(), decide)).await
            }
            super::Kept::Local(_) | super::Kept::Shared(_) => Ok(decide(self.pending().await?.len())),
        }
    }
}

fn open_lock(dir: &Path) -> Result<File, StateError> {
    let handle = open_dir(dir)?;
    open_private(&handle, PAGE_LOCK_FILE, false).map_err(|source| StateError::Io {
        path: dir.join(PAGE_LOCK_FILE),
        action: "open",
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_holder_at_a_time_and_its_note_only_while_it_holds() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(holder(dir.path()), None);
        let mut lease = PageLease::try_take(dir.path()).unwrap().unwrap();
        assert!(PageLease::try_take(dir.path()).unwrap().is_none(), "held");
        let me = Holder { pid: 7, base: "http://127.0.0.1:1".into(), since_ms: 1, handed_over: false };
        lease.note(&me).unwrap();
        assert_eq!(holder(dir.path()), Some(me.clone()));
        // Handed over: the copy holds it after the original is gone.
        let copy = PageLease::inherited(lease.handover().unwrap());
        drop(lease);
        assert!(PageLease::try_take(dir.path()).unwrap().is_none(), "the copy holds it");
        assert_eq!(holder(dir.path()), Some(me));
        copy.release();
        assert_eq!(holder(dir.path()), None);
        assert!(PageLease::try_take(dir.path()).unwrap().is_some(), "free again");
    }

    #[test]
    fn a_crashed_holders_note_is_not_a_holder() {
        let dir = tempfile::tempdir().unwrap();
        let mut lease = PageLease::try_take(dir.path()).unwrap().unwrap();
        lease.note(&Holder { pid: 7, base: "http://x".into(), since_ms: 1, handed_over: true }).unwrap();
        // Dropped without release, as a killed process's descriptors close.
        drop(lease);
        assert_eq!(holder(dir.path()), None);
    }
}
