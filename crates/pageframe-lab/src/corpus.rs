//! The data of the `zram-untar` experiment: regular files cut into 4 KiB
//! pages (the last one zero-padded), with a path per file, read from a
//! kernel source tarball streamed through xz (never unpacked on disk), or —
//! when there is none — from files found on this machine.
//!
//! Owns: the pages of the files (one contiguous buffer) and the file list.
//! Does not own: what a store does with them (experiments/zram_untar.rs).
//!
//! Invariant: `pages.len() == page_size × Σ nr_pages`; files' page ranges are
//! disjoint and in file order; no file is over [`MAX_FILE_BYTES`] and the
//! pages are at most [`MAX_CORPUS_BYTES`].
//!
//! Files are read page by page straight into the corpus, so memory follows
//! what is kept: a small archive that expands to a huge file is an error
//! after at most one over-size file's worth of reading, not a huge buffer.

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};
use thiserror::Error;

/// The tarball the source document untarred (a 6.1 kernel here): Debian's
/// `linux-source-6.1` package installs it (`apt-get install linux-source-6.1`).
pub const DEFAULT_TARBALL: &str = "/usr/src/linux-source-6.1.tar.xz";

/// The largest regular file a corpus takes (the largest file of a kernel
/// source tree is a few MiB).
pub const MAX_FILE_BYTES: u64 = 64 << 20;
/// The most page bytes a corpus holds (a whole kernel source tree takes
/// about 1.5 GiB).
pub const MAX_CORPUS_BYTES: u64 = 3 << 30;

/// The limits a corpus is read within.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Limits {
    /// Bytes of one file.
    file_bytes: u64,
    /// Page bytes of the corpus.
    corpus_bytes: u64,
}

impl Limits {
    const DEFAULT: Limits = Limits {
        file_bytes: MAX_FILE_BYTES,
        corpus_bytes: MAX_CORPUS_BYTES,
    };
}

/// Why a tarball could not become a corpus: one line.
#[derive(Debug, Error)]
pub enum CorpusError {
    /// The archive or the decompressor failed.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// A file is over [`MAX_FILE_BYTES`].
    #[error("file '{path}' is over the corpus limit of {} MiB per file", MAX_FILE_BYTES >> 20)]
    FileTooLarge {
        /// The file, inside the archive.
        path: String,
    },
    /// The files kept are over [`MAX_CORPUS_BYTES`].
    #[error("the files kept are over the corpus limit of {} MiB in all (at '{path}'; a larger sample_one_in keeps fewer)", MAX_CORPUS_BYTES >> 20)]
    TooLarge {
        /// The file that crossed the limit.
        path: String,
    },
}

/// One regular file of a corpus.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CorpusFile {
    /// Path below the corpus root (`drivers/block/zram/zram_drv.c`).
    pub path: String,
    /// Its first page in [`Corpus::pages`].
    pub first_page: usize,
    /// Pages it takes (0 for an empty file).
    pub nr_pages: usize,
}

/// Regular files as pages.
#[derive(Clone, Debug, Default)]
pub struct Corpus {
    /// Where the data came from, for the report.
    pub label: String,
    /// True when it is a kernel source tarball (the source document's data).
    pub kernel_source: bool,
    /// The files, in archive (or walk) order.
    pub files: Vec<CorpusFile>,
    /// Every page of every file, back to back.
    pub pages: Vec<u8>,
    /// Bytes per page.
    pub page_size: usize,
    /// Regular files seen (including those left out by sampling).
    pub files_seen: usize,
}

impl Corpus {
    fn new(label: String, kernel_source: bool, page_size: usize) -> Corpus {
        Corpus {
            label,
            kernel_source,
            page_size,
            ..Corpus::default()
        }
    }

    /// Pages in all.
    pub fn nr_pages(&self) -> usize {
        self.pages.len() / self.page_size.max(1)
    }

    /// Page `index`.
    pub fn page(&self, index: usize) -> &[u8] {
        &self.pages[index * self.page_size..(index + 1) * self.page_size]
    }

    /// Reads a file page by page, zero-padding its last page (an empty file
    /// takes no page, as on ext4). Over a limit, the corpus is left as it
    /// was and the error names the file.
    fn push_from(
        &mut self,
        path: String,
        data: &mut impl Read,
        limits: Limits,
    ) -> Result<(), CorpusError> {
        let first_page = self.nr_pages();
        let start = self.pages.len();
        let mut file_bytes = 0u64;
        loop {
            let page_start = self.pages.len();
            let over_total = u64::try_from(page_start + self.page_size)
                .map_or(true, |end| end > limits.corpus_bytes);
            self.pages.resize(page_start + self.page_size, 0);
            let filled = match fill(data, &mut self.pages[page_start..]) {
                Ok(filled) => filled,
                Err(err) => {
                    self.pages.truncate(start);
                    return Err(err.into());
                }
            };
            if filled == 0 {
                self.pages.truncate(page_start);
                break;
            }
            file_bytes += filled as u64;
            if file_bytes > limits.file_bytes || over_total {
                self.pages.truncate(start);
                return Err(if file_bytes > limits.file_bytes {
                    CorpusError::FileTooLarge { path }
                } else {
                    CorpusError::TooLarge { path }
                });
            }
            if filled < self.page_size {
                break;
            }
        }
        let nr_pages = self.nr_pages() - first_page;
        self.files.push(CorpusFile {
            path,
            first_page,
            nr_pages,
        });
        Ok(())
    }

    /// Bytes of the files under `top` (a path prefix), in pages.
    pub fn pages_under(&self, top: &str) -> usize {
        self.files
            .iter()
            .filter(|file| is_under(&file.path, top))
            .map(|file| file.nr_pages)
            .sum()
    }

    /// The `count` largest top-level directories, largest first.
    pub fn largest_tops(&self, count: usize) -> Vec<String> {
        let mut tops: Vec<(String, usize)> = Vec::new();
        for file in &self.files {
            let Some((top, _)) = file.path.split_once('/') else {
                continue;
            };
            match tops.iter_mut().find(|(name, _)| name == top) {
                Some((_, pages)) => *pages += file.nr_pages,
                None => tops.push((top.to_string(), file.nr_pages)),
            }
        }
        tops.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        tops.into_iter().take(count).map(|(name, _)| name).collect()
    }
}

/// Reads until `page` is full or the input ends; the bytes read.
fn fill(data: &mut impl Read, page: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < page.len() {
        match data.read(&mut page[filled..]) {
            Ok(0) => break,
            Ok(len) => filled += len,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    Ok(filled)
}

/// True when `path` is `dir` or lies below it.
pub fn is_under(path: &str, dir: &str) -> bool {
    path.strip_prefix(dir)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// Which files to keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sampling {
    /// Keep one regular file in `one_in` (1 keeps all), by position.
    pub one_in: usize,
}

/// Reads a tar stream: every regular file, its first path component (the
/// tarball's `linux-source-6.1/`) stripped. Calls `progress` with the bytes
/// read so far. A file over [`MAX_FILE_BYTES`] (by its header, before any
/// of it is read, or by what it yields) or files kept over
/// [`MAX_CORPUS_BYTES`] are an error.
pub fn from_tar<R: Read>(
    reader: R,
    label: &str,
    kernel_source: bool,
    sampling: Sampling,
    progress: impl FnMut(u64),
) -> Result<Corpus, CorpusError> {
    from_tar_within(
        reader,
        label,
        kernel_source,
        sampling,
        progress,
        Limits::DEFAULT,
    )
}

fn from_tar_within<R: Read>(
    reader: R,
    label: &str,
    kernel_source: bool,
    sampling: Sampling,
    mut progress: impl FnMut(u64),
    limits: Limits,
) -> Result<Corpus, CorpusError> {
    let mut corpus = Corpus::new(label.to_string(), kernel_source, 4096);
    let mut archive = tar::Archive::new(reader);
    let mut read = 0u64;
    for entry in archive.entries()? {
        let mut entry = entry?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let path = entry.path()?.to_string_lossy().into_owned();
        let inner = match path.split_once('/') {
            Some((_, rest)) if !rest.is_empty() => rest.to_string(),
            _ => path,
        };
        if entry.size() > limits.file_bytes {
            return Err(CorpusError::FileTooLarge { path: inner });
        }
        corpus.files_seen += 1;
        read = read.saturating_add(entry.size());
        if (corpus.files_seen - 1) % sampling.one_in.max(1) != 0 {
            continue;
        }
        corpus.push_from(inner, &mut entry, limits)?;
        if corpus.files_seen % 512 == 0 {
            progress(read);
        }
    }
    Ok(corpus)
}

/// Streams a `.tar.xz` from disk.
pub fn from_tar_xz(
    path: &Path,
    sampling: Sampling,
    progress: impl FnMut(u64),
) -> Result<Corpus, CorpusError> {
    let file = crate::files::open_input(path)?;
    let reader = xz2::read::XzDecoder::new(BufReader::with_capacity(1 << 20, file));
    from_tar(
        reader,
        &path.display().to_string(),
        true,
        sampling,
        progress,
    )
}

/// Places to find text and binaries when there is no tarball: this
/// project's source, the Rust toolchain's library source and docs, and the
/// system's documentation and headers. (label, directory), existing only.
pub fn fallback_roots() -> Vec<(String, PathBuf)> {
    let mut roots: Vec<(String, PathBuf)> = Vec::new();
    let project = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    roots.push(("pageframe".into(), project));
    if let Ok(output) = std::process::Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
    {
        let sysroot = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
        roots.push((
            "rust-src".into(),
            sysroot.join("lib/rustlib/src/rust/library"),
        ));
        roots.push(("rust-doc".into(), sysroot.join("share/doc")));
    }
    roots.push(("usr-include".into(), PathBuf::from("/usr/include")));
    roots.push(("usr-share-doc".into(), PathBuf::from("/usr/share/doc")));
    roots.into_iter().filter(|(_, dir)| dir.is_dir()).collect()
}

/// Builds a corpus from the regular files under `roots` (walked in name
/// order, skipping `.git` and `target`), paths relative to their root, until
/// `max_bytes` of pages (at most [`MAX_CORPUS_BYTES`]); keeps one file in
/// `sampling.one_in`. Files that cannot be read or are over a limit are left
/// out.
pub fn from_dirs(roots: &[(String, PathBuf)], max_bytes: usize, sampling: Sampling) -> Corpus {
    let label = roots
        .iter()
        .map(|(_, dir)| dir.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let mut corpus = Corpus::new(format!("fallback corpus from {label}"), false, 4096);
    // Paths are relative to their root, so that the top-level directories
    // (what the experiment removes) are the roots' subdirectories.
    let max_bytes = max_bytes.min(usize::try_from(MAX_CORPUS_BYTES).unwrap_or(usize::MAX));
    for (_, dir) in roots {
        walk(dir, "", &mut corpus, max_bytes, sampling);
    }
    corpus
}

fn walk(dir: &Path, prefix: &str, corpus: &mut Corpus, max_bytes: usize, sampling: Sampling) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|entry| entry.file_name());
    for entry in entries {
        if corpus.pages.len() >= max_bytes {
            return;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        if kind.is_dir() && name != ".git" && name != "target" {
            walk(&entry.path(), &path, corpus, max_bytes, sampling);
        } else if kind.is_file() {
            corpus.files_seen += 1;
            if (corpus.files_seen - 1) % sampling.one_in.max(1) != 0 {
                continue;
            }
            if let Ok(file) = File::open(entry.path()) {
                let _ = corpus.push_from(path, &mut BufReader::new(file), Limits::DEFAULT);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small tar in memory: `root/a/x` (5000 bytes), `root/a/y` (0),
    /// `root/b/z` (4096), `root/top` (10) and a directory entry.
    pub(crate) fn small_tar() -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        let mut add = |path: &str, data: &[u8]| {
            let mut header = tar::Header::new_gnu();
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            builder.append_data(&mut header, path, data).unwrap();
        };
        add("root/a/x", &vec![b'x'; 5000]);
        add("root/a/y", b"");
        add("root/b/z", &vec![b'z'; 4096]);
        add("root/top", b"0123456789");
        builder.into_inner().unwrap()
    }

    #[test]
    fn files_become_zero_padded_pages() {
        let tar = small_tar();
        let corpus = from_tar(&tar[..], "t", false, Sampling { one_in: 1 }, |_| {}).unwrap();
        let paths: Vec<&str> = corpus.files.iter().map(|file| file.path.as_str()).collect();
        assert_eq!(paths, ["a/x", "a/y", "b/z", "top"]);
        let pages: Vec<usize> = corpus.files.iter().map(|file| file.nr_pages).collect();
        assert_eq!(pages, [2, 0, 1, 1]);
        assert_eq!(corpus.nr_pages(), 4);
        assert_eq!(corpus.page(1)[..904], vec![b'x'; 904][..]);
        assert!(corpus.page(1)[904..].iter().all(|byte| *byte == 0));
        assert_eq!(corpus.pages_under("a"), 2);
        assert_eq!(corpus.largest_tops(5), ["a", "b"]);
        assert!(is_under("a/x", "a") && !is_under("ab/x", "a"));
        let sampled = from_tar(&tar[..], "t", false, Sampling { one_in: 2 }, |_| {}).unwrap();
        assert_eq!(sampled.files.len(), 2);
        assert_eq!(sampled.files_seen, 4);
    }

    #[test]
    fn files_and_corpora_over_the_limits_are_errors_that_name_the_file() {
        let tar = small_tar();
        let read =
            |limits| from_tar_within(&tar[..], "t", false, Sampling { one_in: 1 }, |_| {}, limits);
        let per_file = read(Limits {
            file_bytes: 4999,
            corpus_bytes: 1 << 20,
        })
        .unwrap_err();
        assert!(matches!(&per_file, CorpusError::FileTooLarge { path } if path == "a/x"));
        let total = read(Limits {
            file_bytes: 1 << 20,
            corpus_bytes: 3 * 4096,
        })
        .unwrap_err();
        assert!(matches!(&total, CorpusError::TooLarge { path } if path == "top"));
        assert!(total.to_string().contains("corpus limit"), "{total}");
        let exact = read(Limits {
            file_bytes: 5000,
            corpus_bytes: 4 * 4096,
        })
        .unwrap();
        assert_eq!(exact.nr_pages(), 4);
    }

    #[test]
    fn a_header_over_the_limit_fails_before_its_data_is_read() {
        // A header claiming 5 GiB with no data behind it: the size alone is
        // the error, nothing is read or buffered.
        let mut header = tar::Header::new_gnu();
        header.set_path("root/zeros").unwrap();
        header.set_size(5 << 30);
        header.set_mode(0o644);
        header.set_cksum();
        let mut tar = header.as_bytes().to_vec();
        tar.resize(tar.len() + 4096, 0);
        let err = from_tar(&tar[..], "t", false, Sampling { one_in: 1 }, |_| {}).unwrap_err();
        assert_eq!(
            err.to_string(),
            "file 'zeros' is over the corpus limit of 64 MiB per file"
        );
    }

    #[test]
    fn a_directory_walk_finds_files_in_name_order() {
        let dir = std::env::temp_dir().join(format!("pageframe-corpus-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/b"), vec![1u8; 10]).unwrap();
        std::fs::write(dir.join("a"), vec![2u8; 5000]).unwrap();
        let corpus = from_dirs(
            &[("t".into(), dir.clone())],
            1 << 20,
            Sampling { one_in: 1 },
        );
        std::fs::remove_dir_all(&dir).unwrap();
        let paths: Vec<&str> = corpus.files.iter().map(|file| file.path.as_str()).collect();
        assert_eq!(paths, ["a", "sub/b"]);
        assert_eq!(corpus.nr_pages(), 3);
        assert!(!corpus.kernel_source);
    }
}
