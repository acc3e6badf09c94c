//! `wardlock serve --config FILE`: the TOML file describing backends and plugins.
//!
//! Every mistake is one line naming the file, the key and what is wrong; unknown
//! keys are mistakes too (a typo must not silently drop a limit).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::registry::{EngineConfig, Mistake, Registry};
use crate::seconds::secs_at;
use serde::Deserialize;
use wardlock_host::runner::{
    AllowedHost, DeclaredLock, HoldScope, OutboundPolicy, parse_fence_header,
};
use wardlock_host::secret::Secret;

use super::plan::{
    DEFAULT_MAX_CONCURRENT, DEFAULT_REQUEST_TIMEOUT, DEFAULT_SHUTDOWN_GRACE, MAX_CONCURRENT_LIMIT,
    PluginPlan, ServePlan, SingletonPlan, check_route,
};
use crate::guest_args;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    listen: Option<String>,
    admin: Option<String>,
    /// A file holding the admin endpoints' bearer token (relative to the
    /// config file).
    admin_token_file: Option<PathBuf>,
    shutdown_grace: Option<f64>,
    max_concurrent_requests: Option<u64>,
    /// Each engine reads its own entry (`kind` names the engine).
    #[serde(default)]
    backends: BTreeMap<String, toml::Table>,
    #[serde(default)]
    plugins: Vec<PluginEntry>,
    #[serde(default)]
    singletons: Vec<SingletonEntry>,
}

/// `[[singletons]]`: a background command run on one host at a time.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SingletonEntry {
    name: String,
    component: PathBuf,
    value: Option<String>,
    backend: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    grants: Vec<String>,
    #[serde(default)]
    dirs: Vec<String>,
    #[serde(default)]
    pooled_file_io: bool,
    #[serde(default)]
    env: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PluginEntry {
    name: Option<String>,
    route: String,
    component: PathBuf,
    backend: Option<String>,
    #[serde(default)]
    grants: Vec<String>,
    max_handles: Option<usize>,
    max_memory: Option<usize>,
    request_timeout: Option<f64>,
    max_hold: Option<f64>,
    #[serde(default)]
    dirs: Vec<String>,
    #[serde(default)]
    pooled_file_io: bool,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    allow_outbound: Vec<String>,
    fence_header: Option<String>,
    #[serde(default)]
    hold: Vec<String>,
    #[serde(default)]
    kv_buckets: Vec<String>,
}

/// Reads and checks a config file.
///
/// # Errors
/// One line: `FILE: KEY: what is wrong` (or `FILE line N (`text`): …` for
/// syntax and type errors).
pub(crate) fn load(path: &Path, registry: &Registry) -> anyhow::Result<ServePlan> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("cannot read config file {shown}: {e}"))?;
    let file: File =
        toml::from_str(&text).map_err(|e| anyhow::anyhow!(describe(&shown, &text, &e)))?;
    let base = path.parent().unwrap_or(Path::new("."));
    plan(file, base, registry).map_err(|(key, why)| anyhow::anyhow!("{shown}: {key}: {why}"))
}

fn describe(file: &str, text: &str, error: &toml::de::Error) -> String {
    let message = error.message().trim().replace('\n', " ");
    match error.span() {
        Some(span) => {
            let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
            let source = text.lines().nth(line - 1).unwrap_or("").trim();
            format!("{file} line {line} (`{source}`): {message}")
        }
        None => format!("{file}: {message}"),
    }
}

fn plan(file: File, base: &Path, registry: &Registry) -> Result<ServePlan, Mistake> {
    let listen = match &file.listen {
        Some(addr) => addr.parse().map_err(|_| {
            (
                "listen".to_owned(),
                format!("{addr:?} is not an IP:PORT address"),
            )
        })?,
        None => super::DEFAULT_LISTEN
            .parse()
            .map_err(|_| ("listen".to_owned(), "bad default".to_owned()))?,
    };
    let admin = match &file.admin {
        Some(addr) => {
            Some(crate::admin::parse_addr(addr).map_err(|why| ("admin".to_owned(), why))?)
        }
        None => None,
    };
    let admin_token = match &file.admin_token_file {
        Some(token) => Some(
            Secret::from_file(&base.join(token))
                .map_err(|why| ("admin_token_file".to_owned(), why.to_string()))?,
        ),
        None => None,
    };
    let shutdown_grace = match file.shutdown_grace {
        Some(secs) => secs_at("shutdown_grace", secs)?,
        None => DEFAULT_SHUTDOWN_GRACE,
    };
    let max_concurrent = match file.max_concurrent_requests {
        Some(n) => max_concurrent_key(n)?,
        None => DEFAULT_MAX_CONCURRENT,
    };
    let mut backends = BTreeMap::new();
    for (label, entry) in file.backends {
        let config = registry.config_from_entry(&label, entry, base)?;
        backends.insert(label, config);
    }
    if backends.is_empty() {
        let (label, config) = registry.implicit_backend(base)?;
        backends.insert(label, config);
    }
    if file.plugins.is_empty() {
        return Err((
            "plugins".to_owned(),
            "no plugin is configured ([[plugins]] with route and component)".to_owned(),
        ));
    }
    let mut plugins = Vec::new();
    for (index, entry) in file.plugins.into_iter().enumerate() {
        let key = |field: &str| format!("plugins[{index}].{field}");
        let plugin = plugin(entry, base, &key, &mut backends)?;
        if plugins.iter().any(|p: &PluginPlan| p.name == plugin.name) {
            return Err((
                key("name"),
                format!("{:?} names another plugin too", plugin.name),
            ));
        }
        if plugins.iter().any(|p: &PluginPlan| p.route == plugin.route) {
            return Err((
                key("route"),
                format!("{:?} is another plugin's route too", plugin.route),
            ));
        }
        plugins.push(plugin);
    }
    let mut singletons = Vec::new();
    for (index, entry) in file.singletons.into_iter().enumerate() {
        let key = |field: &str| format!("singletons[{index}].{field}");
        let singleton = singleton(entry, base, &key, &mut backends)?;
        if singletons
            .iter()
            .any(|s: &SingletonPlan| s.name == singleton.name)
        {
            return Err((
                key("name"),
                format!("{:?} names another singleton too", singleton.name.as_str()),
            ));
        }
        singletons.push(singleton);
    }
    Ok(ServePlan {
        listen,
        admin,
        admin_token,
        shutdown_grace,
        max_concurrent,
        backends,
        plugins,
        singletons,
    })
}

fn singleton(
    entry: SingletonEntry,
    base: &Path,
    key: &dyn Fn(&str) -> String,
    backends: &mut BTreeMap<String, Arc<dyn EngineConfig>>,
) -> Result<SingletonPlan, Mistake> {
    let name = wardlock_host::name::LockName::new(&entry.name)
        .map_err(|e| (key("name"), e.to_string()))?;
    let component = base.join(&entry.component);
    if !component.is_file() {
        return Err((
            key("component"),
            format!("{} is not a file", component.display()),
        ));
    }
    let backend = backend_label(entry.backend, key, backends)?;
    let policy = guest_args::policy(
        &entry.grants,
        wardlock_host::policy::DEFAULT_MAX_HANDLES,
        "grant",
    )
    .map_err(|e| (key("grants"), format!("{e:#}")))?;
    let preopens = guest_args::preopens(&dir_specs(&entry.dirs, base), "dir")
        .map_err(|e| (key("dirs"), format!("{e:#}")))?;
    Ok(SingletonPlan {
        value: entry
            .value
            .unwrap_or_else(|| format!("wardlock serve pid {}", std::process::id())),
        name,
        component,
        backend,
        args: entry.args,
        preopens,
        env: entry.env.into_iter().collect(),
        file_io: guest_args::file_io(entry.pooled_file_io),
        policy,
    })
}

/// `dirs` entries (`HOST[::GUEST]`), their host side relative to `base`.
fn dir_specs(dirs: &[String], base: &Path) -> Vec<String> {
    dirs.iter()
        .map(|spec| match spec.split_once("::") {
            Some((host, guest)) => format!("{}::{guest}", base.join(host).display()),
            None => base.join(spec).display().to_string(),
        })
        .collect()
}

/// The backend label an entry names, or the only one.
fn backend_label(
    label: Option<String>,
    key: &dyn Fn(&str) -> String,
    backends: &mut BTreeMap<String, Arc<dyn EngineConfig>>,
) -> Result<String, Mistake> {
    match label {
        Some(label) if backends.contains_key(&label) => Ok(label),
        Some(label) => {
            let known: Vec<_> = backends.keys().cloned().collect();
            Err((
                key("backend"),
                format!("no backend is labelled {label:?} (known: {known:?})"),
            ))
        }
        None if backends.len() == 1 => Ok(backends.keys().next().cloned().unwrap_or_default()),
        None => Err((
            key("backend"),
            "several backends are configured: name one".to_owned(),
        )),
    }
}

/// `max_concurrent_requests`: 1 to [`MAX_CONCURRENT_LIMIT`].
fn max_concurrent_key(n: u64) -> Result<usize, Mistake> {
    usize::try_from(n)
        .ok()
        .filter(|n| (1..=MAX_CONCURRENT_LIMIT).contains(n))
        .ok_or_else(|| {
            (
                "max_concurrent_requests".to_owned(),
                format!("must be 1 to {MAX_CONCURRENT_LIMIT}, not {n}"),
            )
        })
}

fn plugin(
    entry: PluginEntry,
    base: &Path,
    key: &dyn Fn(&str) -> String,
    backends: &mut BTreeMap<String, Arc<dyn EngineConfig>>,
) -> Result<PluginPlan, Mistake> {
    check_route(&entry.route).map_err(|why| (key("route"), why))?;
    let component = base.join(&entry.component);
    if !component.is_file() {
        return Err((
            key("component"),
            format!("{} is not a file", component.display()),
        ));
    }
    let name = entry.name.unwrap_or_else(|| {
        component
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| entry.route.clone())
    });
    let backend = backend_label(entry.backend, key, backends)?;
    let policy = guest_args::policy(
        &entry.grants,
        entry
            .max_handles
            .unwrap_or(wardlock_host::policy::DEFAULT_MAX_HANDLES),
        "grant",
    )
    .map_err(|e| (key("grants"), format!("{e:#}")))?;
    let memory_limit = guest_args::memory_limit(entry.max_memory.unwrap_or(512), "max_memory")
        .map_err(|e| (key("max_memory"), format!("{e:#}")))?;
    let request_timeout = match entry.request_timeout {
        Some(secs) => secs_at(&key("request_timeout"), secs)?,
        None => DEFAULT_REQUEST_TIMEOUT,
    };
    let max_hold = match entry.max_hold {
        Some(secs) => Some(secs_at(&key("max_hold"), secs)?),
        None => None,
    };
    let dirs = dir_specs(&entry.dirs, base);
    let preopens =
        guest_args::preopens(&dirs, "dir").map_err(|e| (key("dirs"), format!("{e:#}")))?;
    let outbound = entry
        .allow_outbound
        .iter()
        .map(|spec| AllowedHost::parse(spec))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|why| (key("allow_outbound"), why))?;
    let fence_header = entry
        .fence_header
        .as_deref()
        .map(parse_fence_header)
        .transpose()
        .map_err(|why| (key("fence_header"), why))?;
    let hold = entry
        .hold
        .iter()
        .map(|spec| DeclaredLock::parse(spec, HoldScope::Request))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|why| (key("hold"), why))?;
    let kv_buckets = guest_args::kv_buckets(&entry.kv_buckets, "kv_buckets")
        .map_err(|e| (key("kv_buckets"), format!("{e:#}")))?;
    Ok(PluginPlan {
        name,
        route: entry.route,
        component,
        backend,
        policy,
        memory_limit,
        request_timeout,
        max_hold,
        preopens,
        env: entry.env.into_iter().collect(),
        file_io: guest_args::file_io(entry.pooled_file_io),
        outbound: OutboundPolicy::allow(outbound).with_fence_header(fence_header),
        hold,
        kv_buckets,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use wardlock_host::runner::FileIo;

    /// Loads `text` as a config file in a temp dir of its own (removed on
    /// return), beside an empty `guest.wasm`.
    fn load_text(text: &str) -> Result<ServePlan, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        load_text_in(dir.path(), text)
    }

    /// Loads `text` as a config file in `dir`, beside an empty `guest.wasm`.
    fn load_text_in(dir: &Path, text: &str) -> Result<ServePlan, String> {
        std::fs::write(dir.join("guest.wasm"), b"").map_err(|e| e.to_string())?;
        let file = dir.join("wardlock.toml");
        std::fs::write(&file, text).map_err(|e| e.to_string())?;
        load(&file, &Registry::builtin()).map_err(|e| format!("{e:#}"))
    }

    #[test]
    fn tls_and_users_come_in_whole_sets_named_by_their_keys() {
        let plugin = "[[plugins]]\nroute = \"/\"\ncomponent = \"guest.wasm\"\nbackend = \"e\"\n";
        let half_tls = format!(
            "[backends.e]\nkind = \"etcd\"\nendpoints = \"h:1\"\ntls_cert = \"c.pem\"\ntls_key = \"k.pem\"\n{plugin}"
        );
        let error = load_text(&half_tls).expect_err("no CA");
        assert!(
            error.contains("backends.e.tls_cert needs backends.e.tls_ca"),
            "{error}"
        );
        let no_password = format!(
            "[backends.e]\nkind = \"zookeeper\"\nhosts = \"h:1\"\nsasl_user = \"alice\"\n{plugin}"
        );
        let error = load_text(&no_password).expect_err("no password file");
        assert!(error.contains("backends.e.sasl_password_file"), "{error}");
        let token = "admin_token_file = \"missing.token\"\n[backends.e]\nkind = \"memory\"\n";
        let error = load_text(&format!("{token}{plugin}")).expect_err("no token file");
        assert!(
            error.contains("admin_token_file") && error.contains("missing.token"),
            "{error}"
        );
    }

    #[test]
    fn a_fence_header_is_read_and_checked() {
        let plugin = "[[plugins]]\nroute = \"/\"\ncomponent = \"guest.wasm\"\n";
        let plan =
            load_text(&format!("{plugin}fence_header = \"Wardlock-Fence\"\n")).expect("valid");
        let header = plan.plugins[0].outbound.fence_header().map(|h| h.as_str());
        assert_eq!(header, Some("wardlock-fence"));
        assert_eq!(
            load_text(plugin).expect("valid").plugins[0]
                .outbound
                .fence_header(),
            None
        );
        let error = load_text(&format!("{plugin}fence_header = \"host\"\n")).expect_err("managed");
        assert!(
            error.contains("fence_header") && error.contains("\"host\""),
            "{error}"
        );
    }

    #[test]
    fn pooled_file_io_is_read_and_off_by_default() {
        let plugin = "[[plugins]]\nroute = \"/\"\ncomponent = \"guest.wasm\"\n";
        let plan = load_text(&format!("{plugin}pooled_file_io = true\n")).expect("valid");
        assert_eq!(plan.plugins[0].file_io, FileIo::Pooled);
        let plan = load_text(plugin).expect("valid");
        assert_eq!(plan.plugins[0].file_io, FileIo::OnThread);
        let error =
            load_text(&format!("{plugin}pooled_file_io = \"yes\"\n")).expect_err("a string");
        assert!(error.contains("pooled_file_io"), "{error}");
    }

    #[test]
    fn max_concurrent_requests_is_read_and_checked() {
        let plugin = "[[plugins]]\nroute = \"/\"\ncomponent = \"guest.wasm\"\n";
        let plan = load_text(&format!("max_concurrent_requests = 250\n{plugin}")).expect("valid");
        assert_eq!(plan.max_concurrent, 250);
        assert_eq!(
            load_text(plugin).expect("valid").max_concurrent,
            DEFAULT_MAX_CONCURRENT
        );
        let error = load_text(&format!("max_concurrent_requests = 0\n{plugin}")).expect_err("zero");
        assert!(
            error.contains("max_concurrent_requests") && error.contains("must be 1 to 100000"),
            "{error}"
        );
    }

    #[test]
    fn a_minimal_file_gets_a_memory_backend() {
        let plan =
            load_text("[[plugins]]\nroute = \"/\"\ncomponent = \"guest.wasm\"\n").expect("valid");
        assert_eq!(plan.plugins.len(), 1);
        // The registry's default engine, labelled by its name.
        let default = Registry::builtin().names()[0];
        assert_eq!(plan.plugins[0].backend, default);
        let config = plan.backends.get(default).expect("a backend");
        assert_eq!(config.engine(), default, "{config:?}");
    }

    #[test]
    fn an_etcd_backend_is_configured_from_its_entry() {
        let plan = load_text(
            "[backends.e]\nkind = \"etcd\"\nendpoints = \"10.0.0.1:2379,10.0.0.2:2379\"\n\
             session_timeout = 4\nroot = \"/locks\"\nlocal_handoff = false\n\
             [[plugins]]\nroute = \"/\"\ncomponent = \"guest.wasm\"\n",
        )
        .expect("valid");
        let config = plan
            .backends
            .get("e")
            .map(|c| (c.as_ref() as &dyn std::any::Any).downcast_ref());
        let Some(Some(config)) = config else {
            panic!("not an etcd backend: {:?}", plan.backends);
        };
        let config: &wardlock_etcd::EtcdConfig = config;
        assert_eq!(config.endpoints.len(), 2);
        assert_eq!(config.ttl_seconds(), 4);
        assert_eq!(config.root, "/locks");
        assert_eq!(config.local_handoff.max_handoffs, 0, "hand-off off");
        assert_eq!(plan.plugins[0].backend, "e");
    }

    #[test]
    fn a_postgres_backend_is_configured_from_its_entry() {
        let plan = load_text(
            "[backends.pg]\nkind = \"postgres\"\nurl = \"postgres://app@db:5432/app\"\n\
             session_timeout = 4\nwait_connections = 4\nschema = \"locks\"\n\
             [[plugins]]\nroute = \"/\"\ncomponent = \"guest.wasm\"\n",
        )
        .expect("valid");
        let config = plan
            .backends
            .get("pg")
            .map(|c| (c.as_ref() as &dyn std::any::Any).downcast_ref());
        let Some(Some(config)) = config else {
            panic!("not a Postgres backend: {:?}", plan.backends);
        };
        let config: &wardlock_postgres::PostgresConfig = config;
        assert_eq!(config.url, "postgres://app@db:5432/app");
        assert_eq!(config.session_timeout, std::time::Duration::from_secs(4));
        assert_eq!(config.wait_connections, 4);
        assert_eq!(config.schema, "locks");
        let refused = load_text(
            "[backends.pg]\nkind = \"postgres\"\nurl = \"postgres://app@db/app\"\nroot = \"/x\"\n\
             [[plugins]]\nroute = \"/\"\ncomponent = \"guest.wasm\"\n",
        )
        .expect_err("a root is refused");
        assert!(
            format!("{refused:#}").contains("backends.pg.root"),
            "{refused:#}"
        );
        let refused = load_text(
            "[backends.pg]\nkind = \"postgres\"\nurl = \"postgres://app:pw@db/app\"\n\
             [[plugins]]\nroute = \"/\"\ncomponent = \"guest.wasm\"\n",
        )
        .expect_err("a password in the URL is refused");
        let shown = format!("{refused:#}");
        assert!(
            shown.contains("password_file") || shown.contains("PGPASSWORD"),
            "{shown}"
        );
        assert!(!shown.contains(":pw@"), "{shown}");
    }

    #[test]
    fn a_digest_file_is_read_beside_the_config_and_never_printed() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("zk.digest"), "wardlock:hunter2\n").expect("digest file");
        let plan = load_text_in(
            dir.path(),
            "[backends.zk]\nkind = \"zookeeper\"\nhosts = \"h:1\"\ndigest_file = \"zk.digest\"\n\
             [[plugins]]\nroute = \"/\"\ncomponent = \"guest.wasm\"\n",
        )
        .expect("valid");
        let config = plan
            .backends
            .get("zk")
            .map(|c| (c.as_ref() as &dyn std::any::Any).downcast_ref());
        let Some(Some(config)) = config else {
            panic!("not a ZooKeeper backend");
        };
        let config: &wardlock_zookeeper::ZooKeeperConfig = config;
        let digest = config.digest_auth.as_ref().expect("digest");
        assert_eq!(digest.expose(), "wardlock:hunter2");
        let shown = format!("{:?}", plan.backends);
        assert!(!shown.contains("hunter2"), "{shown}");
        let missing = load_text(
            "[backends.zk]\nkind = \"zookeeper\"\nhosts = \"h:1\"\ndigest_file = \"nope\"\n",
        )
        .expect_err("missing file");
        assert!(missing.contains("backends.zk.digest_file"), "{missing}");
    }

    #[test]
    fn mistakes_name_the_key() {
        let cases = [
            (
                "[[plugins]]\nroute = \"/\"\ncomponent = \"guest.wasm\"\nmax_hodl = 3\n",
                "max_hodl",
            ),
            (
                "[[plugins]]\nroute = \"/\"\ncomponent = \"guest.wasm\"\nmax_hold = \"x\"\n",
                "max_hold",
            ),
            (
                "[[plugins]]\nroute = \"x\"\ncomponent = \"guest.wasm\"\n",
                "plugins[0].route",
            ),
            (
                "[[plugins]]\nroute = \"/\"\ncomponent = \"missing.wasm\"\n",
                "plugins[0].component",
            ),
            (
                "[[plugins]]\nroute = \"/\"\ncomponent = \"guest.wasm\"\nbackend = \"zk\"\n",
                "plugins[0].backend",
            ),
            (
                "[[plugins]]\nroute = \"/\"\ncomponent = \"guest.wasm\"\nmax_hold = -1\n",
                "plugins[0].max_hold",
            ),
            (
                "[backends.zk]\nkind = \"zookeeper\"\nhosts = \"h:1\"\ndialect = \"x\"\n[[plugins]]\nroute = \"/\"\ncomponent = \"guest.wasm\"\n",
                "backends.zk.dialect",
            ),
            ("[backends.zk]\nkind = \"consul\"\n", "consul"),
            (
                "[backends.e]\nkind = \"etcd\"\nendpoints = \"h:1\"\nsession_timeout = 1\n",
                "backends.e",
            ),
            (
                "listen = \"nowhere\"\n[[plugins]]\nroute = \"/\"\ncomponent = \"guest.wasm\"\n",
                "listen",
            ),
        ];
        for (text, key) in cases {
            let error = load_text(text).expect_err(text);
            assert!(error.contains(key), "{error:?} does not name {key}");
            assert!(!error.contains('\n'), "{error:?} is not one line");
            assert!(error.contains(".toml"), "{error:?} does not name the file");
        }
    }
}
