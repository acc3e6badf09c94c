//! The `wardlock` binary: the command line with the built-in engines.

fn main() {
    wardlock::main(wardlock::Registry::builtin())
}
