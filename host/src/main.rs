//! The `wardlock` binary: the command line over the `wardlock_host` library,
//! with the engines compiled in.

fn main() {
    wardlock_host::cli::main(wardlock_host::cli::Registry::builtin())
}
