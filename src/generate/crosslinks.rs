//! Links between hosts: articles' links to other hosts, and front pages' links to new
//! sites.
//!
//! Targets are drawn in proportion to host size, so large hosts collect most in-links
//! (a skewed PageRank for RankMass); a share stays within the registered domain
//! (`news.x.com` → `www.x.com`), which site keys that know public suffixes group together.

use rand::distr::weighted::WeightedIndex;
use rand::distr::Distribution;
use rand::Rng;

use super::model::{push_capped, Web};

/// Placeholder of a deferred cross-host link in [`Web::outlinks`].
pub(crate) const UNRESOLVED: u32 = u32::MAX;
/// Links to new sites a front page keeps ("friends of this site").
const EXT_CAP: usize = 6;
/// Share of cross-host links that go to a main page rather than an article.
const CROSS_TO_MAIN: f64 = 0.4;
/// Share of cross-host links that stay within the registered domain, when it has
/// several hosts.
const CROSS_TO_SIBLING_HOST: f64 = 0.3;
/// Share of links to a new site that sit on a main page rather than a hub.
const EXT_FROM_MAIN: f64 = 0.4;

impl Web {
    /// Replaces the placeholders of deferred cross-host links by targets (dropping the
    /// draws that fail) and links new articles to other hosts directly from now on.
    pub(crate) fn resolve_cross_links<R: Rng>(&mut self, rng: &mut R) {
        self.defer_cross_links = false;
        for page in 0..self.pages.len() {
            let p = &self.pages[page];
            let (host, start) = (p.host, p.out_start as usize);
            let end = start + p.out_len as usize;
            let mut kept = start;
            for i in start..end {
                let target = match self.outlinks[i] {
                    // Other hosts' pages: only earlier cross-host links can repeat them.
                    UNRESOLVED => self
                        .cross_target(rng, host)
                        .filter(|t| !self.outlinks[start..kept].contains(t)),
                    target => Some(target),
                };
                if let Some(target) = target {
                    self.outlinks[kept] = target;
                    kept += 1;
                }
            }
            self.pages[page].out_len = (kept - start) as u16;
        }
    }

    /// A page on another host for an article of `host` to link to, or `None` when the
    /// draw lands on `host` itself or a dead host.
    pub(crate) fn cross_target<R: Rng>(&self, rng: &mut R, host: u32) -> Option<u32> {
        let h = &self.hosts[host as usize];
        let siblings = &self.domains[h.domain as usize].hosts;
        let other = if siblings.len() > 1 && rng.random_bool(CROSS_TO_SIBLING_HOST) {
            siblings[rng.random_range(0..siblings.len())]
        } else {
            self.targets.as_ref()?.sample(rng) as u32
        };
        let t = &self.hosts[other as usize];
        if other == host || t.died.is_some() {
            return None;
        }
        if rng.random_bool(CROSS_TO_MAIN) {
            return Some(t.main);
        }
        let s = &t.sections[rng.random_range(0..t.sections.len())];
        if s.pool.is_empty() {
            Some(s.hub)
        } else {
            Some(s.pool[rng.random_range(0..s.pool.len())])
        }
    }

    /// Weights cross-host link targets (and referrers of new sites) by `weights`, one
    /// per host so far; later hosts are no targets until the next call.
    pub(crate) fn set_targets(&mut self, weights: impl IntoIterator<Item = f64>) {
        self.targets = WeightedIndex::new(weights).ok();
    }

    /// A front page of another host (chosen by size) to carry a link to a new site.
    pub(crate) fn referrer<R: Rng>(
        &self,
        rng: &mut R,
        new_host: u32,
    ) -> Option<(u32, Option<u16>)> {
        let other = self.targets.as_ref()?.sample(rng) as u32;
        let t = &self.hosts[other as usize];
        if other == new_host || t.died.is_some() {
            return None;
        }
        Some(if rng.random_bool(EXT_FROM_MAIN) {
            (other, None)
        } else {
            (other, Some(rng.random_range(0..t.sections.len()) as u16))
        })
    }

    /// Links the main page of `target` from `host`'s main page (`section` `None`) or
    /// from one of its hubs.
    pub(crate) fn add_ext_link(&mut self, host: u32, section: Option<u16>, target: u32) {
        let main = self.hosts[target as usize].main;
        let h = &mut self.hosts[host as usize];
        let (ext, dirty) = match section {
            None => (&mut h.ext, &mut h.main_dirty),
            Some(s) => {
                let s = &mut h.sections[s as usize];
                (&mut s.ext, &mut s.ext_dirty)
            }
        };
        if !ext.contains(&main) {
            push_capped(ext, main, EXT_CAP);
            *dirty = true;
        }
    }
}
