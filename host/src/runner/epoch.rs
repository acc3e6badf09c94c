//! The epoch ticker: makes running guest code yield to the host regularly.
//!
//! Guests run with an epoch deadline of one tick and yield to the async executor at
//! every tick. That lets a host-side timeout (or an embedder dropping the call)
//! end a guest stuck in an infinite loop, not only one parked in `acquire`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use wasmtime::Engine;

/// How often running guests yield.
pub const TICK: Duration = Duration::from_millis(10);

/// Increments an engine's epoch every [`TICK`] until dropped.
pub struct EpochTicker {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl EpochTicker {
    /// Starts ticking `engine`.
    ///
    /// # Errors
    /// When the OS refuses a new thread.
    pub fn start(engine: &Engine) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let engine = engine.weak();
        let thread = std::thread::Builder::new()
            .name("wardlock-epoch".into())
            .spawn({
                let stop = stop.clone();
                move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(TICK);
                        match engine.upgrade() {
                            Some(engine) => engine.increment_epoch(),
                            None => return,
                        }
                    }
                }
            })?;
        Ok(EpochTicker {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
