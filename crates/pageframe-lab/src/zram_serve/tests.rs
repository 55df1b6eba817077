//! Tests of the served device. The kernel-facing ones need root, FUSE and
//! loop; without them they print why and return.

use super::*;
use pageframe::zram::{Backend, Compressor};
use std::process::Command;

fn config(name: &str, disk_mib: u64, memory_mib: u64) -> ServeConfig {
    ServeConfig {
        device: DeviceConfig {
            backend: Backend::Zsmalloc { chain_size: 8 },
            compressor: Compressor::Lz4,
            disk_bytes: disk_mib << 20,
            memory_bytes: memory_mib << 20,
        },
        mountpoint: std::env::temp_dir().join(format!(
            "pageframe-serve-test-{name}-{}",
            std::process::id()
        )),
        io: LoopIo::Direct,
        threads: 2,
    }
}

/// Held by each test that attaches loop devices: one of them counts the
/// attached devices before and after its run.
static LOOP_DEVICES: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// For a test that serves a device: `None` (the reason printed) when this
/// machine cannot, else the loop-device lock, held to the test's end.
fn serving() -> Option<std::sync::MutexGuard<'static, ()>> {
    if let Some(reason) = unsupported_reason() {
        println!("skipped: {reason}");
        return None;
    }
    Some(
        LOOP_DEVICES
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()),
    )
}

fn run(program: &str, args: &[&str]) -> std::process::Output {
    Command::new(program).args(args).output().expect(program)
}

fn mounted(path: &Path) -> bool {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .contains(path.to_str().unwrap())
}

#[test]
fn device_reads_back_partial_writes_and_punches_whole_pages() {
    let device = Device::new(config("unit", 4, 0).device).unwrap();
    let text: Vec<u8> = b"pageframe ".iter().copied().cycle().take(10000).collect();
    device.write(100, &text).unwrap();
    let mut back = vec![0u8; 10000];
    device.read(100, &mut back).unwrap();
    assert_eq!(back, text);
    assert_eq!(device.mm_stat().orig_data_size, 3 * 4096);
    // Pages 0 and 2 are only partly inside: only page 1 goes.
    device.punch_hole(100, 9000).unwrap();
    assert_eq!(device.mm_stat().orig_data_size, 2 * 4096);
    device.read(4096, &mut back[..4096]).unwrap();
    assert!(back[..4096].iter().all(|byte| *byte == 0));
    assert!(device.write((4 << 20) - 10, &text[..100]).is_err());
    assert_eq!(device.mm_stat().orig_data_size, 2 * 4096);
    device.check_invariants().unwrap();
}

/// A device whose trace takes its sizes from a table records the same
/// trace as one that compresses every page as it arrives: pages in the
/// table, pages not in it, a same-filled page, a partial write and a
/// discard.
#[test]
fn a_trace_with_sizes_from_a_table_is_the_trace_without() {
    let page = |seed: usize, text: usize| -> Vec<u8> {
        let mut page = vec![0u8; 4096];
        for (at, byte) in page.iter_mut().take(text).enumerate() {
            *byte = b'a' + ((at * 31 + seed * 17) % 26) as u8;
        }
        page
    };
    let known: Vec<Vec<u8>> = (0..4).map(|seed| page(seed, 700 + 900 * seed)).collect();
    let table =
        trace_sizes::TraceSizes::of_pages(&known.concat(), 4096, std::num::NonZeroUsize::MIN)
            .unwrap();
    let record = |table: Option<trace_sizes::TraceSizes>, name: &str| {
        let device = Device::new(config(name, 4, 0).device).unwrap();
        if let Some(table) = table {
            assert!(device.use_trace_sizes(table).is_ok());
        }
        let path =
            std::env::temp_dir().join(format!("pageframe-{name}-{}.pfzt", std::process::id()));
        device.set_trace(Some(TraceWriter::create(&path, TRACE_LEVEL).unwrap()));
        let mut writes = known.concat();
        writes.extend(page(9, 3000));
        writes.extend(vec![5u8; 4096]);
        device.write(0, &writes).unwrap();
        device.write(10 * 4096 + 100, &known[1][..500]).unwrap();
        device.punch_hole(4096, 2 * 4096).unwrap();
        device.write(4096, &known[3]).unwrap();
        device.set_trace(None).unwrap().finish().unwrap();
        device.check_invariants().unwrap();
        let records = block_trace::read_trace(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        (
            records,
            device
                .trace_sizes()
                .map(trace_sizes::TraceSizes::found_and_computed),
        )
    };
    let (with_table, counts) = record(Some(table), "table");
    let (without, no_table) = record(None, "no-table");
    assert_eq!(with_table, without);
    assert_eq!(no_table, None);
    // Five known pages written whole, the unknown and the same-filled one
    // computed (the partial write is made under the lock, as before).
    assert_eq!(counts, Some((5, 2)));
}

#[test]
fn ext4_on_the_served_device_mounts_fills_and_tears_down() {
    let Some(_loops) = serving() else {
        return;
    };
    // 64 MiB of disk over 6 MiB of pool memory: random data fills it.
    let server = ZramServer::start(config("ext4", 64, 6)).unwrap();
    let block = server.block_device().to_path_buf();
    let mountpoint = server.mountpoint().to_path_buf();
    let mkfs = run("mkfs.ext4", &["-q", "-F", block.to_str().unwrap()]);
    assert!(mkfs.status.success(), "{:?}", mkfs);
    let stat = std::fs::read_to_string(mountpoint.join(MM_STAT_NAME)).unwrap();
    assert_eq!(stat.split_whitespace().count(), 9, "{stat}");
    let orig: u64 = stat.split_whitespace().next().unwrap().parse().unwrap();
    assert!(orig > 0, "mkfs wrote nothing: {stat}");
    let target = std::env::temp_dir().join(format!("pageframe-serve-ext4-{}", std::process::id()));
    std::fs::create_dir_all(&target).unwrap();
    let mount = run(
        "mount",
        &[
            "-o",
            "discard",
            block.to_str().unwrap(),
            target.to_str().unwrap(),
        ],
    );
    assert!(mount.status.success(), "{:?}", mount);
    // Incompressible data past the pool's memory: the device answers
    // ENOSPC (an I/O error to ext4), the server keeps running.
    let fill = run(
        "dd",
        &[
            "if=/dev/urandom",
            &format!("of={}", target.join("fill").display()),
            "bs=1M",
            "count=24",
            "oflag=direct",
        ],
    );
    assert!(!fill.status.success(), "24 MiB fit in 6 MiB: {:?}", fill);
    server.device().check_invariants().unwrap();
    let _ = std::fs::remove_file(target.join("fill"));
    let umount = run("umount", &[target.to_str().unwrap()]);
    assert!(umount.status.success(), "{:?}", umount);
    let _ = std::fs::remove_dir(&target);
    server.stop().unwrap();
    assert!(!mounted(&mountpoint));
    assert!(!mountpoint.exists());
    let name = block.file_name().unwrap().to_owned();
    assert!(!Path::new("/sys/block")
        .join(name)
        .join("loop/backing_file")
        .exists());
}

#[test]
fn a_named_tarball_must_give_the_bench_its_pages() {
    let missing = Path::new("/nonexistent/linux.tar.xz");
    let err = throughput::pages(Some(missing), 1 << 20).unwrap_err();
    assert!(
        err.to_string().contains("/nonexistent/linux.tar.xz"),
        "{err}"
    );
    let not_xz = throughput::pages(Some(Path::new("/dev/null")), 1 << 20).unwrap_err();
    assert!(not_xz.to_string().contains("/dev/null"), "{not_xz}");
    let (data, label) = throughput::pages(None, 1 << 20).unwrap();
    assert_eq!(data.len(), 1 << 20);
    assert!(!label.is_empty());
}

#[test]
fn a_tarball_that_is_a_fifo_is_read_as_empty_not_waited_for() {
    // A plain open() of a FIFO with no writer blocked for ever.
    let dir = std::env::temp_dir().join(format!("pageframe-bench-fifo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("linux.tar.xz");
    let _ = std::fs::remove_file(&fifo);
    assert!(run("mkfifo", &[fifo.to_str().unwrap()]).status.success());
    let err = throughput::pages(Some(&fifo), 1 << 20).unwrap_err();
    assert!(err.to_string().contains("linux.tar.xz"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The queue attributes `present_as_zram` sets, as sysfs shows them.
const ZRAM_LIKE_QUEUE: [&str; 4] = [
    "rotational",
    "write_cache",
    "stable_writes",
    "max_sectors_kb",
];

fn queue_attributes(device: &Path) -> Vec<String> {
    let queue = Path::new("/sys/block")
        .join(device.file_name().unwrap())
        .join("queue");
    ZRAM_LIKE_QUEUE
        .iter()
        .map(|name| {
            std::fs::read_to_string(queue.join(name))
                .unwrap()
                .trim()
                .to_string()
        })
        .collect()
}

#[test]
fn the_served_device_presents_the_queue_of_a_real_zram() {
    let Some(_loops) = serving() else {
        return;
    };
    let server = ZramServer::start(config("queue", 16, 16)).unwrap();
    let served = queue_attributes(server.block_device());
    // The values zram_add() gives every zram device (Linux 6.12).
    assert_eq!(served, ["0", "write through", "1", "124"]);
    // A bio-based zram has no writeback throttling; the loop device's is off.
    let wbt = Path::new("/sys/block")
        .join(server.block_device().file_name().unwrap())
        .join("queue/wbt_lat_usec");
    assert_eq!(std::fs::read_to_string(wbt).unwrap().trim(), "0");
    // And the running kernel's own zram, when it has one to give.
    match std::fs::read_to_string("/sys/class/zram-control/hot_add") {
        Ok(id) => {
            let id = id.trim();
            let real = queue_attributes(&PathBuf::from(format!("/dev/zram{id}")));
            let _ = std::fs::write("/sys/class/zram-control/hot_remove", id);
            assert_eq!(served, real, "served vs /dev/zram{id}");
        }
        Err(err) => println!("no real zram to compare with: {err}"),
    }
    server.stop().unwrap();
}

#[test]
fn a_mountpoint_that_existed_is_left_and_one_made_is_removed() {
    let Some(_loops) = serving() else {
        return;
    };
    let existing = config("existing", 16, 16);
    std::fs::create_dir_all(&existing.mountpoint).unwrap();
    let server = ZramServer::start(existing.clone()).unwrap();
    assert!(mounted(&existing.mountpoint));
    server.stop().unwrap();
    assert!(!mounted(&existing.mountpoint));
    assert!(
        existing.mountpoint.is_dir(),
        "a directory the user had was removed"
    );
    std::fs::remove_dir(&existing.mountpoint).unwrap();
    let made = config("made", 16, 16);
    let server = ZramServer::start(made.clone()).unwrap();
    server.stop().unwrap();
    assert!(!made.mountpoint.exists());
}

/// Loop devices with a backing file attached.
fn attached_loop_devices() -> usize {
    std::fs::read_dir("/sys/block")
        .unwrap()
        .filter(|entry| {
            entry
                .as_ref()
                .is_ok_and(|entry| entry.path().join("loop/backing_file").exists())
        })
        .count()
}

#[test]
fn the_bench_prints_a_row_per_device_and_leaves_nothing_behind() {
    if !Path::new("/sys/class/zram-control").exists() {
        println!("skipped: needs zram (/sys/class/zram-control)");
        return;
    }
    let Some(_loops) = serving() else {
        return;
    };
    let loops_before = attached_loop_devices();
    let bench = throughput::BenchConfig {
        device: config("bench", 1, 0).device,
        fuse_threads: 2,
        writers: vec![1, 3],
        tarball: None,
    };
    let mut out = Vec::new();
    throughput::bench(&bench, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let installed = Path::new(crate::corpus::DEFAULT_TARBALL).exists();
    let source = if installed {
        "'s tar stream"
    } else {
        "NOT THE TARBALL"
    };
    assert!(lines[0].contains(source), "{text}");
    assert_eq!(lines[1], "| device | 1 in flight | 3 in flight |");
    let rows: Vec<&str> = lines[3..6].to_vec();
    assert!(rows[0].starts_with("| served pageframe zram (zsmalloc-chain8, lz4, 2 FUSE threads) |"));
    assert!(rows[1].starts_with("| loop (direct I/O) over a tmpfs file |"));
    assert!(rows[2].starts_with("| real /dev/zram (lz4) |"));
    for row in rows {
        let rates: Vec<f64> = row
            .trim_end_matches(" |")
            .rsplit(" | ")
            .take(2)
            .map(|cell| cell.parse().unwrap())
            .collect();
        assert!(rates.iter().all(|rate| *rate > 0.0), "{row}");
    }
    assert!(lines[6].starts_with("load average"), "{text}");
    let loops_after = attached_loop_devices();
    assert_eq!(loops_after, loops_before);
    let tag = format!("pageframe-zram-bench-{}", std::process::id());
    assert!(!std::env::temp_dir().join(&tag).exists());
    assert!(!Path::new("/dev/shm").join(&tag).exists());
}

#[test]
fn the_bench_refuses_sizes_the_host_cannot_hold_twice() {
    use super::throughput::check_host_memory;
    const MIB: u64 = 1 << 20;
    assert_eq!(check_host_memory(64 * MIB, Some(128 * MIB)), Ok(()));
    assert_eq!(check_host_memory(64 * MIB, None), Ok(()));
    let error = check_host_memory(64 * MIB, Some(128 * MIB - 1)).unwrap_err();
    assert_eq!(
        error,
        "the bench holds the pages it writes and a device's copy of them (2 x 64M), more than the host's MemAvailable of 0.1 GiB"
    );
    // Twice the size past 2^64 is refused, not wrapped to a small need.
    assert!(check_host_memory(1 << 63, Some(u64::MAX)).is_err());
}

/// A write record with a compressed size of 0 is a damaged trace, named
/// with its offset at reading: the replay's pool used to refuse it with
/// "size 0 is not storable", naming neither the file nor the record.
#[test]
fn a_compressed_size_of_zero_is_refused_when_read() {
    let path = std::env::temp_dir().join(format!("pageframe-size0-{}.pfzt", std::process::id()));
    let mut writer = TraceWriter::create(&path, TRACE_LEVEL).unwrap();
    writer
        .record(&block_trace::TraceRecord::Write {
            page: 3,
            sizes: Some([0, 10, 10]),
        })
        .unwrap();
    writer.finish().unwrap();
    let err = block_trace::read_trace(&path).unwrap_err().to_string();
    let _ = std::fs::remove_file(&path);
    assert!(err.contains("size out of range at byte"), "{err}");
}
