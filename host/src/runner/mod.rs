//! Runs WASI command components whose lock sessions live and die with each instance.
//!
//! A [`Runtime`] holds the engine (epoch interruption on, ticked by a background
//! thread; optionally a compilation cache and the pooling allocator). A [`Runner`]
//! pre-instantiates one component against WASI and the lock capability and runs
//! instances of it; each instance gets its own Store, whose data owns the
//! instance's lock session. Whatever way the instance ends — return, exit, trap,
//! deadline, or the caller dropping the [`Runner::run`] future — the Store is
//! dropped and every lock it held or waited for is released at once.

mod command;
mod command_v3;
mod compile_lock;
mod config;
mod declared;
mod epoch;
mod error;
mod function_cache;
mod instance;
mod lease;
mod outbound;
mod outcome;
mod proxy;
mod request_hold;
mod runtime;
mod state;

pub use command::Runner;
pub use config::{DEFAULT_MEMORY_LIMIT, FileIo, Preopen, RunnerConfig, Stdio};
pub use declared::{DeclaredLock, HELD_ENV, HELD_HEADER, HoldScope, TakeError, resolve};
pub use epoch::{EpochTicker, TICK};
pub use error::{LoadFailure, RunnerError};
pub use function_cache::FunctionCacheCounts;
pub use lease::Lease;
pub use outbound::{AllowedHost, OutboundPolicy, parse_fence_header};
pub use outcome::{InstanceReport, Outcome};
pub use proxy::{OnEnd, ProxyRunner, RequestOutcome, ResponseBody, respond};
pub use runtime::{CompileCache, Runtime, RuntimeOptions, request_pool};
pub use state::InstanceState;
