//! The frequent partial crawl of news front pages: ECHO's time scale.
//!
//! Lefortier et al. recrawled their content sources every 10 minutes for three weeks.
//! The weekly crawl cannot show what ECHO estimates (new links per minute, clicks that
//! fade within hours), so the generator also writes `OUT/news/`, a crawl directory of
//! partial snapshots every [`INTERVAL`]: each fetches the front pages of a set of news
//! hosts (main page, section hubs, on some hosts feed mirrors of the hubs) and the new
//! articles they list for the first time; nothing else, and pages it does not fetch
//! are not gone.
//!
//! Articles arrive on each section as a Poisson process. A hub and its mirrors list
//! the section's newest [`LISTING`] articles; the main page features some of them for
//! at most [`FEATURE_HOURS`] and at most [`FEATURED`] at a time. So links appear when
//! an article is published and disappear when newer ones push it off a list or its
//! feature time ends, as on real front pages; an article that appears and drops off
//! between two crawls is never seen.
//!
//! Clicks follow the ECHO model of [`super::clicks`]: an article's clicks accumulate as
//! `P (1 − e^{−μt})` with `P` the summed profit of the front pages listing it when it
//! appears and `μ` its host's decay, logged in 20-minute bins from its creation. Hosts
//! without a click log make the pipeline fall back on its default profit.
//!
//! ```text
//! OUT/news/snapshots/<seq>/{snapshot.json, pages.parquet, links.parquet}   (partial)
//! OUT/news/clicks.parquet
//! OUT/news/truth/sources.parquet   (url, host, kind, lambda_per_s, p_profit, mu_per_s, clicks_logged)
//! ```

use std::collections::VecDeque;
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use arrow_array::{ArrayRef, BooleanArray, Float64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use rand::Rng;
use rand_distr::{Distribution, LogNormal};

use super::clicks::{article_clicks, ClickRow};
use super::clock::{micros, seconds, Micros, DAY, HOUR, MINUTE, START};
use super::names::{self, Class, Namer};
use super::random::{poisson, sim_rng};
use super::snapshot::{Crawl, LinkRow, PageRow};
use super::urls::{UrlStore, UrlView};
use super::write::{write_clicks, write_crawl, write_parquet};
use super::Preset;

/// Time between two partial crawls.
pub(crate) const INTERVAL: f64 = 10.0 * MINUTE;
/// Articles a hub (and each of its mirrors) lists.
const LISTING: usize = 20;
/// Articles the main page features at most, and for at most this many hours.
const FEATURED: usize = 30;
const FEATURE_HOURS: f64 = 8.0;
/// Share of new articles the main page features.
const FEATURE_SHARE: f64 = 0.5;
/// Share of hosts whose hubs have a feed mirror.
const MIRROR_SHARE: f64 = 0.25;
/// Share of hosts with a click log.
const CLICK_LOG_SHARE: f64 = 0.9;
/// Median new articles per hour of a section (log-normal, sigma [`RATE_SIGMA`]).
const SECTION_RATE: f64 = 1.5;
const RATE_SIGMA: f64 = 0.8;
/// Median clicks a new article gets through a main page, a hub and a mirror.
const MAIN_PROFIT: f64 = 30.0;
const HUB_PROFIT: f64 = 10.0;
const MIRROR_PROFIT: f64 = 3.0;
/// History before the first crawl, so that lists are full when it starts.
const WARM_UP: f64 = 12.0 * HOUR;

/// Size of the news crawl of a preset.
struct Size {
    hosts: usize,
    days: f64,
}

fn size(preset: Preset) -> Size {
    match preset {
        Preset::Tiny => Size {
            hosts: 4,
            days: 0.25,
        },
        Preset::Demo => Size {
            hosts: 60,
            days: 2.0,
        },
        Preset::Bench => Size {
            hosts: 400,
            days: 7.0,
        },
    }
}

/// What a front page is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Main,
    Hub,
    Mirror,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Main => "main",
            Kind::Hub => "hub",
            Kind::Mirror => "mirror",
        }
    }
}

/// A front page and its true ECHO parameters.
struct Source {
    page: u32,
    host: u32,
    kind: Kind,
    /// Clicks a new article gets through this page's link.
    profit: f64,
    /// New articles per second on its list.
    lambda: f64,
    /// Over the articles it listed when they appeared (after the first crawl): the
    /// sum of their expected clicks, and their number.
    listed: (f64, u32),
    /// Digest version: bumped when its list changes.
    version: u32,
}

struct Section {
    /// Sources of the hub and its mirrors.
    sources: Vec<u32>,
    /// Newest articles, oldest first.
    listing: VecDeque<u32>,
    /// New articles per second.
    rate: f64,
}

struct Host {
    name: String,
    main_source: u32,
    sections: Vec<Section>,
    /// Featured articles and when they were featured, oldest first.
    featured: VecDeque<(u32, Micros)>,
    decay: f64,
    clicks: bool,
    next_article: u32,
}

/// An article: whether a crawl has fetched it.
struct Article {
    fetched: bool,
}

/// The news web and its click log.
struct News {
    urls: UrlStore,
    hosts: Vec<Host>,
    sources: Vec<Source>,
    /// Per page: `None` for a front page.
    articles: Vec<Option<Article>>,
    clicks: Vec<ClickRow>,
}

/// What [`generate_news`] wrote.
pub(crate) struct NewsSummary {
    pub snapshots: usize,
    pub sources: usize,
    pub articles: usize,
}

/// Writes the news crawl of `(preset, seed)` under `out` (a fresh directory).
pub(crate) fn generate_news(
    preset: Preset,
    seed: u64,
    out: &Path,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<NewsSummary> {
    let size = size(preset);
    let mut rng = sim_rng(preset as u64 + 101, seed);
    let mut news = News::new(&size, &mut rng);
    let start = START;
    let snapshots = (size.days * DAY / INTERVAL).round() as usize;
    let end = start + micros(INTERVAL * (snapshots - 1) as f64);
    let arrivals = news.arrivals(&mut rng, start - micros(WARM_UP), end);
    let mut next = 0;
    let dir = out.join("snapshots");
    for seq in 0..snapshots {
        let now = start + micros(INTERVAL * seq as f64);
        while next < arrivals.len() && arrivals[next].0 <= now {
            let (at, host, section) = arrivals[next];
            news.publish(&mut rng, host, section, at, at >= start, end);
            next += 1;
        }
        news.expire_features(now);
        let crawl = news.crawl(seq, now);
        let urls = news.urls.view();
        write_crawl(&dir.join(seq.to_string()), &crawl, &urls, true)?;
        if seq % 36 == 35 || seq + 1 == snapshots {
            progress(&format!(
                "news crawl: snapshot {}/{snapshots} (news/snapshots/{seq})",
                seq + 1
            ));
        }
    }
    news.clicks.sort_unstable_by_key(|c| (c.time, c.page));
    let urls = news.urls.view();
    write_clicks(&out.join("clicks.parquet"), &news.clicks, &urls)?;
    let truth = out.join("truth");
    std::fs::create_dir_all(&truth)
        .with_context(|| format!("Could not create {}", truth.display()))?;
    news.write_truth(&truth.join("sources.parquet"), &urls)?;
    Ok(NewsSummary {
        snapshots,
        sources: news.sources.len(),
        articles: news.articles.iter().flatten().count(),
    })
}

impl News {
    fn new<R: Rng>(size: &Size, rng: &mut R) -> News {
        let mut news = News {
            urls: UrlStore::new(),
            hosts: Vec::new(),
            sources: Vec::new(),
            articles: Vec::new(),
            clicks: Vec::new(),
        };
        let mut namer = Namer::default();
        let rate = LogNormal::new(SECTION_RATE.ln(), RATE_SIGMA).expect("valid sigma");
        let profit = LogNormal::new(0.0, 0.7).expect("valid sigma");
        for h in 0..size.hosts {
            let domain = namer.domain(Class::Com, rng);
            let name = names::host_name(&domain, 0, rng);
            let origin = format!("https://{name}/");
            let host = h as u32;
            let main_source =
                news.add_source(&origin, host, Kind::Main, MAIN_PROFIT * profit.sample(rng));
            let mirrored = rng.random_bool(MIRROR_SHARE);
            let mut sections = Vec::new();
            for s in 0..rng.random_range(2..=8) {
                let mut path = origin.clone();
                path.push_str("section/");
                names::write_section(&mut path, s);
                path.push('/');
                let mut sources =
                    vec![news.add_source(&path, host, Kind::Hub, HUB_PROFIT * profit.sample(rng))];
                if mirrored {
                    let mut feed = origin.clone();
                    feed.push_str("feeds/");
                    names::write_section(&mut feed, s);
                    feed.push('/');
                    let p = MIRROR_PROFIT * profit.sample(rng);
                    sources.push(news.add_source(&feed, host, Kind::Mirror, p));
                }
                let section_rate = rate.sample(rng) / HOUR;
                for &src in &sources {
                    news.sources[src as usize].lambda = section_rate;
                }
                news.sources[main_source as usize].lambda += FEATURE_SHARE * section_rate;
                sections.push(Section {
                    sources,
                    listing: VecDeque::new(),
                    rate: section_rate,
                });
            }
            news.hosts.push(Host {
                name,
                main_source,
                sections,
                featured: VecDeque::new(),
                // Half-lives between 30 minutes and a day, log-uniformly.
                decay: std::f64::consts::LN_2 / (0.5 * HOUR * 48f64.powf(rng.random::<f64>())),
                clicks: rng.random_bool(CLICK_LOG_SHARE),
                next_article: 1,
            });
        }
        news
    }

    fn add_source(&mut self, url: &str, host: u32, kind: Kind, profit: f64) -> u32 {
        let (page, _) = self.urls.push(|u| u.push_str(url));
        debug_assert_eq!(page as usize, self.articles.len());
        self.articles.push(None);
        self.sources.push(Source {
            page,
            host,
            kind,
            profit,
            lambda: 0.0,
            listed: (0.0, 0),
            version: 0,
        });
        (self.sources.len() - 1) as u32
    }

    /// Every article arrival in `[from, to]`, in time order: `(time, host, section)`.
    fn arrivals<R: Rng>(&self, rng: &mut R, from: Micros, to: Micros) -> Vec<(Micros, u32, u16)> {
        let span = seconds(to - from);
        let mut out = Vec::new();
        for (h, host) in self.hosts.iter().enumerate() {
            for (s, section) in host.sections.iter().enumerate() {
                for _ in 0..poisson(rng, section.rate * span) {
                    let at = from + micros(rng.random::<f64>() * span);
                    out.push((at, h as u32, s as u16));
                }
            }
        }
        out.sort_unstable();
        out
    }

    /// Publishes an article on `section` of `host` at `at`: on the hub and its
    /// mirrors, maybe featured on the main page, and its clicks logged up to `end`.
    /// `counted` says whether it enters the sources' true profit (it appeared after
    /// the first crawl, the pipeline's baseline).
    fn publish<R: Rng>(
        &mut self,
        rng: &mut R,
        host: u32,
        section: u16,
        at: Micros,
        counted: bool,
        end: Micros,
    ) {
        let h = &mut self.hosts[host as usize];
        let number = h.next_article;
        h.next_article += 1;
        let mut url = format!("https://{}/", h.name);
        names::write_section(&mut url, section as usize);
        url.push_str(&format!("/{}/", super::clock::year(at)));
        names::write_slug(&mut url, rng);
        url.push_str(&format!("-{number}.html"));
        let (page, _) = self.urls.push(|u| u.push_str(&url));
        self.articles.push(Some(Article { fetched: false }));

        let h = &mut self.hosts[host as usize];
        let s = &mut h.sections[section as usize];
        s.listing.push_back(page);
        if s.listing.len() > LISTING {
            s.listing.pop_front();
        }
        let mut listing: Vec<u32> = s.sources.clone();
        if rng.random_bool(FEATURE_SHARE) {
            h.featured.push_back((page, at));
            if h.featured.len() > FEATURED {
                h.featured.pop_front();
            }
            listing.push(h.main_source);
        }
        let (decay, logged) = (h.decay, h.clicks);
        let profit: f64 = listing
            .iter()
            .map(|&s| self.sources[s as usize].profit)
            .sum();
        for &s in &listing {
            let src = &mut self.sources[s as usize];
            src.version += 1;
            if counted {
                src.listed.0 += profit;
                src.listed.1 += 1;
            }
        }
        if logged {
            article_clicks(rng, page, at, profit, decay, Some(end), &mut self.clicks);
        }
    }

    /// Ends the features older than [`FEATURE_HOURS`].
    fn expire_features(&mut self, now: Micros) {
        for h in &mut self.hosts {
            let before = h.featured.len();
            while h
                .featured
                .front()
                .is_some_and(|&(_, at)| seconds(now - at) > FEATURE_HOURS * HOUR)
            {
                h.featured.pop_front();
            }
            if h.featured.len() != before {
                self.sources[h.main_source as usize].version += 1;
            }
        }
    }

    /// The partial crawl at `now`: every front page, and the articles listed now
    /// that no crawl fetched before (each with its links to its hub and main page).
    fn crawl(&mut self, seq: usize, now: Micros) -> Crawl {
        let mut pages = Vec::new();
        let mut links = Vec::new();
        let page_row = |page: u32, version: u32| PageRow {
            page,
            fetch_time: now,
            status: 200,
            digest: Some(u64::from(page) << 32 | u64::from(version)),
        };
        let link = |src: u32, dst: u32| LinkRow { src, dst, count: 1 };
        for h in &self.hosts {
            let main = &self.sources[h.main_source as usize];
            pages.push(page_row(main.page, main.version));
            // The main page links to every hub and feed.
            for s in &h.sections {
                links.extend(
                    s.sources
                        .iter()
                        .map(|&f| link(main.page, self.sources[f as usize].page)),
                );
            }
            links.extend(h.featured.iter().map(|&(a, _)| link(main.page, a)));
            for s in &h.sections {
                for &src in &s.sources {
                    let front = &self.sources[src as usize];
                    pages.push(page_row(front.page, front.version));
                    links.push(link(front.page, main.page));
                    links.extend(s.listing.iter().map(|&a| link(front.page, a)));
                }
            }
        }
        // New articles: listed now and never fetched (a crawler fetches what its
        // front pages reveal). The first crawl only records what is listed.
        if seq > 0 {
            for h in &self.hosts {
                let main = self.sources[h.main_source as usize].page;
                let featured = h.featured.iter().map(|&(a, _)| a);
                for (hub, a) in h
                    .sections
                    .iter()
                    .flat_map(|s| s.listing.iter().map(|&a| (s.sources[0], a)))
                    .chain(featured.map(|a| (h.main_source, a)))
                {
                    let Some(article) = self.articles[a as usize].as_mut() else {
                        continue;
                    };
                    if article.fetched {
                        continue;
                    }
                    article.fetched = true;
                    pages.push(page_row(a, 0));
                    links.push(link(a, main));
                    let hub_page = self.sources[hub as usize].page;
                    if hub_page != main {
                        links.push(link(a, hub_page));
                    }
                }
            }
        } else {
            for a in self.articles.iter_mut().flatten() {
                a.fetched = true;
            }
        }
        Crawl {
            seq,
            time: now,
            pages,
            links,
        }
    }

    fn write_truth(&self, path: &Path, urls: &UrlView) -> anyhow::Result<()> {
        let schema: SchemaRef = Arc::new(Schema::new(vec![
            Field::new("url", DataType::Utf8, false),
            Field::new("host", DataType::Utf8, false),
            Field::new("kind", DataType::Utf8, false),
            Field::new("lambda_per_s", DataType::Float64, false),
            Field::new("p_profit", DataType::Float64, false),
            Field::new("mu_per_s", DataType::Float64, false),
            Field::new("clicks_logged", DataType::Boolean, false),
        ]));
        let s = &self.sources;
        let host = |x: &Source| &self.hosts[x.host as usize];
        let columns: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from_iter_values(
                s.iter().map(|x| urls.get(x.page)),
            )),
            Arc::new(StringArray::from_iter_values(
                s.iter().map(|x| host(x).name.as_str()),
            )),
            Arc::new(StringArray::from_iter_values(
                s.iter().map(|x| x.kind.name()),
            )),
            Arc::new(Float64Array::from_iter_values(s.iter().map(|x| x.lambda))),
            // The mean expected clicks of the articles it listed when they appeared
            // (co-listing pages' profits included); its own profit if none.
            Arc::new(Float64Array::from_iter_values(s.iter().map(
                |x| match x.listed {
                    (sum, n) if n > 0 => sum / f64::from(n),
                    _ => x.profit,
                },
            ))),
            Arc::new(Float64Array::from_iter_values(
                s.iter().map(|x| host(x).decay),
            )),
            Arc::new(BooleanArray::from_iter(
                s.iter().map(|x| Some(host(x).clicks)),
            )),
        ];
        let batch = RecordBatch::try_new(schema.clone(), columns)?;
        write_parquet(path, schema, &["url"], std::iter::once(Ok(batch)))
    }
}
