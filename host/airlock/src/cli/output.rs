//! Standard output for the CLI's commands, written with errors as values,
//! and the exit codes of a command that printed (or failed to).

use serde_json::Value;
use std::fmt;
use std::io::Write;
use std::process::ExitCode;

/// Standard output, locked and written with errors as values.
pub struct Out(std::io::StdoutLock<'static>);

impl Out {
    pub fn new() -> Self {
        Out(std::io::stdout().lock())
    }

    /// Write one line and flush it, so that a closed pipe is seen here.
    pub fn line(&mut self, args: fmt::Arguments<'_>) -> std::io::Result<()> {
        self.0.write_fmt(args)?;
        self.0.write_all(b"\n")?;
        self.0.flush()
    }

    /// Pretty JSON and a newline.
    pub fn json(&mut self, value: &Value) -> std::io::Result<()> {
        match serde_json::to_string_pretty(value) {
            Ok(text) => self.line(format_args!("{text}")),
            Err(err) => {
                eprintln!("airlock: cannot print JSON: {err}");
                Ok(())
            }
        }
    }
}

/// The exit code of a command whose output may have failed: a reader that
/// went away (broken pipe) ends it quietly with 0; any other write error is
/// said on stderr.
pub fn finish(printed: std::io::Result<ExitCode>) -> ExitCode {
    match printed {
        Ok(code) => code,
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("airlock: cannot write to stdout: {err}");
            ExitCode::from(2)
        }
    }
}

/// Fail with exit code 2 and a message.
pub fn usage_error(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("airlock: {message}");
    ExitCode::from(2)
}
