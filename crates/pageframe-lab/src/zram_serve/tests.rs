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

fn skip() -> bool {
    match unsupported_reason() {
        Some(reason) => {
            println!("skipped: {reason}");
            true
        }
        None => false,
    }
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

#[test]
fn ext4_on_the_served_device_mounts_fills_and_tears_down() {
    if skip() {
        return;
    }
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
    if skip() || !Path::new("/sys/class/zram-control").exists() {
        println!("skipped: needs root, FUSE, loop and zram");
        return;
    }
    let loops_before = attached_loop_devices();
    let bench = throughput::BenchConfig {
        device: config("bench", 1, 0).device,
        fuse_threads: 2,
        writers: vec![1, 3],
        tarball: "/nonexistent/linux.tar.xz".into(),
    };
    let mut out = Vec::new();
    throughput::bench(&bench, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].contains("NOT THE TARBALL"), "{text}");
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
