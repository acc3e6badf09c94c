//! Outbound HTTP for guests (`wasi:http/outgoing-handler`): denied unless allowed.
//!
//! Like `wasmtime serve -S http`, but scoped: a platform names the services a
//! plugin may call (`HOST[:PORT]`), typically the resource its fencing tokens
//! protect. A denied call returns the WASI error `HTTP-request-denied` to the
//! guest; it never traps.

use std::sync::Arc;

use wasmtime_wasi_http::{Error as HttpError, RequestOptions, WasiBody, WasiHttpHooks};

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
}

impl OutboundPolicy {
    /// A policy allowing exactly `allowed`.
    pub fn allow(allowed: Vec<AllowedHost>) -> Self {
        OutboundPolicy {
            allowed: Arc::new(allowed),
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

#[cfg(test)]
mod tests {
    use super::*;

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
