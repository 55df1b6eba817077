//! The aging workload: the first benchmark run on a fresh machine places
//! its heap exactly as the bare allocator does; later runs build their
//! heap from memory that reclaim and exits gave back, no longer in
//! address order; runs are deterministic per seed and conserve pages; the
//! options (a hot file, work over several CPUs) do what they say, and a
//! config that cannot run is EINVAL.

mod common;

use common::{assert_conserved, boot, one_node};
use pageframe::reclaim::ReclaimEvent;
use pageframe::reclaim::{AgingConfig, AgingConfigError, AgingWorkload, MmError};
use pageframe::{CpuId, Gfp, NodeId, Order};

const MEMORY_MIB: u64 = 64;
const PAGES: u64 = (MEMORY_MIB << 20) >> 12;

fn config() -> AgingConfig {
    AgingConfig::for_machine(3 * PAGES / 8, PAGES, CpuId(0))
}

/// Fraction of consecutive heap pages that are physically adjacent.
fn adjacency(pfns: &[u64]) -> f64 {
    let adjacent = pfns.windows(2).filter(|w| w[1] == w[0] + 1).count();
    adjacent as f64 / (pfns.len() - 1) as f64
}

fn heaps(seed: u64, runs: usize) -> Vec<Vec<u64>> {
    let allocator = boot(&one_node(MEMORY_MIB, 2));
    let mut workload = AgingWorkload::new(&allocator, config(), seed).unwrap();
    let heaps = (0..runs)
        .map(|_| workload.benchmark_run(|pfns| pfns.to_vec()).unwrap())
        .collect();
    let mm = workload.mm();
    mm.check_invariants().unwrap();
    assert_conserved(&allocator, mm.nr_file_pages() + mm.nr_anon_pages());
    assert_eq!(workload.runs(), runs as u64);
    heaps
}

#[test]
fn config_derives_from_the_machine() {
    let config = config();
    assert_eq!(config.heap_pages, 6144);
    assert_eq!(config.dataset_files, 16);
    assert_eq!(config.dataset_file_pages, 2 * PAGES / 16);
    assert_eq!(config.read_pages_per_run, PAGES);
    assert_eq!(config.chunk_pages, 2 * PAGES / 16 / 64);
}

#[test]
fn the_first_run_is_placed_as_on_a_fresh_machine() {
    let allocator = boot(&one_node(MEMORY_MIB, 2));
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let fresh: Vec<u64> = (0..config().heap_pages)
        .map(|_| {
            cpu.alloc_pages(Gfp::HIGHUSER_MOVABLE, Order(0), NodeId(0))
                .unwrap()
                .pfn()
                .0
        })
        .collect();
    let heaps = heaps(7, 1);
    assert_eq!(heaps[0], fresh);
    assert!(adjacency(&heaps[0]) > 0.99);
}

#[test]
fn aging_scatters_the_heap_and_is_deterministic() {
    let runs = 8;
    let first = heaps(7, runs);
    assert_eq!(heaps(7, runs), first);
    assert_ne!(heaps(8, runs)[runs - 1], first[runs - 1]);
    let fresh = adjacency(&first[0]);
    let aged = adjacency(&first[runs - 1]);
    assert!(
        aged < fresh * 0.9,
        "adjacency fresh {fresh:.3}, aged {aged:.3}"
    );
}

#[test]
fn aging_reclaims_through_kswapd_and_directly() {
    let allocator = boot(&one_node(MEMORY_MIB, 2));
    let mut workload = AgingWorkload::new(&allocator, config(), 3).unwrap();
    for _ in 0..3 {
        workload.benchmark_run(|_| ()).unwrap();
        workload.mm().check_invariants().unwrap();
    }
    let counters = workload.mm().counters();
    assert!(counters.get(ReclaimEvent::PgstealKswapd) > 0);
    assert!(counters.get(ReclaimEvent::Pageoutrun) > 0);
    assert!(counters.get(ReclaimEvent::NrWritten) > 0);
    let info = workload.mm().meminfo();
    assert!(info.cached > info.total / 2, "{info:?}");
    assert_eq!(info.anon_pages, 0);
}

/// CPUs whose per-CPU lists were ever used (`high` is 0 until then).
fn cpus_used(allocator: &pageframe::LocalPageAllocator) -> Vec<usize> {
    let zones = allocator.zone_snapshots();
    (0..allocator.nr_cpus())
        .filter(|&cpu| zones.iter().any(|zone| zone.pcp[cpu].high > 0))
        .collect()
}

#[test]
fn a_config_that_cannot_run_is_einval_and_creates_nothing() {
    let allocator = boot(&one_node(MEMORY_MIB, 2));
    let cases = [
        (
            AgingConfig {
                dataset_files: 0,
                ..config()
            },
            AgingConfigError::NoDatasetFiles,
        ),
        (
            AgingConfig {
                chunk_pages: 0,
                ..config()
            },
            AgingConfigError::ZeroChunk,
        ),
        (
            AgingConfig {
                work_cpus: 0,
                ..config()
            },
            AgingConfigError::NoWorkCpus,
        ),
        (
            AgingConfig {
                cpu: CpuId(1),
                work_cpus: 2,
                ..config()
            },
            AgingConfigError::CpusBeyondMachine {
                first: CpuId(1),
                count: 2,
                nr_cpus: 2,
            },
        ),
        (
            AgingConfig {
                cpu: CpuId(u16::MAX),
                work_cpus: u16::MAX,
                ..config()
            },
            AgingConfigError::CpusBeyondMachine {
                first: CpuId(u16::MAX),
                count: u16::MAX,
                nr_cpus: 2,
            },
        ),
        (
            AgingConfig {
                hot_file_pages: u64::MAX,
                ..config()
            },
            AgingConfigError::TooLarge {
                field: "hot_file_pages",
                pages: u64::MAX,
            },
        ),
        (
            AgingConfig {
                dataset_file_pages: 1 << 52,
                ..config()
            },
            AgingConfigError::TooLarge {
                field: "dataset_file_pages",
                pages: 1 << 52,
            },
        ),
        (
            AgingConfig {
                chunk_pages: u64::MAX / 2,
                ..config()
            },
            AgingConfigError::TooLarge {
                field: "chunk_pages",
                pages: u64::MAX / 2,
            },
        ),
        (
            AgingConfig {
                log_pages_per_run: 1 << 60,
                ..config()
            },
            AgingConfigError::TooLarge {
                field: "log_pages_per_run",
                pages: 1 << 60,
            },
        ),
        // The hot file's last re-read ends a sixteenth past its end.
        (
            AgingConfig {
                hot_file_pages: i64::MAX as u64 / 4096,
                ..config()
            },
            AgingConfigError::TooLarge {
                field: "hot_file_pages",
                pages: i64::MAX as u64 / 4096,
            },
        ),
        (
            AgingConfig {
                dataset_files: u32::MAX,
                ..config()
            },
            AgingConfigError::TooManyFiles(u32::MAX),
        ),
        (
            AgingConfig {
                read_pages_per_run: u64::MAX,
                ..config()
            },
            AgingConfigError::TooMuchWork {
                field: "read_pages_per_run",
                pages: u64::MAX,
                limit: allocator.managed_pages() * 64,
            },
        ),
        (
            AgingConfig {
                heap_pages: allocator.managed_pages() + 1,
                ..config()
            },
            AgingConfigError::TooMuchWork {
                field: "heap_pages",
                pages: allocator.managed_pages() + 1,
                limit: allocator.managed_pages(),
            },
        ),
        (
            AgingConfig {
                helper_pages: 1 << 36,
                ..config()
            },
            AgingConfigError::TooMuchWork {
                field: "helper_pages",
                pages: 1 << 36,
                limit: allocator.managed_pages(),
            },
        ),
    ];
    for (bad, expected) in cases {
        let err = AgingWorkload::new(&allocator, bad, 1).err();
        assert_eq!(err, Some(MmError::InvalidAgingConfig(expected)), "{bad:?}");
        assert_eq!(err.map(|err| err.name()), Some("EINVAL"));
        assert_conserved(&allocator, 0);
        assert!(cpus_used(&allocator).is_empty());
    }
    // The largest work CPU range that fits is accepted.
    let last = AgingConfig {
        cpu: CpuId(1),
        work_cpus: 1,
        ..config()
    };
    assert!(AgingWorkload::new(&allocator, last, 1).is_ok());
}

#[test]
fn the_defaults_have_no_hot_file_and_one_work_cpu() {
    let config = config();
    assert_eq!((config.work_cpus, config.hot_file_pages), (1, 0));
    let allocator = boot(&one_node(MEMORY_MIB, 4));
    let mut workload = AgingWorkload::new(&allocator, config, 5).unwrap();
    assert_eq!(workload.hot_file(), None);
    assert_eq!(workload.dataset().len(), 16);
    workload.benchmark_run(|_| ()).unwrap();
    workload.mm().check_invariants().unwrap();
    assert_eq!(cpus_used(&allocator), vec![0]);
}

#[test]
fn the_work_rotates_over_the_work_cpus() {
    let allocator = boot(&one_node(MEMORY_MIB, 4));
    let config = AgingConfig {
        cpu: CpuId(1),
        work_cpus: 2,
        ..config()
    };
    let mut workload = AgingWorkload::new(&allocator, config, 5).unwrap();
    workload.benchmark_run(|_| ()).unwrap();
    let mm = workload.mm();
    mm.check_invariants().unwrap();
    assert_conserved(&allocator, mm.nr_file_pages() + mm.nr_anon_pages());
    // CPUs 1 and 2 take the work's chunks in turn; CPU 3 takes nothing
    // (CPU 0 is kswapd's, the node's first CPU, when kswapd reclaims).
    let used = cpus_used(&allocator);
    assert!(
        used.contains(&1) && used.contains(&2) && !used.contains(&3),
        "{used:?}"
    );
}

#[test]
fn the_hot_file_stays_resident_on_the_active_list() {
    let hot_pages = PAGES / 16;
    let allocator = boot(&one_node(MEMORY_MIB, 2));
    let config = AgingConfig {
        hot_file_pages: hot_pages,
        ..config()
    };
    let mut workload = AgingWorkload::new(&allocator, config, 9).unwrap();
    let hot = workload.hot_file().unwrap();
    assert!(workload.mm().file_pages(hot).unwrap().is_empty());
    workload.benchmark_run(|_| ()).unwrap();
    let resident = workload.mm().file_pages(hot).unwrap();
    assert_eq!(resident.len() as u64, hot_pages);
    for _ in 0..3 {
        workload.benchmark_run(|_| ()).unwrap();
        workload.mm().check_invariants().unwrap();
    }
    // Each run reads as much as the memory from the data set: pages read
    // once are reclaimed, the hot file's (read again each chunk) stay put.
    assert_eq!(workload.mm().file_pages(hot).unwrap(), resident);
    let info = workload.mm().meminfo();
    assert!(info.active_file >= hot_pages, "{info:?}");
    let dataset_cached: usize = workload
        .dataset()
        .iter()
        .map(|&file| workload.mm().file_pages(file).unwrap().len())
        .sum();
    assert!((dataset_cached as u64) < 16 * config.dataset_file_pages);
    let mm = workload.mm();
    assert_conserved(&allocator, mm.nr_file_pages() + mm.nr_anon_pages());
}

#[test]
fn a_caller_pretouch_builds_the_heap_and_its_processes_exit() {
    let allocator = boot(&one_node(MEMORY_MIB, 2));
    let mut workload = AgingWorkload::new(&allocator, config(), 4).unwrap();
    let half = config().heap_pages / 2;
    let mut expected = Vec::new();
    let mut spawned = Vec::new();
    let heap = workload
        .benchmark_run_with(
            |mm| {
                // Two processes on two CPUs, the second touching the
                // lower half of the virtual range.
                let pids = vec![mm.spawn(CpuId(0))?, mm.spawn(CpuId(1))?];
                mm.touch(pids[0], half, half)?;
                mm.touch(pids[1], 0, half)?;
                for &pid in pids.iter().rev() {
                    expected.extend(mm.process_pages(pid)?.into_iter().map(|(_, pfn)| pfn));
                }
                spawned.clone_from(&pids);
                Ok(pids)
            },
            |pfns| pfns.to_vec(),
        )
        .unwrap();
    assert_eq!(heap.len() as u64, 2 * half);
    assert_eq!(heap, expected);
    let mm = workload.mm();
    for pid in spawned {
        assert_eq!(mm.process_pages(pid), Err(MmError::NoSuchProcess(pid)));
    }
    assert_eq!(workload.runs(), 1);
    mm.check_invariants().unwrap();
    assert_conserved(&allocator, mm.nr_file_pages() + mm.nr_anon_pages());
    // A failing pretouch fails the run, which does not count.
    let err = workload.benchmark_run_with(|mm| mm.spawn(CpuId(7)).map(|pid| vec![pid]), |_| ());
    assert_eq!(err.map(|_| ()).unwrap_err().name(), "EINVAL");
    assert_eq!(workload.runs(), 1);
}

/// A run whose heap or helper cannot be had fails with ENOMEM and leaves
/// no process (and so no anonymous page) behind: the next run finds the
/// memory it found.
#[test]
fn a_run_that_runs_out_of_memory_leaves_no_process_behind() {
    let allocator = boot(&one_node(MEMORY_MIB, 2));
    let managed = allocator.managed_pages();
    for bad in [
        AgingConfig {
            heap_pages: managed,
            ..config()
        },
        AgingConfig {
            helper_pages: managed,
            ..config()
        },
    ] {
        let mut workload = AgingWorkload::new(&allocator, bad, 1).unwrap();
        for _ in 0..2 {
            let err = workload.benchmark_run(|_| ()).unwrap_err();
            assert_eq!(err.name(), "ENOMEM", "{bad:?}");
            assert_eq!(workload.mm().nr_anon_pages(), 0, "{bad:?}");
            workload.mm().check_invariants().unwrap();
        }
    }
}
