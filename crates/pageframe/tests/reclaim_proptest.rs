//! State-machine property test of the reclaim layer: random sequences of
//! file creation, reads, writes, truncations (negative and too large
//! ones too), deletions, fsync and sync, process spawns, touches and exits,
//! kswapd steps and other allocations and frees, memory cgroup limits
//! set and lowered and statistics flushed, on a machine small enough that
//! reads and touches hit memory pressure. After every step the
//! invariants hold (shadow entries included), the refault counters nest
//! (restores <= activations <= refaults), and pages are conserved (free + per-CPU + page cache +
//! anon + other == managed), each result agrees with a model of files and
//! processes (EBADF, ENOENT, EINVAL, EFBIG, ESRCH where Linux returns
//! them, EBUSY for a limit reclaim cannot reach), the cgroup's charges
//! stay within its limit, and every refused call left the machine
//! unchanged.

mod common;

use common::{assert_conserved, boot, one_node};
use pageframe::reclaim::{FileId, Mm, MmConfig, MmError, Pid};
use pageframe::{CpuId, Gfp, NodeId, Order, Page};
use proptest::prelude::*;

const PAGE: u64 = 4096;
const MAX_FILE_PAGES: u64 = 1024;

#[derive(Clone, Debug)]
enum Op {
    Create,
    Read {
        file: u8,
        page: u16,
        pages: u16,
        cpu: u8,
    },
    Write {
        file: u8,
        page: u16,
        pages: u16,
        odd: bool,
    },
    Truncate {
        file: u8,
        length: i64,
    },
    Delete {
        file: u8,
    },
    Fsync {
        file: u8,
    },
    DontNeed {
        file: u8,
        offset: i64,
        len: i64,
    },
    Sync,
    Spawn {
        cpu: u8,
    },
    Touch {
        pid: u8,
        first: u16,
        count: u16,
    },
    Exit {
        pid: u8,
    },
    /// A memory cgroup limit in pages (None: unlimited).
    Limit {
        pages: Option<u16>,
        cpu: u8,
    },
    FlushStats,
    Kswapd {
        node: u8,
    },
    AllocOther {
        kernel: bool,
    },
    FreeOther,
}

fn op() -> impl Strategy<Value = Op> {
    let max = (MAX_FILE_PAGES * PAGE) as i64;
    prop_oneof![
        1 => Just(Op::Create),
        4 => (0..6u8, 0..1100u16, 0..400u16, 0..3u8)
            .prop_map(|(file, page, pages, cpu)| Op::Read { file, page, pages, cpu }),
        3 => (0..6u8, 0..1100u16, 0..300u16, any::<bool>())
            .prop_map(|(file, page, pages, odd)| Op::Write { file, page, pages, odd }),
        2 => (0..6u8, prop_oneof![-5..0i64, 0..max, max..max + 5, Just(i64::MIN)])
            .prop_map(|(file, length)| Op::Truncate { file, length }),
        1 => (0..6u8).prop_map(|file| Op::Delete { file }),
        1 => (0..6u8).prop_map(|file| Op::Fsync { file }),
        1 => (
            0..6u8,
            prop_oneof![Just(-1i64), Just(i64::MIN), 0..max, Just(i64::MAX)],
            prop_oneof![-3..0i64, 0..max, Just(0), Just(i64::MAX)],
        )
            .prop_map(|(file, offset, len)| Op::DontNeed { file, offset, len }),
        1 => Just(Op::Sync),
        1 => (0..3u8).prop_map(|cpu| Op::Spawn { cpu }),
        3 => (0..4u8, 0..2000u16, 0..500u16)
            .prop_map(|(pid, first, count)| Op::Touch { pid, first, count }),
        1 => (0..4u8).prop_map(|pid| Op::Exit { pid }),
        2 => (0..2u8).prop_map(|node| Op::Kswapd { node }),
        1 => any::<bool>().prop_map(|kernel| Op::AllocOther { kernel }),
        1 => Just(Op::FreeOther),
        1 => (prop::option::of(0..3000u16), 0..3u8).prop_map(|(pages, cpu)| Op::Limit { pages, cpu }),
        1 => Just(Op::FlushStats),
    ]
}

/// What the test knows: each file's size (None once deleted), each
/// process's liveness, the other pages held.
#[derive(Default)]
struct Model {
    files: Vec<Option<u64>>,
    alive: Vec<bool>,
    other: Vec<Page>,
}

impl Model {
    fn file(&self, at: u8) -> (FileId, Option<u64>) {
        (
            FileId(at as u32),
            self.files.get(at as usize).copied().flatten(),
        )
    }
}

fn snapshot(mm: &Mm) -> (u64, String, u64, u64) {
    (
        mm.allocator().nr_free_pages(),
        mm.vmstat(),
        mm.nr_file_pages(),
        mm.nr_anon_pages(),
    )
}

/// A refused call: the expected errno, nothing changed.
fn refused(mm: &Mm, before: &(u64, String, u64, u64), result: Result<u64, MmError>, errno: &str) {
    let err = result.expect_err("a bad call succeeded");
    assert_eq!(err.name(), errno, "{err}");
    assert_eq!(&snapshot(mm), before);
}

fn step(mm: &mut Mm, model: &mut Model, op: &Op) {
    let cpu = CpuId(0);
    let before = snapshot(mm);
    match *op {
        Op::Create => {
            let file = mm.create_file();
            assert_eq!(file.0 as usize, model.files.len());
            model.files.push(Some(0));
        }
        Op::Read {
            file,
            page,
            pages,
            cpu,
        } => {
            let (id, size) = model.file(file);
            let result = mm.read(
                CpuId(cpu as u16),
                id,
                page as u64 * PAGE,
                pages as u64 * PAGE,
            );
            match size {
                None => refused(mm, &before, result, "EBADF"),
                Some(_) if cpu >= 2 => refused(mm, &before, result, "EINVAL"),
                Some(size) => {
                    let want = size
                        .saturating_sub(page as u64 * PAGE)
                        .min(pages as u64 * PAGE);
                    match result {
                        Ok(read) => assert!(read <= want && (read == want || read % PAGE == 0)),
                        Err(err) => assert_eq!(err.name(), "ENOMEM"),
                    }
                }
            }
        }
        Op::Write {
            file,
            page,
            pages,
            odd,
        } => {
            let (id, size) = model.file(file);
            let pos = page as u64 * PAGE + odd as u64 * 100;
            let result = mm.write(cpu, id, pos, pages as u64 * PAGE);
            match size {
                None => refused(mm, &before, result, "EBADF"),
                Some(_) if pages > 0 && pos >= MAX_FILE_PAGES * PAGE => {
                    refused(mm, &before, result, "EFBIG")
                }
                Some(size) => match result {
                    Ok(written) => {
                        assert!(written <= pages as u64 * PAGE);
                        let end = if written > 0 { pos + written } else { 0 };
                        model.files[file as usize] = Some(size.max(end));
                    }
                    Err(err) => assert_eq!(err.name(), "ENOMEM"),
                },
            }
            if let Some(size) = model.files.get(file as usize).copied().flatten() {
                assert_eq!(mm.file_size(id).unwrap(), size);
            }
        }
        Op::Truncate { file, length } => {
            let (id, size) = model.file(file);
            let result = mm.truncate(cpu, id, length).map(|()| 0);
            match size {
                // The length is checked before the descriptor.
                _ if length < 0 => refused(mm, &before, result, "EINVAL"),
                None => refused(mm, &before, result, "EBADF"),
                Some(_) if length as u64 > MAX_FILE_PAGES * PAGE => {
                    refused(mm, &before, result, "EFBIG")
                }
                // Zeroing the rest of the new last page may need a page:
                // reclaim may have run, the file is as it was.
                Some(size) if result.is_err() => {
                    assert_eq!(result.unwrap_err().name(), "ENOMEM");
                    assert_eq!(mm.file_size(id).unwrap(), size);
                }
                Some(_) => {
                    model.files[file as usize] = Some(length as u64);
                    let limit = (length as u64).div_ceil(PAGE);
                    assert!(mm
                        .file_pages(id)
                        .unwrap()
                        .iter()
                        .all(|&(index, _)| index < limit));
                }
            }
        }
        Op::Delete { file } => {
            let (id, size) = model.file(file);
            let result = mm.delete_file(cpu, id).map(|()| 0);
            match size {
                None => refused(mm, &before, result, "ENOENT"),
                Some(_) => {
                    result.unwrap();
                    model.files[file as usize] = None;
                }
            }
        }
        Op::Fsync { file } => {
            let (id, size) = model.file(file);
            let result = mm.fsync(id);
            match size {
                None => refused(mm, &before, result, "EBADF"),
                Some(_) => {
                    result.unwrap();
                    assert!(mm.file_pages(id).is_ok());
                }
            }
        }
        Op::DontNeed { file, offset, len } => {
            let (id, size) = model.file(file);
            let cached = mm.file_pages(id).map(|pages| pages.len() as u64);
            let result = mm.fadvise_dontneed(cpu, id, offset, len);
            match size {
                None => refused(mm, &before, result, "EBADF"),
                Some(_) if len < 0 => refused(mm, &before, result, "EINVAL"),
                Some(_) => {
                    let dropped = result.unwrap();
                    let left = mm.file_pages(id).unwrap().len() as u64;
                    assert_eq!(cached.unwrap() - dropped, left);
                    assert_eq!(mm.file_size(id).unwrap(), size.unwrap());
                }
            }
        }
        Op::Sync => {
            let dirty = mm.nr_dirty();
            assert_eq!(mm.sync(), dirty);
            assert_eq!(mm.nr_dirty(), 0);
        }
        Op::Spawn { cpu } => match mm.spawn(CpuId(cpu as u16)) {
            Ok(pid) => {
                assert_eq!(pid.0 as usize, model.alive.len());
                model.alive.push(true);
            }
            Err(err) => {
                assert!(cpu >= 2);
                refused(mm, &before, Err(err), "EINVAL");
            }
        },
        Op::Touch { pid, first, count } => {
            let alive = model.alive.get(pid as usize).copied().unwrap_or(false);
            let result = mm
                .touch(Pid(pid as u32), first as u64, count as u64)
                .map(|()| 0);
            if !alive {
                refused(mm, &before, result, "ESRCH");
            } else if let Err(err) = result {
                assert_eq!(err.name(), "ENOMEM");
            }
        }
        Op::Exit { pid } => {
            let alive = model.alive.get(pid as usize).copied().unwrap_or(false);
            let anon = mm
                .process_pages(Pid(pid as u32))
                .map(|pages| pages.len() as u64);
            let result = mm.exit(Pid(pid as u32));
            if alive {
                assert_eq!(result.unwrap(), anon.unwrap());
                model.alive[pid as usize] = false;
            } else {
                refused(mm, &before, result, "ESRCH");
            }
        }
        Op::Kswapd { node } => {
            let step = mm.kswapd_run(NodeId(node as u16));
            if node >= 1 {
                refused(mm, &before, step.map(|_| 0), "ENODEV");
            } else {
                let step = step.unwrap();
                assert!(step.reclaimed <= step.scanned);
            }
        }
        Op::AllocOther { kernel } => {
            let gfp = if kernel { Gfp::KERNEL } else { Gfp::NOWAIT };
            match mm.alloc_pages(cpu, gfp, Order(0), NodeId(0)) {
                Ok(page) => model.other.push(page),
                Err(err) => assert_eq!(err.name(), "ENOMEM"),
            }
        }
        Op::FreeOther => {
            if let Some(page) = model.other.pop() {
                mm.free_pages(cpu, page, Order(0)).unwrap();
            }
        }
        Op::Limit { pages, cpu } => {
            let old = mm.memcg_limit();
            let result = mm
                .set_memcg_limit(CpuId(cpu as u16), pages.map(u64::from))
                .map(|()| 0);
            match result {
                _ if cpu >= 2 => refused(mm, &before, result, "EINVAL"),
                Ok(_) => assert_eq!(mm.memcg_limit(), pages.map(u64::from)),
                Err(err) => {
                    // Reclaim freed what it could; the anon pages are left.
                    assert_eq!(err.name(), "EBUSY", "{err}");
                    assert_eq!(mm.memcg_limit(), old);
                    assert!(mm.memcg_usage() > pages.map_or(u64::MAX, u64::from));
                }
            }
        }
        Op::FlushStats => {
            mm.memcg_flush_stats();
            assert_eq!(snapshot(mm), before);
        }
    }
    assert!(mm.memcg_usage() <= mm.memcg_limit().unwrap_or(u64::MAX));
    mm.check_invariants().unwrap();
    // Each restore is an activation, each activation a refault.
    let ws = mm.workingset(NodeId(0));
    assert!(ws.restore_file <= ws.activate_file && ws.activate_file <= ws.refault_file);
    assert_conserved(
        mm.allocator(),
        mm.nr_file_pages() + mm.nr_anon_pages() + model.other.len() as u64,
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 384, ..ProptestConfig::default() })]

    #[test]
    fn pages_are_conserved_through_page_cache_and_reclaim(ops in prop::collection::vec(op(), 1..120)) {
        let allocator = boot(&one_node(16, 2));
        let mut mm = Mm::new(&allocator, MmConfig { max_file_bytes: MAX_FILE_PAGES * PAGE, ..MmConfig::default() });
        let mut model = Model::default();
        for op in &ops {
            step(&mut mm, &mut model, op);
        }
    }
}

/// The operations do reach memory pressure: a fixed sequence from the same
/// generator's vocabulary that reclaims through kswapd and directly.
#[test]
fn the_step_checks_hold_under_memory_pressure() {
    let allocator = boot(&one_node(16, 2));
    let mut mm = Mm::new(
        &allocator,
        MmConfig {
            max_file_bytes: MAX_FILE_PAGES * PAGE,
            ..MmConfig::default()
        },
    );
    let mut model = Model::default();
    let mut ops = vec![Op::Create, Op::Spawn { cpu: 1 }];
    for file in 1..=5u8 {
        ops.push(Op::Create);
        ops.push(Op::Truncate {
            file,
            length: (MAX_FILE_PAGES * PAGE) as i64,
        });
    }
    for round in 0..15u16 {
        let file = 1 + (round % 5) as u8;
        ops.push(Op::Write {
            file: 0,
            page: (round % 3) * 300,
            pages: 300,
            odd: round % 2 == 0,
        });
        for chunk in 0..3 {
            ops.push(Op::Read {
                file,
                page: chunk * 350,
                pages: 350,
                cpu: 0,
            });
        }
        ops.push(Op::Touch {
            pid: 0,
            first: round * 40,
            count: 40,
        });
        ops.push(Op::AllocOther { kernel: true });
        if round % 4 == 3 {
            ops.push(Op::Kswapd { node: 0 });
            ops.push(Op::Delete { file: 0 });
            ops.push(Op::Fsync { file: 0 });
        }
    }
    ops.push(Op::Exit { pid: 0 });
    for op in &ops {
        step(&mut mm, &mut model, op);
    }
    let counters = mm.counters();
    use pageframe::reclaim::ReclaimEvent::*;
    assert!(counters.get(PgstealKswapd) > 0, "{}", mm.vmstat());
    assert!(counters.get(PgstealDirect) > 0, "{}", mm.vmstat());
    assert!(counters.get(AllocstallMovable) > 0);
    // Reads of what reclaim evicted refault (none activates: every page
    // is read once between evictions, so no active list protects any).
    let ws = mm.workingset(NodeId(0));
    assert!(ws.refault_file > 0, "{ws:?}");
}
