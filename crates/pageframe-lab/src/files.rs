//! Files in and out. Input files (machine descriptions, config files,
//! traces) are read up to a stated size ([`read_text`], [`read_bytes`]), so
//! that `/dev/zero` or a huge file is a one-line error, not a full memory,
//! and opened without waiting for a writer ([`open_input`]), so that a FIFO
//! no one writes to is an empty file, not a hang.
//!
//! Output files are complete or absent: each is written to a
//! temporary file in its own directory (`.<name>.<pid>.tmp<.ext>`, hidden,
//! same file system), flushed to disk, then renamed over the target. A run
//! stopped part-way (Ctrl-C, a full disk) leaves the previous file or none,
//! never half of one. The temporary keeps the target's extension, so writers
//! that pick a format by extension (a PNG encoder) still do.
//!
//! Owns: nothing but the temporary, which it removes when writing fails.

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// The largest machine description or experiment config file read.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Reads the UTF-8 text of `path`, at most `max_bytes` of it; a larger
/// file is an error naming the limit.
pub fn read_text(path: &Path, max_bytes: u64) -> Result<String, String> {
    let cannot = |err: &dyn std::fmt::Display| format!("cannot read {}: {err}", path.display());
    let bytes = read_bytes(path, max_bytes)
        .map_err(|err| cannot(&err))?
        .ok_or_else(|| {
            format!(
                "{} is over the limit of {} KiB for this file",
                path.display(),
                max_bytes >> 10
            )
        })?;
    String::from_utf8(bytes).map_err(|err| cannot(&err))
}

/// Reads the bytes of `path`, at most `max_bytes` of them: `None` when the
/// file is longer (reading stops one byte past the limit).
pub fn read_bytes(path: &Path, max_bytes: u64) -> io::Result<Option<Vec<u8>>> {
    let mut bytes = Vec::new();
    open_input(path)?
        .take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= max_bytes).then_some(bytes))
}

/// Opens `path` for reading without waiting for a writer (a FIFO no one
/// writes to reads as empty); the library's, which opens its own inputs
/// (a calibration file) the same way.
pub use pageframe::backing::open_input;

/// The temporary beside `target`.
fn temporary(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let extension = target
        .extension()
        .map(|ext| format!(".{}", ext.to_string_lossy()))
        .unwrap_or_default();
    target.with_file_name(format!(".{name}.{}.tmp{extension}", std::process::id()))
}

/// Writes `bytes` to `path` whole or not at all.
pub fn write_atomic(path: &Path, bytes: impl AsRef<[u8]>) -> io::Result<()> {
    write_atomic_with(path, |temporary| {
        let mut file = fs::File::create(temporary)?;
        file.write_all(bytes.as_ref())?;
        file.sync_all()
    })
}

/// True when a file renamed to `path` replaces nothing but a regular file:
/// `path` is absent, a regular file or a link to one. A device node (as
/// root, `/dev/full` would become a regular file), a FIFO, a socket or a
/// directory is not.
pub fn is_replaceable(path: &Path) -> bool {
    fs::metadata(path).map_or(true, |metadata| metadata.is_file())
}

/// Lets `write` create the file at the path it is given, then renames it to
/// `path`; on any error the temporary is removed and `path` is untouched.
/// A `path` that is not [`is_replaceable`] is an error before anything is
/// written.
pub fn write_atomic_with<E: From<io::Error>>(
    path: &Path,
    write: impl FnOnce(&Path) -> Result<(), E>,
) -> Result<(), E> {
    if !is_replaceable(path) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not a regular file", path.display()),
        )
        .into());
    }
    let temporary = temporary(path);
    let result = write(&temporary).and_then(|()| Ok(fs::rename(&temporary, path)?));
    if result.is_err() {
        let _ = fs::remove_file(&temporary);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("pageframe-files-{}-{name}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn text_over_the_limit_is_an_error_not_a_full_memory() {
        let zero = Path::new("/dev/zero");
        let err = read_text(zero, MAX_CONFIG_BYTES).unwrap_err();
        assert_eq!(err, "/dev/zero is over the limit of 1024 KiB for this file");
        let dir = scratch("text");
        let small = dir.join("machine.toml");
        fs::write(&small, "mem = \"4G\"\n").unwrap();
        assert_eq!(read_text(&small, 11).unwrap(), "mem = \"4G\"\n");
        assert!(read_text(&small, 10).is_err());
        assert!(read_text(&dir.join("missing"), 10)
            .unwrap_err()
            .starts_with("cannot read "));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_fifo_without_a_writer_reads_as_empty_instead_of_blocking() {
        let dir = scratch("fifo");
        let fifo = dir.join("machine.toml");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success());
        assert_eq!(read_text(&fifo, MAX_CONFIG_BYTES).unwrap(), "");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_target_appears_whole_and_no_temporary_is_left() {
        let dir = scratch("whole");
        let target = dir.join("report.json");
        fs::write(&target, "old").unwrap();
        write_atomic(&target, "new contents").unwrap();
        assert_eq!(fs::read_to_string(&target).unwrap(), "new contents");
        let names: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names, ["report.json"]);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temporary() {
        let dir = scratch("failed");
        let target = dir.join("plot.png");
        fs::write(&target, "old").unwrap();
        let result: Result<(), io::Error> = write_atomic_with(&target, |temporary| {
            assert!(temporary.to_string_lossy().ends_with(".tmp.png"));
            fs::write(temporary, "half")?;
            Err(io::Error::other("interrupted"))
        });
        assert!(result.is_err());
        assert_eq!(fs::read_to_string(&target).unwrap(), "old");
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_device_or_fifo_is_not_replaced() {
        // As root, renaming over /dev/full made it a regular file.
        let dir = scratch("special");
        let fifo = dir.join("fifo");
        let _ = fs::remove_file(&fifo);
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let err = write_atomic(&fifo, "x").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(err.to_string().ends_with("is not a regular file"), "{err}");
        use std::os::unix::fs::FileTypeExt;
        assert!(fs::metadata(&fifo).unwrap().file_type().is_fifo());
        assert!(!is_replaceable(Path::new("/dev/null")));
        assert!(!is_replaceable(&dir));
        assert!(is_replaceable(&dir.join("absent")));
        fs::remove_dir_all(&dir).unwrap();
    }
}
