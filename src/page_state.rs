//! What the ledger knows about one page, packed.
//!
//! The ledger holds one [`PageState`] per page it ever knew: 1.9M on bench
//! snapshot 9 with 1 worker, its largest structure. With `Option`s and a
//! `String` the state was 160 bytes; here the optional snapshots and times
//! are sentinels, the snapshot numbers 4 bytes and the URL a reference into
//! the ledger's [`UrlArena`], 80 bytes. Its serialized form, [`PageRecord`],
//! is the old layout with the URL's text, so state files are unchanged.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

mod run;
pub use run::{PageRun, PageRunBuilder};

use crate::ingest::url::MAX_HOST_END;
use crate::ingest::UrlText;
use crate::model::{HostId, Micros, Seq};
use crate::url_arena::{UrlArena, UrlRef};

/// No snapshot: a page never fetched (snapshot numbers stop below it).
const NO_SEQ: u32 = u32::MAX;

/// The largest snapshot number the ledger can hold, one below its "never".
pub const MAX_SEQ: Seq = NO_SEQ as Seq - 1;

/// Snapshot `t` as the ledger stores it.
fn packed(t: Seq) -> u32 {
    debug_assert!(t <= MAX_SEQ, "ingest refuses larger snapshot numbers");
    t as u32
}

/// No time (ingest refuses it as a fetch time).
const NO_TIME: Micros = Micros::MIN;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageState {
    /// In the ledger's [`UrlArena`].
    pub url: UrlRef,
    pub host: HostId,
    /// Snapshot numbers, 4 bytes each: ingest refuses a snapshot numbered
    /// `u32::MAX` or more (`ingest::crawl_dir`), which leaves `NO_SEQ` free.
    first_seen: u32,
    last_seen: u32,
    first_fetched: u32,
    last_fetched: u32,
    first_fetch_time: Micros,
    last_fetch_time: Micros,
    pub observations: u32,
    pub changes: u32,
    /// Digest hash of the last observation; 0 when it had none.
    pub last_digest: u64,
    last_status: i32,
    has_status: bool,
    pub alive: bool,
}

impl PageState {
    /// A page first known at snapshot `t`, not yet fetched.
    pub fn new(url: UrlRef, host: HostId, t: Seq) -> PageState {
        PageState {
            url,
            host,
            first_seen: packed(t),
            last_seen: packed(t),
            first_fetched: NO_SEQ,
            last_fetched: NO_SEQ,
            first_fetch_time: NO_TIME,
            last_fetch_time: NO_TIME,
            observations: 0,
            changes: 0,
            last_digest: 0,
            last_status: 0,
            has_status: false,
            alive: false,
        }
    }

    /// Folds in a fetch at snapshot `t`; true when its digest shows a change
    /// from the last observation (both known).
    pub fn fetched(&mut self, t: Seq, time: Micros, status: Option<i32>, digest: u64) -> bool {
        debug_assert!(
            t <= MAX_SEQ && time != NO_TIME,
            "ingest refuses the sentinels"
        );
        let changed = self.last_digest != 0 && digest != 0 && digest != self.last_digest;
        self.changes += u32::from(changed);
        self.last_digest = digest;
        self.observations += 1;
        if self.first_fetched == NO_SEQ {
            self.first_fetched = packed(t);
            self.first_fetch_time = time;
        }
        self.last_fetched = packed(t);
        self.last_fetch_time = time;
        self.last_status = status.unwrap_or(0);
        self.has_status = status.is_some();
        self.last_seen = packed(t);
        self.alive = true;
        changed
    }

    /// Notes that snapshot `t` knows the page (fetched or linked to).
    pub fn seen(&mut self, t: Seq) {
        self.last_seen = packed(t);
    }

    /// The snapshot that first knew the page.
    pub fn first_seen(&self) -> Seq {
        Seq::from(self.first_seen)
    }

    /// The last snapshot that knew the page.
    pub fn last_seen(&self) -> Seq {
        Seq::from(self.last_seen)
    }

    pub fn first_fetched(&self) -> Option<Seq> {
        some_unless(self.first_fetched, NO_SEQ).map(Seq::from)
    }

    pub fn last_fetched(&self) -> Option<Seq> {
        some_unless(self.last_fetched, NO_SEQ).map(Seq::from)
    }

    pub fn first_fetch_time(&self) -> Option<Micros> {
        some_unless(self.first_fetch_time, NO_TIME)
    }

    pub fn last_fetch_time(&self) -> Option<Micros> {
        some_unless(self.last_fetch_time, NO_TIME)
    }

    pub fn last_status(&self) -> Option<i32> {
        self.has_status.then_some(self.last_status)
    }
}

fn some_unless<T: PartialEq>(v: T, none: T) -> Option<T> {
    (v != none).then_some(v)
}

/// A page's state as state files store it: the state with its URL's text
/// (the arena is the ledger's, and does not travel).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageRecord {
    pub url: UrlText,
    /// Its `url` is a placeholder until [`PageRecord::place`].
    pub state: PageState,
}

impl PageRecord {
    /// The record of `state`, whose URL is in `urls`.
    pub fn of(state: &PageState, urls: &UrlArena) -> PageRecord {
        PageRecord {
            url: urls.text(&state.url),
            state: state.clone(),
        }
    }

    /// The state, its URL stored in `urls`.
    pub fn place(self, urls: &mut UrlArena) -> PageState {
        let PageRecord { url, mut state } = self;
        state.url = urls.push(&url.url, url.host_start, url.host_end);
        state
    }
}

/// The layout state files have always had (state version 4 and before).
#[derive(Serialize, Deserialize)]
struct RawRecord<U> {
    url: U,
    host: HostId,
    first_seen: Seq,
    last_seen: Seq,
    first_fetched: Option<Seq>,
    last_fetched: Option<Seq>,
    first_fetch_time: Option<Micros>,
    last_fetch_time: Option<Micros>,
    observations: u32,
    changes: u32,
    last_digest: u64,
    last_status: Option<i32>,
    alive: bool,
}

impl Serialize for PageRecord {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let s = &self.state;
        RawRecord {
            first_fetched: s.first_fetched(),
            last_fetched: s.last_fetched(),
            first_fetch_time: s.first_fetch_time(),
            last_fetch_time: s.last_fetch_time(),
            last_status: s.last_status(),
            first_seen: s.first_seen(),
            last_seen: s.last_seen(),
            url: &self.url,
            host: s.host,
            observations: s.observations,
            changes: s.changes,
            last_digest: s.last_digest,
            alive: s.alive,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for PageRecord {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<PageRecord, D::Error> {
        let raw = RawRecord::<UrlText>::deserialize(deserializer)?;
        PageRecord::try_from(raw).map_err(serde::de::Error::custom)
    }
}

impl TryFrom<RawRecord<UrlText>> for PageRecord {
    type Error = String;

    fn try_from(r: RawRecord<UrlText>) -> Result<PageRecord, String> {
        let url = r.url;
        site_of(&url.url, url.host_start.into(), url.host_end.into())?;
        let state = PageState {
            first_seen: checked_seq(r.first_seen)?,
            last_seen: checked_seq(r.last_seen)?,
            first_fetched: r.first_fetched.map_or(Ok(NO_SEQ), checked_seq)?,
            last_fetched: r.last_fetched.map_or(Ok(NO_SEQ), checked_seq)?,
            url: UrlRef::default(),
            host: r.host,
            first_fetch_time: r.first_fetch_time.unwrap_or(NO_TIME),
            last_fetch_time: r.last_fetch_time.unwrap_or(NO_TIME),
            observations: r.observations,
            changes: r.changes,
            last_digest: r.last_digest,
            last_status: r.last_status.unwrap_or(0),
            has_status: r.last_status.is_some(),
            alive: r.alive,
        };
        Ok(PageRecord { url, state })
    }
}

/// Snapshot `t` of a state file as the ledger stores it; fails on a number
/// it cannot hold.
fn checked_seq(t: Seq) -> Result<u32, String> {
    if t > MAX_SEQ {
        return Err(format!(
            "snapshot number {t} is above the largest, {MAX_SEQ}"
        ));
    }
    Ok(packed(t))
}

/// The site's name of a state file's page `url`, at bytes
/// `host_start..host_end`; fails unless that range lies inside the URL and
/// ends where a [`UrlRef`] can mark it.
fn site_of(url: &str, host_start: u64, host_end: u64) -> Result<&str, String> {
    usize::try_from(host_start)
        .ok()
        .zip(usize::try_from(host_end).ok())
        .filter(|&(_, e)| e <= MAX_HOST_END)
        .and_then(|(s, e)| url.get(s..e))
        .ok_or_else(|| {
            format!(
                "page {url:?}: its host's position {host_start}..{host_end} is not inside it, or ends past byte {MAX_HOST_END}"
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> UrlText {
        UrlText {
            url: s.into(),
            host_start: 7,
            host_end: 7 + s[7..].find('/').unwrap_or(s.len() - 7) as u32,
        }
    }

    /// The packed state reads back what was put in, and its records are the
    /// old layout's: a state written before this change restores to the same
    /// state, and one written now is what the old layout wrote.
    #[test]
    fn packed_state_round_trips_through_the_old_layout() {
        assert!(std::mem::size_of::<PageState>() <= 80);
        let mut urls = UrlArena::default();
        let u = url("http://a.example/x");
        let at = urls.push(&u.url, u.host_start, u.host_end);
        let mut s = PageState::new(at, HostId(3), 4);
        assert_eq!(s.first_fetched(), None);
        assert_eq!(s.last_fetch_time(), None);
        assert_eq!(s.last_status(), None);
        let fresh = s.clone();
        assert!(!s.fetched(5, -7, Some(0), 11));
        assert!(!s.fetched(6, 100, None, 11));
        assert!(s.fetched(7, 200, Some(404), 12));
        assert!(!s.fetched(8, 300, Some(200), 0));
        assert_eq!((s.first_fetched(), s.last_fetched()), (Some(5), Some(8)));
        assert_eq!(
            (s.first_fetch_time(), s.last_fetch_time()),
            (Some(-7), Some(300))
        );
        assert_eq!(
            (s.last_status(), s.changes, s.observations),
            (Some(200), 1, 4)
        );
        assert_eq!((s.first_seen(), s.last_seen(), s.alive), (4, 8, true));
        // State files are bincode, which writes a struct as its fields in
        // order: the old layout's fields, written out here by hand.
        let u = url("http://a.example/x");
        let old_fetched = (
            u.clone(),
            HostId(3),
            4u64,
            8u64,
            Some(5u64),
            Some(8u64),
            Some(-7i64),
            Some(300i64),
            (4u32, 1u32, 0u64),
            Some(200i32),
            true,
        );
        let old_fresh = (
            u,
            HostId(3),
            4u64,
            4u64,
            None::<u64>,
            None::<u64>,
            None::<i64>,
            None::<i64>,
            (0u32, 0u32, 0u64),
            None::<i32>,
            false,
        );
        let old = [
            bincode::serialize(&old_fetched).unwrap(),
            bincode::serialize(&old_fresh).unwrap(),
        ];
        for (st, old) in [s, fresh].into_iter().zip(old) {
            let rec = PageRecord::of(&st, &urls);
            assert_eq!(bincode::serialize(&rec).unwrap(), old);
            let back = bincode::deserialize::<PageRecord>(&old).unwrap();
            assert_eq!(back.url, rec.url);
            let mut other = UrlArena::default();
            let placed = back.place(&mut other);
            assert_eq!(other.get(&placed.url), "http://a.example/x");
            assert_eq!(
                placed,
                PageState {
                    url: placed.url,
                    ..st
                }
            );
        }
        // A record whose host does not sit inside its URL is refused.
        let mut bad = old_fresh.clone();
        bad.0.host_end = 99;
        let e = bincode::deserialize::<PageRecord>(&bincode::serialize(&bad).unwrap());
        assert!(e.unwrap_err().to_string().contains("not inside it"));
    }
}
