//! The backend [`LockTable::wrap`](super::LockTable::wrap) returns: each
//! session it opens is a [`TrackedSession`]; everything else is forwarded.

use std::sync::Arc;

use super::LockTable;
use super::session::TrackedSession;
use super::state::EngineId;
use crate::backend::{Health, LockBackend, LockSession};
use crate::name::LockName;

pub(super) struct TrackedBackend {
    table: LockTable,
    engine: EngineId,
    inner: Arc<dyn LockBackend>,
}

impl TrackedBackend {
    pub(super) fn new(table: LockTable, engine: EngineId, inner: Arc<dyn LockBackend>) -> Self {
        TrackedBackend {
            table,
            engine,
            inner,
        }
    }
}

impl LockBackend for TrackedBackend {
    fn open_session(&self, owner: &str) -> Box<dyn LockSession> {
        Box::new(TrackedSession::new(
            self.table.clone(),
            self.engine,
            owner,
            self.inner.open_session(owner),
        ))
    }

    fn location(&self, name: &LockName) -> Option<String> {
        self.inner.location(name)
    }

    fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    fn health(&self) -> Health {
        self.inner.health()
    }

    fn shutdown(&self) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        self.inner.shutdown()
    }
}
