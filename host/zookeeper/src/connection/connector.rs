//! How this host opens a ZooKeeper session: timeouts, digest credentials,
//! TLS and SASL into the client's connector, and a failed connection into an
//! error that names its cause and the flag to fix.

use std::time::Duration;

use zookeeper_client::{Client, Connector, Error as ZkError, SaslOptions, SessionInfo, TlsOptions};

use crate::config::ZooKeeperConfig;
use wardlock_backend::BackendError;
use wardlock_backend::tls::{error_chain, install_crypto_provider, setting, tls_flags_hint};
use wardlock_backend::tls_probe::{handshake_failure, tls_without_settings};

/// Connects one session as `config` says, giving up after the session
/// timeout.
///
/// # Errors
/// [`BackendError::InvalidConfig`] for unreadable TLS files;
/// [`BackendError::Refused`] for a refusal retrying cannot fix (see
/// [`connect_error`]); otherwise `Unavailable`.
///
/// # Cancellation safety
/// Cancel safe: a dropped attempt leaves no session.
pub(super) async fn connect(config: &ZooKeeperConfig) -> Result<Client, BackendError> {
    let mut lost_logins = 0;
    loop {
        match connect_once(config).await? {
            Tried::Connected(client) => return Ok(client),
            // A server that refuses a SASL login answers `AuthFailed` and
            // closes the connection; the client sometimes reads the close
            // first and reports the hosts unavailable. Asking again (twice
            // at most) gets the answer itself, so the refusal names the
            // login flags rather than the network.
            Tried::Said(error)
                if config.sasl.is_some()
                    && matches!(error, ZkError::NoHosts | ZkError::ConnectionLoss)
                    && lost_logins < 2 =>
            {
                lost_logins += 1;
                tracing::debug!(%error, "the connection closed during the SASL login: asking again");
            }
            Tried::Said(error) => return Err(diagnose(config, Some(&error)).await),
            Tried::TimedOut => return Err(diagnose(config, None).await),
        }
    }
}

/// What one try of [`connect`] ended with.
enum Tried {
    Connected(Client),
    /// The client gave up, saying why.
    Said(ZkError),
    /// The session timeout passed.
    TimedOut,
}

/// One try of [`connect`], bounded by the session timeout.
///
/// # Errors
/// `InvalidConfig` for unreadable TLS files; `Refused` for a TLS port given
/// no TLS settings.
async fn connect_once(config: &ZooKeeperConfig) -> Result<Tried, BackendError> {
    let attempt = tokio::time::timeout(config.session_timeout, start(connector(config)?, config));
    let outcome = if config.tls.is_none() {
        // A plaintext client at a TLS port the server keeps silent on would
        // wait out the session timeout: notice the TLS within a second or
        // two instead. (One that closes at once is asked in `diagnose`.)
        tokio::select! {
            outcome = attempt => outcome,
            refusal = tls_port(first_host(&config.hosts)) => return Err(refusal),
        }
    } else {
        attempt.await
    };
    Ok(match outcome {
        Ok(Ok(client)) => Tried::Connected(client),
        Ok(Err(error)) => Tried::Said(error),
        Err(_) => Tried::TimedOut,
    })
}

/// Attaches to `session` again (its id and password), as `config` says,
/// giving up after the session timeout: how a session this host gave up on
/// is closed once the server answers again (see `left_behind`).
///
/// # Errors
/// What the client said: `SessionExpired` when the server no longer knows
/// the session.
///
/// # Cancellation safety
/// Cancel safe: a dropped attempt leaves the session as it was.
pub(super) async fn reattach(
    config: &ZooKeeperConfig,
    session: SessionInfo,
) -> Result<Client, String> {
    let connector = connector(config)
        .map_err(|e| e.to_string())?
        .with_session(session);
    let attempt = start(connector, config);
    match tokio::time::timeout(config.session_timeout, attempt).await {
        Ok(Ok(client)) => Ok(client),
        Ok(Err(error)) => Err(error.to_string()),
        Err(_) => Err(format!("no answer within {:?}", config.session_timeout)),
    }
}

/// `connector` started on the configured hosts, over TLS when configured.
async fn start(connector: Connector, config: &ZooKeeperConfig) -> Result<Client, ZkError> {
    if config.tls.is_some() {
        connector.secure_connect(&config.hosts).await
    } else {
        connector.connect(&config.hosts).await
    }
}

/// Why connecting failed (`error`: what the client said; `None`: the
/// session timeout passed): a handshake of our own tells a certificate
/// problem (TLS configured) or a TLS port (none configured) from an
/// unreachable ensemble.
async fn diagnose(config: &ZooKeeperConfig, error: Option<&ZkError>) -> BackendError {
    if config.tls.is_none()
        && let Some(refusal) =
            tls_without_settings("ZooKeeper", first_host(&config.hosts), "--zk").await
    {
        return refusal;
    }
    if let Some(tls) = &config.tls
        && let Ok(pem) = tls.read()
        && let Some(cause) = handshake_failure(first_host(&config.hosts), &pem).await
    {
        return BackendError::Refused(format!(
            "TLS to ZooKeeper at {} failed ({cause}): {}",
            config.hosts,
            tls_flags_hint("--zk-tls")
        ));
    }
    match error {
        Some(error) => connect_error(config, error),
        None => BackendError::Unavailable(format!(
            "cannot connect to ZooKeeper at {}: no session within {:?}",
            config.hosts, config.session_timeout
        )),
    }
}

/// The refusal for a TLS port given no TLS settings, once `host` is seen to
/// speak TLS, a second after it is called (a plaintext session is usually up
/// by then); never otherwise.
async fn tls_port(host: &str) -> BackendError {
    tokio::time::sleep(Duration::from_secs(1)).await;
    match tls_without_settings("ZooKeeper", host, "--zk").await {
        Some(refusal) => refusal,
        None => std::future::pending().await,
    }
}

/// The first `HOST:PORT` of a connect string (`HOST:PORT[,...][/chroot]`,
/// hosts possibly prefixed `tcp://` or `tcp+tls://`).
fn first_host(hosts: &str) -> &str {
    let first = hosts.split(',').next().unwrap_or_default().trim();
    let first = (first.strip_prefix("tcp://"))
        .or_else(|| first.strip_prefix("tcp+tls://"))
        .unwrap_or(first);
    first.split('/').next().unwrap_or(first)
}

fn connector(config: &ZooKeeperConfig) -> Result<Connector, BackendError> {
    let mut connector = Client::connector()
        .with_session_timeout(config.session_timeout)
        .with_connection_timeout(config.session_timeout.min(Duration::from_secs(5)));
    if let Some(credentials) = &config.digest_auth {
        connector = connector.with_auth("digest", credentials.expose().as_bytes());
    }
    if let Some(tls) = &config.tls {
        install_crypto_provider();
        let pem = tls.read()?;
        let bad = |which: &str, e: ZkError| {
            BackendError::InvalidConfig(format!("{}: {e}", setting(&tls.flag, which)))
        };
        let mut options = TlsOptions::new()
            .with_pem_ca(&pem.ca)
            .map_err(|e| bad("ca", e))?;
        if let Some((cert, key)) = &pem.identity {
            options = options
                .with_pem_identity(cert, key.expose())
                .map_err(|e| bad("cert", e))?;
        }
        connector = connector.with_tls(options);
    }
    if let Some(sasl) = &config.sasl {
        connector = connector.with_sasl(SaslOptions::digest_md5(
            sasl.user.clone(),
            sasl.password.expose().to_owned(),
        ));
    }
    if config.tls.is_some() || config.sasl.is_some() {
        // A refused handshake or login is reported with its cause after one
        // round of the hosts, not retried silently until the session timeout.
        connector = connector.with_fail_eagerly();
    }
    Ok(connector)
}

/// What the client's error means: a refused login (a wrong SASL user or
/// password) is [`BackendError::Refused`], one line naming the flags to
/// check; anything else is `Unavailable`.
pub(super) fn connect_error(config: &ZooKeeperConfig, error: &ZkError) -> BackendError {
    let hosts = &config.hosts;
    let chain = error_chain(error);
    let lower = chain.to_lowercase();
    if matches!(error, ZkError::AuthFailed) && config.sasl.is_none() {
        return BackendError::Refused(format!(
            "ZooKeeper at {hosts} requires a SASL login ({chain}): give --zk-sasl-user USER --zk-sasl-password-file FILE"
        ));
    }
    if matches!(error, ZkError::AuthFailed) || lower.contains("sasl") {
        let user = config.sasl.as_ref().map_or("", |c| c.user.as_str());
        return BackendError::Refused(format!(
            "ZooKeeper at {hosts} refused the login of SASL user {user:?} ({chain}): check --zk-sasl-user and --zk-sasl-password-file"
        ));
    }
    BackendError::Unavailable(format!("cannot connect to ZooKeeper at {hosts}: {chain}"))
}
