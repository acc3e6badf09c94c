//! `wardlock-c-tool`: the two steps of a C guest's build that need the
//! WebAssembly component toolchain, as `plugins/build.sh` runs them.
//!
//! ```text
//! wardlock-c-tool bindings WIT_DIR --world WORLD --out-dir DIR
//! wardlock-c-tool component CORE.wasm --adapt NAME=ADAPTER.wasm -o OUT.wasm
//! ```
//!
//! `bindings` writes what `wit-bindgen c WIT_DIR --world WORLD --out-dir DIR`
//! writes (`<world>.h`, `<world>.c`, `<world>_component_type.o`), and
//! `component` what `wasm-tools component new CORE --adapt NAME=ADAPTER -o
//! OUT` writes, with the same defaults: both call the crates those tools are
//! made of (wit-bindgen-c, wit-component). Why not the tools themselves: they
//! are installed with `cargo install`, which compiles a second copy of the
//! component toolchain the workspace already compiles for the Rust SDK's
//! `wit-bindgen` macro, and on a new 2-core machine the two installs took
//! 659 s beside the test build. Authors of their own C guests can use either
//! (the book shows the standard tools).

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use wit_bindgen_core::Files;
use wit_bindgen_core::wit_parser::Resolve;
use wit_component::ComponentEncoder;

const USAGE: &str = "usage:
  wardlock-c-tool bindings WIT_DIR --world WORLD --out-dir DIR
  wardlock-c-tool component CORE.wasm --adapt NAME=ADAPTER.wasm -o OUT.wasm";

fn main() -> ExitCode {
    match run(std::env::args().skip(1).collect()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("wardlock-c-tool: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the command `args` names.
fn run(args: Vec<String>) -> Result<()> {
    match args.first().map(String::as_str) {
        Some("bindings") => {
            let parsed = Arguments::parse(&args[1..], &["--world", "--out-dir"])?;
            bindings(
                Path::new(parsed.positional()?),
                parsed.option("--world")?,
                Path::new(parsed.option("--out-dir")?),
            )
        }
        Some("component") => {
            let parsed = Arguments::parse(&args[1..], &["--adapt", "-o"])?;
            let adapt = parsed.option("--adapt")?;
            let Some((name, adapter)) = adapt.split_once('=') else {
                bail!("--adapt {adapt}: expected NAME=ADAPTER.wasm\n{USAGE}");
            };
            component(
                Path::new(parsed.positional()?),
                name,
                Path::new(adapter),
                Path::new(parsed.option("-o")?),
            )
        }
        Some("-h" | "--help") => {
            println!("{USAGE}");
            Ok(())
        }
        Some(other) => bail!("unknown command {other:?}\n{USAGE}"),
        None => bail!("no command\n{USAGE}"),
    }
}

/// Writes the C bindings of `world` in the WIT package at `wit` into `out_dir`.
fn bindings(wit: &Path, world: &str, out_dir: &Path) -> Result<()> {
    let mut resolve = Resolve::default();
    let (package, _) = resolve
        .push_path(wit)
        .with_context(|| format!("cannot read the WIT package {}", wit.display()))?;
    let world = resolve.select_world(&[package], Some(world))?;
    let mut files = Files::default();
    wit_bindgen_c::Opts::default()
        .build()
        .generate(&mut resolve, world, &mut files)?;
    std::fs::create_dir_all(out_dir)
        .with_context(|| format!("cannot create {}", out_dir.display()))?;
    for (name, contents) in files.iter() {
        let path = out_dir.join(name);
        std::fs::write(&path, contents)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// Wraps the core module at `core` into a component, with the adapter module
/// at `adapter` providing the imports of module `name`, and writes it to `out`.
fn component(core: &Path, name: &str, adapter: &Path, out: &Path) -> Result<()> {
    let read = |path: &Path| {
        std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))
    };
    let bytes = ComponentEncoder::default()
        .validate(true)
        .debug_names(true)
        .merge_imports_based_on_semver(true)
        .module(&read(core)?)?
        .adapter(name, &read(adapter)?)?
        .encode()
        .with_context(|| format!("cannot make a component of {}", core.display()))?;
    std::fs::write(out, bytes).with_context(|| format!("cannot write {}", out.display()))
}

/// One positional argument and options that each take a value.
struct Arguments {
    positional: Vec<String>,
    options: Vec<(String, String)>,
}

impl Arguments {
    /// Splits `args` into the `allowed` options with their values and the rest.
    fn parse(args: &[String], allowed: &[&str]) -> Result<Arguments> {
        let mut parsed = Arguments {
            positional: Vec::new(),
            options: Vec::new(),
        };
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            if allowed.contains(&arg.as_str()) {
                let Some(value) = args.next() else {
                    bail!("{arg} needs a value\n{USAGE}");
                };
                parsed.options.push((arg.clone(), value.clone()));
            } else if arg.starts_with('-') {
                bail!("unknown option {arg}\n{USAGE}");
            } else {
                parsed.positional.push(arg.clone());
            }
        }
        Ok(parsed)
    }

    /// The one positional argument.
    fn positional(&self) -> Result<&str> {
        match self.positional.as_slice() {
            [one] => Ok(one),
            [] => bail!("missing the input path\n{USAGE}"),
            more => bail!("one input path expected, got {more:?}\n{USAGE}"),
        }
    }

    /// The value of option `name`, which must be given once.
    fn option(&self, name: &str) -> Result<&str> {
        let mut values = self.options.iter().filter(|(n, _)| n == name);
        match (values.next(), values.next()) {
            (Some((_, value)), None) => Ok(value),
            (None, _) => bail!("missing {name}\n{USAGE}"),
            (Some(_), Some(_)) => bail!("{name} given twice\n{USAGE}"),
        }
    }
}
