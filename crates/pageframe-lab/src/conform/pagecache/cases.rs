//! The cases of the `pagecache` suite: files made before the case (their
//! sizes in bytes, written, synced and dropped from the cache, so that
//! every case starts cold), then the calls one process makes.

/// A page of the suite (4 KiB; the suite needs the host's page size to be it).
pub const P: u64 = 4096;

/// [`P`] as a file offset (`loff_t`).
const PI: i64 = P as i64;

/// One call of a case. Files are named by their index in [`Case::files`];
/// positions and lengths are bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// pread(2) of `len` bytes at `pos`.
    Read(usize, u64, u64),
    /// pwrite(2) of `len` bytes at `pos`.
    Write(usize, u64, u64),
    /// fsync(2).
    Fsync(usize),
    /// ftruncate(2) to the length.
    Truncate(usize, i64),
    /// posix_fadvise(2) `POSIX_FADV_DONTNEED` of (offset, len).
    DontNeed(usize, i64, i64),
    /// close(2) of the file's descriptor, then unlink(2) of its name.
    Unlink(usize),
    /// A first write to each of the first `n` pages of the process's
    /// anonymous mapping (pages already touched are touched again).
    Touch(u64),
}

impl Step {
    /// The call as the row shows it.
    pub fn label(&self) -> String {
        match *self {
            Step::Read(file, pos, len) => format!("pread(f{file}, {pos}, {len})"),
            Step::Write(file, pos, len) => format!("pwrite(f{file}, {pos}, {len})"),
            Step::Fsync(file) => format!("fsync(f{file})"),
            Step::Truncate(file, len) => format!("ftruncate(f{file}, {len})"),
            Step::DontNeed(file, offset, len) => {
                format!("fadvise(f{file}, {offset}, {len}, DONTNEED)")
            }
            Step::Unlink(file) => format!("close+unlink(f{file})"),
            Step::Touch(pages) => format!("touch {pages} anon pages"),
        }
    }

    /// The bytes a read or write moves through the caller's buffer.
    pub fn buffer_bytes(&self) -> u64 {
        match *self {
            Step::Read(_, _, len) | Step::Write(_, _, len) => len,
            _ => 0,
        }
    }
}

/// One case: a name, the files' sizes in bytes, the calls.
#[derive(Clone, Copy, Debug)]
pub struct Case<'a> {
    /// What the case shows.
    pub name: &'a str,
    /// Sizes of the files made for it (0: an empty file).
    pub files: &'a [u64],
    /// The calls, in order (at most 254).
    pub steps: &'a [Step],
}

use Step::{DontNeed, Fsync, Read, Touch, Truncate, Unlink, Write};

/// One page at a time through the first 40 pages: the readahead window
/// ramps as the marks are reached.
const ONE_BY_ONE: [Step; 40] = {
    let mut steps = [Read(0, 0, P); 40];
    let mut at = 0;
    while at < 40 {
        steps[at] = Read(0, at as u64 * P, P);
        at += 1;
    }
    steps
};

/// 64 KiB at a time through 512 KiB.
const CHUNKS: [Step; 8] = {
    let mut steps = [Read(0, 0, 16 * P); 8];
    let mut at = 0;
    while at < 8 {
        steps[at] = Read(0, at as u64 * 16 * P, 16 * P);
        at += 1;
    }
    steps
};

/// The cases, in order.
pub const CASES: &[Case<'static>] = &[
    Case {
        name: "read a file once",
        files: &[256 * P],
        steps: &[Read(0, 0, 256 * P)],
    },
    Case {
        name: "read a file twice",
        files: &[256 * P],
        steps: &[Read(0, 0, 256 * P), Read(0, 0, 256 * P)],
    },
    Case {
        name: "read a file three times",
        files: &[256 * P],
        steps: &[
            Read(0, 0, 256 * P),
            Read(0, 0, 256 * P),
            Read(0, 0, 256 * P),
        ],
    },
    Case {
        name: "read the first page",
        files: &[256 * P],
        steps: &[Read(0, 0, P), Read(0, 0, P)],
    },
    Case {
        name: "read page by page",
        files: &[1024 * P],
        steps: &ONE_BY_ONE,
    },
    Case {
        name: "read in 64 KiB chunks",
        files: &[1024 * P],
        steps: &CHUNKS,
    },
    Case {
        name: "random reads",
        files: &[1024 * P],
        steps: &[
            Read(0, 100 * P, P),
            Read(0, 500 * P, P),
            Read(0, 900 * P, 2 * P),
            Read(0, 501 * P, P),
            Read(0, 300 * P, 8 * P),
        ],
    },
    Case {
        name: "a read after a cached run",
        files: &[1024 * P],
        steps: &[Read(0, 0, 64 * P), Read(0, 200 * P, P), Read(0, 64 * P, P)],
    },
    Case {
        name: "reads going backwards",
        files: &[512 * P],
        steps: &[
            Read(0, 300 * P, P),
            Read(0, 299 * P, P),
            Read(0, 298 * P, P),
            Read(0, 296 * P, 2 * P),
            Read(0, 200 * P, 4 * P),
        ],
    },
    Case {
        name: "re-reads inside the first window",
        files: &[256 * P],
        steps: &[
            Read(0, 0, P),
            Read(0, 0, 4 * P),
            Read(0, 2 * P, P),
            Read(0, 0, 64 * P),
        ],
    },
    Case {
        name: "two streams interleaved on one descriptor",
        files: &[1024 * P],
        steps: &[
            Read(0, 0, 16 * P),
            Read(0, 512 * P, 16 * P),
            Read(0, 16 * P, 16 * P),
            Read(0, 528 * P, 16 * P),
            Read(0, 32 * P, 64 * P),
            Read(0, 544 * P, 64 * P),
        ],
    },
    Case {
        name: "a read larger than the window",
        files: &[4096 * P],
        steps: &[Read(0, 0, 3000 * P), Read(0, 3000 * P, P)],
    },
    Case {
        name: "reads past the end",
        files: &[10 * P + 100],
        steps: &[
            Read(0, 20 * P, P),
            Read(0, 10 * P + 100, 10),
            Read(0, 9 * P, 8 * P),
        ],
    },
    Case {
        name: "small reads in one page",
        files: &[P],
        steps: &[
            Read(0, 0, 100),
            Read(0, 100, 100),
            Read(0, 200, 100),
            Read(0, 300, 100),
        ],
    },
    Case {
        name: "small reads across a page boundary",
        files: &[2 * P],
        steps: &[
            Read(0, 0, 3000),
            Read(0, 3000, 3000),
            Read(0, 6000, 1000),
            Read(0, 0, 2 * P),
        ],
    },
    Case {
        name: "write a new file",
        files: &[0],
        steps: &[Write(0, 0, 100 * P)],
    },
    Case {
        name: "write a file twice",
        files: &[0],
        steps: &[Write(0, 0, 100 * P), Write(0, 0, 100 * P)],
    },
    Case {
        name: "write, then read twice",
        files: &[0],
        steps: &[
            Write(0, 0, 100 * P),
            Read(0, 0, 100 * P),
            Read(0, 0, 100 * P),
        ],
    },
    Case {
        name: "write part of a cached file",
        files: &[64 * P],
        steps: &[Read(0, 0, 64 * P), Write(0, 10 * P + 5, 3 * P), Fsync(0)],
    },
    Case {
        name: "write, fsync, drop the cache",
        files: &[0],
        steps: &[Write(0, 0, 100 * P), Fsync(0), DontNeed(0, 0, 0)],
    },
    Case {
        name: "drop part of the cache",
        files: &[256 * P],
        steps: &[
            Read(0, 0, 256 * P),
            DontNeed(0, 10 * PI + 100, 20 * PI),
            DontNeed(0, 100 * PI, 1),
            DontNeed(0, 200 * PI, 56 * PI),
        ],
    },
    Case {
        name: "drop the cache of active pages, half of them dirty",
        files: &[64 * P],
        steps: &[
            Read(0, 0, 64 * P),
            Read(0, 0, 64 * P),
            Write(0, 0, 32 * P),
            DontNeed(0, 0, 0),
            Read(0, 0, 64 * P),
        ],
    },
    Case {
        name: "drop a partial last page",
        files: &[10 * P + 100],
        steps: &[Read(0, 0, 11 * P), DontNeed(0, 5 * PI, 5 * PI + 100)],
    },
    Case {
        name: "truncate a cached file",
        files: &[256 * P],
        steps: &[
            Read(0, 0, 256 * P),
            Truncate(0, 128 * PI),
            Truncate(0, 100 * PI + 5),
        ],
    },
    Case {
        name: "truncate an uncached file into a page",
        files: &[64 * P],
        steps: &[
            Truncate(0, 10 * PI + 5),
            Truncate(0, 10 * PI + 5),
            Truncate(0, 20 * PI),
        ],
    },
    Case {
        name: "truncate into a hole",
        files: &[0, 8 * P],
        steps: &[
            Truncate(0, 100 * PI),
            Truncate(0, 50 * PI + 5),
            Write(1, 64 * P, P),
            Truncate(1, 30 * PI + 9),
            Truncate(1, 4 * PI + 9),
        ],
    },
    Case {
        name: "a write inside an empty file's first page, then one past that page",
        files: &[0],
        steps: &[Write(0, 2861, 28), Write(0, 4096, 4096)],
    },
    Case {
        name: "a write inside a page past a page-aligned end, then one past the new end",
        files: &[4096],
        steps: &[Write(0, 8197, 100), Write(0, 20000, 10)],
    },
    Case {
        name: "a write inside the page after a page-aligned end, then a read",
        files: &[4096],
        steps: &[Write(0, 4101, 100), Read(0, 4096, 10)],
    },
    Case {
        name: "a write inside an empty file's first page, then a read",
        files: &[0],
        steps: &[Write(0, 100, 100), Read(0, 0, 10)],
    },
    Case {
        name: "a read, then a write past the end in the same page, then a read",
        files: &[100],
        steps: &[Read(0, 0, 100), Write(0, 200, 10), Read(0, 0, 10)],
    },
    Case {
        name: "a write inside the file, then a read",
        files: &[2 * P],
        steps: &[Write(0, 100, 10), Read(0, 0, 10)],
    },
    Case {
        name: "a write past the end in the same uncached page, then a read",
        files: &[100],
        steps: &[Write(0, 200, 10), Read(0, 0, 10)],
    },
    Case {
        name: "a write at a page's start, then growth by truncation",
        files: &[0],
        steps: &[Write(0, 0, 100), Truncate(0, 8192)],
    },
    Case {
        name: "a write one page past a short file",
        files: &[100],
        steps: &[Write(0, 4096, 100)],
    },
    Case {
        name: "growth of a short file by truncation",
        files: &[100],
        steps: &[Truncate(0, 8192)],
    },
    Case {
        name: "write, fsync, then a write one page past",
        files: &[0],
        steps: &[Write(0, 0, 100), Fsync(0), Write(0, 4096, 100)],
    },
    Case {
        name: "truncate to zero, then grow",
        files: &[256 * P],
        steps: &[
            Read(0, 0, 256 * P),
            Truncate(0, 0),
            Truncate(0, 256 * PI),
            Read(0, 0, 4 * P),
        ],
    },
    Case {
        name: "refused calls",
        files: &[16 * P],
        steps: &[
            Read(0, 0, 16 * P),
            Truncate(0, -1),
            DontNeed(0, 0, -1),
            DontNeed(0, -5 * PI, PI),
            DontNeed(0, -1, PI),
        ],
    },
    Case {
        name: "drop from a negative offset with dirty pages",
        files: &[16 * P],
        steps: &[
            Read(0, 0, 16 * P),
            Write(0, 0, 3 * P),
            DontNeed(0, -1, 0),
            Fsync(0),
            DontNeed(0, -1, 0),
        ],
    },
    Case {
        name: "unlink a cached file",
        files: &[256 * P, 64 * P],
        steps: &[
            Read(0, 0, 256 * P),
            Read(1, 0, 64 * P),
            Unlink(0),
            Read(0, 0, P),
            Read(1, 0, 64 * P),
        ],
    },
    Case {
        name: "unlink a dirty file",
        files: &[0, 0],
        steps: &[
            Write(0, 0, 50 * P),
            Write(1, 0, 20 * P),
            Unlink(0),
            Fsync(1),
        ],
    },
    Case {
        name: "a write past the end, then a read of the hole",
        files: &[0],
        steps: &[
            Write(0, 100 * P, P),
            Read(0, 0, 101 * P),
            Read(0, 50 * P, 10),
        ],
    },
    Case {
        name: "touch anonymous memory",
        files: &[],
        steps: &[Touch(200), Touch(200), Touch(300)],
    },
    Case {
        name: "anonymous memory beside the page cache",
        files: &[128 * P],
        steps: &[
            Touch(100),
            Read(0, 0, 128 * P),
            Touch(150),
            Read(0, 0, 128 * P),
        ],
    },
];
