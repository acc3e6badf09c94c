//! The host-side state behind a guest's `permit` resource (WIT 0.2.0): one
//! permit of a counting semaphore.

use super::handle::Watch;
use crate::backend::{Grant, GrantId};
use crate::name::LockName;

/// One `permit` handle of a guest instance. Permits are not re-entrant: each
/// handle is a backend grant of its own, released with the handle.
#[derive(Debug)]
pub struct PermitHandle {
    pub(crate) name: LockName,
    pub(crate) permits: u32,
    pub(crate) grant: Grant,
    pub(crate) released: bool,
    /// What `permit.subscribe`'s pollable waits on.
    pub(crate) watch: Watch,
}

impl PermitHandle {
    pub(crate) fn new(name: LockName, permits: u32, grant: Grant) -> Self {
        PermitHandle {
            name,
            permits,
            grant,
            released: false,
            watch: Watch::Idle,
        }
    }

    /// The semaphore's name.
    pub fn name(&self) -> &LockName {
        &self.name
    }

    /// The semaphore's permit count, as requested.
    pub fn permits(&self) -> u32 {
        self.permits
    }

    /// The permit's fencing token.
    pub fn fencing_token(&self) -> u64 {
        self.grant.token
    }

    /// The backend grant behind the permit.
    pub(crate) fn grant_id(&self) -> GrantId {
        self.grant.id
    }

    /// True once the permit was released through this handle.
    pub fn is_released(&self) -> bool {
        self.released
    }
}

super::handle::not_held_pollable!(PermitHandle);
