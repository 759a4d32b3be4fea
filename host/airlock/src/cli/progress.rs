//! Load progress on stderr while `tools`, `call` and the other one-shot
//! commands wait for their components to compile: a redrawn line on a
//! terminal, one line per component on a pipe or a log file.

use airlock::LoadProgress;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Per-component progress on stderr while the tools load. For a person at
/// a terminal: how many components are done and which are compiling, each
/// with its elapsed time, redrawn every [`PROGRESS_REDRAW`], nothing before
/// [`PROGRESS_AFTER`] (a warm cache has loaded everything by then). On a
/// pipe (a client or a script reading stderr): one line for each component
/// still compiling after [`ANNOUNCE_AFTER`], saying what the wait is.
pub struct TerminalProgress {
    state: Option<Arc<Mutex<ProgressState>>>,
}

/// Progress is drawn only for loads that take longer than this.
const PROGRESS_AFTER: Duration = Duration::from_millis(300);
/// How often the progress line is redrawn.
const PROGRESS_REDRAW: Duration = Duration::from_millis(200);
/// At most this many compiling components are named on the line.
const PROGRESS_NAMES: usize = 3;
/// On a pipe, a component still compiling after this long is announced.
const ANNOUNCE_AFTER: Duration = Duration::from_secs(1);

struct ProgressState {
    began: Instant,
    total: usize,
    done: usize,
    compiling: Vec<(String, Instant)>,
    /// Not a terminal: announce each long compilation on a line of its own.
    plain: bool,
    /// The components announced so far (plain).
    announced: Vec<String>,
    drawn: bool,
    stopped: bool,
}

impl ProgressState {
    fn new(plain: bool) -> Self {
        ProgressState {
            began: Instant::now(),
            total: 0,
            done: 0,
            compiling: Vec::new(),
            plain,
            announced: Vec::new(),
            drawn: false,
            stopped: false,
        }
    }

    /// The lines announcing the components compiling for
    /// [`ANNOUNCE_AFTER`] or longer at `now` and not announced yet; each
    /// is announced once.
    fn announcements(&mut self, now: Instant) -> Vec<String> {
        let due: Vec<String> = self
            .compiling
            .iter()
            .filter(|(name, since)| {
                now.saturating_duration_since(*since) >= ANNOUNCE_AFTER && !self.announced.contains(name)
            })
            .map(|(name, _)| name.clone())
            .collect();
        self.announced.extend(due.iter().cloned());
        due.iter().map(|name| format!("compiling {name} (first use on this machine)…")).collect()
    }

    fn draw(&mut self) {
        if self.stopped {
            return;
        }
        if self.plain {
            let lines = self.announcements(Instant::now());
            if !lines.is_empty() {
                let mut err = std::io::stderr().lock();
                for line in lines {
                    let _ = writeln!(err, "{line}");
                }
                let _ = err.flush();
            }
            return;
        }
        if self.began.elapsed() < PROGRESS_AFTER || self.total == 0 {
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

/// A component as progress names it: its file's stem (`run_python` for
/// `run_python.wasm`, the name of a bundled tool).
fn file_name(path: &Path) -> String {
    path.file_stem().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

impl TerminalProgress {
    /// Progress on stderr: redrawn on a terminal, a line per long
    /// compilation elsewhere.
    pub fn new() -> Self {
        let state = Arc::new(Mutex::new(ProgressState::new(!std::io::stderr().is_terminal())));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_compilation_longer_than_a_second_is_announced_once_on_a_pipe() {
        let mut state = ProgressState::new(true);
        let since = Instant::now();
        state.compiling.push(("run_python".into(), since));
        state.compiling.push(("echo".into(), since + Duration::from_millis(900)));
        assert_eq!(state.announcements(since + Duration::from_millis(999)), Vec::<String>::new());
        assert_eq!(
            state.announcements(since + ANNOUNCE_AFTER),
            vec!["compiling run_python (first use on this machine)…".to_owned()]
        );
        assert_eq!(
            state.announcements(since + Duration::from_secs(5)),
            vec!["compiling echo (first use on this machine)…".to_owned()]
        );
        assert_eq!(state.announcements(since + Duration::from_secs(9)), Vec::<String>::new(), "each once");
        assert_eq!(file_name(Path::new("/t/run_python.wasm")), "run_python");
    }
}
