//! Rust bindings generated from `wit/` for the host side: this crate's copy
//! of the repository's `wit/` (a package takes only what is under its folder;
//! `tests/src/wit_copies.rs` keeps the copy equal to its source).
//!
//! Every import is async (a guest parked in `acquire` parks a fiber, not a thread)
//! and trappable (only host bugs and resource-table misuse trap; lock failures are
//! returned to the guest as the WIT `error` variant).

wasmtime::component::bindgen!({
    path: "wit",
    world: "wardlock:lock/guest",
    imports: { default: async | trappable },
    with: {
        "wardlock:lock/locks.lock": crate::capability::handle::LockHandle,
    },
});
