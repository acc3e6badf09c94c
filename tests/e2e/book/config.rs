//! The book's TOML blocks are `wardlock serve --config` files: each is loaded
//! by the real `wardlock serve` (its loader, `host/cli/src/serve/config_file.rs`),
//! which must accept it.
//!
//! What the runner adds, so a file that names things can load:
//! - the ports of [`super::shell::PORTS`] are replaced as in shell blocks (a
//!   file naming 2181 or 2379 gets the harness's ZooKeeper or etcd);
//! - a block without `[[plugins]]` is a part of a file: a plugin serving
//!   `http-counter.wasm` is appended for each backend it configures (`name`,
//!   `route = "/LABEL"` and `backend` after the label), or one on `/`;
//! - every file the block names is made beside it: a `component` is the
//!   http-counter guest, `tls_ca`/`tls_cert`/`tls_key` a test CA's and
//!   client's PEM files (`tests/src/pki.rs`), any other `*_file` a one-line
//!   secret, each host directory of `dirs` an empty directory;
//! - `--listen` and `--admin` are free loopback ports.
//!
//! Accepted means serve got past its loader: its admin port opened, it still
//! runs after [`LOADER_GRACE`] (connecting to a lock service the example names),
//! or it stopped for a reason that does not name the file (that lock service
//! is not there). Every loader mistake names the file
//! (`FILE: KEY: why` or `FILE line N (…)`), and the runner reports it at the
//! block's line.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use wardlock_tests::Guest;
use wardlock_tests::pki::TestPki;
use wardlock_tests::ports::free_port;
use wardlock_tests::serve::wardlock_bin;

use super::blocks::Block;
use super::run::{Context, NotOpen};
use super::shell::{self, PORTS};

/// How long serve may take to refuse a file: its loader reads local files
/// only, in milliseconds; still running after this long, serve is past it,
/// connecting to a lock service the example names (`10.0.0.1:2379`).
const LOADER_GRACE: Duration = Duration::from_secs(10);

/// What the runner appends to a block that has no plugin: one plugin for each
/// backend the block configures (named and routed after its label), or one on
/// `/` when it configures none.
fn plugins_for(text: &str) -> String {
    let labels: Vec<&str> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("[backends.")?.strip_suffix(']'))
        .collect();
    if labels.is_empty() {
        return "\n[[plugins]]\nroute = \"/\"\ncomponent = \"http-counter.wasm\"\n".to_owned();
    }
    labels
        .iter()
        .map(|label| {
            format!("\n[[plugins]]\nname = \"{label}\"\nroute = \"/{label}\"\nbackend = \"{label}\"\ncomponent = \"http-counter.wasm\"\n")
        })
        .collect()
}

/// Loads `block` (a TOML block) with `wardlock serve --config`.
///
/// # Errors
/// `FILE:LINE: why` when serve's loader refuses it, or it never started.
pub(super) fn check_config(block: &Block) -> Result<(), String> {
    let servers = super::run::Servers::start(&block.body);
    let mut ports: BTreeMap<u16, u16> = servers.ports();
    for port in PORTS {
        ports.entry(*port).or_insert_with(free_port);
    }
    let mut text = shell::replace_ports(&block.text(), &ports);
    if !text.contains("[[plugins]]") {
        text.push_str(&plugins_for(&text));
    }
    let dir = tempfile::tempdir().map_err(|e| format!("temp dir: {e}"))?;
    let file = dir.path().join("wardlock.toml");
    std::fs::write(&file, &text).map_err(|e| format!("write {}: {e}", file.display()))?;
    make_named_files(&text, dir.path())?;
    let context = Context::new(dir.path(), &dir.path().join(".logs"))?;
    let admin = free_port();
    let command = format!(
        "{} serve --config {} --listen 127.0.0.1:{} --admin 127.0.0.1:{admin} --cache-dir {}",
        wardlock_bin().display(),
        file.display(),
        free_port(),
        wardlock_tests::cache_dir(),
    );
    let mut serve = super::run::Service::start(&context, &command, 0)?;
    match serve.await_port(admin, LOADER_GRACE) {
        Ok(()) | Err(NotOpen::StillRunning(_)) => Ok(()),
        Err(NotOpen::Exited(why)) if !why.contains(&file.display().to_string()) => Ok(()),
        Err(NotOpen::Exited(why)) => {
            let line = loader_line(&why).map_or(block.line, |n| block.line_of(n - 1));
            Err(format!(
                "{}:{line}: serve's loader refuses it: {why}",
                block.file
            ))
        }
    }
}

/// `N` of the loader's `FILE line N (…)`.
fn loader_line(message: &str) -> Option<usize> {
    let rest = message.split(" line ").nth(1)?;
    rest.split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
        .filter(|n| *n > 0)
}

/// Makes, under `dir`, every file and directory `text` names (see the module
/// documentation).
fn make_named_files(text: &str, dir: &Path) -> Result<(), String> {
    let pki = TestPki::new();
    let (cert, key) = pki.client();
    for line in text.lines() {
        let line = line.split(" #").next().unwrap_or("");
        let Some((key_name, value)) = line.split_once('=') else {
            continue;
        };
        let key_name = key_name.trim();
        let values: Vec<&str> = value.split('"').skip(1).step_by(2).collect();
        for value in values {
            let target = dir.join(value);
            let made = match key_name {
                "component" => copy(Path::new(Guest::HttpCounter.path()), &target),
                "tls_ca" => copy(&pki.ca(), &target),
                "tls_cert" => copy(&cert, &target),
                "tls_key" => copy(&key, &target),
                "dirs" => {
                    let host = value.split("::").next().unwrap_or(value);
                    std::fs::create_dir_all(dir.join(host))
                }
                name if name.ends_with("_file") => write(&target, "wardlock:book-secret\n"),
                _ => Ok(()),
            };
            made.map_err(|e| format!("make {} for {key_name}: {e}", target.display()))?;
        }
    }
    Ok(())
}

fn copy(from: &Path, to: &Path) -> std::io::Result<()> {
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::copy(from, to).map(drop)
}

fn write(to: &Path, text: &str) -> std::io::Result<()> {
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(to, text)
}

#[cfg(test)]
mod tests {
    use super::{loader_line, plugins_for};

    #[test]
    fn the_loaders_line_is_read_from_its_message() {
        assert_eq!(
            loader_line("error: /t/wardlock.toml line 12 (`x = 1`): unknown field"),
            Some(12)
        );
        assert_eq!(loader_line("/t/wardlock.toml: plugins: none"), None);
    }

    #[test]
    fn a_part_of_a_file_gets_a_plugin_per_backend() {
        let added = plugins_for("[backends.zk]\nkind = \"zookeeper\"\n[backends.etcd]\n");
        assert_eq!(added.matches("[[plugins]]").count(), 2);
        assert!(added.contains("backend = \"zk\"") && added.contains("route = \"/etcd\""));
        assert!(plugins_for("listen = \"x\"").contains("route = \"/\""));
    }
}
