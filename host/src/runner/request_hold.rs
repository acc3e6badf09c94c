//! Declared locks of one request (`wardlock serve`, a plugin's `hold`): the
//! names filled from the request, taken before the guest sees it, within
//! what is left of the request timeout, and their tokens handed to the guest
//! in a request header.

use std::time::Duration;

use hyper::header::{HeaderName, HeaderValue, RETRY_AFTER};

use super::config::RunnerConfig;
use super::declared::{DeclaredHold, HELD_HEADER, resolve};
use super::proxy::{RequestOutcome, ResponseBody, respond};
use crate::backend::BackendError;

/// Why a request does not reach its guest: how it ended, and the answer.
pub(crate) type Refusal = (RequestOutcome, hyper::Response<ResponseBody>);

/// Takes `config.hold` for `request` (none declared: `None`), and adds the
/// tokens to the request in [`HELD_HEADER`].
///
/// # Errors
/// 400 when a placeholder cannot be filled from the request or the name is
/// not a valid lock name (the text names both); 503 with `Retry-After` when a
/// lock is not free within `timeout`, or when the lock service fails.
///
/// # Cancellation safety
/// Cancel safe (see [`DeclaredHold::take`]).
pub(crate) async fn take<B>(
    config: &RunnerConfig,
    owner: &str,
    request: &mut hyper::Request<B>,
    (plugin, number): (&str, u64),
    timeout: Option<Duration>,
) -> Result<Option<DeclaredHold>, Refusal> {
    if config.hold.is_empty() {
        return Ok(None);
    }
    let wanted = resolve(&config.hold, |key| value(request, key, plugin, number));
    let wanted = match wanted {
        Ok(wanted) => wanted,
        Err(why) => {
            let why = format!("a declared lock of {plugin}: {why}");
            let response = respond(400, format!("bad request: {why}\n"));
            return Err((RequestOutcome::Failed(why), response));
        }
    };
    match DeclaredHold::take(&*config.backend, owner, wanted, timeout).await {
        Ok(held) => {
            match HeaderValue::from_str(&held.env_value()) {
                Ok(tokens) => {
                    let name = HeaderName::from_static(HELD_HEADER);
                    request.headers_mut().insert(name, tokens);
                }
                // Lock names and tokens are ASCII: never taken.
                Err(error) => tracing::warn!(%error, "declared lock tokens not a header value"),
            }
            Ok(Some(held))
        }
        Err(refused) => {
            let (outcome, text) = match refused.error {
                BackendError::Timeout => {
                    let limit = timeout.unwrap_or_default();
                    let text = format!(
                        "the declared lock {} was not free within the {:.3}s request timeout\n",
                        refused.lock,
                        limit.as_secs_f64()
                    );
                    (RequestOutcome::TimedOut(limit), text)
                }
                _ => (
                    RequestOutcome::Failed(refused.to_string()),
                    format!("{refused}\n"),
                ),
            };
            let mut response = respond(503, text);
            response
                .headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from_static("1"));
            Err((outcome, response))
        }
    }
}

/// The value of placeholder `key` for `request`.
fn value<B>(
    request: &hyper::Request<B>,
    key: &str,
    plugin: &str,
    number: u64,
) -> Result<String, String> {
    if let Some(name) = key.strip_prefix("query.") {
        let query = request.uri().query().unwrap_or("");
        return query
            .split('&')
            .filter_map(|pair| pair.split_once('=').or(Some((pair, ""))))
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_owned())
            .ok_or_else(|| format!("the request has no query parameter {name:?} for {{{key}}}"));
    }
    if let Some(name) = key.strip_prefix("header.") {
        let header = request.headers().get(name);
        let text = header.and_then(|value| value.to_str().ok());
        return text
            .map(str::to_owned)
            .ok_or_else(|| format!("the request has no header {name:?} for {{{key}}}"));
    }
    match key {
        "path" => Ok(request.uri().path().trim_start_matches('/').to_owned()),
        "method" => Ok(request.method().as_str().to_owned()),
        "plugin" => Ok(plugin.to_owned()),
        "request" => Ok(number.to_string()),
        other => Err(format!("no value for {{{other}}} in a request")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_come_from_the_request() {
        let request = hyper::Request::builder()
            .method("POST")
            .uri("http://host/orders/a1?id=b2&flag")
            .header("x-tenant", "acme")
            .body(())
            .expect("request");
        let of = |key: &str| value(&request, key, "shop", 7);
        assert_eq!(of("path").as_deref(), Ok("orders/a1"));
        assert_eq!(of("method").as_deref(), Ok("POST"));
        assert_eq!(of("query.id").as_deref(), Ok("b2"));
        assert_eq!(of("query.flag").as_deref(), Ok(""));
        assert_eq!(of("header.x-tenant").as_deref(), Ok("acme"));
        assert_eq!(of("plugin").as_deref(), Ok("shop"));
        assert_eq!(of("request").as_deref(), Ok("7"));
        let missing = of("query.nope").expect_err("absent");
        assert!(missing.contains("no query parameter \"nope\""), "{missing}");
        let missing = of("header.x-nope").expect_err("absent");
        assert!(missing.contains("no header \"x-nope\""), "{missing}");
    }
}
