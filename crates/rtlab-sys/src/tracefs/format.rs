//! Event formats: the layout of each traced event's payload, read from
//! `events/<sys>/<event>/format` when a session starts and kept with the capture, so that
//! the spooled binary records can be decoded later into [`EventKind`]s.

use std::collections::BTreeMap;

use super::event::{Comm, EventKind, Vector};
use super::TraceError;

/// One field of an event's payload, as the `format` file describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub name: String,
    pub offset: usize,
    pub size: usize,
    pub signed: bool,
    /// `__data_loc` field: a u32 whose low 16 bits are the offset of the data in the
    /// record and the high 16 bits its length.
    pub data_loc: bool,
}

/// Which split event a kernel event id stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventId {
    HrtimerStart,
    HrtimerExpireEntry,
    HrtimerExpireExit,
    VectorEntry(Vector),
    VectorExit(Vector),
    IrqEntry,
    IrqExit,
    SoftirqEntry,
    SoftirqExit,
    SchedWaking,
    SchedWakeup,
    SchedSwitch,
    /// `ftrace:timerlat`, the timerlat tracer's per-activation record (not a split event).
    Timerlat,
    /// `nmi:nmi_handler`: fires after an NMI handler with its duration (noise attribution;
    /// optional).
    NmiHandler,
}

impl EventId {
    /// The tracepoint (`<system>/<event>`) of this event.
    pub fn tracepoint(self) -> String {
        match self {
            EventId::HrtimerStart => "timer/hrtimer_start".into(),
            EventId::HrtimerExpireEntry => "timer/hrtimer_expire_entry".into(),
            EventId::HrtimerExpireExit => "timer/hrtimer_expire_exit".into(),
            EventId::VectorEntry(v) => format!("irq_vectors/{}_entry", v.tracepoint()),
            EventId::VectorExit(v) => format!("irq_vectors/{}_exit", v.tracepoint()),
            EventId::IrqEntry => "irq/irq_handler_entry".into(),
            EventId::IrqExit => "irq/irq_handler_exit".into(),
            EventId::SoftirqEntry => "irq/softirq_entry".into(),
            EventId::SoftirqExit => "irq/softirq_exit".into(),
            EventId::SchedWaking => "sched/sched_waking".into(),
            EventId::SchedWakeup => "sched/sched_wakeup".into(),
            EventId::SchedSwitch => "sched/sched_switch".into(),
            EventId::Timerlat => "ftrace/timerlat".into(),
            EventId::NmiHandler => "nmi/nmi_handler".into(),
        }
    }

    /// Every event the split may use, vectors included (absent ones are skipped at start).
    pub fn all() -> Vec<EventId> {
        let mut all = vec![EventId::HrtimerStart, EventId::HrtimerExpireEntry, EventId::HrtimerExpireExit];
        for v in Vector::ALL {
            all.push(EventId::VectorEntry(v));
            all.push(EventId::VectorExit(v));
        }
        all.extend([
            EventId::IrqEntry,
            EventId::IrqExit,
            EventId::SoftirqEntry,
            EventId::SoftirqExit,
            EventId::SchedWaking,
            EventId::SchedWakeup,
            EventId::SchedSwitch,
            EventId::NmiHandler,
        ]);
        all
    }
}

/// One event's format: its id in the ring buffer and its fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventFormat {
    pub event: EventId,
    pub id: u16,
    pub fields: Vec<Field>,
}

impl EventFormat {
    /// Parses a `format` file's text.
    pub fn parse(event: EventId, text: &str) -> Result<Self, TraceError> {
        let bad = |what: &str| TraceError::Format(format!("{} format: {what}", event.tracepoint()));
        let mut id = None;
        let mut fields = Vec::new();
        for line in text.lines() {
            let line = line.trim();
            if let Some(v) = line.strip_prefix("ID:") {
                id = Some(v.trim().parse::<u16>().map_err(|_| bad("bad ID"))?);
            } else if let Some(rest) = line.strip_prefix("field:") {
                fields.push(parse_field(rest).ok_or_else(|| bad(&format!("bad field line {line:?}")))?);
            }
        }
        let id = id.ok_or_else(|| bad("no ID"))?;
        Ok(Self { event, id, fields })
    }

    fn field(&self, name: &str) -> Result<&Field, TraceError> {
        self.fields
            .iter()
            .find(|f| f.name == name)
            .ok_or_else(|| TraceError::Format(format!("{} has no field {name}", self.event.tracepoint())))
    }

    /// Decodes one record's payload (starting at `common_type`) into the common pid and the
    /// event. Fails on a record too short for the format.
    pub fn decode(&self, record: &[u8]) -> Result<(i32, EventKind), TraceError> {
        let int = |name: &str| -> Result<i64, TraceError> { read_int(record, self.field(name)?) };
        let uint = |name: &str| -> Result<u64, TraceError> { int(name).map(|v| v as u64) };
        let int32 = |name: &str| -> Result<i32, TraceError> { int(name).map(|v| v as i32) };
        let string = |name: &str| -> Result<String, TraceError> { read_string(record, self.field(name)?) };
        let comm = |name: &str| -> Result<Comm, TraceError> { read_comm(record, self.field(name)?) };
        let pid = int32("common_pid")?;
        let kind = match self.event {
            EventId::HrtimerStart => EventKind::HrtimerStart {
                timer: uint("hrtimer")?,
                function: uint("function")?,
                expires_ns: int("expires")?,
            },
            EventId::HrtimerExpireEntry => EventKind::HrtimerExpireEntry {
                timer: uint("hrtimer")?,
                function: uint("function")?,
                now_ns: int("now")?,
            },
            EventId::HrtimerExpireExit => EventKind::HrtimerExpireExit { timer: uint("hrtimer")? },
            EventId::VectorEntry(vector) => EventKind::VectorEntry { vector },
            EventId::VectorExit(vector) => EventKind::VectorExit { vector },
            EventId::IrqEntry => EventKind::IrqEntry { irq: int32("irq")?, name: string("name")? },
            EventId::IrqExit => EventKind::IrqExit { irq: int32("irq")? },
            EventId::SoftirqEntry => EventKind::SoftirqEntry { vec: uint("vec")? as u32 },
            EventId::SoftirqExit => EventKind::SoftirqExit { vec: uint("vec")? as u32 },
            EventId::SchedWaking => EventKind::SchedWaking {
                pid: int32("pid")?,
                comm: comm("comm")?,
                prio: int32("prio")?,
                target_cpu: int32("target_cpu")?,
            },
            EventId::SchedWakeup => EventKind::SchedWakeup {
                pid: int32("pid")?,
                comm: comm("comm")?,
                prio: int32("prio")?,
                target_cpu: int32("target_cpu")?,
            },
            EventId::SchedSwitch => EventKind::SchedSwitch {
                prev_comm: comm("prev_comm")?,
                prev_pid: int32("prev_pid")?,
                prev_prio: int32("prev_prio")?,
                prev_state: int("prev_state")?,
                next_comm: comm("next_comm")?,
                next_pid: int32("next_pid")?,
                next_prio: int32("next_prio")?,
            },
            // timer_latency is declared u64 but is `now - expiry`: read as two's complement,
            // an early wake-up stays negative.
            EventId::Timerlat => EventKind::Timerlat {
                seqnum: uint("seqnum")? as u32,
                context: int32("context")?,
                timer_latency_ns: int("timer_latency")?,
            },
            EventId::NmiHandler => EventKind::Nmi { delta_ns: int("delta_ns")? },
        };
        Ok((pid, kind))
    }
}

/// The formats of the events a session enabled, by ring-buffer id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventFormats {
    pub by_id: BTreeMap<u16, EventFormat>,
}

impl EventFormats {
    pub fn insert(&mut self, format: EventFormat) {
        self.by_id.insert(format.id, format);
    }

    pub fn get(&self, id: u16) -> Option<&EventFormat> {
        self.by_id.get(&id)
    }
}

/// Parses the part of a format line after `field:`, e.g.
/// `int irq;\toffset:8;\tsize:4;\tsigned:1;`.
fn parse_field(rest: &str) -> Option<Field> {
    let mut parts = rest.split(';').map(str::trim);
    let decl = parts.next()?;
    let mut offset = None;
    let mut size = None;
    let mut signed = false;
    for part in parts {
        if let Some(v) = part.strip_prefix("offset:") {
            offset = v.trim().parse().ok();
        } else if let Some(v) = part.strip_prefix("size:") {
            size = v.trim().parse().ok();
        } else if let Some(v) = part.strip_prefix("signed:") {
            signed = v.trim() == "1";
        }
    }
    // The name is the last word of the declaration, without an array suffix: "char comm[16]".
    let last = decl.split_whitespace().last()?;
    let name = last.split('[').next()?.to_string();
    let data_loc = decl.contains("__data_loc");
    Some(Field { name, offset: offset?, size: size?, signed, data_loc })
}

fn field_bytes<'a>(record: &'a [u8], field: &Field) -> Result<&'a [u8], TraceError> {
    field.offset.checked_add(field.size).and_then(|end| record.get(field.offset..end)).ok_or_else(|| {
        TraceError::Format(format!(
            "record of {} bytes too short for field {} at {}+{}",
            record.len(),
            field.name,
            field.offset,
            field.size
        ))
    })
}

/// Reads an integer field (1, 2, 4 or 8 bytes, little-endian as on the traced host),
/// sign-extended when the format says signed.
fn read_int(record: &[u8], field: &Field) -> Result<i64, TraceError> {
    let b = field_bytes(record, field)?;
    let value = match (b, field.signed) {
        ([a], false) => i64::from(*a),
        ([a], true) => i64::from(*a as i8),
        ([a, b], false) => i64::from(u16::from_le_bytes([*a, *b])),
        ([a, b], true) => i64::from(i16::from_le_bytes([*a, *b])),
        ([a, b, c, d], false) => i64::from(u32::from_le_bytes([*a, *b, *c, *d])),
        ([a, b, c, d], true) => i64::from(i32::from_le_bytes([*a, *b, *c, *d])),
        (&[a, b, c, d, e, f, g, h], _) => i64::from_le_bytes([a, b, c, d, e, f, g, h]),
        _ => return Err(TraceError::Format(format!("field {} has an integer size of {}", field.name, b.len()))),
    };
    Ok(value)
}

/// Reads a task name: a fixed `char comm[16]` (or a `__data_loc` string, as some kernels
/// declare it), cut as the kernel keeps names.
fn read_comm(record: &[u8], field: &Field) -> Result<Comm, TraceError> {
    Ok(Comm::from_bytes(string_bytes(record, field)?))
}

/// Reads a string field: a fixed `char name[N]` array or a `__data_loc char[]`; stops at
/// the first NUL.
fn read_string(record: &[u8], field: &Field) -> Result<String, TraceError> {
    let bytes = string_bytes(record, field)?;
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    Ok(String::from_utf8_lossy(bytes.get(..end).unwrap_or_default()).into_owned())
}

/// A string field's bytes: the array, or where its `__data_loc` word points.
fn string_bytes<'a>(record: &'a [u8], field: &Field) -> Result<&'a [u8], TraceError> {
    if !field.data_loc {
        return field_bytes(record, field);
    }
    let loc = read_int(record, &Field { signed: false, size: 4, ..field.clone() })? as u32;
    let offset = (loc & 0xffff) as usize;
    let len = (loc >> 16) as usize;
    record.get(offset..offset + len).ok_or_else(|| {
        TraceError::Format(format!("__data_loc {} points outside its record ({offset}+{len})", field.name))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const IRQ_HANDLER_ENTRY: &str = "name: irq_handler_entry\nID: 225\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
\tfield:int irq;\toffset:8;\tsize:4;\tsigned:1;\n\
\tfield:__data_loc char[] name;\toffset:12;\tsize:4;\tsigned:0;\n\n\
print fmt: \"irq=%d name=%s\", REC->irq, __get_str(name)\n";

    #[test]
    fn parses_a_format_file_and_decodes_a_data_loc_string() {
        let f = EventFormat::parse(EventId::IrqEntry, IRQ_HANDLER_ENTRY).unwrap();
        assert_eq!(f.id, 225);
        assert_eq!(f.fields.len(), 6);
        assert!(f.fields[5].data_loc);
        assert_eq!(f.fields[5].name, "name");
        let mut rec = Vec::new();
        rec.extend_from_slice(&225u16.to_le_bytes());
        rec.extend_from_slice(&[0, 0]);
        rec.extend_from_slice(&(-7i32).to_le_bytes()); // pid
        rec.extend_from_slice(&11i32.to_le_bytes()); // irq
        rec.extend_from_slice(&((5u32 << 16) | 16).to_le_bytes()); // name at 16, 5 bytes
        rec.extend_from_slice(b"eth0\0");
        assert_eq!(f.decode(&rec).unwrap(), (-7, EventKind::IrqEntry { irq: 11, name: "eth0".into() }));
        // A location outside the record is a format error, not a panic.
        let short = &rec[..18];
        assert!(matches!(f.decode(short), Err(TraceError::Format(_))));
    }

    const NMI_HANDLER: &str = "name: nmi_handler\nID: 170\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
\tfield:void * handler;\toffset:8;\tsize:8;\tsigned:0;\n\
\tfield:s64 delta_ns;\toffset:16;\tsize:8;\tsigned:1;\n\
\tfield:int handled;\toffset:24;\tsize:4;\tsigned:1;\n";

    #[test]
    fn decodes_an_nmi_with_its_duration() {
        // The format file of the development VM's 6.18 kernel.
        let f = EventFormat::parse(EventId::NmiHandler, NMI_HANDLER).unwrap();
        let mut rec = Vec::new();
        rec.extend_from_slice(&170u16.to_le_bytes());
        rec.extend_from_slice(&[0, 0]);
        rec.extend_from_slice(&42i32.to_le_bytes());
        rec.extend_from_slice(&0xffff_ffff_8100_0000u64.to_le_bytes());
        rec.extend_from_slice(&3_500i64.to_le_bytes());
        rec.extend_from_slice(&1i32.to_le_bytes());
        assert_eq!(f.decode(&rec).unwrap(), (42, EventKind::Nmi { delta_ns: 3_500 }));
    }
}
