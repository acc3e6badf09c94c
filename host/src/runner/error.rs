//! Why a runtime or runner could not be set up.

/// Why a runtime or runner could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunnerError {
    /// The engine could not be created.
    #[error("cannot create the wasm engine: {0}")]
    Engine(String),
    /// The component file could not be read or compiled.
    #[error("cannot load component {path}: {why}")]
    Load {
        /// The file.
        path: String,
        /// What went wrong.
        why: String,
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
         ({why}); compile it again with `wardlock compile`"
    )]
    PrecompiledMismatch {
        /// The file.
        path: String,
        /// What wasmtime reported.
        why: String,
    },
    /// The component does not fit the world (missing imports or exports).
    #[error("component {name} does not fit the {world}: {why}")]
    World {
        /// The component's name.
        name: String,
        /// The world it must fit, in words.
        world: &'static str,
        /// What did not fit.
        why: String,
    },
}

/// The first line of a (possibly multi-line) wasmtime error, for one-line reports.
pub(crate) fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or(text).trim().to_owned()
}
