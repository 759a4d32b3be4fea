//! Load progress on a terminal while `tools`, `call` and the other one-shot
//! commands wait for their components to compile.

use airlock::LoadProgress;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Per-component progress on stderr while the tools load, for a person at
/// a terminal: how many components are done and which are compiling, each
/// with its elapsed time, redrawn every [`PROGRESS_REDRAW`]. Nothing is
/// drawn on a pipe, nor before [`PROGRESS_AFTER`] (a warm cache has loaded
/// everything by then).
pub struct TerminalProgress {
    state: Option<Arc<Mutex<ProgressState>>>,
}

/// Progress is drawn only for loads that take longer than this.
const PROGRESS_AFTER: Duration = Duration::from_millis(300);
/// How often the progress line is redrawn.
const PROGRESS_REDRAW: Duration = Duration::from_millis(200);
/// At most this many compiling components are named on the line.
const PROGRESS_NAMES: usize = 3;

struct ProgressState {
    began: Instant,
    total: usize,
    done: usize,
    compiling: Vec<(String, Instant)>,
    drawn: bool,
    stopped: bool,
}

impl ProgressState {
    fn draw(&mut self) {
        if self.stopped || self.began.elapsed() < PROGRESS_AFTER || self.total == 0 {
            return;
        }
        let mut line = format!("[{}/{}] loading tools", self.done, self.total);
        if !self.compiling.is_empty() {
            let names: Vec<String> = self
                .compiling
                .iter()
                .take(PROGRESS_NAMES)
                .map(|(name, since)| format!("{name} {:.1}s", since.elapsed().as_secs_f64()))
                .collect();
            let more = self.compiling.len().saturating_sub(PROGRESS_NAMES);
            line = format!("{line}; compiling {}", names.join(", "));
            if more > 0 {
                line.push_str(&format!(" and {more} more"));
            }
        }
        let mut err = std::io::stderr();
        let _ = write!(err, "\r\x1b[2K{line}");
        let _ = err.flush();
        self.drawn = true;
    }

    fn clear(&mut self) {
        if self.drawn {
            let mut err = std::io::stderr();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
            self.drawn = false;
        }
    }
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

impl TerminalProgress {
    /// Progress on stderr if it is a terminal, else nothing.
    pub fn new() -> Self {
        if !std::io::stderr().is_terminal() {
            return TerminalProgress { state: None };
        }
        let state = Arc::new(Mutex::new(ProgressState {
            began: Instant::now(),
            total: 0,
            done: 0,
            compiling: Vec::new(),
            drawn: false,
            stopped: false,
        }));
        let ticking = Arc::downgrade(&state);
        // Redraws the elapsed times; it ends once the progress is dropped.
        let started = std::thread::Builder::new().name("airlock-progress".into()).spawn(move || {
            loop {
                std::thread::sleep(PROGRESS_REDRAW);
                let Some(state) = ticking.upgrade() else { return };
                let mut state = state.lock().unwrap_or_else(|e| e.into_inner());
                if state.stopped {
                    return;
                }
                state.draw();
            }
        });
        if started.is_err() {
            return TerminalProgress { state: None };
        }
        TerminalProgress { state: Some(state) }
    }

    fn update(&self, change: impl FnOnce(&mut ProgressState)) {
        if let Some(state) = &self.state {
            let mut state = state.lock().unwrap_or_else(|e| e.into_inner());
            change(&mut state);
            if state.total > 0 && state.done >= state.total {
                state.clear();
            } else {
                state.draw();
            }
        }
    }
}

impl Drop for TerminalProgress {
    fn drop(&mut self) {
        if let Some(state) = &self.state {
            let mut state = state.lock().unwrap_or_else(|e| e.into_inner());
            state.clear();
            state.stopped = true;
        }
    }
}

impl LoadProgress for TerminalProgress {
    fn started(&self, _path: &Path, total: usize) {
        self.update(|state| state.total = total);
    }

    fn compiling(&self, path: &Path) {
        self.update(|state| state.compiling.push((file_name(path), Instant::now())));
    }

    fn finished(&self, path: &Path, _loaded: bool) {
        let name = file_name(path);
        self.update(|state| {
            state.done = state.done.saturating_add(1);
            if let Some(at) = state.compiling.iter().position(|(n, _)| *n == name) {
                state.compiling.remove(at);
            }
        });
    }
}
