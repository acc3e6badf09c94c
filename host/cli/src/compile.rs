//! `wardlock compile`: compile a component ahead of time into a `.cwasm`.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use wardlock_host::runner::Runtime;

/// Arguments of `wardlock compile`.
#[derive(Debug, Args)]
pub struct CompileArgs {
    /// The component to compile.
    #[arg(value_name = "COMPONENT")]
    pub component: PathBuf,

    /// Where to write the precompiled component [default: COMPONENT with the
    /// extension .cwasm].
    #[arg(short, long, value_name = "FILE.cwasm")]
    pub output: Option<PathBuf>,
}

/// Compiles with exactly the engine configuration `run` and `serve` use, so
/// they load the result with `--allow-precompiled`; writes it atomically.
pub(super) fn compile(args: &CompileArgs) -> anyhow::Result<i32> {
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| args.component.with_extension("cwasm"));
    if output == args.component {
        anyhow::bail!(
            "-o {}: would overwrite the input component",
            output.display()
        );
    }
    let runtime = Runtime::new()?;
    let started = std::time::Instant::now();
    let bytes = runtime.precompile(&args.component)?;
    let partial = output.with_extension("cwasm.partial");
    std::fs::write(&partial, &bytes)
        .with_context(|| format!("cannot write {}", partial.display()))?;
    std::fs::rename(&partial, &output)
        .with_context(|| format!("cannot move {} to {}", partial.display(), output.display()))?;
    eprintln!(
        "wardlock: compiled {} to {} ({} bytes) in {:.2}s; run it with --allow-precompiled",
        args.component.display(),
        output.display(),
        bytes.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(0)
}
