//! The simulated web: hosts, their front pages and articles, and how pages are made.
//!
//! A host has a main page, one hub per section (`/section/<name>/`), on some hosts
//! mirrors of the hubs (`/feeds/<name>/`, `/m/section/<name>/`) that list exactly the same
//! articles, and articles (`/<section>/<year>/<slug>-<n>.html`). Front pages (main,
//! hubs, mirrors) hold bounded "newest first" lists, so old articles drop off as new
//! ones arrive; an article's own links are fixed when it is written, and the links
//! that break later are only cleaned up the next time its content changes. That keeps
//! "the digest changes" equivalent to "the content changed" for articles.
//!
//! Links between hosts are in `crosslinks`, deaths in `evolve`.

use std::collections::VecDeque;

use rand::distr::weighted::WeightedIndex;
use rand::distr::Distribution;
use rand::Rng;
use rand_distr::LogNormal;

use super::change::sample_rate;
use super::clock::{self, Micros, HOUR, WEEK};
use super::crosslinks::UNRESOLVED;
use super::names::{self, Class, Namer};
use super::presets::Params;
use super::random::poisson;
use super::urls::UrlStore;

/// Share of listed new articles that also appear in the main page's "what's new" list.
const FEATURE_SHARE: f64 = 0.7;
/// Share of hosts whose hubs have mirrors listing the same articles.
const MIRROR_HOST_SHARE: f64 = 0.15;
/// Share of hosts that serve https (the rest plain http).
const HTTPS_SHARE: f64 = 0.75;
/// Share of main pages with a `mailto:` or `javascript:` link (at least three hosts).
const ODD_LINK_SHARE: f64 = 0.005;
/// Recent articles per section that new articles and other hosts pick link targets from.
const POOL: usize = 32;
/// Median expected clicks a new article gets through the main page, a hub or a mirror
/// listing it (per-source profits are log-normal around these).
const MAIN_PROFIT: f64 = 30.0;
const HUB_PROFIT: f64 = 10.0;
const MIRROR_PROFIT: f64 = 3.0;
/// Article deaths per week that do not follow the news rate (pages just go away).
const BASE_DEATHS: f64 = 0.002;
/// Spread (log-normal sigma) of per-host news rates.
const NEWS_SIGMA: f64 = 1.0;
/// Highest news rate: new articles per week as a fraction of the host's size.
const NEWS_CAP: f64 = 0.5;

/// What a page is on its host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    Main,
    Hub,
    Mirror,
    Article,
}

/// One page ever made.
pub(crate) struct Page {
    pub host: u32,
    pub section: u16,
    pub role: Role,
    /// Dead, but still answers 404 at the next crawl.
    pub linger: bool,
    /// Content changes so far; the digest is a hash of (URL, changes).
    pub changes: u32,
    /// An article's own links: `outlinks[out_start..out_start + out_len]`.
    pub out_start: u32,
    pub out_len: u16,
    pub created: Micros,
    pub died: Option<Micros>,
    /// True rate (per second) of spontaneous content changes.
    pub lambda: f64,
    /// Hash of the URL, the seed of its digests.
    pub url_hash: u64,
}

/// A content source of the ECHO model: a front page whose links to new articles bring
/// them clicks.
pub(crate) struct Source {
    pub page: u32,
    /// Expected clicks a new page receives through this source's link to it.
    pub profit: f64,
    /// Expected rate (per second) of new articles appearing in this source's list.
    pub lambda: f64,
}

/// A section of a host: its hub, the hub's mirrors and their shared lists.
pub(crate) struct Section {
    pub hub: u32,
    pub hub_source: u32,
    /// `(page, source)` of each mirror.
    pub mirrors: Vec<(u32, u32)>,
    /// Newest listed articles, oldest first; the hub and every mirror show all of them.
    pub listing: VecDeque<u32>,
    /// Recent non-orphan articles, link targets for siblings and other hosts.
    pub pool: VecDeque<u32>,
    /// Main pages of new sites the hub links to.
    pub ext: VecDeque<u32>,
    pub listing_dirty: bool,
    pub ext_dirty: bool,
}

/// A main page's extra outlink that is not a page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OddLink {
    Mailto,
    Javascript,
}

pub(crate) struct Host {
    pub name: String,
    pub https: bool,
    pub class: Class,
    /// Index into [`Web::domains`].
    pub domain: u32,
    pub created: Micros,
    pub died: Option<Micros>,
    /// New-article events per second (constant over the host's life).
    pub rate: f64,
    /// Death hazard of each article (per second).
    pub death_rate: f64,
    pub main: u32,
    pub main_source: u32,
    pub sections: Vec<Section>,
    /// Newest featured articles of the main page, oldest first.
    pub featured: VecDeque<u32>,
    pub featured_cap: usize,
    pub listing_cap: usize,
    /// Main pages of new sites the main page links to.
    pub ext: VecDeque<u32>,
    pub main_dirty: bool,
    /// Pages crawled at the next snapshot, in creation order (live ones and lingering 404s).
    pub pages: Vec<u32>,
    /// Number that the next article's file name gets.
    pub next_article: u32,
    /// How often an article links to the main page.
    pub home_links: u8,
    /// Whether clicks are logged for this host's new articles.
    pub clicks: bool,
    /// Decay of the clicks on the host's new articles (per second): the audience of a
    /// site, not the link it comes through, sets how fast interest fades.
    pub click_decay: f64,
    pub odd: Option<OddLink>,
}

/// How a new article is reachable when it appears.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Listing {
    /// On its section's hub (and mirrors), maybe on the main page.
    Listed,
    /// Only through links from other new articles (a chain).
    Unlisted,
    /// Nothing links to it.
    Orphan,
}

/// The whole simulated web.
pub(crate) struct Web {
    pub params: Params,
    pub hosts: Vec<Host>,
    pub pages: Vec<Page>,
    /// Arena of articles' own links (page indices).
    pub outlinks: Vec<u32>,
    pub urls: UrlStore,
    pub sources: Vec<Source>,
    pub domains: Vec<Domain>,
    pub namer: Namer,
    /// Scale from a raw Pareto draw to a host size in articles (set by the initial web).
    pub size_unit: f64,
    /// Cross-host link targets, weighted by host size; see [`Web::set_targets`].
    pub targets: Option<WeightedIndex<f64>>,
    /// New articles leave placeholders for their links to other hosts (while the
    /// initial web is built host by host), see [`Web::resolve_cross_links`].
    pub defer_cross_links: bool,
}

/// A registered domain (`x.com`, `x.co.uk`) and its hosts.
pub(crate) struct Domain {
    pub name: String,
    pub class: Class,
    pub hosts: Vec<u32>,
}

/// What is needed to add a host.
pub(crate) struct HostSpec {
    pub name: String,
    pub domain: u32,
    pub created: Micros,
    /// Articles the host is expected to hold; sets its sections, rates and list sizes.
    pub size: f64,
    /// Whether its hubs must list all its first articles (new hosts start with a sitemap).
    pub new_site: bool,
}

impl Web {
    pub(crate) fn new(params: Params) -> Web {
        Web {
            params,
            hosts: Vec::new(),
            pages: Vec::new(),
            outlinks: Vec::new(),
            urls: UrlStore::new(),
            sources: Vec::new(),
            domains: Vec::new(),
            namer: Namer::default(),
            size_unit: 1.0,
            targets: None,
            defer_cross_links: false,
        }
    }

    /// Adds a host with its main page, hubs and mirrors (no articles yet).
    pub(crate) fn add_host<R: Rng>(&mut self, rng: &mut R, spec: HostSpec) -> u32 {
        let id = self.hosts.len() as u32;
        let size = spec.size.max(3.0);
        let class = self.domains[spec.domain as usize].class;
        let news = (news_median(class)
            * LogNormal::new(0.0, NEWS_SIGMA)
                .expect("valid sigma")
                .sample(rng))
        .min(NEWS_CAP);
        let rate = size * news / WEEK;
        let sections = section_count(size);
        let listed_rate = rate * (1.0 - self.params.orphan_share);
        let weekly_per_section = listed_rate * WEEK / sections as f64;
        let mut listing_cap = ((2.0 * weekly_per_section).ceil() as usize).clamp(8, 150);
        if spec.new_site {
            listing_cap = listing_cap.max((size / sections as f64).ceil() as usize + 2);
        }
        let featured_cap =
            ((1.5 * listed_rate * WEEK * FEATURE_SHARE).ceil() as usize).clamp(8, 60);
        let odd_share = ODD_LINK_SHARE.max(3.0 / self.params.hosts as f64);
        let odd = rng.random_bool(odd_share).then(|| {
            if rng.random_bool(0.5) {
                OddLink::Mailto
            } else {
                OddLink::Javascript
            }
        });
        self.domains[spec.domain as usize].hosts.push(id);
        self.hosts.push(Host {
            name: spec.name,
            https: rng.random_bool(HTTPS_SHARE),
            class,
            domain: spec.domain,
            created: spec.created,
            died: None,
            rate,
            // Deaths balance arrivals (a chain event adds three articles on average);
            // the web grows through new hosts.
            death_rate: (news * (1.0 + 2.0 * self.params.chain_share) + BASE_DEATHS) / WEEK,
            main: 0,
            main_source: 0,
            sections: Vec::with_capacity(sections),
            featured: VecDeque::new(),
            featured_cap,
            listing_cap,
            ext: VecDeque::new(),
            main_dirty: false,
            pages: Vec::new(),
            next_article: 1,
            home_links: home_links(rng.random()),
            clicks: rng.random_bool(self.params.click_host_share),
            // Half-lives between 30 minutes and a day, log-uniformly.
            click_decay: std::f64::consts::LN_2 / (0.5 * HOUR * 48f64.powf(rng.random::<f64>())),
            odd,
        });

        self.add_fronts(rng, id, sections, listed_rate);
        id
    }

    /// Adds the main page, `sections` hubs and, on some hosts, mirrors of the hubs, with
    /// their ECHO parameters; `listed_rate` is the host's rate of listed new articles.
    fn add_fronts<R: Rng>(&mut self, rng: &mut R, id: u32, sections: usize, listed_rate: f64) {
        let main = self.add_front(rng, id, Role::Main, 0, |_| {});
        let main_source = self.add_source(rng, main, MAIN_PROFIT, listed_rate * FEATURE_SHARE);
        let mirrored = rng.random_bool(MIRROR_HOST_SHARE);
        for s in 0..sections {
            let section = s as u16;
            let hub = self.add_front(rng, id, Role::Hub, section, |url| {
                url.push_str("section/");
                names::write_section(url, s);
                url.push('/');
            });
            let per_section = listed_rate / sections as f64;
            let hub_source = self.add_source(rng, hub, HUB_PROFIT, per_section);
            let mut mirrors = Vec::new();
            if mirrored {
                let count = rng.random_range(1..=2);
                for prefix in ["feeds/", "m/section/"].into_iter().take(count) {
                    let page = self.add_front(rng, id, Role::Mirror, section, |url| {
                        url.push_str(prefix);
                        names::write_section(url, s);
                        url.push('/');
                    });
                    mirrors.push((page, self.add_source(rng, page, MIRROR_PROFIT, per_section)));
                }
            }
            self.hosts[id as usize].sections.push(Section {
                hub,
                hub_source,
                mirrors,
                listing: VecDeque::new(),
                pool: VecDeque::new(),
                ext: VecDeque::new(),
                listing_dirty: false,
                ext_dirty: false,
            });
        }
        let host = &mut self.hosts[id as usize];
        host.main = main;
        host.main_source = main_source;
    }

    /// Adds a front page of `host` whose path (after the leading `/`) `path` writes.
    fn add_front<R: Rng>(
        &mut self,
        rng: &mut R,
        host: u32,
        role: Role,
        section: u16,
        path: impl FnOnce(&mut String),
    ) -> u32 {
        let h = &self.hosts[host as usize];
        let created = h.created;
        let class = h.class;
        let (page, hash) = {
            let (page, url) = self.urls.push(|url| {
                write_origin(url, h);
                path(url);
            });
            (page, fnv1a(url.as_bytes()))
        };
        self.push_page(Page {
            host,
            section,
            role,
            linger: false,
            changes: 0,
            out_start: 0,
            out_len: 0,
            created,
            died: None,
            lambda: sample_rate(class, rng),
            url_hash: hash,
        });
        page
    }

    /// Adds the ECHO parameters of a front page; `median_profit` scales its clicks.
    fn add_source<R: Rng>(
        &mut self,
        rng: &mut R,
        page: u32,
        median_profit: f64,
        lambda: f64,
    ) -> u32 {
        let profit = median_profit * LogNormal::new(0.0, 1.0).expect("valid sigma").sample(rng);
        self.sources.push(Source {
            page,
            profit,
            lambda,
        });
        (self.sources.len() - 1) as u32
    }

    fn push_page(&mut self, page: Page) {
        let host = page.host;
        let id = self.pages.len() as u32;
        self.pages.push(page);
        self.hosts[host as usize].pages.push(id);
    }

    /// One new-article event on `host` at time `at`: usually one listed article; with
    /// the preset's shares an orphan, or a chain of a listed head and 1–3 unlisted
    /// followers (head → follower → follower).
    pub(crate) fn add_arrival<R: Rng>(&mut self, rng: &mut R, host: u32, at: Micros) {
        let sections = self.hosts[host as usize].sections.len();
        let section = rng.random_range(0..sections) as u16;
        let u: f64 = rng.random();
        if u < self.params.orphan_share {
            self.add_article(rng, host, section, at, Listing::Orphan, None);
        } else if u < self.params.orphan_share + self.params.chain_share {
            let mut next = None;
            for _ in 0..rng.random_range(1..=3) {
                next = Some(self.add_article(rng, host, section, at, Listing::Unlisted, next));
            }
            self.add_article(rng, host, section, at, Listing::Listed, next);
        } else {
            self.add_article(rng, host, section, at, Listing::Listed, None);
        }
    }

    /// Writes an article, its own links, and puts it on its host's lists.
    fn add_article<R: Rng>(
        &mut self,
        rng: &mut R,
        host: u32,
        section: u16,
        created: Micros,
        listing: Listing,
        next: Option<u32>,
    ) -> u32 {
        let h = &mut self.hosts[host as usize];
        let number = h.next_article;
        h.next_article += 1;
        let class = h.class;
        let h = &self.hosts[host as usize];
        let (page, url_hash) = {
            let (page, url) = self.urls.push(|url| {
                write_origin(url, h);
                names::write_section(url, section as usize);
                use std::fmt::Write;
                write!(url, "/{}/", clock::year(created)).expect("writing to a String");
                names::write_slug(url, rng);
                write!(url, "-{number}.html").expect("writing to a String");
            });
            (page, fnv1a(url.as_bytes()))
        };

        let out_start = self.outlinks.len();
        self.outlinks.extend(next);
        let (lo, hi) = self.params.siblings;
        let pool = &self.hosts[host as usize].sections[section as usize].pool;
        let wanted = rng.random_range(lo..=hi).min(pool.len());
        // Distinct siblings: a partial Fisher–Yates shuffle of the (small) pool.
        let mut candidates = [0u32; POOL];
        for (c, &p) in candidates.iter_mut().zip(pool) {
            *c = p;
        }
        for i in 0..wanted {
            let j = rng.random_range(i..pool.len());
            candidates.swap(i, j);
            if Some(candidates[i]) != next {
                self.outlinks.push(candidates[i]);
            }
        }
        for _ in 0..poisson(rng, self.params.cross_links) {
            if self.defer_cross_links {
                self.outlinks.push(UNRESOLVED);
            } else if let Some(target) = self.cross_target(rng, host) {
                if !self.outlinks[out_start..].contains(&target) {
                    self.outlinks.push(target);
                }
            }
        }
        if rng.random_bool(self.params.self_link_share) {
            self.outlinks.push(page);
        }
        let out_len = u16::try_from(self.outlinks.len() - out_start).expect("few outlinks");

        self.push_page(Page {
            host,
            section,
            role: Role::Article,
            linger: false,
            changes: 0,
            out_start: out_start as u32,
            out_len,
            created,
            died: None,
            lambda: sample_rate(class, rng),
            url_hash,
        });
        self.put_on_lists(rng, host, section, page, listing);
        page
    }

    /// Puts a new article on its section's lists and maybe on the main page.
    fn put_on_lists<R: Rng>(
        &mut self,
        rng: &mut R,
        host: u32,
        section: u16,
        page: u32,
        listing: Listing,
    ) {
        let h = &mut self.hosts[host as usize];
        let listing_cap = h.listing_cap;
        let s = &mut h.sections[section as usize];
        if listing == Listing::Orphan {
            return;
        }
        push_capped(&mut s.pool, page, POOL);
        if listing == Listing::Listed {
            push_capped(&mut s.listing, page, listing_cap);
            s.listing_dirty = true;
            if rng.random_bool(FEATURE_SHARE) {
                let cap = h.featured_cap;
                push_capped(&mut h.featured, page, cap);
                h.main_dirty = true;
            }
        }
    }
}

/// Sections (hubs) of a host of `size` articles: about `sqrt(size) / 2.5`, 1 to 40.
pub(crate) fn section_count(size: f64) -> usize {
    ((size.sqrt() / 2.5).round() as usize).clamp(1, 40)
}

/// Median news rate (new articles per week as a fraction of the host's size) per class.
fn news_median(class: Class) -> f64 {
    match class {
        Class::Com => 0.06,
        Class::Other => 0.05,
        Class::NetOrg => 0.04,
        Class::Edu | Class::Gov => 0.02,
    }
}

/// How often an article links to its main page (logo, "home", footer): 1 on 70% of
/// hosts, 2 on 22%, 3 on 8%.
fn home_links(u: f64) -> u8 {
    match u {
        u if u < 0.70 => 1,
        u if u < 0.92 => 2,
        _ => 3,
    }
}

/// Writes `scheme://host/`.
fn write_origin(url: &mut String, h: &Host) {
    url.push_str(if h.https { "https://" } else { "http://" });
    url.push_str(&h.name);
    url.push('/');
}

/// Appends to a newest-last list, dropping the oldest entries beyond `cap`.
pub(crate) fn push_capped(list: &mut VecDeque<u32>, page: u32, cap: usize) {
    list.push_back(page);
    while list.len() > cap {
        list.pop_front();
    }
}

/// 64-bit FNV-1a, a stable hash: digests must not depend on the Rust version.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}
