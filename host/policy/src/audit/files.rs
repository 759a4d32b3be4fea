//! The files on disk: the head file beside the log (two copies of the
//! head, each with a check), reading a log from its end, private file
//! modes, directory fsync, the advisory lock, and the check that the log
//! and its head are regular files. Nothing read here is
//! trusted: a head file that is not what Airlock writes is reported as
//! damage, reading from the end gives up after a byte limit, and a path that
//! is (or resolves to) a FIFO, a device, a socket or a directory is refused
//! without blocking on it.

use std::fs::{FileType, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom};

use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::record::{is_sha256_hex, json_string};
use super::*;
use airlock_core::canonical_json::push_hex;
use airlock_core::text::cap;

/// The head file holds two copies of the head ("slots"), each always
/// written as exactly this many bytes at its own offset, one sector apart:
/// a rewrite goes to the older copy, so that a rewrite a crash tears leaves
/// the other one intact.
pub(super) const HEAD_SLOT_BYTES: usize = 512;
/// The head file's length: its two slots.
#[cfg(test)]
pub(super) const HEAD_BYTES: usize = 2 * HEAD_SLOT_BYTES;
/// A head file longer than this is damaged, not read.
const MAX_HEAD_FILE_BYTES: u64 = 4096;
/// Hex digits of a slot's `check`.
const CHECK_DIGITS: usize = 16;
/// Block size for reading a log from its end.
pub(super) const READ_CHUNK: u64 = 64 * 1024;

pub(super) fn head_path(log: &Path) -> PathBuf {
    let mut name = log.as_os_str().to_owned();
    name.push(".head");
    PathBuf::from(name)
}

/// What the head file says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Head {
    /// `seq` of the last record written.
    pub(super) seq: u64,
    /// Its `hash`.
    pub(super) hash: String,
    /// `seq` of the last record known to be on disk (the log was fsync'd
    /// through it): `seq` itself with `durability = "fsync"`, the record
    /// at the last sync (the log's open, Airlock's exit) with `"flush"`.
    pub(super) synced_seq: u64,
    /// Its `hash`.
    pub(super) synced_hash: String,
    /// The boot of the machine it was written in ([`boot_id`]), `None`
    /// where unknown: while the machine has not restarted, the page cache
    /// still holds every record written, on disk or not.
    pub(super) boot: Option<String>,
    /// How many times the head was written before: of two intact slots,
    /// the one with the higher is the newer (not the one naming the higher
    /// `seq`: a recovery of records lost with the machine names a lower
    /// one).
    pub(super) generation: u64,
}

impl Head {
    /// The head of a log whose records up to `seq` (of `hash`) are on disk,
    /// written now, first.
    pub(super) fn synced(seq: u64, hash: &str) -> Head {
        Head::written(seq, hash, (seq, hash), 0)
    }

    /// The head of a log whose last record is `seq` (of `hash`) and whose
    /// last record on disk is `synced`, written now as `generation`.
    pub(super) fn written(seq: u64, hash: &str, synced: (u64, &str), generation: u64) -> Head {
        let (synced_seq, synced_hash) = synced;
        let boot = boot_id().map(str::to_owned);
        Head { seq, hash: hash.to_owned(), synced_seq, synced_hash: synced_hash.to_owned(), boot, generation }
    }

    /// The last record the log must hold: the last written, unless the
    /// machine restarted since this head was written (or that cannot be
    /// known), when records after the last one on disk may have been lost
    /// with the page cache.
    pub(super) fn must_hold(&self) -> u64 {
        match (self.boot.as_deref(), boot_id()) {
            (Some(then), Some(now)) if then == now => self.seq,
            _ => self.synced_seq,
        }
    }
}

/// The id of the machine's current boot (Linux:
/// `/proc/sys/kernel/random/boot_id`, read once), `None` where there is
/// none.
pub(super) fn boot_id() -> Option<&'static str> {
    static BOOT: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    BOOT.get_or_init(|| {
        let text = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
        let id = text.trim();
        (id.len() == 36 && id.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')).then(|| id.to_owned())
    })
    .as_deref()
}

/// The head file as read: the newer intact slot, and where the next
/// rewrite goes.
pub(super) struct NamedHead {
    pub(super) head: Head,
    /// The slot not holding `head` (the older or the damaged one): the next
    /// rewrite goes there.
    pub(super) next_slot: usize,
    /// What is wrong with the other slot, when it is neither intact nor
    /// empty: a rewrite torn by a crash of the machine.
    pub(super) torn: Option<String>,
    /// Whether the file is empty (Airlock stopped right after creating it,
    /// before any record: it is written and synced before the first).
    pub(super) empty: bool,
}

/// One slot of the head file.
enum Slot {
    /// Never written.
    Empty,
    Intact(Head),
    Damaged(String),
}

/// Reads the head file. The outer error is I/O, the inner one a damaged file.
/// An empty file (Airlock stopped right after creating it) names no record.
/// A file with one intact slot names what that slot says; a file with none
/// is damaged: a crash tears at most the slot being rewritten.
pub(super) fn read_head(mut file: &File) -> io::Result<Result<NamedHead, String>> {
    file.seek(SeekFrom::Start(0))?;
    let mut bytes = Vec::new();
    file.take(MAX_HEAD_FILE_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_HEAD_FILE_BYTES {
        return Ok(Err(format!("longer than {MAX_HEAD_FILE_BYTES} bytes")));
    }
    let (first, second) = bytes.split_at(bytes.len().min(HEAD_SLOT_BYTES));
    let named = |head, next_slot, torn| Ok(Ok(NamedHead { head, next_slot, torn, empty: false }));
    match (parse_slot(first), parse_slot(second)) {
        (Slot::Intact(a), Slot::Intact(b)) if b.generation > a.generation => named(b, 0, None),
        (Slot::Intact(a), Slot::Intact(_)) => named(a, 1, None),
        (Slot::Intact(a), Slot::Empty) => named(a, 1, None),
        (Slot::Empty, Slot::Intact(b)) => named(b, 0, None),
        (Slot::Intact(a), Slot::Damaged(why)) => named(a, 1, Some(why)),
        (Slot::Damaged(why), Slot::Intact(b)) => named(b, 0, Some(why)),
        (Slot::Empty, Slot::Empty) => {
            let head = Head { boot: None, ..Head::synced(0, GENESIS) };
            Ok(Ok(NamedHead { head, next_slot: 0, torn: None, empty: true }))
        }
        (first, second) => {
            let why = |slot: Slot| match slot {
                Slot::Damaged(why) => why,
                _ => "empty".to_owned(),
            };
            Ok(Err(format!(
                "neither of its two copies is intact (first: {}; second: {}), and a crash tears at most one",
                why(first),
                why(second)
            )))
        }
    }
}

/// Reads one slot: empty, a head (in either form: with its `synced_seq`,
/// `synced_hash` and `check`, or as written before the head had two
/// copies, which names a record synced as written), or damaged.
fn parse_slot(bytes: &[u8]) -> Slot {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct RawHead {
        seq: u64,
        hash: String,
        synced_seq: Option<u64>,
        synced_hash: Option<String>,
        boot: Option<String>,
        generation: Option<u64>,
        check: Option<String>,
    }

    // A slot is padded with spaces; a file grown by a rewrite of the second
    // slot only has a hole (zeros) after a shorter first one.
    let end = bytes.iter().rposition(|&b| !b.is_ascii_whitespace() && b != 0).map_or(0, |i| i + 1);
    let Some(text) = bytes.get(..end).filter(|text| !text.is_empty()) else {
        return Slot::Empty;
    };
    let raw: RawHead = match serde_json::from_slice(text) {
        Ok(raw) => raw,
        Err(e) => return Slot::Damaged(format!("not a head record ({e})")),
    };
    let valid = |seq: u64, hash: &str| is_sha256_hex(hash) && (seq != 0 || hash == GENESIS);
    if !valid(raw.seq, &raw.hash) {
        return Slot::Damaged(format!("\"hash\" {:?} is not a valid hash for record {}", cap(&raw.hash, 80), raw.seq));
    }
    let head = match (raw.synced_seq, raw.synced_hash, raw.generation, raw.check) {
        // Written before the head had two copies: every record it names
        // counts as on disk.
        (None, None, None, None) if raw.boot.is_none() => {
            let (seq, hash) = (raw.seq, raw.hash);
            Head { seq, hash: hash.clone(), synced_seq: seq, synced_hash: hash, boot: None, generation: 0 }
        }
        (Some(synced_seq), Some(synced_hash), Some(generation), Some(check)) => {
            let head = Head { seq: raw.seq, hash: raw.hash, synced_seq, synced_hash, boot: raw.boot, generation };
            let consistent = valid(head.synced_seq, &head.synced_hash)
                && head.synced_seq <= head.seq
                && (head.synced_seq != head.seq || head.synced_hash == head.hash);
            if !consistent {
                return Slot::Damaged(format!(
                    "it names record {} as on disk, which does not fit record {} as written",
                    head.synced_seq, head.seq
                ));
            }
            if check != head_check(&head) {
                return Slot::Damaged("its \"check\" does not match what it says".to_owned());
            }
            head
        }
        _ => {
            return Slot::Damaged(
                "\"synced_seq\", \"synced_hash\", \"generation\" and \"check\" go together, and \"boot\" with them"
                    .to_owned(),
            );
        }
    };
    Slot::Intact(head)
}

/// A slot's `check`: the first hex digits of the SHA-256 of what it says,
/// so that a slot a crash tore (old and new bytes mixed) is told from an
/// intact one. No secret: it detects accidents, not edits.
fn head_check(head: &Head) -> String {
    let boot = head.boot.as_deref().unwrap_or_default();
    let Head { seq, hash, synced_seq, synced_hash, generation, .. } = head;
    let text = format!("{seq} {hash} {synced_seq} {synced_hash} {boot} {generation}");
    let mut hex = String::with_capacity(64);
    push_hex(&mut hex, &Sha256::digest(text.as_bytes()));
    hex.truncate(CHECK_DIGITS);
    hex
}

/// A slot's content: a fixed width, so that rewriting it in place never
/// leaves the end of a longer previous version behind.
fn slot_bytes(head: &Head) -> Vec<u8> {
    let Head { seq, hash, synced_seq, synced_hash, boot, generation } = head;
    let check = head_check(head);
    let boot = boot.as_deref().map(|boot| format!(",\"boot\":{}", json_string(boot))).unwrap_or_default();
    // At most 325 bytes: three 20-digit numbers, two 64-digit hashes, a
    // 36-byte boot id.
    let mut text = format!(
        "{{\"seq\":{seq},\"hash\":\"{hash}\",\"synced_seq\":{synced_seq},\"synced_hash\":\"{synced_hash}\"{boot},\
         \"generation\":{generation},\"check\":\"{check}\"}}"
    );
    let width = HEAD_SLOT_BYTES - 1;
    if text.len() < width {
        text.push_str(&" ".repeat(width - text.len()));
    }
    text.push('\n');
    text.into_bytes()
}

/// The whole head file with `head` in both slots, as a new log's head file
/// is written.
#[cfg(test)]
pub(super) fn head_file_bytes(head: &Head) -> Vec<u8> {
    let mut bytes = slot_bytes(head);
    bytes.extend_from_slice(&slot_bytes(head));
    bytes
}

/// Rewrites one slot of the head file in place: one positioned write of
/// one sector, no rename.
pub(super) fn write_head(file: &File, slot: usize, head: &Head) -> io::Result<()> {
    let bytes = slot_bytes(head);
    let offset = (slot * HEAD_SLOT_BYTES) as u64;
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        file.write_all_at(&bytes, offset)
    }
    #[cfg(not(unix))]
    {
        let mut file = file;
        file.seek(SeekFrom::Start(offset))?;
        file.write_all(&bytes)
    }
}

/// The bytes of the last `lines` lines of `file` (of length `len`), from the
/// start of the first of them; a final piece without a line end counts as a
/// line. `None` when more than `max_bytes` were read without finding that start.
pub(super) fn read_last_lines(mut file: &File, len: u64, lines: usize, max_bytes: u64) -> io::Result<Option<Vec<u8>>> {
    let mut chunks = Vec::new();
    let mut start = len;
    let mut found = 0;
    let mut cut = None;
    while start > 0 && cut.is_none() {
        if len - start >= max_bytes {
            return Ok(None);
        }
        let step = READ_CHUNK.min(start);
        start -= step;
        let mut chunk = vec![0; step as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut chunk)?;
        for (i, &byte) in chunk.iter().enumerate().rev() {
            let offset = start + i as u64;
            // A line end at the very end closes the last line, not a new one.
            if byte == b'\n' && offset + 1 != len {
                found += 1;
                if found == lines {
                    cut = Some(offset + 1);
                    break;
                }
            }
        }
        chunks.push(chunk);
    }
    let mut bytes = Vec::with_capacity((len - start) as usize);
    for chunk in chunks.iter().rev() {
        bytes.extend_from_slice(chunk);
    }
    bytes.drain(..(cut.unwrap_or(0) - start) as usize);
    Ok(Some(bytes))
}

/// How many bytes at the end of the log (of length `len`) are spaces left by
/// a readiness probe that a crash interrupted (see `AuditLog::writable`):
/// at most `PROBE_BYTES` spaces after the last line end (or making up the
/// whole file). A record starts with `{`, so a torn record is never taken
/// for filler. 0 when there are none.
pub(super) fn probe_filler(mut file: &File, len: u64) -> io::Result<u64> {
    let n = len.min(PROBE_BYTES as u64 + 1);
    if n == 0 {
        return Ok(0);
    }
    let mut tail = vec![0; n as usize];
    file.seek(SeekFrom::Start(len - n))?;
    file.read_exact(&mut tail)?;
    Ok(filler_len(&tail, len))
}

/// The filler at the end of `tail`, the last bytes of a file of `len` bytes.
pub(super) fn filler_len(tail: &[u8], len: u64) -> u64 {
    let spaces = tail.iter().rev().take_while(|&&b| b == b' ').count();
    if spaces == 0 || spaces > PROBE_BYTES {
        return 0;
    }
    let after_line_end = match tail.len().checked_sub(spaces + 1).and_then(|i| tail.get(i)) {
        Some(&byte) => byte == b'\n',
        None => spaces as u64 == len,
    };
    if after_line_end { spaces as u64 } else { 0 }
}

/// Options for files only the operator should read (0600 on unix; elsewhere
/// the directory's permissions apply), opened as [`no_waiting`] says.
pub(super) fn private_options() -> OpenOptions {
    let mut options = no_waiting();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
}

/// Options under which opening a path that turns out not to be a regular
/// file cannot block or take over a terminal: `O_NONBLOCK` (a FIFO with no
/// reader or no writer opens at once, or fails) and `O_NOCTTY` on unix.
/// `O_NONBLOCK` has no effect on a regular file's reads and writes.
pub(super) fn no_waiting() -> OpenOptions {
    #[allow(unused_mut)]
    let mut options = OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    options
}

/// What a file that is not a regular file is, as a refusal names it; `None`
/// for a regular file.
pub(super) fn irregular_kind(file_type: FileType) -> Option<&'static str> {
    if file_type.is_file() {
        return None;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return Some("a FIFO");
        }
        if file_type.is_char_device() {
            return Some("a character device");
        }
        if file_type.is_block_device() {
            return Some("a block device");
        }
        if file_type.is_socket() {
            return Some("a socket");
        }
    }
    Some(if file_type.is_dir() { "a directory" } else { "not a regular file" })
}

/// What `path` resolves to (through symlinks) when that is not a regular
/// file, checked without opening it. `None` for a regular file, and for a
/// path that does not exist (it is created as a regular file) or cannot be
/// inspected (opening it reports why).
pub(super) fn irregular_path(path: &Path) -> Option<&'static str> {
    std::fs::metadata(path).ok().and_then(|meta| irregular_kind(meta.file_type()))
}

/// What an opened file is (`fstat` of its descriptor) when that is not a
/// regular file: the check that a swap between [`irregular_path`] and the
/// open cannot get past.
pub(super) fn irregular_file(file: &File) -> io::Result<Option<&'static str>> {
    Ok(irregular_kind(file.metadata()?.file_type()))
}

/// The refusal of `path`, the log (`[audit] file`, `written` as the operator
/// wrote it) or, when `head`, its head file, which is or resolves to `kind`.
pub(super) fn not_regular(written: &Path, path: &Path, head: bool, kind: &str) -> AuditError {
    let target = std::fs::symlink_metadata(path)
        .is_ok_and(|meta| meta.file_type().is_symlink())
        .then(|| std::fs::canonicalize(path).ok())
        .flatten();
    let which = if head {
        format!(": its head file {}", path.display())
    } else if path != written {
        format!(" ({})", path.display())
    } else {
        String::new()
    };
    let is = match target {
        Some(target) => format!("resolves to {}, {kind}", target.display()),
        None => format!("is {kind}"),
    };
    let must = if head { "the head file" } else { "the audit log" };
    AuditError::NotRegular {
        path: path.to_path_buf(),
        message: format!(
            "`[audit] file = \"{}\"`{which} {is}; {must} must be a regular file (or a symlink to one): records \
             written to anything else can vanish or block",
            written.display()
        ),
    }
}

/// Opens `path` for reading, refusing anything but a regular file without
/// blocking on it (a FIFO with no writer): the error says what it is.
pub(super) fn open_regular(path: &Path) -> io::Result<File> {
    let file = no_waiting().read(true).open(path)?;
    match irregular_file(&file)? {
        None => Ok(file),
        Some(kind) => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("it is {kind}; an audit log and its head file are regular files"),
        )),
    }
}

#[cfg(unix)]
pub(super) fn sync_parent_dir(path: &Path) -> io::Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    File::open(dir)?.sync_all()
}

#[cfg(not(unix))]
pub(super) fn sync_parent_dir(_path: &Path) -> io::Result<()> {
    Ok(())
}

pub(super) enum Lock {
    Held,
    Busy,
}

/// Takes an advisory lock without waiting.
pub(super) fn try_lock(file: &File, shared: bool) -> io::Result<Lock> {
    let result = if shared { file.try_lock_shared() } else { file.try_lock() };
    match result {
        Ok(()) => Ok(Lock::Held),
        Err(TryLockError::WouldBlock) => Ok(Lock::Busy),
        // Some file systems cannot lock; the log then relies on the operator
        // running one writer, as it would without the lock.
        Err(TryLockError::Error(e)) if e.kind() == io::ErrorKind::Unsupported => Ok(Lock::Held),
        Err(TryLockError::Error(e)) => Err(e),
    }
}
