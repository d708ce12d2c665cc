//! The kernel ring buffer's binary page format, as read from `per_cpu/cpuN/trace_pipe_raw`
//! and spooled unchanged: decoding pages into [`KernelEvent`]s.
//!
//! A page (`events/header_page`) starts with a u64 timestamp and a `local_t` commit word
//! whose low 27 bits are the length of the data and whose bit 31 says events were missed
//! before this page (bit 30: their count is stored as a `long` right after the data). The
//! data is a sequence of records, each with a 4-byte header (`events/header_event`):
//! `type_len` (5 bits) and `time_delta` (27 bits), then:
//! - `type_len` 1..=28: a payload of `4 * type_len` bytes;
//! - `type_len` 0: the payload length + 4 in the next u32, payload after it (large events,
//!   and every event on CONFIG_HAVE_64BIT_ALIGNED_ACCESS kernels, whose lengths keep
//!   8-byte alignment: following the stored length is all the alignment handling needed);
//! - 29 padding: with `time_delta` 0 the rest of the page is empty; otherwise a discarded
//!   event whose length is in the next u32 (it does not advance the time);
//! - 30 time extend: the next u32 holds bits 27..59 of a delta added to the time;
//! - 31 absolute time stamp: the next u32 and `time_delta` give the time's low 59 bits; the
//!   5 high bits come from the page timestamp.
//!
//! Data records advance the time by their `time_delta`. The rules follow libtraceevent's
//! kbuffer-parse.c (`kbuffer_load_subbuffer`, `translate_data`).

use super::event::{EventKind, KernelEvent};
use super::format::EventFormats;
use super::TraceError;

/// Where the page header fields are (`events/header_page`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageLayout {
    /// Bytes of one page (sub-buffer) as `trace_pipe_raw` returns it.
    pub page_size: usize,
    /// Size of the commit word (`local_t`: the kernel's long): 8 or 4.
    pub commit_size: usize,
    /// Offset of the data (after the timestamp and the commit word).
    pub data_offset: usize,
}

impl PageLayout {
    /// The layout of 64-bit kernels with 4 KiB pages.
    pub const DEFAULT_64: PageLayout = PageLayout { page_size: 4096, commit_size: 8, data_offset: 16 };

    /// Parses `events/header_page`.
    pub fn parse(header_page: &str) -> Result<Self, TraceError> {
        let mut commit_size = None;
        let mut data = None;
        for line in header_page.lines() {
            let line = line.trim();
            let Some(rest) = line.strip_prefix("field:") else { continue };
            let number = |key: &str| -> Option<usize> {
                rest.split(';').map(str::trim).find_map(|p| p.strip_prefix(key)).and_then(|v| v.trim().parse().ok())
            };
            let decl = rest.split(';').next().unwrap_or_default();
            if decl.ends_with(" commit") {
                commit_size = number("size:");
            } else if decl.ends_with(" data") {
                data = number("offset:").zip(number("size:"));
            }
        }
        let bad = || TraceError::Format(format!("events/header_page not understood: {header_page:?}"));
        let commit_size = commit_size.ok_or_else(bad)?;
        let (data_offset, data_size) = data.ok_or_else(bad)?;
        if !(commit_size == 4 || commit_size == 8) || data_offset != 8 + commit_size || data_size == 0 {
            return Err(bad());
        }
        Ok(Self { page_size: data_offset + data_size, commit_size, data_offset })
    }
}

const COMMIT_MASK: u64 = (1 << 27) - 1;
const MISSED_EVENTS: u64 = 1 << 31;
const MISSED_STORED: u64 = 1 << 30;
const TS_SHIFT: u32 = 27;
/// Absolute time stamps lack these high bits; they come from the page timestamp.
const TS_MSB: u64 = 0xf8 << 56;
const TYPE_PADDING: u32 = 29;
const TYPE_TIME_EXTEND: u32 = 30;
const TYPE_TIME_STAMP: u32 = 31;

/// What decoding a CPU's pages gave.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Decoded {
    /// Events in time order, with [`EventKind::Lost`] markers where the kernel dropped events.
    pub events: Vec<KernelEvent>,
    /// Events the pages say were dropped (counted ones only).
    pub lost: u64,
    /// Pages that said events were dropped without storing how many.
    pub lost_uncounted_pages: u64,
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at.checked_add(4)?).and_then(|s| s.try_into().ok()).map(u32::from_le_bytes)
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    b.get(at..at.checked_add(8)?).and_then(|s| s.try_into().ok()).map(u64::from_le_bytes)
}

fn long_at(b: &[u8], at: usize, size: usize) -> Option<u64> {
    if size == 8 {
        u64_at(b, at)
    } else {
        u32_at(b, at).map(u64::from)
    }
}

/// Decodes a spool (a sequence of whole pages) of one CPU. Records of event ids not in
/// `formats` are skipped. Any inconsistency is a [`TraceError::Format`].
pub fn decode_pages(spool: &[u8], layout: PageLayout, cpu: u32, formats: &EventFormats) -> Result<Decoded, TraceError> {
    if layout.page_size == 0 {
        return Err(TraceError::Format("page size 0".into()));
    }
    if !spool.len().is_multiple_of(layout.page_size) {
        return Err(TraceError::Format(format!(
            "cpu{cpu} spool of {} bytes is not a whole number of {}-byte pages",
            spool.len(),
            layout.page_size
        )));
    }
    let mut out = Decoded::default();
    for (index, page) in spool.chunks_exact(layout.page_size).enumerate() {
        decode_page(page, layout, cpu, formats, &mut out)
            .map_err(|e| TraceError::Format(format!("cpu{cpu} page {index}: {e}")))?;
    }
    // Pages come out of the ring buffer in order; a stable sort keeps that guarantee even if
    // a clock glitch made a stamp go backwards (no-op otherwise).
    out.events.sort_by_key(|e| e.ts_ns);
    Ok(out)
}

fn decode_page(
    page: &[u8],
    layout: PageLayout,
    cpu: u32,
    formats: &EventFormats,
    out: &mut Decoded,
) -> Result<(), String> {
    let page_ts = u64_at(page, 0).ok_or("page shorter than its header")?;
    let commit = long_at(page, 8, layout.commit_size).ok_or("page shorter than its header")?;
    let size = (commit & COMMIT_MASK) as usize;
    let data_end = layout
        .data_offset
        .checked_add(size)
        .filter(|&end| end <= page.len())
        .ok_or_else(|| format!("commit says {size} bytes of data, more than the page holds"))?;
    let data = page.get(layout.data_offset..data_end).ok_or("data outside the page")?;
    if let Some(missed) = missed_before(page, layout, commit)? {
        match missed {
            Some(n) => out.lost = out.lost.saturating_add(n),
            None => out.lost_uncounted_pages += 1,
        }
        let events = missed.unwrap_or(0);
        out.events.push(KernelEvent { ts_ns: page_ts, cpu, pid: -1, kind: EventKind::Lost { events } });
    }
    let mut ts = page_ts;
    let mut pos = 0usize;
    while pos < size {
        let header = u32_at(data, pos).ok_or_else(|| format!("record header at {pos} cut off"))?;
        let type_len = header & 0x1f;
        let delta = u64::from(header >> 5);
        let array0 = || u32_at(data, pos + 4).ok_or_else(|| format!("record at {pos} cut off"));
        match type_len {
            TYPE_PADDING => {
                if delta == 0 {
                    break; // the rest of the page is empty
                }
                // A discarded event: skip it without advancing the time.
                pos = pos
                    .checked_add(4 + array0()? as usize)
                    .ok_or_else(|| format!("padding at {pos} has a bad length"))?;
            }
            TYPE_TIME_EXTEND => {
                ts = ts.wrapping_add((u64::from(array0()?) << TS_SHIFT) + delta);
                pos += 8;
            }
            TYPE_TIME_STAMP => {
                let abs = (u64::from(array0()?) << TS_SHIFT) | delta;
                ts = abs | (page_ts & TS_MSB);
                pos += 8;
            }
            _ => {
                let (payload_at, payload_len) = if type_len == 0 {
                    let stored = array0()? as usize;
                    let len = stored.checked_sub(4).ok_or_else(|| format!("record at {pos} has length {stored}"))?;
                    (pos + 8, len)
                } else {
                    (pos + 4, type_len as usize * 4)
                };
                let record = payload_at
                    .checked_add(payload_len)
                    .and_then(|end| data.get(payload_at..end))
                    .ok_or_else(|| format!("record at {pos} runs past the data ({size} bytes)"))?;
                ts = ts.wrapping_add(delta);
                // Lengths are kept 4-byte aligned (kbuffer rounds the same way).
                pos = payload_at + ((payload_len + 3) & !3);
                let Some(id) = record.get(..2).and_then(|b| b.try_into().ok()).map(u16::from_le_bytes) else {
                    return Err(format!("empty record at {pos}"));
                };
                let Some(format) = formats.get(id) else { continue };
                let (pid, kind) = format.decode(record).map_err(|e| e.to_string())?;
                out.events.push(KernelEvent { ts_ns: ts, cpu, pid, kind });
            }
        }
    }
    Ok(())
}

/// Events the page headers of a spool say were dropped: (counted events, pages with a loss
/// of unknown size). Reads the headers only.
pub fn count_lost(spool: &[u8], layout: PageLayout) -> Result<(u64, u64), TraceError> {
    if layout.page_size == 0 || !spool.len().is_multiple_of(layout.page_size) {
        return Err(TraceError::Format(format!("spool of {} bytes is not whole pages", spool.len())));
    }
    let mut counted = 0u64;
    let mut uncounted = 0u64;
    for page in spool.chunks_exact(layout.page_size) {
        let commit = long_at(page, 8, layout.commit_size).ok_or_else(|| TraceError::Format("short page".into()))?;
        match missed_before(page, layout, commit).map_err(|e| TraceError::Format(e.into()))? {
            None => {}
            Some(Some(n)) => counted = counted.saturating_add(n),
            Some(None) => uncounted += 1,
        }
    }
    Ok((counted, uncounted))
}

/// Whether the page's commit word says events were dropped before the page: None if not,
/// Some(Some(n)) with the count stored after the data, Some(None) without a count.
fn missed_before(page: &[u8], layout: PageLayout, commit: u64) -> Result<Option<Option<u64>>, &'static str> {
    if commit & MISSED_EVENTS == 0 {
        return Ok(None);
    }
    if commit & MISSED_STORED == 0 {
        return Ok(Some(None));
    }
    let at = layout.data_offset + (commit & COMMIT_MASK) as usize;
    let n = long_at(page, at, layout.commit_size).ok_or("missed-events count outside the page")?;
    Ok(Some(Some(n)))
}
