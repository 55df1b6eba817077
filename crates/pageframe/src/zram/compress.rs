//! The compressors of a zram device (the kernel's zcomp backends): lz4, the
//! kernel's default, zstd at a chosen level, and lzo.
//!
//! lzo here is LZO1X-1 (the `lzo1x` crate's fast compressor with a 2^14-entry
//! match dictionary, upstream LZO's LZO1X-1). The kernel's `lzo` backend is
//! LZO1X-1 too (lzo1x_1_compress(), lib/lzo), with a 2^13-entry dictionary:
//! the same bitstream, occasionally a few bytes apart in length. The afmalloc
//! document (2014) ran zram's default of its time, `lzo`; `lzo-rle`, zram's
//! default since 5.1, adds run-length codes that no maintained crate
//! produces, so it is not offered.
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
    /// lzo (LZO1X-1), the series' compressor; see the module header.
    Lzo,
}

/// The `lzo1x` crate's level for LZO1X-1 with upstream's dictionary.
const LZO1X_1: lzo1x::CompressLevel = lzo1x::CompressLevel::new(3);

impl Compressor {
    /// The name as `comp_algorithm` shows it.
    pub fn name(self) -> &'static str {
        match self {
            Compressor::Lz4 => "lz4",
            Compressor::Zstd { .. } => "zstd",
            Compressor::Lzo => "lzo",
        }
    }

    /// Parses `lz4`, `lzo`, `zstd` or `zstd:<level>`.
    pub fn parse(text: &str) -> Option<Compressor> {
        match text.split_once(':') {
            None if text == "lz4" => Some(Compressor::Lz4),
            None if text == "lzo" => Some(Compressor::Lzo),
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
            Compressor::Lz4 | Compressor::Lzo => (None, None),
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
            Compressor::Lzo => {
                let compressed = lzo1x::compress(page, LZO1X_1);
                self.buffer.clear();
                self.buffer.extend_from_slice(&compressed);
                // zcomp's buffer is two pages; keep at least that.
                self.buffer.resize(compressed.len().max(2 * page.len()), 0);
                Ok(compressed.len())
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
            Compressor::Lzo => {
                lzo1x::decompress(src, page).map_err(|err| failed("lzo decompress", err))?;
                page.len()
            }
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
