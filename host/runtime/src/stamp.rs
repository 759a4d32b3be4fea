//! `airlock tool stamp`: record a component's metadata in it (`recorded.rs`).
//!
//! The component is compiled as a load compiles it (in the metered compiler
//! process, never in this process), its `metadata` export run under the
//! default limits with no grants and checked as a load checks it, and the
//! file rewritten with the `airlock-metadata` section (replacing one it
//! had). A file that already records the same metadata is left as it is.

use crate::compiler::MAX_COMPONENT_BYTES;
use crate::engine::Runtime;
use crate::loader::{self, LoadError};
use crate::metadata::check_metadata;
use crate::recorded;
use crate::tool_settings::ToolSettings;
use std::path::Path;

/// What stamping one file did.
#[derive(Debug)]
pub struct Stamped {
    /// The tool's name.
    pub name: String,
    /// Whether the file was rewritten (`false`: it recorded the same
    /// metadata already).
    pub rewritten: bool,
    /// The file's size now.
    pub size: u64,
}

/// Record the metadata of the component at `path` in it.
///
/// # Errors
///
/// The file cannot be read or written, or a load would refuse the
/// component (see [`LoadError`]).
pub async fn stamp(runtime: &Runtime, path: &Path) -> Result<Stamped, LoadError> {
    let io = |source| LoadError::Io { path: path.to_owned(), source };
    let size = std::fs::metadata(path).map_err(io)?.len();
    if size > MAX_COMPONENT_BYTES {
        return Err(LoadError::TooLarge { path: path.to_owned(), size });
    }
    let bytes = std::fs::read(path).map_err(io)?;
    let settings = ToolSettings::default();
    let built = loader::compile_bytes(runtime, path, &bytes, &settings).await?;
    let pre = loader::bind(runtime, path, built.component(), built.tier())?;
    let raw = loader::read_metadata(&pre, &settings, path, None).await?;
    let bad = |why| LoadError::BadMetadata { path: path.to_owned(), why };
    let name = check_metadata(raw.clone()).map_err(bad)?.name;
    let stamped = recorded::stamp(&bytes, &raw).map_err(bad)?;
    let rewritten = stamped != bytes;
    if rewritten {
        // Written beside it and renamed over it: a reader sees the old
        // file or the new one, never half of one.
        let temp = path.with_extension("wasm.stamping");
        std::fs::write(&temp, &stamped).and_then(|()| std::fs::rename(&temp, path)).map_err(|source| {
            let _ = std::fs::remove_file(&temp);
            io(source)
        })?;
    }
    Ok(Stamped { name, rewritten, size: stamped.len() as u64 })
}
