//! TLS to PostgreSQL: `sslmode=verify-full` (the server's certificate must
//! chain to the given CA and name the host connected to), optionally with a
//! client certificate; or no TLS at all. Built on the workspace's one rustls
//! (`ring`) through tokio-postgres-rustls.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_postgres::config::SslMode;
use tokio_postgres_rustls::MakeRustlsConnect;

use wardlock_backend::BackendError;
use wardlock_backend::tls::{TlsFiles, install_crypto_provider, setting};

/// The connector for `tls` (none: a connector that is never used, with
/// TLS disabled) and the `sslmode` to connect with.
///
/// # Errors
/// `InvalidConfig` naming the file (and its setting) that cannot be read
/// or parsed.
pub(crate) fn connector(
    tls: Option<&TlsFiles>,
) -> Result<(MakeRustlsConnect, SslMode), BackendError> {
    install_crypto_provider();
    let Some(files) = tls else {
        let config = rustls::ClientConfig::builder()
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth();
        return Ok((MakeRustlsConnect::new(config), SslMode::Disable));
    };
    let pem = files.read()?;
    let invalid = |which: &str, why: String| {
        BackendError::InvalidConfig(format!("{}: {why}", setting(&files.flag, which)))
    };
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(pem.ca.as_bytes()) {
        let cert = cert.map_err(|e| invalid("ca", format!("not a PEM certificate: {e}")))?;
        roots
            .add(cert)
            .map_err(|e| invalid("ca", format!("not a usable CA certificate: {e}")))?;
    }
    if roots.is_empty() {
        return Err(invalid("ca", "holds no certificate".into()));
    }
    let builder = rustls::ClientConfig::builder().with_root_certificates(roots);
    let config = match pem.identity {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => {
            let chain: Vec<CertificateDer<'static>> =
                CertificateDer::pem_slice_iter(cert.as_bytes())
                    .collect::<Result<_, _>>()
                    .map_err(|e| invalid("cert", format!("not a PEM certificate: {e}")))?;
            let key = PrivateKeyDer::from_pem_slice(key.expose().as_bytes())
                .map_err(|e| invalid("key", format!("not a PEM private key: {e}")))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| invalid("cert", format!("does not match its key: {e}")))?
        }
    };
    Ok((MakeRustlsConnect::new(config), SslMode::Require))
}
