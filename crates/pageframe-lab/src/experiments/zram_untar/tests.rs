//! Tests of `zram-untar`: the tree on a synthetic tarball, the fallback
//! corpus, and the document's figures.

use super::*;

/// A synthetic tree: the five removed directories and a rest, each with
/// a few files of text-like pages, a zero page and a noisy page.
fn synthetic() -> Corpus {
    let mut builder = tar::Builder::new(Vec::new());
    let mut state = 0x1234_5678u64;
    for dir in ["arch", "drivers", "fs", "include", "kernel", "sound"] {
        for file in 0..4 {
            let mut data = Vec::new();
            for line in 0..(200 + 150 * file) {
                data.extend_from_slice(
                    format!("{dir} line {line} value {}\n", line * 7 % 13).as_bytes(),
                );
            }
            data.resize(data.len().div_ceil(4096) * 4096 + 4096, 0);
            data.extend((0..4096).map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            }));
            let mut header = tar::Header::new_gnu();
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            builder
                .append_data(&mut header, format!("linux/{dir}/f{file}.c"), &data[..])
                .unwrap();
        }
    }
    let tar = builder.into_inner().unwrap();
    corpus::from_tar(&tar[..], "synthetic", true, Sampling { one_in: 1 }, |_| {}).unwrap()
}

#[test]
fn untar_and_remove_account_every_page() {
    let corpus = synthetic();
    let prepared = prepare(&corpus, Compressor::Lz4, NonZeroUsize::MIN, 1).unwrap();
    let allocator =
        LocalPageAllocator::boot(&MachineDesc::uniform(256 << 20, 1, 1).unwrap()).unwrap();
    for backend in BACKENDS {
        let pool = backend
            .create(CpuPages::new(allocator.cpu(CpuId(0)).unwrap()))
            .unwrap();
        let mut zram = Zram::new(pool, ZramConfig::new(corpus.nr_pages())).unwrap();
        let mut tree = Tree::new(&corpus);
        for _ in 0..2 {
            tree.untar(&mut zram, &corpus, &prepared).unwrap();
            assert_eq!(zram.mm_stat().orig_data_size, corpus.pages.len() as u64);
            assert!(zram.mm_stat().same_pages > 0 && zram.mm_stat().huge_pages > 0);
            for dir in REMOVED {
                tree.remove(&mut zram, &corpus, dir).unwrap();
                zram.check_invariants().unwrap();
            }
            assert_eq!(
                zram.mm_stat().orig_data_size,
                corpus.pages_under("kernel") as u64 * 4096
            );
        }
        // What is left reads back as the corpus has it.
        let mut out = vec![0u8; 4096];
        for (index, file) in corpus.files.iter().enumerate() {
            for (at, slot) in tree.slots[index].iter().flatten().enumerate() {
                zram.read(*slot as usize, &mut out).unwrap();
                assert_eq!(&out[..], corpus.page(file.first_page + at), "{}", file.path);
            }
        }
        let row = row(&zram, backend, 1, "rm include", 5, false);
        assert_eq!(
            row.reference.reference_overhead_ratio,
            Some(if backend == Backend::Afmalloc {
                10.81
            } else {
                16.19
            })
        );
        assert!(row.reference_sizes.is_none());
    }
}

#[test]
fn without_a_tarball_the_fallback_runs_and_says_so() {
    let mut list = ZramUntar.params(Scale::Quick);
    for param in &mut list {
        match param.key {
            "rounds" => param.default = crate::params::Value::Int(1),
            "fallback_mib" => param.default = crate::params::Value::Int(2),
            "workload" => param.default = crate::params::Value::Choice("files"),
            _ => {}
        }
    }
    let params = Params::defaults(&list);
    let options = RunOptions {
        corpus: Some("/nonexistent/linux.tar.xz".into()),
        ..RunOptions::new(Scale::Quick, 1)
    };
    let report = ZramUntar.run(&options, &params).unwrap();
    assert!(report
        .notes
        .iter()
        .any(|note| note.starts_with("NOT THE SOURCE DOCUMENT'S DATA")
            && note.contains("apt-get install linux-source-6.1")));
    // Three allocators: untar, one removal per top-level directory removed
    // (the fallback corpus's five largest, or fewer when a small corpus
    // spans fewer: it depends on the files on this machine), and compact.
    let sampling = Sampling {
        one_in: params.int("sample_one_in") as usize,
    };
    let fallback = corpus::from_dirs(&corpus::fallback_roots(), 2 << 20, sampling);
    let removed = fallback.largest_tops(REMOVED.len()).len();
    assert!(
        removed >= 1,
        "the fallback corpus has a directory to remove"
    );
    assert_eq!(report.rows.len(), 3 * (removed + 2));
    assert!(!report
        .columns()
        .iter()
        .any(|column| column == "reference_orig_size"));
    assert!(ZramUntar.headline(&report).is_some());
}

#[test]
fn references_cover_the_documents_rounds() {
    assert_eq!(
        reference(BACKENDS[0], 1, 0).map(|figures| figures.3),
        Some(5.34)
    );
    assert_eq!(
        reference(BACKENDS[0], 10, 5).map(|figures| figures.3),
        Some(37.35)
    );
    assert_eq!(
        reference(Backend::Afmalloc, 10, 5).and_then(|figures| figures.4),
        Some(3.98)
    );
    assert!(reference(BACKENDS[1], 5, 0).is_none());
}

use crate::zram_serve::block_trace::{parse_trace, RealStat, TraceRecord};

/// A small trace: two rounds of writes and discards with step marks.
fn small_trace() -> Vec<TraceRecord> {
    let mut records = Vec::new();
    for round in 1..=2u32 {
        for page in 0..300u64 {
            records.push(TraceRecord::Write {
                page,
                sizes: (page % 7 != 0).then_some([
                    (page * 37 % 3000 + 40) as u32,
                    (page * 41 % 2900 + 40) as u32,
                    (page * 13 % 2000 + 30) as u32,
                ]),
            });
        }
        records.push(TraceRecord::Step {
            round,
            label: "untar".into(),
            real: Some(RealStat {
                orig: 300 * 4096,
                compr: 400_000,
                used: 420_000,
            }),
        });
        records.push(TraceRecord::Discard {
            first: 0,
            pages: 100 * u64::from(round),
        });
        records.push(TraceRecord::Step {
            round,
            label: "rm drivers".into(),
            real: None,
        });
    }
    records
}

#[test]
fn replay_is_deterministic_and_accounts_every_write() {
    let records = small_trace();
    for backend in BACKENDS {
        for codec in 0..3 {
            let steps = replay::replay(&records, backend, codec).unwrap();
            assert_eq!(steps, replay::replay(&records, backend, codec).unwrap());
            assert_eq!(steps.len(), 4);
            // After the first untar every page is stored; sizes add up.
            let stored: u64 = (0..300u64)
                .filter(|page| page % 7 != 0)
                .map(|page| match &records[page as usize] {
                    TraceRecord::Write {
                        sizes: Some(sizes), ..
                    } => u64::from(sizes[codec]),
                    _ => unreachable!(),
                })
                .sum();
            assert_eq!(steps[0].orig, 300 * 4096);
            assert_eq!(steps[0].compr, stored);
            assert!(steps[0].used >= steps[0].compr);
            assert_eq!(steps[1].orig, 200 * 4096);
            assert_eq!(steps[3].orig, 100 * 4096);
            let row = replay::row(backend, &steps[0]);
            assert_eq!(row.kernel_overhead_ratio, Some(5.0));
            let row = replay::row(backend, &steps[1]);
            assert_eq!(row.kernel_overhead_ratio, None);
            let columns = Row::from_typed(&row).unwrap();
            assert!(columns
                .get("kernel_overhead_ratio")
                .is_some_and(|v| v.is_null()));
            assert_eq!(
                row.reference.reference_overhead_ratio,
                reference(backend, 1, 1).map(|figures| figures.3)
            );
        }
    }
}

#[test]
fn a_replay_the_host_cannot_hold_is_refused_before_it_starts() {
    // Two million pages written whole from a trace of 1.7 KB passed 5 GB
    // (8 GiB an allocator, two at once).
    let mut records: Vec<TraceRecord> = (0..2_000_000)
        .map(|page| TraceRecord::Write {
            page,
            sizes: Some([8192; 3]),
        })
        .collect();
    records.push(TraceRecord::Step {
        round: 1,
        label: "untar".into(),
        real: None,
    });
    let err = replay::check_host_holds(&records, "big.pfzt", 2, Some(15 << 30)).unwrap_err();
    assert!(
        err.to_string().starts_with(
            "big.pfzt: replaying it would hold about 16.6 GiB (2 allocators at once, 8.2 GiB each"
        ),
        "{err}"
    );
    assert!(
        err.to_string().contains("MemAvailable of 15.0 GiB"),
        "{err}"
    );
    // Discarded pages cost nothing: the same pages written and discarded
    // in halves hold half as much at their peak.
    let half = 1_000_000;
    let mut halves: Vec<TraceRecord> = records[..half as usize].to_vec();
    halves.push(TraceRecord::Discard {
        first: 0,
        pages: half,
    });
    halves.extend_from_slice(&records[half as usize..]);
    assert!(replay::check_host_holds(&halves, "halves.pfzt", 2, Some(10 << 30)).is_ok());
    // The shipped trace's estimate stays near what it takes: 1.0 GiB an
    // allocator, 3.1 GiB for three at once (measured: 1.3 GB peak for two).
    let shipped = parse_trace(replay::SHIPPED, Path::new(replay::SHIPPED_NAME)).unwrap();
    assert!(replay::check_host_holds(&shipped, "shipped", 3, Some(4 << 30)).is_ok());
    assert!(replay::check_host_holds(&records, "unknown", 3, None).is_ok());
}

#[test]
fn the_default_run_replays_the_shipped_trace_recorded_alone() {
    let list = ZramUntar.params(Scale::Quick);
    let params = Params::defaults(&list);
    let options = RunOptions::new(Scale::Quick, 7);
    let report = ZramUntar.run(&options, &params).unwrap();
    let again = ZramUntar.run(&options, &params).unwrap();
    assert_eq!(report.rows, again.rows);
    // Three allocators, three rounds of six steps.
    assert_eq!(report.rows.len(), 3 * 3 * 6);
    let rows: Vec<rows::ReplayRow> = report.results_as().collect();
    assert_eq!(rows.len(), report.rows.len());
    // Recorded with no real /dev/zram beside it: no kernel figures.
    assert!(rows.iter().all(|row| row.kernel_overhead_ratio.is_none()));
    // Chain 8 after the last removal of each round, as the live recording
    // measured on its served device (the replay equals its mm_stat).
    let last: Vec<f64> = rows
        .iter()
        .filter(|row| row.sizes.allocator == "zsmalloc-chain8" && row.sizes.step == "rm include")
        .map(|row| row.sizes.overhead_ratio)
        .collect();
    assert_eq!(last, [13.6, 15.64, 16.55]);
    assert!(report
        .notes
        .iter()
        .any(|note| note.contains(replay::SHIPPED_NAME)));
    assert!(ZramUntar.headline(&report).is_some());
}

#[test]
fn the_kernels_zram_given_a_trace_stores_what_the_replay_stores() {
    if !crate::conform::host::is_root() || !Path::new("/sys/class/zram-control/hot_add").exists() {
        println!("skipped: needs root and zram (hot_add)");
        return;
    }
    let mut records = small_trace();
    let first = crate::zram_serve::kernel_replay::replay_on_kernel(&records).unwrap();
    assert_eq!(first.writes, 2 * (300 - 43));
    // Sizes the synthetic pages reach exactly, so that both sides store
    // the same objects.
    for record in &mut records {
        if let TraceRecord::Write {
            sizes: Some(sizes), ..
        } = record
        {
            while !first.exact_sizes[sizes[0] as usize] {
                sizes[0] += 1;
            }
        }
    }
    let kernel = crate::zram_serve::kernel_replay::replay_on_kernel(&records).unwrap();
    assert_eq!(kernel.inexact_writes, 0);
    let ours = replay::replay(&records, Backend::Zsmalloc { chain_size: 8 }, 0).unwrap();
    assert_eq!(kernel.steps.len(), ours.len());
    for (kernel_step, our_step) in kernel.steps.iter().zip(&ours) {
        let kernel_figures = (kernel_step.orig, kernel_step.compr, kernel_step.used);
        let our_figures = (our_step.orig, our_step.compr, our_step.used);
        assert_eq!(kernel_figures, our_figures, "{}", our_step.label);
    }
}

#[test]
fn band_columns_appear_only_when_measured_and_read_back() {
    let records = small_trace();
    let steps = replay::replay(&records, BACKENDS[1], 0).unwrap();
    let mut row = replay::row(BACKENDS[1], &steps[0]);
    let plain = Row::from_typed(&row).unwrap();
    assert!(plain.get("kernel_band_min").is_none());
    assert!(plain.get("in_kernel_band").is_none());
    row.kernel_band = Some(rows::KernelBandColumns {
        kernel_band_min: 2.78,
        kernel_band_max: 3.48,
        kernel_band_mean: 3.12,
        in_kernel_band: true,
        kernel_replay_in_kernel_band: None,
    });
    let banded = Row::from_typed(&row).unwrap();
    assert_eq!(
        banded.get("kernel_band_max").and_then(|v| v.as_f64()),
        Some(3.48)
    );
    assert_eq!(
        banded.get("in_kernel_band").and_then(|v| v.as_bool()),
        Some(true)
    );
    assert!(banded.get("kernel_replay_in_kernel_band").is_none());
    assert_eq!(banded.to_typed::<rows::ReplayRow>(), Some(row));
    assert_eq!(
        plain
            .to_typed::<rows::ReplayRow>()
            .map(|row| row.kernel_band),
        Some(None)
    );
}

#[test]
fn kernel_runs_are_off_by_default_and_bounded() {
    let list = ZramUntar.params(Scale::Quick);
    let runs = list
        .iter()
        .find(|param| param.key == "kernel_runs")
        .unwrap();
    assert_eq!(runs.default, crate::params::Value::Int(0));
    assert_eq!(runs.kind, crate::params::Kind::Int { min: 0, max: 20 });
    let report = ZramUntar
        .run(&RunOptions::new(Scale::Quick, 7), &Params::defaults(&list))
        .unwrap();
    assert!(!report
        .columns()
        .iter()
        .any(|column| column.starts_with("kernel_band") || column == "in_kernel_band"));
    assert!(!report.notes.iter().any(|note| note.contains("kernel band")));
}

#[test]
fn the_recording_runs_alone_by_default() {
    let list = ZramUntar.params(Scale::Quick);
    let beside = list
        .iter()
        .find(|param| param.key == "record_beside")
        .unwrap();
    assert_eq!(beside.default, crate::params::Value::Choice("none"));
    assert_eq!(
        beside.kind,
        crate::params::Kind::Choice {
            options: &["none", "kernel"]
        }
    );
}
