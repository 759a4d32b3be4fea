//! How far the current call has come (`airlock:tool/progress`), for a
//! client that asked to be told. The host forwards reports as MCP progress
//! notifications, at most as often as the operator allows (the last report
//! is kept); a report whose `progress` does not grow is dropped.
//!
//! ```
//! use airlock_guest::progress;
//! for (done, page) in ["a", "b", "c"].iter().enumerate() {
//!     // … work on `page` …
//!     progress::report(done as f64 + 1.0, Some(3.0), Some(&format!("page {page}")));
//! }
//! ```

/// Report `progress` (growing from one report to the next) out of `total`
/// when known, with a one-line `message` for a person.
pub fn report(progress: f64, total: Option<f64>, message: Option<&str>) {
    host::report(progress, total, message);
}

/// The reports made since the last call of this function, in order, as
/// `(progress, total, message)`. Only in a native build (a tool's unit
/// tests); a component's reports go to the host.
#[cfg(not(target_arch = "wasm32"))]
pub fn take_reports() -> Vec<(f64, Option<f64>, Option<String>)> {
    host::REPORTS.with(|reports| std::mem::take(&mut *reports.borrow_mut()))
}

#[cfg(target_arch = "wasm32")]
mod host {
    pub(super) fn report(progress: f64, total: Option<f64>, message: Option<&str>) {
        crate::bindings::airlock::tool::progress::report(progress, total, message);
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod host {
    use std::cell::RefCell;

    /// A report as a native build keeps it.
    type Report = (f64, Option<f64>, Option<String>);

    thread_local! {
        /// What a native build reported, for its tests to read.
        pub(super) static REPORTS: RefCell<Vec<Report>> = const { RefCell::new(Vec::new()) };
    }

    pub(super) fn report(progress: f64, total: Option<f64>, message: Option<&str>) {
        REPORTS.with(|reports| reports.borrow_mut().push((progress, total, message.map(str::to_owned))));
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_native_build_keeps_its_reports() {
        super::report(1.0, Some(2.0), Some("half"));
        super::report(2.0, Some(2.0), None);
        assert_eq!(super::take_reports(), vec![(1.0, Some(2.0), Some("half".into())), (2.0, Some(2.0), None)]);
    }
}
