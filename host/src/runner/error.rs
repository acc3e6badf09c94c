//! Why a runtime or runner could not be set up.

/// Why a runtime or runner could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunnerError {
    /// The engine could not be created.
    #[error("cannot create the wasm engine: {0:#}")]
    Engine(wasmtime::Error),
    /// The component file could not be read or compiled.
    #[error("cannot load component {path}: {reason}")]
    Load {
        /// The file.
        path: String,
        /// What went wrong.
        reason: LoadFailure,
    },
    /// The file is a precompiled component, and precompiled input was not allowed.
    #[error(
        "{path} is a precompiled component (.cwasm); precompiled files are trusted input \
         (they are native code), so wardlock runs them only with --allow-precompiled"
    )]
    PrecompiledNotAllowed {
        /// The file.
        path: String,
    },
    /// The file was precompiled by another wardlock version or engine configuration.
    #[error(
        "{path} was precompiled for a different engine configuration or wardlock version \
         ({detail}); compile it again with `wardlock compile`"
    )]
    PrecompiledMismatch {
        /// The file.
        path: String,
        /// What wasmtime reported (its first line).
        detail: String,
    },
    /// The component does not fit the world (missing imports or exports).
    #[error("component {name} does not fit the {world}: {detail}")]
    World {
        /// The component's name.
        name: String,
        /// The world it must fit, in words.
        world: &'static str,
        /// What did not fit, as wasmtime's linker reported it (its first line).
        detail: String,
    },
}

/// Why a component file could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadFailure {
    /// The file could not be read.
    #[error("{0}")]
    Read(#[from] std::io::Error),
    /// wasmtime rejected the bytes (its first line: not a component, invalid…).
    #[error("{0}")]
    Invalid(String),
    /// A precompiled core module, where a component was expected.
    #[error("it is a precompiled core module, not a component")]
    CoreModule,
    /// Already precompiled (`wardlock compile` takes a `.wasm` component).
    #[error("it is precompiled already")]
    AlreadyPrecompiled,
}

impl LoadFailure {
    /// wasmtime's error, shortened to its first line for one-line reports.
    pub(crate) fn invalid(error: &wasmtime::Error) -> Self {
        LoadFailure::Invalid(first_line(&format!("{error:#}")))
    }
}

/// The first line of a (possibly multi-line) wasmtime error, for one-line reports.
pub(crate) fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or(text).trim().to_owned()
}
