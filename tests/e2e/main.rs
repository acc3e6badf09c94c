//! End-to-end tests: real guest components (built by `build.rs`) on the in-memory
//! backend, through the same runner the `wardlock` CLI uses.

mod cli;
mod conformance;
mod exclusion;
mod failover;
mod hostile_names;
mod interop;
mod languages;
mod lifetime;
mod partition;
mod semantics;
mod serve;
mod zookeeper;
