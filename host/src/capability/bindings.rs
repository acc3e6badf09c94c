//! Rust bindings generated from `wit/` for the host side.
//!
//! Every import is async (a guest parked in `acquire` parks a fiber, not a thread)
//! and trappable (only host bugs and resource-table misuse trap; lock failures are
//! returned to the guest as the WIT `error` variant).

wasmtime::component::bindgen!({
    path: "../wit",
    world: "wardlock:lock/guest",
    imports: { default: async | trappable },
    with: {
        "wardlock:lock/locks.lock": crate::capability::handle::LockHandle,
    },
});
