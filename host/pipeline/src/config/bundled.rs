//! Where the bundled tools are: the directory of `.wasm` files a config
//! with no `tool_dirs` of its own loads.
//!
//! Looked for, in order: `$AIRLOCK_TOOLS_DIR` (taken as given, the
//! container image sets it); `guests/` beside the binary's directory
//! (`target/guests` for `target/release/airlock`); `share/airlock/tools`
//! beside it (`PREFIX/share/airlock/tools` for `PREFIX/bin/airlock`, what
//! `make install` lays out); `./target/guests` (a source checkout). Every
//! place looked at is kept, so that "no tools are loaded" can name them.
//!
//! # Ambient Authority
//!
//! [`BundledTools::find`] reads the process environment, the path of the
//! running executable and the file system.

use std::path::{Path, PathBuf};

/// The environment variable that names the bundled tools' directory.
pub const TOOLS_DIR_ENV: &str = "AIRLOCK_TOOLS_DIR";

/// Where the bundled tools were looked for, and the directory found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundledTools {
    /// The directory the tools are loaded from; `None` when no place
    /// looked at exists.
    pub dir: Option<PathBuf>,
    /// Every place looked at, in order, each with why it was a candidate.
    pub looked: Vec<(PathBuf, &'static str)>,
}

impl BundledTools {
    /// Look in the places this module lists.
    pub fn find() -> Self {
        let exe = std::env::current_exe().ok();
        Self::search(std::env::var_os(TOOLS_DIR_ENV).map(PathBuf::from), exe.as_deref(), Path::is_dir)
    }

    /// The search itself: `env` is `$AIRLOCK_TOOLS_DIR`, `exe` the running
    /// binary, `exists` whether a candidate directory exists.
    fn search(env: Option<PathBuf>, exe: Option<&Path>, exists: impl Fn(&Path) -> bool) -> Self {
        if let Some(dir) = env.filter(|d| !d.as_os_str().is_empty()) {
            return BundledTools { dir: Some(dir.clone()), looked: vec![(dir, "$AIRLOCK_TOOLS_DIR")] };
        }
        let mut looked = Vec::new();
        if let Some(prefix) = exe.and_then(Path::parent).and_then(Path::parent) {
            looked.push((prefix.join("guests"), "beside the binary"));
            looked.push((prefix.join("share").join("airlock").join("tools"), "the binary's install prefix"));
        }
        looked.push((PathBuf::from("target").join("guests"), "a source checkout in the working directory"));
        let dir = looked.iter().map(|(dir, _)| dir).find(|dir| exists(dir)).cloned();
        BundledTools { dir, looked }
    }

    /// What to tell an operator when no tool is loaded: every place looked
    /// at and the keys that name a directory.
    pub fn explain(&self) -> String {
        let places: Vec<String> = self.looked.iter().map(|(dir, why)| format!("{} ({why})", dir.display())).collect();
        let found = match &self.dir {
            Some(dir) => format!("the bundled tools' directory {} holds no loadable tool", dir.display()),
            None => "no directory of bundled tools was found".to_owned(),
        };
        format!(
            "{found}; looked in: {}. Set {TOOLS_DIR_ENV}=DIR to the directory of the bundled tools (`make install` \
             puts them in PREFIX/share/airlock/tools), or tool_dirs = [\"DIR\"] in airlock.toml",
            places.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_wins_even_when_missing() {
        let found = BundledTools::search(Some("/opt/t".into()), Some(Path::new("/p/bin/airlock")), |_| false);
        assert_eq!(found.dir, Some(PathBuf::from("/opt/t")));
        assert_eq!(found.looked.len(), 1);
    }

    #[test]
    fn beside_the_binary_then_the_install_prefix_then_the_checkout() {
        let exe = Path::new("/p/bin/airlock");
        let all = BundledTools::search(None, Some(exe), |_| true);
        assert_eq!(all.dir, Some(PathBuf::from("/p/guests")));
        let installed = BundledTools::search(None, Some(exe), |d| d.ends_with("share/airlock/tools"));
        assert_eq!(installed.dir, Some(PathBuf::from("/p/share/airlock/tools")));
        let checkout = BundledTools::search(Some("".into()), Some(exe), |d| d == Path::new("target/guests"));
        assert_eq!(checkout.dir, Some(PathBuf::from("target/guests")));
        let none = BundledTools::search(None, Some(exe), |_| false);
        assert_eq!(none.dir, None);
        let text = none.explain();
        for needle in ["/p/guests", "/p/share/airlock/tools", "target/guests", TOOLS_DIR_ENV, "tool_dirs"] {
            assert!(text.contains(needle), "{text} should name {needle}");
        }
    }
}
