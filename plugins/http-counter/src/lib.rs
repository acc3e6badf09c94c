//! `http-counter`: the example guest for `wardlock serve`.
//!
//! `POST /<name>[?hold-ms=N][&lock=none]` takes the exclusive lock `<name>`, reads the
//! integer stored for `<name>` (0 if none), optionally sleeps `hold-ms`
//! milliseconds while holding the lock, stores the value + 1 and answers 200
//! with the new value as the body and the grant's fencing token in the
//! `fencing-token` header. Bad paths or lock names get 400 with the lock
//! error's text. `lock=none` does the same work without the lock (the
//! baseline of the serve benchmark).
//!
//! Where the value lives:
//! - by default the file `/data/<name>` (give the host directory with
//!   `wardlock serve --dir HOST::/data`);
//! - with the environment variable `COUNTER_STORE=http://HOST:PORT`, an HTTP
//!   store (`plugins/http-counter/fenced_store.py`): `GET /<name>` reads and
//!   `PUT /<name>` writes with the fencing token in a `fencing-token` header;
//!   the store refuses a token not above the last it accepted, so a holder
//!   whose lock was taken back can never overwrite a newer value (allow the
//!   store with `--allow-outbound HOST:PORT`).

// Built for the host target too (`cargo build --workspace`), where nothing is
// exported and so nothing is used.
#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

mod request;
mod store;

use std::time::Duration;

use wardlock_guest::{Error as LockError, Lock};
use wasip2::http::types::{
    Fields, IncomingRequest, Method, OutgoingBody, OutgoingResponse, ResponseOutparam,
};

use request::{Counter, parse};

struct HttpCounter;

// Exported only when built for wasm: on the host target (`cargo build --workspace`)
// the export names are not valid native symbols.
#[cfg(target_arch = "wasm32")]
wasip2::http::proxy::export!(HttpCounter);

impl wasip2::exports::http::incoming_handler::Guest for HttpCounter {
    fn handle(request: IncomingRequest, out: ResponseOutparam) {
        let reply = match request.method() {
            Method::Post => match request.path_with_query() {
                Some(target) => match parse(&target) {
                    Ok(counter) => increment(&counter),
                    Err(why) => Reply::text(400, why),
                },
                None => Reply::text(400, "the request has no path".to_owned()),
            },
            _ => Reply::text(405, "use POST /<name>[?hold-ms=N]".to_owned()),
        };
        reply.send(out);
    }
}

/// What to answer.
struct Reply {
    status: u16,
    body: String,
    token: Option<u64>,
    /// Seconds after which a retry may succeed (`Retry-After`).
    retry_after: Option<u32>,
}

impl Reply {
    fn text(status: u16, body: String) -> Self {
        Reply {
            status,
            body,
            token: None,
            retry_after: None,
        }
    }

    fn send(self, out: ResponseOutparam) {
        let headers = Fields::new();
        let _ = headers.set("content-type", &[b"text/plain; charset=utf-8".to_vec()]);
        if let Some(token) = self.token {
            let _ = headers.set("fencing-token", &[token.to_string().into_bytes()]);
        }
        if let Some(secs) = self.retry_after {
            let _ = headers.set("retry-after", &[secs.to_string().into_bytes()]);
        }
        let response = OutgoingResponse::new(headers);
        let _ = response.set_status_code(self.status);
        let Ok(body) = response.body() else {
            return;
        };
        ResponseOutparam::set(out, Ok(response));
        if let Ok(stream) = body.write() {
            let mut text = self.body.into_bytes();
            text.push(b'\n');
            for chunk in text.chunks(4096) {
                if stream.blocking_write_and_flush(chunk).is_err() {
                    break;
                }
            }
        }
        let _ = OutgoingBody::finish(body, None);
    }
}

/// Increments the counter under its lock; the lock is released before the
/// response is sent, so the next request can go as soon as this one answers.
fn increment(counter: &Counter) -> Reply {
    if counter.unlocked {
        return increment_unlocked(counter);
    }
    let guard = match Lock::exclusive(counter.name.clone()).acquire() {
        Ok(guard) => guard,
        Err(error @ (LockError::InvalidName(_) | LockError::Denied(_))) => {
            return Reply::text(400, error.to_string());
        }
        // The lock service is unreachable: fail fast and say when to retry
        // (the host reconnects in the background).
        Err(error @ LockError::Unavailable(_)) => {
            return Reply {
                retry_after: Some(1),
                ..Reply::text(503, error.to_string())
            };
        }
        Err(error) => return Reply::text(503, error.to_string()),
    };
    let token = guard.fencing_token();
    let store = store::Store::from_env();
    let value = match store.read(&counter.name) {
        Ok(value) => value,
        Err(why) => return Reply::text(500, why),
    };
    if let Some(hold) = counter.hold_ms {
        std::thread::sleep(Duration::from_millis(hold));
    }
    let next = value + 1;
    if let Err(why) = store.write(&counter.name, next, token) {
        return Reply::text(500, why);
    }
    // Released explicitly (not just dropped) so a lock lost meanwhile shows.
    if let Err(error) = guard.release() {
        return Reply::text(500, format!("the lock was lost before release: {error}"));
    }
    Reply {
        token: Some(token),
        ..Reply::text(200, next.to_string())
    }
}

/// The same work without the lock: the baseline `lock=none` measures against.
fn increment_unlocked(counter: &Counter) -> Reply {
    let store = store::Store::from_env();
    let next = match store.read(&counter.name) {
        Ok(value) => value + 1,
        Err(why) => return Reply::text(500, why),
    };
    if let Err(why) = store.write(&counter.name, next, 0) {
        return Reply::text(500, why);
    }
    Reply::text(200, next.to_string())
}
