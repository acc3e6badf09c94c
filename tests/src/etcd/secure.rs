//! An etcd server that lets no one in: a TLS client listener (optionally
//! requiring client certificates, `--client-cert-auth`) beside the
//! plaintext one the harness uses, and `auth enable` with a user whose role
//! may read and write one prefix.

use std::path::Path;

use super::{EtcdServer, INSTALL_HINT, Member};
use crate::pki::TestPki;
use crate::ports::free_port;

/// The password of etcd's `root` user in these tests.
const ROOT_PASSWORD: &str = "wardlock-test-root";

/// How the server is secured.
pub struct SecureEtcd<'a> {
    /// Certificates (the server's, and the CA clients must be signed by).
    pub pki: &'a TestPki,
    /// Require a client certificate signed by the CA.
    pub client_certificates: bool,
    /// A user, its password, and the key prefix its role may read and write;
    /// with one, the server runs with `auth enable`.
    pub user: Option<(&'a str, &'a str, &'a str)>,
}

impl EtcdServer {
    /// Starts a one-member cluster secured as `secure` says; returns it and
    /// its TLS client port.
    ///
    /// # Panics
    /// As [`EtcdServer::start`], or when setting up its users fails.
    pub async fn start_secure(secure: &SecureEtcd<'_>) -> (EtcdServer, u16) {
        assert!(Path::new(super::ETCD).exists(), "{INSTALL_HINT}");
        let port = free_port();
        let (cert, key) = secure.pki.server();
        let mut member = Member::new(0);
        member.secure_port = Some(port);
        member.tls_args = vec![
            format!("--cert-file={}", cert.display()),
            format!("--key-file={}", key.display()),
            format!("--trusted-ca-file={}", secure.pki.ca().display()),
        ];
        if secure.client_certificates {
            member.tls_args.push("--client-cert-auth".to_owned());
        }
        let mut server = EtcdServer {
            members: vec![member],
            dir: tempfile::tempdir().expect("temp dir"),
        };
        server.launch(0);
        server.wait_healthy(0);
        if let Some((user, password, prefix)) = secure.user {
            let role = format!("{user}-role");
            server
                .setup(&["user", "add", &format!("root:{ROOT_PASSWORD}")])
                .await;
            server.setup(&["user", "grant-role", "root", "root"]).await;
            server
                .setup(&["user", "add", &format!("{user}:{password}")])
                .await;
            server.setup(&["role", "add", &role]).await;
            server
                .setup(&[
                    "role",
                    "grant-permission",
                    &role,
                    "--prefix=true",
                    "readwrite",
                    prefix,
                ])
                .await;
            server.setup(&["user", "grant-role", user, &role]).await;
            server.setup(&["auth", "enable"]).await;
        }
        (server, port)
    }

    /// Runs an `etcdctl` set-up command on the plaintext listener.
    async fn setup(&self, args: &[&str]) {
        let output = self
            .etcdctl()
            .args(args)
            .output()
            .await
            .expect("run etcdctl");
        assert!(
            output.status.success(),
            "etcdctl {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
