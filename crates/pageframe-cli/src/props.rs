//! Property test of the command line, in process: arbitrary subcommands,
//! flags and values never panic in parsing or validation, and every error
//! is one line (what `main` prints after `pageframe: `, with exit status 2).
//! Plans are not executed (that would run experiments); the real binary is
//! run on fewer cases in `tests/cli_props.rs`.

use crate::args::{one_line, Cli};
use crate::plan::Plan;
use clap::error::ErrorKind;
use clap::Parser;
use proptest::prelude::*;

/// One argument: a known flag with a value, a bare flag, or any text.
fn argument() -> impl Strategy<Value = Vec<String>> {
    let flag = prop::sample::select(vec![
        "--scale",
        "--seed",
        "--format",
        "--config",
        "--proc",
        "--corpus",
        "--out",
        "--mem",
        "--nodes",
        "--cpus",
        "--cmdline",
        "--max-order",
        "--pageblock-order",
        "--page-size",
        "--churn",
        "--write",
    ]);
    let value = prop_oneof![
        prop::sample::select(vec![
            "quick",
            "full",
            "json",
            "csv",
            "table",
            "xml",
            "4G",
            "64K",
            "1T",
            "0",
            "-1",
            "18446744073709551615",
            "buddyinfo,vmstat",
            "buddyinfo,",
            "slabinfo",
            "/nonexistent",
            "/dev/zero",
            "/dev/null",
            "numa=fake=0",
            "numa=fake=4U",
            "mem=1 movablecore=100%",
            "page_alloc.shuffle=1",
            "bulk,nosuch",
            "all",
            ""
        ])
        .prop_map(str::to_string),
        any::<u64>().prop_map(|n| n.to_string()),
        "[ -~]{0,12}",
    ];
    prop_oneof![
        (flag.clone(), value).prop_map(|(flag, value)| vec![flag.to_string(), value]),
        flag.prop_map(|flag| vec![flag.to_string()]),
        prop::sample::select(vec![
            "--dma32",
            "--arena",
            "--quiet",
            "-q",
            "--help",
            "--version"
        ])
        .prop_map(|flag| vec![flag.to_string()]),
        "[ -~]{0,12}".prop_map(|text| vec![text]),
    ]
}

/// `pageframe <command> <positional> <arguments...>`.
fn command_line() -> impl Strategy<Value = Vec<String>> {
    let command =
        prop::sample::select(vec!["run", "proc", "info", "config", "perf-table", "x", ""]);
    let positional = prop::sample::select(vec![
        "bulk",
        "bulk,scaling",
        "all",
        "nosuch",
        "bulk,",
        ",",
        "buddyinfo",
        "zoneinfo,slabinfo",
        "shuffle",
        "",
    ]);
    (
        command,
        prop::option::of(positional),
        prop::collection::vec(argument(), 0..5),
    )
        .prop_map(|(command, positional, arguments)| {
            let mut line = vec!["pageframe".to_string(), command.to_string()];
            line.extend(positional.map(str::to_string));
            line.extend(arguments.into_iter().flatten());
            line
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn any_command_line_parses_or_fails_in_one_line(line in command_line()) {
        match Cli::try_parse_from(&line) {
            Err(err) if matches!(err.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {}
            Err(err) => {
                let message = one_line(&err);
                prop_assert!(!message.is_empty() && !message.contains('\n'), "{line:?}: {message}");
            }
            Ok(cli) => {
                if let Err(err) = Plan::from_args(cli) {
                    let message = err.to_string();
                    prop_assert!(!message.is_empty() && !message.contains('\n'), "{line:?}: {message}");
                }
            }
        }
    }
}
