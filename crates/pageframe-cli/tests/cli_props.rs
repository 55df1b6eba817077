//! Property test of the real binary: arbitrary flags, machine files,
//! experiment config files and kernel command lines end with exit status 0
//! (nothing on stderr) or 2 (exactly one line, `pageframe: ...`), never a
//! panic or a signal. Machines stay small and experiments are never started
//! (their names are always wrong), so each case takes milliseconds; the
//! parsers themselves get thousands of cases in process.

mod common;

use proptest::prelude::*;
use std::process::Command;

fn size() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "0", "1", "64K", "2M", "1G", "4G", "-1G", "16E", "x", "50%"
        ])
        .prop_map(str::to_string),
        (1u64..8, prop::sample::select(vec!["", "K", "M", "G"]))
            .prop_map(|(n, unit)| format!("{n}{unit}")),
    ]
}

fn cmdline() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        size().prop_map(|size| format!("mem={size}")),
        size().prop_map(|size| format!("movablecore={size}")),
        size().prop_map(|size| format!("kernelcore={size}")),
        (0u64..40, prop::bool::ANY)
            .prop_map(|(n, u)| format!("numa=fake={n}{}", if u { "U" } else { "" })),
        "[0-9a-z]{0,2}".prop_map(|value| format!("page_alloc.shuffle={value}")),
        "[ -~]{0,8}",
    ];
    prop::collection::vec(token, 0..4).prop_map(|tokens| tokens.join(" "))
}

fn machine_file() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        size().prop_map(|size| format!("[[node]]\nmem = \"{size}\"\ncpus = 1")),
        (size(), size()).prop_map(|(start, size)| format!(
            "[[node]]\nranges = [{{ start = \"{start}\", size = \"{size}\" }}]"
        )),
        cmdline().prop_map(|line| format!("cmdline = {line:?}")),
        (0u8..25).prop_map(|order| format!("max_order = {order}")),
        (0u8..25).prop_map(|order| format!("pageblock_order = {order}")),
        prop::sample::select(vec!["\"4K\"", "\"64K\"", "\"3K\"", "4096", "true"])
            .prop_map(|size| format!("page_size = {size}")),
        Just("distance = [[10, 20], [20, 10]]".to_string()),
        (size(), size(), 0u64..4, prop::sample::select(vec!["online", "offline", "x"]))
            .prop_map(|(start, size, node, action)| format!(
                "[[hotplug]]\naction = \"{action}\"\nstart = \"{start}\"\nsize = \"{size}\"\nnode = {node}\nzone = \"movable\""
            )),
        "[ -~]{0,16}",
    ];
    // Top-level keys must come before the first table to stay top-level.
    prop::collection::vec(line, 0..5).prop_map(|mut lines| {
        lines.sort_by_key(|line| line.starts_with('['));
        lines.join("\n")
    })
}

fn experiment_config() -> impl Strategy<Value = String> {
    let table = prop::sample::select(vec!["bulk", "scaling", "numa-balancing", "zram-untar", "x"]);
    let key = prop::sample::select(vec![
        "rounds",
        "pages_per_round",
        "duration_s",
        "sample_s",
        "node_mib",
        "eater_mib",
        "pattern",
        "sample_one_in",
        "bogus",
    ]);
    let value = prop_oneof![
        any::<i64>().prop_map(|n| n.to_string()),
        (0i64..10_000).prop_map(|n| n.to_string()),
        Just("\"zipf\"".to_string()),
        Just("1.5".to_string()),
        Just("true".to_string()),
    ];
    prop::collection::vec((table, prop::collection::vec((key, value), 0..4)), 0..3).prop_map(
        |tables| {
            tables
                .into_iter()
                .map(|(name, keys)| {
                    let lines: Vec<String> = keys
                        .into_iter()
                        .map(|(key, value)| format!("{key} = {value}"))
                        .collect();
                    format!("[{name}]\n{}\n", lines.join("\n"))
                })
                .collect()
        },
    )
}

/// The case: a command and its arguments.
#[derive(Clone, Debug)]
enum Case {
    /// `proc VIEWS` or `info` over a machine from a file, flags and a
    /// command line.
    Machine {
        proc_views: Option<String>,
        file: Option<String>,
        flags: Vec<String>,
    },
    /// `run` of a misspelt experiment with a config file and flags: checked
    /// up to the name, never run.
    Run { config: String, flags: Vec<String> },
    /// `config` of some names at a scale.
    Config { names: String, scale: String },
}

fn case() -> impl Strategy<Value = Case> {
    let machine_flags = prop::collection::vec(
        prop_oneof![
            size().prop_map(|size| vec!["--mem".to_string(), size]),
            (0u64..6).prop_map(|n| vec!["--nodes".to_string(), n.to_string()]),
            (0u64..6).prop_map(|n| vec!["--cpus".to_string(), n.to_string()]),
            cmdline().prop_map(|line| vec!["--cmdline".to_string(), line]),
            (0u64..300).prop_map(|n| vec!["--max-order".to_string(), n.to_string()]),
            prop::sample::select(vec!["4K", "64K", "8K", "1"])
                .prop_map(|size| vec!["--page-size".to_string(), size.to_string()]),
            prop::sample::select(vec!["0", "5000", "18446744073709551615", "x"])
                .prop_map(|ops| vec!["--churn".to_string(), ops.to_string()]),
            Just(vec!["--dma32".to_string()]),
            "[ -~]{0,6}".prop_map(|text| vec![text]),
        ],
        0..4,
    )
    .prop_map(|flags| flags.concat());
    let views = prop::sample::select(vec![
        "buddyinfo",
        "zoneinfo,vmstat",
        "pagetypeinfo",
        "shuffle",
        "slabinfo",
        "zs-classes",
        "buddyinfo,",
        "nosuch",
    ]);
    prop_oneof![
        (
            prop::option::of(views),
            prop::option::of(machine_file()),
            machine_flags
        )
            .prop_map(|(proc_views, file, flags)| Case::Machine {
                proc_views: proc_views.map(str::to_string),
                file,
                flags
            }),
        (
            experiment_config(),
            prop::collection::vec(
                prop::sample::select(vec![
                    "--scale", "full", "--format", "xml", "--seed", "-3", "--quiet"
                ]),
                0..3
            )
        )
            .prop_map(|(config, flags)| Case::Run {
                config,
                flags: flags.into_iter().map(str::to_string).collect()
            }),
        (
            prop::sample::select(vec![
                "bulk",
                "all",
                "scaling,zram-untar",
                "nosuch",
                "bulk,",
                ""
            ]),
            prop::sample::select(vec!["quick", "full", "huge"])
        )
            .prop_map(|(names, scale)| Case::Config {
                names: names.to_string(),
                scale: scale.to_string()
            }),
    ]
}

fn arguments(case: &Case) -> Vec<String> {
    match case {
        Case::Machine {
            proc_views,
            file,
            flags,
        } => {
            let mut args = match proc_views {
                Some(views) => vec!["proc".to_string(), views.clone()],
                None => vec!["info".to_string()],
            };
            if let Some(text) = file {
                let path = common::temp_file("machine.toml", text);
                args.extend(["--config".to_string(), path.display().to_string()]);
            }
            args.extend(flags.iter().cloned());
            args
        }
        Case::Run { config, flags } => {
            let path = common::temp_file("experiments.toml", config);
            let mut args = vec![
                "run".to_string(),
                "bulk,no-such-experiment".to_string(),
                "--config".to_string(),
                path.display().to_string(),
            ];
            args.extend(flags.iter().cloned());
            args
        }
        Case::Config { names, scale } => {
            vec![
                "config".to_string(),
                names.clone(),
                "--scale".to_string(),
                scale.clone(),
            ]
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn the_binary_exits_0_or_2_with_one_line(case in case()) {
        let args = arguments(&case);
        let output = Command::new(common::BINARY)
            .args(&args)
            .output()
            .expect("the pageframe binary runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        match output.status.code() {
            Some(0) => prop_assert!(stderr.is_empty(), "{args:?}: {stderr}"),
            Some(2) => {
                prop_assert_eq!(stderr.lines().count(), 1, "{:?}: {}", args, stderr);
                prop_assert!(stderr.starts_with("pageframe: "), "{args:?}: {stderr}");
            }
            other => prop_assert!(false, "{args:?}: exit {other:?}: {stderr}"),
        }
    }
}
