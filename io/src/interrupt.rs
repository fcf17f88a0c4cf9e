//! Ctrl-C: a SIGINT handler that only raises a flag. The shell polls the
//! flag while a request is in flight, ends the turn as interrupted, and keeps
//! the log whole. (The REPL's line editor reads Ctrl-C as a key itself.)

use std::sync::atomic::{AtomicBool, Ordering};

static RAISED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: i32) {
    // Async-signal-safe: a single atomic store.
    RAISED.store(true, Ordering::SeqCst);
}

extern "C" {
    fn signal(signum: i32, handler: extern "C" fn(i32)) -> usize;
}

const SIGINT: i32 = 2;

/// Installs the handler. Until then Ctrl-C ends the process as usual.
pub fn install() {
    // SAFETY: `signal` from the C library with a handler that only performs
    // an atomic store, which is async-signal-safe.
    unsafe {
        signal(SIGINT, on_sigint);
    }
}

/// Whether Ctrl-C was pressed since the last call; clears the flag.
pub fn take() -> bool {
    RAISED.swap(false, Ordering::SeqCst)
}
