//! A pollable that borrows what it watches, so it cannot outlive it.

use core::marker::PhantomData;
use core::ops::Deref;

use wasip2::io::poll::Pollable;

/// A pollable of a guard, permit or pending lock, borrowing it: the compiler
/// refuses to drop (or release) the watched value while the subscription
/// lives, where an owned `wasi:io` pollable outliving its parent makes the
/// host trap.
///
/// It dereferences to a `wasip2::io::poll::Pollable`, so it goes wherever one
/// does: `poll(&[&lost, &timer])`, `lost.ready()`, `lost.block()`.
#[must_use = "a subscription does nothing unless polled"]
pub struct Subscription<'a> {
    pollable: Pollable,
    watched: PhantomData<&'a ()>,
}

impl<'a> Subscription<'a> {
    /// `pollable`, tied to the lifetime of what it watches.
    pub(crate) fn new<T: ?Sized>(pollable: Pollable, _watched: &'a T) -> Self {
        Subscription {
            pollable,
            watched: PhantomData,
        }
    }
}

impl Deref for Subscription<'_> {
    type Target = Pollable;

    fn deref(&self) -> &Pollable {
        &self.pollable
    }
}

impl core::fmt::Debug for Subscription<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Subscription")
            .field("ready", &self.pollable.ready())
            .finish()
    }
}
