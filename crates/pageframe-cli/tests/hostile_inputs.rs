//! Hostile inputs found by an adversarial pass: each once ran for hours,
//! filled memory, did the work before refusing its output path, or gave a
//! wrong or unclear message; each is now one line with status 2 before any
//! work starts.

mod common;

use common::{error_of, stdout_of, temp_dir, temp_file};

#[test]
fn calibrate_refuses_rounds_for_days_and_arenas_past_memory() {
    let out = temp_dir("calibrate-bounds").join("costs.toml");
    let out = out.to_str().unwrap();
    // --rounds 2^32-1 timed for days; --pages 2^30 filled two 4 TiB arenas.
    let rounds = error_of(&["calibrate", "--rounds", "4294967295", "--out", out]);
    assert!(rounds.contains("pages x (rounds + 1)"), "{rounds}");
    let pages = error_of(&["calibrate", "--pages", "1073741824", "--out", out]);
    assert!(pages.contains("at most 1048576 pages"), "{pages}");
    let tiny = error_of(&["calibrate", "--pages", "1", "--out", out]);
    assert!(tiny.contains("at least 1024 pages"), "{tiny}");
}

#[test]
fn calibrate_refuses_its_output_path_before_measuring() {
    // A directory, or a file in a directory that does not exist, was found
    // out only after every round had run.
    let dir = temp_dir("calibrate-out");
    let message = error_of(&["calibrate", "--out", dir.to_str().unwrap()]);
    assert!(message.contains("is a directory"), "{message}");
    let missing = dir.join("no/such/dir/costs.toml");
    let message = error_of(&["calibrate", "--out", missing.to_str().unwrap()]);
    assert!(message.contains("is not a directory"), "{message}");
}

#[test]
fn a_sweep_value_listed_twice_is_refused() {
    // Two points of one key: the same run twice into one result file, and
    // its rows twice in the table.
    let spec = temp_file(
        "sweep-twice.toml",
        "experiment = \"bulk\"\n[params]\nrounds = [1, 1]\n",
    );
    let out = temp_dir("sweep-twice-dir").join("results");
    let message = error_of(&[
        "sweep",
        spec.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(message.contains("params.rounds lists 1 twice"), "{message}");
    assert!(!out.exists());
}

#[test]
fn a_sweep_out_that_is_a_file_or_an_empty_ray_address_is_refused() {
    let spec = temp_file("sweep-out.toml", "experiment = \"bulk\"\n");
    let file = temp_file("sweep-out-file", "");
    // Was "cannot create ...: File exists (os error 17)".
    let message = error_of(&[
        "sweep",
        spec.to_str().unwrap(),
        "--out",
        file.to_str().unwrap(),
    ]);
    assert!(message.contains("not a directory"), "{message}");
    // Was handed to Python, whose traceback came before our line.
    let out = temp_dir("sweep-ray").join("results");
    let message = error_of(&[
        "sweep",
        spec.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--ray",
        "",
    ]);
    assert!(message.contains("--ray: an empty address"), "{message}");
}

#[test]
fn sizes_take_the_exabyte_suffix_and_sixteen_of_them_are_too_large() {
    // memparse() takes E; "16E" was "not a size" rather than too large.
    let message = error_of(&["info", "--mem", "16E"]);
    assert!(message.contains("'16E' is too large"), "{message}");
    let message = error_of(&["info", "--cmdline", "mem=16E"]);
    assert!(message.contains("'16E' is too large"), "{message}");
    // mem=1E is a limit past the machine: the whole machine stays.
    let limited = stdout_of(&["info", "--mem", "1G", "--cmdline", "mem=1E"]);
    let whole = stdout_of(&["info", "--mem", "1G"]);
    let present = |text: &str| {
        text.lines()
            .find(|line| line.starts_with("machine:"))
            .map(str::to_string)
    };
    assert_eq!(present(&limited), present(&whole));
}

#[test]
fn slabinfo_on_a_machine_too_small_for_kmalloc_8k_says_why() {
    // Was "invalid slab argument: object size 8192", naming neither the
    // view nor the limit.
    let message = error_of(&[
        "proc",
        "slabinfo",
        "--max-order",
        "0",
        "--pageblock-order",
        "0",
        "--mem",
        "64M",
    ]);
    assert!(
        message.contains(
            "slabinfo: invalid slab argument: object size 8192 is larger than a max_page_order 0 block (4096 bytes)"
        ),
        "{message}"
    );
}

#[test]
fn a_memory_size_below_one_pageblock_says_it_rounds_to_nothing() {
    // Was "node[0].mem: zero memory" for --mem 4096, which is not zero.
    let message = error_of(&["info", "--mem", "4096"]);
    assert!(
        message.contains(
            "node[0].mem: no memory (--mem and uniform shares round down to whole pageblocks of 2M"
        ),
        "{message}"
    );
}

#[test]
fn an_experiment_listed_twice_is_refused() {
    // `run bulk,bulk` ran bulk twice with the same seed into the same files;
    // `config bulk,bulk` printed two [bulk] tables that --config refuses.
    let message = error_of(&["run", "shuffle-cache,shuffle-cache"]);
    assert!(
        message.contains("experiment 'shuffle-cache' is listed twice"),
        "{message}"
    );
    let message = error_of(&["config", "bulk,bulk"]);
    assert!(
        message.contains("experiment 'bulk' is listed twice"),
        "{message}"
    );
}
