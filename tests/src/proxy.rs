//! A loopback TCP proxy the test controls, to cut connections at chosen moments.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// Forwards `127.0.0.1:<port>` to a target. [`Proxy::swallow_replies`] stops
/// passing server→client bytes (requests still reach the server);
/// [`Proxy::partition`] stops passing bytes either way, on open and new
/// connections alike, without closing anything; [`Proxy::cut`] closes every open
/// connection; [`Proxy::delay_replies`] holds every server→client chunk back
/// for a while (a slow server); [`Proxy::stall`] holds bytes both ways and
/// loses none (a link that stalls, then recovers).
pub struct Proxy {
    port: u16,
    stalled: watch::Sender<bool>,
    swallow: Arc<AtomicBool>,
    partitioned: Arc<AtomicBool>,
    delay_ms: Arc<AtomicU64>,
    generation: watch::Sender<u64>,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    /// Starts forwarding to `target` (`HOST:PORT`).
    pub async fn start(target: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let port = listener.local_addr().expect("proxy addr").port();
        let swallow = Arc::new(AtomicBool::new(false));
        let partitioned = Arc::new(AtomicBool::new(false));
        let delay_ms = Arc::new(AtomicU64::new(0));
        let (generation, _) = watch::channel(0u64);
        let (stalled, _) = watch::channel(false);
        let task = tokio::spawn({
            let stalled = stalled.clone();
            let swallow = swallow.clone();
            let partitioned = partitioned.clone();
            let delay_ms = delay_ms.clone();
            let generation = generation.clone();
            async move {
                while let Ok((client, _)) = listener.accept().await {
                    let Ok(server) = TcpStream::connect(&target).await else {
                        continue;
                    };
                    tokio::spawn(pipe(
                        client,
                        server,
                        Flags {
                            swallow: swallow.clone(),
                            partitioned: partitioned.clone(),
                            delay_ms: delay_ms.clone(),
                            stalled: stalled.subscribe(),
                        },
                        generation.subscribe(),
                    ));
                }
            }
        });
        Proxy {
            port,
            stalled,
            swallow,
            partitioned,
            delay_ms,
            generation,
            task,
        }
    }

    /// `127.0.0.1:PORT` of the proxy.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Stops (or resumes) passing server replies to clients.
    pub fn swallow_replies(&self, swallow: bool) {
        self.swallow.store(swallow, Ordering::SeqCst);
    }

    /// Stops (or resumes) passing bytes in both directions; connections stay open
    /// and new ones are accepted, as in a network partition.
    pub fn partition(&self, partitioned: bool) {
        self.partitioned.store(partitioned, Ordering::SeqCst);
    }

    /// Stops (or resumes) passing bytes in both directions, losing none: what
    /// arrives meanwhile waits in the proxy and passes, in order, once it
    /// resumes (a request sent during a stall reaches the server after it).
    pub fn stall(&self, stalled: bool) {
        self.stalled.send_replace(stalled);
    }

    /// Holds every server→client chunk back for `delay` before passing it on
    /// (zero: none), on open and new connections alike.
    pub fn delay_replies(&self, delay: Duration) {
        let ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
        self.delay_ms.store(ms, Ordering::SeqCst);
    }

    /// Closes every connection open now.
    pub fn cut(&self) {
        self.generation.send_modify(|g| *g += 1);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
        self.cut();
    }
}

/// What a connection currently lets through.
struct Flags {
    swallow: Arc<AtomicBool>,
    partitioned: Arc<AtomicBool>,
    delay_ms: Arc<AtomicU64>,
    stalled: watch::Receiver<bool>,
}

/// Returns once the proxy is not stalled (at once when it is not).
async fn unstalled(stalled: &mut watch::Receiver<bool>) {
    // An error: the proxy is gone, and with it the stall.
    let _ = stalled.wait_for(|stalled| !stalled).await;
}

async fn pipe(client: TcpStream, server: TcpStream, flags: Flags, mut cut: watch::Receiver<u64>) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let mut upstream_stall = flags.stalled.clone();
    let mut downstream_stall = flags.stalled.clone();
    let upstream = async {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match client_read.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    if flags.partitioned.load(Ordering::SeqCst) {
                        continue;
                    }
                    unstalled(&mut upstream_stall).await;
                    if server_write.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                }
            }
        }
    };
    let downstream = async {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match server_read.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    if flags.swallow.load(Ordering::SeqCst)
                        || flags.partitioned.load(Ordering::SeqCst)
                    {
                        continue;
                    }
                    unstalled(&mut downstream_stall).await;
                    let delay = flags.delay_ms.load(Ordering::SeqCst);
                    if delay > 0 {
                        // The fault itself: a server slow to answer.
                        tokio::time::sleep(Duration::from_millis(delay)).await;
                    }
                    if client_write.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                }
            }
        }
    };
    tokio::select! {
        _ = upstream => {}
        _ = downstream => {}
        _ = cut.changed() => {}
    }
}
