//! The zone and migratetype of every pageblock at boot. mirrors memmap_init(),
//! memmap_init_zone_range(), memmap_init_range() and init_unavailable_range()
//! of mm/mm_init.c.
//!
//! ```text
//!  section (valid: it holds memory)          section (no memory: no memmap)
//!  |<--------------------------------------->|<------------------------>|
//!  | range (zone A) |  hole  | range (zone B) | hole to the section's end |
//!  | Movable blocks |  B's   | Movable blocks |  (past every zone's span) |
//! ```
//!
//! Rules, as the kernel applies them:
//! - a pageblock belongs to the zone of its present pages; a pageblock of a
//!   hole in a valid memory section (one holding any present page) belongs
//!   to the zone of the next range above it (init_unavailable_range());
//!   pageblocks of sections without memory have no zone and no view counts
//!   them (pfn_to_online_page()); nor does any count the hole after the
//!   last range, which the kernel gives the last zone but which lies past
//!   every zone's span;
//! - a pageblock is MIGRATE_MOVABLE when its first page is present (reserved
//!   pages included: memmap_init_range() sets the type at each
//!   pageblock-aligned PFN of a memory range), else it keeps the zeroed
//!   bitmap's MIGRATE_UNMOVABLE.
//!
//! Invariant after the call: every pageblock with a present page has that
//! page's zone (pageframe keeps one zone per pageblock; the layout refuses
//! two nodes in one pageblock and zone boundaries are pageblock-aligned).

use crate::frames::Frames;
use crate::freetype::{FreeType, MigrateType};
use crate::machine::MachineLayout;
use crate::types::{Pfn, ZoneIdx};

/// x86-64's `SECTION_SIZE_BITS`: memory sections of 128 MiB, the unit the
/// memmap exists in (SPARSEMEM).
const SECTION_SIZE_BITS: u32 = 27;

/// Gives each pageblock of the machine its zone and boot migratetype.
pub(super) fn init_pageblocks(layout: &MachineLayout, frames: &Frames) {
    let block = layout.pageblock_order.nr_pages();
    // A section is at least a MAX_PAGE_ORDER block (the kernel's build
    // requires it), whatever the page size.
    let section_shift = (SECTION_SIZE_BITS.saturating_sub(u32::from(layout.page_shift)))
        .max(u32::from(layout.max_order.0));
    let section = 1u64 << section_shift;
    // Every present range with its zone, in PFN order.
    let mut ranges: Vec<(u64, u64, ZoneIdx)> = layout
        .zones()
        .enumerate()
        .flat_map(|(index, zone)| {
            let zone_index = ZoneIdx(index as u16);
            zone.present
                .iter()
                .map(move |range| (range.start.0, range.end.0, zone_index))
        })
        .collect();
    ranges.sort_unstable_by_key(|&(start, _, _)| start);
    let present = |pfn: u64| {
        let above = ranges.partition_point(|&(start, _, _)| start <= pfn);
        above > 0 && pfn < ranges[above - 1].1
    };
    let mut memory_end = None;
    for &(start, end, zone) in &ranges {
        if let Some(hole_start) = memory_end {
            init_hole(frames, hole_start, start, zone, block, section);
        } else {
            // Before the first range only its own section has a memmap.
            init_hole(frames, start - start % section, start, zone, block, section);
        }
        let mut pfn = start - start % block;
        while pfn < end {
            frames.blocks.set_zone(Pfn(pfn), zone);
            let migratetype = if present(pfn) {
                MigrateType::Movable
            } else {
                MigrateType::Unmovable
            };
            frames
                .blocks
                .set_freetype(Pfn(pfn), FreeType::plain(migratetype));
            pfn += block;
        }
        memory_end = Some(end);
    }
    // The hole after the last range lies past every zone's span, so no view
    // counts its pageblocks: the tables end with the memory's last
    // pageblock (Frames::new), not with its section.
}

/// The pageblocks wholly inside the hole `[from, to)` that lie in a valid
/// section join `zone`, MIGRATE_UNMOVABLE. A hole holds no memory, so the
/// only valid sections it reaches are those of the memory beside it: the
/// section holding `from - 1` and the one holding `to`. mirrors
/// init_unavailable_range().
fn init_hole(frames: &Frames, from: u64, to: u64, zone: ZoneIdx, block: u64, section: u64) {
    // Partial pageblocks at the hole's ends belong to their ranges.
    let first = from.next_multiple_of(block);
    let last = to - to % block;
    if first >= last {
        return;
    }
    let low_end = from.next_multiple_of(section).min(last);
    let high_start = (to - to % section).max(low_end).max(first);
    for part in [first..low_end, high_start..last] {
        for pfn in part.step_by(block as usize) {
            frames.blocks.set_zone(Pfn(pfn), zone);
            frames
                .blocks
                .set_freetype(Pfn(pfn), FreeType::plain(MigrateType::Unmovable));
        }
    }
}
