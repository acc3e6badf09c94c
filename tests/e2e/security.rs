//! TLS and authentication to both engines, against real servers secured with
//! certificates made at test time (`tests/src/pki.rs`): ZooKeeper over mutual
//! TLS with SASL DIGEST-MD5, etcd over mutual TLS with a user and password.
//! A guest counter counts exactly through each; every misconfiguration is
//! refused in under 10 s with one line naming the flag to fix; the password
//! never shows in the refusals.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use wardlock_tests::etcd::EtcdServer;
use wardlock_tests::etcd::secure::SecureEtcd;
use wardlock_tests::pki::TestPki;
use wardlock_tests::tls_port::{Plaintext, TlsOnlyPort};
use wardlock_tests::zookeeper::ZkServer;
use wardlock_tests::zookeeper::secure::Secure;

use wardlock_tests::Guest;
use wardlock_tests::serve::{Server, cache_flags, get, get_authorized, post, wardlock_bin};

use crate::cli::{run_counters, wardlock};

/// The password of the test user: what no output may contain.
pub(crate) const PASSWORD: &str = "Wardlock-Secret-7f3a91";

/// A temp dir holding the right and a wrong password, one file each.
pub(crate) struct PasswordFiles {
    dir: tempfile::TempDir,
}

impl PasswordFiles {
    pub(crate) fn new() -> PasswordFiles {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("right"), format!("{PASSWORD}\n")).expect("write");
        std::fs::write(dir.path().join("wrong"), "not-the-password\n").expect("write");
        PasswordFiles { dir }
    }

    pub(crate) fn right(&self) -> String {
        self.path("right")
    }

    pub(crate) fn wrong(&self) -> String {
        self.path("wrong")
    }

    pub(crate) fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }
}

fn shown(path: PathBuf) -> String {
    path.display().to_string()
}

/// `wardlock run FLAGS --require-backend counter.wasm …` must fail within
/// 10 s with a message naming `flag` and never the password.
async fn refused(flags: &[&str], flag: &str) {
    let mut required = vec!["--require-backend"];
    required.extend(flags);
    refused_within(&required, flag, Duration::from_secs(10)).await;
}

/// `wardlock run FLAGS counter.wasm …` must fail within `bound`, naming
/// `flag`: the refusal's text.
async fn refused_within(flags: &[&str], flag: &str, bound: Duration) -> String {
    let mut args = vec!["run"];
    args.extend(flags);
    args.extend([Guest::Counter.path(), "--", "x", "1", "/tmp/unused"]);
    let started = Instant::now();
    let outcome = tokio::time::timeout(bound, wardlock(&args)).await;
    let took = started.elapsed();
    let Ok(outcome) = outcome else {
        panic!("{flags:?} was not refused within {bound:?}");
    };
    let error = match outcome {
        Ok(code) => panic!("{flags:?} ran (exit {code}) instead of being refused"),
        Err(error) => format!("{error:#}"),
    };
    assert!(
        error.contains(flag),
        "refusal of {flags:?} does not name {flag}: {error}"
    );
    assert!(
        !error.contains(PASSWORD),
        "refusal shows the password: {error}"
    );
    eprintln!("refused in {took:?}: {error}");
    error
}

/// A client given no TLS settings at a TLS-only port is told that the port
/// speaks TLS and which flags to give, in < 5 s, ten times in a row on each
/// engine: the refusal must not depend on whether the client's own attempt
/// or the TLS probe finishes first (`plaintext` says how the port treats
/// the client's attempt).
async fn tls_port_named(plaintext: Plaintext) {
    let pki = TestPki::new();
    let port = TlsOnlyPort::start(&pki, plaintext).await;
    for (engine, prefix) in [("--zookeeper", "--zk"), ("--etcd", "--etcd")] {
        for _ in 0..10 {
            let flags = [engine, port.address()];
            let error =
                refused_within(&flags, &format!("{prefix}-tls-ca"), Duration::from_secs(5)).await;
            assert!(
                error.contains("speaks TLS"),
                "{plaintext:?}: {engine} refusal does not name TLS: {error}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_port_that_closes_plaintext_at_once_is_named() {
    tls_port_named(Plaintext::Close).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_port_silent_to_plaintext_is_named() {
    tls_port_named(Plaintext::Silent).await;
}

/// How to reach one secured engine from `wardlock run`, and what to check.
struct Secured<'a> {
    /// The engine flags (`--zookeeper HOST:PORT`, `--etcd … --root …`).
    engine: Vec<String>,
    /// `--zk` or `--etcd`: the TLS flags are `{prefix}-tls-ca` and so on.
    prefix: &'static str,
    /// The user flag and the password file flag.
    user_flag: &'static str,
    password_flag: &'static str,
    pki: &'a TestPki,
    passwords: PasswordFiles,
    /// The backend's entry in serve's config file, but its TLS and user keys.
    serve_entry: String,
    /// The config file's names of the user and password file keys.
    serve_user_keys: (&'static str, &'static str),
}

impl Secured<'_> {
    /// The flags with a CA (`None`: no TLS), the client certificate or not,
    /// and a password file (`None`: no user).
    fn flags(
        &self,
        ca: Option<PathBuf>,
        certificate: bool,
        password: Option<String>,
    ) -> Vec<String> {
        let prefix = self.prefix;
        let mut flags = self.engine.clone();
        if let Some(ca) = ca {
            flags.extend([format!("{prefix}-tls-ca"), shown(ca)]);
        }
        if certificate {
            let (cert, key) = self.pki.client();
            flags.extend([format!("{prefix}-tls-cert"), shown(cert)]);
            flags.extend([format!("{prefix}-tls-key"), shown(key)]);
        }
        if let Some(password) = password {
            flags.extend([self.user_flag.to_owned(), "alice".to_owned()]);
            flags.extend([self.password_flag.to_owned(), password]);
        }
        flags
    }

    /// The backend entry of a serve config file with every setting right.
    fn serve_config(&self, component: &str, data: &str) -> String {
        let (cert, key) = self.pki.client();
        let (user_key, password_key) = self.serve_user_keys;
        format!(
            "admin_token_file = \"{token}\"\n\n[backends.secure]\n{entry}\n\
             tls_ca = \"{ca}\"\ntls_cert = \"{cert}\"\ntls_key = \"{key}\"\n\
             {user_key} = \"alice\"\n{password_key} = \"{password}\"\n\n\
             [[plugins]]\nroute = \"/\"\ncomponent = \"{component}\"\nbackend = \"secure\"\n\
             dirs = [\"{data}::/data\"]\n",
            token = self.passwords.path("token"),
            entry = self.serve_entry,
            ca = shown(self.pki.ca()),
            cert = shown(cert),
            key = shown(key),
            password = self.passwords.right(),
        )
    }

    /// The password never shows: not on `wardlock run`'s command line, not
    /// in its output at log level `trace`, not in `status`, not on serve's
    /// `/metrics` or `/healthz` (which refuse a request without the token).
    async fn check_no_secret_shows(&self) {
        let flags = self.flags(Some(self.pki.ca()), true, Some(self.passwords.right()));
        let data = tempfile::tempdir().expect("temp dir");
        let dir = format!("{}::/data", data.path().display());
        let child = std::process::Command::new(wardlock_bin())
            .args([
                "run",
                "--require-backend",
                "--instances",
                "2",
                "--dir",
                &dir,
            ])
            .args(cache_flags(&[]))
            .args(&flags)
            .args([Guest::Counter.path(), "--", "leak", "3", "/data/count"])
            .env("WARDLOCK_LOG", "trace")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start wardlock run");
        let cmdline = std::fs::read(format!("/proc/{}/cmdline", child.id())).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&cmdline).contains(PASSWORD),
            "the password is on the command line"
        );
        let output = child.wait_with_output().expect("wardlock run");
        let printed = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(output.status.success(), "wardlock run failed: {printed}");
        assert!(printed.contains("TRACE"), "no trace output: {printed}");
        assert!(
            !printed.contains(PASSWORD),
            "the password is in the trace output"
        );

        let status = std::process::Command::new(wardlock_bin())
            .arg("status")
            .args(&flags)
            .arg("leak")
            .env("WARDLOCK_LOG", "trace")
            .output()
            .expect("wardlock status");
        let printed = format!(
            "{}{}",
            String::from_utf8_lossy(&status.stdout),
            String::from_utf8_lossy(&status.stderr)
        );
        assert!(status.status.success(), "wardlock status failed: {printed}");
        assert!(
            !printed.contains(PASSWORD),
            "the password is in status output"
        );

        let token = "admin-token-5c1d";
        std::fs::write(self.passwords.path("token"), token).expect("write token");
        let config = self.passwords.path("serve.toml");
        let data = data.path().display().to_string();
        std::fs::write(&config, self.serve_config(Guest::HttpCounter.path(), &data))
            .expect("write config");
        let server = Server::start_with_token(&["--config", &config], token).await;
        let counted = post(&server.addr, "/leak").await.expect("POST");
        assert_eq!(counted.status, 200, "{}", server.log());
        for path in ["/metrics", "/healthz"] {
            let response = get_authorized(&server.admin, path, Some(token))
                .await
                .expect("GET");
            assert_eq!(response.status, 200, "{path}: {}", response.body);
            assert!(
                !response.body.contains(PASSWORD),
                "the password is on {path}"
            );
            let refused = get(&server.admin, path).await.expect("GET");
            assert_eq!(refused.status, 401, "{path} without the token");
        }
        assert!(
            !server.log().contains(PASSWORD),
            "the password is in serve's log"
        );
    }

    /// A counter counts exactly with every setting right; each wrong or
    /// missing setting is refused, naming its flag.
    async fn check(&self) {
        let ca = || Some(self.pki.ca());
        let right = || Some(self.passwords.right());
        let flags = self.flags(ca(), true, right());
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        assert_eq!(
            run_counters(&flags, "tls-count", "10").await,
            (0, "80".to_owned())
        );

        let prefix = self.prefix;
        for (flags, flag) in [
            (
                self.flags(Some(self.pki.other_ca()), true, right()),
                format!("{prefix}-tls-ca"),
            ),
            (
                self.flags(ca(), false, right()),
                format!("{prefix}-tls-cert"),
            ),
            (
                self.flags(ca(), true, Some(self.passwords.wrong())),
                self.password_flag.to_owned(),
            ),
            (self.flags(ca(), true, None), self.user_flag.to_owned()),
            (self.flags(None, false, None), format!("{prefix}-tls-ca")),
        ] {
            let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
            refused(&flags, &flag).await;
        }
    }
}

/// ZooKeeper over mutual TLS with SASL DIGEST-MD5: counts exactly; a wrong
/// CA, no client certificate, a wrong password, no SASL and plaintext to the
/// TLS port are each refused, naming the flag.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_over_mutual_tls_with_sasl() {
    let pki = TestPki::new();
    let (_server, port) = ZkServer::start_secure(&Secure {
        pki: &pki,
        client_certificates: true,
        users: &[("alice", PASSWORD)],
    });
    let secured = Secured {
        engine: vec!["--zookeeper".into(), format!("127.0.0.1:{port}")],
        prefix: "--zk",
        user_flag: "--zk-sasl-user",
        password_flag: "--zk-sasl-password-file",
        pki: &pki,
        passwords: PasswordFiles::new(),
        serve_entry: format!("kind = \"zookeeper\"\nhosts = \"127.0.0.1:{port}\""),
        serve_user_keys: ("sasl_user", "sasl_password_file"),
    };
    secured.check().await;
    secured.check_no_secret_shows().await;
}

/// etcd over mutual TLS with a user and password: counts exactly; a wrong
/// CA, no client certificate, a wrong password, no user and plaintext to the
/// TLS port are each refused, naming the flag.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_over_mutual_tls_with_a_user() {
    let pki = TestPki::new();
    let (_server, port) = EtcdServer::start_secure(&SecureEtcd {
        pki: &pki,
        client_certificates: true,
        user: Some(("alice", PASSWORD, "/secure/")),
    })
    .await;
    let secured = Secured {
        engine: ["--etcd", &format!("127.0.0.1:{port}"), "--root", "/secure"]
            .map(String::from)
            .to_vec(),
        prefix: "--etcd",
        user_flag: "--etcd-user",
        password_flag: "--etcd-password-file",
        pki: &pki,
        passwords: PasswordFiles::new(),
        serve_entry: format!(
            "kind = \"etcd\"\nendpoints = \"127.0.0.1:{port}\"\nroot = \"/secure\""
        ),
        serve_user_keys: ("user", "password_file"),
    };
    secured.check().await;
    secured.check_no_secret_shows().await;
}
