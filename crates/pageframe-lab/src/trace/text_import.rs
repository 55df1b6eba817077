//! Importing text traces of the same six kmem events, and of the vmstat
//! worker's runs (`workqueue_execute_start` lines whose function is
//! `vmstat_update`; other work is skipped): tracefs's own `trace` and
//! `trace_pipe` files, `trace-cmd report` and `perf script` output.
//!
//! All four print one event per line as
//! `COMM-PID [CPU] (flags) SECONDS: [kmem:]EVENT: key=value ...`
//! (perf puts the PID after a space), or with a bare integer of ticks in
//! place of `SECONDS` when the trace clock has no time unit (`counter`,
//! `uptime`, `x86-tsc`; see [`TraceClock`]). The parser finds the `[CPU]`
//! token, the first timestamp after it, then the event name and the fields
//! it needs; a file whose events mix the two clocks, or whose times step
//! back at many events (gaps, not times), is an error; other events,
//! comments (`#`) and blank lines are skipped, and `[LOST n EVENTS]`
//! markers are counted. A line naming one of our events
//! without a field it needs is an error that names its line number, and a
//! file with text but no event line at all (of any event) is not a trace:
//! an error naming its first line, not an empty trace. An empty or blank
//! file is an empty trace: `perf script` prints nothing for a recording
//! without events.

use super::event::{EventKind, Trace, TraceClock, TraceEvent};
use super::gfp_names::parse_gfp;
use super::{TraceError, MAX_TRACE_EVENTS, MAX_TRACE_ORDER};

/// The longest line a text trace may have (tracefs lines are under 300
/// bytes).
pub const MAX_LINE_BYTES: usize = 64 << 10;

/// Imports text trace output.
pub fn import_text(text: &str) -> Result<Trace, TraceError> {
    import_lines(text.lines().map(|line| Ok(line.to_string())))
}

/// Imports a text trace read from `reader` line by line, so the file is
/// never held whole: a line over [`MAX_LINE_BYTES`] (a file with no line
/// breaks, such as `/dev/zero`) or more than [`MAX_TRACE_EVENTS`] events is
/// an error naming the limit, not a full memory. Bytes that are not UTF-8
/// are read lossily, as tracefs may print a task name cut mid-character.
pub fn import_reader(reader: impl std::io::BufRead) -> Result<Trace, TraceError> {
    import_lines(BoundedLines {
        reader,
        line_no: 0,
        buffer: Vec::new(),
    })
}

/// Lines of a reader, each at most [`MAX_LINE_BYTES`] long.
struct BoundedLines<R> {
    reader: R,
    line_no: usize,
    buffer: Vec<u8>,
}

impl<R: std::io::BufRead> Iterator for BoundedLines<R> {
    type Item = Result<String, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        use std::io::{BufRead, Read};
        self.buffer.clear();
        self.line_no = self.line_no.saturating_add(1);
        // The longest line and its line break, and one byte more to tell.
        let limit = MAX_LINE_BYTES as u64 + 2;
        match (&mut self.reader)
            .take(limit)
            .read_until(b'\n', &mut self.buffer)
        {
            Ok(0) => None,
            Ok(_)
                if self
                    .buffer
                    .strip_suffix(b"\n")
                    .unwrap_or(&self.buffer)
                    .len()
                    > MAX_LINE_BYTES =>
            {
                Some(Err(TraceError::Text {
                    line: self.line_no,
                    reason: format!("longer than {} KiB: not a text trace", MAX_LINE_BYTES >> 10),
                }))
            }
            Ok(_) => {
                let line = self.buffer.strip_suffix(b"\n").unwrap_or(&self.buffer);
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                Some(Ok(String::from_utf8_lossy(line).into_owned()))
            }
            Err(err) => Some(Err(TraceError::Text {
                line: self.line_no,
                reason: err.to_string(),
            })),
        }
    }
}

/// Imports the lines of a text trace.
fn import_lines(
    lines: impl Iterator<Item = Result<String, TraceError>>,
) -> Result<Trace, TraceError> {
    let mut trace = Trace::default();
    let mut lost = 0u64;
    let mut event_lines = 0usize;
    let mut first_foreign_line = None;
    // The clock of the first event line, and that line.
    let mut clock: Option<(TraceClock, usize)> = None;
    let mut time_order = TimeOrder::default();
    for (index, line) in lines.enumerate() {
        let line = line?;
        let line_no = index + 1;
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            // The `trace` file's header names the CPU count as `#P:2`.
            if let Some(cpus) = trimmed.split("#P:").nth(1) {
                if let Ok(cpus) = cpus.trim().parse::<usize>() {
                    trace.set_meta("cpus", cpus.to_string());
                }
            }
            continue;
        }
        if let Some(count) = lost_marker(trimmed) {
            lost = lost.saturating_add(count);
            continue;
        }
        if let Some(cpus) = trimmed.strip_prefix("cpus=") {
            if let Ok(cpus) = cpus.trim().parse::<usize>() {
                trace.set_meta("cpus", cpus.to_string());
            }
            continue;
        }
        if is_report_header(trimmed) {
            continue;
        }
        let event = match parse_line(trimmed, line_no)? {
            ParsedLine::NotAnEvent => {
                first_foreign_line.get_or_insert(line_no);
                continue;
            }
            ParsedLine::OtherEvent => None,
            ParsedLine::Ours(event, event_clock) => {
                match clock {
                    None => clock = Some((event_clock, line_no)),
                    Some((first, first_line)) if first != event_clock => {
                        return Err(TraceError::Text {
                            line: line_no,
                            reason: format!(
                                "timestamp in {} where line {first_line} has {}: \
                                 a trace is recorded with one clock",
                                clock_text(event_clock),
                                clock_text(first)
                            ),
                        });
                    }
                    Some(_) => {}
                }
                Some(event)
            }
        };
        event_lines += 1;
        if let Some(event) = event {
            if trace.events.len() >= MAX_TRACE_EVENTS {
                return Err(TraceError::Text {
                    line: line_no,
                    reason: format!(
                        "more than {MAX_TRACE_EVENTS} events, the most a trace may hold; record a shorter window"
                    ),
                });
            }
            time_order.note(event.timestamp, line_no);
            trace.events.push(event);
        }
    }
    time_order.check(trace.events.len())?;
    if let (0, Some(line)) = (event_lines, first_foreign_line) {
        return Err(TraceError::Text {
            line,
            reason: "no line of the file is a trace event \
                     (`COMM-PID [CPU] ... SECONDS: EVENT: ...`): \
                     not a tracefs, trace-cmd report or perf script text trace \
                     (tracefs's raw, hex, bin and latency-format output options \
                     must be off)"
                .to_string(),
        });
    }
    trace.set_meta("source", "text import");
    if let Some((TraceClock::Ticks, _)) = clock {
        trace.set_clock(TraceClock::Ticks);
    }
    trace.set_meta("lost_events", lost.to_string());
    trace.normalize();
    Ok(trace)
}

/// How often a text trace's timestamps step backwards. Every text form
/// prints events merged in time order, so a step back is rare (clocks of
/// two CPUs a little apart); times that step back at every other event
/// are not times but gaps (`perf script --deltatime`), and sorting them
/// would scramble the trace. Steps back from the previous event, not from
/// the latest time seen: output in per-CPU runs (perf script without its
/// ordering) steps back once a run and is sorted whole; gaps that are
/// mostly equal may step back at under a quarter of the events and pass.
#[derive(Default)]
struct TimeOrder {
    previous: u64,
    backwards: usize,
    first_backwards_line: usize,
}

impl TimeOrder {
    /// The fewest events the check judges: below this, a trace is too
    /// short to tell gaps from times.
    const MIN_EVENTS: usize = 16;

    fn note(&mut self, timestamp: u64, line: usize) {
        if timestamp < self.previous {
            if self.backwards == 0 {
                self.first_backwards_line = line;
            }
            self.backwards += 1;
        }
        self.previous = timestamp;
    }

    /// An error when more than a quarter of `events` step back.
    fn check(&self, events: usize) -> Result<(), TraceError> {
        if events < Self::MIN_EVENTS || self.backwards.saturating_mul(4) <= events {
            return Ok(());
        }
        Err(TraceError::Text {
            line: self.first_backwards_line,
            reason: format!(
                "{} of {events} events are earlier than the event before them: \
                 the timestamps are not times (perf script --deltatime prints gaps; \
                 print absolute times)",
                self.backwards
            ),
        })
    }
}

/// `CPU:1 [LOST 42 EVENTS]` (tracefs) or `... [LOST 42 EVENTS] ...`.
fn lost_marker(line: &str) -> Option<u64> {
    let start = line.find("[LOST ")?;
    let rest = &line[start + 6..];
    rest.split_whitespace().next()?.parse().ok()
}

/// The lines `trace-cmd report` prints before its events: `version = 6`
/// and `CPU 3 is empty`.
fn is_report_header(line: &str) -> bool {
    line.starts_with("version = ") || (line.starts_with("CPU ") && line.ends_with(" is empty"))
}

/// What one non-blank, non-comment line of a text trace is.
enum ParsedLine {
    /// Not in the event-line format at all.
    NotAnEvent,
    /// An event line of an event the replay does not use.
    OtherEvent,
    /// One of our events (a kmem event or a vmstat worker run), and the
    /// clock its timestamp is in.
    Ours(TraceEvent, TraceClock),
}

/// How an error message names a clock's timestamps.
fn clock_text(clock: TraceClock) -> &'static str {
    match clock {
        TraceClock::Nanoseconds => "seconds",
        TraceClock::Ticks => "clock ticks",
    }
}

/// A timestamp token without its colon: `SECONDS.FRACTION` in
/// nanoseconds, or a bare integer of clock ticks.
fn parse_timestamp(token: &str) -> Option<(u64, TraceClock)> {
    if token.contains('.') {
        parse_seconds(token).map(|nanos| (nanos, TraceClock::Nanoseconds))
    } else if !token.is_empty() && token.bytes().all(|byte| byte.is_ascii_digit()) {
        token.parse().ok().map(|ticks| (ticks, TraceClock::Ticks))
    } else {
        None
    }
}

/// `SECONDS.FRACTION` (at most nine fraction digits) in nanoseconds.
fn parse_seconds(token: &str) -> Option<u64> {
    let (seconds, fraction) = token.split_once('.')?;
    if fraction.len() > 9 || !fraction.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    let seconds = seconds.parse::<u64>().ok()?;
    let mut nanos = 0u64;
    for position in 0..9 {
        let digit = fraction
            .as_bytes()
            .get(position)
            .map_or(0, |byte| byte - b'0');
        nanos = nanos * 10 + digit as u64;
    }
    seconds.checked_mul(1_000_000_000)?.checked_add(nanos)
}

fn parse_number(text: &str) -> Option<i64> {
    match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok().map(|value| value as i64),
        None => text.parse::<i64>().ok(),
    }
}

/// The kind of event a line's `name:` token names, when it is one of ours:
/// a kmem event (`mm_page_alloc:` or `kmem:mm_page_alloc:`, …), or the
/// workqueue event running `vmstat_update` (the line's last word: tracefs
/// prints `work struct …: function vmstat_update`).
fn our_event(tokens: &[&str], name: &str) -> Option<EventKind> {
    let kind = EventKind::from_tracepoint(name.strip_suffix(':')?)?;
    // With tracefs's `sym-offset` option the symbol reads
    // `vmstat_update+0x0/0x90`; a bare address (`sym-addr` off and no
    // symbol) cannot be told from other work and is skipped.
    let runs_vmstat_update = || {
        tokens.last().is_some_and(|function| {
            function
                .strip_prefix("vmstat_update")
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('+'))
        })
    };
    (kind != EventKind::VmstatWork || runs_vmstat_update()).then_some(kind)
}

/// True when a token of the line names one of our events.
fn names_our_event(tokens: &[&str]) -> bool {
    tokens
        .iter()
        .any(|token| our_event(tokens, token).is_some())
}

fn parse_line(line: &str, line_no: usize) -> Result<ParsedLine, TraceError> {
    let tokens: Vec<&str> = line.split_whitespace().collect();
    let Some(cpu_index) = tokens.iter().position(|token| {
        token.len() > 2
            && token.starts_with('[')
            && token.ends_with(']')
            && token[1..token.len() - 1]
                .bytes()
                .all(|b| b.is_ascii_digit())
    }) else {
        // One of our events without its CPU (perf script -F without cpu):
        // the replay cannot place it.
        if names_our_event(&tokens) {
            return Err(TraceError::Text {
                line: line_no,
                reason: "a kmem or vmstat worker event without its CPU as `[CPU]`: print it \
                         (perf script -F with cpu; tracefs with latency-format off)"
                    .to_string(),
            });
        }
        return Ok(ParsedLine::NotAnEvent);
    };
    let Some(time_index) = (cpu_index + 1..tokens.len()).find(|&index| {
        tokens[index]
            .strip_suffix(':')
            .is_some_and(|time| parse_timestamp(time).is_some())
    }) else {
        if names_our_event(&tokens) {
            return Err(TraceError::Text {
                line: line_no,
                reason:
                    "a kmem or vmstat worker event without a readable time: `SECONDS.FRACTION:` \
                         (at most nine fraction digits) or `TICKS:` below 2^64"
                        .to_string(),
            });
        }
        return Ok(ParsedLine::NotAnEvent);
    };
    let Some(name) = tokens.get(time_index + 1).filter(|t| t.ends_with(':')) else {
        return Ok(ParsedLine::NotAnEvent);
    };
    let Some(kind) = our_event(&tokens, name) else {
        return Ok(ParsedLine::OtherEvent);
    };
    let name = kind.tracepoint();
    let bad = |reason: String| TraceError::Text {
        line: line_no,
        reason,
    };
    let cpu_text = &tokens[cpu_index][1..tokens[cpu_index].len() - 1];
    let cpu = cpu_text
        .parse::<u16>()
        .map_err(|_| bad(format!("cpu {cpu_text} out of range")))?;
    let (timestamp, clock) = tokens[time_index]
        .strip_suffix(':')
        .and_then(parse_timestamp)
        .ok_or_else(|| bad("bad timestamp".to_string()))?;
    let fields: Vec<(&str, &str)> = tokens[time_index + 2..]
        .iter()
        .filter_map(|token| token.split_once('='))
        .collect();
    let field = |key: &str| {
        fields
            .iter()
            .find(|(name, _)| *name == key)
            .map(|(_, v)| *v)
    };
    let number = |key: &str| -> Result<i64, TraceError> {
        let text = field(key).ok_or_else(|| bad(format!("{name} without {key}=")))?;
        parse_number(text).ok_or_else(|| bad(format!("{key}={text} is not a number")))
    };
    let small = |key: &str, low: i64, high: i64| -> Result<i64, TraceError> {
        let value = number(key)?;
        if (low..=high).contains(&value) {
            Ok(value)
        } else {
            Err(bad(format!("{key}={value} out of range")))
        }
    };
    if kind == EventKind::VmstatWork {
        return Ok(ParsedLine::Ours(
            TraceEvent::new(kind, timestamp, cpu, 0),
            clock,
        ));
    }
    let failed = field("page").is_some_and(|page| {
        page.contains("null") || page.bytes().all(|byte| byte == b'0' || byte == b'x')
    });
    let pfn = if failed {
        u64::MAX
    } else {
        number("pfn")? as u64
    };
    let mut event = TraceEvent::new(kind, timestamp, cpu, pfn);
    match kind {
        EventKind::Alloc => {
            event.order = small("order", 0, MAX_TRACE_ORDER as i64)? as u8;
            event.migratetype = small("migratetype", -1, 127)? as i8;
            let gfp = field("gfp_flags").ok_or_else(|| bad("no gfp_flags=".to_string()))?;
            event.gfp = parse_gfp(gfp).ok_or_else(|| bad(format!("unknown gfp flags {gfp}")))?;
        }
        EventKind::Free => event.order = small("order", 0, MAX_TRACE_ORDER as i64)? as u8,
        EventKind::FreeBatched => {}
        EventKind::ZoneLocked => {
            event.order = small("order", 0, MAX_TRACE_ORDER as i64)? as u8;
            event.migratetype = small("migratetype", -1, 127)? as i8;
            event.flag = small("percpu_refill", 0, 1)? != 0;
        }
        EventKind::PcpuDrain => {
            event.order = small("order", 0, MAX_TRACE_ORDER as i64)? as u8;
            event.migratetype = small("migratetype", -1, 127)? as i8;
        }
        EventKind::Extfrag => {
            event.order = small("alloc_order", 0, MAX_TRACE_ORDER as i64)? as u8;
            event.fallback_order = small("fallback_order", 0, MAX_TRACE_ORDER as i64)? as u8;
            event.migratetype = small("alloc_migratetype", -1, 127)? as i8;
            event.fallback_migratetype = small("fallback_migratetype", -1, 127)? as i8;
            event.flag = small("change_ownership", 0, 1)? != 0;
        }
        EventKind::VmstatWork => {}
    }
    Ok(ParsedLine::Ours(event, clock))
}
