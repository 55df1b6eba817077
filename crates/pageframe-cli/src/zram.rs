//! `pageframe zram serve` and `pageframe zram bench`: glue over
//! `pageframe_lab::zram_serve`. Bad names and sizes are one-line errors
//! (exit status 2) before anything is mounted.

use crate::args::{ZramBenchArgs, ZramCommand, ZramServeArgs};
use crate::error::CliError;
use pageframe::zram::{Backend, Compressor};
use pageframe_lab::zram_serve::throughput::{self, BenchConfig};
use pageframe_lab::zram_serve::trace_sizes::TraceSizes;
use pageframe_lab::zram_serve::{self, DeviceConfig, LoopIo, ServeConfig};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// A checked `zram` subcommand.
#[derive(Debug)]
pub enum ZramPlan {
    /// Serve until Ctrl-C.
    Serve {
        /// How to serve.
        config: ServeConfig,
        /// Where to write the block trace.
        trace: Option<PathBuf>,
        /// The tarball whose pages' trace sizes are computed first.
        trace_corpus: Option<PathBuf>,
        /// Between mm_stat lines.
        interval: Duration,
    },
    /// Measure write throughput.
    Bench(BenchConfig),
}

/// Most writes in flight `zram bench` takes.
const MAX_WRITERS: usize = 256;

/// Checks the arguments.
pub fn plan(command: ZramCommand) -> Result<ZramPlan, CliError> {
    match command {
        ZramCommand::Serve(args) => serve_plan(args),
        ZramCommand::Bench(args) => bench_plan(args),
    }
}

fn backend_and_codec(backend: &str, codec: &str) -> Result<(Backend, Compressor), CliError> {
    let backend = Backend::parse(backend).ok_or_else(|| {
        CliError::Invalid(format!(
            "--backend {backend}: not zsmalloc-chain4 … zsmalloc-chain16 or afmalloc"
        ))
    })?;
    let compressor = Compressor::parse(codec).ok_or_else(|| {
        CliError::Invalid(format!("--codec {codec}: not lz4, lzo, zstd or zstd:1..22"))
    })?;
    Ok((backend, compressor))
}

fn size(field: &str, text: &str) -> Result<u64, CliError> {
    let bytes = pageframe::machine::parse_size(field, text)?;
    if bytes == 0 || bytes % 4096 != 0 {
        return Err(CliError::Invalid(format!(
            "{field} {text}: not a positive multiple of 4 KiB"
        )));
    }
    Ok(bytes)
}

fn fuse_threads(threads: usize) -> Result<usize, CliError> {
    if !(1..=64).contains(&threads) {
        return Err(CliError::Invalid(format!(
            "--threads {threads}: not in 1..=64"
        )));
    }
    Ok(threads)
}

fn serve_plan(args: ZramServeArgs) -> Result<ZramPlan, CliError> {
    let (backend, compressor) = backend_and_codec(&args.backend, &args.codec)?;
    let disk_bytes = size("--size", &args.size)?;
    let memory_bytes = match &args.memory {
        Some(text) => size("--memory", text)?,
        None => 0,
    };
    let threads = fuse_threads(args.threads)?;
    if args.trace_corpus.is_some() && args.trace.is_none() {
        return Err(CliError::Invalid(
            "--trace-corpus: only with --trace (it sizes the trace's pages)".into(),
        ));
    }
    if let Some(trace) = &args.trace {
        crate::arg_checks::check_out_file("--trace", trace)?;
    }
    if let Some(corpus) = &args.trace_corpus {
        crate::arg_checks::check_in_file("--trace-corpus", corpus)?;
    }
    let mountpoint = args.mountpoint.unwrap_or_else(|| {
        std::env::temp_dir().join(format!("pageframe-zram-{}", std::process::id()))
    });
    let device = DeviceConfig {
        backend,
        compressor,
        disk_bytes,
        memory_bytes,
    };
    device
        .check_host(pageframe_lab::host_memory::available())
        .map_err(|err| CliError::Invalid(err.to_string()))?;
    Ok(ZramPlan::Serve {
        config: ServeConfig {
            device,
            mountpoint,
            io: if args.buffered {
                LoopIo::Buffered
            } else {
                LoopIo::Direct
            },
            threads,
        },
        trace: args.trace,
        trace_corpus: args.trace_corpus,
        interval: Duration::from_secs(args.interval),
    })
}

fn bench_plan(args: ZramBenchArgs) -> Result<ZramPlan, CliError> {
    let (backend, compressor) = backend_and_codec(&args.backend, &args.codec)?;
    let disk_bytes = size("--size", &args.size)?;
    throughput::check_host_memory(disk_bytes, pageframe_lab::host_memory::available())
        .map_err(|err| CliError::Invalid(format!("--size {}: {err}", args.size)))?;
    let fuse_threads = fuse_threads(args.threads)?;
    if let Some(corpus) = &args.corpus {
        crate::arg_checks::check_in_file("--corpus", corpus)?;
    }
    let writers = args
        .writers
        .split(',')
        .map(|item| match item.trim().parse::<usize>() {
            Ok(count) if (1..=MAX_WRITERS).contains(&count) => Ok(count),
            _ => Err(CliError::Invalid(format!(
                "--writers {}: '{item}' is not a count in 1..={MAX_WRITERS}",
                args.writers
            ))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    // Each count is a point of the table: one listed twice is the same
    // measurement twice.
    if let Some((_, count)) = writers
        .iter()
        .enumerate()
        .find(|(at, count)| writers[..*at].contains(count))
    {
        return Err(CliError::Invalid(format!(
            "--writers {}: {count} is listed twice",
            args.writers
        )));
    }
    if let Some(writers) = writers
        .iter()
        .find(|writers| disk_bytes / 4096 < **writers as u64)
    {
        return Err(CliError::Invalid(format!(
            "--size {}: fewer pages than {writers} writers",
            args.size
        )));
    }
    Ok(ZramPlan::Bench(BenchConfig {
        device: DeviceConfig {
            backend,
            compressor,
            disk_bytes,
            memory_bytes: 0,
        },
        fuse_threads,
        writers,
        tarball: args.corpus,
    }))
}

/// Serves until Ctrl-C, or measures.
pub fn execute(plan: ZramPlan, out: &mut dyn Write) -> Result<(), CliError> {
    match plan {
        ZramPlan::Serve {
            config,
            trace,
            trace_corpus,
            interval,
        } => {
            // Before anything is mounted: a tarball that cannot be read is
            // a one-line error; a machine that cannot serve says so before
            // the tarball is read.
            let trace_sizes = match trace_corpus {
                Some(path) => {
                    if let Some(reason) = zram_serve::unsupported_reason() {
                        return Err(CliError::Invalid(format!(
                            "cannot serve a block device here: {reason}"
                        )));
                    }
                    let threads =
                        std::thread::available_parallelism().unwrap_or(std::num::NonZeroUsize::MIN);
                    Some(TraceSizes::of_tarball(&path, threads).map_err(CliError::Invalid)?)
                }
                None => None,
            };
            zram_serve::serve_until_signalled(config, trace.as_deref(), trace_sizes, interval, out)
        }
        ZramPlan::Bench(config) => throughput::bench(&config, out),
    }
    .map_err(|err| CliError::Invalid(err.to_string()))
}
