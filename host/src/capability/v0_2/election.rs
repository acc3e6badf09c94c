//! `wardlock:lock@0.2.2`'s `election` interface, implemented on [`WardlockView`]: each call goes to the
//! instance's [`WardlockCtx`](crate::capability::WardlockCtx) (`ctx/election.rs`).

use std::time::Duration;

use wasmtime::component::Resource;
use wasmtime_wasi::p2::DynPollable;

use crate::backend::Leader;
use crate::capability::WardlockView;
use crate::capability::bindings_v2::wardlock::lock::{election, types};
use crate::capability::leadership::{ElectionObserver, LeadershipHandle};

impl election::Host for WardlockView<'_> {
    async fn campaign(
        &mut self,
        name: String,
        value: String,
        timeout_ms: Option<u64>,
    ) -> wasmtime::Result<Result<Resource<LeadershipHandle>, types::Error>> {
        let timeout = timeout_ms.map(Duration::from_millis);
        match self.ctx.campaign(&name, &value, timeout).await {
            Ok(leadership) => Ok(Ok(self.table.push(leadership)?)),
            Err(error) => Ok(Err(error.into())),
        }
    }

    async fn leader(
        &mut self,
        name: String,
    ) -> wasmtime::Result<Result<Option<election::LeaderInfo>, types::Error>> {
        let leader = self.ctx.leader(&name).await;
        Ok(leader
            .map(|l| l.map(leader_info))
            .map_err(types::Error::from))
    }

    async fn observe(
        &mut self,
        name: String,
    ) -> wasmtime::Result<Result<Resource<ElectionObserver>, types::Error>> {
        match self.ctx.observe(&name) {
            Ok(observer) => Ok(Ok(self.table.push(observer)?)),
            Err(error) => Ok(Err(error.into())),
        }
    }
}

impl election::HostLeadership for WardlockView<'_> {
    async fn name(&mut self, leadership: Resource<LeadershipHandle>) -> wasmtime::Result<String> {
        Ok(self.table.get(&leadership)?.name.to_string())
    }

    async fn term(&mut self, leadership: Resource<LeadershipHandle>) -> wasmtime::Result<u64> {
        Ok(self.table.get(&leadership)?.term())
    }

    async fn value(&mut self, leadership: Resource<LeadershipHandle>) -> wasmtime::Result<String> {
        Ok(self.table.get(&leadership)?.value.clone())
    }

    async fn status(
        &mut self,
        leadership: Resource<LeadershipHandle>,
    ) -> wasmtime::Result<types::Status> {
        let handle = self.table.get(&leadership)?;
        Ok(self.ctx.leadership_status(handle).into())
    }

    async fn subscribe(
        &mut self,
        leadership: Resource<LeadershipHandle>,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        let handle = self.table.get_mut(&leadership)?;
        self.ctx.subscribe_leadership(handle);
        wasmtime_wasi::p2::subscribe(self.table, leadership)
    }

    async fn proclaim(
        &mut self,
        leadership: Resource<LeadershipHandle>,
        value: String,
    ) -> wasmtime::Result<Result<(), types::Error>> {
        let grant = match self.ctx.leadership_grant(self.table.get(&leadership)?) {
            Ok(grant) => grant,
            Err(error) => return Ok(Err(error.into())),
        };
        if let Err(error) = self.ctx.proclaim(grant, &value).await {
            return Ok(Err(error.into()));
        }
        self.table.get_mut(&leadership)?.value = value;
        Ok(Ok(()))
    }

    async fn resign(
        &mut self,
        leadership: Resource<LeadershipHandle>,
    ) -> wasmtime::Result<Result<(), types::Error>> {
        let handle = self.table.get_mut(&leadership)?;
        Ok(self.ctx.resign(handle).map_err(types::Error::from))
    }

    async fn put(
        &mut self,
        leadership: Resource<LeadershipHandle>,
        key: String,
        value: Vec<u8>,
    ) -> wasmtime::Result<Result<u64, types::Error>> {
        let grant = match self.ctx.leadership_grant(self.table.get(&leadership)?) {
            Ok(grant) => grant,
            Err(error) => return Ok(Err(error.into())),
        };
        let written = self.ctx.leader_put(grant, &key, &value).await;
        Ok(written.map_err(types::Error::from))
    }

    async fn drop(&mut self, leadership: Resource<LeadershipHandle>) -> wasmtime::Result<()> {
        let handle = self.table.delete(leadership)?;
        self.ctx.drop_leadership(handle);
        Ok(())
    }
}

impl election::HostObserver for WardlockView<'_> {
    async fn leader(
        &mut self,
        observer: Resource<ElectionObserver>,
    ) -> wasmtime::Result<Result<Option<election::LeaderInfo>, types::Error>> {
        let observer = self.table.get_mut(&observer)?;
        let leader = self.ctx.observed_leader(observer).await;
        Ok(leader
            .map(|l| l.map(leader_info))
            .map_err(types::Error::from))
    }

    async fn subscribe(
        &mut self,
        observer: Resource<ElectionObserver>,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        wasmtime_wasi::p2::subscribe(self.table, observer)
    }

    async fn drop(&mut self, observer: Resource<ElectionObserver>) -> wasmtime::Result<()> {
        let observer = self.table.delete(observer)?;
        self.ctx.drop_observer(observer);
        Ok(())
    }
}

/// A backend's leader as the WIT's `leader-info`.
pub(super) fn leader_info(leader: Leader) -> election::LeaderInfo {
    election::LeaderInfo {
        owner: leader.owner,
        value: leader.value,
        term: leader.term,
    }
}
