//! The `airlock` binary's own modules (not part of the library): how the
//! CLI prints, logs, shows progress, asks for confirmation, runs each
//! command and scaffolds new tool projects.

pub mod commands;
pub mod confirm;
pub mod logging;
pub mod output;
pub mod progress;
pub mod scaffold;
