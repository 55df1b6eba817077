//! zsmalloc specifics: spanning objects and the read API, fullness groups,
//! huge classes, compaction counters and the `classes` view.

use pageframe::page_source::CpuPages;
use pageframe::zpool::zsmalloc::{zs_classes, ZsConfig, ZsPool, ZS_HANDLE_SIZE};
use pageframe::zpool::Zpool;
use pageframe::{CpuId, LocalPageAllocator, MachineDesc, ZpoolError};

fn machine() -> LocalPageAllocator {
    LocalPageAllocator::boot(&MachineDesc::uniform(64 << 20, 1, 2).unwrap()).unwrap()
}

fn pool(
    allocator: &LocalPageAllocator,
    chain_size: u32,
) -> ZsPool<CpuPages<&LocalPageAllocator, pageframe::Local>> {
    let config = ZsConfig {
        chain_size,
        ..ZsConfig::default()
    };
    ZsPool::new(CpuPages::new(allocator.cpu(CpuId(0)).unwrap()), config).unwrap()
}

/// A 1536-byte class (1528 + handle) packs 8 objects into 3 pages:
///
/// ```text
///  page 0: |obj0     |obj1     |obj2..       byte 0, 1536, 3072
///  page 1: ..obj2|obj3     |obj4     |obj5.. byte 512, 2048, 3584
///  page 2: ..obj5|obj6     |obj7     |       byte 1024, 2560, end 4096
/// ```
/// obj2 and obj5 span two pages: read_begin joins their halves; every
/// object is copied into the local buffer, as page contents are never
/// borrowed.
#[test]
fn spanning_objects_and_others_are_copied_whole() {
    let allocator = machine();
    let mut pool = pool(&allocator, 8);
    let len = 1536 - ZS_HANDLE_SIZE;
    let index = pool.class_table().size_class_index(len + ZS_HANDLE_SIZE);
    let geometry = pool.class_table().classes[pool.class_table().classes[index].merged_into];
    assert_eq!(
        (
            geometry.size,
            geometry.pages_per_zspage,
            geometry.objs_per_zspage
        ),
        (1536, 3, 8)
    );
    let handles: Vec<u64> = (0..8u8)
        .map(|id| {
            let handle = pool.zs_malloc(len).unwrap();
            pool.zs_obj_write(handle, &vec![id; len]).unwrap();
            handle
        })
        .collect();
    assert_eq!(pool.get_total_pages(), 3);
    let mut local = vec![0u8; 4096];
    for (id, handle) in handles.iter().enumerate() {
        let local_range = local.as_ptr_range();
        let view = pool.zs_obj_read_begin(*handle, &mut local).unwrap();
        assert_eq!(view.len(), len);
        assert!(view.iter().all(|byte| *byte == id as u8), "object {id}");
        // Page contents are only ever copied out of the backing: every
        // view, spanning or not, is in the local copy.
        let copied = local_range.contains(&view.as_ptr());
        assert!(copied, "object {id}: copied {copied}");
        let (first, last) = (id * 1536 / 4096, (id * 1536 + 1535) / 4096);
        assert_eq!(first != last, id == 2 || id == 5, "object {id} spans");
        pool.zs_obj_read_end(*handle).unwrap();
    }
    pool.check_invariants().unwrap();
}

#[test]
fn fullness_groups_track_usage_and_allocation_prefers_the_fullest() {
    let allocator = machine();
    let mut pool = pool(&allocator, 8);
    // 1016 + 8 = 1024: a power of two, one page, 4 objects.
    let handles: Vec<u64> = (0..8).map(|_| pool.zs_malloc(1016).unwrap()).collect();
    assert_eq!(pool.get_total_pages(), 2);
    // Free one of the first zspage and two of the second: 75 % and 50 %.
    pool.zs_free(handles[0]).unwrap();
    pool.zs_free(handles[4]).unwrap();
    pool.zs_free(handles[5]).unwrap();
    let view = zs_classes(&pool);
    let row = view
        .lines()
        .find(|line| line.split_whitespace().nth(1) == Some("1024"))
        .unwrap();
    let fields: Vec<&str> = row.split_whitespace().collect();
    // Columns: class size 10% .. 90% 99% 100% obj_allocated obj_used pages_used pages_per_zspage freeable.
    assert_eq!(
        fields[2 + 5],
        "1",
        "50 % lands in the 60 % column (ratio / 10 + 1)"
    );
    assert_eq!(fields[2 + 7], "1", "75 % lands in the 80 % column");
    assert_eq!(&fields[13..], ["8", "5", "2", "1", "0"]);
    // The next allocation goes to the fullest non-full zspage (the 75 % one).
    let handle = pool.zs_malloc(1016).unwrap();
    let view = zs_classes(&pool);
    let row = view
        .lines()
        .find(|line| line.split_whitespace().nth(1) == Some("1024"))
        .unwrap();
    let fields: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(fields[2 + 10], "1", "the fuller zspage is now full");
    assert_eq!(fields[2 + 5], "1");
    pool.zs_free(handle).unwrap();
    pool.check_invariants().unwrap();
}

#[test]
fn huge_objects_take_a_page_each_and_compaction_counts_pages() {
    let allocator = machine();
    let mut pool = pool(&allocator, 8);
    let huge = pool.huge_class_size();
    assert!(huge > 3000 && huge <= 4096, "huge_class_size {huge}");
    let handles: Vec<u64> = (0..10).map(|_| pool.zs_malloc(4096).unwrap()).collect();
    assert_eq!(pool.get_total_pages(), 10);
    pool.zs_obj_write(handles[3], &[7; 4096]).unwrap();
    let mut out = [0u8; 4096];
    pool.read(handles[3], &mut out).unwrap();
    assert!(out.iter().all(|byte| *byte == 7));
    for handle in handles {
        pool.zs_free(handle).unwrap();
    }
    assert_eq!(pool.get_total_pages(), 0);

    // Three 50 % zspages of a 3-page class compact into two.
    let len = 1536 - ZS_HANDLE_SIZE;
    let handles: Vec<u64> = (0..24).map(|_| pool.zs_malloc(len).unwrap()).collect();
    for (index, handle) in handles.iter().enumerate() {
        if index % 2 == 0 {
            pool.zs_free(*handle).unwrap();
        }
    }
    assert_eq!(pool.get_total_pages(), 9);
    assert_eq!(pool.zs_compact().unwrap(), 3);
    assert_eq!(pool.get_total_pages(), 6);
    assert_eq!(pool.pool_stats().pages_compacted, 3);
    pool.check_invariants().unwrap();
}

#[test]
fn classes_view_has_the_kernels_header_and_total() {
    let allocator = machine();
    let mut pool = pool(&allocator, 8);
    for size in [100, 1300, 1300, 4000] {
        pool.zs_malloc(size).unwrap();
    }
    let view = zs_classes(&pool);
    let lines: Vec<&str> = view.lines().collect();
    assert_eq!(
        lines[0],
        " class  size       10%       20%       30%       40%       50%       60%       70%       80%       90%       99%      100% obj_allocated   obj_used pages_used pages_per_zspage freeable"
    );
    let total = lines.last().unwrap();
    assert!(total.starts_with(" Total       "), "{total:?}");
    let fields: Vec<&str> = total.split_whitespace().collect();
    assert_eq!(
        fields[1..12]
            .iter()
            .map(|f| f.parse::<u64>().unwrap())
            .sum::<u64>(),
        3,
        "three zspages"
    );
    assert_eq!(fields[13], "4", "obj_used");
    assert_eq!(lines[lines.len() - 2], "");
}

#[test]
fn chain_size_is_configurable_and_checked() {
    let allocator = machine();
    for chain in [4, 8, 16] {
        let pool = pool(&allocator, chain);
        let table = pool.class_table();
        assert_eq!(table.classes.len(), 255);
        assert!(table
            .classes
            .iter()
            .all(|class| class.pages_per_zspage <= chain as usize));
    }
    let source = CpuPages::new(allocator.cpu(CpuId(0)).unwrap());
    let config = ZsConfig {
        chain_size: 3,
        ..ZsConfig::default()
    };
    assert!(matches!(
        ZsPool::new(source, config),
        Err(ZpoolError::Config(_))
    ));
    // The source document's 2064-byte class: 4 pages (7 objects, 11 % waste)
    // with the old chain of 4; chain 8 uses 8 pages for 15 objects.
    let chain4 = pool(&allocator, 4);
    let chain8 = pool(&allocator, 8);
    for (pool, expect) in [(&chain4, (4, 7)), (&chain8, (8, 15))] {
        let table = pool.class_table();
        let index = table.size_class_index(2064);
        let class = table.classes[table.classes[index].merged_into];
        assert_eq!((class.pages_per_zspage, class.objs_per_zspage), expect);
    }
}
