//! The observer factory behind [`LockTable::wrap`](super::LockTable::wrap):
//! each session the wrapped backend opens is observed by a
//! [`TableObserver`].

use super::LockTable;
use super::session::TableObserver;
use super::state::EngineId;
use crate::backend::observe::BackendObserver;

pub(super) struct TableSessions {
    pub(super) table: LockTable,
    pub(super) engine: EngineId,
}

impl BackendObserver for TableSessions {
    type Session = TableObserver;

    fn session(&self, owner: &str) -> TableObserver {
        TableObserver::new(self.table.clone(), self.engine, owner)
    }
}
