// SPDX-License-Identifier: (MIT OR Apache-2.0) AND GPL-2.0-only
//
// The eBPF split backend of `rtlab run --split` (crates/rtlab-sys/src/tracefs/ebpf.rs): one
// record per wake-up of rtlab's timer threads, made in the kernel, instead of every event
// of the traced CPUs in the ftrace ring buffer.
//
// Two programs, both on the wake-up's path, so each does as little as it can:
// - hrtimer_expire_entry: a sleeping task's timer (callback hrtimer_wakeup, its address in
//   `config`) expires. Its task is the hrtimer_sleeper's; if that is a thread of this rtlab
//   (process id in `config`) named "rtlab-timer/...", the timer's expiry and the start of
//   the handling are kept for the thread. The start is the `now` the kernel passes: the
//   clock read with which hrtimer_interrupt found the timer expired (on entry, or a re-read
//   after long callbacks; the tracefs cut takes the same instant; hrtimer_expire_entry_clock,
//   for kernels whose verifier refuses reading `now`: the clock when the callback is
//   entered). If the thread itself was running, the record is
//   written at once (switch-in = handling).
// - sched_switch: switching to such a thread with a handled wake-up writes the record.
// Records go to the `records` ring buffer; a full buffer counts the record in `dropped`
// instead. Instants are CLOCK_MONOTONIC, the clock of the samples.
//
// Both are BTF-typed tracepoints (tp_btf): they get the tracepoint's arguments, not a
// record formatted from them, and the kernel fields they read are declared below and
// relocated against the running kernel's BTF at load (CO-RE): no vmlinux.h, no layout to
// keep in step.
//
// Built with: clang -O2 -g -target bpf -c split.bpf.c (crates/rtlab-sys/build.rs).

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

typedef __u64 u64;
typedef __s64 s64;
typedef __u32 u32;
typedef s64 ktime_t;

#define COMM_PREFIX "rtlab-timer/"
#define COMM_PREFIX_LEN 12

struct rb_node {
    unsigned long __rb_parent_color;
} __attribute__((preserve_access_index));

struct timerqueue_node {
    struct rb_node node;
    ktime_t expires;
} __attribute__((preserve_access_index));

struct hrtimer {
    struct timerqueue_node node;
    void *function;
} __attribute__((preserve_access_index));

struct task_struct {
    int pid;
    int tgid;
    char comm[16];
} __attribute__((preserve_access_index));

struct hrtimer_sleeper {
    struct hrtimer timer;
    struct task_struct *task;
} __attribute__((preserve_access_index));

/// What userspace reads: one per wake-up.
struct split_record {
    u32 cpu;
    u32 tid;
    u64 expires_ns;
    u64 handled_at_ns;
    u64 switched_in_at_ns;
};

/// A wake-up handled and not yet switched in (expires_ns 0: none).
struct pending {
    u64 expires_ns;
    u64 handled_at_ns;
};

/// [0]: the process id whose threads are followed; [1]: hrtimer_wakeup's address (0:
/// unknown, every callback is looked at).
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 2);
    __type(key, u32);
    __type(value, u64);
} config SEC(".maps");

/// Thread -> its wake-up, handled and not yet switched in. Entries are reused, not deleted:
/// a lookup and a write in place cost less than a delete and an insert.
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 4096);
    __type(key, u32);
    __type(value, struct pending);
} handled SEC(".maps");

/// Per CPU: records the ring buffer had no room for.
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, u32);
    __type(value, u64);
} dropped SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 1 << 20);
} records SEC(".maps");

static __always_inline u64 config_at(u32 index)
{
    u64 *value = bpf_map_lookup_elem(&config, &index);
    return value ? *value : 0;
}

static __always_inline void emit(u32 tid, u64 expires_ns, u64 handled_at_ns, u64 switched_in_at_ns)
{
    struct split_record *r = bpf_ringbuf_reserve(&records, sizeof(*r), 0);
    if (!r) {
        u32 zero = 0;
        u64 *count = bpf_map_lookup_elem(&dropped, &zero);
        if (count)
            *count += 1;
        return;
    }
    r->cpu = bpf_get_smp_processor_id();
    r->tid = tid;
    r->expires_ns = expires_ns;
    r->handled_at_ns = handled_at_ns;
    r->switched_in_at_ns = switched_in_at_ns;
    // No wake-up: the reader polls, and a wake-up would queue irq_work on the measured path.
    bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
}

/// A timer of `hrtimer` expired, its handling started at `handled_at_ns`.
static __always_inline void expired(struct hrtimer *hrtimer, u64 handled_at_ns)
{
    // A sleeper's timer is the first member of its hrtimer_sleeper.
    struct task_struct *task = BPF_CORE_READ((struct hrtimer_sleeper *)hrtimer, task);
    if (!task || (u64)BPF_CORE_READ(task, tgid) != config_at(0))
        return;
    char comm[16];
    if (BPF_CORE_READ_STR_INTO(&comm, task, comm) < COMM_PREFIX_LEN)
        return;
    const char prefix[] = COMM_PREFIX;
    for (int i = 0; i < COMM_PREFIX_LEN; i++)
        if (comm[i] != prefix[i])
            return;
    u32 tid = (u32)BPF_CORE_READ(task, pid);
    struct pending p = { .expires_ns = (u64)hrtimer->node.expires, .handled_at_ns = handled_at_ns };
    if ((u32)bpf_get_current_pid_tgid() == tid) {
        // The thread itself was interrupted: no switch to wait for.
        emit(tid, p.expires_ns, p.handled_at_ns, p.handled_at_ns);
        return;
    }
    struct pending *slot = bpf_map_lookup_elem(&handled, &tid);
    if (slot)
        *slot = p;
    else
        bpf_map_update_elem(&handled, &tid, &p, BPF_ANY);
}

/// The expiring timer of hrtimer_expire_entry's arguments if it is a sleeper's (its
/// callback hrtimer_wakeup, when that address is known), else NULL.
static __always_inline struct hrtimer *wakeup_timer(u64 *ctx)
{
    struct hrtimer *hrtimer = (struct hrtimer *)ctx[0];
    u64 wakeup_fn = config_at(1);
    if (wakeup_fn && (u64)hrtimer->function != wakeup_fn)
        return 0;
    return hrtimer;
}

/// hrtimer_expire_entry(struct hrtimer *hrtimer, ktime_t *now): the handling starts at
/// `now`, hrtimer_interrupt's clock read that found the timer expired. Reading a `ktime_t *` argument needs a
/// verifier that accepts pointers to integer typedefs (Linux 6.4, and backports).
SEC("tp_btf/hrtimer_expire_entry")
int hrtimer_expire_entry(u64 *ctx)
{
    struct hrtimer *hrtimer = wakeup_timer(ctx);
    if (!hrtimer)
        return 0;
    s64 now = 0;
    if (bpf_probe_read_kernel(&now, sizeof(now), (void *)ctx[1]))
        return 0;
    expired(hrtimer, (u64)now);
    return 0;
}

/// The same where the verifier refuses that argument: the handling starts when the
/// expiry's callback is entered, a little later.
SEC("tp_btf/hrtimer_expire_entry")
int hrtimer_expire_entry_clock(u64 *ctx)
{
    struct hrtimer *hrtimer = wakeup_timer(ctx);
    if (!hrtimer)
        return 0;
    expired(hrtimer, bpf_ktime_get_ns());
    return 0;
}

/// sched_switch(bool preempt, struct task_struct *prev, struct task_struct *next,
///              unsigned int prev_state)
SEC("tp_btf/sched_switch")
int sched_switch(u64 *ctx)
{
    struct task_struct *next = (struct task_struct *)ctx[2];
    if ((u64)next->tgid != config_at(0))
        return 0;
    u32 tid = (u32)next->pid;
    struct pending *p = bpf_map_lookup_elem(&handled, &tid);
    if (!p || !p->expires_ns)
        return 0;
    emit(tid, p->expires_ns, p->handled_at_ns, bpf_ktime_get_ns());
    p->expires_ns = 0;
    return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
