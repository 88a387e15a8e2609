//! Which worker owns each host.
//!
//! Hosts are placed by a hash of their id ([`route`]), which spreads many small
//! hosts evenly but leaves the few large ones to chance: on the bench crawl the
//! ten largest hosts all hashed to worker 0 of 2, which then held 55.6% of the
//! graph and set the pace of every stage. A run that starts from nothing
//! therefore counts the pages per host of its first snapshot ([`measure`]) and
//! pins the largest hosts to workers by longest-processing-time-first, on top of
//! what the hash gives each worker of the rest ([`Placement::balance`]). Every
//! worker computes the same placement from the same exchanged counts; no worker
//! sees more than the largest hosts' counts.
//!
//! The placement is kept with the state (`_state/placement.json`), so later runs
//! route as the state was written. Hosts first seen after the first snapshot are
//! placed by hash. A state without the file (written before placement existed) is
//! continued with hash placement, as it was written.

use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;

use serde::{Deserialize, Serialize};
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::vec::Broadcast;
use timely::dataflow::operators::{Input, Inspect, Probe};

use crate::error::OutputError;
use crate::model::{route, HostId};

/// Each worker nominates its largest hosts (by pages counted where the hash
/// places them) for pinning; the union of all nominations is pinned. The
/// hosts past these are small enough for the hash to spread.
pub const NOMINEES_PER_WORKER: usize = 64;

/// The name of the placement's file in the state directory.
pub const FILE: &str = "placement.json";

/// One pinned host: its page count when it was placed, and its worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pin {
    pub host: HostId,
    pub pages: u64,
    pub worker: u32,
}

/// Where every host lives in a run of `peers` workers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    pub peers: usize,
    /// The pinned hosts, largest first.
    pub pins: Vec<Pin>,
    /// Pages per worker of the hosts placed by hash, when the pins were chosen.
    pub hashed_pages: Vec<u64>,
    #[serde(skip)]
    index: foldhash::HashMap<HostId, u32>,
}

/// What one worker reports of the pages it counted: its hash-placed total and
/// its nominees.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    pub worker: usize,
    pub pages: u64,
    pub nominees: Vec<(HostId, u64)>,
}

impl Tally {
    /// The tally of `worker`, which the hash gave the hosts of `counts`.
    pub fn of(worker: usize, mut counts: Vec<(HostId, u64)>) -> Tally {
        let pages = counts.iter().map(|(_, n)| n).sum();
        largest_first(&mut counts);
        counts.truncate(NOMINEES_PER_WORKER);
        Tally {
            worker,
            pages,
            nominees: counts,
        }
    }
}

/// Hosts by pages, largest first, equal sizes by id: the one order every
/// worker agrees on.
fn largest_first(hosts: &mut [(HostId, u64)]) {
    hosts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
}

impl Placement {
    /// Every host placed by hash.
    pub fn hashed(peers: usize) -> Placement {
        Placement {
            peers,
            hashed_pages: vec![0; peers],
            ..Placement::default()
        }
    }

    /// The worker of `peers` that owns `host`.
    pub fn owner(&self, host: HostId) -> usize {
        (self.route(host) % self.peers as u64) as usize
    }

    /// The exchange routing value of `host`: timely sends a record to worker
    /// `value % peers` (or `value & (peers - 1)`), which for a pinned host is
    /// its worker itself.
    pub fn route(&self, host: HostId) -> u64 {
        match self.index.get(&host) {
            Some(&w) => w as u64,
            None => route(host),
        }
    }

    /// Pins the nominated hosts of all workers' `tallies` largest first, each
    /// to the worker with the fewest pages so far (ties to the lowest index),
    /// starting from the pages each worker holds of the hosts left to the hash.
    /// Ties between hosts of equal size go to the smaller id, so every worker
    /// computes the same placement from the same tallies in any order.
    pub fn balance(peers: usize, tallies: &[Tally]) -> Placement {
        let mut hashed_pages = vec![0u64; peers];
        let mut nominees = Vec::new();
        for t in tallies {
            hashed_pages[t.worker] += t.pages;
            for &(host, pages) in &t.nominees {
                hashed_pages[t.worker] -= pages;
                nominees.push((host, pages));
            }
        }
        largest_first(&mut nominees);
        Placement::assign(peers, hashed_pages, nominees)
    }

    /// Longest processing time first over `hosts` (largest first), on top of
    /// `hashed_pages`.
    fn assign(peers: usize, hashed_pages: Vec<u64>, hosts: Vec<(HostId, u64)>) -> Placement {
        let mut load = hashed_pages.clone();
        let pins = hosts
            .into_iter()
            .filter(|&(_, pages)| pages > 0)
            .map(|(host, pages)| {
                let worker = (0..peers)
                    .min_by_key(|&w| (load[w], w))
                    .expect("a run has workers");
                load[worker] += pages;
                Pin {
                    host,
                    pages,
                    worker: worker as u32,
                }
            })
            .collect();
        let mut p = Placement {
            peers,
            pins,
            hashed_pages,
            index: Default::default(),
        };
        p.reindex();
        p
    }

    /// The same pins for a run of another number of workers: the pinned hosts
    /// are placed again by the same rule, and the hash-placed pages are taken
    /// as spread evenly (their counts per new worker are not known).
    pub fn for_peers(&self, peers: usize) -> Placement {
        if peers == self.peers {
            return self.clone();
        }
        let total: u64 = self.hashed_pages.iter().sum();
        let hosts = self.pins.iter().map(|p| (p.host, p.pages)).collect();
        Placement::assign(peers, vec![total / peers as u64; peers], hosts)
    }

    /// Pages per worker: the hash-placed pages and the pins.
    pub fn loads(&self) -> Vec<u64> {
        let mut load = self.hashed_pages.clone();
        for p in &self.pins {
            load[p.worker as usize] += p.pages;
        }
        load
    }

    fn reindex(&mut self) {
        self.index = self.pins.iter().map(|p| (p.host, p.worker)).collect();
    }

    /// The placement kept in `state_dir`, if any.
    pub fn load(state_dir: &Path) -> Result<Option<Placement>, OutputError> {
        let path = state_dir.join(FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(OutputError::io(&path, e)),
        };
        let mut p: Placement = serde_json::from_str(&text).map_err(|e| OutputError::Corrupt {
            path: path.clone(),
            problem: format!("not a host placement: {e}"),
        })?;
        let bad = p.peers == 0
            || p.hashed_pages.len() != p.peers
            || p.pins.iter().any(|pin| pin.worker as usize >= p.peers);
        if bad {
            return Err(OutputError::Corrupt {
                path,
                problem: format!(
                    "a host placement for {} workers names other workers",
                    p.peers
                ),
            });
        }
        p.reindex();
        Ok(Some(p))
    }

    /// Writes the placement into `state_dir`.
    pub fn save(&self, state_dir: &Path) -> Result<(), OutputError> {
        std::fs::create_dir_all(state_dir).map_err(|e| OutputError::io(state_dir, e))?;
        let path = state_dir.join(FILE);
        let text = serde_json::to_string_pretty(self).expect("a placement serializes");
        std::fs::write(&path, text).map_err(|e| OutputError::io(&path, e))
    }
}

/// Counts the hosts of this worker's share of a snapshot's pages (`read` hands
/// each page's host to its argument), exchanges the counts by hash, and
/// returns the balanced placement every worker computes from the exchanged
/// tallies. A collective step: every worker of the run must call it.
pub fn measure(
    worker: &mut timely::worker::Worker,
    read: impl FnOnce(&mut dyn FnMut(HostId)),
) -> Placement {
    let index = worker.index();
    let peers = worker.peers();
    let tallies = Rc::new(RefCell::new(Vec::new()));
    let (mut input, probe) = worker.dataflow::<u64, _, _>(|scope| {
        let (input, counts) = scope.new_input::<Vec<(HostId, u64)>>();
        let tallies = tallies.clone();
        let mut sums: foldhash::HashMap<HostId, u64> = Default::default();
        let probe = counts
            .unary_frontier::<timely::container::CapacityContainerBuilder<Vec<Tally>>, _, _, _>(
                Exchange::new(|(h, _): &(HostId, u64)| route(*h)),
                "HostSizes",
                move |cap, _| {
                    let mut cap = Some(cap);
                    move |(input, frontier), output| {
                        input.for_each(|_, data| {
                            for (h, n) in data.drain(..) {
                                *sums.entry(h).or_default() += n;
                            }
                        });
                        if frontier.is_empty() {
                            if let Some(cap) = cap.take() {
                                let counts = sums.drain().collect();
                                output.session(&cap).give(Tally::of(index, counts));
                            }
                        }
                    }
                },
            )
            .broadcast()
            .inspect(move |t| tallies.borrow_mut().push(t.clone()))
            .probe()
            .0;
        (input, probe)
    });
    let mut local: foldhash::HashMap<HostId, u64> = Default::default();
    read(&mut |h| *local.entry(h).or_default() += 1);
    for (h, n) in local {
        input.send((h, n));
    }
    input.close();
    worker.step_while(|| !probe.done());
    let tallies = tallies.borrow();
    Placement::balance(peers, &tallies)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(worker: usize, pages: u64, nominees: &[(u64, u64)]) -> Tally {
        Tally {
            worker,
            pages,
            nominees: nominees.iter().map(|&(h, n)| (HostId(h), n)).collect(),
        }
    }

    #[test]
    fn largest_hosts_go_to_the_least_loaded_worker() {
        // Worker 0 hashed 100 pages, 90 of them in hosts 1 and 2; worker 1
        // hashed 20, 10 in host 3.
        let p = Placement::balance(
            2,
            &[tally(0, 100, &[(1, 50), (2, 40)]), tally(1, 20, &[(3, 10)])],
        );
        assert_eq!(p.hashed_pages, vec![10, 10]);
        // Largest first: 1 (50) to either (tie: 0), 2 (40) to 1, 3 (10) to 1.
        let pins: Vec<(u64, u32)> = p.pins.iter().map(|p| (p.host.0, p.worker)).collect();
        assert_eq!(pins, vec![(1, 0), (2, 1), (3, 1)]);
        assert_eq!(p.loads(), vec![60, 60]);
        assert_eq!(p.owner(HostId(2)), 1);
    }

    #[test]
    fn any_order_of_tallies_gives_the_same_placement() {
        let a = tally(0, 30, &[(7, 10), (9, 10)]);
        let b = tally(1, 30, &[(8, 10), (5, 10)]);
        let c = tally(2, 5, &[]);
        let one = Placement::balance(3, &[a.clone(), b.clone(), c.clone()]);
        let two = Placement::balance(3, &[c, b, a]);
        assert_eq!(one, two);
        // Equal sizes are pinned by smaller id first.
        let order: Vec<u64> = one.pins.iter().map(|p| p.host.0).collect();
        assert_eq!(order, vec![5, 7, 8, 9]);
    }

    #[test]
    fn balance_evens_out_heavy_tailed_hosts() {
        // Random host sizes with a heavy tail, placed by hash and by balance.
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64::seed_from_u64(7);
        for peers in [2, 3, 4, 8] {
            let (mut max_by_hash, mut max_by_placement) = (0u64, 0u64);
            for _ in 0..20 {
                let hosts: Vec<(HostId, u64)> = (0..2_000u64)
                    .map(|i| {
                        let u: f64 = rng.random_range(0.0..1.0);
                        (
                            HostId::of(&format!("h{i}.example")),
                            (1.0 / (1.0 - u).powf(0.9)) as u64,
                        )
                    })
                    .collect();
                let hashed = Placement::hashed(peers);
                let mut by_hash = vec![0u64; peers];
                let mut per_worker: Vec<Vec<(HostId, u64)>> = vec![Vec::new(); peers];
                for &(h, n) in &hosts {
                    by_hash[hashed.owner(h)] += n;
                    per_worker[hashed.owner(h)].push((h, n));
                }
                let tallies: Vec<Tally> = per_worker
                    .into_iter()
                    .enumerate()
                    .map(|(w, hs)| Tally::of(w, hs))
                    .collect();
                let p = Placement::balance(peers, &tallies);
                let mut by_placement = vec![0u64; peers];
                for &(h, n) in &hosts {
                    by_placement[p.owner(h)] += n;
                }
                assert_eq!(by_placement, p.loads());
                // List scheduling's bound: the fullest worker got its last pin
                // when it held no more than the average.
                let total: u64 = hosts.iter().map(|x| x.1).sum();
                let largest = p.pins.iter().map(|p| p.pages).max().unwrap_or(0);
                let bound =
                    (total / peers as u64 + largest).max(*p.hashed_pages.iter().max().unwrap());
                assert!(*by_placement.iter().max().unwrap() <= bound);
                max_by_hash += *by_hash.iter().max().unwrap();
                max_by_placement += *by_placement.iter().max().unwrap();
            }
            // Over the trials, the fullest worker holds clearly less.
            assert!(
                (max_by_placement as f64) < 0.97 * max_by_hash as f64,
                "{peers} workers: {max_by_placement} vs {max_by_hash}"
            );
        }
    }

    #[test]
    fn routes_agree_with_timely_for_any_worker_count() {
        let p = Placement::balance(
            3,
            &[tally(0, 9, &[(11, 9)]), tally(1, 1, &[]), tally(2, 1, &[])],
        );
        for h in [HostId(11), HostId::of("a.example"), HostId::of("b.example")] {
            assert_eq!((p.route(h) % 3) as usize, p.owner(h));
        }
        // A power-of-two count: timely masks instead of taking the remainder.
        let p = Placement::balance(4, &[tally(0, 9, &[(11, 9)]), tally(1, 1, &[])]);
        for h in [HostId(11), HostId::of("a.example")] {
            assert_eq!((p.route(h) & 3) as usize, p.owner(h));
        }
    }

    #[test]
    fn another_worker_count_keeps_the_pins_and_saves_and_loads() {
        let p = Placement::balance(
            2,
            &[tally(0, 100, &[(1, 50), (2, 40)]), tally(1, 20, &[(3, 10)])],
        );
        let q = p.for_peers(3);
        assert_eq!(q.peers, 3);
        assert_eq!(q.pins.len(), 3);
        assert!(q.pins.iter().all(|p| (p.worker as usize) < 3));
        let dir = tempfile::tempdir().unwrap();
        q.save(dir.path()).unwrap();
        let back = Placement::load(dir.path()).unwrap().unwrap();
        assert_eq!(back, q);
        assert_eq!(back.owner(HostId(1)), q.owner(HostId(1)));
        assert_eq!(Placement::load(&dir.path().join("none")).unwrap(), None);
        std::fs::write(
            dir.path().join(FILE),
            r#"{"peers":2,"pins":[{"host":1,"pages":1,"worker":5}],"hashed_pages":[0,0]}"#,
        )
        .unwrap();
        let err = Placement::load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("placement.json"), "{err}");
    }
}
