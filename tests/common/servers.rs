//! Real model servers given to the tests by an environment variable (a
//! comma-separated list of URLs, as `.ci/run` sets it), each serving one
//! test at a time: a test takes a free one and gives it back when it ends,
//! so `--test-threads` as many as there are servers runs that many at
//! once. The groups that use them are `#[ignore]`d and run by name; one
//! asked for without its servers fails, so ok means ran.

use std::sync::{Condvar, Mutex, OnceLock};

/// The servers of one environment variable.
pub struct Pool {
    var: &'static str,
    /// What the assertion says when the variable is unset.
    needs: &'static str,
    free: OnceLock<(Mutex<Vec<String>>, Condvar)>,
}

/// A server taken from a pool for one test; given back on drop.
pub struct Lease {
    pool: &'static Pool,
    url: String,
}

impl Pool {
    /// The pool of `var`'s servers; `needs` says how to start them.
    pub const fn new(var: &'static str, needs: &'static str) -> Pool {
        Pool {
            var,
            needs,
            free: OnceLock::new(),
        }
    }

    fn state(&self) -> &(Mutex<Vec<String>>, Condvar) {
        self.free.get_or_init(|| {
            let urls = std::env::var(self.var).unwrap_or_default();
            let urls = urls
                .split(',')
                .map(str::trim)
                .filter(|u| !u.is_empty())
                .map(str::to_owned)
                .collect();
            (Mutex::new(urls), Condvar::new())
        })
    }

    /// A free server's URL, held until the lease drops.
    pub fn take(&'static self) -> (String, Lease) {
        assert!(
            std::env::var(self.var).is_ok_and(|u| !u.trim().is_empty()),
            "needs {}: {}",
            self.var,
            self.needs
        );
        let (free, given_back) = self.state();
        // A test that failed holding the lock leaves the servers usable.
        let mut free = free.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(url) = free.pop() {
                let lease = Lease {
                    pool: self,
                    url: url.clone(),
                };
                return (url, lease);
            }
            free = given_back.wait(free).unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let (free, given_back) = self.pool.state();
        free.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(std::mem::take(&mut self.url));
        given_back.notify_one();
    }
}
