//! The crate graph's rules, checked on `cargo metadata`: the arrows point one
//! way. Every built-in engine depends on the toolkit (`wardlock-backend`) and
//! on neither the host nor the command line nor another engine; the host
//! depends on no engine; only the command line names them all.

/// The engine crates built into `wardlock`.
pub const ENGINE_CRATES: &[&str] = &["wardlock-zookeeper", "wardlock-etcd", "wardlock-postgres"];

/// The toolkit every engine is built on.
pub const TOOLKIT: &str = "wardlock-backend";

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::process::Command;

    use super::{ENGINE_CRATES, TOOLKIT};

    /// Each workspace package's normal (not dev) dependencies on other
    /// packages of the workspace.
    fn workspace_graph() -> BTreeMap<String, Vec<String>> {
        let output = Command::new(env!("CARGO"))
            .args([
                "metadata",
                "--format-version",
                "1",
                "--no-deps",
                "--offline",
            ])
            .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
            .output()
            .expect("run cargo metadata");
        assert!(output.status.success(), "{output:?}");
        let metadata: serde_json::Value =
            serde_json::from_slice(&output.stdout).expect("metadata is JSON");
        let packages = metadata["packages"].as_array().expect("packages");
        let names: Vec<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
        packages
            .iter()
            .map(|p| {
                let deps = p["dependencies"]
                    .as_array()
                    .expect("dependencies")
                    .iter()
                    .filter(|d| d["kind"].is_null())
                    .filter_map(|d| d["name"].as_str())
                    .filter(|d| names.contains(d))
                    .map(str::to_owned)
                    .collect();
                (p["name"].as_str().unwrap_or_default().to_owned(), deps)
            })
            .collect()
    }

    #[test]
    fn arrows_point_from_the_command_line_to_the_engines_to_the_toolkit() {
        let graph = workspace_graph();
        let deps = |name: &str| graph.get(name).unwrap_or_else(|| panic!("no crate {name}"));
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
