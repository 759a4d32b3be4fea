//! The approvals of one host kept in its state directory (`[approvals]
//! state_dir`), so that every Airlock process of the host shares them: an
//! approval a stdio server opened is still there when that process has
//! ended, the process that serves the page answers it, and the call made
//! again in a new process runs under it, once.
//!
//! One [`StateFile`], [`APPROVALS_FILE`], holds them all; each change (open,
//! answer, take) is one read-modify-write under the file's exclusive lock,
//! with the same checks as a fleet's Lua scripts, so nothing is answered
//! twice or used twice across processes either. Reads take no lock. A
//! process waiting for an answer given in another reads the file again
//! every [`FILE_POLL`].
//!
//! The key that signs links ([`LinkKey`]) is kept beside them
//! ([`LINK_KEY_FILE`], made once), so that a link made by one process is
//! checked by another, and after a restart.
//!
//! A damaged file is moved aside (`NAME.damaged-<time>`, with a warning
//! naming both) and a new one started: the approvals that were waiting are
//! asked for again; nothing is approved by the loss. The file is opened on
//! first use: a host that never opens an approval never touches the
//! directory.

use super::{Caps, Full, NotAnswered, NotUsed, Opened, Record, Unavailable, make_room, use_once};
use crate::approval::link::LinkKey;
use crate::approval::state_file::{LazyStateFile, StateError, StateFile};
use crate::approval::{Answer, Approval};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The state file of approvals.
pub const APPROVALS_FILE: &str = "approvals.json";
/// The state file of the key that signs links and the page's cookies.
pub const LINK_KEY_FILE: &str = "link-key.json";
/// How often a call waiting for an answer reads the state file again.
pub const FILE_POLL: Duration = Duration::from_millis(100);

/// What [`APPROVALS_FILE`] holds.
#[derive(Default, Serialize, Deserialize)]
struct Doc {
    /// Every live approval (pending, answered, used), by id.
    #[serde(default)]
    approvals: BTreeMap<String, Stored>,
}

/// One approval as kept.
#[derive(Serialize, Deserialize)]
struct Stored {
    record: Record,
    /// The call key it answers for.
    key: String,
    #[serde(default)]
    answer: Option<Answer>,
    #[serde(default)]
    used: bool,
}

impl Stored {
    fn approval(&self) -> Approval {
        self.record.clone().into_approval(self.answer.clone(), self.used)
    }

    fn pending(&self, now_ms: u64) -> bool {
        self.answer.is_none() && self.record.expires_ms > now_ms
    }
}

impl Doc {
    /// Forget what has expired.
    fn prune(&mut self, now_ms: u64) {
        self.approvals.retain(|_, a| a.record.expires_ms > now_ms);
    }

    fn pending(&self, now_ms: u64) -> impl Iterator<Item = &Stored> {
        self.approvals.values().filter(move |a| a.pending(now_ms))
    }
}

/// The approvals of a host, in its state directory.
pub struct FileStore {
    /// [`APPROVALS_FILE`] in `[approvals] state_dir` (`None`: no directory
    /// could be named).
    file: Option<LazyStateFile>,
}

impl FileStore {
    /// The store in `dir`; nothing is opened until it is used.
    pub fn new(dir: Option<PathBuf>) -> Self {
        FileStore { file: dir.map(|dir| LazyStateFile::new(dir, APPROVALS_FILE)) }
    }

    /// The state directory.
    pub fn dir(&self) -> Option<&Path> {
        self.file.as_ref().map(LazyStateFile::dir)
    }

    fn describe(&self) -> String {
        self.dir().map_or_else(|| "no state directory".to_owned(), |d| d.join(APPROVALS_FILE).display().to_string())
    }

    fn file(&self) -> Result<Arc<StateFile>, Unavailable> {
        match &self.file {
            Some(file) => file.get().map_err(unavailable),
            None => Err(none_set()),
        }
    }

    /// `act` on the document; a damaged file is moved aside first (and
    /// said so), then `act` runs on a new one.
    fn with<R>(&self, mut act: impl FnMut(&StateFile) -> Result<R, StateError>) -> Result<R, Unavailable> {
        let file = self.file()?;
        match act(&file) {
            Err(StateError::Damaged { .. }) => {
                set_aside::<Doc>(&file, "the approvals waiting for an answer must be asked for again")?;
                act(&file).map_err(unavailable)
            }
            other => other.map_err(unavailable),
        }
    }

    /// As the fleet's `open`: the live unused approval of `key`, or
    /// `approval` opened within `caps`, withdrawing another principal's
    /// pending approval by the fair share when the host is full (see
    /// `make_room`), under the file's lock as every change is.
    ///
    /// # Errors
    ///
    /// The state file cannot be read or written, or it would be over its
    /// size cap.
    pub fn open(
        &self,
        approval: &Approval,
        key: &str,
        caps: Caps,
        now_ms: u64,
    ) -> Result<Result<Opened, Full>, Unavailable> {
        self.with(|file| {
            file.update(|doc: &mut Doc| {
                doc.prune(now_ms);
                if let Some(existing) = doc.approvals.values().find(|a| a.key == key && !a.used) {
                    return Ok(Opened::Existing(existing.approval()));
                }
                let pending: Vec<&Stored> = doc.pending(now_ms).collect();
                if pending.iter().filter(|a| a.record.principal == approval.principal).count() >= caps.per_principal {
                    return Err(Full::Principal(caps.per_principal));
                }
                let holders =
                    pending.iter().map(|a| (a.record.principal.as_str(), a.record.id.as_str(), a.record.created_ms));
                let victim = make_room(holders, &approval.principal, caps)?;
                let withdrawn = victim.and_then(|id| doc.approvals.remove(&id)).map(|gone| Box::new(gone.approval()));
                let stored = Stored { record: Record::of(approval), key: key.to_owned(), answer: None, used: false };
                doc.approvals.insert(approval.id.clone(), stored);
                Ok(Opened::New { approval: approval.clone(), withdrawn })
            })
        })
    }

    /// The live approval `id`.
    ///
    /// # Errors
    ///
    /// The state file cannot be read.
    pub fn get(&self, id: &str, now_ms: u64) -> Result<Option<Approval>, Unavailable> {
        self.with(|file| {
            let doc: Doc = file.read()?;
            Ok(doc.approvals.get(id).filter(|a| a.record.expires_ms > now_ms).map(Stored::approval))
        })
    }

    /// Record `answer` for the pending approval `id`.
    ///
    /// # Errors
    ///
    /// The state file cannot be read or written.
    pub fn answer(&self, id: &str, answer: &Answer, now_ms: u64) -> Result<Result<Approval, NotAnswered>, Unavailable> {
        self.with(|file| {
            file.update(|doc: &mut Doc| {
                doc.prune(now_ms);
                let stored = doc.approvals.get_mut(id).ok_or(NotAnswered::Unknown)?;
                if let Some(given) = &stored.answer {
                    return Err(NotAnswered::Answered(given.clone()));
                }
                stored.answer = Some(answer.clone());
                Ok(stored.approval())
            })
        })
    }

    /// Use the approved approval `id` for one call.
    ///
    /// # Errors
    ///
    /// The state file cannot be read or written.
    pub fn take(&self, id: &str, now_ms: u64) -> Result<Result<Approval, NotUsed>, Unavailable> {
        self.with(|file| {
            file.update(|doc: &mut Doc| {
                doc.prune(now_ms);
                let stored = doc.approvals.get_mut(id).ok_or(NotUsed::Unknown)?;
                use_once(stored.answer.as_ref(), &mut stored.used)?;
                Ok(stored.approval())
            })
        })
    }

    /// Pending approvals, soonest to expire first, at most `max`.
    ///
    /// # Errors
    ///
    /// The state file cannot be read.
    pub fn pending(&self, now_ms: u64, max: usize) -> Result<Vec<Approval>, Unavailable> {
        self.with(|file| {
            let doc: Doc = file.read()?;
            let mut list: Vec<Approval> = doc.pending(now_ms).map(Stored::approval).collect();
            list.sort_by_key(|a| a.expires_ms);
            list.truncate(max);
            Ok(list)
        })
    }

    /// `decide` with the number of approvals pending, under the state
    /// file's lock: no process of the host opens one until it returned.
    ///
    /// # Errors
    ///
    /// The state file cannot be read or written.
    pub fn with_pending<R>(&self, now_ms: u64, decide: impl FnOnce(usize) -> R) -> Result<R, Unavailable> {
        let mut decide = Some(decide);
        let decided = self.with(|file| {
            file.update(|doc: &mut Doc| {
                doc.prune(now_ms);
                let pending = doc.pending(now_ms).count();
                decide.take().map(|decide| decide(pending))
            })
        })?;
        decided.ok_or_else(|| Unavailable(format!("the approvals in {} could not be counted", self.describe())))
    }

    /// The key that signs links, made once in the state directory and the
    /// same for every process of the host.
    ///
    /// # Errors
    ///
    /// The directory or the key's file cannot be used, or there is no
    /// random source.
    pub fn link_key(&self) -> Result<LinkKey, Unavailable> {
        let file = open_in(self.dir(), LINK_KEY_FILE)?;
        let made = |file: &StateFile| {
            file.update(|doc: &mut KeyDoc| {
                let usable = doc.key.as_deref().and_then(|k| hex::decode(k).ok()).filter(|k| k.len() == KEY_BYTES);
                match usable {
                    Some(key) => Ok(key),
                    None => {
                        let key = LinkKey::random_bytes()?;
                        doc.key = Some(hex::encode(&key));
                        Ok(key)
                    }
                }
            })
        };
        let bytes = match made(&file) {
            Err(StateError::Damaged { .. }) => {
                set_aside::<KeyDoc>(&file, "links made before can no longer be opened; a new key signs new links")?;
                made(&file)
            }
            other => other,
        };
        let bytes = bytes.map_err(unavailable)?.map_err(Unavailable)?;
        Ok(LinkKey::from_bytes(&bytes))
    }
}

/// Bytes of the link key.
const KEY_BYTES: usize = 32;

/// What [`LINK_KEY_FILE`] holds.
#[derive(Default, Serialize, Deserialize)]
struct KeyDoc {
    /// The key, in hex.
    #[serde(default)]
    key: Option<String>,
}

/// `name` in `dir`, or why not.
fn open_in(dir: Option<&Path>, name: &str) -> Result<StateFile, Unavailable> {
    StateFile::open(dir.ok_or_else(none_set)?, name).map_err(unavailable)
}

fn none_set() -> Unavailable {
    Unavailable(
        "approvals are kept in a state directory, and none is set: set [approvals] state_dir (or [audit] file)"
            .to_owned(),
    )
}

/// Move a damaged `file` aside, saying what it means (`lost`).
fn set_aside<T: DeserializeOwned + Default>(file: &StateFile, lost: &str) -> Result<(), Unavailable> {
    if let Some(aside) = file.set_aside::<T>().map_err(unavailable)? {
        tracing::warn!(
            "the state file {} was damaged and is moved aside to {}; a new one is started ({lost})",
            file.path().display(),
            aside.display()
        );
    }
    Ok(())
}

fn unavailable(err: StateError) -> Unavailable {
    Unavailable(err.to_string())
}

#[cfg(test)]
mod tests;
