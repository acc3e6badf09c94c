//! An acquisition waiting in the lock's queue while the guest runs on.

use super::bindings::wardlock::lock::locks::PendingLock;
use super::{Guard, Subscription};
use crate::Error;

/// A lock requested with [`Lock::acquire_async`](super::Lock::acquire_async).
/// Dropping it withdraws the request (or releases a grant nobody took).
///
/// With feature `async` it is [`IntoFuture`](core::future::IntoFuture):
/// `.await` it inside wstd's event loop (`wstd::main`,
/// `wstd::runtime::block_on`) and the guest's other tasks run while it waits.
#[must_use = "the request is withdrawn as soon as it is dropped"]
pub struct Pending {
    raw: PendingLock,
}

impl Pending {
    pub(crate) fn from_raw(raw: PendingLock) -> Self {
        Self { raw }
    }

    /// A pollable ready once the acquisition finished (granted or failed). It
    /// borrows the `Pending`, so it cannot outlive it.
    pub fn subscribe(&self) -> Subscription<'_> {
        Subscription::new(self.raw.subscribe(), self)
    }

    /// `None` while waiting; then the guard or the error, once (later calls
    /// give [`Error::InvalidRequest`]).
    pub fn get(&self) -> Option<Result<Guard, Error>> {
        self.raw
            .get()
            .map(|result| result.map(Guard::from_raw).map_err(Error::from))
    }

    /// Waits until the acquisition finished and returns its result, blocking
    /// the whole guest (with feature `async`, `.await` it instead).
    ///
    /// # Errors
    /// What [`Lock::acquire`](super::Lock::acquire) would have returned.
    pub fn wait(self) -> Result<Guard, Error> {
        self.subscribe().block();
        self.finished()
    }

    /// The result of a finished acquisition.
    fn finished(&self) -> Result<Guard, Error> {
        self.get().unwrap_or_else(|| {
            Err(Error::Unavailable(
                "the host reported a finished acquisition without a result".into(),
            ))
        })
    }
}

#[cfg(feature = "async")]
impl core::future::IntoFuture for Pending {
    type Output = Result<Guard, Error>;
    type IntoFuture = core::pin::Pin<Box<dyn Future<Output = Self::Output>>>;

    /// Waits on wstd's reactor: only this task waits; the others run.
    ///
    /// # Panics
    /// Outside wstd's event loop (wstd's `Reactor::current` panics there).
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let ready = reactor_pollable(self.raw.subscribe());
            ready.wait_for().await;
            drop(ready);
            self.finished()
        })
    }
}

/// `pollable` registered with wstd's reactor.
#[cfg(feature = "async")]
fn reactor_pollable(pollable: wasip2::io::poll::Pollable) -> wstd::runtime::AsyncPollable {
    // SAFETY: both crates bind the one WASI resource `wasi:io/poll.pollable`
    // (semver-compatible versions, which the component's imports merge), so
    // the handle means the same pollable to either; `take_handle` gives up
    // ownership, so exactly one of them drops it.
    let same = unsafe { wasip2_for_wstd::io::poll::Pollable::from_handle(pollable.take_handle()) };
    wstd::runtime::AsyncPollable::new(same)
}
