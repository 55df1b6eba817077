//! The allocator over real memory (a memfd arena): page contents survive
//! until freed, `__GFP_ZERO` zeroes, unmapped pages are reached only through
//! the mermap (window mappings or file I/O), nothing written to an unmapped
//! page leaks into the mapped pool, and threads on two CPUs allocate, write,
//! verify and free at once.

use std::sync::Arc;

use pageframe::backing::{MermapAccess, MermapConfig};
use pageframe::policies::SecretRegion;
use pageframe::{
    AccessError, AllocOptions, ArenaOptions, CpuId, Gfp, LocalPageAllocator, MachineDesc, NodeId,
    Order, Page, PageAllocator, SharedPageAllocator,
};

const MIB: u64 = 1 << 20;
const PAGE: usize = 4096;
const UNMAPPED_ZERO: Gfp = Gfp::KERNEL.union(Gfp::UNMAPPED).union(Gfp::ZERO);

fn arena<L: pageframe::LockFamily>(mem_mib: u64, cpus: usize) -> PageAllocator<L> {
    arena_with(mem_mib, cpus, MermapAccess::Window)
}

fn arena_with<L: pageframe::LockFamily>(
    mem_mib: u64,
    cpus: usize,
    access: MermapAccess,
) -> PageAllocator<L> {
    let desc = MachineDesc::uniform(mem_mib * MIB, 1, cpus).unwrap();
    let options = ArenaOptions {
        mermap: MermapConfig {
            access,
            ..MermapConfig::default()
        },
        ..ArenaOptions::default()
    };
    let allocator = PageAllocator::boot_arena(&desc, AllocOptions::KERNEL, 7, options).unwrap();
    allocator.check_invariants().unwrap();
    allocator
}

fn pattern(seed: u8) -> Vec<u8> {
    (0..PAGE)
        .map(|at| (at as u8).wrapping_mul(31) ^ seed)
        .collect()
}

#[test]
fn mapped_page_contents_survive_until_freed_and_zero_zeroes() {
    let allocator: LocalPageAllocator = arena(16, 1);
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let page = cpu.alloc_pages(Gfp::KERNEL, Order(1), NodeId(0)).unwrap();
    let data = [pattern(1), pattern(2)].concat();
    cpu.write_page(page, 0, &data).unwrap();
    let mut back = vec![0; 2 * PAGE];
    cpu.read_page(page, 0, &mut back).unwrap();
    assert_eq!(back, data);
    assert!(matches!(
        cpu.write_page(page, 2 * PAGE - 1, b"xy"),
        Err(AccessError::OutOfBounds { .. })
    ));
    cpu.free_pages(page, Order(1)).unwrap();
    assert!(matches!(
        cpu.read_page(page, 0, &mut back),
        Err(AccessError::NotAllocated(_))
    ));
    let zeroed = cpu
        .alloc_pages(Gfp::KERNEL | Gfp::ZERO, Order(1), NodeId(0))
        .unwrap();
    assert_eq!(zeroed, page, "the hot pcp block comes back");
    cpu.read_page(zeroed, 0, &mut back).unwrap();
    assert!(back.iter().all(|&byte| byte == 0));
    allocator.check_invariants().unwrap();
}

#[test]
fn unmapped_pages_are_reached_only_through_the_mermap() {
    for access in [MermapAccess::Window, MermapAccess::FileIo] {
        let allocator: LocalPageAllocator = arena_with(16, 1, access);
        let cpu = allocator.cpu(CpuId(0)).unwrap();
        // Dirty an unmapped page, free it, and take it back zeroed: both
        // the write and the zeroing go through the mermap.
        let dirty = cpu
            .alloc_pages(Gfp::KERNEL | Gfp::UNMAPPED, Order(0), NodeId(0))
            .unwrap();
        cpu.write_unmapped(dirty, 0, &pattern(9)).unwrap();
        cpu.free_pages(dirty, Order(0)).unwrap();
        let page = cpu.alloc_pages(UNMAPPED_ZERO, Order(0), NodeId(0)).unwrap();
        assert_eq!(page, dirty, "the hot pcp page comes back");
        assert!(!allocator.backing().is_direct_mapped(page.pfn()));
        let mut back = vec![0xff; PAGE];
        cpu.read_unmapped(page, 0, &mut back).unwrap();
        assert!(
            back.iter().all(|&byte| byte == 0),
            "__GFP_ZERO via mermap, {access:?}"
        );
        assert_eq!(
            cpu.write_page(page, 0, b"secret"),
            Err(AccessError::NotMapped(page.pfn()))
        );
        cpu.write_unmapped(page, 100, b"secret").unwrap();
        let mut word = [0; 6];
        cpu.read_unmapped(page, 100, &mut word).unwrap();
        assert_eq!(&word, b"secret", "{access:?}");
        cpu.free_pages(page, Order(0)).unwrap();
        allocator.check_invariants().unwrap();
    }
}

#[test]
fn secrets_never_leak_into_the_mapped_pool() {
    let allocator: LocalPageAllocator = arena(8, 1);
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let secret = b"TOP-SECRET-KEY-MATERIAL";
    let region = SecretRegion::alloc(&cpu, 512, NodeId(0)).unwrap();
    for index in 0..region.len() {
        region.write(&cpu, index * PAGE + 64, secret).unwrap();
    }
    let mut back = [0; 23];
    region.read(&cpu, 511 * PAGE + 64, &mut back).unwrap();
    assert_eq!(&back, secret);
    // Leave the secret in the pages on purpose: free them without
    // SecretRegion's clearing, as a careless unmapped user would.
    for &page in region.pages() {
        cpu.free_pages(page, Order(0)).unwrap();
    }
    allocator.drain_all_pages();
    // Take every mapped page there is: the allocator has to map the
    // unmapped blocks back, zeroing them first.
    let mut taken: Vec<Page> = Vec::new();
    while let Ok(page) = cpu.alloc_pages(Gfp::KERNEL, Order(0), NodeId(0)) {
        taken.push(page);
    }
    assert_eq!(allocator.nr_unmapped_pageblocks(), 0);
    let mut bytes = vec![0; PAGE];
    for &page in &taken {
        cpu.read_page(page, 0, &mut bytes).unwrap();
        assert!(
            !bytes.windows(secret.len()).any(|window| window == secret),
            "secret found in mapped page {page:?}"
        );
    }
    allocator.check_invariants().unwrap();
}

#[test]
fn two_threads_allocate_write_verify_and_free_at_once() {
    let allocator: Arc<SharedPageAllocator> = Arc::new(arena(64, 2));
    let threads: Vec<_> = (0..2u16)
        .map(|cpu| {
            let handle = allocator.register_cpu_arc(CpuId(cpu)).unwrap();
            std::thread::spawn(move || {
                for round in 0..400u32 {
                    let gfp = if round % 2 == 0 {
                        Gfp::KERNEL
                    } else {
                        UNMAPPED_ZERO
                    };
                    let pages: Vec<Page> = (0..8)
                        .map(|_| handle.alloc_pages(gfp, Order(0), NodeId(0)).unwrap())
                        .collect();
                    for (index, &page) in pages.iter().enumerate() {
                        let data = pattern((u32::from(cpu) * 64 + round + index as u32) as u8);
                        handle.write_unmapped(page, 0, &data).unwrap();
                    }
                    for (index, &page) in pages.iter().enumerate() {
                        let data = pattern((u32::from(cpu) * 64 + round + index as u32) as u8);
                        let mut back = vec![0; PAGE];
                        if gfp == Gfp::KERNEL {
                            handle.read_page(page, 0, &mut back).unwrap();
                        } else {
                            handle.read_unmapped(page, 0, &mut back).unwrap();
                        }
                        assert_eq!(back, data);
                    }
                    handle.free_pages_bulk(&pages).unwrap();
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    allocator.check_invariants().unwrap();
    assert!(allocator.nr_unmapped_pageblocks() >= 1);
}

#[test]
fn an_arena_too_large_is_an_error_not_a_panic() {
    let desc = MachineDesc::uniform(1 << 50, 1, 1).unwrap();
    let result =
        LocalPageAllocator::boot_arena(&desc, AllocOptions::KERNEL, 0, ArenaOptions::default());
    assert!(result.is_err());
}
