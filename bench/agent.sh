#!/usr/bin/env bash
# Guest-wide profiling (issue 4), each figure measured side by side in one
# run and printed as a Markdown table:
#   1. sampling overhead of the bundled guest's /bin/agent at ~1,000 PMIs per
#      second of guest time: the workload phase's guest time (agent's ms=)
#      sampled against the same programs run the same way unsampled (agent
#      -n), alternating, medians;
#   2. VM exits per sample: the two runs' exits by reason
#      (--vpmu-trace-pmi 0), the difference over the samples; the sample
#      file's transmission (one port write per byte, after the workload) apart;
#   3. guest ring-0 instructions and handler VM exits per PMI, and per LAPIC
#      timer tick for scale: measured by single-stepping the handlers
#      (--vpmu-trace-pmi / --vpmu-trace-tick, vmm/profiling/pmi_trace.c);
#   4. time to report recordings of the bench's own program (~10^6 samples)
#      and of held-out programs (python3, gcc -O2): bench/agent_reports.sh,
#      which needs no KVM and runs when 1-3 cannot.
# This host has no hardware PMU, so the guest's cycles come from the clock
# backend (vCPU thread run time at 1 GHz), and the host recordings use cpu-clock.
#   RUNS=N (default 5), SAMPLES=N (default 1000000)
set -u
cd "$(dirname "$0")/.." || exit 1
# shellcheck source=bench/lib.sh
. bench/lib.sh
BUILD=${BUILD:-build}
RUNS=${RUNS:-5}
SAMPLES=${SAMPLES:-1000000}
VMM=$BUILD/kvmprof-vmm
WORKLOAD=/bin/matmul+128+900 # ~1.1 s of guest ring 3 on this host
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() { echo "bench-agent: $*" >&2; exit 1; }
spread() { sed -n "s/.*$1 *min \\([0-9]*\\), median \\([0-9]*\\), max \\([0-9]*\\).*/\\1 \\2 \\3/p" "$2" | head -n 1; }

command -v perf >/dev/null || fail "perf is not installed (apt-get install linux-perf)"
# 1-3 boot the bundled guest; 4 is a native comparison and runs either way.
if ! [ -r /dev/kvm ] || ! [ -w /dev/kvm ]; then
	echo "bench-agent: no usable /dev/kvm: skipping 1-3 (the bundled guest); 4 (reports) runs without it" >&2
	printf '\nGuest-wide profiling (1-3): not run, this host has no usable /dev/kvm.\n'
	exec bash bench/agent_reports.sh
fi
echo "bench-agent: 1-3 bundled guest, clock backend, 1 vCPU, $RUNS runs each way..." >&2

# 1 and 2. Sampled and unsampled runs of the same workload, alternating.
for _ in $(seq "$RUNS"); do
	for mode in on off; do
		# -I: the PMI path this benchmark measures (the agent uses the VMM's sample buffer by default).
		if [ $mode = on ]; then flag="-I:"; else flag="-n:"; fi
		"$VMM" --cpus 1 --vpmu-backend=clock --vpmu-trace-pmi 0 --agent-channel "$tmp/chan" \
			--cmdline "quiet start=/bin/agent:$flag$WORKLOAD" >"$tmp/out" 2>"$tmp/err" ||
			fail "the $mode run failed: $(tail -n 3 "$tmp/err")"
		ms=$(field ms "$tmp/out")
		[ -n "$ms" ] || fail "no agent summary line in the $mode run: $(tail -n 3 "$tmp/out")"
		echo "$ms" >>"$tmp/ms.$mode"
		echo "$(field samples "$tmp/out") $(reason MSR "$tmp/err") $(reason 'signal (EINTR)' "$tmp/err")" \
			"$(reason 'port I/O' "$tmp/err") $(field bytes "$tmp/out")" >>"$tmp/exits.$mode"
	done
done
ms_on=$(median <"$tmp/ms.on")
ms_off=$(median <"$tmp/ms.off")
slow=$(ratio_per_run "$tmp/ms.on" "$tmp/ms.off")
# Exits per sample from the sums over all runs (each run's counts are small).
read -r smp msr sig io bytes < <(awk '{ for (i = 1; i <= 5; i++) s[i] += $i } END { print s[1], s[2], s[3], s[4], s[5] }' "$tmp/exits.on")
read -r _ msr0 sig0 io0 _ < <(awk '{ for (i = 1; i <= 5; i++) s[i] += $i } END { print s[1], s[2], s[3], s[4], s[5] }' "$tmp/exits.off")
[ "${smp:-0}" -gt 0 ] || fail "the sampled runs took no samples"
per() { awk -v a="$1" -v b="$2" -v n="$smp" 'BEGIN { printf "%.2f", (a - b) / n }'; }
msr_ps=$(per "$msr" "$msr0")
sig_ps=$(per "$sig" "$sig0")
work_ps=$(awk -v a="$msr_ps" -v b="$sig_ps" 'BEGIN { printf "%.2f", a + b }')
io_ps=$(per "$io" "$io0")
bytes_ps=$(awk -v b="$bytes" -v n="$smp" 'BEGIN { printf "%.0f", b / n }')
smp_run=$(awk -v n="$smp" -v r="$RUNS" 'BEGIN { printf "%.0f", n / r }')
rate=$(awk -v n="$smp_run" -v ms="$ms_on" 'BEGIN { printf "%.0f", n / (ms / 1000) }')

# 3. Single-stepped handlers: PMIs of a sampled run, ticks of an unsampled one.
"$VMM" --cpus 1 --vpmu-backend=clock --vpmu-trace-pmi 300 --agent-channel "$tmp/chan" \
	--cmdline "quiet start=/bin/agent:-I:/bin/matmul+128+300" >"$tmp/tpmi.out" 2>"$tmp/tpmi.err" ||
	fail "the PMI trace run failed: $(tail -n 3 "$tmp/tpmi.err")"
"$VMM" --cpus 1 --vpmu-backend=clock --vpmu-trace-tick 100 --agent-channel "$tmp/chan" \
	--cmdline "quiet start=/bin/agent:-n:/bin/matmul+128+300" >"$tmp/ttick.out" 2>"$tmp/ttick.err" ||
	fail "the tick trace run failed: $(tail -n 3 "$tmp/ttick.err")"
read -r pi_min pi_med pi_max < <(spread 'ring-0 instructions, struck ring 3' "$tmp/tpmi.err")
read -r pe_min pe_med pe_max < <(spread 'VM exits in the handler, struck ring 3' "$tmp/tpmi.err")
read -r ti_min ti_med ti_max < <(spread 'ring-0 instructions, struck ring 3' "$tmp/ttick.err")
read -r _ te_med _ < <(spread 'VM exits in the handler, struck ring 3' "$tmp/ttick.err")
if [ -z "${pi_med:-}" ] || [ -z "${ti_med:-}" ]; then
	fail "no trace figures: $(grep -h trace "$tmp"/t*.err)"
fi
npmi=$(sed -n 's/.*PMI trace: [0-9]* single-stepped.*(\([0-9]*\) struck ring 3.*/\1/p' "$tmp/tpmi.err")
ntick=$(sed -n 's/.*tick trace: [0-9]* single-stepped.*(\([0-9]*\) struck ring 3.*/\1/p' "$tmp/ttick.err")

cat <<TABLE

Guest-wide profiling, bundled guest on 1 vCPU, clock backend (no hardware PMU here:
cycles = vCPU thread run time at 1 GHz), host $(uname -r), $RUNS runs each way (medians; ratios: the median of each run's own):

| measure | value |
|---|---|
| workload phase (/bin/matmul 128 900), sampled every 10^6 cycles / unsampled (agent -n), guest time | $ms_on ms / $ms_off ms; per run $(awk -v r="$slow" 'BEGIN { printf "%.3f (%+.1f%%)", r, (r - 1) * 100 }') |
| samples per run, PMIs per second of workload | $smp_run, $rate |
| guest ring-0 instructions per PMI (single-stepped, $npmi PMIs that struck ring 3) | median $pi_med (min $pi_min, max $pi_max) |
| VM exits per sample during the workload: (sampled − unsampled) / samples | $work_ps: $msr_ps PMU MSR + $sig_ps forced (timer signal) |
| VM exits inside the PMI handler (single-stepped) | median $pe_med (min $pe_min, max $pe_max) |
| after the workload: writing the sample file to COM2 | $io_ps port-I/O exits per sample ($bytes_ps bytes per sample) |
| one LAPIC timer tick, for scale ($ntick ticks, unsampled run) | median $ti_med ring-0 instructions (min $ti_min, max $ti_max), $te_med VM exits |

TABLE
exec bash bench/agent_reports.sh
