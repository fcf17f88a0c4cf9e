//! The TCP connection under the HTTP providers: ureq's own, but answered
//! at once.
//!
//! A session sends its requests on one kept connection (see
//! [`super::http`]). A server that leaves Nagle's algorithm on (Python's
//! `http.server`, and so the test fake) holds each small write after its
//! first until the client has acknowledged that first one; and a client on
//! a connection that sends as well as receives delays its ACKs, about
//! 40 ms on Linux. So every request after the first on a connection waited
//! about 40 ms for the rest of its answer head. Here the socket is asked
//! for a quick ACK (`TCP_QUICKACK`, Linux) each time a request has been
//! written, which leaves the delayed-ACK mode for the answer that follows;
//! `TCP_NODELAY` is on as in ureq (the request's own small writes go out at
//! once).
//!
//! The connector takes the place of ureq's `TcpConnector` in ureq's chain
//! (a CONNECT proxy, then TCP, then TLS): it opens the socket unless a
//! proxy already did, and its [`QuickAckTransport`] reads and writes as
//! ureq's does, with the same timeouts.

use std::fmt;
use std::io::{self, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector, Either, LazyBuffers, NextTimeout, ShutdownHandle,
    Transport,
};
use ureq::{Error, Timeout};

/// Opens the TCP connection, unless an earlier connector of the chain
/// (a proxy's) made one.
#[derive(Debug, Default)]
pub(crate) struct QuickAckConnector;

impl<In: Transport> Connector<In> for QuickAckConnector {
    type Out = Either<In, QuickAckTransport>;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<Self::Out>, Error> {
        if let Some(chained) = chained {
            return Ok(Some(Either::A(chained)));
        }
        let config = details.config;
        let stream = open(details)?;
        if config.no_delay() {
            stream.set_nodelay(true)?;
        }
        let stream = Arc::new(stream);
        let handle: Weak<dyn ShutdownHandle> = Arc::downgrade(&stream) as _;
        (details.register_shutdown)(handle)?;
        Ok(Some(Either::B(QuickAckTransport {
            stream,
            buffers: LazyBuffers::new(config.input_buffer_size(), config.output_buffer_size()),
            read_timeout: None,
            write_timeout: None,
        })))
    }
}

/// Connects to the first of the resolved addresses that answers, each
/// tried within what is left of the connect timeout.
fn open(details: &ConnectionDetails) -> Result<TcpStream, Error> {
    let budget = details.timeout.not_zero().map(|t| *t);
    let started = Instant::now();
    let mut last = None;
    for addr in details.addrs.iter() {
        let attempt = match budget {
            Some(budget) => {
                let left = budget.saturating_sub(started.elapsed());
                if left.is_zero() {
                    return Err(Error::Timeout(Timeout::Connect));
                }
                TcpStream::connect_timeout(addr, left)
            }
            None => TcpStream::connect(addr),
        };
        match attempt {
            Ok(stream) => return Ok(stream),
            Err(e) if timed_out(&e) => last = Some(Error::Timeout(Timeout::Connect)),
            Err(e) => last = Some(Error::Io(e)),
        }
    }
    Err(last.unwrap_or_else(|| {
        Error::Io(io::Error::new(
            ErrorKind::ConnectionRefused,
            "no address to connect to",
        ))
    }))
}

fn timed_out(e: &io::Error) -> bool {
    matches!(e.kind(), ErrorKind::TimedOut | ErrorKind::WouldBlock)
}

/// A TCP connection that asks for a quick ACK after each request.
pub(crate) struct QuickAckTransport {
    /// Shared with the agent's shutdown handle, which may close it from
    /// another thread.
    stream: Arc<TcpStream>,
    buffers: LazyBuffers,
    /// The timeouts last set on the socket (a syscall only on a change).
    read_timeout: Option<Duration>,
    write_timeout: Option<Duration>,
}

impl fmt::Debug for QuickAckTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QuickAckTransport")
            .field("addr", &self.stream.peer_addr().ok())
            .finish()
    }
}

/// Sets a socket timeout when it differs from the one last set.
fn set_timeout(
    last: &mut Option<Duration>,
    want: Option<Duration>,
    set: impl FnOnce(Option<Duration>) -> io::Result<()>,
) -> io::Result<()> {
    if *last != want {
        set(want)?;
        *last = want;
    }
    Ok(())
}

/// The time left as a socket timeout (`None`: none), or the timeout's
/// error when none is left.
fn left(timeout: NextTimeout) -> Result<Option<Duration>, Error> {
    if !timeout.after.is_not_happening() && timeout.after.is_zero() {
        return Err(Error::Timeout(timeout.reason));
    }
    Ok(timeout.not_zero().map(|t| *t))
}

impl Transport for QuickAckTransport {
    fn buffers(&mut self) -> &mut dyn Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), Error> {
        let timeout = timeout.for_write();
        let want = left(timeout)?;
        let stream = &*self.stream;
        set_timeout(&mut self.write_timeout, want, |t| {
            stream.set_write_timeout(t)
        })?;
        let output = &self.buffers.output()[..amount];
        match (&*self.stream).write_all(output) {
            Ok(()) => {}
            Err(e) if timed_out(&e) => return Err(Error::Timeout(timeout.reason)),
            Err(e) => return Err(e.into()),
        }
        quick_ack(&self.stream);
        Ok(())
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, Error> {
        let timeout = timeout.for_read();
        let want = left(timeout)?;
        let stream = &*self.stream;
        set_timeout(&mut self.read_timeout, want, |t| stream.set_read_timeout(t))?;
        let input = self.buffers.input_append_buf();
        let amount = loop {
            match (&*self.stream).read(input) {
                // A signal (Linux does not restart a socket read that has a
                // timeout): read again, as ureq does.
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if timed_out(&e) => return Err(Error::Timeout(timeout.reason)),
                Err(e) => return Err(e.into()),
                Ok(n) => break n,
            }
        };
        self.buffers.input_appended(amount);
        Ok(amount > 0)
    }

    fn is_open(&mut self) -> bool {
        // Open when nothing waits to be read and the peer has not closed
        // it: a kept connection must be quiet between answers.
        let stream = &*self.stream;
        if stream.set_nonblocking(true).is_err() {
            return false;
        }
        let mut byte = [0u8];
        let open =
            matches!((&*self.stream).read(&mut byte), Err(e) if e.kind() == ErrorKind::WouldBlock);
        open && stream.set_nonblocking(false).is_ok()
    }
}

/// Asks the kernel to acknowledge what arrives next at once instead of
/// after its delayed-ACK timer. Best effort: a socket that refuses only
/// answers slower.
#[cfg(target_os = "linux")]
fn quick_ack(stream: &TcpStream) {
    let _ = rustix::net::sockopt::set_tcp_quickack(stream, true);
}

#[cfg(not(target_os = "linux"))]
fn quick_ack(_stream: &TcpStream) {}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader, Write};
    use std::net::TcpListener;

    use super::*;

    /// A server with Nagle on that writes each answer's head and body in
    /// two writes, on one kept connection: ten requests on it take well
    /// under the 40 ms each that a delayed ACK would cost.
    #[test]
    fn a_kept_connection_is_not_held_by_a_delayed_ack() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut writer = stream;
            let mut line = String::new();
            loop {
                line.clear();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    return;
                }
                if line == "\r\n" {
                    let _ = writer.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n");
                    let _ = writer.write_all(b"ok");
                }
            }
        });
        let agent = super::super::http::agent(Duration::from_secs(5));
        let url = format!("http://127.0.0.1:{port}/");
        // The first request opens the connection (and is quick anyway).
        agent
            .get(&url)
            .call()
            .unwrap()
            .into_body()
            .read_to_string()
            .unwrap();
        let started = Instant::now();
        for _ in 0..10 {
            let body = agent
                .get(&url)
                .call()
                .unwrap()
                .into_body()
                .read_to_string()
                .unwrap();
            assert_eq!(body, "ok");
        }
        let took = started.elapsed();
        drop(agent);
        server.join().unwrap();
        // not policy: ten delayed ACKs would take 400 ms; half is slack for
        // a loaded machine.
        if cfg!(target_os = "linux") {
            assert!(took < Duration::from_millis(200), "{took:?}");
        }
    }
}
