//! The host-side state behind a guest's `lock` resource.

use crate::backend::{Mode, StatusChange};
use crate::name::LockName;

/// One `lock` handle of a guest instance. Several handles may share one backend
/// grant (re-entrancy); the grant goes when the last of them is released.
#[derive(Debug)]
pub struct LockHandle {
    pub(crate) name: LockName,
    pub(crate) mode: Mode,
    pub(crate) token: u64,
    /// Which grant record of the instance this handle counts towards.
    pub(crate) record: u64,
    pub(crate) released: bool,
    /// What `lock.subscribe`'s pollable waits on (WIT 0.2.0).
    pub(crate) watch: Watch,
    /// Tells 0.3.0's `not-held` futures that this handle was released: made
    /// by the first of them; `true` sent by `release`, dropped (which they
    /// take as released too) with the handle.
    pub(crate) released_signal: Option<tokio::sync::watch::Sender<bool>>,
}

/// A handle's subscription to its grant's status.
pub(crate) enum Watch {
    /// Nobody subscribed yet.
    Idle,
    /// Resolves once the grant stops being held.
    Waiting(StatusChange),
    /// The grant stopped being held (or never was): ready for good.
    Done,
}

impl Watch {
    /// Waits until the subscribed status change came (at once when nobody
    /// subscribed or it came already). Cancel safe: the future stays here.
    pub(crate) async fn settle(&mut self) {
        if let Watch::Waiting(change) = self {
            change.as_mut().await;
        }
        *self = Watch::Done;
    }
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Watch::Idle => "Idle",
            Watch::Waiting(_) => "Waiting",
            Watch::Done => "Done",
        })
    }
}

impl LockHandle {
    pub(crate) fn new(name: LockName, mode: Mode, token: u64, record: u64) -> Self {
        LockHandle {
            name,
            mode,
            token,
            record,
            released: false,
            watch: Watch::Idle,
            released_signal: None,
        }
    }

    /// Marks the handle released, and tells its `not-held` futures.
    pub(crate) fn mark_released(&mut self) {
        self.released = true;
        if let Some(signal) = &self.released_signal {
            signal.send_replace(true);
        }
    }

    /// Resolves once this handle is released through `release` or dropped,
    /// whatever becomes of the grant behind it.
    pub(crate) fn released_later(&mut self) -> impl Future<Output = ()> + Send + 'static {
        let mut released = self
            .released_signal
            .get_or_insert_with(|| tokio::sync::watch::Sender::new(self.released))
            .subscribe();
        async move {
            // An error is the handle gone: released too.
            let _ = released.wait_for(|released| *released).await;
        }
    }

    /// The lock's name.
    pub fn name(&self) -> &LockName {
        &self.name
    }

    /// The mode the handle was requested with.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The fencing token of the grant behind this handle.
    pub fn fencing_token(&self) -> u64 {
        self.token
    }

    /// True once the handle was released.
    pub fn is_released(&self) -> bool {
        self.released
    }
}

/// `until_not_held` and the `wasi:io/poll` pollable (ready once the handle
/// is no longer held) of a handle type with `released: bool` and
/// `watch: Watch` fields: `lock.subscribe`'s and `permit.subscribe`'s.
macro_rules! not_held_pollable {
    ($handle:ty) => {
        impl $handle {
            /// Resolves once the handle is no longer held: released through
            /// it, or its grant's status moved away from `held` (the future
            /// set up by the context's `subscribe` or `subscribe_permit`;
            /// without one it resolves at once).
            ///
            /// # Errors
            /// None: it only waits.
            ///
            /// # Cancellation safety
            /// Cancel safe: the subscription stays in the handle, so a
            /// dropped wait is taken up again by the next.
            pub async fn until_not_held(&mut self) {
                if !self.released {
                    self.watch.settle().await;
                }
                self.watch = $crate::capability::handle::Watch::Done;
            }
        }

        #[async_trait::async_trait]
        impl wasmtime_wasi::p2::Pollable for $handle {
            async fn ready(&mut self) {
                self.until_not_held().await;
            }
        }
    };
}

pub(crate) use not_held_pollable;

not_held_pollable!(LockHandle);
