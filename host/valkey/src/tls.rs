//! TLS to Valkey/Redis: a `rediss://` URL verifies the server's certificate
//! (against `--redis-tls-ca`, or the system's CA certificates without it)
//! and its name, and may present a client certificate. A connection that
//! fails is asked why with a handshake of wardlock's own, so an operator is
//! told "TLS failed, and this is the file to check" instead of "could not
//! connect".

use redis::{Client, ClientTlsConfig, ConnectionAddr, ConnectionInfo, TlsCertificates};
use wardlock_backend::BackendError;
use wardlock_backend::tls::{install_crypto_provider, tls_flags_hint};
use wardlock_backend::tls_probe::{handshake_failure, speaks_tls};

use crate::config::ValkeyConfig;

/// The flag family of the TLS files (`--redis-tls-ca`, …).
pub(crate) const TLS_FLAG: &str = "--redis-tls";

/// A client for `info`, with `config`'s TLS files when the URL is
/// `rediss://`.
///
/// # Errors
/// `InvalidConfig` naming the URL or the file that cannot be used.
pub(crate) fn client(info: ConnectionInfo, config: &ValkeyConfig) -> Result<Client, BackendError> {
    let invalid =
        |e: redis::RedisError| BackendError::InvalidConfig(format!("--redis {}: {e}", config.url));
    if !config.uses_tls() {
        return Client::open(info).map_err(invalid);
    }
    install_crypto_provider();
    let Some(files) = &config.tls else {
        // The system's CA certificates (rustls-native-certs).
        return Client::open(info).map_err(invalid);
    };
    let pem = files.read()?;
    let certificates = TlsCertificates {
        client_tls: pem.identity.map(|(cert, key)| ClientTlsConfig {
            client_cert: cert.into_bytes(),
            client_key: key.expose().as_bytes().to_vec(),
        }),
        root_cert: Some(pem.ca.into_bytes()),
    };
    Client::build_with_tls(info, certificates).map_err(|e| {
        BackendError::InvalidConfig(format!(
            "{TLS_FLAG}-ca / {TLS_FLAG}-cert / {TLS_FLAG}-key: {e}"
        ))
    })
}

/// `HOST:PORT` of a TCP address (`None` for a Unix socket).
fn host_port(client: &Client) -> Option<String> {
    match client.get_connection_info().addr() {
        ConnectionAddr::Tcp(host, port) | ConnectionAddr::TcpTls { host, port, .. } => {
            Some(format!("{host}:{port}"))
        }
        _ => None,
    }
}

/// Why a connection that failed with `error` failed, when TLS explains it:
/// a handshake this host's files cannot complete (the wrong CA, a missing
/// client certificate), or a TLS port reached with a `redis://` URL.
/// Otherwise `error` itself.
///
/// # Cancellation safety
/// Cancel safe: the probe only closes its own connection.
pub(crate) async fn explain(
    config: &ValkeyConfig,
    client: &Client,
    error: BackendError,
) -> BackendError {
    let Some(host) = host_port(client) else {
        return error;
    };
    if !config.uses_tls() {
        return if speaks_tls(&host).await {
            BackendError::Refused(format!(
                "Valkey/Redis at {host} speaks TLS on that port, and the URL is plaintext: write rediss:// (and give {TLS_FLAG}-ca FILE unless the system trusts its CA; {TLS_FLAG}-cert and {TLS_FLAG}-key if it requires a client certificate)"
            ))
        } else {
            error
        };
    }
    let Some(files) = &config.tls else {
        return error;
    };
    let Ok(pem) = files.read() else {
        return error;
    };
    match handshake_failure(&host, &pem).await {
        Some(cause) => BackendError::Refused(format!(
            "TLS to Valkey/Redis at {host} failed ({cause}): {}",
            tls_flags_hint(TLS_FLAG)
        )),
        None => error,
    }
}
