//! The book's commands run as written (issue 42): every shell block of
//! README.md and docs/*.md runs as printed or is marked an excerpt, every TOML
//! block loads in `wardlock serve`, every WIT block quotes the WIT; and the
//! runner fails, naming file and line, on a copy of a block broken on purpose.
//! The conventions are in docs/architecture.md, "The book's commands".

mod blocks;
mod config;
mod run;
mod shell;
mod wit;

use std::path::{Path, PathBuf};
use std::time::Instant;

use blocks::{Block, Mark};

/// The repository.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .expect("the repository")
}

/// Every block of the book with language `lang` (shell: any shell language).
fn book(select: impl Fn(&Block) -> bool) -> Vec<Block> {
    blocks::book_blocks(&root())
        .into_iter()
        .filter(|b| select(b))
        .collect()
}

/// The block of `file` whose body has a line containing `needle`.
fn block_containing(file: &str, needle: &str) -> Block {
    book(|b| b.file == file && b.body.iter().any(|l| l.contains(needle)))
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("no block of {file} contains {needle:?}"))
}

/// `block` with `from` replaced by `to` on the first line that has it, and
/// the document line where the command of that line starts (a command goes on
/// over lines ending in `\\`).
fn broken(block: &Block, from: &str, to: &str) -> (Block, usize) {
    let index = block
        .body
        .iter()
        .position(|l| l.contains(from))
        .unwrap_or_else(|| panic!("{} has no {from:?}", block.place()));
    let mut copy = block.clone();
    copy.body[index] = copy.body[index].replace(from, to);
    let mut start = index;
    while start > 0 && block.body[start - 1].trim_end().ends_with('\\') {
        start -= 1;
    }
    (copy, block.line_of(start))
}

/// Runs `check` on each block, reporting every failure at once.
fn check_each(blocks: &[Block], check: impl Fn(&Block) -> Result<(), String>) {
    assert!(!blocks.is_empty(), "no blocks to check");
    let mut failures = Vec::new();
    for block in blocks {
        let started = Instant::now();
        let outcome = check(block);
        eprintln!(
            "book: {} ({}) {} in {:.1?}",
            block.place(),
            block.lang,
            if outcome.is_ok() { "ok" } else { "FAILED" },
            started.elapsed()
        );
        failures.extend(outcome.err());
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn every_block_names_its_language() {
    let unnamed: Vec<String> = book(|b| b.lang.is_empty())
        .iter()
        .map(|b| {
            format!(
                "{}: ``` without a language (text, sh, rust, toml, …)",
                b.place()
            )
        })
        .collect();
    assert!(unnamed.is_empty(), "{}", unnamed.join("\n"));
}

#[test]
fn every_excerpt_says_why_and_only_shell_blocks_are_marked() {
    let wrong: Vec<String> = book(|b| b.mark.is_some())
        .iter()
        .filter(|b| !b.is_shell() || b.mark == Some(Mark::Excerpt(String::new())))
        .map(|b| {
            format!(
                "{}: a mark on a {} block, or an excerpt without why",
                b.place(),
                b.lang
            )
        })
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_chapter_with_rust_is_compiled_as_doc_tests() {
    let lib = std::fs::read_to_string(root().join("tests/book/src/lib.rs")).expect("read lib.rs");
    let mut missing: Vec<String> = book(|b| b.lang == "rust" && b.file.starts_with("docs/"))
        .iter()
        .filter(|b| !lib.contains(&format!("include_str!(\"../../../{}\")", b.file)))
        .map(|b| {
            format!(
                "{}: its chapter is not a module of tests/book/src/lib.rs",
                b.place()
            )
        })
        .collect();
    missing.dedup();
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn every_shell_block_runs_as_printed_or_is_an_excerpt() {
    let runnable = book(|b| b.is_shell() && !matches!(b.mark, Some(Mark::Excerpt(_))));
    check_each(&runnable, run::run_shell);
}

#[test]
fn every_config_example_loads_in_wardlock_serve() {
    check_each(&book(|b| b.lang == "toml"), config::check_config);
}

#[test]
fn every_wit_block_quotes_the_wit() {
    let quotes = book(|b| b.lang == "wit");
    let failures: Vec<String> = quotes
        .iter()
        .filter_map(|b| wit::check_wit(b, &root()).err())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The check itself, on a quote of the real WIT and on one it lacks.
    let quote = |line: &str| Block {
        file: "probe.md".to_owned(),
        line: 1,
        lang: "wit".to_owned(),
        mark: None,
        body: vec![line.to_owned()],
    };
    wit::check_wit(&quote("package wardlock:lock@0.1.0;"), &root()).expect("a real line");
    let error = wit::check_wit(&quote("acquire: func(nope: u8);"), &root()).expect_err("made up");
    assert!(error.starts_with("probe.md:2:"), "{error}");
}

/// Breaks the block of `file` that has `needle` (`from` replaced by `to`)
/// and panics unless `check` fails on the copy, at the broken command's line,
/// naming what was broken.
fn assert_broken_copy_fails(
    file: &str,
    needle: &str,
    (from, to): (&str, &str),
    check: impl Fn(&Block) -> Result<(), String>,
) {
    let (copy, line) = broken(&block_containing(file, needle), from, to);
    let error = check(&copy).expect_err("a block broken on purpose passed");
    assert!(
        error.starts_with(&format!("{file}:{line}:")) && error.contains(to.trim()),
        "not reported at {file}:{line} with {to:?}: {error}"
    );
}

#[test]
fn the_runner_fails_on_a_wrong_path_naming_file_and_line() {
    // The path the chapter printed before issue 42.
    let path = ("target/guests/", "plugins/target/");
    assert_broken_copy_fails("docs/etcd.md", "counter.wasm", path, run::run_shell);
}

#[test]
fn the_runner_fails_on_a_wrong_flag_of_a_service() {
    let flag = ("--dir ", "--dirs ");
    assert_broken_copy_fails("README.md", "wardlock serve", flag, run::run_shell);
}

#[test]
fn the_config_check_fails_on_a_key_serve_does_not_know() {
    let key = ("max_hold", "max_holds");
    assert_broken_copy_fails("docs/serve.md", "max_hold", key, config::check_config);
}
