//! Flags shaping how components are compiled (wasmtime's side, not a lock
//! engine's): the compilation cache and precompiled input.

use std::path::{Path, PathBuf};

use clap::Args;
use wardlock_host::runner::{CompileCache, Runtime, RuntimeOptions};
use wasmtime::component::Component;

/// How components are compiled and loaded (shared by `run` and `serve`).
#[derive(Debug, Args)]
pub struct CompilationArgs {
    /// Compilation cache directory [default: $XDG_CACHE_HOME/wardlock, else
    /// ~/.cache/wardlock]. A component compiled once loads from the cache on
    /// every later run.
    #[arg(long, value_name = "DIR", conflicts_with = "no_cache")]
    pub cache_dir: Option<PathBuf>,

    /// Compile the component on every run; neither read nor write the cache.
    #[arg(long)]
    pub no_cache: bool,

    /// Accept a precompiled component (a .cwasm from `wardlock compile`).
    /// Precompiled files are native code loaded without validation: allow them
    /// only from a source you trust as much as this host.
    #[arg(long)]
    pub allow_precompiled: bool,
}

impl CompilationArgs {
    /// The cache these flags select.
    pub fn cache(&self) -> CompileCache {
        if self.no_cache {
            return CompileCache::Off;
        }
        match self.cache_dir.clone().or_else(CompileCache::default_dir) {
            Some(dir) => CompileCache::Dir(dir),
            None => {
                tracing::warn!(
                    "compilation cache disabled: neither XDG_CACHE_HOME nor HOME is set (use --cache-dir)"
                );
                CompileCache::Off
            }
        }
    }

    /// A runtime with these flags' cache and the given instance allocator.
    ///
    /// # Errors
    /// When wasmtime rejects the engine configuration.
    pub fn runtime(
        &self,
        pooling: Option<wasmtime::PoolingAllocationConfig>,
    ) -> anyhow::Result<Runtime> {
        Ok(Runtime::with_options(RuntimeOptions {
            cache: self.cache(),
            pooling,
        })?)
    }

    /// Loads `path`: compiles a component (through the cache), or maps a
    /// precompiled one when `--allow-precompiled` is given.
    ///
    /// # Errors
    /// One line naming the file and what is wrong with it.
    pub fn load(&self, runtime: &Runtime, path: &Path) -> anyhow::Result<Component> {
        tracing::info!(component = %path.display(), "loading");
        Ok(runtime.load(path, self.allow_precompiled)?)
    }
}
