//! Decoding tracefs's binary output: the `format` files that give each
//! event's id and field offsets, and the ring-buffer sub-buffers that
//! `per_cpu/cpuN/trace_pipe_raw` returns.
//!
//! A sub-buffer (mirrors `struct buffer_data_page`, kernel/trace/ring_buffer.c):
//! a u64 timestamp, a `local_t` commit word (bytes of data in the low bits,
//! `RB_MISSED_EVENTS` in bit 31, `RB_MISSED_STORED` in bit 30, then the
//! number of missed events stored after the data), then the events. An event
//! header is a u32: `type_len` in bits 0-4, `time_delta` in bits 5-31;
//! `type_len` 1..=28 is a data event of `type_len * 4` bytes, 0 a data event
//! whose length follows in the next u32, 29 padding, 30 a time extension,
//! 31 an absolute time stamp (the header layout `events/header_event` prints).
//!
//! Nothing here touches the file system: callers pass the text and bytes.

use super::event::{EventKind, TraceEvent};
use super::TraceError;

const RB_MISSED_EVENTS: u64 = 1 << 31;
const RB_MISSED_STORED: u64 = 1 << 30;
const RB_COMMIT_MASK: u64 = (1 << 30) - 1;
const TYPE_PADDING: u32 = 29;
const TYPE_TIME_EXTEND: u32 = 30;
const TYPE_TIME_STAMP: u32 = 31;
/// Bits of an absolute time stamp that an event may carry (`TS_MSB` aside).
const TS_LOW_BITS: u64 = (1 << 59) - 1;

/// Where a field sits in an event record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldSpec {
    /// Byte offset in the record.
    pub offset: usize,
    /// Size in bytes (1, 2, 4 or 8).
    pub size: usize,
    /// Whether the field is signed.
    pub signed: bool,
}

/// One event's id and fields, from its `format` file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventFormat {
    /// The tracepoint.
    pub kind: EventKind,
    /// `ID:` (the record's `common_type`).
    pub id: u16,
    /// Fields by name.
    pub fields: Vec<(String, FieldSpec)>,
}

impl EventFormat {
    /// Parses a `format` file.
    pub fn parse(kind: EventKind, text: &str) -> Result<EventFormat, TraceError> {
        let bad = |reason: String| TraceError::Tracefs(format!("{}: {reason}", kind.tracepoint()));
        let mut id = None;
        let mut fields = Vec::new();
        for line in text.lines() {
            let line = line.trim();
            if let Some(rest) = line.strip_prefix("ID:") {
                id = Some(
                    rest.trim()
                        .parse::<u16>()
                        .map_err(|_| bad(format!("bad ID line {line:?}")))?,
                );
            } else if let Some(rest) = line.strip_prefix("field:") {
                let mut name = None;
                let (mut offset, mut size, mut signed) = (None, None, false);
                for part in rest.split(';') {
                    let part = part.trim();
                    if let Some(value) = part.strip_prefix("offset:") {
                        offset = value.parse::<usize>().ok();
                    } else if let Some(value) = part.strip_prefix("size:") {
                        size = value.parse::<usize>().ok();
                    } else if let Some(value) = part.strip_prefix("signed:") {
                        signed = value == "1";
                    } else if name.is_none() && !part.is_empty() {
                        name = part.rsplit(' ').next().map(str::to_string);
                    }
                }
                match (name, offset, size) {
                    (Some(name), Some(offset), Some(size @ (1 | 2 | 4 | 8))) => fields.push((
                        name,
                        FieldSpec {
                            offset,
                            size,
                            signed,
                        },
                    )),
                    _ => return Err(bad(format!("bad field line {line:?}"))),
                }
            }
        }
        let id = id.ok_or_else(|| bad("no ID line".to_string()))?;
        Ok(EventFormat { kind, id, fields })
    }

    fn field(&self, name: &str) -> Option<FieldSpec> {
        self.fields
            .iter()
            .find(|(field, _)| field == name)
            .map(|(_, spec)| *spec)
    }
}

/// Reads an integer field of a record; `None` when it lies outside.
fn read_field(record: &[u8], spec: FieldSpec) -> Option<i64> {
    let bytes = record.get(spec.offset..spec.offset.checked_add(spec.size)?)?;
    let mut word = [0u8; 8];
    word[..spec.size].copy_from_slice(bytes);
    let raw = u64::from_le_bytes(word);
    let shift = 64 - 8 * spec.size as u32;
    Some(if spec.signed {
        ((raw << shift) as i64) >> shift
    } else {
        raw as i64
    })
}

/// The field positions the decoder needs for one event, resolved once.
#[derive(Clone, Copy, Debug)]
struct Decoder {
    kind: EventKind,
    /// `None` for the vmstat worker's runs, which carry no block.
    pfn: Option<FieldSpec>,
    order: Option<FieldSpec>,
    migratetype: Option<FieldSpec>,
    gfp: Option<FieldSpec>,
    flag: Option<FieldSpec>,
    fallback_order: Option<FieldSpec>,
    fallback_migratetype: Option<FieldSpec>,
}

/// Decodes the records of the six kmem events, and of the vmstat worker's
/// runs, out of sub-buffers. The worker's event is `workqueue_execute_start`
/// filtered in the kernel to `vmstat_update`: every record of it is a run.
#[derive(Clone, Debug)]
pub struct RecordDecoder {
    /// By event id (seven entries: a linear scan beats a 64 Ki table).
    by_id: Vec<(u16, Decoder)>,
}

impl RecordDecoder {
    /// A decoder for these formats; every kmem one needs a `pfn` field.
    pub fn new(formats: &[EventFormat]) -> Result<RecordDecoder, TraceError> {
        let mut by_id = Vec::with_capacity(formats.len());
        for format in formats {
            let pfn = match format.kind {
                EventKind::VmstatWork => None,
                kind => Some(format.field("pfn").ok_or_else(|| {
                    TraceError::Tracefs(format!("{} has no pfn field", kind.tracepoint()))
                })?),
            };
            let extfrag = format.kind == EventKind::Extfrag;
            by_id.push((
                format.id,
                Decoder {
                    kind: format.kind,
                    pfn,
                    order: format.field(if extfrag { "alloc_order" } else { "order" }),
                    migratetype: format.field(if extfrag {
                        "alloc_migratetype"
                    } else {
                        "migratetype"
                    }),
                    gfp: format.field("gfp_flags"),
                    flag: format.field(if extfrag {
                        "change_ownership"
                    } else {
                        "percpu_refill"
                    }),
                    fallback_order: format.field("fallback_order"),
                    fallback_migratetype: format.field("fallback_migratetype"),
                },
            ));
        }
        Ok(RecordDecoder { by_id })
    }

    fn decode(&self, record: &[u8], timestamp: u64, cpu: u16) -> Option<TraceEvent> {
        let id = u16::from_le_bytes([*record.first()?, *record.get(1)?]);
        let decoder = self.by_id.iter().find(|(known, _)| *known == id)?.1;
        let small = |spec: Option<FieldSpec>| spec.and_then(|spec| read_field(record, spec));
        let pfn = match decoder.pfn {
            Some(spec) => read_field(record, spec)? as u64,
            None => return Some(TraceEvent::new(decoder.kind, timestamp, cpu, 0)),
        };
        let mut event = TraceEvent::new(decoder.kind, timestamp, cpu, pfn);
        event.order = small(decoder.order).unwrap_or(0).clamp(0, 255) as u8;
        event.migratetype = small(decoder.migratetype).unwrap_or(0).clamp(-1, 127) as i8;
        event.gfp = small(decoder.gfp).unwrap_or(0) as u32;
        event.flag = small(decoder.flag).unwrap_or(0) != 0;
        event.fallback_order = small(decoder.fallback_order).unwrap_or(0).clamp(0, 255) as u8;
        event.fallback_migratetype = small(decoder.fallback_migratetype)
            .unwrap_or(0)
            .clamp(-1, 127) as i8;
        Some(event)
    }

    /// Decodes one sub-buffer of `cpu` into `out`; returns the events the
    /// kernel reports as missed before it (0 when none, `u64::MAX` when it
    /// missed some without storing how many).
    pub fn decode_subbuffer(
        &self,
        page: &[u8],
        cpu: u16,
        out: &mut Vec<TraceEvent>,
    ) -> Result<u64, TraceError> {
        let bad = |offset: usize, reason: &str| {
            TraceError::Tracefs(format!("cpu{cpu} sub-buffer at byte {offset}: {reason}"))
        };
        if page.len() < 16 {
            return Err(bad(0, "shorter than its header"));
        }
        let mut word = [0u8; 8];
        word.copy_from_slice(&page[0..8]);
        let mut timestamp = u64::from_le_bytes(word);
        word.copy_from_slice(&page[8..16]);
        let commit = u64::from_le_bytes(word);
        let data_len = (commit & RB_COMMIT_MASK) as usize;
        let end = 16usize
            .checked_add(data_len)
            .filter(|&end| end <= page.len())
            .ok_or_else(|| bad(8, "commit beyond the sub-buffer"))?;
        let missed = if commit & RB_MISSED_EVENTS == 0 {
            0
        } else if commit & RB_MISSED_STORED != 0 && end + 8 <= page.len() {
            word.copy_from_slice(&page[end..end + 8]);
            u64::from_le_bytes(word)
        } else {
            u64::MAX
        };
        let u32_at = |offset: usize| -> Option<u32> {
            let bytes = page.get(offset..offset + 4)?;
            Some(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
        };
        let mut offset = 16;
        while offset < end {
            let header = u32_at(offset).ok_or_else(|| bad(offset, "truncated event header"))?;
            let type_len = header & 31;
            let delta = (header >> 5) as u64;
            match type_len {
                TYPE_PADDING => {
                    if delta == 0 {
                        break; // the rest of the sub-buffer is padding
                    }
                    let len = u32_at(offset + 4).ok_or_else(|| bad(offset, "truncated padding"))?;
                    offset += 4 + len as usize;
                }
                TYPE_TIME_EXTEND => {
                    let high = u32_at(offset + 4).ok_or_else(|| bad(offset, "truncated extend"))?;
                    timestamp += ((high as u64) << 27) | delta;
                    offset += 8;
                }
                TYPE_TIME_STAMP => {
                    let high = u32_at(offset + 4).ok_or_else(|| bad(offset, "truncated stamp"))?;
                    let absolute = (((high as u64) << 27) | delta) & TS_LOW_BITS;
                    timestamp = (timestamp & !TS_LOW_BITS) | absolute;
                    offset += 8;
                }
                0 => {
                    let len = u32_at(offset + 4).ok_or_else(|| bad(offset, "truncated length"))?;
                    let data_len = (len as usize).saturating_sub(4);
                    let start = offset + 8;
                    let record = page
                        .get(start..start + data_len)
                        .ok_or_else(|| bad(offset, "event beyond the data"))?;
                    timestamp += delta;
                    out.extend(self.decode(record, timestamp, cpu));
                    offset = start + ((data_len + 3) & !3);
                }
                _ => {
                    let start = offset + 4;
                    let len = type_len as usize * 4;
                    let record = page
                        .get(start..start + len)
                        .ok_or_else(|| bad(offset, "event beyond the data"))?;
                    timestamp += delta;
                    out.extend(self.decode(record, timestamp, cpu));
                    offset = start + len;
                }
            }
        }
        Ok(missed)
    }
}
