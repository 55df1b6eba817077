//! Checks of arguments that several commands share, made while a plan is
//! built and before any work: input files that are files (`--corpus`,
//! `--trace` to read), output paths that can be written (`--out`
//! directories, `-o`/`--plot`/`--trace` files) and are not the input, and
//! comma-separated view names. Each returns the one-line [`CliError::Invalid`] the user sees.

use crate::error::CliError;

/// An `--out DIR` that exists must be a directory a file can be made in
/// (a probe file is made and removed: `/proc/self` is a directory that
/// takes none, and a sweep found that out only after running its points),
/// and so must the nearest of its ancestors that exists (the rest are made
/// when the results are written).
pub(crate) fn check_out_dir(dir: Option<&std::path::Path>) -> Result<(), CliError> {
    let Some(dir) = dir else { return Ok(()) };
    let invalid = |what: String| CliError::Invalid(format!("--out {}: {what}", dir.display()));
    match dir.ancestors().find(|path| path.exists()) {
        Some(existing) if !existing.is_dir() => Err(invalid(if existing == dir {
            "not a directory".to_string()
        } else {
            format!("{} is not a directory", existing.display())
        })),
        Some(existing) => {
            let probe = existing.join(format!(".pageframe-probe-{}", std::process::id()));
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&probe)
            {
                Ok(_) => {
                    let _ = std::fs::remove_file(&probe);
                    Ok(())
                }
                // A probe left by a process of the same id: files can be made.
                Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
                Err(err) => Err(invalid(format!(
                    "cannot make a file in {}: {err}",
                    existing.display()
                ))),
            }
        }
        None => Ok(()),
    }
}

/// An input file read whole by the work (a tarball, a block trace) must be
/// a regular file: a directory fails only when the work reaches it, and a
/// FIFO would be opened by a library that waits for its writer.
pub(crate) fn check_in_file(flag: &str, path: &std::path::Path) -> Result<(), CliError> {
    if path.is_file() {
        return Ok(());
    }
    Err(CliError::Invalid(format!(
        "{flag} {}: not a file",
        path.display()
    )))
}

/// An output file is checked before any work that produces it: it must
/// not be a directory or another file that is not a regular file (a
/// device, a FIFO), and the directory it goes in must exist.
pub(crate) fn check_out_file(flag: &str, path: &std::path::Path) -> Result<(), CliError> {
    let invalid = |what: String| CliError::Invalid(format!("{flag} {}: {what}", path.display()));
    if path.is_dir() {
        return Err(invalid("is a directory".into()));
    }
    if !pageframe_lab::files::is_replaceable(path) {
        return Err(invalid("is not a regular file".into()));
    }
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => std::path::Path::new("."),
    };
    if !parent.is_dir() {
        return Err(invalid(format!("{} is not a directory", parent.display())));
    }
    Ok(())
}

/// An output file must not be the command's input: `trace replay
/// v.pftrace --plot v.pftrace` replaced the trace with its plot. Compared
/// as files (device and inode), so a link or another spelling of the path
/// is the same file; an output that does not exist yet is no input.
pub(crate) fn check_not_input(
    flag: &str,
    output: &std::path::Path,
    input: &std::path::Path,
) -> Result<(), CliError> {
    use std::os::unix::fs::MetadataExt;
    let file =
        |path: &std::path::Path| std::fs::metadata(path).map(|meta| (meta.dev(), meta.ino()));
    match (file(output), file(input)) {
        (Ok(output_file), Ok(input_file)) if output_file == input_file => {
            Err(CliError::Invalid(format!(
                "{flag} {}: is the input {}, which writing would replace",
                output.display(),
                input.display()
            )))
        }
        _ => Ok(()),
    }
}

/// Comma-separated view names into names of `known`, in the order given;
/// the first unknown name, or one listed twice (it would print twice), is
/// the error, its message led by `prefix`.
pub(crate) fn parse_view_names(
    text: &str,
    known: &[&'static str],
    prefix: &str,
) -> Result<Vec<&'static str>, CliError> {
    let mut views = Vec::new();
    for name in text.split(',') {
        let view = known
            .iter()
            .find(|view| **view == name.trim())
            .copied()
            .ok_or_else(|| {
                CliError::Invalid(format!(
                    "{prefix}unknown view '{name}' (known: {})",
                    known.join(", ")
                ))
            })?;
        if views.contains(&view) {
            return Err(CliError::Invalid(format!(
                "{prefix}view '{view}' is listed twice"
            )));
        }
        views.push(view);
    }
    Ok(views)
}

/// `--sysctl NAME=VALUE` arguments into the sysctls they name and the text
/// to write; the value is checked when it is written, after boot. A name
/// that is not a page-allocator sysctl, or an argument without `=`, is the
/// error.
pub(crate) fn parse_sysctl_writes(
    writes: &[String],
) -> Result<Vec<(pageframe::VmSysctl, String)>, CliError> {
    writes
        .iter()
        .map(|write| {
            let (name, value) = write
                .split_once('=')
                .ok_or_else(|| CliError::Invalid(format!("--sysctl {write}: not NAME=VALUE")))?;
            let sysctl = pageframe::VmSysctl::from_name(name.trim()).ok_or_else(|| {
                let known: Vec<String> = pageframe::VmSysctl::ALL
                    .iter()
                    .map(|sysctl| format!("vm.{}", sysctl.name()))
                    .collect();
                CliError::Invalid(format!(
                    "--sysctl {write}: unknown sysctl '{}' (known: {})",
                    name.trim(),
                    known.join(", ")
                ))
            })?;
            Ok((sysctl, value.to_string()))
        })
        .collect()
}
