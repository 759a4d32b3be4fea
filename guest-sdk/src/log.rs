//! Lines for the operator's log (`airlock:tool/log`), tagged by the host
//! with the tool, the call id and the principal. They reach the client
//! (an MCP client gets them as `notifications/message`, and may show them
//! to its model) only when the operator turned `client_log` on for the
//! tool; otherwise never. The host cuts long lines and counts, rather
//! than keeps, a call's lines past the operator's cap.
//!
//! ```
//! airlock_guest::log::info("cache miss: fetching the exchange rates");
//! ```

/// How much a line matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Detail for debugging the tool.
    Debug,
    /// Something the operator may want to know.
    Info,
    /// Something went wrong, and the tool carried on.
    Warning,
    /// Something failed.
    Error,
}

/// Write one line at `level`.
pub fn write(level: Level, message: &str) {
    host::write(level, message);
}

/// Write a debugging line.
pub fn debug(message: &str) {
    write(Level::Debug, message);
}

/// Write a line the operator may want to read.
pub fn info(message: &str) {
    write(Level::Info, message);
}

/// Write a warning.
pub fn warning(message: &str) {
    write(Level::Warning, message);
}

/// Write an error.
pub fn error(message: &str) {
    write(Level::Error, message);
}

/// The lines written since the last call of this function, in order. Only
/// in a native build (a tool's unit tests); a component's lines go to the
/// host.
#[cfg(not(target_arch = "wasm32"))]
pub fn take_lines() -> Vec<(Level, String)> {
    host::LINES.with(|lines| std::mem::take(&mut *lines.borrow_mut()))
}

#[cfg(target_arch = "wasm32")]
mod host {
    use super::Level;
    use crate::bindings::airlock::tool::log as wit;

    pub(super) fn write(level: Level, message: &str) {
        let level = match level {
            Level::Debug => wit::Level::Debug,
            Level::Info => wit::Level::Info,
            Level::Warning => wit::Level::Warning,
            Level::Error => wit::Level::Error,
        };
        wit::write(level, message);
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod host {
    use super::Level;
    use std::cell::RefCell;

    thread_local! {
        /// What a native build wrote, for its tests to read.
        pub(super) static LINES: RefCell<Vec<(Level, String)>> = const { RefCell::new(Vec::new()) };
    }

    pub(super) fn write(level: Level, message: &str) {
        LINES.with(|lines| lines.borrow_mut().push((level, message.to_owned())));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_native_build_keeps_its_lines() {
        info("one");
        error("two");
        assert_eq!(take_lines(), vec![(Level::Info, "one".into()), (Level::Error, "two".into())]);
    }
}
