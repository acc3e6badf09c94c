//! `wardlock:lock@0.3.0`'s `election` interface: `campaign`, `leader`,
//! `proclaim` and a leader's guarded `put` as concurrent host functions; a
//! leadership's loss as a `future<status>`; `observe` as a `stream` of
//! leaders fed by the backend's watch ([`LeaderFeed`]).

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use wasmtime::StoreContextMut;
use wasmtime::component::{
    Access, Accessor, Destination, FutureReader, Resource, StreamProducer, StreamReader,
    StreamResult,
};

use super::guarded::answer;
use super::locks::{future_slot, handed_over, status_future};
use crate::backend::Leader;
use crate::capability::bindings_v3::wardlock::lock::{election, types};
use crate::capability::ctx::LeaderFeed;
use crate::capability::leadership::LeadershipHandle;
use crate::capability::{HasWardlock, WardlockView};

impl election::Host for WardlockView<'_> {}

impl<U> election::HostWithStore<U> for HasWardlock {
    async fn campaign(
        store: &Accessor<U, Self>,
        name: String,
        value: String,
        timeout_ms: Option<u64>,
    ) -> wasmtime::Result<Result<Resource<LeadershipHandle>, types::Error>> {
        let timeout = timeout_ms.map(Duration::from_millis);
        let begun = store.with(|mut access| access.get().ctx.campaign_call(&name, &value, timeout));
        let result = match begun {
            Err(error) => Err(error),
            Ok((call, slot)) => {
                // Cancelled here, the backend's campaign is dropped: the
                // candidate is withdrawn.
                let answer = call.run().await;
                store.with(|mut access| access.get().ctx.finish_campaign(call, slot, answer))
            }
        };
        handed_over(store, result)
    }

    async fn leader(
        store: &Accessor<U, Self>,
        name: String,
    ) -> wasmtime::Result<Result<Option<election::LeaderInfo>, types::Error>> {
        let call = store.with(|mut access| access.get().ctx.leader_call(&name));
        let leader = match call {
            Ok(call) => call.run().await,
            Err(error) => Err(error),
        };
        Ok(answer(leader.map(|leader| leader.map(leader_info))))
    }

    fn observe(
        mut store: Access<'_, U, Self>,
        name: String,
    ) -> wasmtime::Result<Result<StreamReader<Option<election::LeaderInfo>>, types::Error>> {
        let feed = store.get().ctx.leader_feed(&name);
        Ok(match feed {
            Ok(feed) => Ok(StreamReader::new(&mut store, LeaderStream(feed))?),
            Err(error) => Err(error.into()),
        })
    }
}

impl<U> election::HostLeadershipWithStore<U> for HasWardlock {
    fn not_held(
        mut store: Access<'_, U, Self>,
        leadership: Resource<LeadershipHandle>,
    ) -> wasmtime::Result<FutureReader<types::Status>> {
        let not_held = {
            let view = store.get();
            let slot = future_slot(&view)?;
            (
                view.ctx.leadership_not_held(view.table.get(&leadership)?),
                slot,
            )
        };
        status_future(store, not_held)
    }

    async fn proclaim(
        store: &Accessor<U, Self>,
        leadership: Resource<LeadershipHandle>,
        value: String,
    ) -> wasmtime::Result<Result<(), types::Error>> {
        let call = store.with(|mut access| {
            let view = access.get();
            let grant = view.ctx.leadership_grant(view.table.get(&leadership)?);
            wasmtime::Result::<_>::Ok(grant.map(|grant| view.ctx.proclaim_call(grant)))
        })?;
        let proclaimed = match call {
            Ok(call) => call.run(&value).await,
            Err(error) => Err(error),
        };
        if let Err(error) = proclaimed {
            return Ok(Err(error.into()));
        }
        store.with(|mut access| {
            access.get().table.get_mut(&leadership)?.value = value;
            Ok(Ok(()))
        })
    }

    async fn put(
        store: &Accessor<U, Self>,
        leadership: Resource<LeadershipHandle>,
        key: String,
        value: Vec<u8>,
    ) -> wasmtime::Result<Result<u64, types::Error>> {
        let call = store.with(|mut access| {
            let view = access.get();
            let grant = view.ctx.leadership_grant(view.table.get(&leadership)?);
            wasmtime::Result::<_>::Ok(grant.and_then(|grant| view.ctx.write_call(grant, &key)))
        })?;
        Ok(answer(match call {
            Ok(call) => call.put(value).await,
            Err(error) => Err(error),
        }))
    }
}

impl election::HostLeadership for WardlockView<'_> {
    fn name(&mut self, leadership: Resource<LeadershipHandle>) -> wasmtime::Result<String> {
        Ok(self.table.get(&leadership)?.name.to_string())
    }

    fn term(&mut self, leadership: Resource<LeadershipHandle>) -> wasmtime::Result<u64> {
        Ok(self.table.get(&leadership)?.term())
    }

    fn value(&mut self, leadership: Resource<LeadershipHandle>) -> wasmtime::Result<String> {
        Ok(self.table.get(&leadership)?.value.clone())
    }

    fn status(
        &mut self,
        leadership: Resource<LeadershipHandle>,
    ) -> wasmtime::Result<types::Status> {
        let handle = self.table.get(&leadership)?;
        Ok(self.ctx.leadership_status(handle).into())
    }

    fn resign(
        &mut self,
        leadership: Resource<LeadershipHandle>,
    ) -> wasmtime::Result<Result<(), types::Error>> {
        let handle = self.table.get_mut(&leadership)?;
        Ok(answer(self.ctx.resign(handle)))
    }

    fn drop(&mut self, leadership: Resource<LeadershipHandle>) -> wasmtime::Result<()> {
        let handle = self.table.delete(leadership)?;
        self.ctx.drop_leadership(handle);
        Ok(())
    }
}

/// `observe`'s stream: each item is the next leader of the feed; the
/// stream ends with the feed. Dropped with the guest's end of the stream,
/// the feed gives its slot under the handle cap back.
struct LeaderStream(LeaderFeed);

impl<D> StreamProducer<D> for LeaderStream {
    type Item = Option<election::LeaderInfo>;
    type Buffer = Option<Self::Item>;

    fn poll_produce<'a>(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        store: StoreContextMut<'a, D>,
        mut destination: Destination<'a, Self::Item, Self::Buffer>,
        finish: bool,
    ) -> Poll<wasmtime::Result<StreamResult>> {
        // A zero-length read asks whether an item is ready; a leader cannot
        // be looked at without being taken, so say yes and keep it for the
        // read that follows.
        if destination.remaining(store) == Some(0) {
            return Poll::Ready(Ok(StreamResult::Completed));
        }
        match self.get_mut().0.poll_next(cx) {
            Poll::Ready(Some(leader)) => {
                destination.set_buffer(Some(leader.map(leader_info)));
                Poll::Ready(Ok(StreamResult::Completed))
            }
            Poll::Ready(None) => Poll::Ready(Ok(StreamResult::Dropped)),
            // The read or watch under way stays in the feed for the next read.
            Poll::Pending if finish => Poll::Ready(Ok(StreamResult::Cancelled)),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// A backend's leader as the WIT's `leader-info`.
fn leader_info(leader: Leader) -> election::LeaderInfo {
    election::LeaderInfo {
        owner: leader.owner,
        value: leader.value,
        term: leader.term,
    }
}
