//! The host-side state behind a guest's `lock` resource.

use crate::backend::Mode;
use crate::name::LockName;

/// One `lock` handle of a guest instance. Several handles may share one backend
/// grant (re-entrancy); the grant goes when the last of them is released.
#[derive(Debug)]
pub struct LockHandle {
    pub(crate) name: LockName,
    pub(crate) mode: Mode,
    pub(crate) token: u64,
    /// Which grant record of the instance this handle counts towards.
    pub(crate) record: u64,
    pub(crate) released: bool,
}

impl LockHandle {
    /// The lock's name.
    pub fn name(&self) -> &LockName {
        &self.name
    }

    /// The mode the handle was requested with.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The fencing token of the grant behind this handle.
    pub fn fencing_token(&self) -> u64 {
        self.token
    }

    /// True once the handle was released.
    pub fn is_released(&self) -> bool {
        self.released
    }
}
