//! The ledger's URLs, stored end to end in large chunks (and, while a link
//! table is read, its distinct raw strings: `ingest::UrlCache`).
//!
//! The ledger keeps the URL of every page it ever knew (1.9M on bench snapshot
//! 9 with 1 worker, 108 MiB of text). As one boxed `str` each, every URL was
//! an allocation of its own: rounded up to the allocator's size class, 16
//! bytes of pointer and length in the page's state, and, in a run over many
//! snapshots, scattered among the short-lived blocks of the snapshot that
//! first named the page, so that the allocator's pages stayed partly used
//! after those were freed. Here URLs are appended to chunks of up to a MiB,
//! and a page's state holds a [`UrlRef`] of 16 bytes. The ledger never
//! forgets a page, so the arena never frees a URL.

use crate::ingest::UrlText;

/// The largest chunk the arena allocates for URLs that fit one; the first
/// chunks are smaller, so a worker with few pages holds little.
const MAX_CHUNK: usize = 1 << 20;
const MIN_CHUNK: usize = 1 << 12;

/// Where a URL sits in a [`UrlArena`], and where its site's name sits inside
/// it (as [`crate::ingest::UrlText`] marks it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UrlRef {
    /// The chunk's number in the high 32 bits, the offset in it in the low.
    at: u64,
    len: u32,
    /// The site's name, as byte offsets into the URL: 16 bits each, which
    /// ingest guarantees (`ingest::url` refuses a host ending past byte 65,535).
    host_start: u16,
    host_end: u16,
}

impl UrlRef {
    /// The site name's byte range inside the URL.
    pub fn host_range(&self) -> (u32, u32) {
        (u32::from(self.host_start), u32::from(self.host_end))
    }
}

/// URLs appended end to end; see the module docs. A chunk's unused tail is
/// shorter than the URL that did not fit it, at most a quarter of the largest
/// chunk; longer URLs get a chunk each.
#[derive(Default)]
pub struct UrlArena {
    /// Each chunk is allocated at its final capacity and never grows, so a
    /// [`UrlRef`] stays valid.
    chunks: Vec<Vec<u8>>,
    /// The chunk that URLs are appended to.
    filling: Option<usize>,
}

impl UrlArena {
    /// Stores `url`, whose site's name is `url[host_start..host_end]`.
    ///
    /// # Panics
    /// When the site's name ends past byte 65,535 of the URL: ingest refuses
    /// such URLs before they reach the ledger.
    pub fn push(&mut self, url: &str, host_start: u32, host_end: u32) -> UrlRef {
        let narrow = |x: u32| u16::try_from(x).expect("ingest refuses hosts ending past 65,535");
        let (host_start, host_end) = (narrow(host_start), narrow(host_end));
        let bytes = url.as_bytes();
        let chunk_no = if bytes.len() > MAX_CHUNK / 4 {
            // A chunk of its own size, beside the one being filled, whose
            // room is kept for the URLs to come.
            self.chunks.push(Vec::with_capacity(bytes.len()));
            self.chunks.len() - 1
        } else {
            let fits = self
                .filling
                .is_some_and(|c| self.chunks[c].capacity() - self.chunks[c].len() >= bytes.len());
            if !fits {
                // Chunks double up to the largest size.
                let next = self.filling.map_or(MIN_CHUNK, |c| {
                    (self.chunks[c].capacity() * 2).min(MAX_CHUNK)
                });
                let mut chunk = Vec::with_capacity(next);
                // Chunks fill up one after another: map a large one whole
                // now rather than a fault a page as URLs arrive.
                crate::memory::prefault_spare(&mut chunk, next);
                self.chunks.push(chunk);
                self.filling = Some(self.chunks.len() - 1);
            }
            self.filling.expect("a chunk is being filled")
        };
        let chunk = &mut self.chunks[chunk_no];
        let offset = chunk.len();
        chunk.extend_from_slice(bytes);
        UrlRef {
            at: (chunk_no as u64) << 32 | offset as u64,
            len: u32::try_from(bytes.len()).expect("a chunk is shorter than 4 GiB"),
            host_start,
            host_end,
        }
    }

    /// The URL's bytes.
    pub fn bytes(&self, r: &UrlRef) -> &[u8] {
        let offset = (r.at & u64::from(u32::MAX)) as usize;
        &self.chunks[(r.at >> 32) as usize][offset..offset + r.len as usize]
    }

    /// Asks the processor to bring the URL's first and last bytes into the
    /// cache (see [`crate::prefetch::prefetch`]): a URL is rarely longer
    /// than two cache lines.
    #[inline]
    pub fn prefetch(&self, r: &UrlRef) {
        let offset = (r.at & u64::from(u32::MAX)) as usize;
        let chunk = &self.chunks[(r.at >> 32) as usize];
        if let Some(b) = chunk.get(offset) {
            crate::prefetch::prefetch(b);
        }
        if let Some(b) = chunk.get(offset + (r.len as usize).saturating_sub(1)) {
            crate::prefetch::prefetch(b);
        }
    }

    /// The URL.
    pub fn get(&self, r: &UrlRef) -> &str {
        // Checked, although only whole `str`s go in: a `UrlRef` is a plain
        // value, and one from another arena must not make a `str` of
        // arbitrary bytes. URLs are short ASCII; the check costs little.
        std::str::from_utf8(self.bytes(r)).expect("a UrlRef names a URL of this arena")
    }

    /// The URL as records carry it, copied out.
    pub fn text(&self, r: &UrlRef) -> UrlText {
        let (host_start, host_end) = r.host_range();
        UrlText {
            url: self.get(r).into(),
            host_start,
            host_end,
        }
    }

    /// The bytes the arena holds (its chunks' capacity).
    pub fn heap_bytes(&self) -> usize {
        self.chunks.iter().map(Vec::capacity).sum::<usize>()
            + self.chunks.capacity() * std::mem::size_of::<Vec<u8>>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every URL reads back as stored, across chunk boundaries, with a URL
    /// longer than the largest chunk, and the references stay valid as the
    /// arena grows.
    #[test]
    fn urls_read_back_across_chunks() {
        let mut arena = UrlArena::default();
        let mut stored = Vec::new();
        for i in 0..20_000 {
            let url = format!("http://h{}.example/{}", i % 7, "p".repeat(i % 300));
            let host_end = 7 + format!("h{}.example", i % 7).len() as u32;
            stored.push((arena.push(&url, 7, host_end), url, host_end));
        }
        let long = format!("http://long.example/{}", "x".repeat(3 * MAX_CHUNK));
        stored.push((arena.push(&long, 7, 19), long, 19));
        stored.push((arena.push("http://a.b/", 7, 10), "http://a.b/".into(), 10));
        assert!(arena.chunks.len() > 3);
        assert!(arena.chunks.iter().all(|c| c.len() <= c.capacity()));
        for (r, url, host_end) in &stored {
            assert_eq!(arena.get(r), url);
            assert_eq!(r.host_range(), (7, *host_end));
        }
        // Chunks are filled before a new one starts: the text is stored with
        // little slack (each chunk's unused tail is shorter than a URL).
        let text: usize = stored.iter().map(|(_, u, _)| u.len()).sum();
        assert!(arena.heap_bytes() < text + text / 8 + MAX_CHUNK);
    }

    #[test]
    #[should_panic(expected = "ingest refuses hosts ending past 65,535")]
    fn refuses_a_host_past_16_bits() {
        UrlArena::default().push(&"a".repeat(70_000), 0, 70_000);
    }
}
