//! The sizes a block trace records, known before a live recording starts.
//!
//! A write record carries the page's compressed size with each of the
//! trace codecs (lz4, lzo, zstd): three compressions on top of the one the
//! served zram stores. Made in the write path, they slowed the served
//! device's writeback of an untar to a fifth of a real zram's (61–78 MB/s
//! against 320–376 MB/s, block_bio_queue timestamps of one run), so that
//! jbd2's five-second commits fell inside the `sync` and wrote journal
//! blocks among the data, which a real zram, done within one commit
//! interval, does not see. This table holds the sizes of every page of the
//! corpus, computed on the threads it is given (up to 16) before the
//! recording, keyed by the xxh3
//! 128-bit hash of the page's bytes; the write path hashes the page and
//! looks it up. A page that is not in it (ext4's metadata, the journal) is
//! compressed there as before.
//!
//! Invariant: every entry is `block_trace::sizes_of` of a page whose hash
//! is its key. Two different pages with one 128-bit hash would share an
//! entry; among the few million pages of a corpus that chance is below
//! 2^-80, and it would change one record's sizes, not the stream.

use super::block_trace::sizes_of;
use crate::corpus::{self, Corpus, Sampling};
use pageframe::zram::ZramError;
use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use xxhash_rust::xxh3::xxh3_128;

/// A write record's sizes: `None` for a same-filled page.
type Sizes = Option<[u32; 3]>;

/// Trace sizes of known pages, and how often the write path found a page.
pub struct TraceSizes {
    by_hash: HashMap<u128, Sizes>,
    found: AtomicU64,
    computed: AtomicU64,
}

impl TraceSizes {
    /// The sizes of every page of every regular file of a .tar.xz (a
    /// file's last page zero-padded, as the page cache writes it back);
    /// the error names the file.
    pub fn of_tarball(path: &Path, threads: NonZeroUsize) -> Result<TraceSizes, String> {
        let corpus = corpus::from_tar_xz(path, Sampling { one_in: 1 }, |_| {})
            .map_err(|err| format!("{}: {err}", path.display()))?;
        TraceSizes::of_corpus(&corpus, threads).map_err(|err| err.to_string())
    }

    /// The sizes of every page of `corpus`.
    pub fn of_corpus(corpus: &Corpus, threads: NonZeroUsize) -> Result<TraceSizes, ZramError> {
        TraceSizes::of_pages(&corpus.pages, corpus.page_size, threads)
    }

    /// The sizes of every `page_size` page of `pages`, computed on up to
    /// `threads` threads (at most 16). A trailing part shorter than a page
    /// is left out.
    pub fn of_pages(
        pages: &[u8],
        page_size: usize,
        threads: NonZeroUsize,
    ) -> Result<TraceSizes, ZramError> {
        let page_size = page_size.max(1);
        let nr_pages = pages.len() / page_size;
        let threads = threads.get().min(16);
        let per_thread = nr_pages.div_ceil(threads).max(1);
        let parts: Vec<Result<Vec<(u128, Sizes)>, ZramError>> = std::thread::scope(|scope| {
            let workers: Vec<_> = pages[..nr_pages * page_size]
                .chunks(per_thread * page_size)
                .map(|part| {
                    scope.spawn(move || {
                        part.chunks_exact(page_size)
                            .map(|page| Ok((xxh3_128(page), sizes_of(page)?)))
                            .collect()
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|worker| {
                    worker.join().unwrap_or_else(|_| {
                        Err(ZramError::Codec("a trace-size thread panicked".into()))
                    })
                })
                .collect()
        });
        let mut by_hash = HashMap::with_capacity(nr_pages);
        for part in parts {
            by_hash.extend(part?);
        }
        Ok(TraceSizes {
            by_hash,
            found: AtomicU64::new(0),
            computed: AtomicU64::new(0),
        })
    }

    /// The sizes a write record of `page` carries: from the table when the
    /// page is in it, else compressed now.
    pub fn sizes(&self, page: &[u8]) -> Result<Sizes, ZramError> {
        if let Some(sizes) = self.by_hash.get(&xxh3_128(page)) {
            self.found.fetch_add(1, Ordering::Relaxed);
            return Ok(*sizes);
        }
        self.computed.fetch_add(1, Ordering::Relaxed);
        sizes_of(page)
    }

    /// Distinct pages in the table.
    pub fn len(&self) -> usize {
        self.by_hash.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.by_hash.is_empty()
    }

    /// Page writes whose sizes came from the table, and those compressed
    /// in the write path.
    pub fn found_and_computed(&self) -> (u64, u64) {
        (
            self.found.load(Ordering::Relaxed),
            self.computed.load(Ordering::Relaxed),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: usize = 4096;

    fn page_of(seed: u8, text_bytes: usize) -> Vec<u8> {
        let mut page = vec![0u8; PAGE];
        for (at, byte) in page.iter_mut().take(text_bytes).enumerate() {
            *byte = b'a' + ((at * 7 + usize::from(seed) * 13) % 26) as u8;
        }
        page
    }

    /// A page of the table gives exactly what compressing it gives, and so
    /// does one that is not in it (computed then); the counts say which.
    #[test]
    fn a_lookup_gives_the_sizes_compression_gives() {
        let known: Vec<Vec<u8>> = (0..5)
            .map(|seed| page_of(seed, 1000 + 600 * seed as usize))
            .collect();
        let same = vec![7u8; PAGE];
        let mut pages: Vec<u8> = known.concat();
        pages.extend_from_slice(&same);
        pages.extend_from_slice(&known[0]);
        pages.extend_from_slice(&[1, 2, 3]);
        let table =
            TraceSizes::of_pages(&pages, PAGE, NonZeroUsize::new(3).expect("3")).expect("table");
        assert_eq!(
            table.len(),
            6,
            "duplicates share an entry; the short tail is left out"
        );
        for page in known.iter().chain([&same]) {
            assert_eq!(
                table.sizes(page).expect("sizes"),
                sizes_of(page).expect("sizes")
            );
        }
        assert_eq!(table.sizes(&same).expect("sizes"), None);
        let unknown = page_of(9, 3000);
        assert_eq!(
            table.sizes(&unknown).expect("sizes"),
            sizes_of(&unknown).expect("sizes")
        );
        assert_eq!(table.found_and_computed(), (7, 1));
    }

    #[test]
    fn no_pages_make_an_empty_table() {
        let table = TraceSizes::of_pages(&[], PAGE, NonZeroUsize::MIN).expect("table");
        assert!(table.is_empty());
    }
}
