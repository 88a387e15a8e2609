//! Pages as state version 5 stores them: runs of one host's pages in the
//! `pages` table's order (by URL within a first snapshot; URL order until
//! session 57), each URL front-coded against the one before it.
//!
//! A version-4 page record was about 170 bytes on bench snapshot 9: its
//! bincode layout spends 8 bytes on every number and length, and writes the
//! page's and host's ids, which are hashes of its URL. Writing a state of
//! 230 MB per worker (most of it pages) to the page cache took a third of the
//! finish of a new snapshot. Here a page costs about 60 bytes: the URL's
//! bytes past the prefix it shares with the page before it (pages sorted by
//! URL share most of theirs), its small numbers as varints, and no ids: a
//! restore hashes the URL again. A page whose ids are not its URL's hashes
//! (none that ingest makes) keeps them, flagged.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::byte_string::{ByteBuf, Bytes};

use super::{checked_seq, site_of, PageState, NO_SEQ, NO_TIME};
use crate::model::{HostId, PageId};
use crate::url_arena::UrlRef;

/// Pages of one host, encoded (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageRun {
    pub host: HostId,
    count: u32,
    bytes: Vec<u8>,
}

/// Flags of an encoded page: which optional fields follow.
const FIRST_FETCHED: u8 = 1;
const LAST_FETCHED: u8 = 1 << 1;
const FIRST_FETCH_TIME: u8 = 1 << 2;
const LAST_FETCH_TIME: u8 = 1 << 3;
const STATUS: u8 = 1 << 4;
const ALIVE: u8 = 1 << 5;
/// The page's and host's ids follow (they are not its URL's hashes).
const IDS: u8 = 1 << 6;
const KNOWN_FLAGS: u8 = (1 << 7) - 1;

/// Builds a [`PageRun`] a page at a time.
pub struct PageRunBuilder {
    run: PageRun,
    /// The last page's URL, which the next one is coded against.
    prev: Vec<u8>,
}

impl PageRunBuilder {
    /// A run of `host`'s pages, with room for about `pages` of them.
    pub fn new(host: HostId, pages: usize) -> PageRunBuilder {
        PageRunBuilder {
            run: PageRun {
                host,
                count: 0,
                // About 60 bytes a page on bench data.
                bytes: Vec::with_capacity(pages * 64),
            },
            prev: Vec::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.run.count as usize
    }

    pub fn is_empty(&self) -> bool {
        self.run.count == 0
    }

    /// Appends page `id`, whose URL is `url` (its bytes, as the ledger's URL
    /// arena holds them: a text check of every URL was a fifth of the
    /// state's writing, and the run's reader checks them). Its state's host
    /// must be the run's.
    pub fn push(&mut self, id: PageId, state: &PageState, url: &[u8]) {
        debug_assert_eq!(state.host, self.run.host, "a run holds one host's pages");
        let (host_start, host_end) = state.url.host_range();
        let host = url.get(host_start as usize..host_end as usize);
        let ids_match =
            PageId::of_bytes(url) == id && host.map(HostId::of_bytes) == Some(state.host);
        let mut flags = 0;
        for (present, flag) in [
            (state.first_fetched != NO_SEQ, FIRST_FETCHED),
            (state.last_fetched != NO_SEQ, LAST_FETCHED),
            (state.first_fetch_time != NO_TIME, FIRST_FETCH_TIME),
            (state.last_fetch_time != NO_TIME, LAST_FETCH_TIME),
            (state.has_status, STATUS),
            (state.alive, ALIVE),
            (!ids_match, IDS),
        ] {
            if present {
                flags |= flag;
            }
        }
        let out = &mut self.run.bytes;
        out.push(flags);
        let shared = shared_prefix(&self.prev, url);
        put(out, shared as u64);
        put(out, (url.len() - shared) as u64);
        out.extend_from_slice(&url[shared..]);
        put(out, u64::from(host_start));
        put(out, u64::from(host_end));
        put(out, u64::from(state.first_seen));
        put(out, u64::from(state.last_seen));
        if flags & FIRST_FETCHED != 0 {
            put(out, u64::from(state.first_fetched));
        }
        if flags & LAST_FETCHED != 0 {
            put(out, u64::from(state.last_fetched));
        }
        if flags & FIRST_FETCH_TIME != 0 {
            put(out, zigzag(state.first_fetch_time));
        }
        if flags & LAST_FETCH_TIME != 0 {
            put(out, zigzag(state.last_fetch_time));
        }
        put(out, u64::from(state.observations));
        put(out, u64::from(state.changes));
        out.extend_from_slice(&state.last_digest.to_le_bytes());
        if flags & STATUS != 0 {
            put(out, zigzag(i64::from(state.last_status)));
        }
        if flags & IDS != 0 {
            out.extend_from_slice(&id.0.to_le_bytes());
            out.extend_from_slice(&state.host.0.to_le_bytes());
        }
        self.prev.clear();
        self.prev.extend_from_slice(url);
        self.run.count += 1;
    }

    pub fn finish(self) -> PageRun {
        self.run
    }
}

impl PageRun {
    /// Hands each page to `visit` in the order they were pushed: its id, URL,
    /// the site's byte range in the URL, and its state (whose `url` is a
    /// placeholder, for the caller to store the URL where it keeps URLs).
    /// Fails on bytes that are not a run this module wrote.
    pub fn decode(
        &self,
        mut visit: impl FnMut(PageId, &str, (u32, u32), PageState),
    ) -> Result<(), String> {
        let mut input: &[u8] = &self.bytes;
        // The last URL, which the next one shares a prefix with.
        let mut url = String::new();
        for _ in 0..self.count {
            let flags = byte(&mut input)?;
            if flags & !KNOWN_FLAGS != 0 {
                return Err(format!(
                    "page flags {flags:#x} name no field this webevo knows"
                ));
            }
            let shared = get(&mut input)? as usize;
            let suffix = get(&mut input)? as usize;
            if shared > url.len() || suffix > input.len() {
                return Err("a URL's shared prefix or suffix runs past its bytes".into());
            }
            let not_text = |_| "a URL is not UTF-8".to_string();
            if url.is_char_boundary(shared) {
                // The prefix is text already: only the suffix needs a check.
                let rest = std::str::from_utf8(&input[..suffix]).map_err(not_text)?;
                url.truncate(shared);
                url.push_str(rest);
            } else {
                let mut bytes = std::mem::take(&mut url).into_bytes();
                bytes.truncate(shared);
                bytes.extend_from_slice(&input[..suffix]);
                url = String::from_utf8(bytes).map_err(|e| not_text(e.utf8_error()))?;
            }
            input = &input[suffix..];
            let text = url.as_str();
            let host_start = get(&mut input)?;
            let host_end = get(&mut input)?;
            let host = site_of(text, host_start, host_end)?;
            let first_seen = checked_seq(get(&mut input)?)?;
            let last_seen = checked_seq(get(&mut input)?)?;
            let mut optional_seq = |flag| -> Result<u32, String> {
                if flags & flag != 0 {
                    checked_seq(get(&mut input)?)
                } else {
                    Ok(NO_SEQ)
                }
            };
            let first_fetched = optional_seq(FIRST_FETCHED)?;
            let last_fetched = optional_seq(LAST_FETCHED)?;
            let mut optional_time = |flag| -> Result<i64, String> {
                if flags & flag != 0 {
                    Ok(unzigzag(get(&mut input)?))
                } else {
                    Ok(NO_TIME)
                }
            };
            let first_fetch_time = optional_time(FIRST_FETCH_TIME)?;
            let last_fetch_time = optional_time(LAST_FETCH_TIME)?;
            let observations = narrow(get(&mut input)?)?;
            let changes = narrow(get(&mut input)?)?;
            let last_digest = fixed(&mut input)?;
            let last_status = if flags & STATUS != 0 {
                i32::try_from(unzigzag(get(&mut input)?))
                    .map_err(|_| "a status past 32 bits".to_string())?
            } else {
                0
            };
            let (id, host_id) = if flags & IDS != 0 {
                (PageId(fixed(&mut input)?), HostId(fixed(&mut input)?))
            } else {
                (PageId::of(text), HostId::of(host))
            };
            if host_id != self.host {
                return Err(format!("page {text:?} is in the run of another host"));
            }
            let state = PageState {
                url: UrlRef::default(),
                host: host_id,
                first_seen,
                last_seen,
                first_fetched,
                last_fetched,
                first_fetch_time,
                last_fetch_time,
                observations,
                changes,
                last_digest,
                last_status,
                has_status: flags & STATUS != 0,
                alive: flags & ALIVE != 0,
            };
            // Both under `MAX_HOST_END`, which `site_of` checked.
            visit(id, text, (host_start as u32, host_end as u32), state);
        }
        if !input.is_empty() {
            return Err(format!("{} bytes past a run's last page", input.len()));
        }
        Ok(())
    }
}

fn narrow(x: u64) -> Result<u32, String> {
    u32::try_from(x).map_err(|_| format!("a count of {x} is past 32 bits"))
}

/// Appends `x` as a LEB128 varint.
fn put(out: &mut Vec<u8>, mut x: u64) {
    while x >= 0x80 {
        out.push(x as u8 | 0x80);
        x >>= 7;
    }
    out.push(x as u8);
}

fn get(input: &mut &[u8]) -> Result<u64, String> {
    let mut x = 0u64;
    for shift in (0..64).step_by(7) {
        let b = byte(input)?;
        x |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            if shift == 63 && b > 1 {
                break;
            }
            return Ok(x);
        }
    }
    Err("a number past 64 bits".into())
}

fn byte(input: &mut &[u8]) -> Result<u8, String> {
    let (&b, rest) = input.split_first().ok_or("a run ends inside a page")?;
    *input = rest;
    Ok(b)
}

fn fixed(input: &mut &[u8]) -> Result<u64, String> {
    let Some((b, rest)) = input.split_first_chunk::<8>() else {
        return Err("a run ends inside a page".into());
    };
    *input = rest;
    Ok(u64::from_le_bytes(*b))
}

fn zigzag(x: i64) -> u64 {
    ((x << 1) ^ (x >> 63)) as u64
}

fn unzigzag(x: u64) -> i64 {
    (x >> 1) as i64 ^ -((x & 1) as i64)
}

/// Serialized as its host, its page count and its bytes as one byte string
/// (bincode then copies them whole, not a byte at a time).
impl Serialize for PageRun {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        (self.host, self.count, Bytes(&self.bytes)).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for PageRun {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<PageRun, D::Error> {
        let (host, count, ByteBuf(bytes)) = Deserialize::deserialize(deserializer)?;
        Ok(PageRun { host, count, bytes })
    }
}

/// The length of the longest common prefix of `a` and `b`, compared eight
/// bytes at a time: consecutive URLs of a host share most of theirs (bench
/// snapshot 9's state was written in 0.35 s a worker with a byte by byte
/// walk, 0.32 s so; 5 alternated pairs).
fn shared_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n {
        let x = u64::from_le_bytes(a[i..i + 8].try_into().expect("eight bytes"));
        let y = u64::from_le_bytes(b[i..i + 8].try_into().expect("eight bytes"));
        if x != y {
            return i + ((x ^ y).trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    i + a[i..n]
        .iter()
        .zip(&b[i..n])
        .take_while(|(x, y)| x == y)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page_state::PageRecord;
    use crate::url_arena::UrlArena;
    use rand::{Rng, SeedableRng};

    #[test]
    fn shared_prefix_is_the_bytewise_one() {
        let naive = |a: &[u8], b: &[u8]| a.iter().zip(b).take_while(|(x, y)| x == y).count();
        let urls: [&[u8]; 7] = [
            b"",
            b"http://a.example/",
            b"http://a.example/section/2024/x-1.html",
            b"http://a.example/section/2024/x-2.html",
            b"http://a.example/section/2025/",
            b"http://a.example/sectioN",
            b"http://b.example/\xc3\xa9t\xc3\xa9",
        ];
        for a in urls {
            for b in urls {
                for cut in 0..=b.len() {
                    assert_eq!(shared_prefix(a, &b[..cut]), naive(a, &b[..cut]));
                }
            }
        }
    }

    const HOST: &str = "a.example";

    /// Pages of host `HOST` in URL order, with states of every shape: never
    /// fetched, fetched with and without a status or digest, a negative
    /// fetch time, and some whose ids are not their URL's hashes.
    fn pages(rng: &mut rand_pcg::Pcg64, n: usize) -> (UrlArena, Vec<(PageId, PageState)>) {
        let mut urls: Vec<String> = (0..n)
            .map(|i| {
                let depth = rng.random_range(0..4);
                let path: Vec<String> = (0..depth)
                    .map(|_| format!("d{}", rng.random_range(0..5)))
                    .collect();
                format!("http://{HOST}/{}/p{i}é", path.join("/"))
            })
            .collect();
        urls.sort();
        let mut arena = UrlArena::default();
        let host = HostId::of(HOST);
        let pages = urls
            .iter()
            .map(|u| {
                let at = arena.push(u, 7, 7 + HOST.len() as u32);
                let mut st = PageState::new(at, host, rng.random_range(0..5));
                for t in 5..rng.random_range(5..9) {
                    let status = rng.random_bool(0.7).then(|| rng.random_range(0..1000));
                    let time = rng.random_range(-1_000_000i64..1 << 52);
                    st.fetched(t, time, status, rng.random_range(0..3));
                }
                st.alive = rng.random_bool(0.5);
                st.seen(rng.random_range(st.last_seen()..12));
                let id = if rng.random_bool(0.05) {
                    PageId(rng.random())
                } else {
                    PageId::of(u)
                };
                (id, st)
            })
            .collect();
        (arena, pages)
    }

    fn encode(arena: &UrlArena, pages: &[(PageId, PageState)]) -> PageRun {
        let mut b = PageRunBuilder::new(HostId::of(HOST), 4);
        for (id, st) in pages {
            b.push(*id, st, arena.bytes(&st.url));
        }
        assert_eq!(b.len(), pages.len());
        b.finish()
    }

    /// Every page reads back as written, through bincode as the state file
    /// holds it, ids included where they are not the URL's hashes.
    #[test]
    fn pages_round_trip() {
        let mut rng = rand_pcg::Pcg64::seed_from_u64(5);
        for n in [0, 1, 2, 300] {
            let (arena, pages) = pages(&mut rng, n);
            let run = encode(&arena, &pages);
            let run: PageRun = bincode::deserialize(&bincode::serialize(&run).unwrap()).unwrap();
            let mut back = Vec::new();
            run.decode(|id, url, range, st| back.push((id, url.to_string(), range, st)))
                .unwrap();
            assert_eq!(back.len(), n);
            for ((id, st), (id2, url, range, st2)) in pages.iter().zip(back) {
                assert_eq!(*id, id2);
                assert_eq!(arena.get(&st.url), url);
                assert_eq!(st.url.host_range(), range);
                assert_eq!(
                    PageState {
                        url: UrlRef::default(),
                        ..st.clone()
                    },
                    st2
                );
            }
        }
    }

    /// URLs whose shared prefix ends inside a character (`é` and `ê` share
    /// their first byte) read back whole; a URL's bytes that are not text
    /// fail the run, in a suffix after a whole character or after a split
    /// one.
    #[test]
    fn urls_split_inside_a_character_read_back() {
        let urls = [
            "http://h.ex/aé",
            "http://h.ex/aê",
            "http://h.ex/aêx",
            "http://h.ex/b",
        ];
        let mut arena = UrlArena::default();
        let host = HostId::of("h.ex");
        let pages: Vec<(PageId, PageState)> = urls
            .iter()
            .map(|u| (PageId::of(u), PageState::new(arena.push(u, 7, 11), host, 1)))
            .collect();
        let mut b = PageRunBuilder::new(host, 4);
        for (id, st) in &pages {
            b.push(*id, st, arena.bytes(&st.url));
        }
        let run = b.finish();
        let mut back = Vec::new();
        run.decode(|id, url, _, _| back.push((id, url.to_string())))
            .unwrap();
        let want: Vec<(PageId, String)> = urls
            .iter()
            .map(|u| (PageId::of(u), u.to_string()))
            .collect();
        assert_eq!(back, want);
        // The second URL's suffix is the byte after the split (0xaa), the
        // third's "x" after a whole character: each made a byte that is no
        // text's.
        for (from, to) in [(0xaa, 0xff), (b'x', 0xc3)] {
            let mut bad = run.clone();
            let at = bad.bytes.iter().rposition(|&x| x == from).unwrap();
            bad.bytes[at] = to;
            let err = bad.decode(|_, _, _, _| {}).unwrap_err();
            assert!(err.contains("not UTF-8"), "{err}");
        }
    }

    /// Front coding and varints: a run takes well under half the bytes of
    /// the pages' version-4 records.
    #[test]
    fn a_run_is_smaller_than_page_records() {
        let mut rng = rand_pcg::Pcg64::seed_from_u64(6);
        let (arena, pages) = pages(&mut rng, 1000);
        let run = bincode::serialize(&encode(&arena, &pages)).unwrap().len();
        let records: usize = pages
            .iter()
            .map(|(id, st)| {
                bincode::serialize(&(id, PageRecord::of(st, &arena)))
                    .unwrap()
                    .len()
            })
            .sum();
        assert!(run * 2 < records, "run {run} bytes, records {records}");
    }

    /// Bytes that are not a run this module wrote are refused, never
    /// decoded into pages: cut short, with an unknown flag, a host range
    /// outside the URL, or a page of another host.
    #[test]
    fn refuses_bad_runs() {
        let mut rng = rand_pcg::Pcg64::seed_from_u64(7);
        let (arena, pages) = pages(&mut rng, 3);
        let run = encode(&arena, &pages);
        let decode = |run: &PageRun| run.decode(|_, _, _, _| {});
        assert!(decode(&run).is_ok());
        for cut in 0..run.bytes.len() {
            let short = PageRun {
                bytes: run.bytes[..cut].to_vec(),
                ..run.clone()
            };
            assert!(decode(&short).is_err(), "cut at {cut}");
        }
        let mut flags = run.clone();
        flags.bytes[0] |= 0x80;
        assert!(decode(&flags).unwrap_err().contains("flags"));
        let mut other = run.clone();
        other.host = HostId(1);
        assert!(decode(&other).unwrap_err().contains("another host"));
        let mut b = PageRunBuilder::new(HostId::of(HOST), 4);
        let (_, st) = &pages[0];
        b.push(PageId(1), st, b"http://a.ex");
        let err = decode(&b.finish()).unwrap_err();
        assert!(err.contains("not inside it"), "{err}");
        let mut longer = run.clone();
        longer.bytes.push(0);
        assert!(decode(&longer)
            .unwrap_err()
            .contains("past a run's last page"));
    }

    #[test]
    fn varints_round_trip() {
        for x in [0, 1, 127, 128, 300, u32::MAX as u64, u64::MAX - 1, u64::MAX] {
            let mut out = Vec::new();
            put(&mut out, x);
            assert_eq!(get(&mut &out[..]).unwrap(), x);
        }
        for x in [0, -1, 1, i64::MIN, i64::MAX, -1_000_000] {
            assert_eq!(unzigzag(zigzag(x)), x);
        }
        // Eleven bytes, or a tenth byte past bit 63, is not a u64.
        assert!(get(&mut &[0xff; 11][..]).is_err());
        assert!(
            get(&mut &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02][..]).is_err()
        );
    }
}
