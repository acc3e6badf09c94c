//! End-to-end tests: real guest components (built by `build.rs`), run through
//! the same runner the `wardlock` CLI uses, on the in-memory backend and on real
//! ZooKeeper servers and ensembles that the tests start themselves (`zookeeper`,
//! `handoff` (host-local hand-off),
//! `partition`, `failover`, `hostile_names`, `interop` with Curator and kazoo,
//! every engine in `conformance`, memory and ZooKeeper in `languages`); `semaphore`: semaphores
//! natively and shared with Curator's `InterProcessSemaphoreV2`; `lock_v2`: the 0.2.0
//! interface (subscribe, acquire-async, acquire-many) through its own guest, and
//! `conform2` the same scenarios through guests in Rust, C, Python and JavaScript;
//! `permit_v2`: semaphore permits through that guest (with Curator on ZooKeeper);
//! `revocation`: revocation through guests on every backend and with Curator; plus
//! `embedding`: a platform's own world in synchronous and async hosts and the
//! embedding examples; plus the `wardlock` CLI
//! (`cli`: `wardlock run` in-process through its argument parser; `serve`: the
//! real binary over HTTP); `book`: the README's and the book's commands, config
//! files and WIT quotes, run and checked as printed; `out_of_tree`: an engine
//! with host-local hand-off (`host/examples/node-engine`) built outside the
//! workspace against the published API, passing the conformance kit.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test crate: a failed expectation is a test failure, with its message"
)]

mod architecture;
mod async_guests;
mod book;
mod cli;
mod compat;
mod compile;
mod conform2;
mod conformance;
mod deadlines;
mod deadlock;
mod declared;
mod election;
mod election_etcd;
mod election_valkey;
mod election_zookeeper;
mod embedding;
mod etcd;
mod etcd_guarded;
mod exclusion;
mod failover;
mod fault_matrix;
mod faults;
mod fence;
mod handoff;
mod handoff_write_gap;
mod hostile_names;
mod interop;
mod keyvalue;
mod keyvalue_draft2;
mod keyvalue_engines;
mod languages;
mod lifetime;
mod lock_cache;
mod lock_set;
mod lock_v2;
mod lock_v3;
mod locks_page;
mod out_of_tree;
mod outage;
mod packages;
mod partition;
mod permit_v2;
mod postgres;
mod postgres_faults;
mod postgres_security;
mod revocation;
mod security;
mod semantics;
mod semaphore;
mod serve;
mod singleton;
mod store_v3;
mod valkey;
mod valkey_security;
mod valkey_sentinel;
mod zookeeper;
mod zookeeper_guarded;
