//! URL normalization, applied once at ingest.
//!
//! WHATWG parsing (the `url` crate) lower-cases scheme and host, drops the default
//! port, resolves dot segments and percent-encodes what must be; we also drop the
//! fragment, which never reaches a server. Only URLs with a host can be pages:
//! `mailto:`, `javascript:`, `data:` and relative references are rejected.

/// A normalized URL and where its host name sits inside it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NormalUrl {
    pub url: String,
    pub host_start: u32,
    pub host_end: u32,
}

impl NormalUrl {
    pub fn host(&self) -> &str {
        &self.url[self.host_start as usize..self.host_end as usize]
    }
}

/// Why a URL could not be a page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UrlProblem {
    Unparsable(String),
    NoHost,
}

impl std::fmt::Display for UrlProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UrlProblem::Unparsable(why) => write!(f, "unparsable URL ({why})"),
            UrlProblem::NoHost => write!(f, "URL has no host name"),
        }
    }
}

/// Normalizes `raw`; see the module docs for what changes.
pub fn normalize(raw: &str) -> Result<NormalUrl, UrlProblem> {
    let mut url = url::Url::parse(raw.trim()).map_err(|e| UrlProblem::Unparsable(e.to_string()))?;
    url.set_fragment(None);
    let host = url
        .host_str()
        .filter(|h| !h.is_empty())
        .ok_or(UrlProblem::NoHost)?;
    // host_str is a slice of the serialization; remember where, so the host never
    // needs a second parse.
    let start = host.as_ptr() as usize - url.as_str().as_ptr() as usize;
    let end = start + host.len();
    let url: String = url.into();
    Ok(NormalUrl {
        url,
        host_start: start as u32,
        host_end: end as u32,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> String {
        normalize(s).unwrap().url
    }

    #[test]
    fn normalizes_case_port_fragment_and_dots() {
        assert_eq!(
            n("HTTP://WWW.Example.COM:80/a/./b/../c#frag"),
            "http://www.example.com/a/c"
        );
        assert_eq!(n("https://example.com:443"), "https://example.com/");
        assert_eq!(
            n("http://example.com:8080/x?q=1"),
            "http://example.com:8080/x?q=1"
        );
        assert_eq!(
            normalize("http://Example.com:8080/").unwrap().host(),
            "example.com"
        );
    }

    #[test]
    fn idn_and_ipv6_hosts() {
        assert_eq!(
            normalize("http://bücher.de/").unwrap().host(),
            "xn--bcher-kva.de"
        );
        assert_eq!(normalize("http://[::1]:8000/").unwrap().host(), "[::1]");
    }

    #[test]
    fn rejects_non_pages() {
        assert_eq!(normalize("mailto:a@b.com"), Err(UrlProblem::NoHost));
        assert!(matches!(
            normalize("/relative/path"),
            Err(UrlProblem::Unparsable(_))
        ));
        assert!(matches!(
            normalize("http://"),
            Err(UrlProblem::Unparsable(_))
        ));
    }
}
