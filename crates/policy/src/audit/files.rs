//! The files on disk: the head file beside the log, reading a log from its
//! end, private file modes, directory fsync, the advisory lock, and the
//! check that the log and its head are regular files. Nothing read here is
//! trusted: a head file that is not what Airlock writes is reported as
//! damage, reading from the end gives up after a byte limit, and a path that
//! is (or resolves to) a FIFO, a device, a socket or a directory is refused
//! without blocking on it.

use std::fs::{FileType, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom};

use serde::Deserialize;

use super::record::is_sha256_hex;
use super::*;
use airlock_core::text::cap;

/// The head file is always written as exactly this many bytes.
pub(super) const HEAD_BYTES: usize = 128;
/// A head file longer than this is damaged, not read.
const MAX_HEAD_FILE_BYTES: u64 = 4096;
/// Block size for reading a log from its end.
pub(super) const READ_CHUNK: u64 = 64 * 1024;

pub(super) fn head_path(log: &Path) -> PathBuf {
    let mut name = log.as_os_str().to_owned();
    name.push(".head");
    PathBuf::from(name)
}

/// What the head file says: the last record written.
pub(super) struct Head {
    pub(super) seq: u64,
    pub(super) hash: String,
}

/// Reads the head file. The outer error is I/O, the inner one a damaged file.
/// An empty file (Airlock stopped right after creating it) names no record.
pub(super) fn read_head(mut file: &File) -> io::Result<Result<Head, String>> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct RawHead {
        seq: u64,
        hash: String,
    }

    file.seek(SeekFrom::Start(0))?;
    let mut bytes = Vec::new();
    file.take(MAX_HEAD_FILE_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_HEAD_FILE_BYTES {
        return Ok(Err(format!("longer than {MAX_HEAD_FILE_BYTES} bytes")));
    }
    let text = bytes.trim_ascii_end();
    if text.is_empty() {
        return Ok(Ok(Head { seq: 0, hash: GENESIS.to_owned() }));
    }
    let raw: RawHead = match serde_json::from_slice(text) {
        Ok(raw) => raw,
        Err(e) => return Ok(Err(format!("not a head record ({e})"))),
    };
    if !is_sha256_hex(&raw.hash) || (raw.seq == 0 && raw.hash != GENESIS) {
        return Ok(Err(format!("\"hash\" {:?} is not a valid hash for record {}", cap(&raw.hash, 80), raw.seq)));
    }
    Ok(Ok(Head { seq: raw.seq, hash: raw.hash }))
}

/// The head file's content: a fixed width, so that rewriting it in place never
/// leaves the end of a longer previous version behind.
pub(super) fn head_bytes(seq: u64, hash: &str) -> Vec<u8> {
    let mut text = format!("{{\"seq\":{seq},\"hash\":\"{hash}\"}}");
    // At most 102 bytes: a 20-digit seq and a 64-digit hash.
    let width = HEAD_BYTES - 1;
    if text.len() < width {
        text.push_str(&" ".repeat(width - text.len()));
    }
    text.push('\n');
    text.into_bytes()
}

/// Rewrites the head file in place: one positioned write, no rename.
pub(super) fn write_head(file: &File, seq: u64, hash: &str) -> io::Result<()> {
    let bytes = head_bytes(seq, hash);
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        file.write_all_at(&bytes, 0)
    }
    #[cfg(not(unix))]
    {
        let mut file = file;
        file.seek(SeekFrom::Start(0))?;
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
