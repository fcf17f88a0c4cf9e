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
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::Mutex;

static RAISED: AtomicI32 = AtomicI32::new(0);
static ARMED: AtomicBool = AtomicBool::new(false);

const SIGHUP: i32 = libc::SIGHUP;
const SIGINT: i32 = libc::SIGINT;
const SIGTERM: i32 = libc::SIGTERM;

extern "C" fn on_signal(signum: i32) {
    // Async-signal-safe: a single atomic store.
    RAISED.store(signum, Ordering::SeqCst);
}

/// The dispositions a [`Guard`] replaced (the default, or the line
/// editor's), whole: handler, flags and mask, put back as they were when it
/// drops. The flags matter: the line editor's handler is installed without
/// `SA_RESTART`, which is what lets a signal interrupt its read(2) (see
/// [`Waker`]); put back with `SA_RESTART`, the read would go on waiting.
static PREVIOUS: Mutex<Option<[libc::sigaction; 3]>> = Mutex::new(None);

const SIGNALS: [i32; 3] = [SIGINT, SIGTERM, SIGHUP];

fn catch() {
    // SAFETY: an all-zero `sigaction` is a valid value (SIG_DFL, no flags,
    // an empty mask).
    let mut previous: [libc::sigaction; 3] = unsafe { std::mem::zeroed() };
    for (signum, old) in SIGNALS.iter().zip(previous.iter_mut()) {
        // SAFETY: `sigaction` from the C library, with a handler that only
        // performs an atomic store, which is async-signal-safe. System
        // calls the signal arrives in are restarted (as `signal(2)` sets
        // it): the shell polls the flag instead. If the call fails, `old`
        // stays the default, which is what is put back.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(i32) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(*signum, &action, old);
        }
    }
    *PREVIOUS.lock().unwrap_or_else(|e| e.into_inner()) = Some(previous);
}

fn restore() {
    let previous = PREVIOUS.lock().unwrap_or_else(|e| e.into_inner()).take();
    let Some(previous) = previous else { return };
    for (signum, old) in SIGNALS.iter().zip(&previous) {
        // SAFETY: puts back the disposition `sigaction` returned when the
        // guard replaced it (the default, or the line editor's handler
        // with its own flags and mask).
        unsafe {
            libc::sigaction(*signum, old, std::ptr::null_mut());
        }
    }
}

/// Wakes one thread waiting in the line editor, as Ctrl-C does: rustyline
/// turns a SIGINT that interrupts its read(2) into `Interrupted`. Only for
/// when no [`Guard`] is alive and the line editor's handler is installed
/// (stdin and stdout are terminals); otherwise SIGINT acts as usual.
#[derive(Clone, Copy, Debug)]
pub struct Waker(libc::pthread_t);

impl Waker {
    /// A waker for the calling thread (the one that will read lines).
    pub fn this_thread() -> Waker {
        // SAFETY: `pthread_self` from the C library; always succeeds.
        Waker(unsafe { libc::pthread_self() })
    }

    /// Sends SIGINT to that thread.
    pub fn wake(self) {
        // SAFETY: `pthread_kill` from the C library, on a thread id taken
        // with `pthread_self` from a thread that lives as long as the
        // process reads lines (the main thread).
        unsafe {
            libc::pthread_kill(self.0, SIGINT);
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
                    libc::raise(SIGINT);
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
