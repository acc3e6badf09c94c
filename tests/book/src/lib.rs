//! The book's Rust blocks, compiled: each chapter of `docs/` that has Rust
//! blocks is the documentation of a module here, so `cargo test` compiles every
//! block as a doc-test (and runs those not marked `no_run`). Guest snippets
//! compile for the host against `wardlock-guest` (its WIT imports are stubs
//! there, hence `no_run`); a chapter's `# ` lines, hidden in the book as in
//! rustdoc, supply what a snippet leaves out. `tests/e2e/book.rs` checks that
//! every chapter with a Rust block is listed here. The published crates'
//! READMEs are modules too, so their snippets compile as well.

#[doc = include_str!("../../../docs/embedding.md")]
pub mod embedding {}

#[doc = include_str!("../../../docs/engines.md")]
pub mod engines {}

#[doc = include_str!("../../../docs/fencing.md")]
pub mod fencing {}

#[doc = include_str!("../../../docs/guest-sdks.md")]
pub mod guest_sdks {}

#[doc = include_str!("../../../docs/keyvalue.md")]
pub mod keyvalue {}

#[doc = include_str!("../../../docs/postgres.md")]
pub mod postgres {}

#[doc = include_str!("../../../docs/valkey.md")]
pub mod valkey {}

#[doc = include_str!("../../../docs/wit.md")]
pub mod wit {}

#[doc = include_str!("../../../docs/wasi-0.3.md")]
pub mod wasi_0_3 {}

// The READMEs of the published crates (what crates.io shows): their Rust
// blocks compile here as well.

#[doc = include_str!("../../../host/backend/README.md")]
pub mod readme_wardlock_backend {}

#[doc = include_str!("../../../host/zookeeper/README.md")]
pub mod readme_wardlock_zookeeper {}

#[doc = include_str!("../../../host/etcd/README.md")]
pub mod readme_wardlock_etcd {}

#[doc = include_str!("../../../host/postgres/README.md")]
pub mod readme_wardlock_postgres {}

#[doc = include_str!("../../../host/valkey/README.md")]
pub mod readme_wardlock_valkey {}

#[doc = include_str!("../../../host/README.md")]
pub mod readme_wardlock_host {}

#[doc = include_str!("../../../host/cli/README.md")]
pub mod readme_wardlock {}

#[doc = include_str!("../../../guest-sdk/README.md")]
pub mod readme_wardlock_guest {}
