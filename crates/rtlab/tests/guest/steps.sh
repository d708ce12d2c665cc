#!/bin/bash
# Runs inside a guest booted by contrib/guest/boot (crates/rtlab/tests/guest_kernels.rs):
# every step's standard output, standard error and exit status land in OUT as
# NAME.out, NAME.err and NAME.rc, for the test on the host to check. A step that hangs is
# ended after its limit (status 124), so one bad step cannot use up the guest's time.
#
#   steps.sh OUT RTLAB STEP...
set -u
out=$1 rtlab=$2
shift 2

step() {
    local name=$1 limit=$2
    shift 2
    timeout -k 10 "$limit" "$@" >"$out/$name.out" 2>"$out/$name.err"
    echo $? >"$out/$name.rc"
}

# What a run must leave as it found it: the tracer, tracing on/off, the enabled events.
tracing_state() {
    local t=/sys/kernel/tracing
    echo "current_tracer=$(cat $t/current_tracer)"
    echo "tracing_on=$(cat $t/tracing_on)"
    echo "trace_clock=$(sed 's/.*\[\(.*\)\].*/\1/' $t/trace_clock)"
    echo "instances=$(ls $t/instances | tr '\n' ' ')"
    echo "enabled_events=$(grep -c . $t/set_event)"
}

# The timerlat/osnoise tracers' own settings (a kernel without them has no osnoise/).
osnoise_state() {
    local f
    for f in /sys/kernel/tracing/osnoise/*; do
        [ -f "$f" ] && echo "${f##*/}=$(cat "$f" 2>/dev/null)"
    done
}

# The binary lives on the host's file system (9p): run from there, every page it touches is a
# 9p read, and in a TCG guest a 1 s `rtlab run` took 21 s against 4 s for a copy in the
# guest's memory (/tmp is a tmpfs overlay; --version 2.5 s against 0.5 s).
if copy=$(mktemp -d) && cp "$rtlab" "$copy/rtlab"; then
    rtlab=$copy/rtlab
fi
tracing_state >"$out/tracing-before"
uname -r >"$out/uname"
for s in "$@"; do
    case "$s" in
        sysinfo)
            step sysinfo 120 "$rtlab" sysinfo
            step sysinfo-json 120 "$rtlab" sysinfo --json
            ;;
        split-tracefs)
            step split-tracefs 300 "$rtlab" run --split --split-backend tracefs --explain-above 1ms \
                -D 5s -L idle -q -l "$(uname -r)-tracefs" -o "$out/split-tracefs"
            ;;
        split-ebpf)
            step split-ebpf 300 "$rtlab" run --split --split-backend ebpf \
                -D 5s -L idle -q -l "$(uname -r)-ebpf" -o "$out/split-ebpf"
            ;;
        suite)
            step suite 600 "$rtlab" suite xenomai-rtai --quick -q -l "$(uname -r)" -o "$out/suite"
            ;;
        timerlat)
            osnoise_state >"$out/osnoise-before"
            step timerlat 600 "$rtlab" run -P timerlat -D 10s -L idle -q -l "$(uname -r)-timerlat" -o "$out/timerlat"
            osnoise_state >"$out/osnoise-after"
            ;;
        monitor-timerlat)
            # The monitor with the kernel's tracer: three 2 s windows into a fresh history, kept
            # in the guest's memory while it is written (SQLite's WAL maps a file shared, which
            # 9p may not offer), then copied out when there is one.
            osnoise_state >"$out/osnoise-before-monitor"
            history=$(mktemp -d)
            step monitor-timerlat 300 "$rtlab" monitor -P timerlat -w 2s -D 6s -q --db "$history/monitor.db"
            if [ -e "$history/monitor.db" ]; then
                mkdir -p "$out/monitor-timerlat" && cp "$history"/monitor.db* "$out/monitor-timerlat/"
            fi
            osnoise_state >"$out/osnoise-after-monitor"
            ;;
        noise | noise:*)
            # noise:5s for another duration than 10 s.
            duration=${s#noise}
            duration=${duration#:}
            step noise 600 "$rtlab" run -P noise --cpus 1 -D "${duration:-10s}" -L idle -q -l "$(uname -r)-noise" -o "$out/noise"
            ;;
        rtla)
            # The kernel's own tool, for the importer: 1 ms buckets up to 100 ms, both CPUs.
            step rtla-hist 300 rtla timerlat hist -d 5s -c 0-1 -b 1000 -E 100
            # And clipped: 1 µs buckets up to 20 µs, where a TCG guest's wake-ups are far later.
            step rtla-clipped 300 rtla timerlat hist -d 3s -c 0 -b 1 -E 20
            # And its summary table, which keeps no distribution at all.
            step rtla-top 300 rtla timerlat top -d 3s -c 0-1 -q
            ;;
        *)
            echo "steps.sh: unknown step $s" >&2
            exit 2
            ;;
    esac
    tracing_state >"$out/tracing-after-${s%%:*}"
done
