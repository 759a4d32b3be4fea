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

use super::error::{Body, Capped, DistributionError};
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
    ///
    /// # Errors
    ///
    /// `digest` is not a sha256 digest.
    pub fn blob_path(&self, digest: &str) -> Result<PathBuf, DistributionError> {
        let hex = check_digest(digest)?;
        Ok(self.root.join("blobs/sha256").join(hex))
    }

    /// The blob with `digest`, checked, or `None` if the store lacks it.
    ///
    /// # Errors
    ///
    /// It is larger than `max` (the cap of what it is, `body`), cannot be
    /// read, or its bytes do not hash to `digest` (the store was changed
    /// under us).
    pub fn read(&self, digest: &str, max: u64, body: Body) -> Result<Option<Vec<u8>>, DistributionError> {
        let path = self.blob_path(digest)?;
        let too_large = |path: PathBuf, size| DistributionError::OverCap {
            subject: path.display().to_string(),
            what: Capped::StoredBlob { digest: digest.to_owned(), body },
            size,
            cap: max,
        };
        let Some(bytes) = read_capped(&path, max).map_err(|failure| failure.into_error(path.clone(), too_large))?
        else {
            return Ok(None);
        };
        let actual = sha256_digest(&bytes);
        if actual != digest {
            return Err(DistributionError::StoreChanged { path, digest: digest.to_owned(), actual });
        }
        Ok(Some(bytes))
    }

    /// Store `bytes` under their digest (returned).
    ///
    /// # Errors
    ///
    /// The store cannot be written.
    pub fn put(&self, bytes: &[u8]) -> Result<String, DistributionError> {
        let digest = sha256_digest(bytes);
        let path = self.blob_path(&digest)?;
        write_atomic(&path, bytes)?;
        Ok(digest)
    }

    /// The digest of the signature manifest stored with the component
    /// manifest `digest`, if any (a pointer, checked when followed).
    ///
    /// # Errors
    ///
    /// `digest` is not a sha256 digest, or the pointer cannot be read.
    pub fn signature_of(&self, digest: &str) -> Result<Option<String>, DistributionError> {
        let path = self.root.join("signatures/sha256").join(check_digest(digest)?);
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(check_digest(text.trim()).ok().map(|_| text.trim().to_owned())),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(DistributionError::Read { path, error }),
        }
    }

    /// Record `signature` as the signature manifest of `digest`.
    ///
    /// # Errors
    ///
    /// The store cannot be written.
    pub fn set_signature_of(&self, digest: &str, signature: &str) -> Result<(), DistributionError> {
        let path = self.root.join("signatures/sha256").join(check_digest(digest)?);
        write_atomic(&path, signature.as_bytes())
    }
}

/// `sha256:HEX` of `bytes`.
pub fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// Why a capped read of a file failed; each caller says which file it is
/// and which cap, in its own variant of [`DistributionError`].
#[derive(Debug)]
pub(crate) enum ReadFailure {
    /// The file cannot be read.
    Io(std::io::Error),
    /// It is larger than the cap (`size` bytes, or more: a file that grows
    /// while read is counted as far as it was read).
    TooLarge {
        /// Its size as read.
        size: u64,
    },
    /// It is not UTF-8 text.
    NotUtf8,
}

impl ReadFailure {
    /// The error for this failure to read `path`: the shared variants for
    /// an unreadable file or one that is not text, `too_large(size)` for a
    /// file over the cap, which only the caller can name.
    pub(crate) fn into_error(
        self,
        path: PathBuf,
        too_large: impl FnOnce(PathBuf, u64) -> DistributionError,
    ) -> DistributionError {
        match self {
            ReadFailure::Io(error) => DistributionError::Read { path, error },
            ReadFailure::NotUtf8 => DistributionError::NotUtf8 { path },
            ReadFailure::TooLarge { size } => too_large(path, size),
        }
    }
}

/// The bytes of the file at `path`, or `None` if there is none. At most
/// `max` bytes are read: a larger file is refused as
/// [`ReadFailure::TooLarge`], which the caller names with its cap and key.
///
/// # Errors
///
/// The file cannot be read, or it is larger than `max`.
pub(crate) fn read_capped(path: &Path, max: u64) -> Result<Option<Vec<u8>>, ReadFailure> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(ReadFailure::Io(err)),
    };
    let mut bytes = Vec::new();
    file.take(max.saturating_add(1)).read_to_end(&mut bytes).map_err(ReadFailure::Io)?;
    if bytes.len() as u64 > max {
        let size = file_size(path).unwrap_or(bytes.len() as u64);
        return Err(ReadFailure::TooLarge { size });
    }
    Ok(Some(bytes))
}

/// The size of the file at `path`, for a message about a file over its cap.
fn file_size(path: &Path) -> Option<u64> {
    std::fs::metadata(path).ok().map(|meta| meta.len())
}

/// [`read_capped`] for a text file.
///
/// # Errors
///
/// As [`read_capped`], and a file that is not UTF-8.
pub(crate) fn read_capped_text(path: &Path, max: u64) -> Result<Option<String>, ReadFailure> {
    let Some(bytes) = read_capped(path, max)? else { return Ok(None) };
    String::from_utf8(bytes).map(Some).map_err(|_| ReadFailure::NotUtf8)
}

/// Write `bytes` to `path` through a temporary file in the same directory
/// and a rename, creating the directory.
///
/// # Errors
///
/// The directory cannot be created or the file cannot be written.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), DistributionError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|error| DistributionError::CreateDir { path: dir.to_owned(), error })?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    // Unique per write: two loads in this process may store the same blob.
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(".{name}.{}.{n}.tmp", std::process::id()));
    let written = std::fs::File::create(&tmp).and_then(|mut file| {
        file.write_all(bytes)?;
        file.sync_all()
    });
    if let Err(error) = written.and_then(|()| std::fs::rename(&tmp, path)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(DistributionError::Write { path: path.to_owned(), error });
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
        assert_eq!(store.read(&digest, 5, Body::Manifest).unwrap().as_deref(), Some(&b"hello"[..]));
        let err = store.read(&digest, 4, Body::Manifest).unwrap_err().to_string();
        assert!(err.contains("4-byte cap ([distribution] max_manifest_bytes raises it)"), "{err}");
        std::fs::write(store.blob_path(&digest).unwrap(), b"hellO").unwrap();
        let err = store.read(&digest, 100, Body::Manifest).unwrap_err();
        assert!(matches!(&err, DistributionError::StoreChanged { digest: d, .. } if *d == digest), "{err}");
        assert!(err.to_string().contains("store was changed"), "{err}");
        let absent = sha256_digest(b"other");
        assert_eq!(store.read(&absent, 100, Body::Manifest).unwrap(), None);
        store.set_signature_of(&digest, &absent).unwrap();
        assert_eq!(store.signature_of(&digest).unwrap(), Some(absent));
    }
}
