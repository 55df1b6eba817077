//! loom models of the allocator's lock-free and try-lock parts, run on the
//! crate's own types (built with loom's atomics under `--cfg loom`):
//!
//! - the pageblock word ([`PageblockTable`]): freetype, skip bit and zone
//!   packed in one `AtomicU32`, each writer changing its part with
//!   `fetch_update`, readers loading the whole word without a lock;
//! - the spinlock behind [`Shared`] (the zone and pcp locks): mutual
//!   exclusion, the release/acquire hand-over of the protected data, the
//!   contended flag, and the try-lock fallback of the free and allocation
//!   fast paths (a busy pcp lock sends the request to the zone lock).
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p pageframe --release --test loom_sync`
//! (`LOOM_MAX_PREEMPTIONS` bounds the search). Without `--cfg loom` this file
//! is empty.
#![cfg(loom)]

use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;

use pageframe::pageblock::PageblockTable;
use pageframe::sync::atomic::{AtomicUsize, Ordering};
use pageframe::sync::{LockFamily, Shared, SpinLock};
use pageframe::{FreeType, FreeTypeFlags, MigrateType};
use pageframe::{Order, Pfn, ZoneIdx};

/// Four pageblocks of order 2: PFNs 0..16.
fn small_table() -> PageblockTable {
    PageblockTable::new(Pfn(15), Order(2))
}

fn unmapped_unmovable() -> FreeType {
    FreeType {
        migratetype: MigrateType::Unmovable,
        flags: FreeTypeFlags::UNMAPPED,
    }
}

/// A freetype change and a zone change of one block (two changes from the
/// second writer), racing: none undoes another, and a lockless reader only ever sees each
/// field old or new, never a mix of bits.
#[test]
fn pageblock_word_updates_never_undo_each_other() {
    loom::model(|| {
        let table = Arc::new(small_table());
        table.set_zone(Pfn(4), ZoneIdx(0));
        let writer_freetype = {
            let table = Arc::clone(&table);
            thread::spawn(move || table.set_freetype(Pfn(5), unmapped_unmovable()))
        };
        let writer_zone = {
            let table = Arc::clone(&table);
            thread::spawn(move || {
                table.set_zone(Pfn(6), ZoneIdx(2));
                table.set_zone(Pfn(7), ZoneIdx(1));
            })
        };
        // The lockless reader (the free path's get_pfnblock_migratetype()).
        let seen = table.lookup(Pfn(4)).expect("the block is in a zone");
        assert!([ZoneIdx(0), ZoneIdx(1), ZoneIdx(2)].contains(&seen.zone));
        assert!(
            seen.freetype == FreeType::plain(MigrateType::Movable)
                || seen.freetype == unmapped_unmovable()
        );
        writer_freetype.join().unwrap();
        writer_zone.join().unwrap();
        let block = table.lookup(Pfn(4)).expect("the block is in a zone");
        assert_eq!(block.zone, ZoneIdx(1));
        assert_eq!(block.freetype, unmapped_unmovable());
        // The neighbours were not touched.
        assert_eq!(table.zone(Pfn(0)), None);
        assert_eq!(table.zone(Pfn(8)), None);
    });
}

/// Two blocks' words are independent: racing zone moves (memory hotplug
/// onlining two blocks into different zones) land on the right block.
#[test]
fn pageblock_words_of_different_blocks_are_independent() {
    loom::model(|| {
        let table = Arc::new(small_table());
        let other = {
            let table = Arc::clone(&table);
            thread::spawn(move || {
                table.set_zone(Pfn(0), ZoneIdx(2));
                table.clear_zone(Pfn(0));
                table.set_zone(Pfn(0), ZoneIdx(0));
            })
        };
        table.set_zone(Pfn(12), ZoneIdx(1));
        table.set_freetype(Pfn(12), FreeType::plain(MigrateType::Reclaimable));
        other.join().unwrap();
        assert_eq!(table.zone(Pfn(0)), Some(ZoneIdx(0)));
        assert_eq!(table.zone(Pfn(12)), Some(ZoneIdx(1)));
        assert_eq!(table.migratetype(Pfn(12)), MigrateType::Reclaimable);
        assert_eq!(table.migratetype(Pfn(0)), MigrateType::Movable);
    });
}

/// A counter that loom checks for data races: every access must happen
/// after the previous one in the happens-before order, which only the
/// lock's acquire/release pairing gives.
struct Tracked(UnsafeCell<u32>);

impl Tracked {
    fn bump(&self) {
        self.0.with_mut(|value| {
            // SAFETY: called only while holding the lock around `self`;
            // loom reports a data race if the lock fails to order the accesses.
            unsafe { *value += 1 }
        });
    }

    fn get(&self) -> u32 {
        // SAFETY: called only while holding the lock around `self`.
        self.0.with(|value| unsafe { *value })
    }
}

/// Two threads taking the spinlock: never both inside, every write seen by
/// the next holder, and at most one of them reports contention.
#[test]
fn spinlock_excludes_hands_over_and_flags_contention() {
    loom::model(|| {
        let lock = Arc::new(SpinLock::new(Tracked(UnsafeCell::new(0))));
        let inside = Arc::new(AtomicUsize::new(0));
        let contended = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let (lock, inside, contended) = (
                    Arc::clone(&lock),
                    Arc::clone(&inside),
                    Arc::clone(&contended),
                );
                thread::spawn(move || {
                    let (guard, was_contended) = Shared::lock(&lock);
                    assert_eq!(inside.fetch_add(1, Ordering::Relaxed), 0);
                    guard.bump();
                    assert_eq!(inside.fetch_sub(1, Ordering::Relaxed), 1);
                    if was_contended {
                        contended.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(lock.lock().0.get(), 2);
        assert!(contended.load(Ordering::Relaxed) <= 1);
        assert!(lock.try_lock().is_some());
    });
}

/// The try-lock fallback of free_unref_page() and rmqueue_pcplist(): each
/// thread frees a page to the pcp list when `Shared::try_lock` gets the pcp
/// lock, and to the zone when it does not. The other thread drains the pcp
/// list (pcp lock, then zone lock, the crate's lock order) and so forces the
/// fallback in some interleavings. Every page ends up in exactly one list.
#[test]
fn busy_pcp_lock_sends_frees_to_the_zone() {
    loom::model(|| {
        let pcp = Arc::new(SpinLock::new(Vec::<u32>::new()));
        let zone = Arc::new(SpinLock::new(Vec::<u32>::new()));
        let freer = |pfn: u32| {
            let (pcp, zone) = (Arc::clone(&pcp), Arc::clone(&zone));
            thread::spawn(move || match Shared::try_lock(&pcp) {
                Some(mut list) => list.push(pfn),
                None => Shared::lock(&zone).0.push(pfn),
            })
        };
        let first = freer(1);
        // The drain: takes the pcp lock, then the zone lock, and moves the
        // pcp list to the zone (free_pcppages_bulk()).
        {
            let (mut list, _) = Shared::lock(&pcp);
            let (mut buddy, _) = Shared::lock(&zone);
            buddy.append(&mut list);
        }
        Shared::lock(&pcp).0.push(2);
        first.join().unwrap();
        let mut all: Vec<u32> = pcp.lock().0.to_vec();
        all.extend(zone.lock().0.iter());
        all.sort_unstable();
        assert_eq!(all, vec![1, 2]);
    });
}
