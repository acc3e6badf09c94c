//! The synchronous host traits of `wardlock:lock@0.2.2`, implemented on
//! [`WardlockView`] by running its async implementation (`../v0_2/`) to
//! completion: one implementation, two linkers, as wasmtime-wasi does for its
//! own sync bindings. Each method is written out, so the generated trait's
//! method leads to it.
//!
//! A blocked call blocks only the calling thread: it runs the async call on
//! wasmtime-wasi's runtime ([`in_tokio`]: the ambient tokio runtime if the
//! thread is in one, else a lazily built process-wide one), the same runtime
//! on which `wasmtime_wasi::p2::add_to_linker_sync` waits on pollables.

use wasmtime::component::Resource;
use wasmtime_wasi::p2::DynPollable;
use wasmtime_wasi::runtime::in_tokio;

use super::bindings::v2;
use crate::capability::WardlockView;
use crate::capability::bindings_v2::wardlock::lock as async_v2;
use crate::capability::handle::LockHandle;
use crate::capability::leadership::{ElectionObserver, LeadershipHandle};
use crate::capability::pending::PendingLock;
use crate::capability::permit::PermitHandle;

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

    fn try_acquire(
        &mut self,
        name: String,
        mode: async_v2::types::Mode,
    ) -> wasmtime::Result<Result<Option<Resource<LockHandle>>, async_v2::types::Error>> {
        in_tokio(<Self as async_v2::locks::Host>::try_acquire(
            self, name, mode,
        ))
    }

    fn acquire_permit(
        &mut self,
        name: String,
        permits: u32,
        timeout_ms: Option<u64>,
    ) -> wasmtime::Result<Result<Resource<PermitHandle>, async_v2::types::Error>> {
        in_tokio(<Self as async_v2::locks::Host>::acquire_permit(
            self, name, permits, timeout_ms,
        ))
    }

    fn try_acquire_permit(
        &mut self,
        name: String,
        permits: u32,
    ) -> wasmtime::Result<Result<Option<Resource<PermitHandle>>, async_v2::types::Error>> {
        in_tokio(<Self as async_v2::locks::Host>::try_acquire_permit(
            self, name, permits,
        ))
    }

    fn request_revocation(
        &mut self,
        name: String,
    ) -> wasmtime::Result<Result<u32, async_v2::types::Error>> {
        in_tokio(<Self as async_v2::locks::Host>::request_revocation(
            self, name,
        ))
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
    fn name(&mut self, lock: Resource<LockHandle>) -> wasmtime::Result<String> {
        in_tokio(<Self as async_v2::locks::HostLock>::name(self, lock))
    }

    fn mode(&mut self, lock: Resource<LockHandle>) -> wasmtime::Result<async_v2::types::Mode> {
        in_tokio(<Self as async_v2::locks::HostLock>::mode(self, lock))
    }

    fn fencing_token(&mut self, lock: Resource<LockHandle>) -> wasmtime::Result<u64> {
        in_tokio(<Self as async_v2::locks::HostLock>::fencing_token(
            self, lock,
        ))
    }

    fn status(&mut self, lock: Resource<LockHandle>) -> wasmtime::Result<async_v2::types::Status> {
        in_tokio(<Self as async_v2::locks::HostLock>::status(self, lock))
    }

    fn release(
        &mut self,
        lock: Resource<LockHandle>,
    ) -> wasmtime::Result<Result<(), async_v2::types::Error>> {
        in_tokio(<Self as async_v2::locks::HostLock>::release(self, lock))
    }

    fn drop(&mut self, lock: Resource<LockHandle>) -> wasmtime::Result<()> {
        in_tokio(<Self as async_v2::locks::HostLock>::drop(self, lock))
    }

    fn subscribe(&mut self, lock: Resource<LockHandle>) -> wasmtime::Result<Resource<DynPollable>> {
        in_tokio(<Self as async_v2::locks::HostLock>::subscribe(self, lock))
    }

    fn revocation_requested(&mut self, lock: Resource<LockHandle>) -> wasmtime::Result<bool> {
        in_tokio(<Self as async_v2::locks::HostLock>::revocation_requested(
            self, lock,
        ))
    }

    fn subscribe_revocation(
        &mut self,
        lock: Resource<LockHandle>,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        in_tokio(<Self as async_v2::locks::HostLock>::subscribe_revocation(
            self, lock,
        ))
    }
}

impl v2::wardlock::lock::locks::HostPermit for WardlockView<'_> {
    fn name(&mut self, permit: Resource<PermitHandle>) -> wasmtime::Result<String> {
        in_tokio(<Self as async_v2::locks::HostPermit>::name(self, permit))
    }

    fn permits(&mut self, permit: Resource<PermitHandle>) -> wasmtime::Result<u32> {
        in_tokio(<Self as async_v2::locks::HostPermit>::permits(self, permit))
    }

    fn fencing_token(&mut self, permit: Resource<PermitHandle>) -> wasmtime::Result<u64> {
        in_tokio(<Self as async_v2::locks::HostPermit>::fencing_token(
            self, permit,
        ))
    }

    fn status(
        &mut self,
        permit: Resource<PermitHandle>,
    ) -> wasmtime::Result<async_v2::types::Status> {
        in_tokio(<Self as async_v2::locks::HostPermit>::status(self, permit))
    }

    fn release(
        &mut self,
        permit: Resource<PermitHandle>,
    ) -> wasmtime::Result<Result<(), async_v2::types::Error>> {
        in_tokio(<Self as async_v2::locks::HostPermit>::release(self, permit))
    }

    fn subscribe(
        &mut self,
        permit: Resource<PermitHandle>,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        in_tokio(<Self as async_v2::locks::HostPermit>::subscribe(
            self, permit,
        ))
    }

    fn drop(&mut self, permit: Resource<PermitHandle>) -> wasmtime::Result<()> {
        in_tokio(<Self as async_v2::locks::HostPermit>::drop(self, permit))
    }
}

impl v2::wardlock::lock::locks::HostPendingLock for WardlockView<'_> {
    fn subscribe(
        &mut self,
        pending: Resource<PendingLock>,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        in_tokio(<Self as async_v2::locks::HostPendingLock>::subscribe(
            self, pending,
        ))
    }

    fn get(
        &mut self,
        pending: Resource<PendingLock>,
    ) -> wasmtime::Result<Option<Result<Resource<LockHandle>, async_v2::types::Error>>> {
        in_tokio(<Self as async_v2::locks::HostPendingLock>::get(
            self, pending,
        ))
    }

    fn drop(&mut self, pending: Resource<PendingLock>) -> wasmtime::Result<()> {
        in_tokio(<Self as async_v2::locks::HostPendingLock>::drop(
            self, pending,
        ))
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

    fn put(
        &mut self,
        holder: Resource<LockHandle>,
        key: String,
        value: Vec<u8>,
    ) -> wasmtime::Result<Result<u64, async_v2::types::Error>> {
        in_tokio(<Self as async_v2::guarded::Host>::put(
            self, holder, key, value,
        ))
    }

    fn delete(
        &mut self,
        holder: Resource<LockHandle>,
        key: String,
    ) -> wasmtime::Result<Result<bool, async_v2::types::Error>> {
        in_tokio(<Self as async_v2::guarded::Host>::delete(self, holder, key))
    }

    fn keys(
        &mut self,
        name: String,
        prefix: String,
        limit: u32,
    ) -> wasmtime::Result<Result<Vec<String>, async_v2::types::Error>> {
        in_tokio(<Self as async_v2::guarded::Host>::keys(
            self, name, prefix, limit,
        ))
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

    fn campaign(
        &mut self,
        name: String,
        value: String,
        timeout_ms: Option<u64>,
    ) -> wasmtime::Result<Result<Resource<LeadershipHandle>, async_v2::types::Error>> {
        in_tokio(<Self as async_v2::election::Host>::campaign(
            self, name, value, timeout_ms,
        ))
    }

    fn observe(
        &mut self,
        name: String,
    ) -> wasmtime::Result<Result<Resource<ElectionObserver>, async_v2::types::Error>> {
        in_tokio(<Self as async_v2::election::Host>::observe(self, name))
    }
}

impl v2::wardlock::lock::election::HostLeadership for WardlockView<'_> {
    fn name(&mut self, leadership: Resource<LeadershipHandle>) -> wasmtime::Result<String> {
        in_tokio(<Self as async_v2::election::HostLeadership>::name(
            self, leadership,
        ))
    }

    fn term(&mut self, leadership: Resource<LeadershipHandle>) -> wasmtime::Result<u64> {
        in_tokio(<Self as async_v2::election::HostLeadership>::term(
            self, leadership,
        ))
    }

    fn value(&mut self, leadership: Resource<LeadershipHandle>) -> wasmtime::Result<String> {
        in_tokio(<Self as async_v2::election::HostLeadership>::value(
            self, leadership,
        ))
    }

    fn status(
        &mut self,
        leadership: Resource<LeadershipHandle>,
    ) -> wasmtime::Result<async_v2::types::Status> {
        in_tokio(<Self as async_v2::election::HostLeadership>::status(
            self, leadership,
        ))
    }

    fn subscribe(
        &mut self,
        leadership: Resource<LeadershipHandle>,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        in_tokio(<Self as async_v2::election::HostLeadership>::subscribe(
            self, leadership,
        ))
    }

    fn proclaim(
        &mut self,
        leadership: Resource<LeadershipHandle>,
        value: String,
    ) -> wasmtime::Result<Result<(), async_v2::types::Error>> {
        in_tokio(<Self as async_v2::election::HostLeadership>::proclaim(
            self, leadership, value,
        ))
    }

    fn resign(
        &mut self,
        leadership: Resource<LeadershipHandle>,
    ) -> wasmtime::Result<Result<(), async_v2::types::Error>> {
        in_tokio(<Self as async_v2::election::HostLeadership>::resign(
            self, leadership,
        ))
    }

    fn put(
        &mut self,
        leadership: Resource<LeadershipHandle>,
        key: String,
        value: Vec<u8>,
    ) -> wasmtime::Result<Result<u64, async_v2::types::Error>> {
        in_tokio(<Self as async_v2::election::HostLeadership>::put(
            self, leadership, key, value,
        ))
    }

    fn drop(&mut self, leadership: Resource<LeadershipHandle>) -> wasmtime::Result<()> {
        in_tokio(<Self as async_v2::election::HostLeadership>::drop(
            self, leadership,
        ))
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

    fn subscribe(
        &mut self,
        observer: Resource<ElectionObserver>,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        in_tokio(<Self as async_v2::election::HostObserver>::subscribe(
            self, observer,
        ))
    }

    fn drop(&mut self, observer: Resource<ElectionObserver>) -> wasmtime::Result<()> {
        in_tokio(<Self as async_v2::election::HostObserver>::drop(
            self, observer,
        ))
    }
}
