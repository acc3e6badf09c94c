//! How this host connects to etcd: TLS and user settings into the client's
//! options, and a failed connection into an error that names its cause and
//! the flag to fix.

use etcd_client::{Certificate, ConnectOptions, Error as EtcdError, Identity, TlsOptions};

use super::EtcdConfig;
use wardlock_backend::BackendError;
use wardlock_backend::tls::{error_chain, install_crypto_provider, tls_flags_hint};
use wardlock_backend::tls_probe::{handshake_failure, tls_without_settings};

/// The client options `config` describes.
///
/// # Errors
/// [`BackendError::InvalidConfig`] when a TLS file cannot be read.
pub(super) fn connect_options(config: &EtcdConfig) -> Result<ConnectOptions, BackendError> {
    let mut options = ConnectOptions::new()
        .with_connect_timeout(config.connect_timeout)
        .with_keep_alive(config.connect_timeout, config.connect_timeout);
    if let Some(tls) = &config.tls {
        install_crypto_provider();
        let pem = tls.read()?;
        let mut settings = TlsOptions::new().ca_certificate(Certificate::from_pem(pem.ca));
        if let Some((cert, key)) = pem.identity {
            settings = settings.identity(Identity::from_pem(cert, key.expose()));
        }
        options = options.with_tls(settings);
    }
    if let Some(credentials) = &config.credentials {
        options = options.with_user(
            credentials.user.clone(),
            credentials.password.expose().to_owned(),
        );
    }
    Ok(options)
}

/// What the client's failed connect means: a wrong or missing user is
/// [`BackendError::Refused`], one line naming the flags to check; anything
/// else is `Unavailable`, which [`explain`] then tells apart from a TLS
/// problem with a handshake of its own.
pub(super) fn connect_error(config: &EtcdConfig, error: &EtcdError) -> BackendError {
    let at = config.endpoints.join(",");
    let chain = error_chain(error);
    let lower = chain.to_lowercase();
    if lower.contains("authentication failed") || lower.contains("invalid user id or password") {
        let user = config.credentials.as_ref().map_or("", |c| c.user.as_str());
        return BackendError::Refused(format!(
            "etcd at {at} refused user {user:?}: wrong user or password; check --etcd-user and --etcd-password-file"
        ));
    }
    if lower.contains("user name is empty") || lower.contains("user name not found") {
        return BackendError::Refused(format!(
            "etcd at {at} requires a user: give --etcd-user USER --etcd-password-file FILE ({chain})"
        ));
    }
    BackendError::Unavailable(format!("cannot use etcd endpoints {at}: {chain}"))
}

/// `error`, or, when it is an unreachable cluster, the refusal a TLS
/// handshake of our own finds at the first endpoint: a certificate problem
/// (the client often sees only "transport error" or "connection closed"),
/// or a TLS port given no TLS settings.
pub(super) async fn explain(config: &EtcdConfig, error: BackendError) -> BackendError {
    let BackendError::Unavailable(_) = &error else {
        return error;
    };
    let Some(first) = config.endpoints.first() else {
        return error;
    };
    let host = first.split("://").last().unwrap_or(first);
    match &config.tls {
        Some(tls) => {
            let Ok(pem) = tls.read() else { return error };
            match handshake_failure(host, &pem).await {
                Some(cause) => BackendError::Refused(format!(
                    "TLS to etcd at {host} failed ({cause}): {}",
                    tls_flags_hint("--etcd-tls")
                )),
                None => error,
            }
        }
        None => tls_without_settings("etcd", host, "--etcd")
            .await
            .unwrap_or(error),
    }
}
