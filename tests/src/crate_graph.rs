//! The crate graph's rules, checked on `cargo metadata`: the arrows point one
//! way. Every built-in engine depends on the toolkit (`wardlock-backend`) and
//! on neither the host nor the command line nor another engine; the host
//! depends on no engine; only the command line names them all.

/// The engine crates built into `wardlock`.
pub const ENGINE_CRATES: &[&str] = &[
    "wardlock-zookeeper",
    "wardlock-etcd",
    "wardlock-postgres",
    "wardlock-valkey",
];

/// The toolkit every engine is built on.
pub const TOOLKIT: &str = "wardlock-backend";

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::cargo_env::without_package_variables;

/// A package of the workspace, as `cargo metadata` describes it.
#[derive(Debug)]
pub struct WorkspaceCrate {
    /// Its directory, relative to the workspace root (`host/cli`).
    pub dir: String,
    /// The workspace packages it depends on (normal dependencies: a dev
    /// dependency is its tests' own).
    pub deps: Vec<String>,
}

/// The workspace's packages by name, from `cargo metadata --no-deps`.
///
/// # Panics
/// When cargo metadata fails or its output is not what cargo writes.
pub fn workspace_crates() -> BTreeMap<String, WorkspaceCrate> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace above tests/");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    without_package_variables(&mut command)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root);
    let output = command.output().expect("run cargo metadata");
    assert!(output.status.success(), "{output:?}");
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("metadata is JSON");
    let root = metadata["workspace_root"].as_str().expect("workspace_root");
    let packages = metadata["packages"].as_array().expect("packages");
    let names: Vec<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    packages
        .iter()
        .map(|p| {
            let manifest = p["manifest_path"].as_str().expect("manifest_path");
            let dir = Path::new(manifest)
                .parent()
                .and_then(|dir| dir.strip_prefix(root).ok())
                .expect("a member under the workspace root")
                .to_string_lossy()
                .into_owned();
            let deps = p["dependencies"]
                .as_array()
                .expect("dependencies")
                .iter()
                .filter(|d| d["kind"].is_null())
                .filter_map(|d| d["name"].as_str())
                .filter(|d| names.contains(d))
                .map(str::to_owned)
                .collect();
            let name = p["name"].as_str().expect("name").to_owned();
            (name, WorkspaceCrate { dir, deps })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{ENGINE_CRATES, TOOLKIT, workspace_crates};

    #[test]
    fn arrows_point_from_the_command_line_to_the_engines_to_the_toolkit() {
        let graph = workspace_crates();
        let deps = |name: &str| {
            &graph
                .get(name)
                .unwrap_or_else(|| panic!("no crate {name}"))
                .deps
        };
        assert_eq!(
            deps(TOOLKIT),
            &Vec::<String>::new(),
            "the toolkit depends on no crate of ours"
        );
        for engine in ENGINE_CRATES {
            assert_eq!(
                deps(engine),
                &vec![TOOLKIT.to_owned()],
                "{engine} depends on the toolkit alone"
            );
        }
        let host = deps("wardlock-host");
        assert_eq!(host, &vec![TOOLKIT.to_owned()], "the host names no engine");
        let cli = deps("wardlock");
        for needed in ENGINE_CRATES.iter().chain(&["wardlock-host", TOOLKIT]) {
            assert!(
                cli.iter().any(|d| d == needed),
                "the CLI ships {needed}: {cli:?}"
            );
        }
        // No library below the command line depends on it.
        for library in ["wardlock-host", "wardlock-conformance", "wardlock-guest"] {
            assert!(
                !deps(library)
                    .iter()
                    .any(|d| d == "wardlock" || ENGINE_CRATES.contains(&d.as_str())),
                "{library} depends on the command line or an engine: {:?}",
                deps(library)
            );
        }
    }
}
