//! The `.pftrace` file: a compact binary form of a [`Trace`].
//!
//! Layout (all integers little-endian):
//!
//! ```text
//! offset 0   magic      8 bytes  "PGFTRACE"
//! offset 8   version    u32      1, or 2 when the trace holds worker runs
//! offset 12  flags      u32      0 (reserved)
//! offset 16  meta_count u32, then per entry: u32 key length, key bytes,
//!            u32 value length, value bytes (UTF-8)
//!            event_count u64, payload_len u64, payload, checksum u64
//!            (FNV-1a 64 of the payload), end of file
//! ```
//!
//! An event in the payload: one tag byte (bits 0-2 kind, bit 3 the flag,
//! bits 4-7 the order, 15 meaning "order in the next byte"), then LEB128
//! varints: CPU, nanoseconds since the previous event, zigzag PFN delta from
//! the previous PFN of the same CPU; then by kind: alloc `migratetype` byte and
//! varint `gfp`; zone-locked and drain a `migratetype` byte; extfrag
//! `fallback_order`, `migratetype`, `fallback_migratetype` bytes. A vmstat
//! worker run (kind 6, version 2 on) has no block: no PFN delta, nothing
//! after its time, and its PFN is 0.
//! Version 1 is version 2 without kind 6; this build reads both.
//!
//! Invariant: `decode(encode(t)) == t` for every trace that passes
//! [`Trace::check_invariants`]. Decoding never panics: every error names
//! the byte offset where the file stopped making sense, except a decoded
//! trace that breaks those invariants (such as a worker run with a block's
//! fields), which is refused naming the event.

use super::event::{EventKind, Trace, TraceEvent};
use super::{TraceError, MAX_TRACE_EVENTS, MAX_TRACE_FILE_BYTES};

/// The first 8 bytes of every trace file.
pub const MAGIC: &[u8; 8] = b"PGFTRACE";
/// The newest version this code reads and writes.
pub const FORMAT_VERSION: u32 = 2;
/// The oldest version this code reads (1: no vmstat worker runs). A trace
/// without worker runs is written as version 1, which older builds read.
const OLDEST_VERSION: u32 = 1;

/// FNV-1a over `bytes` (the payload checksum).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |hash, &byte| {
        (hash ^ byte as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) -> Result<(), TraceError> {
    let len = u32::try_from(bytes.len())
        .map_err(|_| TraceError::Invalid(format!("a metadata string of {} bytes", bytes.len())))?;
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(bytes);
    Ok(())
}

/// Encodes a trace. Fails only when the trace breaks
/// [`Trace::check_invariants`] or a metadata string exceeds 4 GiB.
pub fn encode(trace: &Trace) -> Result<Vec<u8>, TraceError> {
    trace.check_invariants()?;
    let mut out = Vec::with_capacity(64 + trace.events.len() * 6);
    out.extend_from_slice(MAGIC);
    let version = if trace
        .events
        .iter()
        .any(|event| event.kind == EventKind::VmstatWork)
    {
        FORMAT_VERSION
    } else {
        OLDEST_VERSION
    };
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    let meta_count = u32::try_from(trace.meta.len())
        .map_err(|_| TraceError::Invalid("too many metadata entries".to_string()))?;
    out.extend_from_slice(&meta_count.to_le_bytes());
    for (key, value) in &trace.meta {
        put_bytes(&mut out, key.as_bytes())?;
        put_bytes(&mut out, value.as_bytes())?;
    }
    let payload = encode_events(&trace.events);
    out.extend_from_slice(&(trace.events.len() as u64).to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&payload);
    out.extend_from_slice(&fnv1a(&payload).to_le_bytes());
    Ok(out)
}

fn encode_events(events: &[TraceEvent]) -> Vec<u8> {
    let mut out = Vec::with_capacity(events.len() * 6);
    let mut previous_ts = 0u64;
    let mut previous_pfn = vec![0u64; 1 << 16];
    for event in events {
        let order_bits = if event.order < 15 { event.order } else { 15 };
        out.push(event.kind as u8 | (event.flag as u8) << 3 | order_bits << 4);
        if order_bits == 15 {
            out.push(event.order);
        }
        put_varint(&mut out, event.cpu as u64);
        put_varint(&mut out, event.timestamp - previous_ts);
        previous_ts = event.timestamp;
        if event.kind != EventKind::VmstatWork {
            let previous = &mut previous_pfn[event.cpu as usize];
            let delta = event.pfn.wrapping_sub(*previous) as i64;
            put_varint(&mut out, ((delta << 1) ^ (delta >> 63)) as u64);
            *previous = event.pfn;
        }
        match event.kind {
            EventKind::Alloc => {
                out.push(event.migratetype as u8);
                put_varint(&mut out, event.gfp as u64);
            }
            EventKind::ZoneLocked | EventKind::PcpuDrain => out.push(event.migratetype as u8),
            EventKind::Extfrag => {
                out.push(event.fallback_order);
                out.push(event.migratetype as u8);
                out.push(event.fallback_migratetype as u8);
            }
            EventKind::Free | EventKind::FreeBatched | EventKind::VmstatWork => {}
        }
    }
    out
}

/// A cursor over the file that reports absolute offsets in its errors.
struct Reader<'a> {
    bytes: &'a [u8],
    offset: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, len: usize, what: &str) -> Result<&'a [u8], TraceError> {
        let end = self
            .offset
            .checked_add(len)
            .filter(|&end| end <= self.bytes.len())
            .ok_or_else(|| TraceError::Truncated {
                offset: self.offset as u64,
                what: what.to_string(),
            })?;
        let slice = &self.bytes[self.offset..end];
        self.offset = end;
        Ok(slice)
    }

    #[inline]
    fn u8(&mut self, what: &str) -> Result<u8, TraceError> {
        match self.bytes.get(self.offset) {
            Some(&byte) => {
                self.offset += 1;
                Ok(byte)
            }
            None => Err(self.truncated(what)),
        }
    }

    #[cold]
    fn truncated(&self, what: &str) -> TraceError {
        TraceError::Truncated {
            offset: self.offset as u64,
            what: what.to_string(),
        }
    }

    fn u32(&mut self, what: &str) -> Result<u32, TraceError> {
        let bytes = self.take(4, what)?;
        Ok(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
    }

    fn u64(&mut self, what: &str) -> Result<u64, TraceError> {
        let mut word = [0u8; 8];
        word.copy_from_slice(self.take(8, what)?);
        Ok(u64::from_le_bytes(word))
    }

    #[inline]
    fn varint(&mut self, what: &str) -> Result<u64, TraceError> {
        // Most varints of a trace are one byte.
        if let Some(&byte) = self.bytes.get(self.offset) {
            if byte < 0x80 {
                self.offset += 1;
                return Ok(byte as u64);
            }
        }
        self.varint_long(what)
    }

    fn varint_long(&mut self, what: &str) -> Result<u64, TraceError> {
        let start = self.offset;
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.u8(what)?;
            value |= ((byte & 0x7f) as u64) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(TraceError::Corrupt {
            offset: start as u64,
            reason: format!("{what}: varint longer than 10 bytes"),
        })
    }

    fn string(&mut self, what: &str) -> Result<String, TraceError> {
        let len = self.u32(what)? as usize;
        let start = self.offset;
        let bytes = self.take(len, what)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| TraceError::Corrupt {
            offset: start as u64,
            reason: format!("{what} is not UTF-8"),
        })
    }
}

/// The first bytes of a file where a magic is expected, as a message
/// shows them (escaped: a binary file's bytes are no text).
pub(super) fn magic_text(bytes: &[u8]) -> String {
    let head = &bytes[..bytes.len().min(MAGIC.len())];
    String::from_utf8_lossy(head).escape_debug().to_string()
}

/// Decodes a trace file. Errors name the offset: a foreign file (bad
/// magic), an unknown version, a truncated section, a corrupt event or a
/// checksum mismatch.
pub fn decode(bytes: &[u8]) -> Result<Trace, TraceError> {
    let mut reader = Reader { bytes, offset: 0 };
    let magic = reader.take(MAGIC.len(), "magic")?;
    if magic != MAGIC {
        return Err(TraceError::Foreign {
            offset: 0,
            found: magic_text(magic),
        });
    }
    let version = reader.u32("version")?;
    if !(OLDEST_VERSION..=FORMAT_VERSION).contains(&version) {
        return Err(TraceError::Corrupt {
            offset: 8,
            reason: format!(
                "version {version}, this build reads versions {OLDEST_VERSION} to {FORMAT_VERSION}"
            ),
        });
    }
    let flags = reader.u32("flags")?;
    if flags != 0 {
        return Err(TraceError::Corrupt {
            offset: 12,
            reason: format!("unknown flags {flags:#x}"),
        });
    }
    let meta_count = reader.u32("metadata count")?;
    let mut meta = Vec::new();
    for _ in 0..meta_count {
        let key = reader.string("metadata key")?;
        let value = reader.string("metadata value")?;
        meta.push((key, value));
    }
    let event_count_offset = reader.offset as u64;
    let event_count = reader.u64("event count")?;
    if event_count > MAX_TRACE_EVENTS as u64 {
        return Err(TraceError::Corrupt {
            offset: event_count_offset,
            reason: format!("{event_count} events, over the limit of {MAX_TRACE_EVENTS}"),
        });
    }
    let payload_len_offset = reader.offset;
    let payload_len =
        usize::try_from(reader.u64("payload length")?).map_err(|_| TraceError::Corrupt {
            offset: payload_len_offset as u64,
            reason: "payload length does not fit in memory".to_string(),
        })?;
    let payload_offset = reader.offset;
    let payload = reader.take(payload_len, "event payload")?;
    let checksum_offset = reader.offset;
    let checksum = reader.u64("checksum")?;
    if checksum != fnv1a(payload) {
        return Err(TraceError::Corrupt {
            offset: checksum_offset as u64,
            reason: "payload checksum mismatch".to_string(),
        });
    }
    if reader.offset != bytes.len() {
        return Err(TraceError::Corrupt {
            offset: reader.offset as u64,
            reason: format!("{} bytes after the end", bytes.len() - reader.offset),
        });
    }
    let events = decode_events(bytes, payload_offset, payload_len, event_count, version)?;
    let trace = Trace { meta, events };
    trace.check_invariants()?;
    Ok(trace)
}

fn decode_events(
    bytes: &[u8],
    payload_offset: usize,
    payload_len: usize,
    event_count: u64,
    version: u32,
) -> Result<Vec<TraceEvent>, TraceError> {
    // Every event takes at least 3 bytes (a worker run: tag, CPU, time): no
    // allocation beyond what the payload can hold, whatever the count claims.
    let capacity = usize::try_from(event_count)
        .unwrap_or(usize::MAX)
        .min(payload_len / 3);
    let mut events = Vec::with_capacity(capacity);
    let mut reader = Reader {
        bytes: &bytes[..payload_offset + payload_len],
        offset: payload_offset,
    };
    let mut timestamp = 0u64;
    let mut previous_pfn = vec![0u64; 1 << 16];
    for _ in 0..event_count {
        let start = reader.offset as u64;
        let tag = reader.u8("event tag")?;
        let kind = EventKind::from_tag(tag & 7)
            .filter(|&kind| version >= 2 || kind != EventKind::VmstatWork)
            .ok_or_else(|| TraceError::Corrupt {
                offset: start,
                reason: format!("unknown event kind {} in a version {version} file", tag & 7),
            })?;
        let mut order = tag >> 4;
        if order == 15 {
            order = reader.u8("event order")?;
        }
        let cpu = u16::try_from(reader.varint("event cpu")?).map_err(|_| TraceError::Corrupt {
            offset: start,
            reason: "cpu above 65535".to_string(),
        })?;
        let delta = reader.varint("event time")?;
        timestamp = timestamp
            .checked_add(delta)
            .ok_or_else(|| TraceError::Corrupt {
                offset: start,
                reason: "timestamp overflow".to_string(),
            })?;
        let pfn = if kind == EventKind::VmstatWork {
            0
        } else {
            let zigzag = reader.varint("event pfn")?;
            let pfn_delta = ((zigzag >> 1) as i64) ^ -((zigzag & 1) as i64);
            let previous = &mut previous_pfn[cpu as usize];
            *previous = previous.wrapping_add(pfn_delta as u64);
            *previous
        };
        let mut event = TraceEvent::new(kind, timestamp, cpu, pfn);
        event.order = order;
        event.flag = tag & 8 != 0;
        match kind {
            EventKind::Alloc => {
                event.migratetype = reader.u8("alloc migratetype")? as i8;
                event.gfp = u32::try_from(reader.varint("alloc gfp")?).map_err(|_| {
                    TraceError::Corrupt {
                        offset: start,
                        reason: "gfp flags above 32 bits".to_string(),
                    }
                })?;
            }
            EventKind::ZoneLocked | EventKind::PcpuDrain => {
                event.migratetype = reader.u8("event migratetype")? as i8;
            }
            EventKind::Extfrag => {
                event.fallback_order = reader.u8("extfrag fallback order")?;
                event.migratetype = reader.u8("extfrag migratetype")? as i8;
                event.fallback_migratetype = reader.u8("extfrag fallback migratetype")? as i8;
            }
            EventKind::Free | EventKind::FreeBatched | EventKind::VmstatWork => {}
        }
        events.push(event);
    }
    if reader.offset != payload_offset + payload_len {
        return Err(TraceError::Corrupt {
            offset: reader.offset as u64,
            reason: format!("{event_count} events end before the payload does"),
        });
    }
    Ok(events)
}

/// Reads a trace file.
/// A file over [`MAX_TRACE_FILE_BYTES`] is refused before it is read whole.
pub fn read_file(path: &std::path::Path) -> Result<Trace, TraceError> {
    let bytes = crate::files::read_bytes(path, MAX_TRACE_FILE_BYTES)
        .map_err(|err| TraceError::io(path, err))?
        .ok_or_else(|| {
            TraceError::Invalid(format!(
                "{} is over the limit of {} MiB for a trace file",
                path.display(),
                MAX_TRACE_FILE_BYTES >> 20
            ))
        })?;
    decode(&bytes)
}

/// Writes a trace file.
pub fn write_file(path: &std::path::Path, trace: &Trace) -> Result<(), TraceError> {
    let bytes = encode(trace)?;
    std::fs::write(path, bytes).map_err(|err| TraceError::io(path, err))
}
