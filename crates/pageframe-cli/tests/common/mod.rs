//! Helpers shared by the CLI's integration tests: running the real
//! `pageframe` binary, the exit contract (0 with output, or 2 with one
//! `pageframe: ` line on stderr and nothing on stdout), scratch paths named
//! by the test process, and whether the tests run as root.
//!
//! Every test binary compiles this module and uses a different subset of it.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

/// The `pageframe` binary that cargo built for these tests.
pub const BINARY: &str = env!("CARGO_BIN_EXE_pageframe");

/// Runs `pageframe` with `args` and returns how it ended.
pub fn pageframe(args: &[&str]) -> Output {
    Command::new(BINARY)
        .args(args)
        .output()
        .expect("the pageframe binary runs")
}

/// Runs `pageframe` with `args`, asserts that it succeeded and returns its
/// standard output.
pub fn stdout_of(args: &[&str]) -> String {
    let output = pageframe(args);
    assert!(
        output.status.success(),
        "pageframe {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("output is UTF-8")
}

/// Runs `pageframe` with `args`, asserts that it failed as a usage error
/// (exit status 2, one `pageframe: ` line on stderr, nothing on stdout) and
/// returns that line.
pub fn error_of(args: &[&str]) -> String {
    one_line_error(args, pageframe(args))
}

/// Asserts that `output`, of `pageframe` run with `args`, is a usage
/// error as [`error_of`] describes, and returns its line.
pub fn one_line_error(args: &[&str], output: Output) -> String {
    let stderr = String::from_utf8(output.stderr).expect("stderr is UTF-8");
    assert_eq!(
        output.status.code(),
        Some(2),
        "pageframe {args:?}: {stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "pageframe {args:?}: {stderr}");
    assert!(
        stderr.starts_with("pageframe: "),
        "pageframe {args:?}: {stderr}"
    );
    assert!(
        output.stdout.is_empty(),
        "pageframe {args:?} printed to stdout"
    );
    stderr
}

/// A scratch path in the temp dir, unique to this test process and `name`.
pub fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("pageframe-cli-{}-{name}", std::process::id()))
}

/// Writes `text` to the scratch file [`temp_path`]`(name)` and returns its
/// path.
pub fn temp_file(name: &str, text: &str) -> PathBuf {
    let path = temp_path(name);
    std::fs::write(&path, text).expect("temp dir is writable");
    path
}

/// An empty scratch directory at [`temp_path`]`(name)` (emptied if a
/// previous run left it).
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = temp_path(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir is writable");
    dir
}

/// A named FIFO, with no reader or writer, in a fresh temporary directory.
pub fn fifo_in(name: &str) -> PathBuf {
    let fifo = temp_dir(name).join("fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(
        made.expect("mkfifo runs").success(),
        "mkfifo {}",
        fifo.display()
    );
    fifo
}

/// Whether this process runs with effective user id 0 (some suites need
/// root and report a skip otherwise).
pub fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .expect("/proc/self/status is readable")
        .lines()
        .find_map(|line| line.strip_prefix("Uid:"))
        .and_then(|uids| uids.split_whitespace().nth(1))
        == Some("0")
}
