//! An example lock engine, written the way an embedder writes one: outside
//! wardlock's source tree, against nothing but wardlock's public backend traits
//! ([`wardlock_host::LockBackend`] and [`wardlock_host::LockSession`]).
//!
//! The engine keeps one FIFO queue of tickets per lock name, in this process
//! only. It is deliberately small: it shows what a backend must guarantee
//! (strict FIFO, fencing tokens, cancel-safe waits, event-driven status
//! changes, cleanup when a session goes) without any I/O to hide it. It has no
//! semaphores, downgrades or revocation; those calls answer `Unsupported`.
//!
//! It registers itself with wardlock's engine registry ([`TicketEngine`]), so
//! the `wardlock-ticket` binary (`src/main.rs`: the `wardlock` command line
//! plus this engine) runs guests on it, and it passes wardlock's conformance
//! kit (`tests/conformance.rs`) — with no edit to wardlock itself.

pub mod backend;
mod registration;

pub use backend::{TicketBackend, TicketConfig};
pub use registration::{NAME, TicketEngine};
