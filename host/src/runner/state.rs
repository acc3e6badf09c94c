//! The Store data of one guest instance.

use wasmtime::StoreLimits;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use super::outbound::OutboundPolicy;
use crate::capability::{WardlockCtx, WardlockView};
use crate::keyvalue::{KeyValueCtx, KeyValueView};

/// Per-instance state: WASI, outbound HTTP, the shared resource table, the
/// instance's locks and its resource limits. Dropping it ends the instance's
/// lock session.
pub struct InstanceState {
    pub(crate) wasi: WasiCtx,
    pub(crate) http: WasiHttpCtx,
    pub(crate) outbound: OutboundPolicy,
    pub(crate) table: ResourceTable,
    pub(crate) locks: WardlockCtx,
    pub(crate) keyvalue: KeyValueCtx,
    pub(crate) limits: StoreLimits,
}

impl InstanceState {
    /// The lock capability's view of this state (for `add_to_linker`).
    pub fn locks(&mut self) -> WardlockView<'_> {
        WardlockView::new(&mut self.locks, &mut self.table)
    }

    /// The key-value capability's view of this state (for `add_to_linker`).
    pub fn keyvalue(&mut self) -> KeyValueView<'_> {
        KeyValueView::new(&mut self.keyvalue, &mut self.table)
    }
}

impl WasiView for InstanceState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for InstanceState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.outbound,
        }
    }
}
