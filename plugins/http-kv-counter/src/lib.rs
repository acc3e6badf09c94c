//! `http-kv-counter`: a `wasi:http` guest that keeps counters in the
//! standard `wasi:keyvalue` and imports nothing of wardlock, as a Spin HTTP
//! component would. `POST /<key>[?hold-ms=N]` reads the counter `<key>` of
//! bucket `default` (absent: 0), optionally sleeps `hold-ms` milliseconds,
//! writes the value + 1 and answers 200 with it. Requests for one key side
//! by side lose updates, unless the operator declares a lock per key
//! (`wardlock serve --hold 'counters/{path}'`), which also fences the write.
//! A write the fence refuses answers 409 with the store's error.

// Built for the host target too (`cargo build --workspace`), where nothing is
// exported and so nothing is used.
#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

mod keyvalue {
    wit_bindgen::generate!({
        path: "../../wit/keyvalue-0.2.0-draft",
        world: "wasi:keyvalue/imports",
    });
}

use std::time::Duration;

use keyvalue::wasi::keyvalue::store;
use wasip2::http::types::{
    Fields, IncomingRequest, Method, OutgoingBody, OutgoingResponse, ResponseOutparam,
};

struct HttpKvCounter;

#[cfg(target_arch = "wasm32")]
wasip2::http::proxy::export!(HttpKvCounter);

impl wasip2::exports::http::incoming_handler::Guest for HttpKvCounter {
    fn handle(request: IncomingRequest, out: ResponseOutparam) {
        let (status, body) = match (request.method(), request.path_with_query()) {
            (Method::Post, Some(target)) => match parse(&target) {
                Ok((key, hold)) => increment(&key, hold),
                Err(why) => (400, why),
            },
            _ => (405, "use POST /<key>[?hold-ms=N]".to_owned()),
        };
        send(out, status, body);
    }
}

/// The key and the hold of `POST /<key>[?hold-ms=N]`.
fn parse(target: &str) -> Result<(String, Option<Duration>), String> {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let key = path.trim_start_matches('/');
    if key.is_empty() {
        return Err("no key: POST /<key>[?hold-ms=N]".to_owned());
    }
    let hold = match query.strip_prefix("hold-ms=") {
        Some(ms) => Some(Duration::from_millis(
            ms.parse()
                .map_err(|_| format!("hold-ms {ms:?} is not a number"))?,
        )),
        None if query.is_empty() => None,
        None => return Err(format!("unknown query {query:?} (expected hold-ms=N)")),
    };
    Ok((key.to_owned(), hold))
}

fn describe(error: store::Error) -> String {
    match error {
        store::Error::NoSuchStore => "no-such-store".into(),
        store::Error::AccessDenied => "access-denied".into(),
        store::Error::Other(why) => why,
    }
}

/// Reads, waits, writes: the read-modify-write a declared lock keeps whole.
fn increment(key: &str, hold: Option<Duration>) -> (u16, String) {
    let bucket = match store::open("default") {
        Ok(bucket) => bucket,
        Err(error) => return (500, describe(error)),
    };
    let value = match bucket.get(key) {
        Ok(None) => 0,
        Ok(Some(bytes)) => match String::from_utf8_lossy(&bytes).parse::<u64>() {
            Ok(value) => value,
            Err(_) => return (500, format!("{key:?} does not hold a number")),
        },
        Err(error) => return (500, describe(error)),
    };
    if let Some(hold) = hold {
        std::thread::sleep(hold);
    }
    let next = value + 1;
    match bucket.set(key, next.to_string().as_bytes()) {
        Ok(()) => (200, next.to_string()),
        Err(error) => (409, describe(error)),
    }
}

fn send(out: ResponseOutparam, status: u16, body: String) {
    let headers = Fields::new();
    let _ = headers.set("content-type", &[b"text/plain; charset=utf-8".to_vec()]);
    let response = OutgoingResponse::new(headers);
    let _ = response.set_status_code(status);
    let Ok(outgoing) = response.body() else {
        return;
    };
    ResponseOutparam::set(out, Ok(response));
    if let Ok(stream) = outgoing.write() {
        let mut text = body.into_bytes();
        text.push(b'\n');
        for chunk in text.chunks(4096) {
            if stream.blocking_write_and_flush(chunk).is_err() {
                break;
            }
        }
    }
    let _ = OutgoingBody::finish(outgoing, None);
}
