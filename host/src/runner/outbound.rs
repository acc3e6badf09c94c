//! Outbound HTTP for guests (`wasi:http/outgoing-handler`): denied unless allowed.
//!
//! Like `wasmtime serve -S http`, but scoped: a platform names the services a
//! plugin may call (`HOST[:PORT]`), typically the resource its fencing tokens
//! protect. A denied call returns the WASI error `HTTP-request-denied` to the
//! guest; it never traps.
//!
//! Fenced requests (`--fence-header NAME`): the host adds the fencing token
//! of every exclusive lock the guest holds to each request it sends, as
//! `NAME: LOCK=TOKEN` (one field per lock), replacing any the guest set
//! itself, so a downstream service can refuse a stale writer (keep the
//! highest token seen per lock, refuse lower) without trusting the guest.

use std::sync::Arc;

use http::{HeaderMap, HeaderName, HeaderValue};
use wasmtime_wasi_http::{Error as HttpError, RequestOptions, WasiBody, WasiHttpHooks};

use crate::capability::FenceTokens;

/// One allowed destination: a host and an optional port (any port when absent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowedHost {
    host: String,
    port: Option<u16>,
}

impl AllowedHost {
    /// Parses `HOST[:PORT]` (`[v6addr]:PORT` for IPv6); the host is matched
    /// case-insensitively.
    ///
    /// # Errors
    /// A message naming what is wrong: an empty host, a bad port, or a scheme or
    /// path given where only a host belongs.
    pub fn parse(spec: &str) -> Result<Self, String> {
        if spec.contains("://") || spec.contains('/') {
            return Err(format!(
                "{spec:?}: give HOST[:PORT] only, without a scheme or path"
            ));
        }
        let (host, port) = match spec.rsplit_once(':') {
            Some((host, port)) if !host.ends_with(':') && !port.contains(']') => {
                let port = port
                    .parse::<u16>()
                    .map_err(|_| format!("{spec:?}: {port:?} is not a port number"))?;
                (host, Some(port))
            }
            _ => (spec, None),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() {
            return Err(format!("{spec:?}: the host is empty"));
        }
        Ok(AllowedHost {
            host: host.to_ascii_lowercase(),
            port,
        })
    }

    fn allows(&self, host: &str, port: u16) -> bool {
        self.host == host.to_ascii_lowercase() && self.port.is_none_or(|p| p == port)
    }
}

impl std::fmt::Display for AllowedHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.port {
            Some(port) => write!(f, "{}:{port}", self.host),
            None => f.write_str(&self.host),
        }
    }
}

/// Where guests may send HTTP requests. The default allows nothing.
#[derive(Debug, Clone, Default)]
pub struct OutboundPolicy {
    allowed: Arc<Vec<AllowedHost>>,
    /// The header presenting the guest's fencing tokens, if any.
    fence_header: Option<HeaderName>,
    /// One instance's tokens (set per instance by [`Self::for_instance`]).
    tokens: Option<FenceTokens>,
}

impl OutboundPolicy {
    /// A policy allowing exactly `allowed`.
    pub fn allow(allowed: Vec<AllowedHost>) -> Self {
        OutboundPolicy {
            allowed: Arc::new(allowed),
            fence_header: None,
            tokens: None,
        }
    }

    /// Presents the guest's fencing tokens on every request it sends, in
    /// the header `name` (none: no fence header).
    pub fn with_fence_header(mut self, name: Option<HeaderName>) -> Self {
        self.fence_header = name;
        self
    }

    /// The header presenting fencing tokens, if any.
    pub fn fence_header(&self) -> Option<&HeaderName> {
        self.fence_header.as_ref()
    }

    /// This policy for one instance whose exclusive locks are `tokens`.
    pub fn for_instance(&self, tokens: FenceTokens) -> Self {
        OutboundPolicy {
            tokens: Some(tokens),
            ..self.clone()
        }
    }

    /// True when some destination is allowed (so linking `wasi:http` matters).
    pub fn is_enabled(&self) -> bool {
        !self.allowed.is_empty()
    }

    /// Whether a request to `uri` may be sent.
    pub fn permits(&self, uri: &http::Uri) -> bool {
        let Some(authority) = uri.authority() else {
            return false;
        };
        let https = uri.scheme() == Some(&http::uri::Scheme::HTTPS);
        let port = authority.port_u16().unwrap_or(if https { 443 } else { 80 });
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        self.allowed
            .iter()
            .any(|allowed| allowed.allows(host, port))
    }
}

type SendFuture = Box<
    dyn Future<
            Output = Result<
                (
                    http::Response<WasiBody>,
                    Box<dyn Future<Output = Result<(), HttpError>> + Send>,
                ),
                HttpError,
            >,
        > + Send,
>;

impl WasiHttpHooks for OutboundPolicy {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        fut: Box<dyn Future<Output = Result<(), HttpError>> + Send>,
    ) -> SendFuture {
        drop(fut);
        if !self.permits(request.uri()) {
            tracing::info!(uri = %request.uri(), "outbound HTTP request denied");
            return Box::new(async { Err(HttpError::HttpRequestDenied) });
        }
        let mut request = request;
        if let (Some(name), Some(tokens)) = (&self.fence_header, &self.tokens) {
            present_tokens(request.headers_mut(), name, tokens);
        }
        Box::new(async move {
            use http_body_util::BodyExt;
            let (response, io) = wasmtime_wasi_http::default_send_request(request, options).await?;
            Ok((
                response.map(BodyExt::boxed_unsync),
                Box::new(io) as Box<dyn Future<Output = _> + Send>,
            ))
        })
    }
}

/// Replaces every `name` field of `headers` with one `LOCK=TOKEN` field per
/// lock of `tokens` (none when the guest holds no exclusive lock): what the
/// guest set itself never reaches the service.
fn present_tokens(headers: &mut HeaderMap, name: &HeaderName, tokens: &FenceTokens) {
    headers.remove(name);
    for value in tokens.header_values() {
        // Lock names are `[A-Za-z0-9._-/]`: always a valid header value.
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.append(name.clone(), value);
        }
    }
}

/// Parses a `--fence-header` name.
///
/// # Errors
/// A message naming the header when it is not a valid field name, or one
/// HTTP itself manages.
pub fn parse_fence_header(name: &str) -> Result<HeaderName, String> {
    let header = HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| format!("{name:?} is not a valid HTTP header name"))?;
    const MANAGED: &[&str] = &[
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "upgrade",
        "te",
        "trailer",
    ];
    if MANAGED.contains(&header.as_str()) {
        return Err(format!(
            "{name:?} is managed by HTTP itself; choose another header name (e.g. wardlock-fence)"
        ));
    }
    Ok(header)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::name::LockName;

    #[test]
    fn the_fence_header_replaces_what_the_guest_set() {
        let name = parse_fence_header("Wardlock-Fence").expect("valid");
        let tokens = FenceTokens::default();
        let forged = |headers: &mut HeaderMap| {
            headers.insert(name.clone(), HeaderValue::from_static("orders=999999"));
        };
        let mut headers = HeaderMap::new();
        forged(&mut headers);
        present_tokens(&mut headers, &name, &tokens);
        assert!(
            headers.get(&name).is_none(),
            "no lock held: nothing forged passes"
        );

        tokens.hold(1, &LockName::new("orders").expect("valid"), 42);
        tokens.hold(2, &LockName::new("accounts/a").expect("valid"), 7);
        forged(&mut headers);
        present_tokens(&mut headers, &name, &tokens);
        let values: Vec<&str> = headers
            .get_all(&name)
            .iter()
            .map(|v| v.to_str().expect("text"))
            .collect();
        assert_eq!(values, ["accounts/a=7", "orders=42"]);
    }

    #[test]
    fn fence_header_names_are_checked() {
        assert!(parse_fence_header("wardlock-fence").is_ok());
        for bad in ["", "bad header", "Host", "content-length"] {
            let error = parse_fence_header(bad).expect_err(bad);
            assert!(error.contains(&format!("{bad:?}")), "{error}");
        }
    }

    fn uri(text: &str) -> http::Uri {
        text.parse().expect("test URI")
    }

    #[test]
    fn allows_only_listed_destinations() {
        let policy = OutboundPolicy::allow(vec![
            AllowedHost::parse("127.0.0.1:9000").expect("valid"),
            AllowedHost::parse("Example.org").expect("valid"),
        ]);
        assert!(policy.permits(&uri("http://127.0.0.1:9000/x")));
        assert!(!policy.permits(&uri("http://127.0.0.1:9001/x")));
        assert!(policy.permits(&uri("https://example.ORG/")));
        assert!(policy.permits(&uri("http://example.org:8080/")));
        assert!(!policy.permits(&uri("http://evil.org/")));
        assert!(!OutboundPolicy::default().permits(&uri("http://127.0.0.1:9000/")));
    }

    #[test]
    fn rejects_bad_specs_by_name() {
        for bad in ["", ":80", "http://x", "x/y", "x:port", "x:70000"] {
            let error = AllowedHost::parse(bad).expect_err(bad);
            assert!(error.contains(&format!("{bad:?}")), "{error}");
        }
        assert_eq!(
            AllowedHost::parse("[::1]:8080").expect("v6").to_string(),
            "::1:8080"
        );
    }
}
