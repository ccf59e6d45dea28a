//! A tokio runtime owned by a real-server handle, so its methods are synchronous and callable
//! from synchronous tests, from either tokio test flavour and from xtask alike.

use std::future::Future;

/// A small multi-threaded runtime; [`Background::block`] runs a future on it to completion.
#[derive(Debug)]
pub struct Background {
    runtime: Option<tokio::runtime::Runtime>,
}

impl Background {
    /// A runtime with two workers.
    pub fn new() -> Background {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("real-server runtime");
        Background {
            runtime: Some(runtime),
        }
    }

    /// Runs `future` on this runtime and waits for it. It runs on a helper thread, so calling
    /// this from inside another runtime (an async test) is allowed.
    pub fn block<F>(&self, future: F) -> F::Output
    where
        F: Future + Send,
        F::Output: Send,
    {
        let runtime = self.runtime.as_ref().expect("runtime lives until drop");
        std::thread::scope(|scope| {
            scope
                .spawn(|| runtime.block_on(future))
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    }
}

impl Default for Background {
    fn default() -> Self {
        Background::new()
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        // Dropping a runtime inside an async test would panic; this does not block.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
