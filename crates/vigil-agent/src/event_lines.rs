//! The agent's events on standard output, one JSON line each, written by a
//! thread of their own through a bounded queue.
//!
//! Whoever reads standard output may be slow, or stop reading (`vigil agent
//! | sleep 30`): a write to a full pipe blocks. It blocks that thread only;
//! the member goes on answering the protocol and SIGTERM. When the queue is
//! full, events are dropped and counted, and as soon as the writer catches
//! up it says so on a line of its own: `{"event": "missed", "count": N,
//! "sink": "stdout", ...}`. If standard output is closed for good (the
//! reader exited), the agent is told, and leaves.
//!
//! The writer writes to its own copy of the file descriptor, never through
//! the standard library's `Stdout`, whose lock a blocked write would hold
//! against everyone.

use std::io::Write;
use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, SyncSender, TrySendError};

use tokio::sync::oneshot;

use crate::defaults::STDOUT_QUEUE;
use crate::pipeline::unix_ms;
use crate::record::{EventRecord, Sink};

/// Event lines to standard output. Cheap to use from the agent's loop:
/// [`EventLines::send`] never blocks.
#[derive(Debug)]
pub struct EventLines {
    tx: SyncSender<String>,
    dropped: Arc<AtomicU64>,
    total_dropped: u64,
}

impl EventLines {
    /// Starts the writer, for the member named `node`. The receiver
    /// resolves if standard output is closed for good.
    ///
    /// # Errors
    ///
    /// Standard output cannot be duplicated, or the thread cannot start.
    pub fn start(node: &str) -> std::io::Result<(EventLines, oneshot::Receiver<()>)> {
        let fd = std::io::stdout().as_fd().try_clone_to_owned()?;
        let mut file = std::fs::File::from(fd);
        let (tx, rx) = mpsc::sync_channel::<String>(STDOUT_QUEUE);
        let dropped = Arc::new(AtomicU64::new(0));
        let (closed_tx, closed_rx) = oneshot::channel();
        let node = node.to_owned();
        let counter = dropped.clone();
        std::thread::Builder::new().name("event-lines".into()).spawn(move || {
            let mut warned = false;
            loop {
                // A line, or, when none came for a moment, the count of
                // those dropped meanwhile.
                let line = match rx.recv_timeout(std::time::Duration::from_millis(200)) {
                    Ok(line) => Some(line),
                    Err(mpsc::RecvTimeoutError::Timeout) => None,
                    Err(mpsc::RecvTimeoutError::Disconnected) => return,
                };
                let missed = counter.swap(0, Ordering::Relaxed);
                let mut out = String::new();
                if missed > 0 {
                    out.push_str(&EventRecord::missed(&node, unix_ms(), missed, Sink::Stdout).to_line());
                    out.push('\n');
                }
                if let Some(line) = &line {
                    out.push_str(line);
                    out.push('\n');
                }
                if out.is_empty() {
                    continue;
                }
                match file.write_all(out.as_bytes()) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                        let _ = closed_tx.send(());
                        return;
                    }
                    Err(e) => {
                        // A full disk, say: these lines are lost, and
                        // said to be when writing works again.
                        counter.fetch_add(u64::from(line.is_some()) + missed, Ordering::Relaxed);
                        if !warned {
                            tracing::warn!("standard output: {e}: event lines are lost until it works again");
                            warned = true;
                        }
                    }
                }
            }
        })?;
        Ok((EventLines { tx, dropped, total_dropped: 0 }, closed_rx))
    }

    /// Queues a line; returns `false` if the queue was full (the line is
    /// dropped, and counted for the next `missed` line).
    pub fn send(&mut self, line: String) -> bool {
        match self.tx.try_send(line) {
            Ok(()) => true,
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                self.total_dropped += 1;
                false
            }
        }
    }

    /// Lines dropped so far because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.total_dropped
    }
}
