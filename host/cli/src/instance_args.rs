//! What `run` and `serve` share: the lock engine, what an instance may do,
//! how components are compiled.

use clap::Args;

use super::compilation_args::CompilationArgs;
use super::guest_args::GuestArgs;
use crate::registry::CommonFlags;

/// The flags of `run` and `serve` that shape every instance.
#[derive(Debug, Args)]
pub struct InstanceArgs {
    /// The lock engine (each engine adds its own flags beside these).
    #[command(flatten)]
    pub backend: CommonFlags,

    /// What each instance may do.
    #[command(flatten)]
    pub guest: GuestArgs,

    /// Compilation cache and precompiled input.
    #[command(flatten)]
    pub compilation: CompilationArgs,
}
