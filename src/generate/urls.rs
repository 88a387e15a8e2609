//! Append-only URL storage that writer threads read while the simulation appends.
//!
//! Page `i`'s URL is the `i`-th string pushed. Strings live in large chunks rather than
//! one allocation per page; [`UrlStore::view`] seals the open chunk and hands out
//! shared, immutable chunks, so a snapshot can be written on another thread while the
//! simulation goes on adding pages to a new chunk.

use std::sync::Arc;

/// Consecutive URLs: page `first + j` is `text[ends[j-1]..ends[j]]`.
struct Chunk {
    first: u32,
    text: String,
    ends: Vec<u32>,
}

impl Chunk {
    fn new(first: u32) -> Chunk {
        Chunk {
            first,
            text: String::new(),
            ends: Vec::new(),
        }
    }

    fn get(&self, page: u32) -> &str {
        let j = (page - self.first) as usize;
        let start = if j == 0 { 0 } else { self.ends[j - 1] as usize };
        &self.text[start..self.ends[j] as usize]
    }

    fn end(&self) -> u32 {
        self.first + self.ends.len() as u32
    }
}

/// The growing store, owned by the simulation.
pub(crate) struct UrlStore {
    sealed: Vec<Arc<Chunk>>,
    open: Chunk,
}

/// A frozen, cheaply cloned view of the URLs of every page made so far.
#[derive(Clone)]
pub(crate) struct UrlView {
    chunks: Vec<Arc<Chunk>>,
}

impl UrlStore {
    pub(crate) fn new() -> UrlStore {
        UrlStore {
            sealed: Vec::new(),
            open: Chunk::new(0),
        }
    }

    /// Appends the URL that `write` appends to the given string; returns the page index
    /// and the new URL.
    pub(crate) fn push(&mut self, write: impl FnOnce(&mut String)) -> (u32, &str) {
        let page = self.open.end();
        write(&mut self.open.text);
        let end = u32::try_from(self.open.text.len()).expect("a URL chunk exceeds 4 GiB");
        self.open.ends.push(end);
        (page, self.open.get(page))
    }

    /// Seals the open chunk and returns a view of all URLs so far.
    pub(crate) fn view(&mut self) -> UrlView {
        if !self.open.ends.is_empty() {
            let next = Chunk::new(self.open.end());
            self.sealed
                .push(Arc::new(std::mem::replace(&mut self.open, next)));
        }
        UrlView {
            chunks: self.sealed.clone(),
        }
    }
}

impl UrlView {
    /// The URL of `page`.
    ///
    /// # Panics
    /// If `page` was pushed after this view was taken.
    pub(crate) fn get(&self, page: u32) -> &str {
        let k = self.chunks.partition_point(|c| c.first <= page) - 1;
        self.chunks[k].get(page)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_survive_later_pushes() {
        let mut store = UrlStore::new();
        store.push(|s| s.push_str("http://a.com/"));
        store.push(|s| s.push_str("http://a.com/x"));
        let first = store.view();
        let (page, url) = store.push(|s| s.push_str("http://b.com/"));
        assert_eq!((page, url), (2, "http://b.com/"));
        let second = store.view();
        assert_eq!(first.get(1), "http://a.com/x");
        assert_eq!(second.get(0), "http://a.com/");
        assert_eq!(second.get(2), "http://b.com/");
    }
}
