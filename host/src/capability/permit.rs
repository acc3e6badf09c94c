//! The host-side state behind a guest's `permit` resource (WIT 0.2.0).
//! WAVE-STUB: helper A replaces this file.

/// One `permit` handle of a guest instance.
#[derive(Debug)]
pub struct PermitHandle;
