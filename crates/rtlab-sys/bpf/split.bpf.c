// SPDX-License-Identifier: (MIT OR Apache-2.0) AND GPL-2.0-only
//
// The eBPF split backend of `rtlab run --split` (crates/rtlab-sys/src/tracefs/ebpf.rs): one record
// per wake-up of rtlab's timer threads, made in the kernel, instead of every event of the
// traced CPUs in the ftrace ring buffer.
//
// A measuring thread of this rtlab (its process id is set in `config`; its name starts
// with "rtlab-timer/") arms its timer: hrtimer_start names the timer and its expiry. The
// expiry's callback (hrtimer_expire_entry), or the local timer interrupt enclosing it when
// that entered no earlier than EARLY_TIMER_IRQ_NS before the expiry, is the start of the
// handling. The next switch to the thread is its switch-in (the handling itself, when the
// thread was running). The record goes to the `records` ring buffer then; a full buffer
// counts the record in `dropped` instead. Instants are bpf_ktime_get_ns: CLOCK_MONOTONIC,
// the clock of the samples. The rules are the tracefs backend's (docs/split.md).
//
// Built with: clang -O2 -g -target bpf -c split.bpf.c (crates/rtlab-sys/build.rs).

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

typedef __u64 u64;
typedef __s64 s64;
typedef __u32 u32;

/// KVM may raise the timer interrupt a few µs before the expiry on purpose.
#define EARLY_TIMER_IRQ_NS 50000
#define COMM_PREFIX "rtlab-timer/"
#define COMM_PREFIX_LEN 12

// BTF-typed tracepoints (tp_btf): the program gets the tracepoint's arguments, not the
// record ftrace would build from them, so a hit costs no copy of a record nobody reads.
// The few kernel fields read are declared here and relocated against the running kernel's
// BTF at load (CO-RE): no vmlinux.h, no layout to keep in step.

typedef s64 ktime_t;

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
} __attribute__((preserve_access_index));

/// What userspace reads: one per wake-up.
struct split_record {
    u32 cpu;
    u32 tid;
    u64 expires_ns;
    u64 handled_at_ns;
    u64 switched_in_at_ns;
};

/// What is known of a wake-up before its switch-in.
struct pending {
    u64 expires_ns;
    u64 handled_at_ns;
};

/// [0]: the process id whose threads are followed; [1]: hrtimer_wakeup's address (0: any
/// callback).
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 2);
    __type(key, u32);
    __type(value, u64);
} config SEC(".maps");

/// Timer -> the thread that armed it.
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 4096);
    __type(key, u64);
    __type(value, u32);
} timer_owner SEC(".maps");

/// Thread -> the expiry it armed last.
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 4096);
    __type(key, u32);
    __type(value, s64);
} armed SEC(".maps");

/// Thread -> its wake-up, handled and not yet switched in.
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 4096);
    __type(key, u32);
    __type(value, struct pending);
} handled SEC(".maps");

/// Per CPU: when the local timer interrupt being handled entered (0: none).
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, u32);
    __type(value, u64);
} local_timer_entry_at SEC(".maps");

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

/// hrtimer_start(struct hrtimer *hrtimer, enum hrtimer_mode mode)
SEC("tp_btf/hrtimer_start")
int hrtimer_start(u64 *ctx)
{
    u64 pid_tgid = bpf_get_current_pid_tgid();
    if ((pid_tgid >> 32) != config_at(0))
        return 0;
    struct hrtimer *hrtimer = (struct hrtimer *)ctx[0];
    u64 wakeup_fn = config_at(1);
    if (wakeup_fn && (u64)hrtimer->function != wakeup_fn)
        return 0;
    char comm[16];
    if (bpf_get_current_comm(comm, sizeof(comm)))
        return 0;
    const char prefix[] = COMM_PREFIX;
    for (int i = 0; i < COMM_PREFIX_LEN; i++)
        if (comm[i] != prefix[i])
            return 0;
    u32 tid = (u32)pid_tgid;
    u64 timer = (u64)hrtimer;
    s64 expires = hrtimer->node.expires;
    bpf_map_update_elem(&timer_owner, &timer, &tid, BPF_ANY);
    bpf_map_update_elem(&armed, &tid, &expires, BPF_ANY);
    return 0;
}

/// local_timer_entry(int vector)
SEC("tp_btf/local_timer_entry")
int local_timer_entry(u64 *ctx)
{
    u32 zero = 0;
    u64 *entry = bpf_map_lookup_elem(&local_timer_entry_at, &zero);
    if (entry)
        *entry = bpf_ktime_get_ns();
    return 0;
}

/// local_timer_exit(int vector)
SEC("tp_btf/local_timer_exit")
int local_timer_exit(u64 *ctx)
{
    u32 zero = 0;
    u64 *entry = bpf_map_lookup_elem(&local_timer_entry_at, &zero);
    if (entry)
        *entry = 0;
    return 0;
}

/// hrtimer_expire_entry(struct hrtimer *hrtimer, ktime_t *now)
SEC("tp_btf/hrtimer_expire_entry")
int hrtimer_expire_entry(u64 *ctx)
{
    u64 timer = ctx[0];
    u32 *owner = bpf_map_lookup_elem(&timer_owner, &timer);
    if (!owner)
        return 0;
    u32 tid = *owner;
    bpf_map_delete_elem(&timer_owner, &timer);
    s64 *expires = bpf_map_lookup_elem(&armed, &tid);
    if (!expires)
        return 0;
    u64 now = bpf_ktime_get_ns();
    struct pending p = { .expires_ns = (u64)*expires, .handled_at_ns = now };
    u32 zero = 0;
    u64 *entry = bpf_map_lookup_elem(&local_timer_entry_at, &zero);
    if (entry && *entry && *entry + EARLY_TIMER_IRQ_NS >= p.expires_ns)
        p.handled_at_ns = *entry;
    if ((u32)bpf_get_current_pid_tgid() == tid) {
        // The thread itself was interrupted: no switch to wait for.
        emit(tid, p.expires_ns, p.handled_at_ns, p.handled_at_ns);
        return 0;
    }
    bpf_map_update_elem(&handled, &tid, &p, BPF_ANY);
    return 0;
}

/// sched_switch(bool preempt, struct task_struct *prev, struct task_struct *next,
///              unsigned int prev_state)
SEC("tp_btf/sched_switch")
int sched_switch(u64 *ctx)
{
    struct task_struct *next = (struct task_struct *)ctx[2];
    u32 tid = (u32)next->pid;
    struct pending *p = bpf_map_lookup_elem(&handled, &tid);
    if (!p)
        return 0;
    emit(tid, p->expires_ns, p->handled_at_ns, bpf_ktime_get_ns());
    bpf_map_delete_elem(&handled, &tid);
    return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
