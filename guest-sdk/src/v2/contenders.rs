//! Who holds a lock and who waits for it (`wardlock:lock@0.2.2`'s
//! `contenders`; kazoo's `Lock.contenders()`).

use super::{Error, Mode, locks};

/// One holder or waiter of a lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contender {
    /// Who it is, as the lock service records it (may be empty): on
    /// `wardlock run`'s memory engine `plugin P, instance N`; on ZooKeeper
    /// the lock node's data; on etcd `lease <hex>`.
    pub owner: String,
    /// The mode it holds or asks for.
    pub mode: Mode,
    /// True for a holder, false for a waiter.
    pub holds: bool,
    /// A holder's token where the lock service records one (memory: its
    /// guard's fencing token; etcd: the key's create revision); `None` for a
    /// waiter and on ZooKeeper.
    pub fencing_token: Option<u64>,
}

/// The contenders of one lock: the first ones asked for, and how many in all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Queue {
    /// Holders first, then waiters in arrival order.
    pub contenders: Vec<Contender>,
    /// How many contenders the lock has in all (at least `contenders.len()`).
    pub total: u32,
}

impl Queue {
    /// The listed holders.
    pub fn holders(&self) -> impl Iterator<Item = &Contender> {
        self.contenders.iter().filter(|c| c.holds)
    }

    /// The listed waiters, in arrival order.
    pub fn waiters(&self) -> impl Iterator<Item = &Contender> {
        self.contenders.iter().filter(|c| !c.holds)
    }
}

/// Who holds the lock `name` and who waits for it, in this and every other
/// instance, host or client: the first `limit` contenders (the host lists at
/// most 1024) and how many there are. A snapshot, stale as soon as it
/// returns.
///
/// # Errors
/// [`Error::InvalidName`], [`Error::Denied`] (the name must be granted, as
/// for acquiring), [`Error::Unavailable`] (the lock service did not answer,
/// or cannot list contenders).
pub fn contenders(name: &str, limit: u32) -> Result<Queue, Error> {
    Ok(super::queue_of(locks::contenders(name, limit)?))
}
