//! Ctrl-C during a turn: while a [`Guard`] lives, SIGINT, SIGTERM and SIGHUP
//! only raise a flag. The shell polls it while a request or a tool is in
//! flight, ends the turn as interrupted, and keeps the log whole; after a
//! SIGTERM or SIGHUP it then stops. Between turns the signals act as usual
//! (the log is synced at every turn end), so Ctrl-C while waiting for piped
//! input ends the process. The REPL's line editor reads Ctrl-C as a key; a
//! guard puts back the handler it found (the line editor's, in the REPL),
//! which a [`Waker`] uses to bring the REPL out of waiting for a line.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};

static RAISED: AtomicI32 = AtomicI32::new(0);
static ARMED: AtomicBool = AtomicBool::new(false);

const SIGHUP: i32 = 1;
const SIGINT: i32 = 2;
const SIGTERM: i32 = 15;
const SIG_DFL: usize = 0;
const SIG_ERR: usize = usize::MAX;

extern "C" fn on_signal(signum: i32) {
    // Async-signal-safe: a single atomic store.
    RAISED.store(signum, Ordering::SeqCst);
}

extern "C" {
    fn signal(signum: i32, handler: usize) -> usize;
    fn raise(signum: i32) -> i32;
}

/// The dispositions a [`Guard`] replaced (the default, or the line
/// editor's), put back when it drops.
static PREVIOUS: [AtomicUsize; 3] = [
    AtomicUsize::new(0),
    AtomicUsize::new(0),
    AtomicUsize::new(0),
];

const SIGNALS: [i32; 3] = [SIGINT, SIGTERM, SIGHUP];

fn catch() {
    for (signum, previous) in SIGNALS.iter().zip(&PREVIOUS) {
        // SAFETY: `signal` from the C library, with a handler that only
        // performs an atomic store, which is async-signal-safe.
        let old = unsafe { signal(*signum, on_signal as extern "C" fn(i32) as usize) };
        previous.store(old, Ordering::SeqCst);
    }
}

fn restore() {
    for (signum, previous) in SIGNALS.iter().zip(&PREVIOUS) {
        let old = previous.swap(SIG_DFL, Ordering::SeqCst);
        // SAFETY: puts back the disposition `signal` returned when the guard
        // replaced it (SIG_DFL, or a handler installed by the line editor).
        unsafe {
            signal(*signum, if old == SIG_ERR { SIG_DFL } else { old });
        }
    }
}

extern "C" {
    fn pthread_self() -> usize;
    fn pthread_kill(thread: usize, signum: i32) -> i32;
}

/// Wakes one thread waiting in the line editor, as Ctrl-C does: rustyline
/// turns a SIGINT that interrupts its read(2) into `Interrupted`. Only for
/// when no [`Guard`] is alive and the line editor's handler is installed
/// (stdin and stdout are terminals); otherwise SIGINT acts as usual.
#[derive(Clone, Copy, Debug)]
pub struct Waker(usize);

impl Waker {
    /// A waker for the calling thread (the one that will read lines).
    pub fn this_thread() -> Waker {
        // SAFETY: `pthread_self` from the C library; always succeeds.
        Waker(unsafe { pthread_self() })
    }

    /// Sends SIGINT to that thread.
    pub fn wake(self) {
        // SAFETY: `pthread_kill` from the C library, on a thread id taken
        // with `pthread_self` from a thread that lives as long as the
        // process reads lines (the main thread).
        unsafe {
            pthread_kill(self.0, SIGINT);
        }
    }
}

/// Catches the signals for as long as it lives.
#[derive(Debug)]
pub struct Guard(());

impl Guard {
    /// Starts catching; clears anything raised before.
    pub fn new() -> Guard {
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
                // SAFETY: `raise` from the C library, with a valid signal.
                unsafe {
                    raise(SIGINT);
                }
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

/// Whether a signal arrived, without clearing it.
pub fn pending() -> bool {
    RAISED.load(Ordering::SeqCst) != 0
}

/// Whether the process was asked to stop (SIGTERM or SIGHUP) rather than
/// the turn (Ctrl-C).
pub fn terminated() -> bool {
    matches!(RAISED.load(Ordering::SeqCst), SIGTERM | SIGHUP)
}

static EPOCH: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static WATCHED: Cell<u64> = const { Cell::new(0) };
}

/// Marks every request in flight as abandoned (the user interrupted it):
/// their workers see [`abandoned`] and stop retrying.
pub fn abandon() {
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
