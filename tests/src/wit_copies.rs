//! The WIT is written once, in `wit/`, and copied where a part must build
//! on its own: the Rust SDK (`guest-sdk/wit/`, so a copy of `guest-sdk/`
//! alone builds), the host crate (`host/wit/`: `cargo package` takes only
//! what is under a crate's folder), the embedding examples' world
//! (`host/cli/examples/wit/deps/`) and the other languages' bindings
//! (`plugins/wit/deps/`). The licence is copied into every published crate
//! the same way ([`LICENSE_COPIES`]).
//! Copies, not symlinks (which archives, packages and some systems drop);
//! [`COPIES`] lists them and a test keeps them equal to their sources.

/// Every copy of a WIT file, as `(copy, source)`, relative to the repository.
pub const COPIES: &[(&str, &str)] = &[
    ("guest-sdk/wit/lock.wit", "wit/lock.wit"),
    ("guest-sdk/wit/v0.2/lock.wit", "wit/v0.2/lock.wit"),
    ("guest-sdk/wit/v0.2/deps/io.wit", "plugins/wit/deps/io.wit"),
    ("guest-sdk/wit/v0.3/lock.wit", "wit/v0.3/lock.wit"),
    (
        "guest-sdk/wit/v0.3/deps/cli-run.wit",
        "wit/v0.3/deps/cli-run.wit",
    ),
    ("wit/v0.2/deps/io.wit", "plugins/wit/deps/io.wit"),
    ("host/wit/lock.wit", "wit/lock.wit"),
    ("host/wit/v0.2/lock.wit", "wit/v0.2/lock.wit"),
    ("host/wit/v0.2/deps/io.wit", "plugins/wit/deps/io.wit"),
    ("host/wit/v0.3/lock.wit", "wit/v0.3/lock.wit"),
    (
        "host/wit/v0.3/deps/cli-run.wit",
        "wit/v0.3/deps/cli-run.wit",
    ),
    (
        "host/cli/examples/wit/deps/wardlock-lock.wit",
        "wit/lock.wit",
    ),
    ("plugins/wit/deps/wardlock-lock.wit", "wit/lock.wit"),
    (
        "host/wit/keyvalue-0.2.0-draft/atomic.wit",
        "wit/keyvalue-0.2.0-draft/atomic.wit",
    ),
    (
        "host/wit/keyvalue-0.2.0-draft/batch.wit",
        "wit/keyvalue-0.2.0-draft/batch.wit",
    ),
    (
        "host/wit/keyvalue-0.2.0-draft/store.wit",
        "wit/keyvalue-0.2.0-draft/store.wit",
    ),
    (
        "host/wit/keyvalue-0.2.0-draft/watch.wit",
        "wit/keyvalue-0.2.0-draft/watch.wit",
    ),
    (
        "host/wit/keyvalue-0.2.0-draft/world.wit",
        "wit/keyvalue-0.2.0-draft/world.wit",
    ),
    (
        "host/wit/keyvalue-0.2.0-draft2/atomic.wit",
        "wit/keyvalue-0.2.0-draft2/atomic.wit",
    ),
    (
        "host/wit/keyvalue-0.2.0-draft2/batch.wit",
        "wit/keyvalue-0.2.0-draft2/batch.wit",
    ),
    (
        "host/wit/keyvalue-0.2.0-draft2/store.wit",
        "wit/keyvalue-0.2.0-draft2/store.wit",
    ),
    (
        "host/wit/keyvalue-0.2.0-draft2/watch.wit",
        "wit/keyvalue-0.2.0-draft2/watch.wit",
    ),
    (
        "host/wit/keyvalue-0.2.0-draft2/world.wit",
        "wit/keyvalue-0.2.0-draft2/world.wit",
    ),
    (
        "plugins/wit/deps/wardlock-lock-0.2.wit",
        "wit/v0.2/lock.wit",
    ),
];

/// The licence text of every published crate, as `(copy, source)`: each crate
/// carries the repository's `LICENSE` in its own folder, where `cargo package`
/// finds it.
pub const LICENSE_COPIES: &[(&str, &str)] = &[
    ("host/backend/LICENSE", "LICENSE"),
    ("host/zookeeper/LICENSE", "LICENSE"),
    ("host/etcd/LICENSE", "LICENSE"),
    ("host/LICENSE", "LICENSE"),
    ("host/cli/LICENSE", "LICENSE"),
    ("guest-sdk/LICENSE", "LICENSE"),
    ("tests/conformance/LICENSE", "LICENSE"),
];

/// The folders of the published crates. `cargo package` takes only what is
/// under a crate's folder (but nested crates), so nothing there may read a file
/// outside it: a test looks at every WIT path (`bindgen!`, `generate!`) and
/// every `include_str!`/`include_bytes!` of their sources and examples. (The
/// check `cargo package` would make by building the packages costs minutes of
/// wasmtime; see `.ci/run`.)
pub const PUBLISHED_CRATES: &[&str] = &[
    "host/backend",
    "host/zookeeper",
    "host/etcd",
    "host",
    "host/cli",
    "guest-sdk",
    "tests/conformance",
];

#[cfg(test)]
mod tests {
    use std::path::Path;

    use std::path::{Component, PathBuf};

    use super::{COPIES, LICENSE_COPIES, PUBLISHED_CRATES};

    #[test]
    fn every_copy_of_the_wit_and_the_licence_matches_its_source_and_none_is_a_symlink() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        for (copy, source) in COPIES.iter().chain(LICENSE_COPIES) {
            let read = |path: &str| {
                std::fs::read_to_string(root.join(path))
                    .unwrap_or_else(|e| panic!("cannot read {path}: {e}"))
            };
            assert!(
                read(copy) == read(source),
                "{copy} differs from {source}: after changing it, run `cp {source} {copy}`"
            );
            let metadata = std::fs::symlink_metadata(root.join(copy)).expect("metadata");
            assert!(!metadata.file_type().is_symlink(), "{copy} is a symlink");
        }
    }

    /// The `.rs` files under `dir`, but those of nested crates.
    fn sources(dir: &Path, top: bool, found: &mut Vec<PathBuf>) {
        if !top && (dir.join("Cargo.toml").exists() || dir.ends_with("target")) {
            return;
        }
        for entry in std::fs::read_dir(dir).expect("list a crate's folder") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                sources(&path, false, found);
            } else if path.extension().is_some_and(|e| e == "rs") {
                found.push(path);
            }
        }
    }

    /// The string literals of `text` up to the end of its line.
    fn literals(text: &str) -> Vec<&str> {
        let line = text.lines().next().unwrap_or("");
        line.split('"').skip(1).step_by(2).collect()
    }

    /// `path` with `.` and `..` resolved without the file system.
    fn normal(path: &Path) -> PathBuf {
        let mut out = PathBuf::new();
        for part in path.components() {
            match part {
                Component::ParentDir => {
                    out.pop();
                }
                Component::CurDir => {}
                other => out.push(other),
            }
        }
        out
    }

    #[test]
    fn no_published_crate_reads_a_file_outside_its_folder() {
        let root = normal(&Path::new(env!("CARGO_MANIFEST_DIR")).join(".."));
        let mut outside = Vec::new();
        for krate in PUBLISHED_CRATES {
            let dir = root.join(krate);
            let mut files = Vec::new();
            sources(&dir, true, &mut files);
            for file in files {
                let text = std::fs::read_to_string(&file).expect("read a source");
                let base = file.parent().expect("a file's folder");
                let mut read = Vec::new();
                // WIT paths of `bindgen!`/`generate!` are relative to the crate.
                for macro_name in ["bindgen!(", "generate!("] {
                    for (at, _) in text.match_indices(macro_name) {
                        let body = &text[at..];
                        let body = &body[..body.find("});").unwrap_or(body.len())];
                        for (at, _) in body.match_indices("path:") {
                            read.extend(literals(&body[at..]).into_iter().map(|p| dir.join(p)));
                        }
                    }
                }
                for macro_name in ["include_str!(", "include_bytes!("] {
                    for (at, _) in text.match_indices(macro_name) {
                        read.extend(literals(&text[at..]).into_iter().map(|p| base.join(p)));
                    }
                }
                for path in read.iter().map(|p| normal(p)) {
                    if !path.starts_with(&dir) {
                        outside.push(format!("{} reads {}", file.display(), path.display()));
                    }
                }
            }
        }
        assert!(
            outside.is_empty(),
            "outside the crate's package:\n{}",
            outside.join("\n")
        );
    }
}
