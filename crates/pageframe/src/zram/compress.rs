//! The compressors of a zram device (the kernel's zcomp backends): lz4, the
//! kernel's default, and zstd at a chosen level.
//!
//! Owns: one compression context per device and its output buffer (the
//! kernel's per-CPU `zcomp_strm`; one CPU here). Does not own: pages.
//!
//! A compressor is a pure function of the page: the same page gives the
//! same bytes every time, so a workload may compress a corpus once (in
//! parallel, with [`Compressor::compress_page`]) and write it to several
//! devices (see [`super::Prepared`]).

use super::ZramError;

/// Which algorithm a device compresses with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Compressor {
    /// lz4 (block format), the kernel's default `comp_algorithm`.
    #[default]
    Lz4,
    /// zstd at `level` (zstd's own range, 1..=22; 3 is zstd's default).
    Zstd {
        /// The compression level.
        level: i32,
    },
}

impl Compressor {
    /// The name as `comp_algorithm` shows it.
    pub fn name(self) -> &'static str {
        match self {
            Compressor::Lz4 => "lz4",
            Compressor::Zstd { .. } => "zstd",
        }
    }

    /// Parses `lz4`, `zstd` or `zstd:<level>`.
    pub fn parse(text: &str) -> Option<Compressor> {
        match text.split_once(':') {
            None if text == "lz4" => Some(Compressor::Lz4),
            None if text == "zstd" => Some(Compressor::Zstd { level: 3 }),
            Some(("zstd", level)) => level
                .parse()
                .ok()
                .filter(|level| (1..=22).contains(level))
                .map(|level| Compressor::Zstd { level }),
            _ => None,
        }
    }

    /// Checks the level.
    pub fn validate(self) -> Result<(), ZramError> {
        match self {
            Compressor::Zstd { level } if !(1..=22).contains(&level) => Err(ZramError::Config(
                format!("zstd level {level} is outside 1..=22"),
            )),
            _ => Ok(()),
        }
    }

    /// Compresses one page into a fresh buffer (a stateless convenience for
    /// workloads that compress in parallel; a device uses its own stream).
    pub fn compress_page(self, page: &[u8]) -> Result<Vec<u8>, ZramError> {
        let mut stream = Stream::new(self)?;
        let len = stream.compress(page)?;
        Ok(stream.buffer[..len].to_vec())
    }
}

/// A compression stream: context and output buffer (`struct zcomp_strm`).
pub(crate) struct Stream {
    algorithm: Compressor,
    zstd_compress: Option<zstd::bulk::Compressor<'static>>,
    zstd_decompress: Option<zstd::bulk::Decompressor<'static>>,
    /// Output of the last compression (two pages, as zcomp allocates).
    pub(crate) buffer: Vec<u8>,
}

fn failed(what: &str, err: impl std::fmt::Display) -> ZramError {
    ZramError::Codec(format!("{what}: {err}"))
}

impl Stream {
    pub(crate) fn new(algorithm: Compressor) -> Result<Stream, ZramError> {
        algorithm.validate()?;
        let (zstd_compress, zstd_decompress) = match algorithm {
            Compressor::Lz4 => (None, None),
            Compressor::Zstd { level } => (
                Some(zstd::bulk::Compressor::new(level).map_err(|err| failed("zstd", err))?),
                Some(zstd::bulk::Decompressor::new().map_err(|err| failed("zstd", err))?),
            ),
        };
        Ok(Stream {
            algorithm,
            zstd_compress,
            zstd_decompress,
            buffer: Vec::new(),
        })
    }

    /// Compresses `page` into `self.buffer`; returns the length
    /// (zcomp_compress()).
    pub(crate) fn compress(&mut self, page: &[u8]) -> Result<usize, ZramError> {
        match self.algorithm {
            Compressor::Lz4 => {
                let bound = lz4_flex::block::get_maximum_output_size(page.len());
                self.buffer.resize(bound.max(2 * page.len()), 0);
                lz4_flex::block::compress_into(page, &mut self.buffer)
                    .map_err(|err| failed("lz4 compress", err))
            }
            Compressor::Zstd { .. } => {
                let bound = zstd::zstd_safe::compress_bound(page.len());
                self.buffer.resize(bound.max(2 * page.len()), 0);
                self.zstd_compress
                    .as_mut()
                    .expect("zstd stream")
                    .compress_to_buffer(page, &mut self.buffer[..])
                    .map_err(|err| failed("zstd compress", err))
            }
        }
    }

    /// Decompresses `src` into `page`, which it must fill exactly
    /// (zcomp_decompress()).
    pub(crate) fn decompress(&mut self, src: &[u8], page: &mut [u8]) -> Result<(), ZramError> {
        let len = match self.algorithm {
            Compressor::Lz4 => lz4_flex::block::decompress_into(src, page)
                .map_err(|err| failed("lz4 decompress", err))?,
            Compressor::Zstd { .. } => self
                .zstd_decompress
                .as_mut()
                .expect("zstd stream")
                .decompress_to_buffer(src, page)
                .map_err(|err| failed("zstd decompress", err))?,
        };
        if len != page.len() {
            return Err(ZramError::Codec(format!(
                "decompressed {len} bytes, a page is {}",
                page.len()
            )));
        }
        Ok(())
    }
}
