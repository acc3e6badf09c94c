//! Flags setting what each guest instance may do (shared by `run` and `serve`).

use anyhow::{Context, bail};
use clap::Args;
use wardlock_host::keyvalue::KvBuckets;
use wardlock_host::policy::LockPolicy;
use wardlock_host::runner::{AllowedHost, FileIo, Preopen, parse_fence_header};

/// Grants, limits and the guest's view of the host.
#[derive(Debug, Args)]
pub struct GuestArgs {
    /// Grant the plugin lock names within PREFIX (segment-wise; repeatable).
    /// Without any --grant every name is allowed.
    #[arg(long = "grant", value_name = "PREFIX")]
    pub grants: Vec<String>,

    /// Most live lock handles per instance.
    #[arg(long, value_name = "N", default_value_t = wardlock_host::policy::DEFAULT_MAX_HANDLES)]
    pub max_handles: usize,

    /// Linear-memory limit per instance, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = 512)]
    pub max_memory: usize,

    /// Make host directory HOST visible to the guest as GUEST (as `wasmtime run --dir`).
    #[arg(long = "dir", value_name = "HOST[::GUEST]")]
    pub dirs: Vec<String>,

    /// Run the guests' file operations on a pool of threads of their own,
    /// for --dir directories on a slow or network filesystem. Without it
    /// they run on the guest's thread, as `wasmtime run` does: much faster on
    /// a local disk.
    #[arg(long)]
    pub pooled_file_io: bool,

    /// Set an environment variable for the guest (repeatable).
    #[arg(long = "env", value_name = "KEY=VALUE", value_parser = parse_env)]
    pub env: Vec<(String, String)>,

    /// Let guests send HTTP requests to HOST or HOST:PORT (repeatable); without it,
    /// outbound requests get the WASI error HTTP-request-denied.
    #[arg(long = "allow-outbound", value_name = "HOST[:PORT]", value_parser = AllowedHost::parse)]
    pub allow_outbound: Vec<AllowedHost>,

    /// Add the fencing token of every exclusive lock a guest holds to each
    /// HTTP request it sends, in header NAME as `LOCK=TOKEN` (one field per
    /// lock; any the guest set itself is replaced), so the service it calls
    /// can refuse a stale writer: keep the highest token seen per lock,
    /// refuse lower ones.
    #[arg(long = "fence-header", value_name = "NAME", value_parser = parse_fence_header)]
    pub fence_header: Option<http::HeaderName>,

    /// A `wasi:keyvalue` bucket guests may open (repeatable). Without any,
    /// guests may open `default` alone; an unknown bucket is `no-such-store`.
    #[arg(long = "kv-bucket", value_name = "NAME")]
    pub kv_buckets: Vec<String>,
}

/// The buckets `names` (none: `default` alone), named with `what` (the flag
/// or key) when one is no valid bucket name.
///
/// # Errors
/// The first invalid name, and why.
pub(crate) fn kv_buckets(names: &[String], what: &str) -> anyhow::Result<KvBuckets> {
    KvBuckets::new(names).with_context(|| format!("{what}: not a bucket name"))
}

/// Builds a lock policy from grant prefixes and a handle cap.
///
/// # Errors
/// A prefix that is not a valid lock name, named with `what` (the flag or key).
pub(crate) fn policy(
    grants: &[String],
    max_handles: usize,
    what: &str,
) -> anyhow::Result<LockPolicy> {
    let mut policy = LockPolicy::new().with_max_handles(max_handles);
    for prefix in grants {
        policy = policy
            .grant(prefix)
            .with_context(|| format!("{what} {prefix:?} is not a valid lock name prefix"))?;
    }
    Ok(policy)
}

/// Parses and checks `HOST[::GUEST]` directory specs.
///
/// # Errors
/// A host path that is not a directory, named with `what` (the flag or key).
pub(crate) fn preopens(specs: &[String], what: &str) -> anyhow::Result<Vec<Preopen>> {
    let mut preopens = Vec::new();
    for spec in specs {
        let preopen = Preopen::parse(spec);
        if !preopen.host.is_dir() {
            bail!(
                "{what} {spec:?}: {} is not a directory",
                preopen.host.display()
            );
        }
        preopens.push(preopen);
    }
    Ok(preopens)
}

/// Where guests' file operations run: pooled when asked (`--pooled-file-io`,
/// a config file's `pooled_file_io = true`), else on the guest's thread.
pub(crate) fn file_io(pooled: bool) -> FileIo {
    if pooled {
        FileIo::Pooled
    } else {
        FileIo::OnThread
    }
}

/// MiB to bytes, or an error naming `what` when it overflows.
///
/// # Errors
/// When `mib` MiB does not fit in memory addresses.
pub(crate) fn memory_limit(mib: usize, what: &str) -> anyhow::Result<usize> {
    mib.checked_mul(1 << 20)
        .with_context(|| format!("{what} {mib} is too large"))
}

impl GuestArgs {
    /// The lock policy these flags describe.
    ///
    /// # Errors
    /// An invalid `--grant` prefix.
    pub fn policy(&self) -> anyhow::Result<LockPolicy> {
        policy(&self.grants, self.max_handles, "--grant")
    }

    /// The checked `--dir` preopens.
    ///
    /// # Errors
    /// A `--dir` whose host path is not a directory.
    pub fn preopens(&self) -> anyhow::Result<Vec<Preopen>> {
        preopens(&self.dirs, "--dir")
    }

    /// Where the guests' file operations run (`--pooled-file-io`).
    pub fn file_io(&self) -> FileIo {
        file_io(self.pooled_file_io)
    }

    /// The per-instance memory limit in bytes.
    ///
    /// # Errors
    /// An overflowing `--max-memory`.
    pub fn memory_limit(&self) -> anyhow::Result<usize> {
        memory_limit(self.max_memory, "--max-memory")
    }
}

fn parse_env(spec: &str) -> Result<(String, String), String> {
    match spec.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => Err(format!("expected KEY=VALUE, got {spec:?}")),
    }
}
