//! Test certificates, made at test time with the `openssl` command line (and
//! Java's `keytool` for ZooKeeper's trust store) in a temp dir: a CA, a server
//! certificate for `127.0.0.1` and `localhost` signed by it, a client
//! certificate signed by it, and a second CA that signed nothing wardlock
//! trusts; on demand, a client certificate naming a user
//! ([`TestPki::client_for`], for servers that take the certificate's CN as
//! the user, as PostgreSQL does). No private key is committed.
//! Keys are ECDSA P-256, which every server and client here accepts, made
//! in about a millisecond each: the suite's `openssl` runs took 20 s of CPU
//! with RSA-2048 keys, under 1 s with these.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// The password of the PKCS12 stores made for Java servers (a test value).
pub const STORE_PASSWORD: &str = "wardlock-test-store";

/// A set of test certificates in a temp dir (deleted on drop).
pub struct TestPki {
    dir: tempfile::TempDir,
    /// Serialises certificates made after [`TestPki::new`] (they share the
    /// CA's serial file).
    making: Mutex<()>,
}

impl TestPki {
    /// Makes the CA, the server and client certificates and the other CA.
    ///
    /// # Panics
    /// When `openssl` is missing or fails.
    pub fn new() -> TestPki {
        let pki = TestPki {
            dir: tempfile::tempdir().expect("temp dir"),
            making: Mutex::new(()),
        };
        pki.make_ca("ca");
        pki.make_ca("other-ca");
        pki.leaf(
            "server",
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth",
        );
        pki.leaf(
            "client",
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=clientAuth",
        );
        pki
    }

    /// `NAME.pem` (a certificate) or `NAME-key.pem` (its key) in the dir.
    pub fn path(&self, file: &str) -> PathBuf {
        self.dir.path().join(file)
    }

    /// The CA certificate that signed the server and client certificates.
    pub fn ca(&self) -> PathBuf {
        self.path("ca.pem")
    }

    /// A CA that signed neither.
    pub fn other_ca(&self) -> PathBuf {
        self.path("other-ca.pem")
    }

    /// The client certificate and its key.
    pub fn client(&self) -> (PathBuf, PathBuf) {
        (self.path("client.pem"), self.path("client-key.pem"))
    }

    /// The server certificate and its key.
    pub fn server(&self) -> (PathBuf, PathBuf) {
        (self.path("server.pem"), self.path("server-key.pem"))
    }

    /// A client certificate whose subject CN is `user`, signed by the CA, and
    /// its key (`user-USER.pem`, `user-USER-key.pem`), made on first use:
    /// PostgreSQL's `cert` authentication and `clientcert=verify-full` accept
    /// a certificate only for the user its CN names ([`TestPki::client`]'s
    /// CN is `client`).
    ///
    /// # Panics
    /// When `user` has characters other than ASCII letters, digits, `_`, `-`
    /// and `.`, or `openssl` fails.
    pub fn client_for(&self, user: &str) -> (PathBuf, PathBuf) {
        assert!(
            !user.is_empty()
                && user
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')),
            "a test user name, not {user:?}"
        );
        let name = format!("user-{user}");
        let paths = (
            self.path(&format!("{name}.pem")),
            self.path(&format!("{name}-key.pem")),
        );
        let _making = self
            .making
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !paths.0.exists() {
            self.leaf_named(&name, user, "extendedKeyUsage=clientAuth");
        }
        paths
    }

    /// The server's key and certificate as a PKCS12 key store, and the CA as a
    /// PKCS12 trust store (for ZooKeeper's `ssl.keyStore`/`ssl.trustStore`),
    /// both with [`STORE_PASSWORD`].
    ///
    /// # Panics
    /// When `openssl` or `keytool` fails.
    pub fn java_stores(&self) -> (PathBuf, PathBuf) {
        let keystore = self.path("server.p12");
        let truststore = self.path("trust.p12");
        if !keystore.exists() {
            let (cert, key) = self.server();
            openssl(
                self.dir.path(),
                &[
                    "pkcs12",
                    "-export",
                    "-in",
                    &s(&cert),
                    "-inkey",
                    &s(&key),
                    "-name",
                    "server",
                    "-out",
                    &s(&keystore),
                    "-passout",
                    &format!("pass:{STORE_PASSWORD}"),
                ],
            );
            run(Command::new("keytool").args([
                "-importcert",
                "-noprompt",
                "-alias",
                "ca",
                "-file",
                &s(&self.ca()),
                "-keystore",
                &s(&truststore),
                "-storetype",
                "PKCS12",
                "-storepass",
                STORE_PASSWORD,
            ]));
        }
        (keystore, truststore)
    }

    fn make_ca(&self, name: &str) {
        let dir = self.dir.path();
        openssl(
            dir,
            &[
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-days",
                "2",
                "-subj",
                &format!("/CN=wardlock test {name}"),
                "-keyout",
                &format!("{name}-key.pem"),
                "-out",
                &format!("{name}.pem"),
            ],
        );
    }

    fn leaf(&self, name: &str, extensions: &str) {
        self.leaf_named(name, name, extensions);
    }

    /// A certificate `NAME.pem` (key `NAME-key.pem`) for the subject `/CN=cn`.
    fn leaf_named(&self, name: &str, cn: &str, extensions: &str) {
        let dir = self.dir.path();
        let ext = format!("{name}.ext");
        std::fs::write(dir.join(&ext), format!("{extensions}\n")).expect("write extensions");
        openssl(
            dir,
            &[
                "req",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-subj",
                &format!("/CN={cn}"),
                "-keyout",
                &format!("{name}-key.pem"),
                "-out",
                &format!("{name}.csr"),
            ],
        );
        openssl(
            dir,
            &[
                "x509",
                "-req",
                "-in",
                &format!("{name}.csr"),
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca-key.pem",
                "-CAcreateserial",
                "-days",
                "2",
                "-extfile",
                &ext,
                "-out",
                &format!("{name}.pem"),
            ],
        );
    }
}

impl Default for TestPki {
    fn default() -> Self {
        TestPki::new()
    }
}

fn s(path: &Path) -> String {
    path.display().to_string()
}

fn openssl(dir: &Path, args: &[&str]) {
    run(Command::new("openssl").args(args).current_dir(dir));
}

fn run(command: &mut Command) {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    assert!(
        output.status.success(),
        "{command:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}
