//! `pageframe proc slabinfo` and `pageframe proc zs-classes`: the real
//! binary prints the kernel's layouts after a seeded workload, the same
//! bytes for the same seed.

mod common;

use common::stdout_of;

#[test]
fn slabinfo_prints_the_kernels_layout_after_a_workload() {
    let text = stdout_of(&["proc", "slabinfo", "--mem", "256M", "--churn", "3000"]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "slabinfo - version: 2.1");
    assert!(lines[1].starts_with("# name            <active_objs> <num_objs> <objsize>"));
    let dentry = lines
        .iter()
        .find(|line| line.starts_with("dentry "))
        .unwrap();
    let fields: Vec<&str> = dentry.split_whitespace().collect();
    assert_eq!(fields.len(), 16, "{dentry}");
    assert_eq!(&fields[3..6], ["192", "21", "1"]);
    assert!(fields[1].parse::<u64>().unwrap() > 0);
    assert!(lines.iter().any(|line| line.starts_with("kmalloc-8k ")));
}

#[test]
fn zs_classes_prints_the_kernels_columns_and_is_deterministic() {
    let args = [
        "proc",
        "zs-classes",
        "--mem",
        "256M",
        "--churn",
        "4000",
        "--seed",
        "9",
    ];
    let text = stdout_of(&args);
    let first = text.lines().next().unwrap();
    assert!(first.starts_with(" class  size       10%"));
    assert!(first.ends_with("pages_per_zspage freeable"));
    assert!(text.lines().last().unwrap().starts_with(" Total "));
    assert_eq!(text, stdout_of(&args));
    assert_ne!(
        text,
        stdout_of(&[
            "proc",
            "zs-classes",
            "--mem",
            "256M",
            "--churn",
            "4000",
            "--seed",
            "10"
        ])
    );
}
