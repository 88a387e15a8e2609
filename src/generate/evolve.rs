//! How the web changes: the web of snapshot 0, and each step between two snapshots.
//!
//! A step simulates continuous time between two snapshot times: host deaths, article
//! deaths (exponential lifetimes, so death times are truncated-exponential within the
//! step), Poisson arrivals of new articles on live hosts, and new hosts with all their
//! pages. Content changes are applied when the snapshot is taken (see `snapshot`).

use std::collections::VecDeque;

use rand::Rng;
use rand_distr::{Distribution, Pareto};

use super::clock::{micros, seconds, Micros, DAY, WEEK};
use super::model::{section_count, Domain, HostSpec, Role, Web};
use super::names::{self, Class};
use super::presets::Params;
use super::random::poisson;

/// Share of registered domains that have two or three hosts (`www.`, `news.`, `blog.`).
const MULTI_HOST_SHARE: f64 = 0.12;
/// Share of new hosts that are a new subdomain of an existing registered domain.
const NEW_SUBDOMAIN_SHARE: f64 = 0.15;
/// Share of new hosts linked only from another new host of the same step.
const CHAINED_HOST_SHARE: f64 = 0.25;
/// Share of dying articles that answer 404 at the next crawl instead of vanishing.
const LINGER_SHARE: f64 = 0.1;
/// Largest new host, in articles.
const NEW_HOST_MAX: f64 = 200.0;

impl Web {
    /// The web at snapshot 0 (time `at`): hosts with Pareto sizes scaled to the preset's
    /// page count, each with articles written at uniform times since the host appeared.
    pub(crate) fn initial<R: Rng>(params: Params, rng: &mut R, at: Micros) -> Web {
        let mut web = Web::new(params);
        let pareto = Pareto::new(1.0, web.params.size_shape).expect("valid Pareto shape");
        let mut specs = Vec::new();
        while specs.len() < web.params.hosts {
            let domain = web.add_domain(rng);
            // Founded between 30 days and 6 years ago.
            let founded = at - micros(30.0 * DAY * 72f64.powf(rng.random::<f64>()));
            let hosts = if rng.random_bool(MULTI_HOST_SHARE) {
                rng.random_range(2..=3)
            } else {
                1
            };
            for i in 0..hosts {
                let created = founded
                    + ((at - founded) as f64 * 0.5 * i as f64 * rng.random::<f64>()) as Micros;
                let name = names::host_name(&web.domains[domain as usize].name, i, rng);
                let size = pareto.sample(rng);
                specs.push(HostSpec {
                    name,
                    domain,
                    created,
                    size,
                    new_site: false,
                });
            }
        }
        web.size_unit = size_unit(&web.params, specs.iter().map(|s| s.size));
        let cap = web.params.max_host_share * web.params.pages as f64;
        for spec in &mut specs {
            spec.size = (spec.size * web.size_unit).min(cap);
        }
        web.set_targets(specs.iter().map(|s| s.size));
        // Host by host, so that each host's pages are contiguous (crawls walk them in
        // order); links to other hosts wait until every host has its articles.
        web.defer_cross_links = true;
        let mut times = Vec::new();
        for spec in specs {
            let (created, size) = (spec.created, spec.size);
            let host = web.add_host(rng, spec);
            uniform_times(rng, web.events_for(size), created, at, &mut times);
            for &t in &times {
                web.add_arrival(rng, host, t);
            }
        }
        web.resolve_cross_links(rng);
        web
    }

    /// Simulates the web from time `from` to time `to`.
    pub(crate) fn advance<R: Rng>(&mut self, rng: &mut R, from: Micros, to: Micros) {
        // Cross-host links and referrers of new sites go to hosts by their current size.
        let weights: Vec<f64> = self
            .hosts
            .iter()
            .map(|h| match h.died {
                Some(_) => 0.0,
                None => h.pages.len() as f64,
            })
            .collect();
        self.set_targets(weights);
        let live: Vec<u32> = (0..self.hosts.len() as u32)
            .filter(|&h| self.hosts[h as usize].died.is_none())
            .collect();
        let host_died = self.kill_hosts(rng, &live, from, to);
        self.kill_articles(rng, &live, from, to, host_died);
        self.add_arrivals(rng, &live, from, to);
        self.add_new_hosts(rng, live.len(), from, to);
    }

    /// Whole hosts die; returns whether any did.
    fn kill_hosts<R: Rng>(&mut self, rng: &mut R, live: &[u32], from: Micros, to: Micros) -> bool {
        let tau = seconds(to - from);
        let p = -(-self.params.host_deaths_per_week * tau / WEEK).exp_m1();
        let mut died = false;
        for &h in live {
            if rng.random_bool(p) {
                self.kill_host(h, from + micros(tau * rng.random::<f64>()));
                died = true;
            }
        }
        died
    }

    /// Articles die, and lists drop them (every host's lists when a host died, since
    /// they may link to its main page).
    fn kill_articles<R: Rng>(
        &mut self,
        rng: &mut R,
        live: &[u32],
        from: Micros,
        to: Micros,
        host_died: bool,
    ) {
        let tau = seconds(to - from);
        for &h in live {
            let host = &self.hosts[h as usize];
            if host.died.is_some() {
                continue;
            }
            let d = host.death_rate;
            let p = -(-d * tau).exp_m1();
            let mut died = false;
            for i in 0..host.pages.len() {
                let page = self.hosts[h as usize].pages[i];
                if self.pages[page as usize].role == Role::Article && rng.random::<f64>() < p {
                    // Truncated exponential: the death time given a death within the step.
                    let after = -(-rng.random::<f64>() * p).ln_1p() / d;
                    let linger = rng.random_bool(LINGER_SHARE);
                    self.kill_article(page, from + micros(after), linger);
                    died = true;
                }
            }
            if died || host_died {
                self.forget_dead(h);
            }
        }
    }

    /// New articles on the hosts that are still alive, at Poisson times.
    fn add_arrivals<R: Rng>(&mut self, rng: &mut R, live: &[u32], from: Micros, to: Micros) {
        let tau = seconds(to - from);
        let mut times = Vec::new();
        for &h in live {
            let host = &self.hosts[h as usize];
            if host.died.is_some() {
                continue;
            }
            let n = poisson(rng, host.rate * tau) as usize;
            uniform_times(rng, n, from, to, &mut times);
            for &t in &times {
                self.add_arrival(rng, h, t);
            }
        }
    }

    /// New hosts, a share of the `live` hosts per week, at Poisson times.
    fn add_new_hosts<R: Rng>(&mut self, rng: &mut R, live: usize, from: Micros, to: Micros) {
        let mean = self.params.host_births_per_week * live as f64 * seconds(to - from) / WEEK;
        let births = poisson(rng, mean) as usize;
        let mut times = Vec::new();
        uniform_times(rng, births, from, to, &mut times);
        let first_new = self.hosts.len() as u32;
        for t in times {
            self.add_new_host(rng, t, to, first_new);
        }
    }

    /// A new host created at `at` with all its articles written before `until`, linked
    /// from old front pages of other hosts, or only from another new host of this step.
    fn add_new_host<R: Rng>(&mut self, rng: &mut R, at: Micros, until: Micros, first_new: u32) {
        let domain = self.new_host_domain(rng);
        let d = &self.domains[domain as usize];
        let name = names::host_name(&d.name, d.hosts.len(), rng);
        let pareto = Pareto::new(1.0, self.params.size_shape).expect("valid Pareto shape");
        let size =
            (pareto.sample(rng) * self.size_unit * self.params.new_host_scale).min(NEW_HOST_MAX);
        let spec = HostSpec {
            name,
            domain,
            created: at,
            size,
            new_site: true,
        };
        let host = self.add_host(rng, spec);

        if host > first_new && rng.random_bool(CHAINED_HOST_SHARE) {
            let from = rng.random_range(first_new..host);
            self.add_ext_link(from, None, host);
        } else {
            let wanted = rng.random_range(1..=3);
            let mut linked = 0;
            for _ in 0..10 * wanted {
                if let Some((from, section)) = self.referrer(rng, host) {
                    self.add_ext_link(from, section, host);
                    linked += 1;
                    if linked == wanted {
                        break;
                    }
                }
            }
        }

        let mut times = Vec::new();
        uniform_times(rng, self.events_for(size), at, until, &mut times);
        for t in times {
            self.add_arrival(rng, host, t);
        }
    }

    /// The registered domain of a new host: usually new, sometimes an existing one that
    /// still has a free subdomain prefix.
    fn new_host_domain<R: Rng>(&mut self, rng: &mut R) -> u32 {
        if rng.random_bool(NEW_SUBDOMAIN_SHARE) {
            let d = rng.random_range(0..self.domains.len());
            let domain = &self.domains[d];
            let alive = domain
                .hosts
                .iter()
                .any(|&h| self.hosts[h as usize].died.is_none());
            if alive && names::has_subdomain(domain.hosts.len()) {
                return d as u32;
            }
        }
        self.add_domain(rng)
    }

    /// A new registered domain of a random class.
    fn add_domain<R: Rng>(&mut self, rng: &mut R) -> u32 {
        let class = Class::sample(rng);
        let name = self.namer.domain(class, rng);
        self.domains.push(Domain {
            name,
            class,
            hosts: Vec::new(),
        });
        (self.domains.len() - 1) as u32
    }

    /// Kills an article at `at`; with [`LINGER_SHARE`] it still answers 404 once.
    fn kill_article(&mut self, page: u32, at: Micros, linger: bool) {
        let p = &mut self.pages[page as usize];
        p.died = Some(at);
        p.linger = linger;
    }

    /// Kills a host and all its pages at `at`.
    fn kill_host(&mut self, host: u32, at: Micros) {
        let h = &mut self.hosts[host as usize];
        h.died = Some(at);
        for &page in &h.pages {
            let p = &mut self.pages[page as usize];
            p.died.get_or_insert(at);
            p.linger = false;
        }
        h.pages.clear();
    }

    /// Drops dead pages from every list of `host` (marking changed lists dirty) and
    /// from its crawl list, keeping articles that linger as 404.
    fn forget_dead(&mut self, host: u32) {
        let pages = &self.pages;
        let alive = |p: &u32| pages[*p as usize].died.is_none();
        let h = &mut self.hosts[host as usize];
        h.pages.retain(|&p| {
            let p = &pages[p as usize];
            p.died.is_none() || p.linger
        });
        h.main_dirty |= retain_changed(&mut h.featured, alive);
        h.main_dirty |= retain_changed(&mut h.ext, alive);
        for s in &mut h.sections {
            s.listing_dirty |= retain_changed(&mut s.listing, alive);
            s.ext_dirty |= retain_changed(&mut s.ext, alive);
            s.pool.retain(alive);
        }
    }

    /// Article events that give a host about `size` articles (a chain event makes 3 on average).
    fn events_for(&self, size: f64) -> usize {
        (size / (1.0 + 2.0 * self.params.chain_share))
            .round()
            .max(1.0) as usize
    }
}

/// The factor that turns raw Pareto draws into sizes in articles so that hosts (with
/// a main page and a hub per section each) hold the preset's page count.
fn size_unit(params: &Params, raw: impl Iterator<Item = f64> + Clone) -> f64 {
    let target = params.pages as f64;
    let cap = params.max_host_share * target;
    let total = |unit: f64| -> f64 {
        raw.clone()
            .map(|r| {
                let size = (r * unit).min(cap).max(3.0);
                size + 1.0 + section_count(size) as f64
            })
            .sum()
    };
    // The total grows with the unit: bisect.
    let (mut lo, mut hi) = (0.0, target);
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if total(mid) < target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Fills `out` with `n` sorted uniform times in `[from, to)`.
fn uniform_times<R: Rng>(rng: &mut R, n: usize, from: Micros, to: Micros, out: &mut Vec<Micros>) {
    out.clear();
    out.extend((0..n).map(|_| from + ((to - from) as f64 * rng.random::<f64>()) as Micros));
    out.sort_unstable();
}

/// Retains entries; returns whether any was removed.
fn retain_changed(list: &mut VecDeque<u32>, keep: impl Fn(&u32) -> bool) -> bool {
    let before = list.len();
    list.retain(keep);
    list.len() != before
}
