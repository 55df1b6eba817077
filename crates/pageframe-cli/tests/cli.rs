//! The real `pageframe` binary, run as a user runs it: output, determinism,
//! and the error contract (one line on stderr, exit status 2).

mod common;

use common::{error_of, stdout_of, temp_file};

const CHURNED_BUDDYINFO: [&str; 9] = [
    "proc",
    "buddyinfo",
    "--mem",
    "4G",
    "--nodes",
    "2",
    "--churn",
    "100000",
    "--seed",
];

#[test]
fn churned_buddyinfo_is_deterministic_per_seed() {
    let with_seed = |seed: &str| {
        let mut args = CHURNED_BUDDYINFO.to_vec();
        args.push(seed);
        stdout_of(&args)
    };
    let first = with_seed("1");
    let lines: Vec<&str> = first.lines().collect();
    assert_eq!(lines.len(), 2, "{first}");
    assert!(lines[0].starts_with("Node 0, zone   Normal "), "{first}");
    assert!(lines[1].starts_with("Node 1, zone   Normal "), "{first}");
    assert_eq!(first, with_seed("1"));
    assert_ne!(first, with_seed("2"));
}

#[test]
fn proc_prints_several_views_with_headers() {
    let out = stdout_of(&["proc", "buddyinfo,vmstat", "--mem", "1G"]);
    assert!(
        out.starts_with("==> /proc/buddyinfo <==\nNode 0, zone   Normal"),
        "{out}"
    );
    assert!(
        out.contains("\n==> /proc/vmstat <==\nnr_free_pages "),
        "{out}"
    );
}

/// `proc meminfo` on a fresh machine: everything free, nothing cached;
/// after `--aging` runs the page cache holds most of the memory, the
/// other views show the aged machine, vmstat gains the reclaim counters,
/// and the same seed prints the same bytes.
#[test]
fn proc_meminfo_shows_the_machine_fresh_and_aged() {
    let kb = |text: &str, label: &str| -> u64 {
        let line = text.lines().find(|line| line.starts_with(label));
        let line = line.unwrap_or_else(|| panic!("no {label} in\n{text}"));
        line[label.len()..]
            .trim()
            .trim_end_matches(" kB")
            .parse()
            .unwrap()
    };
    let fresh = stdout_of(&["proc", "meminfo", "--mem", "64M"]);
    assert_eq!(kb(&fresh, "MemTotal:"), 65536, "{fresh}");
    assert_eq!(kb(&fresh, "MemFree:"), 65536, "{fresh}");
    assert_eq!(kb(&fresh, "Cached:"), 0, "{fresh}");
    let aged_args = [
        "proc",
        "meminfo,buddyinfo,vmstat",
        "--mem",
        "64M",
        "--aging",
        "2",
    ];
    let aged = stdout_of(&aged_args);
    assert!(kb(&aged, "Cached:") > 32768, "{aged}");
    assert!(kb(&aged, "MemFree:") < 16384, "{aged}");
    assert!(
        aged.contains("\n==> /proc/buddyinfo <==\nNode 0, zone   Normal"),
        "{aged}"
    );
    assert!(aged.contains("\npgscan_kswapd "), "{aged}");
    assert_eq!(aged, stdout_of(&aged_args));
    let plain_vmstat = stdout_of(&["proc", "vmstat", "--mem", "64M"]);
    assert!(!plain_vmstat.contains("pgscan_kswapd"), "{plain_vmstat}");
    assert!(error_of(&["proc", "meminfo", "--aging", "10001"]).contains("--aging 10001"));
    assert!(error_of(&["proc", "meminfo", "--aging", "-1"]).contains("'-1'"));
    assert!(error_of(&["proc", "meminfo", "--aging", "1", "--churn", "9"]).contains("--churn"));
}

#[test]
fn proc_boots_the_example_config_with_flags_on_top() {
    let config = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/machines/two-node.toml"
    );
    let out = stdout_of(&[
        "proc",
        "zoneinfo",
        "--config",
        config,
        "--cmdline",
        "movablecore=4G",
    ]);
    assert!(out.contains("Node 1, zone  Movable"), "{out}");
}

#[test]
fn info_boots_a_terabyte() {
    let out = stdout_of(&["info", "--mem", "1T", "--nodes", "4", "--cpus", "16"]);
    assert!(
        out.contains("machine: 4 node(s), 16 CPU(s), 1T present"),
        "{out}"
    );
    for needle in [
        "node 3: CPUs 12-15",
        "zone Normal",
        "boot time:",
        "metadata:",
        "resident set:",
        "min_free_kbytes: 131072",
    ] {
        assert!(out.contains(needle), "{needle} missing from:\n{out}");
    }
}

#[test]
fn help_exits_zero() {
    for args in [
        &["--help"][..],
        &["run", "--help"],
        &["proc", "--help"],
        &["info", "--help"],
    ] {
        let out = stdout_of(args);
        assert!(out.contains("Usage:"), "{out}");
    }
}

#[test]
fn bad_machines_are_one_line_errors() {
    assert!(error_of(&["info", "--mem", "0"]).contains("node[0].mem"));
    assert!(error_of(&["info", "--mem", "12X"]).contains("--mem: '12X' is not a size"));
    assert!(error_of(&["info", "--nodes", "0"]).contains("--nodes"));
    assert!(error_of(&["proc", "buddyinfo", "--cmdline", "bogus=1"])
        .contains("unknown parameter 'bogus'"));
    assert!(error_of(&["info", "--page-size", "3K"]).contains("--page-size"));
    assert!(error_of(&["info", "--nodes", "many"]).contains("--nodes"));
}

#[test]
fn bad_config_files_are_one_line_errors() {
    let unknown_key = temp_file(
        "unknown-key.toml",
        "[[node]]\nmem = \"1G\"\ncpus = 1\nbogus = 2\n",
    );
    let message = error_of(&["info", "--config", unknown_key.to_str().unwrap()]);
    assert!(
        message.contains("config node[0].bogus: unknown key"),
        "{message}"
    );
    let wrong_shape = temp_file(
        "wrong-shape.toml",
        "distance = [[10, 20]]\n[[node]]\nmem = \"1G\"\ncpus = 1\n[[node]]\nmem = \"1G\"\n",
    );
    let message = error_of(&["info", "--config", wrong_shape.to_str().unwrap()]);
    assert!(
        message.contains("distance: the matrix must be 2x2"),
        "{message}"
    );
    let message = error_of(&["info", "--config", "/nonexistent/pageframe.toml"]);
    assert!(
        message.contains("cannot read /nonexistent/pageframe.toml"),
        "{message}"
    );
}

#[test]
fn bad_names_are_one_line_errors() {
    assert!(error_of(&["proc", "nosuchview"]).contains("unknown view 'nosuchview'"));
    assert!(error_of(&["proc", "buddyinfo,"]).contains("unknown view ''"));
    assert!(
        error_of(&["run", "nosuchexperiment"]).contains("unknown experiment 'nosuchexperiment'")
    );
    assert!(error_of(&["run", "all", "--format", "xml"]).contains("unknown format 'xml'"));
    assert!(error_of(&["run", "all", "--scale", "huge"]).contains("unknown scale 'huge'"));
    assert!(error_of(&["run", "all", "--seed", "x"]).contains("for '--seed <SEED>'"));
    assert!(
        error_of(&["run", "zram-untar", "--corpus", "/nonexistent/linux.tar.xz"])
            .contains("--corpus /nonexistent/linux.tar.xz: not a file")
    );
    error_of(&["nosuchcommand"]);
    error_of(&[]);
    let missing = error_of(&["run"]);
    assert!(
        missing.contains("not provided: <EXPERIMENTS> (usage: pageframe run <EXPERIMENTS>)"),
        "{missing}"
    );
    assert!(error_of(&["run", "bulk,nosuch"]).contains("unknown experiment 'nosuch' (known: bulk,"));
}

#[test]
fn proc_shuffle_prints_y_or_n_and_hotplug_steps_apply() {
    assert_eq!(stdout_of(&["proc", "shuffle"]), "N\n");
    assert_eq!(
        stdout_of(&["proc", "shuffle", "--cmdline", "page_alloc.shuffle=1"]),
        "Y\n"
    );
    assert_eq!(
        stdout_of(&[
            "proc",
            "shuffle",
            "--cmdline",
            "page_alloc.shuffle=0 page_alloc.shuffle=1"
        ]),
        "N\n"
    );
    let example = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/machines/hotplug.toml"
    );
    let buddyinfo = stdout_of(&["proc", "buddyinfo", "--config", example]);
    assert!(buddyinfo.contains("Node 1, zone  Movable"), "{buddyinfo}");
    let overlap = temp_file(
        "hotplug-overlap.toml",
        "[[node]]\nmem = \"1G\"\ncpus = 1\n[[hotplug]]\naction = \"online\"\nstart = \"512M\"\nsize = \"512M\"\n",
    );
    let message = error_of(&["proc", "buddyinfo", "--config", overlap.to_str().unwrap()]);
    assert!(
        message.contains("hotplug[0]") && message.contains("EINVAL"),
        "{message}"
    );
}
