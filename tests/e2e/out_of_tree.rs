//! An engine outside wardlock builds against the published API alone:
//! `host/examples/node-engine` (a remote-style engine with host-local
//! hand-off, not a workspace member) is copied out of the repository, its
//! manifest gets the repository's crates in place of the published versions
//! it names (`[patch.crates-io]`, as a user testing an unreleased wardlock
//! writes it), and `cargo test` runs on the copy: its unit tests, its
//! hand-off tests between hosts and the conformance kit's native checks
//! (the kit without its `guests` feature, so no wasmtime).
//!
//! The book's walkthrough of that engine (`docs/engines.md`, "A remote engine
//! with host-local hand-off") quotes its source: a second test checks that
//! every Rust block there still stands in one of its files.
//!
//! The copy lives outside the repository (so no configuration of the
//! repository's applies to its build: cargo runs in the copy), in a fixed
//! temporary directory per repository, rewritten only where a file differs;
//! it builds into a target directory of its own (a standalone crate resolves
//! its own dependency versions and features), shared by every checkout
//! (`wardlock_tests::shared_target_dir`: its registry crates are compiled
//! once on a machine). A second run therefore only rebuilds what changed.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every file under `dir` (but `target/` and `Cargo.lock`), relative to it.
fn files(dir: &Path) -> BTreeSet<PathBuf> {
    fn walk(base: &Path, dir: &Path, found: &mut BTreeSet<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("read the directory") {
            let path = entry.expect("directory entry").path();
            let relative = path.strip_prefix(base).expect("under base").to_owned();
            if relative == Path::new("target") || relative == Path::new("Cargo.lock") {
                continue;
            }
            if path.is_dir() {
                walk(base, &path, found);
            } else {
                found.insert(relative);
            }
        }
    }
    let mut found = BTreeSet::new();
    if dir.is_dir() {
        walk(dir, dir, &mut found);
    }
    found
}

/// Writes `contents` to `path` unless it holds them already (an unchanged
/// file keeps its time stamp, so cargo does not rebuild it).
fn write_if_changed(path: &Path, contents: &[u8]) {
    if std::fs::read(path).is_ok_and(|old| old == contents) {
        return;
    }
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("create the directory");
    std::fs::write(path, contents).expect("write the copy");
}

/// The sections of the workspace manifest whose header is one of `headers`,
/// as written there.
fn sections(manifest: &str, headers: &[&str]) -> String {
    let mut kept = String::new();
    let mut keep = false;
    for line in manifest.lines() {
        if line.starts_with('[') {
            keep = headers.contains(&line.trim());
        }
        if keep {
            kept.push_str(line);
            kept.push('\n');
        }
    }
    kept
}

/// The example's manifest as the test writes it: the example's own, then
/// the repository's crates for the versions it names, the workspace's debug
/// profile (line tables for our code, none for dependencies: the link stays
/// small), and a workspace of its own (no parent's).
fn manifest(example: &Path) -> String {
    let own = std::fs::read_to_string(example.join("Cargo.toml")).expect("the example's manifest");
    let workspace = std::fs::read_to_string(root().join("Cargo.toml")).expect("the workspace's");
    let crate_path = |dir: &str| {
        let path = root()
            .join(dir)
            .canonicalize()
            .expect("a crate of the repository");
        format!("{:?}", path.display().to_string())
    };
    format!(
        "{own}
# Written by wardlock's tests/e2e/out_of_tree.rs.
[patch.crates-io]
wardlock-backend = {{ path = {} }}
wardlock-conformance = {{ path = {} }}

{}
[workspace]
",
        crate_path("host/backend"),
        crate_path("tests/conformance"),
        sections(
            &workspace,
            &["[profile.dev]", "[profile.dev.package.\"*\"]"]
        ),
    )
}

/// Copies the example to `copy` (rewriting only what changed, deleting what
/// the example no longer has), with the test's manifest and the workspace's
/// lock file, so the copy resolves the versions the workspace was tested
/// with, all of them in the local registry cache.
fn copy_example(example: &Path, copy: &Path) {
    let wanted = files(example);
    for stale in files(copy).difference(&wanted) {
        std::fs::remove_file(copy.join(stale)).expect("remove a stale file");
    }
    for file in &wanted {
        let contents = if file == Path::new("Cargo.toml") {
            manifest(example).into_bytes()
        } else {
            std::fs::read(example.join(file)).expect("read the example")
        };
        write_if_changed(&copy.join(file), &contents);
    }
    let lock = std::fs::read(root().join("Cargo.lock")).expect("the workspace's lock file");
    write_if_changed(&copy.join("Cargo.lock"), &lock);
}

/// Where the example is copied: a directory of the system's temporary one,
/// named after this repository's path (so two checkouts do not share it).
fn copy_dir() -> PathBuf {
    use std::hash::{Hash, Hasher};
    let root = root().canonicalize().expect("the repository");
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    root.hash(&mut hasher);
    std::env::temp_dir()
        .join(format!("wardlock-out-of-tree-{:016x}", hasher.finish()))
        .join("node-engine")
}

/// What failed in a `cargo test` run, in a few lines (a CI log keeps its
/// head and tail, and the whole output is long): the failed tests and their
/// panic messages, or else cargo's errors (a build that failed).
fn failures(stdout: &str, stderr: &str) -> String {
    let lines: Vec<&str> = stdout.lines().chain(stderr.lines()).collect();
    let mut failed: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|line| line.starts_with("test ") && line.ends_with("FAILED"))
        .collect();
    // A panic's message is on the lines after its place (libtest prints the
    // captured output of each failed test under `failures:`).
    for (at, line) in lines.iter().enumerate() {
        if line.contains("panicked at") {
            failed.extend(lines[at..].iter().take(3).copied());
        }
    }
    if failed.is_empty() {
        failed = lines
            .into_iter()
            .filter(|line| line.starts_with("error"))
            .collect();
    }
    failed.join("\n")
}

/// `(passed, failed)` summed over every `test result:` line of `cargo test`.
fn totals(output: &str) -> (usize, usize) {
    let count = |line: &str, what: &str| -> usize {
        line.split(';')
            .find_map(|part| part.trim().strip_suffix(what))
            .and_then(|n| n.trim().rsplit(' ').next()?.parse().ok())
            .unwrap_or_else(|| panic!("no \"{what}\" in {line:?}"))
    };
    output
        .lines()
        .filter(|line| line.starts_with("test result:"))
        .fold((0, 0), |(passed, failed), line| {
            (
                passed + count(line, "passed"),
                failed + count(line, "failed"),
            )
        })
}

/// The kit's checks that run without its `guests` feature, by name.
fn native_checks() -> Vec<&'static str> {
    macro_rules! names {
        ($($check:ident),* $(,)?) => {
            [$(stringify!($check)),*]
        };
    }
    let all = wardlock_conformance::conformance_checks!(names);
    all.into_iter()
        .filter(|c| !c.starts_with("guest_"))
        .collect()
}

#[test]
fn node_engine_builds_outside_the_workspace_and_passes_the_kit() {
    let example = root().join("host/examples/node-engine");
    let target = wardlock_tests::shared_target_dir("out-of-tree");
    let copy = copy_dir();
    copy_example(&example, &copy);

    let started = Instant::now();
    let output = Command::new(env!("CARGO"))
        .args(["test", "--offline", "--color", "never", "--manifest-path"])
        .arg(copy.join("Cargo.toml"))
        .current_dir(&copy)
        .env("CARGO_TARGET_DIR", &target)
        .env("CARGO_TERM_COLOR", "never")
        .output()
        .expect("run cargo test on the copy");
    let took = started.elapsed();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprintln!("out of tree: cargo test on the node engine took {took:.1?}");
    assert!(
        output.status.success(),
        "cargo test on {} failed ({}): {}\n\nthe whole output:\n{stdout}\n{stderr}",
        copy.display(),
        output.status,
        failures(&stdout, &stderr),
    );

    let (passed, failed) = totals(&stdout);
    assert!(
        passed > 0 && failed == 0,
        "{passed} passed, {failed} failed:\n{stdout}"
    );
    let checks = native_checks();
    assert!(!checks.is_empty());
    let missing: Vec<&str> = checks
        .iter()
        .copied()
        .filter(|check| !stdout.contains(&format!("test {check} ... ok")))
        .collect();
    assert!(
        missing.is_empty(),
        "the kit's checks {missing:?} did not run and pass:\n{stdout}"
    );

    // Without its `guests` feature the kit brings no wasmtime along.
    let tree = Command::new(env!("CARGO"))
        .args([
            "tree",
            "--offline",
            "--prefix",
            "none",
            "--edges",
            "normal,build,dev",
        ])
        .arg("--manifest-path")
        .arg(copy.join("Cargo.toml"))
        .current_dir(&copy)
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .expect("run cargo tree on the copy");
    let tree = String::from_utf8_lossy(&tree.stdout);
    assert!(tree.contains("wardlock-conformance"), "{tree}");
    assert!(
        !tree
            .lines()
            .any(|l| l.starts_with("wasmtime") || l.starts_with("wardlock-host")),
        "the kit without `guests` depends on wasmtime:\n{tree}"
    );
}

#[test]
fn failures_name_the_failed_tests_or_else_the_build_errors() {
    let stdout = "running 2 tests\ntest fair ... FAILED\ntest other ... ok\n\nfailures:\n\n\
        ---- fair stdout ----\n\nthread 'fair' panicked at tests/hosts.rs:118:5:\n\
        host B waited 21s\nnote: run with `RUST_BACKTRACE=1`\n\nmore\n";
    assert_eq!(
        failures(stdout, ""),
        "test fair ... FAILED\nthread 'fair' panicked at tests/hosts.rs:118:5:\n\
         host B waited 21s\nnote: run with `RUST_BACKTRACE=1`"
    );
    let stderr = "   Compiling x v0.1.0\nerror[E0425]: cannot find value `y`\nerror: could not compile `x`\n";
    assert_eq!(
        failures("", stderr),
        "error[E0425]: cannot find value `y`\nerror: could not compile `x`"
    );
}

#[test]
fn totals_add_every_test_binary() {
    let output = "running 2 tests\n\
        test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n\
        test result: FAILED. 15 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.11s\n";
    assert_eq!(totals(output), (17, 1));
}

/// The non-blank lines of `text`, trimmed.
fn code_lines<'a>(text: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    text.into_iter()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect()
}

/// The Rust blocks of the walkthrough section of `chapter`: each block's
/// line in the chapter and the lines a reader sees (not rustdoc's hidden `# `
/// lines).
fn walkthrough_blocks(chapter: &str) -> Vec<(usize, Vec<&str>)> {
    let mut blocks = Vec::new();
    let mut in_section = false;
    let mut block: Option<(usize, Vec<&str>)> = None;
    for (number, line) in chapter.lines().enumerate() {
        if line.starts_with("## ") {
            in_section = line == "## A remote engine with host-local hand-off";
        }
        match &mut block {
            Some(_) if line.starts_with("```") => blocks.extend(block.take()),
            Some((_, lines)) => {
                let hidden = line.trim_start() == "#" || line.trim_start().starts_with("# ");
                if !hidden {
                    lines.push(line);
                }
            }
            None if in_section && line.starts_with("```rust") => {
                block = Some((number + 1, Vec::new()))
            }
            None => {}
        }
    }
    blocks
        .into_iter()
        .map(|(line, lines)| (line, code_lines(lines)))
        .collect()
}

#[test]
fn the_walkthrough_quotes_the_node_engine() {
    let chapter = std::fs::read_to_string(root().join("docs/engines.md")).expect("the chapter");
    let blocks = walkthrough_blocks(&chapter);
    assert!(
        blocks.len() >= 4,
        "the walkthrough has {} Rust blocks",
        blocks.len()
    );
    let example = root().join("host/examples/node-engine");
    let sources: Vec<(PathBuf, String)> = files(&example)
        .into_iter()
        .filter(|file| file.extension().is_some_and(|e| e == "rs"))
        .map(|file| {
            let text = std::fs::read_to_string(example.join(&file)).expect("read the example");
            (file, text)
        })
        .collect();
    for (line, quoted) in blocks {
        let found = sources.iter().any(|(_, text)| {
            let source = code_lines(text.lines());
            source.windows(quoted.len()).any(|window| window == quoted)
        });
        assert!(
            found,
            "docs/engines.md:{line}: this block is no longer a quote of host/examples/node-engine \
             (its lines, blank ones aside, must stand together in one of its files): {:?}…",
            quoted.first()
        );
    }
}
