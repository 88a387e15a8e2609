//! Domain classes, host names and URL path pieces.
//!
//! Every string made here is already in the pipeline's normalized form: lower-case
//! ASCII host names, paths that start with `/`, no ports, no fragments.

use std::collections::HashSet;
use std::fmt::Write;

use rand::Rng;

/// Domain class of a host, as the change paper groups top-level domains.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    Com,
    Edu,
    NetOrg,
    Gov,
    Other,
}

impl Class {
    /// The class name used in the truth tables (`com|edu|netorg|gov|other`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Class::Com => "com",
            Class::Edu => "edu",
            Class::NetOrg => "netorg",
            Class::Gov => "gov",
            Class::Other => "other",
        }
    }

    /// Draws a class with the shares com 45%, edu 15%, netorg 15%, gov 10%, other 15%.
    pub(crate) fn sample<R: Rng>(rng: &mut R) -> Class {
        let u: f64 = rng.random();
        match u {
            u if u < 0.45 => Class::Com,
            u if u < 0.60 => Class::Edu,
            u if u < 0.75 => Class::NetOrg,
            u if u < 0.85 => Class::Gov,
            _ => Class::Other,
        }
    }

    /// The public suffix of a new registered domain of this class. `other` mixes
    /// country TLDs with multi-label suffixes (`co.uk`, `ac.uk`, `com.au`) so that a
    /// public-suffix-aware site key differs from "the last two labels".
    fn suffix<R: Rng>(self, rng: &mut R) -> &'static str {
        let u: f64 = rng.random();
        match self {
            Class::Com => "com",
            Class::Edu => "edu",
            Class::NetOrg => pick(u, &[(0.4, "net"), (1.0, "org")]),
            Class::Gov => pick(u, &[(0.85, "gov"), (1.0, "mil")]),
            Class::Other => pick(
                u,
                &[
                    (0.25, "co.uk"),
                    (0.30, "ac.uk"),
                    (0.50, "ca"),
                    (0.70, "de"),
                    (0.80, "fr"),
                    (0.90, "com.au"),
                    (1.0, "jp"),
                ],
            ),
        }
    }
}

/// The value whose cumulative threshold first exceeds `u`.
fn pick(u: f64, table: &[(f64, &'static str)]) -> &'static str {
    table
        .iter()
        .find(|(limit, _)| u < *limit)
        .map_or(table[table.len() - 1].1, |(_, v)| v)
}

const ONSETS: &[&str] = &[
    "b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z", "br",
    "ch", "cl", "dr", "gr", "pl", "sh", "st", "tr",
];
const VOWELS: &[&str] = &["a", "e", "i", "o", "u", "ai", "ea", "io", "ou"];
const CODAS: &[&str] = &["", "", "", "n", "r", "s", "x", "ck", "nt", "l"];

/// Hands out registered domains and host names, never the same one twice.
#[derive(Default)]
pub(crate) struct Namer {
    /// Registered domains already used (membership only; never iterated).
    used: HashSet<String>,
}

impl Namer {
    /// A fresh registered domain of `class`, e.g. `brontavel.co.uk`.
    pub(crate) fn domain<R: Rng>(&mut self, class: Class, rng: &mut R) -> String {
        let suffix = class.suffix(rng);
        let mut attempt = 0;
        loop {
            let mut name = String::new();
            for _ in 0..rng.random_range(2..=3) {
                name.push_str(ONSETS[rng.random_range(0..ONSETS.len())]);
                name.push_str(VOWELS[rng.random_range(0..VOWELS.len())]);
            }
            name.push_str(CODAS[rng.random_range(0..CODAS.len())]);
            if attempt >= 8 {
                // Crowded name space (the bench preset): a number keeps it unique.
                write!(name, "{attempt}").expect("writing to a String");
            }
            name.push('.');
            name.push_str(suffix);
            if self.used.insert(name.clone()) {
                return name;
            }
            attempt += 1;
        }
    }
}

/// Prefixes of the extra hosts of a registered domain (`news.x.com`, `blog.x.com`).
const SUBDOMAINS: &[&str] = &["news", "blog", "shop", "docs", "forum", "library", "m"];

/// The host name of the `index`-th host of `domain`: `www.` or the bare domain for
/// the first host, a distinct subdomain for the others.
pub(crate) fn host_name<R: Rng>(domain: &str, index: usize, rng: &mut R) -> String {
    match index {
        0 if rng.random_bool(0.2) => domain.to_string(),
        0 => format!("www.{domain}"),
        i => format!("{}.{domain}", SUBDOMAINS[(i - 1) % SUBDOMAINS.len()]),
    }
}

/// Whether the extra host number `index` of a domain still has an unused prefix.
pub(crate) fn has_subdomain(index: usize) -> bool {
    (1..=SUBDOMAINS.len()).contains(&index)
}

const SECTIONS: &[&str] = &[
    "news",
    "world",
    "business",
    "tech",
    "science",
    "sports",
    "health",
    "arts",
    "travel",
    "food",
    "opinion",
    "research",
    "events",
    "people",
    "education",
    "politics",
    "local",
    "culture",
    "music",
    "books",
    "film",
    "games",
    "style",
    "money",
    "jobs",
    "weather",
    "energy",
    "climate",
    "space",
    "history",
    "law",
    "media",
];

/// Writes the name of section `index` of a host (`news`, …, then `topic-32`, …).
pub(crate) fn write_section(out: &mut String, index: usize) {
    match SECTIONS.get(index) {
        Some(name) => out.push_str(name),
        None => write!(out, "topic-{index}").expect("writing to a String"),
    }
}

const WORDS: &[&str] = &[
    "new", "study", "report", "city", "plan", "market", "team", "season", "review", "guide",
    "update", "record", "data", "water", "power", "school", "health", "game", "deal", "court",
    "vote", "film", "open", "first", "big", "small", "late", "early", "local", "global", "rise",
    "fall", "test", "case", "price", "home", "road", "river", "north", "south", "east", "west",
    "year", "week", "day", "night", "star", "line", "field", "light", "chart", "future", "past",
    "talk", "award", "change", "growth", "storm", "trial", "launch", "policy", "campus", "budget",
    "story",
];

/// Writes a 2–4 word slug such as `city-budget-vote`.
pub(crate) fn write_slug<R: Rng>(out: &mut String, rng: &mut R) {
    for i in 0..rng.random_range(2..=4) {
        if i > 0 {
            out.push('-');
        }
        out.push_str(WORDS[rng.random_range(0..WORDS.len())]);
    }
}
