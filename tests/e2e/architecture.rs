//! The front pages against the code: ARCHITECTURE.md's layer diagram in the
//! order of the crates' real dependencies (`cargo metadata`), and the
//! README's first screen short enough to read.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use wardlock_tests::crate_graph::{WorkspaceCrate, workspace_crates};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace above tests/")
        .to_path_buf()
}

/// The text of the fenced block that follows `heading` in `markdown`.
fn block_after<'a>(markdown: &'a str, heading: &str) -> &'a str {
    let after = &markdown[markdown.find(heading).expect("the heading")..];
    let start = after.find("```text\n").expect("a text block") + "```text\n".len();
    let block = &after[start..];
    &block[..block.find("```").expect("the block's end")]
}

/// The crate whose directory is the longest prefix of `path`, if any.
fn crate_of<'a>(path: &str, crates: &'a BTreeMap<String, WorkspaceCrate>) -> Option<&'a str> {
    crates
        .iter()
        .filter(|(_, c)| path == c.dir || path.starts_with(&format!("{}/", c.dir)))
        .max_by_key(|(_, c)| c.dir.len())
        .map(|(name, _)| name.as_str())
}

#[test]
fn the_layer_diagram_is_in_dependency_order() {
    let root = workspace_root();
    let crates = workspace_crates();
    let architecture =
        std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let diagram = block_after(&architecture, "## The layers");
    // The first row each crate's path stands on.
    let mut rows: BTreeMap<&str, usize> = BTreeMap::new();
    for (row, line) in diagram.lines().enumerate() {
        let paths = line
            .split(|c: char| c.is_whitespace() || "`(),;".contains(c))
            .filter(|word| word.contains('/'));
        for path in paths {
            if let Some(name) = crate_of(path.trim_end_matches('/'), &crates) {
                rows.entry(name).or_insert(row);
            }
        }
    }
    for needed in [
        "wardlock",
        "wardlock-host",
        "wardlock-backend",
        "wardlock-zookeeper",
    ] {
        assert!(rows.contains_key(needed), "{needed} is not in the diagram");
    }
    let mut checked = 0;
    for (name, row) in &rows {
        for dep in &crates[*name].deps {
            let Some(dep_row) = rows.get(dep.as_str()) else {
                continue;
            };
            assert!(
                row < dep_row,
                "ARCHITECTURE.md's layers: {name} (row {row}) depends on {dep} (row {dep_row}), so it must stand above it"
            );
            checked += 1;
        }
    }
    assert!(
        checked >= 6,
        "only {checked} dependencies were checked: {rows:?}"
    );
}

#[test]
fn the_readme_s_first_screen_is_short_and_its_table_rows_are_sentences() {
    let readme = std::fs::read_to_string(workspace_root().join("README.md")).expect("README.md");
    let first_screen = readme
        .lines()
        .take_while(|line| !line.starts_with("```"))
        .count();
    assert!(
        first_screen < 25,
        "the README has {first_screen} lines before its first command"
    );
    for (number, line) in readme.lines().enumerate() {
        if line.starts_with('|') {
            assert!(
                line.chars().count() <= 300,
                "README.md line {}: a table row of {} characters (at most 300; move detail to docs/)",
                number + 1,
                line.chars().count()
            );
        }
    }
}
