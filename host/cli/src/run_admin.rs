//! `wardlock run --admin ADDR`: a small admin listener beside the
//! instances, for as long as they run: the locks page and its API
//! (`/locks`, `/api/locks`, `/api/locks/events`) and the health endpoints —
//! the admin code serve uses too (`admin`), without serve's metrics.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use tokio::sync::watch;
use wardlock_host::backend::LockBackend;
use wardlock_host::secret::Secret;

use crate::admin::{self, AdminState};
use wardlock_host::locks::LockTable;

/// The admin listener of `wardlock run`.
#[derive(Debug, Args)]
pub struct RunAdminArgs {
    /// Address to serve the locks page (/locks, /api/locks) and /readyz on
    /// while the instances run: IP:PORT, or a PORT alone for 127.0.0.1:PORT
    /// (port 0: any free port, printed on stderr) [default: none].
    #[arg(long, value_name = "ADDR", value_parser = admin::parse_addr)]
    pub admin: Option<SocketAddr>,

    /// A file holding a bearer token the admin endpoints then require
    /// (`Authorization: Bearer TOKEN`, or `?token=TOKEN` on the locks page).
    #[arg(long, value_name = "FILE", requires = "admin")]
    pub admin_token_file: Option<PathBuf>,
}

/// The running listener; dropping it stops it and closes its connections.
pub(crate) struct AdminListener {
    stop: watch::Sender<bool>,
}

impl Drop for AdminListener {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

/// Starts the listener `args` ask for (none without `--admin`), over the
/// host's `table` and `backend`; prints its address on stderr (the port
/// when 0 was asked for).
///
/// # Errors
/// The token file cannot be read or the address cannot be bound.
pub(crate) async fn start(
    args: &RunAdminArgs,
    backend: Arc<dyn LockBackend>,
    table: LockTable,
) -> anyhow::Result<Option<AdminListener>> {
    let Some(addr) = args.admin else {
        return Ok(None);
    };
    let token = match &args.admin_token_file {
        Some(file) => {
            Some(Secret::from_file(file).map_err(|e| anyhow::anyhow!("--admin-token-file: {e}"))?)
        }
        None => None,
    };
    if !addr.ip().is_loopback() && token.is_none() {
        tracing::warn!(
            "the admin endpoints on {addr} answer anyone who reaches that address; bind them to loopback or give --admin-token-file"
        );
    }
    let listener = admin::bind(addr).await?;
    let state = AdminState::for_run(BTreeMap::from([("default".to_owned(), backend)]), token)
        .with_locks(table);
    eprintln!(
        "wardlock: admin on http://{} ({})",
        listener.local_addr()?,
        state.endpoints()
    );
    let (stop, stopped) = watch::channel(false);
    tokio::spawn(admin::serve(listener, state, stopped));
    Ok(Some(AdminListener { stop }))
}
