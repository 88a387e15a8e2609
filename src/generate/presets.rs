//! Size and rate parameters of the three presets.
//!
//! Everything that differs between a unit-test web and a benchmark web lives here; the
//! shape of the simulated web (page roles, URL layout, change-rate mix) does not.

use super::Preset;

/// Knobs of one generated crawl.
#[derive(Clone, Debug)]
pub(crate) struct Params {
    /// Number of snapshots (crawls) written.
    pub snapshots: usize,
    /// Hosts alive at snapshot 0.
    pub hosts: usize,
    /// Target number of live pages at snapshot 0.
    pub pages: usize,
    /// Pareto shape of host sizes: smaller means a heavier tail.
    pub size_shape: f64,
    /// Largest share of all pages that one host may hold.
    pub max_host_share: f64,
    /// New hosts per week, as a fraction of the live hosts.
    pub host_births_per_week: f64,
    /// Probability per week that a live host disappears.
    pub host_deaths_per_week: f64,
    /// Size of a new host relative to a host of snapshot 0 (new sites start small).
    pub new_host_scale: f64,
    /// Inclusive range of the number of same-section sibling articles an article links to.
    pub siblings: (usize, usize),
    /// Mean number of links from an article to other hosts.
    pub cross_links: f64,
    /// How many section hubs the navigation bar of an article links to.
    pub nav_hubs: usize,
    /// Share of new-article events that produce an orphan nothing links to.
    pub orphan_share: f64,
    /// Share of new-article events that produce a chain (listed head, unlisted followers).
    pub chain_share: f64,
    /// Share of articles that link to themselves (a "permalink"); 1% of articles gives
    /// about 0.1% of link rows. The tiny preset uses more so that it surely has some.
    pub self_link_share: f64,
    /// Share of hosts whose new articles receive clicks (keeps the click log moderate).
    pub click_host_share: f64,
}

impl Params {
    /// `scale` times the hosts and pages, the rest alike.
    pub(crate) fn scaled(mut self, scale: f64) -> Params {
        self.hosts = ((self.hosts as f64 * scale).round() as usize).max(1);
        self.pages = ((self.pages as f64 * scale).round() as usize).max(self.hosts);
        self
    }

    pub(crate) fn of(preset: Preset) -> Params {
        match preset {
            Preset::Tiny => Params {
                snapshots: 5,
                hosts: 14,
                pages: 160,
                size_shape: 1.3,
                max_host_share: 0.25,
                host_births_per_week: 0.08,
                host_deaths_per_week: 0.02,
                new_host_scale: 0.5,
                siblings: (1, 3),
                cross_links: 1.0,
                nav_hubs: 3,
                orphan_share: 0.08,
                chain_share: 0.12,
                self_link_share: 0.05,
                click_host_share: 1.0,
            },
            Preset::Demo => Params {
                snapshots: 8,
                hosts: 1_000,
                pages: 47_000,
                size_shape: 1.2,
                max_host_share: 0.05,
                host_births_per_week: 0.03,
                host_deaths_per_week: 0.003,
                new_host_scale: 0.3,
                siblings: (2, 5),
                cross_links: 1.1,
                nav_hubs: 3,
                orphan_share: 0.03,
                chain_share: 0.06,
                self_link_share: 0.01,
                click_host_share: 1.0,
            },
            Preset::Bench => Params {
                snapshots: 10,
                hosts: 20_000,
                pages: 950_000,
                size_shape: 1.2,
                max_host_share: 0.02,
                host_births_per_week: 0.03,
                host_deaths_per_week: 0.003,
                new_host_scale: 0.3,
                siblings: (3, 7),
                cross_links: 1.5,
                nav_hubs: 4,
                orphan_share: 0.03,
                chain_share: 0.06,
                self_link_share: 0.01,
                click_host_share: 0.05,
            },
        }
    }
}
