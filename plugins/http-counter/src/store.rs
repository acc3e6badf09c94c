//! Where counter values live: files under `/data`, or an HTTP store that checks
//! fencing tokens.

use wasip2::http::outgoing_handler;
use wasip2::http::types::{Fields, Method, OutgoingBody, OutgoingRequest, Scheme};
use wasip2::io::streams::StreamError;

/// The configured store.
pub(crate) enum Store {
    /// `/data/<name>`.
    Files,
    /// `http://<authority>/<name>` (from `COUNTER_STORE`).
    Http { authority: String },
}

impl Store {
    /// `COUNTER_STORE=http://HOST:PORT` selects the HTTP store; files otherwise.
    pub(crate) fn from_env() -> Self {
        match std::env::var("COUNTER_STORE") {
            Ok(url) => Store::Http {
                authority: url
                    .trim_start_matches("http://")
                    .trim_end_matches('/')
                    .to_owned(),
            },
            Err(_) => Store::Files,
        }
    }

    /// The value stored for `name` (0 when there is none).
    pub(crate) fn read(&self, name: &str) -> Result<u64, String> {
        let text = match self {
            Store::Files => match std::fs::read_to_string(file(name)) {
                Ok(text) => text,
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(0),
                Err(error) => return Err(format!("cannot read {}: {error}", file(name))),
            },
            Store::Http { authority } => {
                let (status, text) = send(authority, Method::Get, name, None, None)?;
                match status {
                    200 => text,
                    404 => return Ok(0),
                    _ => {
                        return Err(format!(
                            "the store answered {status} to GET /{name}: {}",
                            text.trim()
                        ));
                    }
                }
            }
        };
        let text = text.trim();
        if text.is_empty() {
            return Ok(0);
        }
        text.parse()
            .map_err(|_| format!("the stored value of {name} is not a number: {text:?}"))
    }

    /// Stores `value` for `name`, presenting the fencing `token`.
    pub(crate) fn write(&self, name: &str, value: u64, token: u64) -> Result<(), String> {
        match self {
            Store::Files => {
                let path = file(name);
                if let Some(parent) = std::path::Path::new(&path).parent() {
                    std::fs::create_dir_all(parent)
                        .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
                }
                std::fs::write(&path, value.to_string())
                    .map_err(|e| format!("cannot write {path}: {e}"))
            }
            Store::Http { authority } => {
                let (status, text) = send(
                    authority,
                    Method::Put,
                    name,
                    Some(token),
                    Some(value.to_string()),
                )?;
                match status {
                    200 | 204 => Ok(()),
                    _ => Err(format!(
                        "the store refused the write ({status}): {}",
                        text.trim()
                    )),
                }
            }
        }
    }
}

fn file(name: &str) -> String {
    format!("/data/{name}")
}

/// One HTTP exchange with the store; returns the status and body text.
fn send(
    authority: &str,
    method: Method,
    name: &str,
    token: Option<u64>,
    body: Option<String>,
) -> Result<(u16, String), String> {
    let headers = Fields::new();
    if let Some(token) = token {
        let _ = headers.set("fencing-token", &[token.to_string().into_bytes()]);
    }
    // A plain length, not chunked framing: simple stores (Python's http.server)
    // read exactly content-length bytes.
    let length = body.as_ref().map_or(0, String::len);
    let _ = headers.set("content-length", &[length.to_string().into_bytes()]);
    let request = OutgoingRequest::new(headers);
    let _ = request.set_method(&method);
    let _ = request.set_scheme(Some(&Scheme::Http));
    let _ = request.set_authority(Some(authority));
    let _ = request.set_path_with_query(Some(&format!("/{name}")));
    let outgoing = request
        .body()
        .map_err(|()| "cannot open the request body".to_owned())?;
    let future = outgoing_handler::handle(request, None)
        .map_err(|code| format!("cannot reach the store at {authority}: {code:?}"))?;
    if let Some(text) = body {
        let stream = outgoing
            .write()
            .map_err(|()| "cannot write the request body".to_owned())?;
        stream
            .blocking_write_and_flush(text.as_bytes())
            .map_err(|e| format!("cannot send the request body: {e:?}"))?;
    }
    OutgoingBody::finish(outgoing, None)
        .map_err(|code| format!("cannot finish the request: {code:?}"))?;
    future.subscribe().block();
    let response = match future.get() {
        Some(Ok(Ok(response))) => response,
        Some(Ok(Err(code))) => return Err(format!("the store request failed: {code:?}")),
        Some(Err(())) | None => return Err("the store request vanished".to_owned()),
    };
    let status = response.status();
    let incoming = response
        .consume()
        .map_err(|()| "cannot read the store's answer".to_owned())?;
    let stream = incoming
        .stream()
        .map_err(|()| "cannot read the store's answer".to_owned())?;
    let mut text = Vec::new();
    loop {
        match stream.blocking_read(64 * 1024) {
            Ok(chunk) => text.extend_from_slice(&chunk),
            Err(StreamError::Closed) => break,
            Err(StreamError::LastOperationFailed(error)) => {
                return Err(format!(
                    "reading the store's answer failed: {}",
                    error.to_debug_string()
                ));
            }
        }
    }
    Ok((status, String::from_utf8_lossy(&text).into_owned()))
}
