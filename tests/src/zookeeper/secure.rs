//! A ZooKeeper server that lets no one in: TLS on a `secureClientPort`
//! (Netty; optionally requiring client certificates) and SASL DIGEST-MD5
//! users, enforced for every session (DESIGN.md §11). Its plaintext
//! `clientPort` stays for the harness's `ruok`, and for the tests of a
//! client that has not been told about TLS.

use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::ZkServer;
use crate::pki::{STORE_PASSWORD, TestPki};
use crate::ports::free_port;

/// How the server is secured.
pub struct Secure<'a> {
    /// Certificates (the server's, and the CA clients must be signed by).
    pub pki: &'a TestPki,
    /// Require a client certificate signed by the CA (`ssl.clientAuth=need`).
    pub client_certificates: bool,
    /// SASL DIGEST-MD5 users and passwords; with any, a session without SASL
    /// is refused (`enforce.auth.schemes=sasl`).
    pub users: &'a [(&'a str, &'a str)],
}

/// Debian puts Netty's codec and resolver in their own jars, which the
/// Netty connection factory needs beside ZooKeeper's.
const CLASS_PATH: &str = "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar:\
/usr/share/java/netty-codec.jar:/usr/share/java/netty-resolver.jar";

impl ZkServer {
    /// Starts a secured server; returns it and its TLS port
    /// (`tcp+tls://127.0.0.1:PORT`).
    ///
    /// # Panics
    /// As [`ZkServer::start`].
    pub fn start_secure(secure: &Secure<'_>) -> (ZkServer, u16) {
        let mut server = ZkServer::reserve();
        let secure_port = free_port();
        let (keystore, truststore) = secure.pki.java_stores();
        let client_auth = if secure.client_certificates {
            "need"
        } else {
            "none"
        };
        let mut config = format!(
            "secureClientPort={secure_port}\nsecureClientPortAddress=127.0.0.1\n\
             serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n\
             ssl.keyStore.location={}\nssl.keyStore.password={STORE_PASSWORD}\nssl.keyStore.type=PKCS12\n\
             ssl.trustStore.location={}\nssl.trustStore.password={STORE_PASSWORD}\nssl.trustStore.type=PKCS12\n\
             ssl.clientAuth={client_auth}\n",
            keystore.display(),
            truststore.display(),
        );
        server.jvm_flags = format!("-cp {CLASS_PATH}");
        if !secure.users.is_empty() {
            config.push_str(
                "authProvider.sasl=org.apache.zookeeper.server.auth.SASLAuthenticationProvider\n\
                 enforce.auth.enabled=true\nenforce.auth.schemes=sasl\n",
            );
            let users: String = (secure.users.iter())
                .map(|(user, password)| format!(" user_{user}=\"{password}\""))
                .collect();
            let jaas = server.dir.path().join("jaas.conf");
            let module = "org.apache.zookeeper.server.auth.DigestLoginModule";
            std::fs::write(
                &jaas,
                format!("Server {{\n {module} required{users};\n}};\n"),
            )
            .expect("jaas.conf");
            server.jvm_flags.push_str(&format!(
                " -Djava.security.auth.login.config={}",
                jaas.display()
            ));
        }
        let path = server.config_path();
        let mut zoo_cfg = std::fs::read_to_string(&path).expect("zoo.cfg");
        zoo_cfg.push_str(&config);
        std::fs::write(&path, zoo_cfg).expect("zoo.cfg");
        server.launch();
        server.await_secure_port(secure_port);
        (server, secure_port)
    }

    /// `launch` waits for the plaintext port's `ruok`, but ZooKeeper opens
    /// its secure port after the plaintext one: a client that came at once
    /// found nothing listening ("no available hosts"). Wait for it too.
    fn await_secure_port(&mut self, port: u16) {
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                panic!("ZooKeeper exited with {status}: {}", self.log());
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "ZooKeeper's secure port {port} did not open within 60 s: {}",
                self.log()
            );
            // Readiness of a foreign process: nothing to await but its port.
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}
