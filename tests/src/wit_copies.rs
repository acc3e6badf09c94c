//! The WIT is written once, in `wit/`, and copied where a part must build
//! on its own: the Rust SDK (`guest-sdk/wit/`, so a copy of `guest-sdk/`
//! alone builds) and the other languages' bindings (`plugins/wit/deps/`).
//! Copies, not symlinks (which archives, packages and some systems drop);
//! [`COPIES`] lists them and a test keeps them equal to their sources.

/// Every copy of a WIT file, as `(copy, source)`, relative to the repository.
pub const COPIES: &[(&str, &str)] = &[
    ("guest-sdk/wit/lock.wit", "wit/lock.wit"),
    ("guest-sdk/wit/v0.2/lock.wit", "wit/v0.2/lock.wit"),
    ("guest-sdk/wit/v0.2/deps/io.wit", "plugins/wit/deps/io.wit"),
    ("wit/v0.2/deps/io.wit", "plugins/wit/deps/io.wit"),
    ("plugins/wit/deps/wardlock-lock.wit", "wit/lock.wit"),
    (
        "plugins/wit/deps/wardlock-lock-0.2.wit",
        "wit/v0.2/lock.wit",
    ),
];

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::COPIES;

    #[test]
    fn every_copy_of_the_wit_matches_its_source_and_none_is_a_symlink() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        for (copy, source) in COPIES {
            let read = |path: &str| {
                std::fs::read_to_string(root.join(path))
                    .unwrap_or_else(|e| panic!("cannot read {path}: {e}"))
            };
            assert!(
                read(copy) == read(source),
                "{copy} differs from {source}: after changing the WIT, run `cp {source} {copy}`"
            );
            let metadata = std::fs::symlink_metadata(root.join(copy)).expect("metadata");
            assert!(!metadata.file_type().is_symlink(), "{copy} is a symlink");
        }
    }
}
