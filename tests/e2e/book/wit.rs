//! A ` ```wit ` block quotes the WIT: its lines, in order, are lines of one
//! of the files it is quoted from (`wit/lock.wit`, `wit/v0.2/*.wit`),
//! indentation aside; a line `...` stands for lines left out.

use std::path::Path;

use super::blocks::Block;

/// The WIT files a block may quote, relative to the repository.
///
/// # Panics
/// When `wit/v0.2/` cannot be listed.
pub(super) fn wit_files(root: &Path) -> Vec<String> {
    let mut files = vec!["wit/lock.wit".to_owned()];
    let mut versioned: Vec<String> = std::fs::read_dir(root.join("wit/v0.2"))
        .expect("list wit/v0.2")
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| name.ends_with(".wit"))
        .map(|name| format!("wit/v0.2/{name}"))
        .collect();
    versioned.sort();
    files.extend(versioned);
    files
}

/// Checks `block` against the WIT files under `root`.
///
/// # Errors
/// `FILE:LINE: …` naming the first line no WIT file has in that order.
pub(super) fn check_wit(block: &Block, root: &Path) -> Result<(), String> {
    let sources: Vec<(String, String)> = wit_files(root)
        .into_iter()
        .map(|file| {
            let text = std::fs::read_to_string(root.join(&file)).unwrap_or_default();
            (file, text)
        })
        .collect();
    let mut best = (0, String::new());
    for (file, text) in &sources {
        match quoted_from(&block.body, text) {
            Ok(()) => return Ok(()),
            Err(index) if index >= best.0 => best = (index, file.clone()),
            Err(_) => {}
        }
    }
    let (index, file) = best;
    Err(format!(
        "{}:{}: `{}` is not in the WIT it quotes (closest: {file})",
        block.file,
        block.line_of(index),
        block.body.get(index).map_or("", |l| l.trim())
    ))
}

/// Whether every line of `quote` stands, in order, in `source`; else the
/// index of the first that does not.
fn quoted_from(quote: &[String], source: &str) -> Result<(), usize> {
    let mut lines = source.lines().map(str::trim);
    for (index, line) in quote.iter().enumerate() {
        let line = line.trim();
        if line.is_empty() || line == "..." {
            continue;
        }
        if !lines.any(|l| l == line) {
            return Err(index);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::quoted_from;

    #[test]
    fn a_quote_matches_in_order_only() {
        let source = "package a;\ninterface locks {\n  f: func();\n  g: func();\n}\n";
        let quote = |text: &str| text.lines().map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(
            quoted_from(&quote("interface locks {\n...\ng: func();"), source),
            Ok(())
        );
        assert_eq!(
            quoted_from(&quote("g: func();\nf: func();"), source),
            Err(1)
        );
        assert_eq!(quoted_from(&quote("h: func();"), source), Err(0));
    }
}
