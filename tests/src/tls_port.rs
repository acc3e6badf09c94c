//! A port that speaks only TLS, with the two ways a real TLS-only server
//! treats a plaintext client: it closes the connection at once (ZooKeeper's
//! Netty port usually does) or it stays silent, waiting for bytes that are
//! never a handshake. Either way a client without TLS settings must be told
//! that the port speaks TLS, not that the service is unavailable, whichever of
//! its attempt and its TLS probe finishes first.

use std::sync::Arc;

use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;

use crate::pki::TestPki;

/// The first byte of every TLS record carrying a handshake (a ClientHello).
const TLS_HANDSHAKE: u8 = 0x16;

/// What the port does with a client that does not open with a TLS handshake.
#[derive(Clone, Copy, Debug)]
pub enum Plaintext {
    /// Closes the connection at once.
    Close,
    /// Keeps it open and never answers.
    Silent,
}

/// A TLS-only port on loopback, served until dropped.
pub struct TlsOnlyPort {
    address: String,
    task: JoinHandle<()>,
}

impl TlsOnlyPort {
    /// Listens on a free loopback port with `pki`'s server certificate.
    ///
    /// # Panics
    /// When the certificate cannot be read or the port cannot be bound.
    pub async fn start(pki: &TestPki, plaintext: Plaintext) -> TlsOnlyPort {
        let (cert, key) = pki.server();
        let chain = CertificateDer::pem_file_iter(&cert)
            .expect("server certificate")
            .collect::<Result<Vec<_>, _>>()
            .expect("server certificate");
        let key = PrivateKeyDer::from_pem_file(&key).expect("server key");
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .expect("server config");
        let acceptor = TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("address").to_string();
        let task = tokio::spawn(async move {
            let mut silent = Vec::new();
            while let Ok((stream, _)) = listener.accept().await {
                let mut first = [0u8; 1];
                let opens_with_tls =
                    matches!(stream.peek(&mut first).await, Ok(1) if first[0] == TLS_HANDSHAKE);
                if opens_with_tls {
                    tokio::spawn(shake_hands(acceptor.clone(), stream));
                } else if let Plaintext::Silent = plaintext {
                    // Held until the port stops, unanswered.
                    silent.push(stream);
                }
            }
        });
        TlsOnlyPort { address, task }
    }

    /// `127.0.0.1:PORT`.
    pub fn address(&self) -> &str {
        &self.address
    }
}

impl Drop for TlsOnlyPort {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Completes the handshake, then waits for the client to go.
async fn shake_hands(acceptor: TlsAcceptor, stream: TcpStream) {
    if let Ok(mut tls) = acceptor.accept(stream).await {
        let mut sink = tokio::io::sink();
        let _ = tokio::io::copy(&mut tls, &mut sink).await;
    }
}
