//! The links of an HTML page, as a crawler follows them.
//!
//! html5ever's tokenizer runs the WHATWG tokenization algorithm, so comments,
//! CDATA, unquoted and duplicate attributes, character references in attribute
//! values and the raw-text contents of `<script>`, `<style>`, `<textarea>` and
//! `<title>` are handled as a browser handles them (a `<a href>` inside a script
//! string is not a link). No tree is built: a crawler needs the tags, not the
//! document.
//!
//! Links are the `href` of `<a>` and `<area>`, the `src` of `<frame>` and
//! `<iframe>`, and the target of `<meta http-equiv="refresh" content="0; url=…">`.
//! They resolve against the first `<base href>` of the document (itself resolved
//! against the page URL) wherever they occur, as the HTML standard says; only
//! `http` and `https` results count (`javascript:`, `mailto:`, `tel:`, `data:` are
//! not pages).

use std::cell::RefCell;

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{
    BufferQueue, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};
use html5ever::TokenizerResult;
use url::Url;

/// The links found on one page.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct PageLinks {
    /// Resolved `http(s)` URLs, in document order, repeats included.
    pub links: Vec<Url>,
    /// Link attributes that did not resolve to an `http(s)` URL.
    pub skipped: u64,
}

/// The links of `html`, fetched from `page`.
pub fn extract(html: &str, page: &Url) -> PageLinks {
    let sink = LinkSink::default();
    let tokenizer = Tokenizer::new(sink, TokenizerOpts::default());
    let input = BufferQueue::default();
    input.push_back(StrTendril::from_slice(html));
    // Our sink never returns `Script`, so `feed` runs to the end of the input.
    while let TokenizerResult::Script(()) = tokenizer.feed(&input) {}
    tokenizer.end();
    let found = tokenizer.sink.found.into_inner();
    let base = found
        .base
        .and_then(|b| page.join(&b).ok())
        .unwrap_or_else(|| page.clone());
    let mut out = PageLinks::default();
    for raw in found.hrefs {
        match base.join(raw.trim()) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.host_str().is_some() => {
                out.links.push(u)
            }
            _ => out.skipped += 1,
        }
    }
    out
}

#[derive(Default)]
struct Found {
    base: Option<String>,
    hrefs: Vec<String>,
}

#[derive(Default)]
struct LinkSink {
    found: RefCell<Found>,
}

impl TokenSink for LinkSink {
    type Handle = ();

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        let Token::TagToken(tag) = token else {
            return TokenSinkResult::Continue;
        };
        if tag.kind == TagKind::EndTag {
            return TokenSinkResult::Continue;
        }
        let attr = |name: &str| {
            tag.attrs
                .iter()
                .find(|a| &*a.name.local == name)
                .map(|a| a.value.to_string())
        };
        let mut found = self.found.borrow_mut();
        match &*tag.name {
            "a" | "area" => found.hrefs.extend(attr("href")),
            "frame" | "iframe" => found.hrefs.extend(attr("src")),
            "base" if found.base.is_none() => found.base = attr("href"),
            "meta" => {
                let refresh = attr("http-equiv").is_some_and(|v| v.eq_ignore_ascii_case("refresh"));
                if let Some(target) = attr("content")
                    .filter(|_| refresh)
                    .and_then(|c| refresh_url(&c))
                {
                    found.hrefs.push(target);
                }
            }
            _ => {}
        }
        // A tree builder would switch the tokenizer into these states; without one
        // the sink must, or the text of a script would be read as markup.
        if tag.self_closing {
            return TokenSinkResult::Continue;
        }
        match &*tag.name {
            "script" => TokenSinkResult::RawData(RawKind::ScriptData),
            "style" | "xmp" | "iframe" | "noembed" | "noframes" => {
                TokenSinkResult::RawData(RawKind::Rawtext)
            }
            "title" | "textarea" => TokenSinkResult::RawData(RawKind::Rcdata),
            "plaintext" => TokenSinkResult::Plaintext,
            _ => TokenSinkResult::Continue,
        }
    }
}

/// The URL of a refresh `content` value, `"5; url=/next"` or `"0;URL='/next'"`.
fn refresh_url(content: &str) -> Option<String> {
    let (_, rest) = content.split_once([';', ','])?;
    let rest = rest.trim_start();
    // Bytes, not str slices: the cut may fall inside a character.
    let starts_with_url = rest
        .as_bytes()
        .get(..3)
        .is_some_and(|p| p.eq_ignore_ascii_case(b"url"));
    let value = if starts_with_url {
        rest[3..].trim_start().strip_prefix('=')?.trim()
    } else {
        rest.trim()
    };
    let value = value.trim_matches(|c| c == '\'' || c == '"');
    (!value.is_empty()).then(|| value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn links(html: &str, page: &str) -> Vec<String> {
        extract(html, &Url::parse(page).unwrap())
            .links
            .into_iter()
            .map(String::from)
            .collect()
    }

    #[test]
    fn anchors_resolve_against_the_page() {
        let got = links(
            r#"<p><a href="b.html">b</a> <A HREF=/c?x=1&amp;y=2>c</A>
               <a href="//other.org/d">d</a> <a href="https://e.com/#top">e</a>
               <area href="../f"> <iframe src="g"></iframe> <frame src="h">"#,
            "http://a.com/dir/page",
        );
        assert_eq!(
            got,
            [
                "http://a.com/dir/b.html",
                "http://a.com/c?x=1&y=2",
                "http://other.org/d",
                "https://e.com/#top",
                "http://a.com/f",
                "http://a.com/dir/g",
                "http://a.com/dir/h",
            ]
        );
    }

    #[test]
    fn the_first_base_applies_everywhere() {
        let got = links(
            r#"<a href="x">x</a><base href="http://cdn.net/root/"><base href="http://no/"><a href="y">"#,
            "http://a.com/",
        );
        assert_eq!(got, ["http://cdn.net/root/x", "http://cdn.net/root/y"]);
        // A relative base resolves against the page.
        let got = links(r#"<base href="/sub/"><a href="z">"#, "http://a.com/p/q");
        assert_eq!(got, ["http://a.com/sub/z"]);
    }

    #[test]
    fn non_pages_and_markup_in_text_are_not_links() {
        let page = Url::parse("http://a.com/").unwrap();
        let found = extract(
            r#"<a href="javascript:void(0)">j</a><a href="mailto:x@a.com">m</a>
               <a href="tel:+1">t</a><a>no href</a>
               <script>document.write('<a href="/in-script">')</script>
               <!-- <a href="/in-comment"> -->
               <textarea><a href="/in-textarea"></textarea>
               <style>a[href="/in-style"]{}</style>
               <a href="/real">r</a>"#,
            &page,
        );
        let got: Vec<String> = found.links.into_iter().map(String::from).collect();
        assert_eq!(got, ["http://a.com/real"]);
        assert_eq!(found.skipped, 3);
    }

    #[test]
    fn meta_refresh() {
        assert_eq!(
            links(
                r#"<meta http-equiv="Refresh" content="0; URL='/moved'">"#,
                "http://a.com/x"
            ),
            ["http://a.com/moved"]
        );
        assert_eq!(refresh_url("5"), None);
        assert_eq!(refresh_url("0;ü=x").as_deref(), Some("ü=x"));
        assert_eq!(
            refresh_url("3;http://b.org/").as_deref(),
            Some("http://b.org/")
        );
    }
}
