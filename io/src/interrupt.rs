//! Ctrl-C during a turn: while a [`Guard`] lives, SIGINT, SIGTERM and SIGHUP
//! only raise a flag. The shell polls it while a request or a tool is in
//! flight, ends the turn as interrupted, and keeps the log whole; after a
//! SIGTERM or SIGHUP it then stops. Between turns the signals act as usual
//! (the log is synced at every turn end), so Ctrl-C while waiting for piped
//! input ends the process. The REPL's line editor reads Ctrl-C as a key; a
//! guard puts back the disposition it found (the line editor's handler, in
//! the REPL) with its flags, which a [`Waker`] uses to bring the REPL out of
//! waiting for a line after any number of turns.

use std::cell::Cell;
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::Mutex;

use nix::sys::pthread::{pthread_kill, pthread_self, Pthread};
use nix::sys::signal::{self, SaFlags, SigAction, SigHandler, SigSet, Signal};

static RAISED: AtomicI32 = AtomicI32::new(0);
static ARMED: AtomicBool = AtomicBool::new(false);

const SIGHUP: i32 = Signal::SIGHUP as i32;
const SIGINT: i32 = Signal::SIGINT as i32;
const SIGTERM: i32 = Signal::SIGTERM as i32;

extern "C" fn on_signal(signum: c_int) {
    // Async-signal-safe: a single atomic store.
    RAISED.store(signum, Ordering::SeqCst);
}

/// The dispositions a [`Guard`] replaced (the default, or the line
/// editor's), whole: handler, flags and mask, put back as they were when it
/// drops. The flags matter: the line editor's handler is installed without
/// `SA_RESTART`, which is what lets a signal interrupt its read(2) (see
/// [`Waker`]); put back with `SA_RESTART`, the read would go on waiting.
static PREVIOUS: Mutex<Option<[SigAction; 3]>> = Mutex::new(None);

const SIGNALS: [Signal; 3] = [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP];

fn catch() {
    // System calls the signal arrives in are restarted (as `signal(2)`
    // sets it): the shell polls the flag instead.
    let action = SigAction::new(
        SigHandler::Handler(on_signal),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    #[allow(unsafe_code)] // the `sigaction` call below, with its SAFETY note
    let previous = SIGNALS.map(|signum| {
        // SAFETY: the handler only performs an atomic store, which is
        // async-signal-safe. If the call fails, nothing was installed and
        // the default is what is put back.
        unsafe { signal::sigaction(signum, &action) }.unwrap_or_else(|_| {
            SigAction::new(SigHandler::SigDfl, SaFlags::empty(), SigSet::empty())
        })
    });
    *PREVIOUS.lock().unwrap_or_else(|e| e.into_inner()) = Some(previous);
}

fn restore() {
    let previous = PREVIOUS.lock().unwrap_or_else(|e| e.into_inner()).take();
    let Some(previous) = previous else { return };
    for (signum, old) in SIGNALS.iter().zip(&previous) {
        // SAFETY: puts back the disposition `sigaction` returned when the
        // guard replaced it (the default, or the line editor's handler
        // with its own flags and mask).
        #[allow(unsafe_code)]
        let _ = unsafe { signal::sigaction(*signum, old) };
    }
}

/// Wakes one thread waiting in the line editor, as Ctrl-C does: rustyline
/// turns a SIGINT that interrupts its read(2) into `Interrupted`. Only for
/// when no [`Guard`] is alive and the line editor's handler is installed
/// (stdin and stdout are terminals); otherwise SIGINT acts as usual.
#[derive(Clone, Copy, Debug)]
pub struct Waker(Pthread);

impl Waker {
    /// A waker for the calling thread (the one that will read lines).
    pub fn this_thread() -> Waker {
        Waker(pthread_self())
    }

    /// Sends SIGINT to that thread: one that lives as long as the process
    /// reads lines (the main thread).
    pub fn wake(self) {
        let _ = pthread_kill(self.0, Signal::SIGINT);
    }
}

/// Catches the signals for as long as it lives.
#[derive(Debug)]
pub(crate) struct Guard(());

impl Guard {
    /// Starts catching; clears anything raised before.
    pub(crate) fn new() -> Guard {
        RAISED.store(0, Ordering::SeqCst);
        if !ARMED.swap(true, Ordering::SeqCst) {
            catch();
        }
        Guard(())
    }
}

impl Default for Guard {
    fn default() -> Guard {
        Guard::new()
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if ARMED.swap(false, Ordering::SeqCst) {
            restore();
            // A Ctrl-C that came after its owner last looked (between the
            // last `take` and this drop) would be lost, and a piped run
            // would wait on stdin for good: it is raised again, now under
            // the disposition put back (the default ends the process, the
            // line editor's interrupts its prompt).
            if RAISED
                .compare_exchange(SIGINT, 0, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                let _ = signal::raise(Signal::SIGINT);
            }
        }
    }
}

/// Whether a signal arrived since the last call; clears the flag (but not
/// [`terminated`]).
pub fn take() -> bool {
    let signum = RAISED.load(Ordering::SeqCst);
    if signum == SIGINT {
        RAISED.store(0, Ordering::SeqCst);
    }
    signum != 0
}

/// Interrupts the turn as Ctrl-C does (the REPL's Esc key), when a
/// [`Guard`] is catching; between turns it does nothing. Returns whether it
/// did.
pub fn interrupt() -> bool {
    ARMED.load(Ordering::SeqCst)
        && RAISED
            .compare_exchange(0, SIGINT, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
}

/// Whether a signal arrived, without clearing it.
pub fn pending() -> bool {
    RAISED.load(Ordering::SeqCst) != 0
}

/// Whether the process was asked to stop (SIGTERM or SIGHUP) rather than
/// the turn (Ctrl-C).
pub(crate) fn terminated() -> bool {
    matches!(RAISED.load(Ordering::SeqCst), SIGTERM | SIGHUP)
}

static EPOCH: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static WATCHED: Cell<u64> = const { Cell::new(0) };
}

/// Marks every request in flight as abandoned (the user interrupted it):
/// their workers see [`abandoned`] and stop retrying.
pub(crate) fn abandon() {
    EPOCH.fetch_add(1, Ordering::SeqCst);
}

/// Called by a request's worker thread when it starts.
pub fn watch() {
    WATCHED.with(|w| w.set(EPOCH.load(Ordering::SeqCst)));
}

/// Whether the request this thread works on was abandoned since [`watch`].
pub fn abandoned() -> bool {
    WATCHED.with(|w| w.get() != EPOCH.load(Ordering::SeqCst))
}
