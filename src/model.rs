//! Domain types shared by ingest, the dataflow and the outputs.
//!
//! URLs and host names are interned to 64-bit ids at ingest (xxh3 of the normalized
//! string, a stable published hash, so ids persisted in `_state/` stay valid across
//! builds). The ledger keeps the strings and checks every id against them, so a hash
//! collision is detected and reported rather than silently merging two pages.

use std::hash::{Hash, Hasher};

use serde::{Deserialize, Serialize};

/// A snapshot's sequence number, which is also its dataflow timestamp.
pub type Seq = u64;

/// Microseconds since the Unix epoch, UTC.
pub type Micros = i64;

/// A normalized host name, interned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct HostId(pub u64);

/// A normalized page URL, interned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PageId(pub u64);

impl HostId {
    pub fn of(host: &str) -> HostId {
        HostId::of_bytes(host.as_bytes())
    }

    /// The id of the host whose name is `host`'s bytes.
    pub fn of_bytes(host: &[u8]) -> HostId {
        HostId(xxhash_rust::xxh3::xxh3_64(host))
    }
}

impl PageId {
    pub fn of(url: &str) -> PageId {
        PageId::of_bytes(url.as_bytes())
    }

    /// The id of the page whose URL is `url`'s bytes.
    pub fn of_bytes(url: &[u8]) -> PageId {
        PageId(xxhash_rust::xxh3::xxh3_64(url))
    }
}

/// Hash of a content digest string; 0 means "no digest recorded".
pub fn digest_hash(digest: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(digest.as_bytes()).max(1)
}

/// A key that is routed by its host alone.
///
/// Differential routes a keyed collection by the `Hash` of its key. Hashing only the
/// host sends every record of a host to the same worker, so per-host work stays local
/// however the key is refined (page, link, fact).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct HostKey<K> {
    pub host: HostId,
    pub key: K,
}

impl<K> Hash for HostKey<K> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.host.hash(state)
    }
}

/// The worker-routing hash of a host: the same function differential uses for its
/// exchanges. Hosts that [`crate::placement`] does not pin live on worker
/// `route(host) % peers`.
pub fn route(host: HostId) -> u64 {
    differential_dataflow::Hashable::hashed(&host)
}

/// Facts counted per host and snapshot; their accumulated counts are the
/// `host_snapshots` table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum HostFact {
    /// A page of the host fetched in this snapshot.
    Fetched,
    /// A page of the host fetched or linked to in this snapshot.
    Known,
    /// A distinct on- or off-host link whose source is on this host.
    Link,
    /// A fetched page seen (fetched or linked) in no earlier snapshot.
    NewPage,
    /// A page believed alive that this full snapshot did not fetch.
    GonePage,
    /// A fetched page whose digest differs from its previous observation.
    ChangedPage,
    /// A link present now and not in the previous snapshot.
    NewLink,
    /// A link present in the previous snapshot and not now.
    RemovedLink,
    /// The host has fetched pages now and no page of it was known before.
    NewHost,
}

impl HostFact {
    /// How many facts there are: `fact as usize` is below it.
    pub const COUNT: usize = 9;
}

/// One snapshot of the input, as the run plans it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SnapshotMeta {
    pub seq: Seq,
    pub time: Micros,
    pub partial: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_host_fact_is_numbered_below_the_count() {
        // A new fact stops this match compiling: count it in `COUNT` too.
        let numbered = |f: HostFact| match f {
            HostFact::Fetched
            | HostFact::Known
            | HostFact::Link
            | HostFact::NewPage
            | HostFact::GonePage
            | HostFact::ChangedPage
            | HostFact::NewLink
            | HostFact::RemovedLink
            | HostFact::NewHost => f as usize,
        };
        let all = [
            HostFact::Fetched,
            HostFact::Known,
            HostFact::Link,
            HostFact::NewPage,
            HostFact::GonePage,
            HostFact::ChangedPage,
            HostFact::NewLink,
            HostFact::RemovedLink,
            HostFact::NewHost,
        ];
        assert!(all.into_iter().map(numbered).eq(0..HostFact::COUNT));
    }

    #[test]
    fn ids_are_stable_across_builds() {
        // Ids are persisted in _state/, so they must be the published XXH3-64 of the
        // URL; the value is Python's `xxhash.xxh3_64_intdigest(b"http://a.com/")`.
        assert_eq!(PageId::of("http://a.com/").0, 0x3624_99fe_78d4_c700);
    }

    #[test]
    fn host_key_routes_by_host_only() {
        let h = HostId::of("a.com");
        let a = HostKey {
            host: h,
            key: PageId(1),
        };
        let b = HostKey {
            host: h,
            key: PageId(2),
        };
        assert_eq!(
            differential_dataflow::Hashable::hashed(&a),
            differential_dataflow::Hashable::hashed(&b)
        );
    }
}
