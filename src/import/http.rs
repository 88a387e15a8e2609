//! The HTTP response inside a WARC `response` or `revisit` record.
//!
//! WARC keeps the message as the crawler received it: status line, headers, and
//! the body still in its transfer coding (`chunked`) and content coding (`gzip`,
//! `deflate`). The importer needs the status, two headers, the payload for its
//! digest (transfer coding removed, as ISO 28500 defines the payload) and, for
//! HTML, the decoded text.

use std::borrow::Cow;
use std::io::Read;

/// Decoded bodies larger than this are not parsed for links (a page that size is
/// not HTML a crawler would follow, and the limit bounds memory).
pub const MAX_DECODED: u64 = 32 << 20;

/// A parsed HTTP response message.
#[derive(Debug)]
pub struct Response<'a> {
    pub status: u16,
    headers: Vec<(&'a str, &'a str)>,
    /// The message body as recorded (transfer- and content-coded).
    pub body: &'a [u8],
}

/// Parses `block` as an HTTP/1.x response; `None` if it does not start with a
/// status line. Header lines that are not UTF-8 are ignored.
pub fn parse_response(block: &[u8]) -> Option<Response<'_>> {
    let (status_line, mut rest) = split_line(block)?;
    let status_line = std::str::from_utf8(status_line).ok()?;
    let mut parts = status_line.split_ascii_whitespace();
    if !parts.next()?.starts_with("HTTP/") {
        return None;
    }
    let status: u16 = parts.next()?.parse().ok()?;
    let mut headers = Vec::new();
    loop {
        let Some((line, after)) = split_line(rest) else {
            // Headers without the blank line that ends them: no body.
            rest = &[];
            break;
        };
        rest = after;
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = std::str::from_utf8(line)
            .ok()
            .and_then(|l| l.split_once(':'))
        {
            headers.push((name.trim(), value.trim()));
        }
    }
    Some(Response {
        status,
        headers,
        body: rest,
    })
}

/// The next line of `bytes` without its `\n` or `\r\n`, and what follows it.
fn split_line(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    if bytes.is_empty() {
        return None;
    }
    match bytes.iter().position(|&b| b == b'\n') {
        Some(i) => {
            let line = &bytes[..i];
            Some((line.strip_suffix(b"\r").unwrap_or(line), &bytes[i + 1..]))
        }
        None => Some((bytes, &[])),
    }
}

impl<'a> Response<'a> {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&'a str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| *v)
    }

    /// Whether the declared media type is HTML (or XHTML).
    pub fn is_html(&self) -> bool {
        self.header("content-type").is_some_and(|t| {
            let t = t.split(';').next().unwrap_or("").trim();
            t.eq_ignore_ascii_case("text/html") || t.eq_ignore_ascii_case("application/xhtml+xml")
        })
    }

    /// The payload: the body with its transfer coding removed. A body declared
    /// chunked that does not parse as chunks is taken as it is (some crawlers
    /// store the decoded body and keep the header).
    pub fn payload(&self) -> Cow<'a, [u8]> {
        let chunked = self
            .header("transfer-encoding")
            .is_some_and(|t| t.to_ascii_lowercase().contains("chunked"));
        if chunked {
            if let Some(body) = dechunk(self.body) {
                return Cow::Owned(body);
            }
        }
        Cow::Borrowed(self.body)
    }

    /// The payload with its content coding removed, at most [`MAX_DECODED`]
    /// bytes; `Err` names a coding that cannot be undone or a corrupt stream.
    pub fn decoded(&self) -> Result<Vec<u8>, String> {
        let payload = self.payload();
        let coding = self
            .header("content-encoding")
            .unwrap_or("identity")
            .trim()
            .to_ascii_lowercase();
        let mut out = Vec::new();
        let read = match coding.as_str() {
            "" | "identity" | "none" => {
                out.extend_from_slice(&payload[..payload.len().min(MAX_DECODED as usize)]);
                return Ok(out);
            }
            "gzip" | "x-gzip" => flate2::read::MultiGzDecoder::new(&payload[..])
                .take(MAX_DECODED)
                .read_to_end(&mut out),
            // "deflate" is zlib-wrapped by the standard, raw in some servers.
            "deflate" => match flate2::read::ZlibDecoder::new(&payload[..])
                .take(MAX_DECODED)
                .read_to_end(&mut out)
            {
                Ok(n) => Ok(n),
                Err(_) => {
                    out.clear();
                    flate2::read::DeflateDecoder::new(&payload[..])
                        .take(MAX_DECODED)
                        .read_to_end(&mut out)
                }
            },
            other => return Err(format!("content encoding {other:?} is not supported")),
        };
        read.map(|_| out)
            .map_err(|e| format!("corrupt {coding} body: {e}"))
    }
}

/// Removes the chunked transfer coding; `None` if `body` is not well-formed chunks.
fn dechunk(mut body: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(body.len());
    loop {
        let (line, rest) = split_line(body)?;
        let size = std::str::from_utf8(line).ok()?;
        let size = size.split(';').next()?.trim();
        let size = usize::from_str_radix(size, 16).ok()?;
        if size == 0 {
            return Some(out);
        }
        if rest.len() < size {
            // A truncated last chunk: keep what arrived.
            out.extend_from_slice(rest);
            return Some(out);
        }
        out.extend_from_slice(&rest[..size]);
        body = &rest[size..];
        body = body
            .strip_prefix(b"\r\n")
            .or_else(|| body.strip_prefix(b"\n"))
            .unwrap_or(body);
        if body.is_empty() {
            return Some(out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn status_headers_and_chunks() {
        let msg = b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\n\r\n";
        let r = parse_response(msg).unwrap();
        assert_eq!(r.status, 200);
        assert!(r.is_html());
        assert_eq!(&*r.payload(), b"hello, world");
        assert_eq!(r.decoded().unwrap(), b"hello, world");
        assert!(parse_response(b"GET / HTTP/1.1\r\n\r\n").is_none());
        let r = parse_response(b"HTTP/1.0 301 Moved\nLocation: /x\n\n").unwrap();
        assert_eq!((r.status, r.header("LOCATION")), (301, Some("/x")));
        assert!(!r.is_html());
    }

    #[test]
    fn gzip_bodies_and_bad_chunks() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(b"<a href=x>").unwrap();
        let gz = gz.finish().unwrap();
        let mut msg =
            b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n"
                .to_vec();
        msg.extend_from_slice(format!("{:x}\r\n", gz.len()).as_bytes());
        msg.extend_from_slice(&gz);
        msg.extend_from_slice(b"\r\n0\r\n\r\n");
        let r = parse_response(&msg).unwrap();
        assert_eq!(&*r.payload(), &gz[..]);
        assert_eq!(r.decoded().unwrap(), b"<a href=x>");
        // Declared chunked but stored decoded: the body as it is.
        let r =
            parse_response(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n<html>").unwrap();
        assert_eq!(&*r.payload(), b"<html>");
        let r = parse_response(b"HTTP/1.1 200 OK\r\nContent-Encoding: br\r\n\r\nxx").unwrap();
        assert!(r.decoded().unwrap_err().contains("\"br\""));
        let r =
            parse_response(b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n\r\nnot gzip").unwrap();
        assert!(r.decoded().unwrap_err().starts_with("corrupt gzip"));
    }
}
