#!/usr/bin/env bash
# What trace events and plugins cost (issue 13), measured side by side in one
# run, alternating, and printed as Markdown tables:
#   1. the VMM with its trace events compiled in and nothing listening
#      against the build with them compiled out (build/notrace/kvmprof-vmm):
#      the VMM's CPU time for the same exit-heavy guest workload, and its spread;
#   2. each plugin (every build/plugins/*.so, and the static build with
#      console_bytes compiled in), and a --trace file of vm_exit alone (the
#      VMM's own cost of that event's arguments): the CPU time with it against
#      without, per run and per event it received. Its events are those it
#      has KVMPROF_PLUGIN_ON handlers for (nm), counted in a --trace run of
#      the same workload (the workload is deterministic in its exits' kinds
#      and nearly so in their number);
#   3. the same per-event cost without the VM's noise: bench/trace_cost.c
#      emits the workload's events in a loop on the host, through the real
#      dispatch and plugin loader (build/bench/trace-cost).
# The guest: 1 vCPU, the clock vPMU backend (this host has no counters; the
# exact backend single-steps), kernel port writes, PMU counter toggles
# through WRMSR and console lines: ~9 µs per exit here.
#   RUNS=N alternating runs per comparison (default 5)
#   PLUGINS="A.so B.so" the plugins to measure (default build/plugins/*.so)
set -u
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh
BUILD=${BUILD:-build}
RUNS=${RUNS:-5}
VMM=$BUILD/kvmprof-vmm
NOTRACE=$BUILD/notrace/kvmprof-vmm
STATIC=$BUILD/static/console_bytes/kvmprof-vmm
COST=$BUILD/bench/trace-cost
WORK="quiet pmutest start=/bin/pmutest:portio:50000,/bin/pmutest:toggle:2000,/bin/spam:60000:100"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run_ms BINARY ARGS...: the workload's cost in ms: the VMM's CPU time, user
# (guest time included) and system, which other load on a shared host
# disturbs far less than the wall time.
run_ms() {
	local TIMEFORMAT='%3U %3S' t
	t=$( { time "$@" --cpus 1 --vpmu-backend=clock --console "$tmp/console" --cmdline "$WORK" >/dev/null 2>"$tmp/err"; } 2>&1) ||
		{ echo "bench-trace: $* failed: $(head -c 300 "$tmp/err")" >&2; exit 1; }
	awk -v t="$t" 'BEGIN { split(t, a, " "); printf "%.1f\n", (a[1] + a[2]) * 1000 }'
}
# spread FILE: "min–max" of its numbers.
spread() { sort -n "$1" | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%s–%s", lo, hi }'; }
# handled FILE.so|static: the events a plugin has handlers for, one per line.
handled() {
	if [ "$1" = trace-vm_exit ]; then
		echo vm_exit
	elif [ "$1" = static ]; then
		sed -n 's/^#define KVMPROF_STATIC_ON_\([a-z0-9_]*\) 1$/\1/p' "$BUILD/static/console_bytes/static_plugin_events.h"
	else
		nm -D --defined-only "$1" | sed -n 's/.* T kvmprof_plugin_on_\([a-z0-9_]*\)$/\1/p'
	fi
}

plugins=()
for so in ${PLUGINS:-"$BUILD"/plugins/*.so}; do [ -f "$so" ] && plugins+=("$so"); done
echo "bench-trace: $RUNS alternating runs per comparison, ${#plugins[@]} plugins and the static build..." >&2

# 1. Compiled in, nothing listening, against compiled out.
# Alternating A B, B A, ...: a drift or an order effect does not favour either side.
for i in $(seq "$RUNS"); do
	if [ $((i % 2)) = 1 ]; then
		run_ms "$VMM" >>"$tmp/in"
		run_ms "$NOTRACE" >>"$tmp/out"
	else
		run_ms "$NOTRACE" >>"$tmp/out"
		run_ms "$VMM" >>"$tmp/in"
	fi
done
t_in=$(median <"$tmp/in") t_out=$(median <"$tmp/out")
# Each pair's ratio: the spread of the comparison itself.
paste "$tmp/in" "$tmp/out" | awk '{ printf "%.4f\n", $1 / $2 }' >"$tmp/ratio"

# The events of one run, by name.
"$VMM" --cpus 1 --vpmu-backend=clock --console "$tmp/console" --cmdline "$WORK" --trace "$tmp/run.trace" \
	--trace-events '*' >/dev/null 2>"$tmp/err" || { echo "bench-trace: the --trace run failed" >&2; exit 1; }
"$BUILD/kvmprof" trace -i "$tmp/run.trace" --counts >"$tmp/counts"
grep -q '^lost *0 ' "$tmp/counts" || { echo "bench-trace: the --trace run lost records" >&2; exit 1; }
events_of() {
	local n=0 e c
	for e in $(handled "$1"); do
		c=$(awk -v e="$e" '$1 == e { print $2 }' "$tmp/counts")
		n=$((n + ${c:-0}))
	done
	echo $n
}

# 2. Each plugin loaded against none, alternating; the static build against the ordinary one.
rows=""
# trace-vm_exit: the --trace file of vm_exit alone, for what the VMM itself
# spends on that event's arguments (RIP and CPL: KVM_GET_REGS and
# KVM_GET_SREGS when KVM did not sync them), which every vm_exit handler pays too.
for p in trace-vm_exit "${plugins[@]}" static; do
	name=$(basename "$p" .so)
	: >"$tmp/with" && : >"$tmp/without"
	with=("$VMM" --plugin "$p,out=$tmp/plugin.out")
	if [ "$p" = static ]; then
		with=("$STATIC" --plugin "builtin,out=$tmp/plugin.out")
		name="console_bytes, static build (LTO) against the ordinary build"
	elif [ "$p" = trace-vm_exit ]; then
		with=("$VMM" --trace "$tmp/vm_exit.trace" --trace-events vm_exit)
		name="(no plugin: --trace of vm_exit alone)"
	fi
	for i in $(seq "$RUNS"); do
		if [ $((i % 2)) = 1 ]; then
			run_ms "$VMM" >>"$tmp/without"
			run_ms "${with[@]}" >>"$tmp/with"
		else
			run_ms "${with[@]}" >>"$tmp/with"
			run_ms "$VMM" >>"$tmp/without"
		fi
	done
	n=$(events_of "$p")
	w=$(median <"$tmp/with") wo=$(median <"$tmp/without")
	# Per pair: when the pairs disagree on the sign, the cost is below this host's run-to-run noise.
	per_event=$(paste "$tmp/with" "$tmp/without" | awk -v n="$n" -v a="$w" -v b="$wo" '
		{ d = ($1 - $2) * 1e6 / n; lo = NR == 1 || d < lo ? d : lo; hi = NR == 1 || d > hi ? d : hi }
		END { if (lo < 0 && hi > 0) printf "below the noise (pairs %.0f to %.0f)", lo, hi
		      else printf "%.0f (pairs %.0f to %.0f)", (a - b) * 1e6 / n, lo, hi }')
	rows+="| $name | $(handled "$p" | paste -sd, -) | $n | $wo ms | $w ms | $(awk -v a="$w" -v b="$wo" 'BEGIN { printf "%+.1f ms (%+.2f%%)", a - b, (a / b - 1) * 100 }') | $per_event |"$'\n'
done

cat <<TABLE

Trace events and plugins, 1 vCPU, clock vPMU backend, host $(uname -r), $RUNS alternating runs (medians), workload \`$WORK\`:

| build | VMM CPU time per run (median) | runs (min–max) |
|---|---|---|
| events compiled in, nothing listening (build/kvmprof-vmm) | $t_in ms | $(spread "$tmp/in") ms |
| events compiled out (build/notrace/kvmprof-vmm) | $t_out ms | $(spread "$tmp/out") ms |
| compiled in / compiled out | $(awk -v a="$t_in" -v b="$t_out" 'BEGIN { printf "%.4f (%+.2f%%)", a / b, (a / b - 1) * 100 }') | pairs $(spread "$tmp/ratio") |

| plugin | its events | events per run | CPU time without (median) | with (median) | extra per run | ns per event (medians; each pair's) |
|---|---|---|---|---|---|---|
$rows
TABLE

# 3. The same plugins on the host, without the VM.
if [ -x "$COST" ]; then
	echo
	"$COST" "${plugins[@]}"
fi
