//! The wasmtime engine guests run on (not a lock engine): configuration,
//! compilation cache, loading components.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use wasmtime::component::Component;
use wasmtime::{Engine, Precompiled};

use super::compile_lock::CompileLock;
use super::epoch::EpochTicker;
use super::error::{LoadFailure, RunnerError, first_line};
use super::function_cache::{self, FunctionCache, FunctionCacheCounts};

/// Where compiled code is cached between runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum CompileCache {
    /// No cache: every load compiles (the library default).
    #[default]
    Off,
    /// wasmtime's compilation cache in this directory (`wasmtime/`): a
    /// component compiled once loads from here on every later run with the
    /// same engine configuration. Beside it, Cranelift's incremental cache
    /// (`functions/`): a component not compiled before (a guest rebuilt
    /// after an edit) compiles only the functions no earlier compile made.
    Dir(PathBuf),
}

impl CompileCache {
    /// The user's cache directory for wardlock: `$XDG_CACHE_HOME/wardlock`, else
    /// `~/.cache/wardlock`; `None` when neither variable is set.
    pub fn default_dir() -> Option<PathBuf> {
        let nonempty = |var| std::env::var_os(var).filter(|v| !v.is_empty());
        if let Some(xdg) = nonempty("XDG_CACHE_HOME") {
            return Some(PathBuf::from(xdg).join("wardlock"));
        }
        nonempty("HOME").map(|home| PathBuf::from(home).join(".cache").join("wardlock"))
    }
}

/// How to build a [`Runtime`].
#[derive(Debug, Clone, Default)]
pub struct RuntimeOptions {
    /// The compilation cache.
    pub cache: CompileCache,
    /// Instances come from wasmtime's pooling allocator configured so (slots
    /// reserved up front, reused across instances); `None`: on-demand allocation.
    /// The pool caps instances, memories, tables and fiber stacks alive at once and
    /// each linear memory's size (keep `max_memory_size` at least
    /// [`super::RunnerConfig::memory_limit`]).
    pub pooling: Option<wasmtime::PoolingAllocationConfig>,
}

/// Core instances, memories and tables a [`request_pool`] holds per request
/// slot: a component is several core modules (a Rust guest 2 to 4,
/// componentize-py and jco guests more), each with its own instance, and often
/// its own memory and tables. Unused slots cost address space only.
const CORE_INSTANCES_PER_REQUEST: u32 = 16;
const MEMORIES_PER_REQUEST: u32 = 2;
const TABLES_PER_REQUEST: u32 = 4;

/// A pooling allocator with room for `requests` component instances alive at
/// once (what `wardlock serve --max-concurrent-requests` reserves), each
/// linear memory at most `max_memory_size` bytes.
pub fn request_pool(requests: u32, max_memory_size: usize) -> wasmtime::PoolingAllocationConfig {
    let mut pool = wasmtime::PoolingAllocationConfig::new();
    pool.total_component_instances(requests)
        .total_core_instances(requests.saturating_mul(CORE_INSTANCES_PER_REQUEST))
        .total_memories(requests.saturating_mul(MEMORIES_PER_REQUEST))
        .total_tables(requests.saturating_mul(TABLES_PER_REQUEST))
        .total_stacks(requests)
        .max_memory_size(max_memory_size);
    pool
}

/// The engine guests run on, plus its epoch ticker. Cheap to clone.
#[derive(Clone)]
pub struct Runtime {
    engine: Engine,
    /// The compilation cache's directory, when the runtime has one: where
    /// processes sharing it take turns compiling a component
    /// ([`CompileLock`]).
    cache_dir: Option<PathBuf>,
    /// Cranelift's incremental cache, when the runtime has a cache directory.
    functions: Option<Arc<FunctionCache>>,
    _ticker: Arc<EpochTicker>,
}

impl Runtime {
    /// An engine configured for wardlock guests (async host calls, epoch yields),
    /// without a compilation cache.
    ///
    /// # Errors
    /// [`RunnerError::Engine`] when wasmtime rejects the configuration.
    pub fn new() -> Result<Self, RunnerError> {
        Self::with_options(RuntimeOptions::default())
    }

    /// As [`Runtime::new`], but instances come from wasmtime's pooling allocator
    /// configured by `pool` (see [`RuntimeOptions::pooling`]).
    ///
    /// # Errors
    /// [`RunnerError::Engine`] when wasmtime rejects the configuration (for example
    /// when the pool's address space cannot be reserved).
    pub fn with_pooling(pool: wasmtime::PoolingAllocationConfig) -> Result<Self, RunnerError> {
        Self::with_options(RuntimeOptions {
            pooling: Some(pool),
            ..RuntimeOptions::default()
        })
    }

    /// An engine built from `options`. A cache directory that cannot be created or
    /// written is not an error: the runtime logs one warning and compiles every
    /// load instead.
    ///
    /// # Errors
    /// [`RunnerError::Engine`] when wasmtime rejects the configuration.
    pub fn with_options(options: RuntimeOptions) -> Result<Self, RunnerError> {
        let mut config = code_config();
        let mut cache_dir = None;
        let mut functions = None;
        if let CompileCache::Dir(dir) = &options.cache {
            match open_cache(dir) {
                Ok((cache, dir)) => {
                    config.cache(Some(cache));
                    let store = Arc::new(FunctionCache::new(dir.join(function_cache::FOLDER)));
                    config
                        .enable_incremental_compilation(store.clone())
                        .map_err(RunnerError::Engine)?;
                    functions = Some(store);
                    cache_dir = Some(dir);
                }
                Err(why) => tracing::warn!(
                    "compilation cache disabled, compiling every run: cannot use {}: {why}",
                    dir.display()
                ),
            }
        }
        if let Some(pool) = options.pooling {
            config.allocation_strategy(wasmtime::InstanceAllocationStrategy::Pooling(pool));
        }
        let engine = Engine::new(&config).map_err(RunnerError::Engine)?;
        let ticker = EpochTicker::start(&engine).map_err(|e| RunnerError::Engine(e.into()))?;
        Ok(Runtime {
            engine,
            cache_dir,
            functions,
            _ticker: Arc::new(ticker),
        })
    }

    /// How many functions this runtime's compiles took from the incremental
    /// cache and how many they compiled; `None` without a cache directory.
    /// A component loaded whole from wasmtime's cache counts neither.
    pub fn function_cache_counts(&self) -> Option<FunctionCacheCounts> {
        self.functions.as_deref().map(FunctionCache::counts)
    }

    /// The wasmtime engine (a lock engine is another thing: `wardlock-backend`).
    pub fn wasm_engine(&self) -> &Engine {
        &self.engine
    }

    /// Reads and compiles a component file (through the compilation cache, when
    /// the runtime has one). A precompiled file is refused.
    ///
    /// # Errors
    /// [`RunnerError::Load`] naming the file when it is missing or not a component;
    /// [`RunnerError::PrecompiledNotAllowed`] for a `.cwasm`.
    pub fn compile(&self, path: &Path) -> Result<Component, RunnerError> {
        self.load(path, false)
    }

    /// Loads a component file: a component is compiled (through the cache); a
    /// precompiled component (from [`Runtime::precompile`] or `wardlock compile`)
    /// is loaded as it is when `allow_precompiled`, and refused otherwise.
    ///
    /// Precompiled files are native code that wasmtime maps and runs without
    /// validation: allow them only from a source you trust as much as the host.
    ///
    /// # Errors
    /// [`RunnerError::Load`] when the file is missing, not a component, or a
    /// precompiled core module; [`RunnerError::PrecompiledNotAllowed`];
    /// [`RunnerError::PrecompiledMismatch`] when it was precompiled by a different
    /// engine configuration or wasmtime version.
    pub fn load(&self, path: &Path, allow_precompiled: bool) -> Result<Component, RunnerError> {
        let shown = || path.display().to_string();
        let load_error = |reason: LoadFailure| RunnerError::Load {
            path: shown(),
            reason,
        };
        let kind = if is_elf(path).map_err(|e| load_error(e.into()))? {
            Engine::detect_precompiled_file(path)
                .map_err(|e| load_error(LoadFailure::invalid(&e)))?
        } else {
            None
        };
        match kind {
            None => {
                let bytes = std::fs::read(path).map_err(|e| load_error(e.into()))?;
                // Another process compiling the same file through the same
                // cache finishes first; this one then loads its entry.
                let _turn = self
                    .cache_dir
                    .as_deref()
                    .and_then(|dir| CompileLock::acquire(dir, path));
                let before = self.function_cache_counts();
                let component = Component::new(&self.engine, &bytes)
                    .map_err(|e| load_error(LoadFailure::invalid(&e)));
                if let Some(functions) = &self.functions
                    && before.is_some_and(|b| functions.counts().compiled > b.compiled)
                {
                    functions.keep_within(function_cache::SIZE_LIMIT);
                }
                component
            }
            Some(Precompiled::Module) => Err(load_error(LoadFailure::CoreModule)),
            Some(Precompiled::Component) if !allow_precompiled => {
                Err(RunnerError::PrecompiledNotAllowed { path: shown() })
            }
            Some(Precompiled::Component) => {
                // SAFETY: the caller vouched for the file (`allow_precompiled`);
                // wasmtime checks that it was made for this engine's configuration.
                unsafe { Component::deserialize_file(&self.engine, path) }.map_err(|e| {
                    RunnerError::PrecompiledMismatch {
                        path: shown(),
                        detail: first_line(&format!("{e:#}")),
                    }
                })
            }
        }
    }

    /// Compiles a component file ahead of time for exactly this runtime's engine
    /// configuration; the bytes are what [`Runtime::load`] accepts with
    /// `allow_precompiled`.
    ///
    /// # Errors
    /// [`RunnerError::Load`] when the file is missing, already precompiled, or not
    /// a valid component.
    pub fn precompile(&self, path: &Path) -> Result<Vec<u8>, RunnerError> {
        let load_error = |reason: LoadFailure| RunnerError::Load {
            path: path.display().to_string(),
            reason,
        };
        let bytes = std::fs::read(path).map_err(|e| load_error(e.into()))?;
        if Engine::detect_precompiled(&bytes).is_some() {
            return Err(load_error(LoadFailure::AlreadyPrecompiled));
        }
        self.engine
            .precompile_component(&bytes)
            .map_err(|e| load_error(LoadFailure::invalid(&e)))
    }
}

/// True when the file starts like an ELF object (what precompiled artifacts
/// are; wasmtime's own detection fails on anything else instead of saying no).
fn is_elf(path: &Path) -> std::io::Result<bool> {
    use std::io::Read;
    let mut magic = [0u8; 4];
    let mut file = std::fs::File::open(path)?;
    let read = file.read(&mut magic)?;
    Ok(read == 4 && magic == *b"\x7fELF")
}

/// The engine settings that shape compiled code. Every runtime — cached,
/// pooled, or compiling ahead of time — uses exactly these, so artifacts from
/// one load in all of them.
fn code_config() -> wasmtime::Config {
    let mut config = wasmtime::Config::new();
    config.wasm_component_model(true);
    config.epoch_interruption(true);
    config
}

/// The folder of a cache directory wasmtime's cache has to itself: its
/// cleanup counts, and deletes, whatever else it finds in its directory
/// (the incremental cache's entries among them).
const WASMTIME_FOLDER: &str = "wasmtime";

/// Moves the entries of a cache directory made before wasmtime's cache had a
/// folder of its own (`<dir>/modules/`) into that folder, where they load as
/// before. Best effort: a process that loses the race, or a directory that
/// cannot be changed, leaves them, and they are compiled again.
fn move_old_entries(dir: &Path) {
    let old = dir.join("modules");
    let folder = dir.join(WASMTIME_FOLDER);
    if old.is_dir() && !folder.exists() && std::fs::create_dir(&folder).is_ok() {
        let _ = std::fs::rename(&old, folder.join("modules"));
    }
}

/// wasmtime's cache in `dir`, after checking that the directory can be created
/// and written (wasmtime itself would fail silently on every write), and the
/// directory's absolute path.
fn open_cache(dir: &Path) -> Result<(wasmtime::Cache, PathBuf), String> {
    let dir = std::path::absolute(dir).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let probe = dir.join(format!(".write-test-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(|e| e.to_string())?;
    let _ = std::fs::remove_file(&probe);
    move_old_entries(&dir);
    let mut config = wasmtime::CacheConfig::new();
    config.with_directory(dir.join(WASMTIME_FOLDER));
    let cache = wasmtime::Cache::new(config).map_err(|e| first_line(&e.to_string()))?;
    Ok((cache, dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The smallest component: magic, component-model version, no sections.
    const EMPTY_COMPONENT: &[u8] = b"\0asm\x0d\x00\x01\x00";

    fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, bytes).expect("write test file");
        path
    }

    #[test]
    fn precompiled_files_need_consent_and_the_same_engine() {
        let dir =
            std::env::temp_dir().join(format!("wardlock-runtime-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let runtime = Runtime::new().expect("runtime");
        let plain = write(&dir, "empty.wasm", EMPTY_COMPONENT);
        let ours = write(
            &dir,
            "ours.cwasm",
            &runtime.precompile(&plain).expect("precompile"),
        );
        assert!(runtime.load(&plain, false).is_ok());
        assert!(matches!(
            runtime.load(&ours, false),
            Err(RunnerError::PrecompiledNotAllowed { .. })
        ));
        assert!(runtime.load(&ours, true).is_ok());

        // Compiled by an engine without epoch interruption: refused by name.
        let other = Engine::new(&wasmtime::Config::new()).expect("engine");
        let theirs = other
            .precompile_component(EMPTY_COMPONENT)
            .expect("precompile");
        let theirs = write(&dir, "theirs.cwasm", &theirs);
        let error = runtime.load(&theirs, true).expect_err("mismatch");
        assert!(
            matches!(error, RunnerError::PrecompiledMismatch { .. }),
            "{error}"
        );
        assert!(error.to_string().contains("wardlock compile"), "{error}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn entries_of_the_old_layout_move_into_wasmtime_s_folder() {
        let dir = std::env::temp_dir().join(format!("wardlock-cache-move-{}", std::process::id()));
        let entry = Path::new("modules/wasmtime-v48/entry");
        std::fs::create_dir_all(dir.join(entry).parent().expect("a folder")).expect("old layout");
        std::fs::write(dir.join(entry), b"compiled").expect("an old entry");
        let _runtime = Runtime::with_options(RuntimeOptions {
            cache: CompileCache::Dir(dir.clone()),
            pooling: None,
        })
        .expect("runtime");
        assert_eq!(
            std::fs::read(dir.join(WASMTIME_FOLDER).join(entry)).expect("the moved entry"),
            b"compiled"
        );
        assert!(!dir.join("modules").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_unwritable_cache_degrades_to_compiling() {
        let runtime = Runtime::with_options(RuntimeOptions {
            cache: CompileCache::Dir(PathBuf::from("/proc/wardlock-cannot-be-here")),
            pooling: None,
        })
        .expect("a runtime without a cache");
        let dir = std::env::temp_dir().join(format!("wardlock-cache-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let plain = write(&dir, "empty.wasm", EMPTY_COMPONENT);
        assert!(runtime.load(&plain, false).is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
