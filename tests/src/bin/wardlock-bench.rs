//! `wardlock-bench`: see `tests/BENCHMARKS.md`, or run with `--help`.
//!
//! `cargo run --release --bin wardlock-bench -- [--zookeeper HOST:PORT]
//! [--workloads LIST] [--clients K] [--ops M] [--json]`

use std::process::ExitCode;

fn main() -> ExitCode {
    wardlock_tests::bench::main()
}
