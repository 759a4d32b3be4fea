//! The `airlock` binary's own modules (not part of the library): how the
//! CLI prints, logs, shows progress, asks for confirmation, runs each
//! command (the OCI ones, `pull`, `push`, `keygen` and `inspect oci://`,
//! in `distribution`) and scaffolds new tool projects.

pub mod approvals;
pub mod commands;
pub mod confirm;
pub mod distribution;
pub mod logging;
pub mod output;
pub mod progress;
pub mod scaffold;
