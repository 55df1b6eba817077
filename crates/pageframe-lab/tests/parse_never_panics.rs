//! Property tests of the lab's parsers over arbitrary input: machine files,
//! experiment config files and kernel command lines never panic, and every
//! error is one line. Inputs are drawn from the keys and values the formats
//! know (so that most reach deep validation), mixed with arbitrary text.

use pageframe::machine::apply_cmdline;
use pageframe::MachineDesc;
use pageframe_lab::experiments::{self, Scale};
use pageframe_lab::machine_args::{parse_machine_file, MachineArgs};
use pageframe_lab::params::ConfigFile;
use proptest::prelude::*;
use std::path::PathBuf;

/// Sizes as users write them, the edges included.
fn size() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("0".to_string()),
        Just("1".to_string()),
        Just("4096".to_string()),
        Just("18446744073709551615".to_string()),
        Just("16E".to_string()),
        Just("-1G".to_string()),
        (
            0u64..5000,
            prop::sample::select(vec!["", "K", "M", "G", "T", "P", "%", "k", "x"])
        )
            .prop_map(|(n, unit)| format!("{n}{unit}")),
        "[0-9A-Za-z%.]{0,8}",
    ]
}

/// A kernel command line from the parameters the simulation reads.
fn cmdline() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        size().prop_map(|size| format!("mem={size}")),
        size().prop_map(|size| format!("movablecore={size}")),
        size().prop_map(|size| format!("kernelcore={size}")),
        Just("kernelcore=mirror".to_string()),
        (0u64..3000, prop::bool::ANY)
            .prop_map(|(n, u)| format!("numa=fake={n}{}", if u { "U" } else { "" })),
        size().prop_map(|size| format!("numa=fake={size}")),
        "[0-9a-z]{0,3}".prop_map(|value| format!("page_alloc.shuffle={value}")),
        (0u64..100).prop_map(|order| format!("page_alloc.shuffle_order={order}")),
        "[ -~]{0,12}",
    ];
    prop::collection::vec(token, 0..5).prop_map(|tokens| tokens.join(" "))
}

/// A TOML value of any kind, shallow.
fn toml_value() -> impl Strategy<Value = String> {
    prop_oneof![
        size().prop_map(|size| format!("\"{size}\"")),
        any::<i64>().prop_map(|n| n.to_string()),
        (0i64..70).prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|x| format!("{x:?}")),
        prop::bool::ANY.prop_map(|b| b.to_string()),
        prop::collection::vec(0u32..70_000, 0..4).prop_map(|ids| format!("{ids:?}")),
        Just("[[10, 20], [20, 10]]".to_string()),
        Just("[[10]]".to_string()),
        Just("[[0, 255], [255, 0]]".to_string()),
        cmdline().prop_map(|line| format!("{line:?}")),
        "\"[a-z+]{0,10}\"",
    ]
}

/// A machine file: top-level keys, then node and hotplug tables.
fn machine_file() -> impl Strategy<Value = String> {
    let top_key = prop::sample::select(vec![
        "page_size",
        "max_order",
        "pageblock_order",
        "dma32",
        "cmdline",
        "distance",
        "bogus",
    ]);
    let node_key = prop::sample::select(vec!["mem", "cpus", "ranges", "bogus"]);
    let hotplug_key = prop::sample::select(vec!["action", "start", "size", "node", "zone"]);
    let node = prop::collection::vec(
        prop_oneof![
            (node_key, toml_value()).prop_map(|(key, value)| format!("{key} = {value}")),
            (size(), size()).prop_map(|(start, size)| format!(
                "ranges = [{{ start = \"{start}\", size = \"{size}\" }}]"
            )),
        ],
        0..3,
    )
    .prop_map(|lines| format!("[[node]]\n{}\n", lines.join("\n")));
    let hotplug = prop::collection::vec(
        prop_oneof![
            (hotplug_key, toml_value()).prop_map(|(key, value)| format!("{key} = {value}")),
            prop::sample::select(vec!["online", "offline", "remove", "x"])
                .prop_map(|action| format!("action = \"{action}\"")),
            prop::sample::select(vec!["normal", "movable", "dma32", "x"])
                .prop_map(|zone| format!("zone = \"{zone}\"")),
            (0u64..300).prop_map(|node| format!("node = {node}")),
        ],
        0..5,
    )
    .prop_map(|lines| format!("[[hotplug]]\n{}\n", lines.join("\n")));
    (
        prop::collection::vec(
            (top_key, toml_value()).prop_map(|(key, value)| format!("{key} = {value}")),
            0..4,
        ),
        prop::collection::vec(node, 0..4),
        prop::collection::vec(hotplug, 0..2),
    )
        .prop_map(|(top, nodes, hotplugs)| {
            format!(
                "{}\n{}{}",
                top.join("\n"),
                nodes.concat(),
                hotplugs.concat()
            )
        })
}

/// An experiment config file: tables named after experiments (or not) with
/// their keys (or not).
fn experiment_config() -> impl Strategy<Value = String> {
    let mut tables: Vec<String> = experiments::names().iter().map(|n| n.to_string()).collect();
    tables.push("nosuch".into());
    let mut keys: Vec<String> = experiments::ALL
        .iter()
        .flat_map(|experiment| experiment.params(Scale::Full))
        .map(|param| param.key.to_string())
        .collect();
    keys.push("bogus".into());
    let table = (
        prop::sample::select(tables),
        prop::collection::vec(
            (prop::sample::select(keys), toml_value())
                .prop_map(|(key, value)| format!("{key} = {value}")),
            0..6,
        ),
    )
        .prop_map(|(name, lines)| format!("[{name}]\n{}\n", lines.join("\n")));
    prop::collection::vec(table, 0..3).prop_map(|tables| tables.concat())
}

fn one_line(message: &str) -> bool {
    !message.is_empty() && !message.contains('\n')
}

/// A machine file on disk, unique per process.
fn temp_file(text: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!(
        "pageframe-parse-props-{}-{:?}.toml",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::write(&path, text).unwrap();
    path
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn machine_files_parse_or_fail_in_one_line(text in prop_oneof![machine_file(), "[ -~\n]{0,80}"]) {
        match parse_machine_file(&text) {
            Ok(file) => {
                // The file alone lays out or fails in one line.
                if let Err(err) = file.desc.layout() {
                    prop_assert!(one_line(&err.to_string()), "{err}");
                }
            }
            Err(err) => prop_assert!(one_line(&err.to_string()), "{err}"),
        }
    }

    #[test]
    fn experiment_configs_parse_or_fail_in_one_line(
        text in prop_oneof![experiment_config(), "[ -~\n]{0,80}"],
        full in prop::bool::ANY,
    ) {
        let scale = if full { Scale::Full } else { Scale::Quick };
        match ConfigFile::parse("c.toml", &text, &experiments::names()) {
            Ok(file) => {
                for experiment in experiments::ALL {
                    match file.params(experiment.name(), &experiment.params(scale)) {
                        Ok(params) => {
                            if let Err(err) = experiment.check(&params) {
                                prop_assert!(one_line(&err.to_string()), "{err}");
                            }
                        }
                        Err(err) => prop_assert!(one_line(&err.to_string()), "{err}"),
                    }
                }
            }
            Err(err) => prop_assert!(one_line(&err.to_string()), "{err}"),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn kernel_command_lines_apply_or_fail_in_one_line(
        line in cmdline(),
        mem_gib in 1u64..64,
        nodes in 1usize..5,
    ) {
        let mut desc = MachineDesc::uniform(mem_gib << 30, nodes, 4).unwrap();
        match apply_cmdline(&mut desc, &line) {
            Ok(()) => {
                if let Err(err) = desc.layout() {
                    prop_assert!(one_line(&err.to_string()), "{err}");
                }
            }
            Err(err) => prop_assert!(one_line(&err.to_string()), "{err}"),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// The whole path of `--config` and the flags: file, flags, command line.
    #[test]
    fn machine_args_never_panic(
        text in machine_file(),
        mem in prop::option::of(size()),
        nodes in prop::option::of(0usize..300),
        cpus in prop::option::of(0usize..70_000),
        line in prop::option::of(cmdline()),
        max_order in prop::option::of(0u8..30),
    ) {
        let path = temp_file(&text);
        let args = MachineArgs {
            config: Some(path.clone()),
            mem,
            nodes,
            cpus,
            cmdline: line,
            max_order,
            ..MachineArgs::default()
        };
        let result = args.to_desc();
        std::fs::remove_file(&path).unwrap();
        if let Err(err) = result {
            prop_assert!(one_line(&err.to_string()), "{err}");
        }
    }
}
