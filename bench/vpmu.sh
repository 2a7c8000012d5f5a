#!/usr/bin/env bash
# What the virtual PMU costs (issue 3), each figure measured side by side in
# one run and printed as a Markdown table:
#   1. one trapped PMU MSR access next to one port-I/O exit (bench/exit_cost.S,
#      TSC deltas in the guest, ratios of differences: unit-free);
#   2. overflow-to-PMI latency, in guest events past the overflow and in µs
#      (--vpmu-stats of a sampling run);
#   3. slowdown of a user-mode workload with 4 counters counting against
#      --vpmu=off (guest clock, alternating runs, medians);
#   4. VM exits per PMI delivered (sampling run minus a run of the same
#      workload that does not sample).
# Uses the emulated backend where the host has hardware counters, else the
# clock backend (cycles from run time), and says which.
#   RUNS=N (default 5)
set -u
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh
BUILD=${BUILD:-build}
RUNS=${RUNS:-5}
VMM=$BUILD/kvmprof-vmm
EC=$BUILD/bench/exit-cost.elf
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if "$VMM" --vpmu-backend=emulated --cmdline "quiet start=/bin/exit" >/dev/null 2>&1; then
	BACKEND=emulated
else
	BACKEND=clock
fi
hexfield() { printf '%d\n' "0x$(sed -n "s/^$1 \([0-9a-f]*\)$/\1/p" "$2")"; }
stat_field() { sed -n "s/.*$1 *\([0-9.]*\).*/\1/p" "$2" | head -n 1; }

echo "bench-vpmu: backend $BACKEND, $RUNS runs per figure..." >&2

# 1. MSR exit vs port I/O exit, and vs KVM handling the same MSR in the kernel (--vpmu=off).
for i in $(seq "$RUNS"); do
	for mode in on off; do
		if [ $mode = on ]; then args=(--vpmu=amd --vpmu-backend=$BACKEND); else args=(--vpmu=off); fi
		"$VMM" --kernel "$EC" "${args[@]}" >"$tmp/ec" 2>/dev/null || { echo "bench-vpmu: exit-cost run failed" >&2; exit 1; }
		e=$(hexfield empty "$tmp/ec"); m=$(hexfield rdmsr "$tmp/ec"); o=$(hexfield outb "$tmp/ec")
		awk -v e="$e" -v m="$m" -v o="$o" 'BEGIN { printf "%.3f\n", (m - e) / (o - e) }' >>"$tmp/ratio.$mode"
	done
done
r_on=$(median <"$tmp/ratio.on")
r_off=$(median <"$tmp/ratio.off")

# 2 and 4. A sampling run (cycles, period 2M, keep overshoot) and the same workload unsampled.
# The AMD model both times, whatever the host's vendor: the filter names its cycles event (0x76); with
# the host's default model (Intel's cycles is 0x3c) the "unsampled" run sampled too.
printf 'action deny\nevent 0x76\n' >"$tmp/deny-cycles.filter"
"$VMM" --vpmu=amd --vpmu-backend=$BACKEND --vpmu-stats --cmdline "quiet start=/bin/pmutest:pmi:2000000:200:cycles:keep" \
	>"$tmp/pmi.out" 2>"$tmp/pmi.err"
"$VMM" --vpmu=amd --vpmu-backend=$BACKEND --vpmu-stats --cmdline "quiet start=/bin/pmutest:pmi:2000000:200:cycles:keep" \
	--vpmu-filter "$tmp/deny-cycles.filter" >"$tmp/nopmi.out" 2>"$tmp/nopmi.err"
# A filter that denied nothing would make the subtraction meaningless.
[ "$(stat_field 'PMIs injected' "$tmp/nopmi.err")" = 0 ] ||
	{ echo "bench-vpmu: the unsampled run got PMIs: the cycles filter did not apply" >&2; exit 1; }
pmis=$(stat_field 'PMIs injected' "$tmp/pmi.err")
exits=$(stat_field 'VM exits' "$tmp/pmi.err")
exits0=$(stat_field 'VM exits' "$tmp/nopmi.err")
lat_mean=$(sed -n 's/.*latency: mean \([0-9.]*\) us.*/\1/p' "$tmp/pmi.err")
lat_max=$(sed -n 's/.*latency: mean [0-9.]* us, max \([0-9.]*\) us.*/\1/p' "$tmp/pmi.err")
past_mean=$(sed -n 's/.*overflow at detection: mean \([0-9]*\).*/\1/p' "$tmp/pmi.err")
past_max=$(sed -n 's/.*overflow at detection: mean [0-9]*, max \([0-9]*\).*/\1/p' "$tmp/pmi.err")
msr_per_pmi=$(awk -v r="$(sed -n 's/.*PMU MSR exits *\([0-9]*\) reads, \([0-9]*\) writes.*/\1 \2/p' "$tmp/pmi.err")" \
	-v p="$pmis" 'BEGIN { split(r, a, " "); printf "%.1f", (a[1] + a[2]) / p }')

# 3. Four counters counting vs no PMU, alternating.
for i in $(seq "$RUNS"); do
	"$VMM" --vpmu-backend=$BACKEND --cmdline "quiet start=/bin/vpmubench:work:4:300" 2>/dev/null |
		sed -n 's/.* ns=\([0-9]*\).*/\1/p' >>"$tmp/work.on"
	"$VMM" --vpmu=off --cmdline "quiet start=/bin/vpmubench:work:0:300" 2>/dev/null |
		sed -n 's/.* ns=\([0-9]*\).*/\1/p' >>"$tmp/work.off"
done
w_on=$(median <"$tmp/work.on")
w_off=$(median <"$tmp/work.off")

cat <<TABLE

vPMU costs, $BACKEND backend, AMD model, host $(uname -r), $RUNS runs (medians):

| measure | value |
|---|---|
| one PMU MSR access trapped to the VMM, in port-I/O exits (RDMSR loop − empty loop) / (OUTB loop − empty loop) | $r_on |
| the same RDMSR handled inside KVM (--vpmu=off), in port-I/O exits | $r_off |
| overflow-to-PMI latency (period 2M cycles, $pmis PMIs) | mean ${lat_mean} µs, max ${lat_max} µs |
| guest events past the overflow when the VMM noticed it | mean ${past_mean}, max ${past_max} |
| workload time with 4 counters counting / with --vpmu=off | $(awk -v a="$w_on" -v b="$w_off" 'BEGIN { printf "%.4f (%+.2f%%)", a / b, (a / b - 1) * 100 }') |
| VM exits per PMI: (exits sampling − exits not sampling) / PMIs | $(awk -v a="$exits" -v b="$exits0" -v p="$pmis" 'BEGIN { printf "%.1f", (a - b) / p }') ($exits − $exits0 over $pmis PMIs), of which PMU MSR exits per PMI: $msr_per_pmi |
TABLE
