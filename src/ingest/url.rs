//! URL normalization, applied once at ingest.
//!
//! WHATWG parsing (the `url` crate) lower-cases scheme and host, drops the default
//! port, resolves dot segments and percent-encodes what must be; we also drop the
//! fragment, which never reaches a server. Only URLs with a host can be pages:
//! `mailto:`, `javascript:`, `data:` and relative references are rejected.

use crate::job::SiteKey;

/// A normalized URL and where its site (its host name, or the host's registered
/// domain) sits inside it.
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
    /// The host ends past byte 65,535 of the URL: the ledger keeps where a
    /// URL's site sits in 16 bits (`url_arena::UrlRef`).
    HostTooFar(usize),
}

impl std::fmt::Display for UrlProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UrlProblem::Unparsable(why) => write!(f, "unparsable URL ({why})"),
            UrlProblem::NoHost => write!(f, "URL has no host name"),
            UrlProblem::HostTooFar(end) => write!(
                f,
                "URL's host ends at byte {end}; webevo takes hosts ending by byte {}",
                MAX_HOST_END
            ),
        }
    }
}

/// The last byte offset at which a URL's host may end (see
/// [`UrlProblem::HostTooFar`]).
pub const MAX_HOST_END: usize = u16::MAX as usize;

/// Normalizes `raw`; see the module docs for what changes.
pub fn normalize(raw: &str) -> Result<NormalUrl, UrlProblem> {
    normalize_for(raw, SiteKey::Host)
}

/// Normalizes `raw` and marks its site under `site_key`: the host, or the host's
/// registered domain (`news.bbc.co.uk` → `bbc.co.uk`). The registered domain is a
/// suffix of the host, so the site stays a slice of the URL. Hosts without one
/// (IP addresses, `localhost`, a bare public suffix) are their own site.
pub fn normalize_for(raw: &str, site_key: SiteKey) -> Result<NormalUrl, UrlProblem> {
    let raw = raw.trim();
    match already_normal(raw, site_key) {
        Some(normal) => Ok(normal),
        None => parsed(raw, site_key),
    }
}

/// [`normalize_for`] by the WHATWG parser.
fn parsed(raw: &str, site_key: SiteKey) -> Result<NormalUrl, UrlProblem> {
    let mut url = url::Url::parse(raw).map_err(|e| UrlProblem::Unparsable(e.to_string()))?;
    url.set_fragment(None);
    let host = url
        .host_str()
        .filter(|h| !h.is_empty())
        .ok_or(UrlProblem::NoHost)?;
    // host_str is a slice of the serialization; remember where, so the host never
    // needs a second parse.
    let mut start = host.as_ptr() as usize - url.as_str().as_ptr() as usize;
    let mut end = start + host.len();
    if site_key == SiteKey::RegisteredDomain && matches!(url.host(), Some(url::Host::Domain(_))) {
        // `example.org.` (a fully qualified name) is the site `example.org`.
        let name = host.trim_end_matches('.');
        end = start + name.len();
        if let Some(domain) = psl::domain_str(name) {
            start = end - domain.len();
        }
    }
    if end > MAX_HOST_END {
        return Err(UrlProblem::HostTooFar(end));
    }
    let url: String = url.into();
    Ok(NormalUrl {
        url,
        host_start: start as u32,
        host_end: end as u32,
    })
}

/// [`BYTE_CLASS`] bits: a byte a host name of the shortcut may hold, one a
/// path may hold unchanged, one a query may.
const HOST: u8 = 1;
const PATH: u8 = 2;
const QUERY: u8 = 4;

/// The classes of each byte (see [`already_normal`]).
static BYTE_CLASS: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        let mut class = 0;
        if c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-' {
            class |= HOST;
        }
        if c.is_ascii_alphanumeric()
            || matches!(
                c,
                b'-' | b'.'
                    | b'_'
                    | b'~'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
                    | b':'
                    | b'@'
                    | b'/'
            )
        {
            class |= PATH | QUERY;
        }
        if c == b'?' {
            class |= QUERY;
        }
        table[b] = class;
        b += 1;
    }
    table
};

/// `raw` (trimmed) as [`normalize_for`] returns it, when it is plainly in
/// normal form already, else `None`: crawlers mostly record URLs as a
/// browser serialized them, and the WHATWG parse of each distinct URL was a
/// twentieth of a snapshot's reading. Only a narrow shape is taken, one that
/// the parser serializes byte for byte unchanged (but for the fragment, which
/// normalization drops): `http://` or `https://`, a host of lower-case
/// letters, digits and hyphens in non-empty dot-separated labels whose last
/// label starts with a letter (so not an IPv4 address) and with no `xn--`
/// label (which IDNA would check), no user or port, then a path starting with
/// `/` with no `.` or `..` segment, and an optional query, both of
/// characters the parser never percent-encodes or decodes (no `%`, `\`,
/// quote or space). Anything else takes the parser.
fn already_normal(raw: &str, site_key: SiteKey) -> Option<NormalUrl> {
    let bytes = raw.as_bytes();
    let scheme_end = if bytes.starts_with(b"http://") {
        7
    } else if bytes.starts_with(b"https://") {
        8
    } else {
        return None;
    };
    // One pass over the bytes, host then path then query, up to the
    // fragment: a byte's classes come from a table.
    let mut i = scheme_end;
    let mut label = i;
    let host_end = loop {
        let b = *bytes.get(i)?;
        if b == b'/' || b == b'.' {
            let name = &bytes[label..i];
            if name.is_empty() || name.starts_with(b"xn--") {
                return None;
            }
            if b == b'/' {
                // The last label must not read as a number (IPv4).
                if !name[0].is_ascii_lowercase() {
                    return None;
                }
                break i;
            }
            label = i + 1;
        } else if BYTE_CLASS[b as usize] & HOST == 0 {
            return None;
        }
        i += 1;
    };
    if host_end > MAX_HOST_END {
        return None;
    }
    // Past the path's leading `/`.
    i += 1;
    let mut segment = i;
    let mut class = PATH;
    while let Some(&b) = bytes.get(i) {
        if b == b'#' {
            break;
        }
        if class == PATH && (b == b'/' || b == b'?') {
            // The segment before ends here: `.` and `..` ones are resolved.
            if matches!(&bytes[segment..i], b"." | b"..") {
                return None;
            }
            segment = i + 1;
            if b == b'?' {
                class = QUERY;
            }
        } else if BYTE_CLASS[b as usize] & class == 0 {
            return None;
        }
        i += 1;
    }
    if class == PATH && matches!(&bytes[segment..i], b"." | b"..") {
        return None;
    }
    let (kept, host) = (i, &raw[scheme_end..host_end]);
    let mut start = scheme_end;
    if site_key == SiteKey::RegisteredDomain {
        if let Some(domain) = psl::domain_str(host) {
            start = host_end - domain.len();
        }
    }
    Some(NormalUrl {
        url: raw[..kept].to_string(),
        host_start: start as u32,
        host_end: host_end as u32,
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

    /// A host that ends past byte 65,535 is refused by name, one that ends
    /// there is taken.
    #[test]
    fn refuses_a_host_ending_past_16_bits() {
        let user = |n: usize| format!("http://{}@h.example/", "u".repeat(n));
        // `http://` is 7 bytes, then the user, `@` and 9 bytes of host.
        let last = MAX_HOST_END - 7 - 1 - 9;
        assert_eq!(
            normalize(&user(last)).unwrap().host_end as usize,
            MAX_HOST_END
        );
        let e = normalize(&user(last + 1)).unwrap_err();
        assert_eq!(e, UrlProblem::HostTooFar(MAX_HOST_END + 1));
        assert!(e.to_string().contains("65535"), "{e}");
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
    fn registered_domain_sites() {
        let site = |u: &str| {
            normalize_for(u, SiteKey::RegisteredDomain)
                .unwrap()
                .host()
                .to_string()
        };
        assert_eq!(site("http://news.BBC.co.uk/a"), "bbc.co.uk");
        assert_eq!(site("http://www.example.com/"), "example.com");
        assert_eq!(site("http://example.com/"), "example.com");
        assert_eq!(site("http://www.example.com./x"), "example.com");
        // gc.ca is itself a public suffix (Government of Canada departments).
        assert_eq!(site("http://meds.dfo-mpo.gc.ca/"), "dfo-mpo.gc.ca");
        assert_eq!(site("http://foo.github.io/"), "foo.github.io");
        assert_eq!(site("http://10.0.0.1/"), "10.0.0.1");
        assert_eq!(site("http://localhost:8080/"), "localhost");
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

    /// The shortcut for URLs in normal form agrees with the parser on every
    /// URL it takes, over random URLs built from the pieces that matter to
    /// it (case, ports, dots, IPv4-like and IDNA labels, percent signs,
    /// fragments, characters the parser encodes), and takes the plain ones.
    #[test]
    fn shortcut_agrees_with_the_parser() {
        const SCHEMES: &[&str] = &[
            "http://", "https://", "HTTP://", "ftp://", "http:/", "http:///", " http://",
        ];
        const LABELS: &[&str] = &[
            "a",
            "example",
            "ex-ample",
            "x1",
            "com",
            "co",
            "uk",
            "1",
            "github",
            "io",
            "gc",
            "ca",
            "0x1f",
            "01",
            "xn--bcher-kva",
            "xn--zz",
            "Ab",
            "",
            "-a",
            "a-",
            "_a",
            "b\u{fc}",
            "255",
        ];
        const PIECES: &[&str] = &[
            "/",
            "a",
            "B",
            ".",
            "..",
            "-",
            "_",
            "~",
            "!",
            "$",
            "&",
            "(",
            ")",
            "*",
            "+",
            ",",
            ";",
            "=",
            ":",
            "@",
            "?",
            "//",
            "index.html",
            "x=1",
            "./",
            "../",
            "/.",
            "/..",
            ".a",
            "a.",
            "%2e",
            "%41",
            "'",
            "#",
            "#x",
            " ",
            "\\",
            "\"",
            "<",
            ">",
            "`",
            "{",
            "}",
            "^",
            "|",
            "\t",
            "\n",
            "\u{e9}",
            "%",
        ];
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut pick = |n: usize| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng % n as u64) as usize
        };
        let (mut taken, mut total) = (0, 0);
        for round in 0..200_000 {
            // Every other URL from the first few (plain) choices of each list only.
            let (schemes, labels, pieces) = if round % 2 == 0 {
                (2, 10, 30)
            } else {
                (SCHEMES.len(), LABELS.len(), PIECES.len())
            };
            let mut raw = String::from(SCHEMES[pick(schemes)]);
            for i in 0..1 + pick(4) {
                if i > 0 {
                    raw.push('.');
                }
                raw.push_str(LABELS[pick(labels)]);
            }
            if round % 2 == 1 && pick(8) == 0 {
                raw.push_str([":80", ":443", ":8080", ":", "@h", "."][pick(6)]);
            }
            raw.push('/');
            for _ in 0..pick(9) {
                raw.push_str(PIECES[pick(pieces)]);
            }
            if pick(16) == 0 {
                raw.push_str([" ", "#", "#frag", "?", "?#"][pick(5)]);
            }
            for key in [SiteKey::Host, SiteKey::RegisteredDomain] {
                total += 1;
                if let Some(fast) = already_normal(raw.trim(), key) {
                    taken += 1;
                    assert_eq!(Ok(fast), parsed(raw.trim(), key), "{raw:?} under {key:?}");
                }
            }
        }
        // About half the URLs are of the plain shape; none of the others is taken.
        assert!(
            taken > total / 5 && taken < total / 2,
            "{taken} of {total} taken"
        );
        for plain in [
            "http://a.example.com/",
            "https://x1.co.uk/a/b.html?q=1&r=(2)#top",
        ] {
            assert!(already_normal(plain, SiteKey::Host).is_some(), "{plain}");
        }
    }
}
