//! Tests of `machine_args`.

use super::*;
use pageframe::{LocalPageAllocator, ZoneType};

fn flags() -> MachineArgs {
    MachineArgs::default()
}

fn error_field(args: &MachineArgs) -> String {
    args.to_desc().unwrap_err().field
}

fn file_error(text: &str) -> String {
    parse_machine_file(text).unwrap_err().to_string()
}

/// A file in the temp directory, unique per test.
fn temp_file(name: &str, text: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!(
        "pageframe-machine-args-{}-{name}.toml",
        std::process::id()
    ));
    std::fs::write(&path, text).unwrap();
    path
}

const TWO_NODES: &str = r#"
    dma32 = false
    cmdline = "movablecore=2G"
    distance = [[10, 21], [21, 10]]
    [[node]]
    mem = "8G"
    cpus = [0, 1]
    [[node]]
    ranges = [{ start = "8G", size = "4G" }, { start = "16G", size = "4G" }]
    cpus = 2
"#;

#[test]
fn nothing_given_is_the_default_machine() {
    assert_eq!(
        flags().to_desc().unwrap(),
        MachineDesc::uniform(4 << 30, 1, 2).unwrap()
    );
}

#[test]
fn flags_build_a_uniform_machine() {
    let args = MachineArgs {
        mem: Some("64G".into()),
        nodes: Some(4),
        cpus: Some(8),
        ..flags()
    };
    assert_eq!(
        args.to_desc().unwrap(),
        MachineDesc::uniform(64 << 30, 4, 8).unwrap()
    );
}

#[test]
fn geometry_flags_are_applied_and_memory_realigned() {
    let args = MachineArgs {
        mem: Some("3G".into()),
        nodes: Some(2),
        page_size: Some("64K".into()),
        max_order: Some(11),
        pageblock_order: Some(10),
        dma32: true,
        ..flags()
    };
    let desc = args.to_desc().unwrap();
    assert_eq!(
        (desc.page_shift, desc.max_order, desc.pageblock_order),
        (16, 11, 10)
    );
    assert!(desc.dma32);
    let block = 64u64 << 20;
    for node in &desc.nodes {
        assert!(node
            .ranges
            .iter()
            .all(|r| r.start % block == 0 && r.size % block == 0));
    }
    assert_eq!(desc.nodes[0].ranges[0].size, 1536 << 20);
}

#[test]
fn cmdline_is_applied_last() {
    let args = MachineArgs {
        mem: Some("32G".into()),
        cmdline: Some("movablecore=2G mem=16G".into()),
        ..flags()
    };
    let desc = args.to_desc().unwrap();
    assert_eq!(desc.total_bytes(), 32 << 30);
    assert_eq!(
        (desc.movablecore, desc.mem_limit),
        (Some(2 << 30), Some(16 << 30))
    );
}

#[test]
fn flag_errors_name_the_flag() {
    let bad_size = MachineArgs {
        mem: Some("12X".into()),
        ..flags()
    };
    assert_eq!(error_field(&bad_size), "--mem");
    assert_eq!(
        error_field(&MachineArgs {
            nodes: Some(0),
            ..flags()
        }),
        "--nodes"
    );
    assert_eq!(
        error_field(&MachineArgs {
            cpus: Some(0),
            ..flags()
        }),
        "--cpus"
    );
    let odd_page = MachineArgs {
        page_size: Some("5000".into()),
        ..flags()
    };
    assert_eq!(error_field(&odd_page), "--page-size");
    let huge_page = MachineArgs {
        page_size: Some("1M".into()),
        ..flags()
    };
    assert_eq!(error_field(&huge_page), "page_size");
    let zero = MachineArgs {
        mem: Some("0".into()),
        ..flags()
    };
    assert_eq!(error_field(&zero), "node[0].mem");
    let order = MachineArgs {
        pageblock_order: Some(11),
        ..flags()
    };
    assert_eq!(error_field(&order), "pageblock_order");
    let absurd = MachineArgs {
        mem: Some("1G".into()),
        page_size: Some("1P".into()),
        pageblock_order: Some(255),
        ..flags()
    };
    assert_eq!(error_field(&absurd), "page_size");
    let big_order = MachineArgs {
        mem: Some("2M".into()),
        ..flags()
    };
    assert_eq!(error_field(&big_order), "node[0].mem");
}

#[test]
fn cmdline_errors_name_the_parameter() {
    let bogus = MachineArgs {
        cmdline: Some("bogus=1".into()),
        ..flags()
    };
    assert_eq!(error_field(&bogus), "cmdline");
    let bad = MachineArgs {
        cmdline: Some("mem=1Q".into()),
        ..flags()
    };
    assert_eq!(error_field(&bad), "cmdline mem");
    let too_much = MachineArgs {
        cmdline: Some("movablecore=8G".into()),
        ..flags()
    };
    assert_eq!(error_field(&too_much), "movablecore");
}

#[test]
fn file_describes_nodes_ranges_and_cpus() {
    let file = parse_machine_file(TWO_NODES).unwrap();
    assert_eq!(file.cmdline.as_deref(), Some("movablecore=2G"));
    let desc = file.desc;
    assert_eq!(
        desc.nodes[0].ranges,
        vec![MemRange {
            start: 0,
            size: 8 << 30
        }]
    );
    assert_eq!(desc.nodes[1].ranges.len(), 2);
    assert_eq!(desc.nodes[1].cpus, vec![CpuId(2), CpuId(3)]);
    assert_eq!(desc.distance(0, 1), 21);
}

#[test]
fn mem_nodes_follow_each_other_and_counts_follow_ids() {
    let desc = parse_machine_file(
        "[[node]]\nmem = \"2G\"\ncpus = 1\n[[node]]\nmem = 1073741824\n[[node]]\nmem = \"1G\"\ncpus = 2\n",
    )
    .unwrap()
    .desc;
    assert_eq!(
        desc.nodes[1].ranges[0],
        MemRange {
            start: 2 << 30,
            size: 1 << 30
        }
    );
    assert_eq!(desc.nodes[2].ranges[0].start, 3 << 30);
    assert!(desc.nodes[1].cpus.is_empty());
    assert_eq!(desc.nodes[2].cpus, vec![CpuId(1), CpuId(2)]);
}

#[test]
fn file_errors_name_their_key() {
    assert_eq!(
        file_error("[[node]]\nmem = \"1G\"\n[[node]]\nmem = \"1G\"\nbogus = 3\n"),
        "config node[1].bogus: unknown key, expected one of `mem`, `ranges`, `cpus`"
    );
    assert!(file_error("colour = 1\n").starts_with("config colour: unknown key"));
    assert!(file_error("max_order = \"ten\"\n").starts_with("config max_order: invalid type"));
    assert!(file_error("[[node]]\nmem = \"12X\"\n").starts_with("config node[0].mem: '12X'"));
    assert!(file_error("[[node]]\nmem = true\n").starts_with("config node[0].mem: a size"));
    assert!(
        file_error("[[node]]\nranges = [{ start = 0, size = \"1G\", x = 1 }]\n")
            .starts_with("config node[0].ranges[0].x: unknown key")
    );
    assert!(file_error("[[node]]\nranges = [{ start = 0 }]\n")
        .starts_with("config node[0].ranges[0]: missing field `size`"));
    assert!(file_error("distance = [[10, 300]]\n").starts_with("config distance[0][1]:"));
    assert!(
        file_error("[[node]]\ncpus = \"two\"\n").starts_with("config node[0].cpus: a CPU count")
    );
    assert!(file_error("[[node]\n").starts_with("config: line 1:"));
    assert!(
        file_error("[[node]]\nmem = \"1G\"\nranges = []\n").starts_with("config node[0]: give mem")
    );
    assert!(file_error("page_size = \"3K\"\n").starts_with("config page_size: '3K'"));
    for text in [TWO_NODES, "[[node]]\nmem = \"1G\"\nbogus = 3\n"] {
        assert_eq!(
            parse_machine_file(text)
                .map_err(|e| e.to_string().lines().count())
                .err()
                .unwrap_or(1),
            1
        );
    }
}

#[test]
fn file_values_are_validated_by_the_layout() {
    let wrong_shape = temp_file(
        "shape",
        "distance = [[10]]\n[[node]]\nmem = \"1G\"\ncpus = 1\n[[node]]\nmem = \"1G\"\n",
    );
    let args = MachineArgs {
        config: Some(wrong_shape),
        ..flags()
    };
    assert_eq!(error_field(&args), "distance");
    let overlap = temp_file(
        "overlap",
        "[[node]]\nmem = \"2G\"\ncpus = 1\n[[node]]\nranges = [{ start = \"1G\", size = \"2G\" }]\n",
    );
    assert_eq!(
        error_field(&MachineArgs {
            config: Some(overlap),
            ..flags()
        }),
        "node[1].mem"
    );
    let no_cpu = temp_file("nocpu", "[[node]]\nmem = \"1G\"\ncpus = [1]\n");
    assert_eq!(
        error_field(&MachineArgs {
            config: Some(no_cpu),
            ..flags()
        }),
        "cpus"
    );
    let bad_cmdline = temp_file(
        "cmdline",
        "cmdline = \"bogus=1\"\n[[node]]\nmem = \"1G\"\ncpus = 1\n",
    );
    assert_eq!(
        error_field(&MachineArgs {
            config: Some(bad_cmdline),
            ..flags()
        }),
        "config cmdline"
    );
    let missing = MachineArgs {
        config: Some("/nonexistent/machine.toml".into()),
        ..flags()
    };
    assert_eq!(error_field(&missing), "config");
}

#[test]
fn flags_override_the_file_and_cmdline_overrides_both() {
    let path = temp_file("override", TWO_NODES);
    let args = MachineArgs {
        config: Some(path.clone()),
        cpus: Some(8),
        cmdline: Some("movablecore=4G".into()),
        ..flags()
    };
    let desc = args.to_desc().unwrap();
    assert_eq!(desc.nr_cpus(), 8);
    assert_eq!(desc.nodes.len(), 2);
    assert_eq!(desc.total_bytes(), 16 << 30);
    assert_eq!(
        desc.distance(0, 1),
        21,
        "same node count keeps the distances"
    );
    assert_eq!(desc.movablecore, Some(4 << 30));
    let regrown = MachineArgs {
        config: Some(path),
        nodes: Some(4),
        ..flags()
    };
    let desc = regrown.to_desc().unwrap();
    assert_eq!((desc.nodes.len(), desc.distances.clone()), (4, None));
}

#[test]
fn example_two_node_file_parses_and_boots() {
    let path = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/machines/two-node.toml"
    ));
    let desc = MachineArgs {
        config: Some(path),
        ..flags()
    }
    .to_desc()
    .unwrap();
    assert_eq!(desc.nodes.len(), 2);
    let allocator = LocalPageAllocator::boot(&desc).unwrap();
    assert!(allocator
        .zone_snapshots()
        .iter()
        .any(|zone| zone.zone_type == ZoneType::Movable && zone.is_populated()));
    allocator.check_invariants().unwrap();
}

#[test]
fn example_pc_file_has_the_hosts_low_zones() {
    let path = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/machines/pc-e820.toml"
    ));
    let desc = MachineArgs {
        config: Some(path),
        ..flags()
    }
    .to_desc()
    .unwrap();
    let allocator = LocalPageAllocator::boot(&desc).unwrap();
    let sizes: Vec<(u64, u64, u64)> = allocator
        .zone_snapshots()
        .iter()
        .map(|zone| (zone.spanned, zone.present, zone.managed))
        .collect();
    // The host's DMA and DMA32 spanned/present, DMA's managed; DMA32 less
    // the 48 MiB reserved at 16 MiB.
    assert_eq!(sizes[0], (4095, 3998, 3840));
    assert_eq!(sizes[1], (1044480, 782336, 782336 - 12288));
    allocator.check_invariants().unwrap();
}

/// A machine whose memmap and pageblock table are more than the host has
/// available is refused naming the sizes; unknown availability passes.
#[test]
fn a_machine_past_the_hosts_memory_is_refused() {
    let layout = MachineDesc::uniform(1 << 40, 1, 2)
        .unwrap()
        .layout()
        .unwrap();
    let cost = MetadataCost::for_layout(&layout);
    assert_eq!(cost.memmap_records, 1 << 28);
    assert_eq!(cost.pageblocks, (1 << 19) + 1);
    assert!(check_host_holds(&layout, Some(cost.total_bytes())).is_ok());
    assert!(check_host_holds(&layout, None).is_ok());
    let err = check_host_holds(&layout, Some(cost.total_bytes() - 1)).unwrap_err();
    assert_eq!(err.field, "mem");
    assert!(err.message.contains("3.0 GiB (12 B per page)"), "{err}");
    // The booted allocator reports the same cost.
    let small = MachineDesc::uniform(64 << 20, 1, 2).unwrap();
    let allocator = LocalPageAllocator::boot(&small).unwrap();
    assert_eq!(
        allocator.metadata_cost(),
        MetadataCost::for_layout(&small.layout().unwrap())
    );
}

/// A `--mem` past the 2^32 pages a memmap indexes names the flag and the
/// limit for the page size, rather than the node range it would make.
#[test]
fn a_memory_past_the_pfn_limit_names_the_flag() {
    let args = MachineArgs {
        mem: Some("1E".into()),
        ..flags()
    };
    let err = args.to_desc().unwrap_err();
    assert_eq!(err.field, "--mem");
    assert!(
        err.message
            .contains("2^32 - 2 pages of 4K (just under 16T)"),
        "{err}"
    );
    let args = MachineArgs {
        mem: Some("1E".into()),
        page_size: Some("64K".into()),
        ..flags()
    };
    assert!(args
        .to_desc()
        .unwrap_err()
        .message
        .contains("of 64K (just under 256T)"));
}

/// A CPU id past 65535 in a list is named with the limit, as a count
/// reaching past it is.
#[test]
fn a_cpu_id_past_the_limit_is_named() {
    let err = file_error("[[node]]\nmem = \"1G\"\ncpus = [0, 70000]\n");
    assert_eq!(err, "config node[0].cpus: CPU id 70000 is past 65535");
    let err = file_error("[[node]]\nmem = \"1G\"\ncpus = [-1]\n");
    assert!(err.contains("(0 to 65535)"), "{err}");
}

/// Hotplug steps that move more than 2^33 pages in all, or whose furthest
/// online end grows the memmap past the host's memory, are refused before
/// booting (8T onlined and offlined in turn ran for hours; a 12T step grew
/// the memmap to 36 GiB).
#[test]
fn hotplug_steps_past_the_time_or_memory_bounds_are_refused() {
    let file = |steps: &str| {
        parse_machine_file(&format!("[[node]]\nmem = \"1G\"\ncpus = 1\n{steps}"))
            .unwrap()
            .desc
    };
    let step = |action: &str, size: &str| {
        format!("[[hotplug]]\naction = \"{action}\"\nstart = \"1G\"\nsize = \"{size}\"\n")
    };
    let churn = file(
        &[step("online", "4T"), step("offline", "4T")]
            .concat()
            .repeat(5),
    );
    let layout = churn.layout().unwrap();
    let err = check_hotplug_steps(&churn, &layout, None).unwrap_err();
    assert_eq!(err.field, "config hotplug");
    assert!(
        err.message
            .contains("10737418240 pages in all, more than 2^33"),
        "{err}"
    );
    let once = file(
        &[step("online", "4T"), step("offline", "4T")]
            .concat()
            .repeat(4),
    );
    assert!(check_hotplug_steps(&once, &layout, None).is_ok());
    // The furthest online step names the metadata it would need.
    let large = file(&[step("online", "1G"), step("online", "12T")].concat());
    let err = check_hotplug_steps(&large, &layout, Some(20 << 30)).unwrap_err();
    assert_eq!(err.field, "config hotplug[1]");
    assert!(
        err.message
            .starts_with("once online, the machine's page metadata takes 36.0 GiB"),
        "{err}"
    );
    assert!(check_hotplug_steps(&large, &layout, Some(40 << 30)).is_ok());
    // A step past 2^32 pages is the allocator's to refuse.
    let past = file(&step("online", "16T"));
    assert!(check_hotplug_steps(&past, &layout, Some(20 << 30)).is_ok());
}

#[test]
fn file_reservations_are_present_but_not_managed() {
    let text = "reserved = [{ start = \"16M\", size = \"3M\" }, { start = 4097, size = 1 }]\n\
                [[node]]\nmem = \"1G\"\ncpus = 2\n";
    let desc = parse_machine_file(text).unwrap().desc;
    assert_eq!(
        desc.reserved,
        [
            MemRange {
                start: 16 << 20,
                size: 3 << 20
            },
            MemRange {
                start: 4097,
                size: 1
            }
        ]
    );
    let zone = desc.layout().unwrap().nodes[0].zones[0].clone();
    assert_eq!(zone.managed_pages(), zone.present_pages() - 768 - 1);
    assert!(
        file_error("reserved = [{ start = \"1G\", size = \"x\" }]\n")
            .starts_with("config reserved[0].size: 'x'")
    );
    let outside = temp_file(
        "reserved",
        "reserved = [{ start = \"1G\", size = \"4K\" }]\n[[node]]\nmem = \"1G\"\ncpus = 1\n",
    );
    assert_eq!(
        error_field(&MachineArgs {
            config: Some(outside),
            ..flags()
        }),
        "reserved[0]"
    );
}
