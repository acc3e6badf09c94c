//! The fenced code blocks of the README and the book, with where they stand
//! and how they are marked.
//!
//! A block's language is the first word of its info string (` ```sh `,
//! ` ```rust,no_run `). The line just before the fence (blank lines skipped)
//! may be one of the runner's marks, an HTML comment, invisible in the
//! rendered book:
//!
//! - `<!-- excerpt: WHY -->`: a shell block not meant to run as printed;
//! - `<!-- run in an empty directory -->`: the block runs in a fresh empty
//!   directory instead of the repository's root.

use std::path::{Path, PathBuf};

/// Info-string languages that are shell blocks: each one runs or is marked an
/// excerpt.
pub(super) const SHELL: &[&str] = &["sh", "bash", "shell", "console"];

/// One fenced block.
#[derive(Debug, Clone)]
pub(super) struct Block {
    /// The file, relative to the repository (`docs/etcd.md`).
    pub file: String,
    /// The 1-based line of the opening fence.
    pub line: usize,
    /// The info string's first word (empty when there is none).
    pub lang: String,
    /// The runner's mark before the fence, if any.
    pub mark: Option<Mark>,
    /// The lines between the fences, the fence's indentation removed.
    pub body: Vec<String>,
}

/// A runner's mark before a block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Mark {
    /// Not meant to run as printed, and why.
    Excerpt(String),
    /// Runs in a fresh empty directory.
    EmptyDirectory,
}

impl Block {
    /// The document line of body line `index` (0-based).
    pub(super) fn line_of(&self, index: usize) -> usize {
        self.line + 1 + index
    }

    /// `file:line` of the fence, as failures name it.
    pub(super) fn place(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }

    /// Whether this is a shell block.
    pub(super) fn is_shell(&self) -> bool {
        SHELL.contains(&self.lang.as_str())
    }

    /// The body as one text, lines joined with newlines.
    pub(super) fn text(&self) -> String {
        self.body.join("\n") + "\n"
    }
}

/// The Markdown files the runner reads: `README.md` and `docs/*.md`, sorted,
/// relative to `root`.
///
/// # Panics
/// When `docs/` cannot be listed.
pub(super) fn book_files(root: &Path) -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(root.join("docs"))
        .expect("list docs/")
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .filter_map(|path| {
            let name = path.file_name()?.to_str()?.to_owned();
            Some(format!("docs/{name}"))
        })
        .collect();
    files.sort();
    files.insert(0, "README.md".to_owned());
    files
}

/// Every fenced block of every book file under `root`.
///
/// # Panics
/// When a file cannot be read.
pub(super) fn book_blocks(root: &Path) -> Vec<Block> {
    book_files(root)
        .iter()
        .flat_map(|file| {
            let path: PathBuf = root.join(file);
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
            blocks(file, &text)
        })
        .collect()
}

/// The fenced blocks of one Markdown text (`file` names it in each block).
pub(super) fn blocks(file: &str, text: &str) -> Vec<Block> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    let mut index = 0;
    while index < lines.len() {
        let line = lines[index];
        let indent = line.len() - line.trim_start().len();
        let Some(info) = line.trim_start().strip_prefix("```") else {
            index += 1;
            continue;
        };
        let lang = info.split([',', ' ', '\t']).next().unwrap_or("").to_owned();
        let mut body = Vec::new();
        let mut end = index + 1;
        while end < lines.len() && lines[end].trim() != "```" {
            let inner = lines[end];
            let cut = inner.len() - inner.trim_start().len();
            body.push(inner[cut.min(indent)..].to_owned());
            end += 1;
        }
        found.push(Block {
            file: file.to_owned(),
            line: index + 1,
            lang,
            mark: mark_before(&lines[..index]),
            body,
        });
        index = end + 1;
    }
    found
}

/// The runner's mark on the last non-blank line of `before`, if it is one.
fn mark_before(before: &[&str]) -> Option<Mark> {
    let last = before.iter().rev().find(|l| !l.trim().is_empty())?.trim();
    let comment = last.strip_prefix("<!--")?.strip_suffix("-->")?.trim();
    if let Some(why) = comment.strip_prefix("excerpt:") {
        return Some(Mark::Excerpt(why.trim().to_owned()));
    }
    (comment == "run in an empty directory").then_some(Mark::EmptyDirectory)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "# T\n\n<!-- excerpt: needs a cluster -->\n```sh\netcd &\n```\n\n```toml,x\na = 1\n```\n\n- item\n\n  ```\n  indented\n  ```\n<!-- run in an empty directory -->\n\n```bash\nls\n```\n";

    #[test]
    fn blocks_carry_language_line_mark_and_body() {
        let found = blocks("doc.md", TEXT);
        let summary: Vec<_> = found
            .iter()
            .map(|b| (b.line, b.lang.as_str(), b.mark.clone(), b.body.clone()))
            .collect();
        assert_eq!(
            summary,
            vec![
                (
                    4,
                    "sh",
                    Some(Mark::Excerpt("needs a cluster".to_owned())),
                    vec!["etcd &".to_owned()]
                ),
                (8, "toml", None, vec!["a = 1".to_owned()]),
                (14, "", None, vec!["indented".to_owned()]),
                (
                    19,
                    "bash",
                    Some(Mark::EmptyDirectory),
                    vec!["ls".to_owned()]
                ),
            ]
        );
        assert_eq!(found[1].line_of(0), 9);
        assert_eq!(found[0].place(), "doc.md:4");
    }

    #[test]
    fn an_ordinary_comment_is_no_mark() {
        let found = blocks("doc.md", "<!-- note -->\n```sh\nls\n```\n");
        assert_eq!(found[0].mark, None);
    }
}
