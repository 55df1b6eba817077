//! `pageframe zram serve`: glue over `pageframe_lab::zram_serve`. Bad
//! names and sizes are one-line errors (exit status 2) before anything is
//! mounted.

use crate::args::ZramCommand;
use crate::error::CliError;
use pageframe::zram::{Backend, Compressor};
use pageframe_lab::zram_serve::{self, DeviceConfig, LoopIo, ServeConfig};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// A checked `zram` subcommand.
#[derive(Debug)]
pub struct ZramPlan {
    config: ServeConfig,
    trace: Option<PathBuf>,
    interval: Duration,
}

/// Checks the arguments.
pub fn plan(command: ZramCommand) -> Result<ZramPlan, CliError> {
    let ZramCommand::Serve(args) = command;
    let backend = Backend::parse(&args.backend).ok_or_else(|| {
        CliError::Invalid(format!(
            "--backend {}: not zsmalloc-chain4 … zsmalloc-chain16 or afmalloc",
            args.backend
        ))
    })?;
    let compressor = Compressor::parse(&args.codec).ok_or_else(|| {
        CliError::Invalid(format!(
            "--codec {}: not lz4, lzo, zstd or zstd:1..22",
            args.codec
        ))
    })?;
    let size = |field: &str, text: &str| -> Result<u64, CliError> {
        let bytes = pageframe::machine::parse_size(field, text)?;
        if bytes == 0 || bytes % 4096 != 0 {
            return Err(CliError::Invalid(format!(
                "{field} {text}: not a positive multiple of 4 KiB"
            )));
        }
        Ok(bytes)
    };
    let disk_bytes = size("--size", &args.size)?;
    let memory_bytes = match &args.memory {
        Some(text) => size("--memory", text)?,
        None => 0,
    };
    if !(1..=64).contains(&args.threads) {
        return Err(CliError::Invalid(format!(
            "--threads {}: not in 1..=64",
            args.threads
        )));
    }
    let mountpoint = args.mountpoint.unwrap_or_else(|| {
        std::env::temp_dir().join(format!("pageframe-zram-{}", std::process::id()))
    });
    Ok(ZramPlan {
        config: ServeConfig {
            device: DeviceConfig {
                backend,
                compressor,
                disk_bytes,
                memory_bytes,
            },
            mountpoint,
            io: if args.buffered {
                LoopIo::Buffered
            } else {
                LoopIo::Direct
            },
            threads: args.threads,
        },
        trace: args.trace,
        interval: Duration::from_secs(args.interval),
    })
}

/// Serves until Ctrl-C.
pub fn execute(plan: ZramPlan, out: &mut dyn Write) -> Result<(), CliError> {
    zram_serve::serve_until_signalled(plan.config, plan.trace.as_deref(), plan.interval, out)
        .map_err(|err| CliError::Invalid(err.to_string()))
}
