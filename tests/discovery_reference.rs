//! The discovery tables of docs/discovery.md by brute force, for `reference.rs`:
//! plain sets of URL strings, the closure searched from every old page, GREEDY
//! straight from its definition, Jaccard over explicitly enumerated pairs, and
//! every history policy recomputed from scratch at each snapshot from the stored
//! per-round `N` sets. The tests at the bottom check the reference itself on
//! hand-made crawls whose answers are worked out by hand.

use std::collections::{BTreeMap, BTreeSet};

pub type Set = BTreeSet<String>;
pub type Links = BTreeSet<(String, String)>;
/// Maps a URL to its site.
pub type SiteOf<'a> = &'a dyn Fn(&str) -> String;

/// The discovery tables, in the order the reference and the tests list them.
pub const TABLES: [&str; 9] = [
    "cover_trajectory",
    "cover_summary",
    "cover_curve",
    "global_cover",
    "jaccard_histogram",
    "clusters",
    "policy_eval",
    "new_sites",
    "site_cover",
];

/// The policies of `policy_eval` with a budget, in order.
const BUDGETED: [&str; 7] = [
    "OD-WIN", "OD-ALL", "OD-1", "CLIQ-WIN", "CLIQ-1", "COV", "OPTIMAL",
];
/// The policies of `policy_eval` without a budget (`budget` is NULL).
const BOUNDS: [(&str, usize); 3] = [("BOUND-ALL", 1), ("BOUND-W2", 2), ("BOUND-W4", 4)];

/// The `[discovery]` section of a job, as the reference follows it.
#[derive(Clone, Debug)]
pub struct Params {
    /// Written to the job file only: the reference maps URLs to sites with the
    /// function it is given.
    pub site_key: &'static str,
    pub eps_b: f64,
    pub alpha: f64,
    pub delta: usize,
    pub budgets: Vec<usize>,
    pub curve_budgets: Vec<usize>,
    pub global_budgets: Vec<usize>,
}

impl Default for Params {
    /// docs/discovery.md's defaults.
    fn default() -> Self {
        Params {
            site_key: "host",
            eps_b: 0.8,
            alpha: 1.0,
            delta: 1,
            budgets: vec![1, 10, 100, 1000, 10000],
            curve_budgets: vec![1, 2, 5, 10, 20, 50, 100, 200, 500, 1000],
            global_budgets: vec![1, 10, 100, 1000, 10000, 100000, 1000000],
        }
    }
}

impl Params {
    /// A job file running discovery with these parameters.
    pub fn job_toml(&self) -> String {
        format!(
            "analyses = [\"discovery\"]\n\n[discovery]\nsite_key = {:?}\neps_b = {:?}\n\
             alpha = {:?}\ndelta = {}\nbudgets = {:?}\ncurve_budgets = {:?}\n\
             global_budgets = {:?}\n",
            self.site_key,
            self.eps_b,
            self.alpha,
            self.delta,
            self.budgets,
            self.curve_budgets,
            self.global_budgets
        )
    }
}

/// One GREEDY pick: the page, its marginal gain and the cumulative covered count.
#[derive(Clone, Debug, PartialEq)]
pub struct Pick {
    pub url: String,
    pub gain: usize,
    pub covered: usize,
}

/// GREEDY from its definition over `sets` (keyed by URL): repeatedly the key with
/// the most elements not yet covered, ties to the smallest URL, until nothing adds.
pub fn greedy(sets: &BTreeMap<String, Set>) -> Vec<Pick> {
    let mut covered = Set::new();
    let mut picks = Vec::new();
    loop {
        let mut best: Option<(&String, usize)> = None;
        // Keys in ascending order, so only a strictly larger gain displaces.
        for (x, s) in sets {
            let gain = s.difference(&covered).count();
            if gain > 0 && best.is_none_or(|b| gain > b.1) {
                best = Some((x, gain));
            }
        }
        let Some((x, gain)) = best else { break };
        covered.extend(sets[x].iter().cloned());
        picks.push(Pick {
            url: x.clone(),
            gain,
            covered: covered.len(),
        });
    }
    picks
}

/// A cluster of old pages: its members in URL order, its representative and `q`.
#[derive(Clone, Debug)]
pub struct Cluster {
    pub members: Vec<String>,
    pub rep: String,
    pub q: f64,
}

/// One old site with new pages at one snapshot.
#[derive(Clone, Debug)]
pub struct SiteRound {
    pub site: String,
    /// Pages of the site fetched now that are old.
    pub old_pages: usize,
    /// New pages of the site (`|Y_t|`).
    pub new_pages: usize,
    /// `N_t(x)` of every old page fetched now whose `N_t` is not empty.
    pub n: BTreeMap<String, Set>,
    /// `C_t`.
    pub coverable: Set,
    /// The GREEDY trajectory.
    pub picks: Vec<Pick>,
}

impl SiteRound {
    /// The closure of `site` at a snapshot, or `None` when the site has no old page
    /// fetched now. `links` are the snapshot's links (self-links already dropped).
    pub fn build(
        site: &str,
        fetched: &Set,
        new: &Set,
        links: &Links,
        site_of: SiteOf,
    ) -> Option<SiteRound> {
        let on_site = |u: &str| site_of(u) == site;
        let old: Vec<&String> = fetched
            .iter()
            .filter(|u| on_site(u) && !new.contains(*u))
            .collect();
        if old.is_empty() {
            return None;
        }
        // E_t restricted to steps into new pages: on-site outlinks of pages
        // fetched now.
        let step = |from: &str| -> Vec<String> {
            links
                .iter()
                .filter(|(s, d)| {
                    s == from && fetched.contains(s) && on_site(s) && on_site(d) && new.contains(d)
                })
                .map(|l| l.1.clone())
                .collect()
        };
        let mut n = BTreeMap::new();
        for x in old.iter() {
            let mut reached = Set::new();
            let mut todo = step(x);
            while let Some(y) = todo.pop() {
                if reached.insert(y.clone()) {
                    todo.extend(step(&y));
                }
            }
            if !reached.is_empty() {
                n.insert((*x).clone(), reached);
            }
        }
        let coverable: Set = n.values().flatten().cloned().collect();
        let picks = greedy(&n);
        Some(SiteRound {
            site: site.to_string(),
            old_pages: old.len(),
            new_pages: new.iter().filter(|u| on_site(u)).count(),
            n,
            coverable,
            picks,
        })
    }

    /// `p_t(x) = |N_t(x)| / |C_t|`.
    pub fn p(&self, x: &str) -> f64 {
        self.n.get(x).map_or(0, |s| s.len()) as f64 / self.coverable.len() as f64
    }

    /// `|N_t(S)|`; a page without `N_t` (not fetched now, or covering nothing)
    /// adds nothing.
    pub fn covered_by(&self, chosen: &[String]) -> usize {
        let mut all = Set::new();
        for x in chosen {
            if let Some(s) = self.n.get(x) {
                all.extend(s.iter().cloned());
            }
        }
        all.len()
    }

    /// `|N(x) ∩ N(y)|` and `|N(x) ∪ N(y)|`.
    fn overlap(&self, x: &str, y: &str) -> (usize, usize) {
        let (a, b) = (&self.n[x], &self.n[y]);
        (a.intersection(b).count(), a.union(b).count())
    }

    /// The clusters: connected components of the link `|∩| > 0 && |∩| ≥ (1 −
    /// ε_b)·|∪|`, in order of their smallest member URL.
    pub fn clusters(&self, eps_b: f64) -> Vec<Cluster> {
        let pages: Vec<&String> = self.n.keys().collect();
        let linked = |i: usize, j: usize| {
            let (inter, union) = self.overlap(pages[i], pages[j]);
            inter > 0 && inter as f64 >= (1.0 - eps_b) * union as f64
        };
        let mut seen = vec![false; pages.len()];
        let mut clusters = Vec::new();
        // Pages in URL order: each unseen page starts the cluster it is the
        // smallest member of.
        for start in 0..pages.len() {
            if seen[start] {
                continue;
            }
            seen[start] = true;
            let (mut members, mut todo) = (Vec::new(), vec![start]);
            while let Some(i) = todo.pop() {
                members.push(i);
                for (j, seen_j) in seen.iter_mut().enumerate() {
                    if !*seen_j && linked(i, j) {
                        *seen_j = true;
                        todo.push(j);
                    }
                }
            }
            members.sort();
            let rep = *members
                .iter()
                .max_by(|&&a, &&b| {
                    let (pa, pb) = (self.p(pages[a]), self.p(pages[b]));
                    pa.total_cmp(&pb).then_with(|| pages[b].cmp(pages[a]))
                })
                .unwrap();
            clusters.push(Cluster {
                members: members.iter().map(|&i| pages[i].clone()).collect(),
                rep: pages[rep].clone(),
                q: self.p(pages[rep]),
            });
        }
        clusters
    }
}

/// A ratio as the tables print it: `{:?}`, or `null` with a zero denominator.
fn ratio(num: f64, den: usize) -> String {
    if den == 0 {
        "null".into()
    } else {
        format!("{:?}", num / den as f64)
    }
}

/// `OD-WIN`'s scores over `rounds` (in order), by docs/discovery.md's recurrence:
/// `num ← num·α^(r − r_prev) + p_r`, `den ← den·α^(r − r_prev) + 1`, from 0.
fn od_scores(rounds: &[(usize, &SiteRound)], alpha: f64) -> Vec<(String, f64)> {
    let mut num: BTreeMap<String, f64> = BTreeMap::new();
    let mut den = 0.0;
    let mut prev: Option<usize> = None;
    for &(r, sr) in rounds {
        let decay = prev.map_or(1.0, |p| alpha.powi((r - p) as i32));
        for v in num.values_mut() {
            *v *= decay;
        }
        for x in sr.n.keys() {
            *num.entry(x.clone()).or_insert(0.0) += sr.p(x);
        }
        den = den * decay + 1.0;
        prev = Some(r);
    }
    num.into_iter().map(|(x, v)| (x, v / den)).collect()
}

/// The `k` entries with the largest score > 0, ties to the smallest URL.
fn top(mut scored: Vec<(String, f64)>, k: usize) -> Vec<String> {
    scored.retain(|s| s.1 > 0.0);
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    scored.into_iter().take(k).map(|s| s.0).collect()
}

/// The discovery reference, fed one snapshot at a time.
pub struct Discovery<'a> {
    params: Params,
    site_of: SiteOf<'a>,
    /// Per site, its evaluated rounds so far.
    history: BTreeMap<String, BTreeMap<usize, SiteRound>>,
    rows: BTreeMap<&'static str, Vec<String>>,
}

/// What the reference needs of one snapshot.
pub struct SnapshotData<'a> {
    pub seq: usize,
    /// Pages fetched now.
    pub fetched: &'a Set,
    /// Pages fetched now and known at no earlier snapshot.
    pub new: &'a Set,
    /// Pages known at some earlier snapshot.
    pub known_before: &'a Set,
    /// The snapshot's links (self-links and non-pages dropped, partial snapshots
    /// completed from the previous links).
    pub links: &'a Links,
}

impl<'a> Discovery<'a> {
    pub fn new(params: &Params, site_of: SiteOf<'a>) -> Self {
        Discovery {
            params: params.clone(),
            site_of,
            history: BTreeMap::new(),
            rows: TABLES.iter().map(|t| (*t, Vec::new())).collect(),
        }
    }

    /// Every table's rows, sorted as `table_rows` returns them.
    pub fn finish(mut self) -> BTreeMap<&'static str, Vec<String>> {
        self.rows.values_mut().for_each(|r| r.sort());
        self.rows
    }

    fn push(&mut self, table: &'static str, row: String) {
        self.rows.get_mut(table).unwrap().push(row);
    }

    pub fn snapshot(&mut self, d: &SnapshotData) {
        let site_of = self.site_of;
        let sites: Set = d.new.iter().map(|u| site_of(u)).collect();
        let rounds: Vec<SiteRound> = sites
            .iter()
            .filter_map(|s| SiteRound::build(s, d.fetched, d.new, d.links, site_of))
            .collect();
        let evaluated: Vec<&SiteRound> =
            rounds.iter().filter(|r| !r.coverable.is_empty()).collect();
        for r in &rounds {
            self.trajectory_and_summary(d.seq, r);
        }
        if !evaluated.is_empty() {
            self.cover_curve(d.seq, &evaluated);
            self.global_cover(d.seq, &evaluated);
            self.policy_eval(d.seq, &evaluated);
        }
        self.jaccard_histogram(d.seq, &evaluated);
        for r in &evaluated {
            self.clusters(d.seq, r);
        }
        self.new_sites_and_site_cover(d);
        // Rounds are the earlier snapshots: record this one after the policies.
        for r in evaluated {
            let h = self.history.entry(r.site.clone()).or_default();
            h.insert(d.seq, r.clone());
        }
    }

    fn trajectory_and_summary(&mut self, seq: usize, r: &SiteRound) {
        let site = &r.site;
        for (i, p) in r.picks.iter().enumerate() {
            let rank = i + 1;
            self.push(
                "cover_trajectory",
                format!(
                    "snapshot={seq}|{site}|{rank}|{}|{}|{}|{:?}",
                    p.url,
                    p.gain,
                    p.covered,
                    rank as f64 / p.covered as f64
                ),
            );
        }
        let c = r.coverable.len();
        let c90 = r
            .picks
            .iter()
            .position(|p| p.covered as f64 >= 0.9 * c as f64 - 1e-9)
            .map_or(r.picks.len(), |p| p + 1);
        let c90_cov = if c90 > 0 { r.picks[c90 - 1].covered } else { 0 };
        let pairs: usize = r.n.values().map(|s| s.len()).sum();
        self.push(
            "cover_summary",
            format!(
                "snapshot={seq}|{site}|{}|{}|{pairs}|{}|{c90}|{c90_cov}|{}|{c}",
                r.old_pages,
                r.new_pages,
                r.new_pages - c,
                r.picks.len(),
            ),
        );
    }

    fn cover_curve(&mut self, seq: usize, evaluated: &[&SiteRound]) {
        let sites = evaluated.len();
        let coverable: usize = evaluated.iter().map(|r| r.coverable.len()).sum();
        for k in self.params.curve_budgets.clone() {
            let (mut sum_c, mut overheads) = (0usize, Vec::new());
            for r in evaluated {
                let m = k.min(r.picks.len());
                let c = r.picks[m - 1].covered;
                sum_c += c;
                overheads.push(m as f64 / c as f64);
            }
            overheads.sort_by(|a, b| a.total_cmp(b));
            let sum_o = overheads.iter().fold(0.0, |a, b| a + b);
            self.push(
                "cover_curve",
                format!(
                    "snapshot={seq}|{k}|{sites}|{:?}|{:?}|{:?}",
                    sum_c as f64 / sites as f64,
                    sum_o / sites as f64,
                    sum_c as f64 / coverable as f64
                ),
            );
        }
    }

    fn global_cover(&mut self, seq: usize, evaluated: &[&SiteRound]) {
        let coverable: usize = evaluated.iter().map(|r| r.coverable.len()).sum();
        let mut gains: Vec<usize> = evaluated
            .iter()
            .flat_map(|r| r.picks.iter().map(|p| p.gain))
            .collect();
        gains.sort_by_key(|g| std::cmp::Reverse(*g));
        for k in self.params.global_budgets.clone() {
            let pages = k.min(gains.len());
            let covered: usize = gains[..pages].iter().sum();
            self.push(
                "global_cover",
                format!(
                    "snapshot={seq}|{k}|{pages}|{covered}|{:?}|{:?}",
                    pages as f64 / covered as f64,
                    covered as f64 / coverable as f64
                ),
            );
        }
    }

    fn jaccard_histogram(&mut self, seq: usize, evaluated: &[&SiteRound]) {
        let mut bins = [0usize; 20];
        let mut total = 0;
        for r in evaluated {
            let pages: Vec<&String> = r.n.keys().collect();
            for (i, x) in pages.iter().enumerate() {
                for y in &pages[i + 1..] {
                    let (inter, union) = r.overlap(x, y);
                    bins[(20 * inter / union).min(19)] += 1;
                    total += 1;
                }
            }
        }
        if total == 0 {
            return;
        }
        for (i, pairs) in bins.iter().enumerate() {
            self.push(
                "jaccard_histogram",
                format!(
                    "snapshot={seq}|{:?}|{:?}|{pairs}",
                    i as f64 / 20.0,
                    (i + 1) as f64 / 20.0
                ),
            );
        }
    }

    fn clusters(&mut self, seq: usize, r: &SiteRound) {
        for (id, c) in r.clusters(self.params.eps_b).iter().enumerate() {
            for m in &c.members {
                self.push(
                    "clusters",
                    format!(
                        "snapshot={seq}|{}|{id}|{m}|{}|{:?}",
                        r.site,
                        *m == c.rep,
                        c.q
                    ),
                );
            }
        }
    }

    /// The pages `policy` chooses for a site evaluated now (`now`), from its
    /// evaluated rounds before now (`hist`), with budget `k` (`BOUND-*` ignore it).
    fn choose(
        &self,
        policy: &str,
        k: usize,
        hist: &BTreeMap<usize, SiteRound>,
        now: &SiteRound,
    ) -> Vec<String> {
        let p = &self.params;
        let all: Vec<(usize, &SiteRound)> = hist.iter().map(|(r, s)| (*r, s)).collect();
        let recrawl: Vec<(usize, &SiteRound)> = all
            .iter()
            .filter(|(r, _)| r % p.delta == 0)
            .cloned()
            .collect();
        let latest = recrawl.last().map(|l| l.1);
        let reps = |mut clusters: Vec<(String, f64)>| {
            clusters.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            clusters.into_iter().take(k).map(|c| c.0).collect()
        };
        let of_clusters = |sr: &SiteRound| -> Vec<(String, f64)> {
            sr.clusters(p.eps_b)
                .into_iter()
                .map(|c| (c.rep, c.q))
                .collect()
        };
        let bound = |w: usize| -> Vec<String> {
            let pages: Set = all
                .iter()
                .filter(|(r, _)| r % w == 0)
                .flat_map(|(_, s)| s.n.keys().cloned())
                .collect();
            pages.into_iter().collect()
        };
        let first_k = |picks: &[Pick]| picks.iter().take(k).map(|p| p.url.clone()).collect();
        match policy {
            "OD-WIN" => top(od_scores(&recrawl, p.alpha), k),
            "OD-ALL" => top(od_scores(&all, p.alpha), k),
            "OD-1" => latest.map_or(Vec::new(), |sr| {
                top(sr.n.keys().map(|x| (x.clone(), sr.p(x))).collect(), k)
            }),
            "CLIQ-1" => latest.map_or(Vec::new(), |sr| reps(of_clusters(sr))),
            "CLIQ-WIN" => {
                let mut clusters = latest.map_or(Vec::new(), of_clusters);
                for (x, score) in od_scores(&recrawl, p.alpha) {
                    if score > 0.0 && !latest.is_some_and(|sr| sr.n.contains_key(&x)) {
                        clusters.push((x, score));
                    }
                }
                reps(clusters)
            }
            "COV" => latest.map_or(Vec::new(), |sr| first_k(&sr.picks)),
            "OPTIMAL" => first_k(&now.picks),
            "BOUND-ALL" => bound(1),
            "BOUND-W2" => bound(2),
            "BOUND-W4" => bound(4),
            other => panic!("unknown policy {other}"),
        }
    }

    fn policy_eval(&mut self, seq: usize, evaluated: &[&SiteRound]) {
        let no_history = BTreeMap::new();
        let sites = evaluated.len();
        let coverable: usize = evaluated.iter().map(|r| r.coverable.len()).sum();
        let mut runs: Vec<(&str, Option<usize>)> = Vec::new();
        for policy in BUDGETED {
            runs.extend(self.params.budgets.iter().map(|k| (policy, Some(*k))));
        }
        runs.extend(BOUNDS.iter().map(|b| (b.0, None)));
        let mut rows = Vec::new();
        for (policy, k) in runs {
            let (mut chosen, mut covered) = (0, 0);
            for now in evaluated {
                let hist = self.history.get(&now.site).unwrap_or(&no_history);
                let s = self.choose(policy, k.unwrap_or(usize::MAX), hist, now);
                assert_eq!(s.iter().collect::<BTreeSet<_>>().len(), s.len());
                chosen += s.len();
                covered += now.covered_by(&s);
            }
            let budget = k.map_or("null".to_string(), |k| k.to_string());
            rows.push(format!(
                "snapshot={seq}|{policy}|{budget}|{sites}|{chosen}|{covered}|{coverable}|{:?}|{}|{:?}",
                chosen as f64 / sites as f64,
                ratio(100.0 * chosen as f64, covered),
                covered as f64 / coverable as f64
            ));
        }
        for row in rows {
            self.push("policy_eval", row);
        }
    }

    fn new_sites_and_site_cover(&mut self, d: &SnapshotData) {
        let site_of = self.site_of;
        let sites_before: Set = d.known_before.iter().map(|u| site_of(u)).collect();
        let new_sites: Set = d
            .fetched
            .iter()
            .map(|u| site_of(u))
            .filter(|s| !sites_before.contains(s))
            .collect();
        let new_pages_of = |s: &String| d.new.iter().filter(|u| site_of(u) == *s).count();
        let on_new = d
            .new
            .iter()
            .filter(|u| new_sites.contains(&site_of(u)))
            .count();
        if d.seq >= 1 {
            let seq = d.seq;
            let new = d.new.len();
            self.push(
                "new_sites",
                format!(
                    "snapshot={seq}|{new}|{on_new}|{}|{}|{}|{}",
                    new - on_new,
                    ratio(on_new as f64, new),
                    new_sites.len(),
                    ratio(on_new as f64, new_sites.len())
                ),
            );
        }
        // M(x): the new sites an old page fetched now links to.
        let mut m: BTreeMap<String, Set> = BTreeMap::new();
        for (s, dst) in d.links {
            let old_fetched = d.fetched.contains(s) && d.known_before.contains(s);
            if old_fetched && new_sites.contains(&site_of(dst)) {
                m.entry(s.clone()).or_default().insert(site_of(dst));
            }
        }
        let mut covered = Set::new();
        for (i, p) in greedy(&m).iter().enumerate() {
            covered.extend(m[&p.url].iter().cloned());
            assert_eq!(covered.len(), p.covered);
            let pages: usize = covered.iter().map(new_pages_of).sum();
            let row = format!(
                "snapshot={}|{}|{}|{}|{}|{pages}",
                d.seq,
                i + 1,
                p.url,
                p.gain,
                p.covered
            );
            self.push("site_cover", row);
        }
    }
}

// ---------------------------------------------------------------------------
// The reference checked by hand.

#[cfg(test)]
mod by_hand {
    use super::*;
    use crate::reference::{reference, Snap};

    fn host_site(u: &str) -> String {
        u.split('/').nth(2).unwrap().to_string()
    }

    /// The reference's rows of `table`, restricted to snapshot `seq`.
    fn rows_at(all: &BTreeMap<String, Vec<String>>, table: &str, seq: usize) -> Vec<String> {
        let prefix = format!("snapshot={seq}|");
        all[table]
            .iter()
            .filter(|r| r.starts_with(&prefix))
            .cloned()
            .collect()
    }

    fn strings(rows: &[&str]) -> Vec<String> {
        let mut v: Vec<String> = rows.iter().map(|r| r.to_string()).collect();
        v.sort();
        v
    }

    #[test]
    fn reference_matches_figure_one_by_hand() {
        let got = reference(
            &crate::reference::figure_one(),
            &Params::default(),
            &host_site,
        );
        for (table, want) in crate::reference::figure_one_expected() {
            assert_eq!(got[table], want, "{table}");
        }
    }

    /// Old x1..x5 at 0; at 1, N(x1) = {n1, n2, n3, n4} (x1 → n1 → n2 → n3, x1 →
    /// n4), N(x2) = {n1, n2, n3}, N(x3) = {n4}, N(x4) = N(x5) = {n5}.
    fn overlap_crawl() -> Vec<Snap> {
        let u = |p: &str| format!("http://s.com/{p}");
        let old: Vec<String> = (1..=5).map(|i| u(&format!("x{i}"))).collect();
        let mut all = old.clone();
        all.extend((1..=5).map(|i| u(&format!("n{i}"))));
        let links = [
            ("x1", "n1"),
            ("x1", "n4"),
            ("n1", "n2"),
            ("n2", "n3"),
            ("x2", "n1"),
            ("x3", "n4"),
            ("x4", "n5"),
            ("x5", "n5"),
        ];
        let links: Vec<(String, String)> = links.iter().map(|(a, b)| (u(a), u(b))).collect();
        vec![Snap::full(0, &old, &[]), Snap::full(1, &all, &links)]
    }

    #[test]
    fn reference_jaccard_clusters_and_curves_by_hand() {
        let snaps = overlap_crawl();
        let got = reference(&snaps, &Params::default(), &host_site);
        // Pairs: x1x2 3/4 → bin 15, x1x3 1/4 → bin 5, x4x5 1/1 → bin 19, the
        // other 7 of C(5, 2) = 10 share nothing.
        let mut want = Vec::new();
        for i in 0..20 {
            let pairs = match i {
                0 => 7,
                5 | 15 | 19 => 1,
                _ => 0,
            };
            want.push(format!(
                "snapshot=1|{:?}|{:?}|{pairs}",
                i as f64 / 20.0,
                (i + 1) as f64 / 20.0
            ));
        }
        want.sort();
        assert_eq!(got["jaccard_histogram"], want);
        assert!(want.contains(&"snapshot=1|0.75|0.8|1".to_string()));
        // ε_b = 0.8 links at |∩| ≥ 0.2·|∪|: {x1, x2, x3} (x1x3: 1 ≥ 0.8) and {x4,
        // x5}; representatives x1 (p = 4/5) and x4 (ties with x5 at 1/5).
        assert_eq!(
            got["clusters"],
            strings(&[
                "snapshot=1|s.com|0|http://s.com/x1|true|0.8",
                "snapshot=1|s.com|0|http://s.com/x2|false|0.8",
                "snapshot=1|s.com|0|http://s.com/x3|false|0.8",
                "snapshot=1|s.com|1|http://s.com/x4|true|0.2",
                "snapshot=1|s.com|1|http://s.com/x5|false|0.2",
            ])
        );
        // ε_b = 0.5 links at |∩| ≥ 0.5·|∪|: x1x3 (1 < 2) no longer.
        let half = Params {
            eps_b: 0.5,
            ..Params::default()
        };
        let got_half = reference(&snaps, &half, &host_site);
        assert_eq!(
            got_half["clusters"],
            strings(&[
                "snapshot=1|s.com|0|http://s.com/x1|true|0.8",
                "snapshot=1|s.com|0|http://s.com/x2|false|0.8",
                "snapshot=1|s.com|1|http://s.com/x3|true|0.2",
                "snapshot=1|s.com|2|http://s.com/x4|true|0.2",
                "snapshot=1|s.com|2|http://s.com/x5|false|0.2",
            ])
        );
        // GREEDY: x1 (4), then x4 (1, before x5).
        assert_eq!(
            got["cover_trajectory"],
            strings(&[
                "snapshot=1|s.com|1|http://s.com/x1|4|4|0.25",
                "snapshot=1|s.com|2|http://s.com/x4|1|5|0.4",
            ])
        );
        let mut curve = vec!["snapshot=1|1|1|4.0|0.25|0.8".to_string()];
        for k in [2, 5, 10, 20, 50, 100, 200, 500, 1000] {
            curve.push(format!("snapshot=1|{k}|1|5.0|0.4|1.0"));
        }
        curve.sort();
        assert_eq!(got["cover_curve"], curve);
        let mut global = vec!["snapshot=1|1|1|4|0.25|0.8".to_string()];
        for k in [10, 100, 1000, 10000, 100000, 1000000] {
            global.push(format!("snapshot=1|{k}|2|5|0.4|1.0"));
        }
        global.sort();
        assert_eq!(got["global_cover"], global);
    }

    /// s.com: old a, b, c at 0. At 1: N(a) = {n1, n2}, N(b) = {n2}, N(c) = {n3}.
    /// At 2: N(b) = {m1, m2} (b → m1 → m2), N(c) = {m2}. At 3: N(a) = {z1}, N(b)
    /// = {z2, z3}, N(c) = {z4}, N(n1) = {z1}.
    fn history_crawl() -> Vec<Snap> {
        let u = |p: &str| format!("http://s.com/{p}");
        let names = |ps: &[&str]| ps.iter().map(|p| u(p)).collect::<Vec<_>>();
        let links = |ls: &[(&str, &str)]| ls.iter().map(|(a, b)| (u(a), u(b))).collect::<Vec<_>>();
        let s0 = names(&["a", "b", "c"]);
        let s1 = names(&["a", "b", "c", "n1", "n2", "n3"]);
        let s2 = names(&["a", "b", "c", "n1", "n2", "n3", "m1", "m2"]);
        let mut s3 = s2.clone();
        s3.extend(names(&["z1", "z2", "z3", "z4"]));
        vec![
            Snap::full(0, &s0, &[]),
            Snap::full(
                1,
                &s1,
                &links(&[("a", "n1"), ("a", "n2"), ("b", "n2"), ("c", "n3")]),
            ),
            Snap::full(2, &s2, &links(&[("b", "m1"), ("m1", "m2"), ("c", "m2")])),
            Snap::full(
                3,
                &s3,
                &links(&[
                    ("a", "z1"),
                    ("b", "z2"),
                    ("z2", "z3"),
                    ("c", "z4"),
                    ("n1", "z1"),
                ]),
            ),
        ]
    }

    /// `policy_eval` rows at snapshot 3 of [`history_crawl`]: `(policy, chosen,
    /// covered)` at budget 1 and at every budget ≥ 10, and the bounds.
    fn policy_rows(at1: &[(&str, usize, usize)], at10: &[(&str, usize, usize)]) -> Vec<String> {
        let row = |policy: &str, budget: &str, chosen: usize, covered: usize| {
            format!(
                "snapshot=3|{policy}|{budget}|1|{chosen}|{covered}|4|{:?}|{}|{:?}",
                chosen as f64,
                if covered == 0 {
                    "null".to_string()
                } else {
                    format!("{:?}", 100.0 * chosen as f64 / covered as f64)
                },
                covered as f64 / 4.0
            )
        };
        let mut rows = Vec::new();
        for (p, chosen, covered) in at1 {
            if p.starts_with("BOUND") {
                rows.push(row(p, "null", *chosen, *covered));
            } else {
                rows.push(row(p, "1", *chosen, *covered));
            }
        }
        for (p, chosen, covered) in at10 {
            for k in ["10", "100", "1000", "10000"] {
                rows.push(row(p, k, *chosen, *covered));
            }
        }
        rows.sort();
        rows
    }

    #[test]
    fn reference_policies_by_hand() {
        let snaps = history_crawl();
        let got = reference(&snaps, &Params::default(), &host_site);
        // Rounds 1 and 2, α = 1, Δ = 1. OD-WIN = OD-ALL: a (2/3 + 0)/2 = 1/3, b
        // (1/3 + 1)/2 = 2/3, c (1/3 + 1/2)/2 = 5/12, so b, c, a. OD-1 (round 2): b
        // 1, c 1/2. CLIQ-1: round 2's one cluster {b, c} (J = 1/2), rep b.
        // CLIQ-WIN: that cluster and a singleton a (q = 1/3). COV: round 2's
        // GREEDY [b]. OPTIMAL: round 3's GREEDY [b, a, c]. BOUND-ALL {a, b, c},
        // BOUND-W2 (round 2) {b, c}, BOUND-W4 (no round) nothing. At 3, N(a) =
        // {z1}, N(b) = {z2, z3}, N(c) = {z4}: b alone covers 2.
        let want = policy_rows(
            &[
                ("OD-WIN", 1, 2),
                ("OD-ALL", 1, 2),
                ("OD-1", 1, 2),
                ("CLIQ-WIN", 1, 2),
                ("CLIQ-1", 1, 2),
                ("COV", 1, 2),
                ("OPTIMAL", 1, 2),
                ("BOUND-ALL", 3, 4),
                ("BOUND-W2", 2, 3),
                ("BOUND-W4", 0, 0),
            ],
            &[
                ("OD-WIN", 3, 4),
                ("OD-ALL", 3, 4),
                ("OD-1", 2, 3),
                ("CLIQ-WIN", 2, 3),
                ("CLIQ-1", 1, 2),
                ("COV", 1, 2),
                ("OPTIMAL", 3, 4),
            ],
        );
        assert_eq!(rows_at(&got, "policy_eval", 3), want);
        assert!(want.contains(&"snapshot=3|OD-1|10|1|2|3|4|2.0|66.66666666666667|0.75".into()));
        assert!(want.contains(&"snapshot=3|BOUND-W4|null|1|0|0|4|0.0|null|0.0".into()));
        // At 1 the site has no history: only OPTIMAL chooses (a, then c).
        let at1 = rows_at(&got, "policy_eval", 1);
        assert_eq!(at1.len(), 7 * 5 + 3);
        for r in &at1 {
            let cells: Vec<&str> = r.split('|').collect();
            if cells[1] == "OPTIMAL" {
                let want = if cells[2] == "1" { "1|2" } else { "2|3" };
                assert_eq!(cells[4..6].join("|"), want, "{r}");
            } else {
                assert_eq!(cells[4..6].join("|"), "0|0", "{r}");
            }
        }

        // Δ = 2, α = 1/2: round 2 is the only recrawl round. OD-WIN: b 1, c 1/2;
        // OD-ALL: a (2/3·1/2)/(3/2) = 2/9, b (1/3·1/2 + 1)/(3/2) = 7/9, c (1/3·1/2
        // + 1/2)/(3/2) = 4/9. ε_b = 1/2 still links b and c (1 ≥ 1/2·2), and no
        // page outside the cluster has an OD-WIN score, so CLIQ-WIN = CLIQ-1.
        let other = Params {
            eps_b: 0.5,
            alpha: 0.5,
            delta: 2,
            ..Params::default()
        };
        let got = reference(&snaps, &other, &host_site);
        let want = policy_rows(
            &[
                ("OD-WIN", 1, 2),
                ("OD-ALL", 1, 2),
                ("OD-1", 1, 2),
                ("CLIQ-WIN", 1, 2),
                ("CLIQ-1", 1, 2),
                ("COV", 1, 2),
                ("OPTIMAL", 1, 2),
                ("BOUND-ALL", 3, 4),
                ("BOUND-W2", 2, 3),
                ("BOUND-W4", 0, 0),
            ],
            &[
                ("OD-WIN", 2, 3),
                ("OD-ALL", 3, 4),
                ("OD-1", 2, 3),
                ("CLIQ-WIN", 1, 2),
                ("CLIQ-1", 1, 2),
                ("COV", 1, 2),
                ("OPTIMAL", 3, 4),
            ],
        );
        assert_eq!(rows_at(&got, "policy_eval", 3), want);
        // At 2 with Δ = 2 the only round (1) is no recrawl round: only OD-ALL,
        // OPTIMAL and BOUND-ALL choose.
        for r in rows_at(&got, "policy_eval", 2) {
            let cells: Vec<&str> = r.split('|').collect();
            let chooses = ["OD-ALL", "OPTIMAL", "BOUND-ALL"].contains(&cells[1]);
            assert_eq!(cells[4] != "0", chooses, "{r}");
        }
    }

    #[test]
    fn od_win_recurrence_by_hand() {
        // One page x: p = 1/2 at round 0, 0 at round 2, 1 at round 3 (a second
        // page keeps the later rounds evaluated).
        let round = |n: &[(&str, &[&str])]| {
            let n: BTreeMap<String, Set> = n
                .iter()
                .map(|(x, ys)| (x.to_string(), ys.iter().map(|y| y.to_string()).collect()))
                .collect();
            let coverable: Set = n.values().flatten().cloned().collect();
            SiteRound {
                site: "s".into(),
                old_pages: n.len(),
                new_pages: coverable.len(),
                picks: greedy(&n),
                n,
                coverable,
            }
        };
        let r0 = round(&[("x", &["1"]), ("y", &["2"])]);
        let r2 = round(&[("y", &["3"])]);
        let r3 = round(&[("x", &["4"])]);
        let scores = od_scores(&[(0, &r0), (2, &r2), (3, &r3)], 0.5);
        // num(x) = (1/2·1/4 + 0)·1/2 + 1 = 17/16, den = (1·1/4 + 1)·1/2 + 1 = 13/8.
        // num(y) = (1/2·1/4 + 1)·1/2 + 0 = 9/16.
        assert_eq!(
            scores,
            vec![
                ("x".to_string(), (17.0 / 16.0) / (13.0 / 8.0)),
                ("y".to_string(), (9.0 / 16.0) / (13.0 / 8.0)),
            ]
        );
        assert_eq!(top(scores.clone(), 1), vec!["x".to_string()]);
        assert_eq!(od_scores(&[], 0.5), vec![]);
    }

    #[test]
    fn reference_new_sites_by_hand() {
        let u = |h: &str, p: &str| format!("http://{h}/{p}");
        let s0 = vec![u("a.com", "1"), u("a.com", "2"), u("b.com", "1")];
        let mut s1 = s0.clone();
        // New: a.com/3 on an old site, c.com/1, c.com/2 and d.com/1 on new sites;
        // e.com is only linked to, so it is no new site.
        s1.extend([
            u("a.com", "3"),
            u("c.com", "1"),
            u("c.com", "2"),
            u("d.com", "1"),
        ]);
        let links = vec![
            (u("a.com", "2"), u("c.com", "1")),
            (u("a.com", "1"), u("c.com", "2")),
            (u("b.com", "1"), u("d.com", "5")),
            (u("a.com", "1"), u("e.com", "x")),
            (u("c.com", "1"), u("d.com", "1")),
        ];
        let snaps = vec![
            Snap::full(0, &s0, &[]),
            Snap::full(1, &s1, &links),
            Snap::full(2, &s1, &[]),
        ];
        let got = reference(&snaps, &Params::default(), &host_site);
        assert_eq!(
            got["new_sites"],
            strings(&[
                "snapshot=1|4|3|1|0.75|2|1.5",
                "snapshot=2|0|0|0|null|0|null"
            ])
        );
        // M(a.com/1) = M(a.com/2) = {c.com}, M(b.com/1) = {d.com} (through a page
        // that is only linked to); c.com/1 is new, so it covers nothing.
        assert_eq!(
            got["site_cover"],
            strings(&[
                "snapshot=1|1|http://a.com/1|1|1|2",
                "snapshot=1|2|http://b.com/1|1|2|3",
            ])
        );
    }
}
