//! The synchronous host traits of both versions, implemented on
//! [`WardlockView`] by running its async implementation to completion
//! (`host_impl.rs`, `host_impl_v2.rs` of the capability): one implementation,
//! two linkers, as wasmtime-wasi does for its own sync bindings.
//!
//! A blocked call blocks only the calling thread: it runs the async call on
//! wasmtime-wasi's runtime ([`in_tokio`]: the ambient tokio runtime if the
//! thread is in one, else a lazily built process-wide one), the same runtime
//! on which `wasmtime_wasi::p2::add_to_linker_sync` waits on pollables.

use wasmtime::component::Resource;
use wasmtime_wasi::p2::DynPollable;
use wasmtime_wasi::runtime::in_tokio;

use super::bindings::{v1, v2};
use crate::capability::WardlockView;
use crate::capability::bindings::wardlock::lock as async_v1;
use crate::capability::bindings_v2::wardlock::lock as async_v2;
use crate::capability::handle::LockHandle;
use crate::capability::leadership::{ElectionObserver, LeadershipHandle};
use crate::capability::pending::PendingLock;
use crate::capability::permit::PermitHandle;

/// Synchronous trait methods that call the method of the same name and
/// arguments of `$async_trait` and wait for it.
macro_rules! blocking {
    ($async_trait:path; $(fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)*) => {
        $(
            fn $name(&mut self $(, $arg: $ty)*) -> wasmtime::Result<$ret> {
                in_tokio(<Self as $async_trait>::$name(self $(, $arg)*))
            }
        )*
    };
}

/// The `lock` resource's methods both versions have.
macro_rules! blocking_lock_methods {
    ($async_trait:path, $($types:ident)::+) => {
        blocking! { $async_trait;
            fn name(lock: Resource<LockHandle>) -> String;
            fn mode(lock: Resource<LockHandle>) -> $($types)::+::Mode;
            fn fencing_token(lock: Resource<LockHandle>) -> u64;
            fn status(lock: Resource<LockHandle>) -> $($types)::+::Status;
            fn release(lock: Resource<LockHandle>) -> Result<(), $($types)::+::Error>;
            fn drop(lock: Resource<LockHandle>) -> ();
        }
    };
}

impl v1::wardlock::lock::locks::Host for WardlockView<'_> {
    fn acquire(
        &mut self,
        name: String,
        options: v1::wardlock::lock::locks::Options,
    ) -> wasmtime::Result<Result<Resource<LockHandle>, async_v1::types::Error>> {
        let options = async_v1::locks::Options {
            mode: options.mode,
            timeout_ms: options.timeout_ms,
        };
        in_tokio(<Self as async_v1::locks::Host>::acquire(
            self, name, options,
        ))
    }

    blocking! { async_v1::locks::Host;
        fn try_acquire(name: String, mode: async_v1::types::Mode)
            -> Result<Option<Resource<LockHandle>>, async_v1::types::Error>;
    }
}

impl v1::wardlock::lock::locks::HostLock for WardlockView<'_> {
    blocking_lock_methods!(async_v1::locks::HostLock, async_v1::types);
}

impl v2::wardlock::lock::locks::Host for WardlockView<'_> {
    fn acquire(
        &mut self,
        name: String,
        options: v2::wardlock::lock::locks::Options,
    ) -> wasmtime::Result<Result<Resource<LockHandle>, async_v2::types::Error>> {
        in_tokio(<Self as async_v2::locks::Host>::acquire(
            self,
            name,
            options_v2(options),
        ))
    }

    fn acquire_async(
        &mut self,
        name: String,
        options: v2::wardlock::lock::locks::Options,
    ) -> wasmtime::Result<Result<Resource<PendingLock>, async_v2::types::Error>> {
        in_tokio(<Self as async_v2::locks::Host>::acquire_async(
            self,
            name,
            options_v2(options),
        ))
    }

    fn acquire_many(
        &mut self,
        requests: Vec<v2::wardlock::lock::locks::Request>,
        timeout_ms: Option<u64>,
    ) -> wasmtime::Result<Result<Vec<Resource<LockHandle>>, async_v2::types::Error>> {
        let requests = requests
            .into_iter()
            .map(|r| async_v2::locks::Request {
                name: r.name,
                mode: r.mode,
            })
            .collect();
        in_tokio(<Self as async_v2::locks::Host>::acquire_many(
            self, requests, timeout_ms,
        ))
    }

    blocking! { async_v2::locks::Host;
        fn try_acquire(name: String, mode: async_v2::types::Mode)
            -> Result<Option<Resource<LockHandle>>, async_v2::types::Error>;
        fn acquire_permit(name: String, permits: u32, timeout_ms: Option<u64>)
            -> Result<Resource<PermitHandle>, async_v2::types::Error>;
        fn try_acquire_permit(name: String, permits: u32)
            -> Result<Option<Resource<PermitHandle>>, async_v2::types::Error>;
        fn request_revocation(name: String) -> Result<u32, async_v2::types::Error>;
    }

    fn contenders(
        &mut self,
        name: String,
        limit: u32,
    ) -> wasmtime::Result<Result<v2::wardlock::lock::locks::LockQueue, async_v2::types::Error>>
    {
        let queue = in_tokio(<Self as async_v2::locks::Host>::contenders(
            self, name, limit,
        ))?;
        Ok(queue.map(|queue| v2::wardlock::lock::locks::LockQueue {
            contenders: queue
                .contenders
                .into_iter()
                .map(|c| v2::wardlock::lock::locks::Contender {
                    owner: c.owner,
                    mode: c.mode,
                    holds: c.holds,
                    fencing_token: c.fencing_token,
                })
                .collect(),
            total: queue.total,
        }))
    }
}

impl v2::wardlock::lock::locks::HostLock for WardlockView<'_> {
    blocking_lock_methods!(async_v2::locks::HostLock, async_v2::types);

    blocking! { async_v2::locks::HostLock;
        fn subscribe(lock: Resource<LockHandle>) -> Resource<DynPollable>;
        fn revocation_requested(lock: Resource<LockHandle>) -> bool;
        fn subscribe_revocation(lock: Resource<LockHandle>) -> Resource<DynPollable>;
    }
}

impl v2::wardlock::lock::locks::HostPermit for WardlockView<'_> {
    blocking! { async_v2::locks::HostPermit;
        fn name(permit: Resource<PermitHandle>) -> String;
        fn permits(permit: Resource<PermitHandle>) -> u32;
        fn fencing_token(permit: Resource<PermitHandle>) -> u64;
        fn status(permit: Resource<PermitHandle>) -> async_v2::types::Status;
        fn release(permit: Resource<PermitHandle>) -> Result<(), async_v2::types::Error>;
        fn subscribe(permit: Resource<PermitHandle>) -> Resource<DynPollable>;
        fn drop(permit: Resource<PermitHandle>) -> ();
    }
}

impl v2::wardlock::lock::locks::HostPendingLock for WardlockView<'_> {
    blocking! { async_v2::locks::HostPendingLock;
        fn subscribe(pending: Resource<PendingLock>) -> Resource<DynPollable>;
        fn get(pending: Resource<PendingLock>)
            -> Option<Result<Resource<LockHandle>, async_v2::types::Error>>;
        fn drop(pending: Resource<PendingLock>) -> ();
    }
}

/// 0.2.0's `options` of the synchronous bindings as the async bindings' own.
fn options_v2(options: v2::wardlock::lock::locks::Options) -> async_v2::locks::Options {
    async_v2::locks::Options {
        mode: options.mode,
        timeout_ms: options.timeout_ms,
    }
}

impl v2::wardlock::lock::guarded::Host for WardlockView<'_> {
    fn get(
        &mut self,
        name: String,
        key: String,
    ) -> wasmtime::Result<Result<Option<v2::wardlock::lock::guarded::Entry>, async_v2::types::Error>>
    {
        let entry = in_tokio(<Self as async_v2::guarded::Host>::get(self, name, key))?;
        Ok(entry.map(|entry| {
            entry.map(|e| v2::wardlock::lock::guarded::Entry {
                value: e.value,
                token: e.token,
                revision: e.revision,
            })
        }))
    }

    blocking! { async_v2::guarded::Host;
        fn put(holder: Resource<LockHandle>, key: String, value: Vec<u8>) -> Result<u64, async_v2::types::Error>;
        fn delete(holder: Resource<LockHandle>, key: String) -> Result<bool, async_v2::types::Error>;
        fn keys(name: String, prefix: String, limit: u32) -> Result<Vec<String>, async_v2::types::Error>;
    }
}

/// A leader of the async bindings as the sync bindings' `leader-info`.
fn leader_info_sync(
    leader: async_v2::election::LeaderInfo,
) -> v2::wardlock::lock::election::LeaderInfo {
    v2::wardlock::lock::election::LeaderInfo {
        owner: leader.owner,
        value: leader.value,
        term: leader.term,
    }
}

impl v2::wardlock::lock::election::Host for WardlockView<'_> {
    fn leader(
        &mut self,
        name: String,
    ) -> wasmtime::Result<
        Result<Option<v2::wardlock::lock::election::LeaderInfo>, async_v2::types::Error>,
    > {
        let leader = in_tokio(<Self as async_v2::election::Host>::leader(self, name))?;
        Ok(leader.map(|l| l.map(leader_info_sync)))
    }

    blocking! { async_v2::election::Host;
        fn campaign(name: String, value: String, timeout_ms: Option<u64>) -> Result<Resource<LeadershipHandle>, async_v2::types::Error>;
        fn observe(name: String) -> Result<Resource<ElectionObserver>, async_v2::types::Error>;
    }
}

impl v2::wardlock::lock::election::HostLeadership for WardlockView<'_> {
    blocking! { async_v2::election::HostLeadership;
        fn name(leadership: Resource<LeadershipHandle>) -> String;
        fn term(leadership: Resource<LeadershipHandle>) -> u64;
        fn value(leadership: Resource<LeadershipHandle>) -> String;
        fn status(leadership: Resource<LeadershipHandle>) -> async_v2::types::Status;
        fn subscribe(leadership: Resource<LeadershipHandle>) -> Resource<DynPollable>;
        fn proclaim(leadership: Resource<LeadershipHandle>, value: String) -> Result<(), async_v2::types::Error>;
        fn resign(leadership: Resource<LeadershipHandle>) -> Result<(), async_v2::types::Error>;
        fn put(leadership: Resource<LeadershipHandle>, key: String, value: Vec<u8>) -> Result<u64, async_v2::types::Error>;
        fn drop(leadership: Resource<LeadershipHandle>) -> ();
    }
}

impl v2::wardlock::lock::election::HostObserver for WardlockView<'_> {
    fn leader(
        &mut self,
        observer: Resource<ElectionObserver>,
    ) -> wasmtime::Result<
        Result<Option<v2::wardlock::lock::election::LeaderInfo>, async_v2::types::Error>,
    > {
        let leader = in_tokio(<Self as async_v2::election::HostObserver>::leader(
            self, observer,
        ))?;
        Ok(leader.map(|l| l.map(leader_info_sync)))
    }

    blocking! { async_v2::election::HostObserver;
        fn subscribe(observer: Resource<ElectionObserver>) -> Resource<DynPollable>;
        fn drop(observer: Resource<ElectionObserver>) -> ();
    }
}
