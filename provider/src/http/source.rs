//! Where a stream's bytes come from: a body read directly, or read on a
//! thread of its own and waited on until a deadline; and the rest of a
//! finished body read so its connection goes back to the pool.

use std::io::{ErrorKind, Read};
use std::sync::mpsc;
use std::time::Instant;

use revolve_core::policy::{STREAM_DRAIN_BYTES, STREAM_DRAIN_WAIT};

/// Where a stream's bytes come from: a reader read directly, whose reads
/// the agent's timeouts bound, or a [`Relay`], waited on until a deadline.
pub(super) trait Source {
    /// Bytes into `buf` (`Some(0)` at the end), or `None` once `deadline`
    /// has passed with none.
    fn read_by(&mut self, buf: &mut [u8], deadline: Instant) -> std::io::Result<Option<usize>>;
}

/// A reader read directly; the deadline is left to its own timeouts.
pub(super) struct Plain<R>(pub(super) R);

impl<R: Read> Source for Plain<R> {
    fn read_by(&mut self, buf: &mut [u8], _deadline: Instant) -> std::io::Result<Option<usize>> {
        self.0.read(buf).map(Some)
    }
}

/// A body read on its own thread, so that the stream can wait for it less
/// long than a single read may block (the prefill wait, for a local
/// server). Dropped, it lets the thread end after its current read: a
/// finished stream's rest is read up to its end or [`STREAM_DRAIN_BYTES`],
/// and a stalled one's read ends with the agent's timeout.
pub(super) struct Relay {
    chunks: mpsc::Receiver<std::io::Result<Vec<u8>>>,
    /// Says when the thread has ended, its reader dropped.
    ended: mpsc::Receiver<()>,
    pending: Vec<u8>,
    taken: usize,
}

impl Relay {
    pub(super) fn start(mut reader: impl Read + Send + 'static) -> Relay {
        let (send, chunks) = mpsc::sync_channel(16); // not policy: chunks read ahead
        let (end, ended) = mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("revolve-relay".to_owned())
            .spawn({
                let send = send.clone();
                move || {
                    let mut buf = vec![0u8; 8192]; // not policy: a read buffer's size
                                                   // Since when nobody waits (the stream is over), and
                                                   // what was read since: the rest is only drained.
                    let mut gone: Option<Instant> = None;
                    let mut drained = 0u64;
                    loop {
                        let read = match reader.read(&mut buf) {
                            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                            read => read,
                        };
                        let stop = !matches!(read, Ok(n) if n > 0);
                        if let Some(since) = gone {
                            drained += *read.as_ref().unwrap_or(&0) as u64;
                            if stop
                                || drained > STREAM_DRAIN_BYTES
                                || since.elapsed() > STREAM_DRAIN_WAIT
                            {
                                break;
                            }
                            continue;
                        }
                        if send.send(read.map(|n| buf[..n].to_vec())).is_err() {
                            gone = Some(Instant::now());
                        }
                        if stop {
                            break;
                        }
                    }
                    drop(reader);
                    let _ = end.send(());
                }
            });
        if let Err(e) = spawned {
            let _ = send.send(Err(e));
        }
        Relay {
            chunks,
            ended,
            pending: Vec::new(),
            taken: 0,
        }
    }

    /// After a finished stream: lets the thread read the body's rest, and
    /// waits for that at most [`STREAM_DRAIN_WAIT`], so that its
    /// connection is back in the pool for the next request (as [`drain`]).
    pub(super) fn finish(self) {
        let Relay { chunks, ended, .. } = self;
        drop(chunks);
        let _ = ended.recv_timeout(STREAM_DRAIN_WAIT);
    }
}

impl Source for Relay {
    fn read_by(&mut self, buf: &mut [u8], deadline: Instant) -> std::io::Result<Option<usize>> {
        if self.taken == self.pending.len() {
            let wait = deadline.saturating_duration_since(Instant::now());
            match self.chunks.recv_timeout(wait) {
                Ok(chunk) => {
                    self.pending = chunk?;
                    self.taken = 0;
                }
                Err(mpsc::RecvTimeoutError::Timeout) => return Ok(None),
                Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(Some(0)),
            }
        }
        let n = (self.pending.len() - self.taken).min(buf.len());
        buf[..n].copy_from_slice(&self.pending[self.taken..self.taken + n]);
        self.taken += n;
        Ok(Some(n))
    }
}

/// Reads what is left of a finished stream's body (at most
/// [`STREAM_DRAIN_BYTES`]), so that its connection goes back to the pool.
/// Waits for that at most [`STREAM_DRAIN_WAIT`]; a body that takes longer
/// goes on being read on its own thread, which ends with it (or with the
/// stall timeout).
pub(super) fn drain(reader: impl Read + Send + 'static) {
    let (done, finished) = mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("revolve-drain".to_owned())
        .spawn(move || {
            // An error or a longer rest only means the connection is not
            // kept: nothing to report.
            let _ = std::io::copy(&mut reader.take(STREAM_DRAIN_BYTES), &mut std::io::sink());
            let _ = done.send(());
        });
    if spawned.is_ok() {
        let _ = finished.recv_timeout(STREAM_DRAIN_WAIT);
    }
}
