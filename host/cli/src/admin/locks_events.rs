//! `GET /api/locks/events[?prefix=P]`: server-sent events for the live page.
//! One `data:` event with the whole view (as `/api/locks` answers) at
//! connect and after every change of the table, coalesced to at most
//! [`EVENTS_PER_SECOND`] so a burst of grants costs the browser a few
//! renders, not thousands; a comment line every [`KEEP_ALIVE`] keeps
//! proxies from closing an idle stream and finds clients that left.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use http_body_util::BodyExt;
use hyper::body::{Body, Bytes, Frame};
use tokio::sync::mpsc;

use super::AdminBody;
use super::locks_api::LocksSource;

/// The most events a stream sends per second.
const EVENTS_PER_SECOND: u32 = 10;

/// How long a stream may stay silent before a keep-alive comment.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The response body of a stream: what its task sends, until the task ends
/// or the client hangs up (hyper drops the body, the task's next send fails
/// and it ends).
struct ChannelBody(mpsc::Receiver<Bytes>);

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0
            .poll_recv(cx)
            .map(|chunk| chunk.map(|bytes| Ok(Frame::data(bytes))))
    }
}

/// Starts a stream of `source`'s view of locks under `prefix`: its body,
/// fed by a task that ends when the client hangs up.
pub(crate) fn stream(source: LocksSource, prefix: Option<String>) -> hyper::Response<AdminBody> {
    let (tx, rx) = mpsc::channel(4);
    tokio::spawn(feed(source, prefix, tx));
    let mut response = hyper::Response::new(ChannelBody(rx).boxed_unsync());
    let headers = response.headers_mut();
    headers.insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(
        hyper::header::CACHE_CONTROL,
        hyper::header::HeaderValue::from_static("no-store"),
    );
    response
}

/// Sends the view now and after each change, at most
/// [`EVENTS_PER_SECOND`] times a second, with keep-alives between.
async fn feed(source: LocksSource, prefix: Option<String>, tx: mpsc::Sender<Bytes>) {
    let mut changes = source.table().changes();
    // Browsers reconnect after this many milliseconds if the stream breaks.
    if tx
        .send(Bytes::from_static(b"retry: 1000\n\n"))
        .await
        .is_err()
    {
        return;
    }
    let gap = Duration::from_secs(1) / EVENTS_PER_SECOND;
    loop {
        // Seen before reading, so a change during the read is not lost.
        changes.borrow_and_update();
        let view = source.view(prefix.as_deref()).await;
        let event = match serde_json::to_string(&view) {
            Ok(json) => format!("data: {json}\n\n"),
            Err(error) => format!(": cannot encode the view: {error}\n\n"),
        };
        if tx.send(Bytes::from(event)).await.is_err() {
            return;
        }
        tokio::time::sleep(gap).await;
        loop {
            tokio::select! {
                changed = changes.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    break;
                }
                () = tx.closed() => return,
                () = tokio::time::sleep(KEEP_ALIVE) => {
                    if tx.send(Bytes::from_static(b": keep-alive\n\n")).await.is_err() {
                        return;
                    }
                }
            }
        }
    }
}
