//! Click logs of new articles: the profit signal of the ECHO model.
//!
//! Lefortier et al., "Timely Crawling of High-quality Ephemeral New Content", CIKM 2013,
//! Section 3: the clicks a new page receives accumulate as `P (1 - e^{-μ t})`. Here every
//! front page listing a new article at the first crawl that sees it is a content source
//! `i` that brings it `P_i` clicks on average; the clicks decay at the rate `μ` of the
//! article's host. So an article's clicks in each 20-minute bin `[a, b)` after its
//! creation are Poisson with mean `(Σ_i P_i) (e^{-μ a} - e^{-μ b})`, until fewer than one
//! click is still expected.
//!
//! The profit the pipeline fits for a source (the mean clicks of the new pages it
//! links) therefore includes what co-listing sources bring; the truth table reports
//! exactly that mean, see [`ClickLog::profit`].

use rand::Rng;

use super::clock::{micros, Micros, DAY, MINUTE};
use super::model::Web;
use super::random::poisson;

/// Width of a click-log bin.
const BIN: f64 = 20.0 * MINUTE;
/// Longest click history of one article.
const HORIZON: f64 = 4.0 * DAY;

/// Clicks on `page` in the bin starting at `time`.
pub(crate) struct ClickRow {
    pub page: u32,
    pub time: Micros,
    pub clicks: i64,
}

/// The click log, and per source the expected clicks of the new pages it listed.
#[derive(Default)]
pub(crate) struct ClickLog {
    /// Rows of the click-logged hosts, in the order logged.
    pub rows: Vec<ClickRow>,
    /// Per source: (sum of the expected total clicks of its new pages, their number).
    listed: Vec<(f64, u32)>,
}

impl ClickLog {
    /// Logs the articles created in `(prev, now]` that front pages list at `now`: their
    /// expected clicks for every host, their click rows for the click-logged hosts.
    pub(crate) fn log_new_articles<R: Rng>(
        &mut self,
        web: &Web,
        rng: &mut R,
        prev: Micros,
        now: Micros,
    ) {
        self.listed.resize(web.sources.len(), (0.0, 0));
        let is_new = |page: u32| {
            let created = web.pages[page as usize].created;
            created > prev && created <= now
        };
        // (article, source) pairs; sorted, an article's sources are adjacent.
        let mut listed = Vec::new();
        for host in web.hosts.iter().filter(|h| h.died.is_none()) {
            listed.extend(
                host.featured
                    .iter()
                    .filter(|&&a| is_new(a))
                    .map(|&a| (a, host.main_source)),
            );
            for s in &host.sections {
                for &a in s.listing.iter().filter(|&&a| is_new(a)) {
                    listed.push((a, s.hub_source));
                    listed.extend(s.mirrors.iter().map(|&(_, source)| (a, source)));
                }
            }
        }
        listed.sort_unstable();
        for group in listed.chunk_by(|x, y| x.0 == y.0) {
            let page = group[0].0;
            let profit: f64 = group
                .iter()
                .map(|&(_, s)| web.sources[s as usize].profit)
                .sum();
            for &(_, s) in group {
                let (sum, count) = &mut self.listed[s as usize];
                *sum += profit;
                *count += 1;
            }
            let p = &web.pages[page as usize];
            let host = &web.hosts[p.host as usize];
            if host.clicks {
                article_clicks(
                    rng,
                    page,
                    p.created,
                    profit,
                    host.click_decay,
                    None,
                    &mut self.rows,
                );
            }
        }
    }

    /// The expected total clicks per new page linked from `source`: the mean over the
    /// new pages it listed of the summed profit of all their sources; the source's own
    /// profit when it never listed one.
    pub(crate) fn profit(&self, web: &Web, source: u32) -> f64 {
        match self.listed.get(source as usize) {
            Some(&(sum, count)) if count > 0 => sum / f64::from(count),
            _ => web.sources[source as usize].profit,
        }
    }

    /// Sorts the rows by time, then page.
    pub(crate) fn sort(&mut self) {
        self.rows.sort_unstable_by_key(|c| (c.time, c.page));
    }
}

/// Appends to `out` the click rows of an article created at `created` whose clicks
/// accumulate as `profit (1 − e^{−decay · age})`: a Poisson count per 20-minute bin
/// from its creation, while at least one click is still expected, within
/// [`HORIZON`], and (with `end`) for bins that start by `end`.
pub(crate) fn article_clicks<R: Rng>(
    rng: &mut R,
    page: u32,
    created: Micros,
    profit: f64,
    decay: f64,
    end: Option<Micros>,
    out: &mut Vec<ClickRow>,
) {
    let remaining = |age: f64| profit * (-decay * age).exp();
    let mut start = 0.0;
    while start < HORIZON && (start == 0.0 || remaining(start) >= 1.0) {
        let time = created + micros(start);
        if end.is_some_and(|end| time > end) {
            break;
        }
        let clicks = poisson(rng, remaining(start) - remaining(start + BIN));
        if clicks > 0 {
            out.push(ClickRow {
                page,
                time,
                clicks: clicks as i64,
            });
        }
        start += BIN;
    }
}
