//! The block trace of a zram device: what the zram model needs from each
//! request the kernel sent, and not the data. Per write of a page its index
//! and either "same-filled" or the size it compresses to with each of
//! [`TRACE_CODECS`]; per discard the page range; step marks (with, when
//! recorded beside a real /dev/zram, the kernel's mm_stat at that point).
//!
//! File layout: the magic `PFZBLKT1`, then a zstd stream of records. Each
//! record is a tag byte and LEB128 numbers: `W` page-delta (zigzag, from the
//! page after the last write) flags (1: same-filled, no sizes; 0: three
//! sizes follow; any other value is refused) [sizes…]; `D` first pages; `S` label-len
//! label has-real [orig compr used]; `E` ends the trace. A file without the
//! end record is truncated. Errors name the byte offset: in the file for the
//! header and the compressed stream, in the record stream for a record. A
//! reader refuses a record reaching past [`MAX_TRACE_PAGES`] (a replay
//! sizes its device from the trace), a size over [`MAX_OBJECT_SIZE`],
//! more than 2^25 records or [`MAX_TRACE_STEPS`] step marks, a record
//! stream over 256 MiB and a file longer than such a stream compresses to.

use pageframe::zram::{page_same_filled, Compressor, Prepared, ZramError};
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// The codecs whose sizes every write record carries, in order.
pub const TRACE_CODECS: [Compressor; 3] = [
    Compressor::Lz4,
    Compressor::Lzo,
    Compressor::Zstd { level: 3 },
];

const MAGIC: &[u8; 8] = b"PFZBLKT1";

/// The most pages a trace may address: a device of 64 GiB in 4 KiB pages
/// (the live recordings use 4 GiB). A replay sizes its device from the
/// trace, so a file naming a far page is refused when read.
pub const MAX_TRACE_PAGES: u64 = 1 << 24;

/// The largest compressed size a write record may give: zcomp's buffer of
/// two pages (a compressor's output for a 4 KiB page never exceeds it). A
/// replay builds a stand-in object of each size it meets.
pub const MAX_OBJECT_SIZE: u32 = 2 * 4096;

/// The most records a trace may hold: about 2 GiB in memory, and as many
/// as a real trace within [`MAX_RECORD_STREAM`] holds (the shipped
/// quick-scale trace takes 8.9 bytes a record: 30 million records, some
/// 70 rounds of the whole tree, in 256 MiB). Without it, a small file of
/// three-byte records within that stream would take some 6 GiB.
const MAX_TRACE_RECORDS: usize = 1 << 25;

/// The most step marks a trace may hold. A recording marks six a round
/// (untar and five removals) and takes at most 100 rounds; a replay makes
/// a row of each for every allocator, some 4 KiB apiece with its output,
/// so a million marks (a few hundred bytes compressed) asked for 12 GB.
pub const MAX_TRACE_STEPS: usize = 1 << 12;

/// The largest record stream a trace file may decompress to (the shipped
/// quick-scale trace's is about 10 MiB, a full-scale one about 25 MiB).
const MAX_RECORD_STREAM: u64 = 256 << 20;

/// How many untar rounds of a tarball with `data_pages` pages of file data
/// a recording may take and still be readable. A round records about 1.1
/// records a data page (the shipped trace: 1 231 265 records for 3 rounds
/// of 362 606 data pages; the rest is ext4's metadata and journal), taking
/// 8.9 bytes each; 1.5 records of 12 bytes are allowed, so a recording that
/// this allows is always within the reader's limits (2^25 records, 256 MiB
/// of record stream).
pub fn rounds_that_fit(data_pages: u64) -> u64 {
    const RECORD_BYTES: u64 = 12;
    let records = (MAX_TRACE_RECORDS as u64).min(MAX_RECORD_STREAM / RECORD_BYTES);
    records / data_pages.saturating_mul(3).div_ceil(2).max(1)
}
/// The largest trace file read: the magic and the most that zstd can make
/// of the largest record stream (its bound is the input plus 1/256 and a
/// few bytes; 1/128 is allowed). A longer file (`/dev/zero`) is refused
/// before it fills memory.
const MAX_FILE_BYTES: u64 = MAGIC.len() as u64 + MAX_RECORD_STREAM + (MAX_RECORD_STREAM >> 7);
const TAG_WRITE: u8 = b'W';
const TAG_DISCARD: u8 = b'D';
const TAG_STEP: u8 = b'S';
const TAG_END: u8 = b'E';
const FLAG_SAME: u8 = 1;

/// The kernel's figures at a step (bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RealStat {
    /// `orig_data_size`.
    pub orig: u64,
    /// `compr_data_size`.
    pub compr: u64,
    /// `mem_used_total`.
    pub used: u64,
}

/// One record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceRecord {
    /// A page written: `None` when same-filled, else its compressed size
    /// per codec of [`TRACE_CODECS`].
    Write {
        /// Page index.
        page: u64,
        /// Sizes per codec.
        sizes: Option<[u32; 3]>,
    },
    /// Pages discarded.
    Discard {
        /// First page.
        first: u64,
        /// Pages.
        pages: u64,
    },
    /// A point of the workload (after `untar`, after `rm drivers`, …).
    Step {
        /// Round, from 1.
        round: u32,
        /// What was just done.
        label: String,
        /// The real device's mm_stat, when one ran beside.
        real: Option<RealStat>,
    },
}

impl TraceRecord {
    /// The record of writing `page` to slot `index`.
    pub fn write_of(index: u64, page: &[u8]) -> Result<TraceRecord, ZramError> {
        Ok(TraceRecord::Write {
            page: index,
            sizes: sizes_of(page)?,
        })
    }
}

/// What a write record carries for `page`: `None` when it is same-filled,
/// else its compressed size with each of [`TRACE_CODECS`].
pub fn sizes_of(page: &[u8]) -> Result<Option<[u32; 3]>, ZramError> {
    if page_same_filled(page).is_some() {
        return Ok(None);
    }
    let mut sizes = [0u32; 3];
    for (size, codec) in sizes.iter_mut().zip(TRACE_CODECS) {
        *size = match Prepared::new(codec, page)? {
            Prepared::Compressed { bytes, .. } => bytes.len() as u32,
            Prepared::Same { .. } => 0,
        };
    }
    Ok(Some(sizes))
}

fn put(out: &mut Vec<u8>, mut value: u64) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn zigzag(value: i64) -> u64 {
    ((value << 1) ^ (value >> 63)) as u64
}

fn unzigzag(value: u64) -> i64 {
    ((value >> 1) as i64) ^ -((value & 1) as i64)
}

/// Encodes records; remembers the page a write delta counts from.
#[derive(Default)]
struct Encoder {
    next_page: u64,
}

impl Encoder {
    fn encode(&mut self, record: &TraceRecord, out: &mut Vec<u8>) {
        match record {
            TraceRecord::Write { page, sizes } => {
                out.push(TAG_WRITE);
                put(out, zigzag(page.wrapping_sub(self.next_page) as i64));
                self.next_page = page.wrapping_add(1);
                match sizes {
                    None => out.push(FLAG_SAME),
                    Some(sizes) => {
                        out.push(0);
                        for size in sizes {
                            put(out, u64::from(*size));
                        }
                    }
                }
            }
            TraceRecord::Discard { first, pages } => {
                out.push(TAG_DISCARD);
                put(out, *first);
                put(out, *pages);
            }
            TraceRecord::Step { round, label, real } => {
                out.push(TAG_STEP);
                put(out, u64::from(*round));
                put(out, label.len() as u64);
                out.extend_from_slice(label.as_bytes());
                match real {
                    None => out.push(0),
                    Some(real) => {
                        out.push(1);
                        put(out, real.orig);
                        put(out, real.compr);
                        put(out, real.used);
                    }
                }
            }
        }
    }
}

/// Writes a trace file; [`TraceWriter::finish`] ends it (a writer dropped
/// without it leaves a truncated trace, which readers refuse).
///
/// Invariant: what it writes stays within what [`read_trace`] accepts,
/// 2^25 records in 256 MiB of record stream; records
/// past that are counted, not written, so the device being traced never
/// fails a write because its trace is full.
pub struct TraceWriter {
    stream: zstd::stream::Encoder<'static, BufWriter<File>>,
    encoder: Encoder,
    buffer: Vec<u8>,
    records: usize,
    stream_bytes: u64,
    not_recorded: u64,
    max_records: usize,
    max_stream: u64,
}

impl TraceWriter {
    /// Creates `path` with zstd at `level`.
    pub fn create(path: &Path, level: i32) -> io::Result<TraceWriter> {
        TraceWriter::create_within(path, level, MAX_TRACE_RECORDS, MAX_RECORD_STREAM)
    }

    /// Creates `path`, full at `max_records` or `max_stream` bytes.
    fn create_within(
        path: &Path,
        level: i32,
        max_records: usize,
        max_stream: u64,
    ) -> io::Result<TraceWriter> {
        let mut file = BufWriter::new(File::create(path)?);
        file.write_all(MAGIC)?;
        Ok(TraceWriter {
            stream: zstd::stream::Encoder::new(file, level)?,
            encoder: Encoder::default(),
            buffer: Vec::with_capacity(64),
            records: 0,
            stream_bytes: 0,
            not_recorded: 0,
            max_records,
            max_stream,
        })
    }

    /// Appends a record, or counts it when the trace is full.
    pub fn record(&mut self, record: &TraceRecord) -> io::Result<()> {
        if self.not_recorded > 0 {
            self.not_recorded += 1;
            return Ok(());
        }
        self.buffer.clear();
        self.encoder.encode(record, &mut self.buffer);
        // One byte is kept for the end record.
        let stream_bytes = self.stream_bytes + self.buffer.len() as u64;
        if self.records == self.max_records || stream_bytes + 1 > self.max_stream {
            self.not_recorded = 1;
            return Ok(());
        }
        self.records += 1;
        self.stream_bytes = stream_bytes;
        self.stream.write_all(&self.buffer)
    }

    /// Writes the end record and closes the file; returns how many records
    /// came after the trace was full and were not written.
    pub fn finish(mut self) -> io::Result<u64> {
        self.stream.write_all(&[TAG_END])?;
        self.stream.finish()?.flush()?;
        Ok(self.not_recorded)
    }
}

/// A trace file that could not be read.
#[derive(Debug, thiserror::Error)]
#[error("{}: {what} at byte {offset} {place}", path.display())]
pub struct TraceFileError {
    /// The file.
    pub path: PathBuf,
    /// The offset.
    pub offset: u64,
    /// `of the file` or `of the record stream`.
    pub place: &'static str,
    /// What is wrong.
    pub what: String,
}

/// Reads the records of a trace file.
pub fn read_trace(path: &Path) -> Result<Vec<TraceRecord>, TraceFileError> {
    let error = |offset: u64, what: String| TraceFileError {
        path: path.to_path_buf(),
        offset,
        place: "of the file",
        what,
    };
    let bytes = crate::files::read_bytes(path, MAX_FILE_BYTES)
        .map_err(|err| error(0, err.to_string()))?
        .ok_or_else(|| {
            error(
                MAX_FILE_BYTES,
                format!("larger than any trace ({MAX_FILE_BYTES} bytes)"),
            )
        })?;
    parse_trace(&bytes, path)
}

/// Decodes the bytes of a trace file named `path` (for errors).
pub fn parse_trace(bytes: &[u8], path: &Path) -> Result<Vec<TraceRecord>, TraceFileError> {
    let error = |offset: u64, place: &'static str, what: String| TraceFileError {
        path: path.to_path_buf(),
        offset,
        place,
        what,
    };
    if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
        return Err(error(
            0,
            "of the file",
            "not a pageframe zram block trace (no PFZBLKT1 magic)".into(),
        ));
    }
    let mut stream = Vec::new();
    let decoder = zstd::stream::Decoder::new(&bytes[MAGIC.len()..])
        .map_err(|err| error(MAGIC.len() as u64, "of the file", err.to_string()))?;
    if let Err(err) = decoder.take(MAX_RECORD_STREAM + 1).read_to_end(&mut stream) {
        return Err(error(
            bytes.len() as u64,
            "of the file",
            format!("compressed records end early or are damaged ({err})"),
        ));
    }
    if stream.len() as u64 > MAX_RECORD_STREAM {
        return Err(error(
            MAGIC.len() as u64,
            "of the file",
            format!("the records decompress to more than {MAX_RECORD_STREAM} bytes"),
        ));
    }
    decode(&stream).map_err(|(offset, what)| error(offset, "of the record stream", what))
}

/// What a record reaching `page` is told.
fn beyond_the_device(page: u64) -> String {
    format!(
        "page {page} is past the {MAX_TRACE_PAGES} pages ({} GiB) a trace may address",
        MAX_TRACE_PAGES >> 18
    )
}

/// The pages `records` address: one past the highest page written or
/// discarded, at least 1.
pub fn addressed_pages(records: &[TraceRecord]) -> u64 {
    records
        .iter()
        .map(|record| match record {
            TraceRecord::Write { page, .. } => page.saturating_add(1),
            TraceRecord::Discard { first, pages } => first.saturating_add(*pages),
            TraceRecord::Step { .. } => 0,
        })
        .max()
        .unwrap_or(0)
        .max(1)
}

/// Decodes a record stream; an error gives the offset and what is wrong.
fn decode(stream: &[u8]) -> Result<Vec<TraceRecord>, (u64, String)> {
    decode_at_most(stream, MAX_TRACE_RECORDS)
}

/// [`decode`], refusing a stream of more than `limit` records.
fn decode_at_most(stream: &[u8], limit: usize) -> Result<Vec<TraceRecord>, (u64, String)> {
    let mut at = 0usize;
    let truncated = |at: usize| (at as u64, "truncated record".to_string());
    let number = |at: &mut usize| -> Result<u64, (u64, String)> {
        let start = *at;
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *stream.get(*at).ok_or_else(|| truncated(start))?;
            *at += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err((start as u64, "number longer than 64 bits".into()))
    };
    let mut records = Vec::new();
    let mut steps = 0usize;
    let mut next_page = 0u64;
    loop {
        let start = at;
        let tag = *stream.get(at).ok_or_else(|| {
            (
                at as u64,
                "no end record (the trace is truncated)".to_string(),
            )
        })?;
        at += 1;
        if tag != TAG_END && records.len() == limit {
            return Err((start as u64, format!("more than {limit} records")));
        }
        match tag {
            TAG_WRITE => {
                let delta = unzigzag(number(&mut at)?);
                let page = next_page.wrapping_add(delta as u64);
                next_page = page.wrapping_add(1);
                let flags = *stream.get(at).ok_or_else(|| truncated(start))?;
                at += 1;
                if flags & !FLAG_SAME != 0 {
                    return Err((start as u64, format!("unknown write flags {flags:#04x}")));
                }
                let sizes = if flags == FLAG_SAME {
                    None
                } else {
                    let mut sizes = [0u32; 3];
                    for size in &mut sizes {
                        // A compressed page is at least one byte (a page
                        // that compresses to nothing is same-filled).
                        *size = u32::try_from(number(&mut at)?)
                            .ok()
                            .filter(|size| (1..=MAX_OBJECT_SIZE).contains(size))
                            .ok_or_else(|| (start as u64, "size out of range".to_string()))?;
                    }
                    Some(sizes)
                };
                if page >= MAX_TRACE_PAGES {
                    return Err((start as u64, beyond_the_device(page)));
                }
                records.push(TraceRecord::Write { page, sizes });
            }
            TAG_DISCARD => {
                let first = number(&mut at)?;
                let pages = number(&mut at)?;
                if first
                    .checked_add(pages)
                    .is_none_or(|end| end > MAX_TRACE_PAGES)
                {
                    return Err((start as u64, beyond_the_device(first.saturating_add(pages))));
                }
                records.push(TraceRecord::Discard { first, pages });
            }
            TAG_STEP => {
                if steps == MAX_TRACE_STEPS {
                    return Err((
                        start as u64,
                        format!("more than {MAX_TRACE_STEPS} step marks"),
                    ));
                }
                steps += 1;
                let round = u32::try_from(number(&mut at)?)
                    .map_err(|_| (start as u64, "round out of range".to_string()))?;
                let len = usize::try_from(number(&mut at)?)
                    .map_err(|_| (start as u64, "label length out of range".to_string()))?;
                let label = stream
                    .get(at..at.saturating_add(len))
                    .ok_or_else(|| truncated(start))?;
                let label = String::from_utf8(label.to_vec())
                    .map_err(|_| (at as u64, "label is not UTF-8".to_string()))?;
                at += len;
                let has_real = *stream.get(at).ok_or_else(|| truncated(start))?;
                at += 1;
                let real = match has_real {
                    0 => None,
                    1 => Some(RealStat {
                        orig: number(&mut at)?,
                        compr: number(&mut at)?,
                        used: number(&mut at)?,
                    }),
                    other => return Err((at as u64 - 1, format!("bad real-stat flag {other}"))),
                };
                records.push(TraceRecord::Step { round, label, real });
            }
            TAG_END => {
                if at != stream.len() {
                    return Err((at as u64, "bytes after the end record".into()));
                }
                return Ok(records);
            }
            other => return Err((start as u64, format!("unknown record tag {other:#04x}"))),
        }
    }
}

#[cfg(test)]
mod tests;
