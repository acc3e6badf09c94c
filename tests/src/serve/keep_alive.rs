//! A keep-alive HTTP/1.1 client: one connection for many requests, as a load
//! generator or a browser uses it, so a thousand clients need a thousand
//! sockets rather than one per request (which runs a loopback benchmark out of
//! ephemeral ports within seconds).

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::{Response, parse_head};

/// Longest response this client reads: a guard against a runaway server.
const MAX_RESPONSE: usize = 1 << 20;

/// One client connection, opened on first use and again after the server
/// closes it.
pub struct KeepAlive {
    addr: String,
    stream: Option<TcpStream>,
    /// Bytes read past the last response.
    buffer: Vec<u8>,
}

impl KeepAlive {
    /// A client of `addr` (`HOST:PORT`); connects on the first request.
    pub fn new(addr: &str) -> KeepAlive {
        KeepAlive {
            addr: addr.to_owned(),
            stream: None,
            buffer: Vec::new(),
        }
    }

    /// `POST path` with an empty body on the open connection (a new one if
    /// there is none).
    ///
    /// # Errors
    /// Connection or protocol errors; the connection is dropped then, and the
    /// next request opens another.
    pub async fn post(&mut self, path: &str) -> std::io::Result<Response> {
        let result = self.exchange(path).await;
        if result.as_ref().map_or(true, closes) {
            self.stream = None;
            self.buffer.clear();
        }
        result
    }

    async fn exchange(&mut self, path: &str) -> std::io::Result<Response> {
        let stream = match &mut self.stream {
            Some(stream) => stream,
            None => self.stream.insert(TcpStream::connect(&self.addr).await?),
        };
        let request = format!(
            "POST {path} HTTP/1.1\r\nhost: {}\r\ncontent-length: 0\r\n\r\n",
            self.addr
        );
        stream.write_all(request.as_bytes()).await?;
        loop {
            if let Some((response, used)) = complete(&self.buffer) {
                self.buffer.drain(..used);
                return Ok(response);
            }
            if self.buffer.len() > MAX_RESPONSE {
                return Err(invalid("response too long"));
            }
            let mut chunk = [0u8; 8192];
            let read = stream.read(&mut chunk).await?;
            if read == 0 {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "the server closed the connection mid-response",
                ));
            }
            self.buffer.extend_from_slice(&chunk[..read]);
        }
    }
}

/// True when the server said it closes the connection after this response.
fn closes(response: &Response) -> bool {
    response
        .headers
        .iter()
        .any(|(name, value)| name == "connection" && value.eq_ignore_ascii_case("close"))
}

fn invalid(why: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, why.to_owned())
}

/// The first whole response in `raw` and the bytes it takes, or `None` while
/// it is incomplete.
fn complete(raw: &[u8]) -> Option<(Response, usize)> {
    let head_end = raw.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let (status, headers) = parse_head(&String::from_utf8_lossy(&raw[..head_end - 4]))?;
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    };
    let (body, used) = if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        dechunk(&raw[head_end..])?
    } else {
        let length: usize = header("content-length").map_or(Some(0), |v| v.parse().ok())?;
        let body = raw.get(head_end..head_end + length)?;
        (String::from_utf8_lossy(body).into_owned(), length)
    };
    let response = Response {
        status,
        headers,
        body,
    };
    Some((response, head_end + used))
}

/// A chunked body at the start of `raw` and the bytes it takes (through the
/// last chunk's terminating blank line), or `None` while incomplete.
fn dechunk(raw: &[u8]) -> Option<(String, usize)> {
    let mut body = Vec::new();
    let mut at = 0;
    loop {
        let line_end = at + raw[at..].windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&raw[at..line_end]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        at = line_end + 2;
        if size == 0 {
            // Trailers (none expected) end with a blank line.
            let end = at + raw[at..].windows(2).position(|w| w == b"\r\n")?;
            return Some((String::from_utf8_lossy(&body).into_owned(), end + 2));
        }
        body.extend_from_slice(raw.get(at..at + size)?);
        at += size;
        if raw.get(at..at + 2)? != b"\r\n" {
            return None;
        }
        at += 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_are_split_where_they_end() {
        let raw = b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\nabcHTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nhi\r\n1\r\n!\r\n0\r\n\r\nHTTP/1.1 500";
        let (first, used) = complete(raw).unwrap();
        assert_eq!((first.status, first.body.as_str()), (200, "abc"));
        let rest = &raw[used..];
        let (second, used) = complete(rest).unwrap();
        assert_eq!(second.body, "hi!");
        assert_eq!(&rest[used..], b"HTTP/1.1 500");
        assert!(complete(&rest[used..]).is_none(), "incomplete");
        assert!(
            complete(&rest[..used - 3]).is_none(),
            "a chunked body cut short"
        );
    }

    #[test]
    fn connection_close_is_noticed() {
        let raw = b"HTTP/1.1 200 OK\r\nConnection: close\r\ncontent-length: 0\r\n\r\n";
        let (response, _) = complete(raw).unwrap();
        assert!(closes(&response));
    }
}
