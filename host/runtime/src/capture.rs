//! Captured guest stdout/stderr, capped.
//!
//! Trusts nothing the guest writes: at most `cap` bytes are kept, the rest
//! is counted and dropped. The guest never sees an error or back-pressure
//! (a full pipe that failed writes would turn a chatty tool into a trap), and
//! nothing it writes ever reaches the host's own stdio, which may be an MCP
//! protocol stream.

use airlock_core::call::Captured;
use bytes::Bytes;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

/// The largest write permit handed to the guest at once.
const MAX_WRITE_PERMIT: usize = 64 << 10;

#[derive(Debug, Default)]
struct Buffer {
    kept: Vec<u8>,
    dropped: u64,
}

/// A capped in-memory sink for one of a guest's output streams. Clones share
/// the same buffer.
#[derive(Debug, Clone)]
pub struct CapturedOutput {
    cap: usize,
    buffer: Arc<Mutex<Buffer>>,
}

impl CapturedOutput {
    /// A sink that keeps at most `cap` bytes.
    pub fn new(cap: usize) -> Self {
        Self { cap, buffer: Arc::default() }
    }

    fn push(&self, bytes: &[u8]) {
        // A poisoned lock only means another writer panicked mid-push; the
        // buffer is still a valid Vec, so keep going.
        let mut buffer = self.buffer.lock().unwrap_or_else(|e| e.into_inner());
        let room = self.cap.saturating_sub(buffer.kept.len());
        let take = room.min(bytes.len());
        buffer.kept.extend_from_slice(bytes.get(..take).unwrap_or(bytes));
        buffer.dropped += (bytes.len() - take) as u64;
    }

    /// What has been written since the last [`CapturedOutput::take`], and
    /// start over with an empty buffer: a session's instance keeps its sinks
    /// for its whole life, and each call reports only its own output.
    pub fn take(&self) -> Captured {
        let mut buffer = self.buffer.lock().unwrap_or_else(|e| e.into_inner());
        let taken = std::mem::take(&mut *buffer);
        drop(buffer);
        let text = String::from_utf8(taken.kept)
            .unwrap_or_else(|invalid| String::from_utf8_lossy(invalid.as_bytes()).into_owned());
        Captured { text, dropped: taken.dropped }
    }

    /// Start over with an empty buffer, what was written discarded.
    pub fn clear(&self) {
        *self.buffer.lock().unwrap_or_else(|e| e.into_inner()) = Buffer::default();
    }

    /// What has been written so far.
    pub fn snapshot(&self) -> Captured {
        let buffer = self.buffer.lock().unwrap_or_else(|e| e.into_inner());
        Captured { text: String::from_utf8_lossy(&buffer.kept).into_owned(), dropped: buffer.dropped }
    }
}

impl IsTerminal for CapturedOutput {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CapturedOutput {
    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }

    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for CapturedOutput {
    async fn ready(&mut self) {}
}

impl OutputStream for CapturedOutput {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.push(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(MAX_WRITE_PERMIT)
    }
}

impl AsyncWrite for CapturedOutput {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        self.push(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_up_to_cap_and_counts_the_rest() {
        let mut out = CapturedOutput::new(5);
        out.write(Bytes::from_static(b"hel")).unwrap();
        out.write(Bytes::from_static(b"lo world")).unwrap();
        assert_eq!(out.snapshot(), Captured { text: "hello".into(), dropped: 6 });
        assert_eq!(out.check_write().unwrap(), MAX_WRITE_PERMIT, "a full sink never blocks the guest");
    }

    #[test]
    fn take_empties_the_sink_and_restores_the_cap() {
        let mut out = CapturedOutput::new(3);
        out.write(Bytes::from_static(b"abcd")).unwrap();
        assert_eq!(out.take(), Captured { text: "abc".into(), dropped: 1 });
        out.write(Bytes::from_static(b"xy")).unwrap();
        assert_eq!(out.take(), Captured { text: "xy".into(), dropped: 0 });
        assert_eq!(out.snapshot(), Captured::default());
    }

    #[test]
    fn zero_cap_keeps_nothing() {
        let mut out = CapturedOutput::new(0);
        out.write(Bytes::from_static(b"abc")).unwrap();
        assert_eq!(out.snapshot(), Captured { text: String::new(), dropped: 3 });
    }
}
