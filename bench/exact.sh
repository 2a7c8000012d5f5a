#!/usr/bin/env bash
# The exact vPMU backend (issue 11), measured side by side in one run and
# printed as a Markdown table:
#   1. guest instructions per second in the emulator, and the slowdown
#      against native execution, for a register-only loop (pmutest loop),
#      matmul and hash: each workload counts its own region (instructions,
#      and cycles = the vCPU thread's run time at 1 GHz); the same region
#      run natively (clock backend) gives the native time. Alternating runs,
#      medians.
#   2. PMIs: overflow-to-PMI latency and instructions past the overflow
#      (pmutest pmi, --vpmu-stats).
#   3. the cost of entering and leaving the emulator: state transfer and
#      interrupt checks per engine run, and one KVM step (--vpmu-stats).
#   RUNS=N (default 3)
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
RUNS=${RUNS:-3}
VMM=$BUILD/kvmprof-vmm
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# field FILE PREFIX KEY: the value of KEY= on the first line starting with PREFIX.
field() { awk -v p="$2" -v k="$3" 'index($0, p) == 1 { for (i = 1; i <= NF; i++) if (index($i, k "=") == 1) { print substr($i, length(k) + 2); exit } }' "$1"; }

# name|program|line prefix|instructions key|cycles key
WORKLOADS=(
	"loop (dec/jnz, registers only)|/bin/pmutest:cycles|pmutest cycles:|instructions|cycles"
	"matmul 128, 20 iterations|/bin/matmul:128:20|matmul: instructions|instructions|cycles"
	"hash 64 KiB, 300 iterations|/bin/hash:300|hash: instructions|instructions|cycles"
)

echo "bench-exact: $RUNS alternating runs per workload..." >&2
rows=""
for w in "${WORKLOADS[@]}"; do
	IFS='|' read -r name prog prefix ikey ckey <<<"$w"
	: >"$tmp/exact" && : >"$tmp/native" && : >"$tmp/insns"
	for i in $(seq "$RUNS"); do
		for backend in exact clock; do
			"$VMM" --cpus 1 --vpmu-backend=$backend --cmdline "quiet start=$prog" --timeout 300 >"$tmp/out" 2>/dev/null ||
				{ echo "bench-exact: $prog on the $backend backend failed" >&2; exit 1; }
			c=$(field "$tmp/out" "$prefix" "$ckey")
			if [ $backend = exact ]; then
				echo "$c" >>"$tmp/exact"
				field "$tmp/out" "$prefix" "$ikey" >>"$tmp/insns"
			else
				echo "$c" >>"$tmp/native"
			fi
		done
	done
	ex=$(median <"$tmp/exact") na=$(median <"$tmp/native") ins=$(median <"$tmp/insns")
	rows+="| $name | $ins | $(awk -v i="$ins" -v t="$ex" 'BEGIN { printf "%.1f ms", t / 1e6 }') | $(awk -v t="$na" 'BEGIN { printf "%.1f ms", t / 1e6 }') | $(awk -v i="$ins" -v t="$ex" 'BEGIN { printf "%.0f M/s", i / t * 1e3 }') | $(awk -v a="$ex" -v b="$na" 'BEGIN { printf "%.1f", a / b }') |"$'\n'
done

"$VMM" --cpus 1 --vpmu-backend=exact --vpmu-stats --cmdline "quiet start=/bin/pmutest:pmi:1000000:100" >"$tmp/pmi.out" 2>"$tmp/pmi.err" ||
	{ echo "bench-exact: the PMI run failed" >&2; exit 1; }
pmis=$(field "$tmp/pmi.out" "pmutest pmi:" pmis) expected=$(field "$tmp/pmi.out" "pmutest pmi:" expected)
over=$(field "$tmp/pmi.out" "pmutest pmi:" overshoot_max)
lat=$(sed -n 's/.*overflow-to-PMI latency: mean \([0-9.]*\) us, max \([0-9.]*\) us.*/\1 µs mean, \2 µs max/p' "$tmp/pmi.err")
cost=$(sed -n 's/.*each with \([0-9.]*\) us of state transfer and interrupt checks; a KVM step \([0-9.]*\) us.*/\1|\2/p' "$tmp/pmi.err")

echo
echo "| workload (1 vCPU, its own counted region) | instructions | exact backend | native (clock backend) | instructions/s in the exact backend | exact / native |"
echo "|---|---|---|---|---|---|"
printf '%s' "$rows"
echo
echo "| PMIs and the emulator's entry and exit (pmutest pmi 1000000 100, exact backend) | |"
echo "|---|---|"
echo "| PMIs taken / expected | $pmis / $expected |"
echo "| instructions retired between an overflow and its PMI (max) | $over |"
echo "| overflow-to-PMI latency (VMM time) | $lat |"
echo "| per engine run: state transfer (KVM_GET/SET_REGS, FPU) and interrupt checks | ${cost%|*} µs |"
echo "| one KVM step (an instruction or an event KVM does, with breakpoints back) | ${cost#*|} µs |"
