//! The content-addressed local store of pulled blobs: manifests, component
//! layers, signature manifests and payloads, each in a file named by the
//! sha256 of its bytes (`blobs/sha256/HEX`), and for each component
//! manifest the digest of the signature manifest fetched with it
//! (`signatures/sha256/HEX`).
//!
//! Nothing in the store is trusted: a blob is read back only through
//! [`Store::read`], which checks its sha256 against the digest it was asked
//! for (a component layer is checked by the loader as it compiles it, see
//! `distribution::materialize`), and a signature index only points at blobs
//! that are verified in turn. Files are written to a temporary name and
//! renamed, so a crash leaves no half-written blob under a digest.
//!
//! The capped file read ([`read_capped`]) and the atomic write here serve
//! the other files of `distribution/` too (the lock file, auth, password and
//! key files, a component to push): none is read past its cap.

use super::reference::check_digest;
use sha2::{Digest as _, Sha256};
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

/// The store at a directory.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
}

impl Store {
    /// The store at `root` (created on first write).
    pub fn new(root: &Path) -> Store {
        Store { root: root.to_owned() }
    }

    /// Where the blob with `digest` lives (whether or not it is there).
    pub fn blob_path(&self, digest: &str) -> Result<PathBuf, String> {
        let hex = check_digest(digest)?;
        Ok(self.root.join("blobs/sha256").join(hex))
    }

    /// The blob with `digest`, checked, or `None` if the store lacks it.
    ///
    /// # Errors
    ///
    /// It is larger than `max` (the message names `key`, which raises it),
    /// cannot be read, or its bytes do not hash to `digest` (the store was
    /// changed under us).
    pub fn read(&self, digest: &str, max: u64, key: &str) -> Result<Option<Vec<u8>>, String> {
        let path = self.blob_path(digest)?;
        let too_large =
            || format!("{}: stored blob {digest} is larger than the {max}-byte cap ({key} raises it)", path.display());
        let Some(bytes) = read_capped(&path, max, too_large)? else { return Ok(None) };
        let actual = sha256_digest(&bytes);
        if actual != digest {
            return Err(format!(
                "{}: the stored blob for {digest} has sha256 {actual}: the store was changed; delete the file and \
                 pull again",
                path.display()
            ));
        }
        Ok(Some(bytes))
    }

    /// Store `bytes` under their digest (returned).
    ///
    /// # Errors
    ///
    /// The store cannot be written.
    pub fn put(&self, bytes: &[u8]) -> Result<String, String> {
        let digest = sha256_digest(bytes);
        let path = self.blob_path(&digest)?;
        write_atomic(&path, bytes)?;
        Ok(digest)
    }

    /// The digest of the signature manifest stored with the component
    /// manifest `digest`, if any (a pointer, checked when followed).
    pub fn signature_of(&self, digest: &str) -> Result<Option<String>, String> {
        let path = self.root.join("signatures/sha256").join(check_digest(digest)?);
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(check_digest(text.trim()).ok().map(|_| text.trim().to_owned())),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(err) => Err(format!("{}: cannot read: {err}", path.display())),
        }
    }

    /// Record `signature` as the signature manifest of `digest`.
    ///
    /// # Errors
    ///
    /// The store cannot be written.
    pub fn set_signature_of(&self, digest: &str, signature: &str) -> Result<(), String> {
        let path = self.root.join("signatures/sha256").join(check_digest(digest)?);
        write_atomic(&path, signature.as_bytes())
    }
}

/// `sha256:HEX` of `bytes`.
pub fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// The bytes of the file at `path`, or `None` if there is none. At most
/// `max` bytes are read: a larger file is refused with `too_large()`, which
/// says which cap it is and what raises it.
///
/// # Errors
///
/// The file cannot be read (named), or it is larger than `max`.
pub(crate) fn read_capped(
    path: &Path,
    max: u64,
    too_large: impl FnOnce() -> String,
) -> Result<Option<Vec<u8>>, String> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(format!("{}: cannot read: {err}", path.display())),
    };
    let mut bytes = Vec::new();
    file.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|err| format!("{}: cannot read: {err}", path.display()))?;
    if bytes.len() as u64 > max {
        return Err(too_large());
    }
    Ok(Some(bytes))
}

/// [`read_capped`] for a text file.
///
/// # Errors
///
/// As [`read_capped`], and a file that is not UTF-8.
pub(crate) fn read_capped_text(
    path: &Path,
    max: u64,
    too_large: impl FnOnce() -> String,
) -> Result<Option<String>, String> {
    let Some(bytes) = read_capped(path, max, too_large)? else { return Ok(None) };
    String::from_utf8(bytes).map(Some).map_err(|_| format!("{}: not UTF-8 text", path.display()))
}

/// Write `bytes` to `path` through a temporary file in the same directory
/// and a rename, creating the directory.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|err| format!("{}: cannot create: {err}", dir.display()))?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    // Unique per write: two loads in this process may store the same blob.
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(".{name}.{}.{n}.tmp", std::process::id()));
    let written = std::fs::File::create(&tmp).and_then(|mut file| {
        file.write_all(bytes)?;
        file.sync_all()
    });
    if let Err(err) = written.and_then(|()| std::fs::rename(&tmp, path)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!("{}: cannot write: {err}", path.display()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_are_read_back_only_when_their_bytes_match_the_digest() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let digest = store.put(b"hello").unwrap();
        assert_eq!(store.read(&digest, 5, "k").unwrap().as_deref(), Some(&b"hello"[..]));
        let err = store.read(&digest, 4, "[distribution] k").unwrap_err();
        assert!(err.contains("4-byte cap ([distribution] k raises it)"), "{err}");
        std::fs::write(store.blob_path(&digest).unwrap(), b"hellO").unwrap();
        let err = store.read(&digest, 100, "k").unwrap_err();
        assert!(err.contains("store was changed") && err.contains(&digest), "{err}");
        let absent = sha256_digest(b"other");
        assert_eq!(store.read(&absent, 100, "k").unwrap(), None);
        store.set_signature_of(&digest, &absent).unwrap();
        assert_eq!(store.signature_of(&digest).unwrap(), Some(absent));
    }
}
