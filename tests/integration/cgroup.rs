//! A memory cgroup (v1) for one server under test, made when the process
//! runs as root on a machine with the memory controller mounted; removed
//! when dropped. Used by the memory budget tests and by the attack bench
//! (`host/airlock/benches/pipeline/attacks.rs` includes this file), which
//! run a server in it to see that its budget follows the cgroup's limit
//! and that the OOM killer never fires.

use std::path::{Path, PathBuf};

/// The cgroup's directory.
pub struct Cgroup(PathBuf);

impl Cgroup {
    /// A cgroup named `airlock-NAME-PID` with a memory limit of `limit`
    /// bytes; `None` when it cannot be made.
    pub fn new(name: &str, limit: u64) -> Option<Cgroup> {
        let dir = Path::new("/sys/fs/cgroup/memory").join(format!("airlock-{name}-{}", std::process::id()));
        std::fs::create_dir(&dir).ok()?;
        let cgroup = Cgroup(dir);
        std::fs::write(cgroup.0.join("memory.limit_in_bytes"), limit.to_string()).ok()?;
        Some(cgroup)
    }

    /// The file a process writes its id to to join the cgroup.
    pub fn procs(&self) -> PathBuf {
        self.0.join("cgroup.procs")
    }

    /// One of the cgroup's files (`memory.max_usage_in_bytes`,
    /// `memory.oom_control`), empty when it cannot be read.
    pub fn read(&self, file: &str) -> String {
        std::fs::read_to_string(self.0.join(file)).unwrap_or_default()
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}
