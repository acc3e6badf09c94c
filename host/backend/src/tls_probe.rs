//! One TLS handshake of wardlock's own, to tell an operator *why* a lock
//! service's client could not connect: the ZooKeeper client reports a failed
//! handshake only as "no available hosts". Used after a failure (with the
//! configured files) and, when no TLS is configured, to notice a port that
//! speaks TLS.

use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use super::BackendError;
use super::tls::{TlsPem, error_chain};

/// How long each step of a probe may take.
const STEP: Duration = Duration::from_secs(2);

/// Why a TLS connection to `host` (`HOST:PORT`) with `pem` fails, or `None`
/// when it succeeds or the host does not answer (no TLS verdict).
///
/// # Cancellation safety
/// Cancel safe: it only connects and reads; dropping it closes the connection.
pub async fn handshake_failure(host: &str, pem: &TlsPem) -> Option<String> {
    let config = match client_config(Some(pem)) {
        Ok(config) => config,
        Err(why) => return Some(why),
    };
    match handshake(host, config).await? {
        Err(why) => Some(why),
        Ok(mut stream) => {
            // Under TLS 1.3 the server judges the client's certificate after
            // the client finished: its verdict arrives as an alert on the
            // first read. A server that accepted waits for the client.
            let mut byte = [0u8; 1];
            match tokio::time::timeout(Duration::from_millis(500), stream.read(&mut byte)).await {
                Ok(Err(error)) => Some(error_chain(&error)),
                Ok(Ok(0)) => Some(
                    "the server closed the connection right after the TLS handshake (does it require a client certificate?)"
                        .to_owned(),
                ),
                _ => None,
            }
        }
    }
}

/// Whether `host` answers a TLS handshake (with a certificate this probe
/// does not trust: it trusts none).
///
/// # Cancellation safety
/// Cancel safe, as [`handshake_failure`].
pub async fn speaks_tls(host: &str) -> bool {
    let Ok(config) = client_config(None) else {
        return false;
    };
    matches!(handshake(host, config).await, Some(Err(why)) if why.to_lowercase().contains("certificate"))
}

/// The refusal for a client given no TLS settings when `host` speaks TLS:
/// `service` (`"ZooKeeper"`, `"etcd"`) and the flags to give (`prefix`:
/// `--zk`, `--etcd`), or `None` when `host` does not answer a handshake.
///
/// Every connection attempt without TLS that fails or times out asks this
/// before calling the service unavailable, whichever of the attempt and the
/// probe finished first: a generic "no available hosts" for a TLS port is
/// the refusal a first TLS set-up needs least.
///
/// # Cancellation safety
/// Cancel safe: a dropped probe only closes its own connection.
pub async fn tls_without_settings(service: &str, host: &str, prefix: &str) -> Option<BackendError> {
    speaks_tls(host).await.then(|| {
        BackendError::Refused(format!(
            "{service} at {host} speaks TLS on that port, and no TLS is configured: give {prefix}-tls-ca FILE (and {prefix}-tls-cert FILE and {prefix}-tls-key FILE if it requires a client certificate)"
        ))
    })
}

/// A client configuration trusting `pem`'s CA (none without it) with its
/// client certificate.
fn client_config(pem: Option<&TlsPem>) -> Result<ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = RootCertStore::empty();
    if let Some(pem) = pem {
        for cert in CertificateDer::pem_slice_iter(pem.ca.as_bytes()) {
            let cert = cert.map_err(|e| format!("the CA file: {e}"))?;
            roots.add(cert).map_err(|e| format!("the CA file: {e}"))?;
        }
    }
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots);
    match pem.and_then(|p| p.identity.as_ref()) {
        None => Ok(builder.with_no_client_auth()),
        Some((cert, key)) => {
            let chain = CertificateDer::pem_slice_iter(cert.as_bytes())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("the client certificate: {e}"))?;
            let key = PrivateKeyDer::from_pem_slice(key.expose().as_bytes())
                .map_err(|e| format!("the client key: {e}"))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| format!("the client certificate and key: {e}"))
        }
    }
}

/// Connects and shakes hands: `None` when the host cannot be reached or
/// does not answer in time.
async fn handshake(
    host: &str,
    config: ClientConfig,
) -> Option<Result<tokio_rustls::client::TlsStream<TcpStream>, String>> {
    let name = host.rsplit_once(':').map_or(host, |(name, _)| name);
    let name = name.trim_start_matches('[').trim_end_matches(']');
    let server_name = ServerName::try_from(name.to_owned()).ok()?;
    let tcp = tokio::time::timeout(STEP, TcpStream::connect(host))
        .await
        .ok()?
        .ok()?;
    let connector = TlsConnector::from(Arc::new(config));
    match tokio::time::timeout(STEP, connector.connect(server_name, tcp)).await {
        Err(_) => None,
        Ok(result) => Some(result.map_err(|e| error_chain(&e))),
    }
}
