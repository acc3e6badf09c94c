//! The Store data of one guest instance.

use wasmtime::StoreLimits;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use crate::capability::{WardlockCtx, WardlockView};

/// Per-instance state: WASI, the shared resource table, the instance's locks and
/// its resource limits. Dropping it ends the instance's lock session.
pub struct InstanceState {
    pub(crate) wasi: WasiCtx,
    pub(crate) table: ResourceTable,
    pub(crate) locks: WardlockCtx,
    pub(crate) limits: StoreLimits,
}

impl InstanceState {
    /// The lock capability's view of this state (for `add_to_linker`).
    pub fn locks(&mut self) -> WardlockView<'_> {
        WardlockView::new(&mut self.locks, &mut self.table)
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
