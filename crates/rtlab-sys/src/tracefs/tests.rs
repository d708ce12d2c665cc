//! Decoder tests on hand-built ring-buffer pages, with exact oracles.

use super::event::{EventKind, KernelEvent};
use super::format::{EventFormat, EventFormats, EventId};
use super::ring::{count_lost, decode_pages, PageLayout};
use super::*;

const LAYOUT: PageLayout = PageLayout::DEFAULT_64;

fn format_text(name: &str, id: u16, fields: &[(&str, usize, usize, u8)]) -> String {
    let mut t = format!(
        "name: {name}\nID: {id}\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
    );
    for (decl, offset, size, signed) in fields {
        t.push_str(&format!("\tfield:{decl};\toffset:{offset};\tsize:{size};\tsigned:{signed};\n"));
    }
    t.push_str("\nprint fmt: \"\"\n");
    t
}

const SOFTIRQ_ENTRY: u16 = 223;
const EXPIRE_EXIT: u16 = 458;
const IRQ_ENTRY: u16 = 225;
const SWITCH: u16 = 372;
const START: u16 = 460;
const EXPIRE_ENTRY: u16 = 459;

fn formats() -> EventFormats {
    let mut f = EventFormats::default();
    let mut add = |event, text: String| f.insert(EventFormat::parse(event, &text).unwrap());
    add(EventId::SoftirqEntry, format_text("softirq_entry", SOFTIRQ_ENTRY, &[("unsigned int vec", 8, 4, 0)]));
    add(EventId::HrtimerExpireExit, format_text("hrtimer_expire_exit", EXPIRE_EXIT, &[("void * hrtimer", 8, 8, 0)]));
    add(
        EventId::IrqEntry,
        format_text("irq_handler_entry", IRQ_ENTRY, &[("int irq", 8, 4, 1), ("__data_loc char[] name", 12, 4, 0)]),
    );
    add(
        EventId::SchedSwitch,
        format_text(
            "sched_switch",
            SWITCH,
            &[
                ("char prev_comm[16]", 8, 16, 0),
                ("pid_t prev_pid", 24, 4, 1),
                ("int prev_prio", 28, 4, 1),
                ("long prev_state", 32, 8, 1),
                ("char next_comm[16]", 40, 16, 0),
                ("pid_t next_pid", 56, 4, 1),
                ("int next_prio", 60, 4, 1),
            ],
        ),
    );
    add(
        EventId::HrtimerStart,
        format_text(
            "hrtimer_start",
            START,
            &[
                ("void * hrtimer", 8, 8, 0),
                ("void * function", 16, 8, 0),
                ("s64 expires", 24, 8, 1),
                ("s64 softexpires", 32, 8, 1),
                ("enum hrtimer_mode mode", 40, 4, 0),
                ("bool was_armed", 44, 1, 0),
            ],
        ),
    );
    // This kernel's layout (6.18): `now` sits between the two pointers.
    add(
        EventId::HrtimerExpireEntry,
        format_text(
            "hrtimer_expire_entry",
            EXPIRE_ENTRY,
            &[("void * hrtimer", 8, 8, 0), ("s64 now", 16, 8, 1), ("void * function", 24, 8, 0)],
        ),
    );
    f
}

fn record(id: u16, pid: i32, rest: &[u8]) -> Vec<u8> {
    let mut r = id.to_le_bytes().to_vec();
    r.extend_from_slice(&[0, 0]);
    r.extend_from_slice(&pid.to_le_bytes());
    r.extend_from_slice(rest);
    r
}

fn softirq(pid: i32, vec: u32) -> Vec<u8> {
    record(SOFTIRQ_ENTRY, pid, &vec.to_le_bytes())
}

fn expire_exit(pid: i32, timer: u64) -> Vec<u8> {
    record(EXPIRE_EXIT, pid, &timer.to_le_bytes())
}

fn comm(name: &str) -> [u8; 16] {
    let mut c = [0u8; 16];
    c[..name.len()].copy_from_slice(name.as_bytes());
    c
}

fn switch(prev: (&str, i32, i32), next: (&str, i32, i32)) -> Vec<u8> {
    let mut rest = comm(prev.0).to_vec();
    rest.extend_from_slice(&prev.1.to_le_bytes());
    rest.extend_from_slice(&prev.2.to_le_bytes());
    rest.extend_from_slice(&1i64.to_le_bytes());
    rest.extend_from_slice(&comm(next.0));
    rest.extend_from_slice(&next.1.to_le_bytes());
    rest.extend_from_slice(&next.2.to_le_bytes());
    record(SWITCH, prev.1, &rest)
}

/// Builds one page the way the kernel writes it.
struct Page {
    ts: u64,
    data: Vec<u8>,
}

impl Page {
    fn new(ts: u64) -> Self {
        Self { ts, data: Vec::new() }
    }

    fn header(&mut self, type_len: u32, delta: u32) {
        self.data.extend_from_slice(&((delta << 5) | type_len).to_le_bytes());
    }

    /// A data record, small form (type_len = length / 4).
    fn event(mut self, delta: u32, payload: &[u8]) -> Self {
        let mut p = payload.to_vec();
        p.resize(payload.len().div_ceil(4) * 4, 0);
        self.header((p.len() / 4) as u32, delta);
        self.data.extend_from_slice(&p);
        self
    }

    /// A data record, large form (type_len 0, length + 4 in array[0]), 8-byte aligned as
    /// on CONFIG_HAVE_64BIT_ALIGNED_ACCESS kernels.
    fn big_event(mut self, delta: u32, payload: &[u8]) -> Self {
        let mut p = payload.to_vec();
        p.resize((payload.len() + 8).div_ceil(8) * 8 - 8, 0);
        self.header(0, delta);
        self.data.extend_from_slice(&(p.len() as u32 + 4).to_le_bytes());
        self.data.extend_from_slice(&p);
        self
    }

    fn extend(mut self, delta: u64) -> Self {
        self.header(30, (delta & ((1 << 27) - 1)) as u32);
        self.data.extend_from_slice(&((delta >> 27) as u32).to_le_bytes());
        self
    }

    fn absolute(mut self, ts: u64) -> Self {
        self.header(31, (ts & ((1 << 27) - 1)) as u32);
        self.data.extend_from_slice(&(((ts >> 27) & 0xffff_ffff) as u32).to_le_bytes());
        self
    }

    /// A discarded event: array[0] holds its length after the 4-byte header (array[0]
    /// itself included), as rb_event_discard leaves it.
    fn discarded(mut self, delta: u32, len: u32) -> Self {
        self.header(29, delta);
        self.data.extend_from_slice(&(len + 4).to_le_bytes());
        self.data.extend(std::iter::repeat_n(0xee, len as usize));
        self
    }

    /// Padding to the end of the page (delta 0), then garbage the reader must not look at.
    fn end_padding(mut self) -> Self {
        self.header(29, 0);
        self.data.extend_from_slice(&[0xab; 20]);
        self
    }

    fn bytes(&self, commit_flags: u64, stored_lost: Option<u64>) -> Vec<u8> {
        let mut page = self.ts.to_le_bytes().to_vec();
        page.extend_from_slice(&(self.data.len() as u64 | commit_flags).to_le_bytes());
        page.extend_from_slice(&self.data);
        if let Some(n) = stored_lost {
            page.extend_from_slice(&n.to_le_bytes());
        }
        page.resize(LAYOUT.page_size, 0);
        page
    }
}

fn decode(spool: &[u8]) -> ring::Decoded {
    decode_pages(spool, LAYOUT, 0, &formats()).unwrap()
}

fn ev(ts_ns: u64, pid: i32, kind: EventKind) -> KernelEvent {
    KernelEvent { ts_ns, cpu: 0, pid, kind }
}

#[test]
fn page_with_three_events() {
    let page = Page::new(1_000)
        .event(5, &softirq(7, 1))
        .event(7, &expire_exit(0, 0xdead))
        .event(0, &switch(("load", 42, 120), ("probe", 43, 49)))
        .bytes(0, None);
    let d = decode(&page);
    assert_eq!(
        d.events,
        vec![
            ev(1_005, 7, EventKind::SoftirqEntry { vec: 1 }),
            ev(1_012, 0, EventKind::HrtimerExpireExit { timer: 0xdead }),
            ev(
                1_012,
                42,
                EventKind::SchedSwitch {
                    prev_comm: "load".into(),
                    prev_pid: 42,
                    prev_prio: 120,
                    prev_state: 1,
                    next_comm: "probe".into(),
                    next_pid: 43,
                    next_prio: 49,
                }
            ),
        ]
    );
    assert_eq!((d.lost, d.lost_uncounted_pages), (0, 0));
}

#[test]
fn time_extend_adds_the_high_bits_of_the_delta() {
    let big = (3u64 << 27) + 9;
    let page = Page::new(1_000).event(1, &softirq(1, 2)).extend(big).event(4, &softirq(1, 3)).bytes(0, None);
    let d = decode(&page);
    assert_eq!(
        d.events,
        vec![
            ev(1_001, 1, EventKind::SoftirqEntry { vec: 2 }),
            ev(1_001 + big + 4, 1, EventKind::SoftirqEntry { vec: 3 })
        ]
    );
}

#[test]
fn absolute_stamp_replaces_the_time_and_keeps_the_page_high_bits() {
    let page_ts = (1u64 << 63) + 100;
    let abs = (2u64 << 27) | 5;
    let page = Page::new(page_ts).event(1, &softirq(1, 0)).absolute(abs).event(3, &softirq(1, 9)).bytes(0, None);
    let d = decode(&page);
    assert_eq!(
        d.events,
        vec![
            ev(page_ts + 1, 1, EventKind::SoftirqEntry { vec: 0 }),
            ev((1u64 << 63) + abs + 3, 1, EventKind::SoftirqEntry { vec: 9 })
        ]
    );
}

#[test]
fn padding_ends_the_page_and_discarded_events_do_not_advance_time() {
    let page = Page::new(50)
        .event(1, &softirq(1, 1))
        .discarded(30, 12)
        .event(2, &softirq(1, 2))
        .end_padding()
        .event(9, &softirq(1, 3)) // after the end padding: never read
        .bytes(0, None);
    let d = decode(&page);
    assert_eq!(
        d.events,
        vec![ev(51, 1, EventKind::SoftirqEntry { vec: 1 }), ev(53, 1, EventKind::SoftirqEntry { vec: 2 })]
    );
}

#[test]
fn missed_events_become_lost_markers_and_are_counted() {
    let first = Page::new(10).event(1, &softirq(1, 1)).bytes(0, None);
    let stored = Page::new(500).event(2, &softirq(1, 2)).bytes((1 << 31) | (1 << 30), Some(42));
    let unknown = Page::new(900).event(3, &softirq(1, 3)).bytes(1 << 31, None);
    let spool = [first, stored, unknown].concat();
    let d = decode(&spool);
    assert_eq!(
        d.events,
        vec![
            ev(11, 1, EventKind::SoftirqEntry { vec: 1 }),
            ev(500, -1, EventKind::Lost { events: 42 }),
            ev(502, 1, EventKind::SoftirqEntry { vec: 2 }),
            ev(900, -1, EventKind::Lost { events: 0 }),
            ev(903, 1, EventKind::SoftirqEntry { vec: 3 }),
        ]
    );
    assert_eq!((d.lost, d.lost_uncounted_pages), (42, 1));
    assert_eq!(count_lost(&spool, LAYOUT).unwrap(), (42, 1));
}

#[test]
fn large_records_and_data_loc_strings() {
    let mut rest = 11i32.to_le_bytes().to_vec();
    rest.extend_from_slice(&((8u32 << 16) | 16).to_le_bytes());
    rest.extend_from_slice(b"virtio0\0");
    let entry = record(IRQ_ENTRY, 0, &rest);
    let page = Page::new(7).big_event(3, &entry).event(1, &softirq(0, 3)).bytes(0, None);
    let d = decode(&page);
    assert_eq!(
        d.events,
        vec![
            ev(10, 0, EventKind::IrqEntry { irq: 11, name: "virtio0".into() }),
            ev(11, 0, EventKind::SoftirqEntry { vec: 3 })
        ]
    );
}

#[test]
fn unknown_event_ids_are_skipped() {
    let page = Page::new(0).event(1, &record(999, 5, &[1, 2, 3, 4])).event(1, &softirq(5, 4)).bytes(0, None);
    assert_eq!(decode(&page).events, vec![ev(2, 5, EventKind::SoftirqEntry { vec: 4 })]);
}

#[test]
fn hrtimer_start_fields() {
    let mut rest = 0xffff_8880_0000_1000u64.to_le_bytes().to_vec();
    rest.extend_from_slice(&0xffff_ffff_8141_e2b0u64.to_le_bytes());
    rest.extend_from_slice(&123_456_789i64.to_le_bytes());
    rest.extend_from_slice(&123_456_789i64.to_le_bytes());
    rest.extend_from_slice(&[0, 0, 0, 0, 1, 0, 0, 0]);
    let page = Page::new(0).event(1, &record(START, 77, &rest)).bytes(0, None);
    assert_eq!(
        decode(&page).events,
        vec![ev(
            1,
            77,
            EventKind::HrtimerStart {
                timer: 0xffff_8880_0000_1000,
                function: 0xffff_ffff_8141_e2b0,
                expires_ns: 123_456_789
            }
        )]
    );
}

#[test]
fn hrtimer_expire_entry_carries_the_kernel_s_now() {
    let mut rest = 0xffff_8880_0000_1000u64.to_le_bytes().to_vec();
    rest.extend_from_slice(&1_484_881_041_013i64.to_le_bytes());
    rest.extend_from_slice(&0xffff_ffff_8141_e2b0u64.to_le_bytes());
    let page = Page::new(1_484_881_041_900).event(0, &record(EXPIRE_ENTRY, 0, &rest)).bytes(0, None);
    assert_eq!(
        decode(&page).events,
        vec![ev(
            1_484_881_041_900,
            0,
            EventKind::HrtimerExpireEntry {
                timer: 0xffff_8880_0000_1000,
                function: 0xffff_ffff_8141_e2b0,
                now_ns: 1_484_881_041_013
            }
        )]
    );
}

#[test]
fn corrupt_spools_are_format_errors() {
    let good = Page::new(0).event(1, &softirq(1, 1)).bytes(0, None);
    // Not whole pages.
    assert!(matches!(decode_pages(&good[..100], LAYOUT, 0, &formats()), Err(TraceError::Format(_))));
    // Commit larger than the page.
    let mut bad = good.clone();
    bad[8..16].copy_from_slice(&5000u64.to_le_bytes());
    assert!(matches!(decode_pages(&bad, LAYOUT, 0, &formats()), Err(TraceError::Format(_))));
    // A record running past the committed data.
    let mut bad = good.clone();
    bad[16..20].copy_from_slice(&((1u32 << 5) | 28).to_le_bytes());
    assert!(matches!(decode_pages(&bad, LAYOUT, 0, &formats()), Err(TraceError::Format(_))));
    // A known id whose record is too short for its format.
    let short = Page::new(0).event(1, &record(SWITCH, 1, &[0; 4])).bytes(0, None);
    assert!(matches!(decode_pages(&short, LAYOUT, 0, &formats()), Err(TraceError::Format(_))));
}

#[test]
fn header_page_layout_is_parsed() {
    let text = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\
\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\
\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
    assert_eq!(PageLayout::parse(text).unwrap(), LAYOUT);
    assert!(matches!(PageLayout::parse("nonsense"), Err(TraceError::Format(_))));
}

#[test]
fn cpumask_is_hex_in_32_bit_groups() {
    assert_eq!(session::cpumask(&[0]), "1");
    assert_eq!(session::cpumask(&[0, 1]), "3");
    assert_eq!(session::cpumask(&[1, 4]), "12");
    assert_eq!(session::cpumask(&[33]), "2,00000000");
}

#[test]
fn instance_names_carry_the_pid() {
    assert_eq!(instance_pid("rtlab-1234"), Some(1234));
    assert_eq!(instance_pid("rtlab-1234-2"), Some(1234));
    assert_eq!(instance_pid("rtlab-x"), None);
    assert_eq!(instance_pid("rtlab-12-"), None);
    assert_eq!(instance_pid("rtla-12"), None);
    assert_eq!(instance_pid("rtlab-1-2-3"), None);
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Random bytes never panic the decoder; they decode or give a Format error.
        #[test]
        fn random_pages_never_panic(body in proptest::collection::vec(any::<u8>(), 0..LAYOUT.page_size * 2)) {
            let _ = decode_pages(&body, LAYOUT, 0, &formats());
            let _ = count_lost(&body, LAYOUT);
        }

        /// A valid page with one corrupted byte never panics either, and a successful decode
        /// keeps events in time order.
        #[test]
        fn corrupted_pages_never_panic(at in 0usize..200, value in any::<u8>()) {
            let mut page = Page::new(1_000)
                .event(5, &softirq(7, 1))
                .extend(1 << 30)
                .event(7, &expire_exit(0, 0xdead))
                .event(0, &switch(("load", 42, 120), ("probe", 43, 49)))
                .bytes(1 << 31 | 1 << 30, Some(3));
            page[at] = value;
            if let Ok(d) = decode_pages(&page, LAYOUT, 0, &formats()) {
                prop_assert!(d.events.windows(2).all(|w| w[0].ts_ns <= w[1].ts_ns));
            }
        }
    }
}

#[test]
fn the_unprivileged_blocker_is_said_once_with_what_to_do() {
    let unmounted = super::blocker_text(None);
    assert_eq!(
        unmounted,
        "tracefs is not mounted and mounting it needs root (run as root: rtlab mounts it for the run and \
         unmounts it afterwards; or mount it: mount -t tracefs nodev /sys/kernel/tracing)"
    );
    let mounted = super::blocker_text(Some(std::path::Path::new("/sys/kernel/tracing")));
    assert!(mounted.starts_with("tracefs at /sys/kernel/tracing is usable only by root (run as root"), "{mounted}");
    for text in [unmounted, mounted] {
        assert!(!text.contains('\n'), "one line: {text}");
    }
}
