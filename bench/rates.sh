#!/usr/bin/env bash
# Sampling overhead at 1 kHz and 10 kHz next to native perf (issue 17), all
# contenders alternating in one run, medians, printed as a Markdown table:
#   native      the same program built for the host (bench/host_libc/libc.h
#               stands in for the guest's libc; the measured phase is timed
#               with CLOCK_MONOTONIC), unrecorded and under `perf record -e
#               cpu-clock -c 1000000` (1 kHz of its CPU time) and `-c 100000`;
#   guest-wide  the bundled guest's /bin/agent sampling the clock backend's
#               cycles (vCPU thread run time at 1 GHz) every 10^6 and 10^5
#               cycles, through the PMI path (agent -I: a PMI per sample) and
#               through the vPMU's sample buffer (the default: the VMM writes
#               the samples, a PMI per watermark crossing), against `agent -n`
#               (same programs, unsampled); the agent's ms= is guest time of
#               the workload phase;
#   system-wide /bin/split on 1 vCPU under `kvmprof record --vm SOCK -F 1000`
#               and `-F 10000`, against the same VMM with nobody attached;
#               split's ms= is guest time of its loop (bench/host.sh's method).
# Guest-wide and native runs use /bin/matmul 128 900, system-wide and its
# native counterpart /bin/split 150000: the same program on both sides of each
# comparison. Also the forced VM exits per guest sample (exits with reason
# "signal (EINTR)", sampled minus unsampled, over the samples).
#   RUNS=N (default 5)
set -u
cd "$(dirname "$0")/.." || exit 1
# shellcheck source=bench/lib.sh
. bench/lib.sh
BUILD=${BUILD:-build}
RUNS=${RUNS:-5}
VMM=$BUILD/kvmprof-vmm
KVMPROF=$BUILD/kvmprof
MATMUL=$BUILD/bench/matmul-host
SPLIT=$BUILD/bench/split-host
ROUNDS=150000
G10_TIMEOUT=${G10_TIMEOUT:-60} # s: the guest's PMI handler takes longer than a 10 kHz period here
PAUSE=1000 # ms split sleeps before and after its loop: kvmprof record attaches in ~0.2 s
bench_start

fail() { echo "bench-rates: $*" >&2; exit 1; }

# native NAME PERIOD PROGRAM ARGS...: the program's ms= under perf record -c PERIOD (0: unrecorded).
native() {
	local name=$1 period=$2 ms
	shift 2
	if [ "$period" = 0 ]; then
		"$@" >"$tmp/nout" 2>"$tmp/nerr" || fail "$name: $* failed: $(tail -n 3 "$tmp/nerr")"
	else
		perf record -q -e cpu-clock -c "$period" -o "$tmp/n.data" -- "$@" >"$tmp/nout" 2>"$tmp/nerr" ||
			fail "$name: perf record failed: $(tail -n 3 "$tmp/nerr")"
	fi
	ms=$(field ms "$tmp/nout")
	[ -n "$ms" ] || fail "$name: no ms= line: $(tail -n 3 "$tmp/nout")"
	echo "$ms" >>"$tmp/ms.$name"
}

# guest_wide NAME AGENT_FLAGS [TIMEOUT]: the agent's ms= and samples, the run's EINTR exits.
# A run stopped by TIMEOUT (the VMM's exit code 124) is written down as not finished.
guest_wide() {
	local ms rc
	"$VMM" --cpus 1 --vpmu-backend=clock --vpmu-trace-pmi 0 --agent-channel "$tmp/chan" ${3:+--timeout "$3"} \
		--cmdline "quiet start=/bin/agent:$2/bin/matmul+128+900" >"$tmp/gout" 2>"$tmp/gerr"
	rc=$?
	if [ $rc = 124 ] && [ -n "${3:-}" ]; then
		echo "$3" >>"$tmp/dnf.$1"
		return
	fi
	[ $rc = 0 ] || fail "$1: the VMM failed: $(tail -n 3 "$tmp/gerr")"
	ms=$(field ms "$tmp/gout")
	[ -n "$ms" ] || fail "$1: no agent summary line: $(tail -n 3 "$tmp/gout")"
	# b*: the sample buffer must have been used, g1 and g10: the PMI path.
	case $1 in
	b*) [ "$(field buffer "$tmp/gout")" = 1 ] || fail "$1: the agent did not use the sample buffer: $(tail -n 1 "$tmp/gout")" ;;
	g[1-9]*) [ "$(field buffer "$tmp/gout")" = 0 ] || fail "$1: the agent did not take the PMI path: $(tail -n 1 "$tmp/gout")" ;;
	esac
	echo "$ms" >>"$tmp/ms.$1"
	echo "$(field samples "$tmp/gout") $(reason 'signal (EINTR)' "$tmp/gerr")" >>"$tmp/ex.$1"
}

# system_wide NAME RATE: split's ms= with kvmprof record -F RATE attached (0: nobody attached).
system_wide() {
	local sock=$tmp/vm.sock ms gs
	rm -f "$sock"
	"$VMM" --cpus 1 --vpmu=off --vpmu-trace-pmi 0 --control "$sock" \
		--cmdline "quiet start=/bin/split:$ROUNDS:$PAUSE" >"$tmp/sout" 2>"$tmp/serr" &
	vmm_pid=$!
	gs=0
	if [ "$2" != 0 ]; then
		wait_sock "$sock" || fail "$1: the VMM made no control socket: $(tail -n 3 "$tmp/serr")"
		"$KVMPROF" record --vm "$sock" -F "$2" -q -o "$tmp/s.data" 2>"$tmp/rec.err" &
		rec_pid=$!
		until grep -q '^split:' "$tmp/sout"; do
			kill -0 "$vmm_pid" 2>/dev/null || break
			sleep 0.05
		done
		kill -INT "$rec_pid"
		wait "$rec_pid" || fail "$1: kvmprof record failed: $(tail -n 3 "$tmp/rec.err")"
		rec_pid=
		gs=$(sed -n 's/.*samples), \([0-9]*\) guest samples.*/\1/p' "$tmp/rec.err")
	fi
	wait "$vmm_pid" || fail "$1: the VMM failed: $(tail -n 3 "$tmp/serr")"
	vmm_pid=
	ms=$(field ms "$tmp/sout")
	[ -n "$ms" ] || fail "$1: no split line: $(tail -n 3 "$tmp/sout")"
	echo "$ms" >>"$tmp/ms.$1"
	echo "${gs:-0} $(reason 'signal (EINTR)' "$tmp/serr")" >>"$tmp/ex.$1"
}

command -v perf >/dev/null || fail "perf is not installed (apt-get install linux-perf)"
perf record -q -e cpu-clock -c 1000000 -o "$tmp/probe.data" -- true 2>"$tmp/probe.err" ||
	fail "perf record cannot sample cpu-clock here: $(tail -n 1 "$tmp/probe.err")"
echo "bench-rates: native, guest-wide (PMI path, sample buffer) and system-wide at 0, 1 and 10 kHz, $RUNS rounds..." >&2
for run in $(seq "$RUNS"); do
	echo "bench-rates: round $run of $RUNS" >&2
	native nm0 0 "$MATMUL" 128 900
	native nm1 1000000 "$MATMUL" 128 900
	native nm10 100000 "$MATMUL" 128 900
	native ns0 0 "$SPLIT" "$ROUNDS"
	native ns1 1000000 "$SPLIT" "$ROUNDS"
	native ns10 100000 "$SPLIT" "$ROUNDS"
	guest_wide g0 "-n:"
	guest_wide g1 "-I:-c:1000000:"
	# The PMI path at 10 kHz: once, bounded (its handler outlasts the period here).
	[ "$run" = 1 ] && guest_wide g10 "-I:-c:100000:" "$G10_TIMEOUT"
	guest_wide b1 "-c:1000000:"
	guest_wide b10 "-c:100000:"
	system_wide s0 0
	system_wide s1 1000
	system_wide s10 10000
done

med() { median <"$tmp/ms.$1"; }
# cell BASE NAME: "N ms (+X%)", or that NAME did not finish.
cell() {
	if [ -s "$tmp/dnf.$2" ]; then
		echo "did not finish in $(head -n 1 "$tmp/dnf.$2") s"
	else
		echo "$(med "$2") ms ($(over "$1" "$2"))"
	fi
}
# paired BASE NAME: NAME's slowdown over BASE as a fraction, the median of each round's ratio
# (bench/lib.sh). NAME may have fewer rounds (g10): those pair with BASE's first.
paired() { awk -v r="$(ratio_per_run "$tmp/ms.$2" "$tmp/ms.$1")" 'BEGIN { print r - 1 }'; }
# over BASE NAME: NAME's slowdown over BASE, in percent.
over() { awk -v f="$(paired "$1" "$2")" 'BEGIN { printf "%+.1f%%", f * 100 }'; }
# per_sample BASE NAME: samples per run (median), forced exits per sample (sums), µs lost per sample.
per_sample() {
	if [ -s "$tmp/dnf.$2" ]; then
		echo "did not finish | | "
		return
	fi
	local n ssum e e0
	n=$(awk '{ print $1 }' "$tmp/ex.$2" | median)
	read -r ssum e < <(awk '{ s += $1; e += $2 } END { print s, e }' "$tmp/ex.$2")
	e0=$(awk '{ e += $2 } END { print e }' "$tmp/ex.$1")
	awk -v n="$n" -v s="$ssum" -v e="$e" -v e0="$e0" -v f="$(paired "$1" "$2")" -v b="$(med "$1")" 'BEGIN {
		if (n < 1 || s < 1) { print "no samples | | "; exit }
		printf "%d | %.2f | %.1f", n, (e - e0) / s, f * b * 1000 / n }'
}
# ratio BASE_N N_N BASE_G N_G: the guest's overhead over native perf's at the same rate.
ratio() {
	if [ -s "$tmp/dnf.$4" ]; then
		echo "-"
		return
	fi
	awk -v no="$(paired "$1" "$2")" -v go="$(paired "$3" "$4")" 'BEGIN {
		if (no <= 0.0005) { printf "native ≤ 0.05%%"; exit }
		printf "%.1fx", go / no }'
}

cat <<TABLE

Sampling overhead next to native perf, host $(uname -r), $RUNS rounds (medians of the measured phase, slowdowns the median of each round's ratio;
guest time in the guest, CLOCK_MONOTONIC natively):

| contender | unrecorded | at 1 kHz | at 10 kHz |
|---|---|---|---|
| native matmul 128 900, perf record -e cpu-clock -c 10^6 / 10^5 | $(med nm0) ms | $(cell nm0 nm1) | $(cell nm0 nm10) |
| guest-wide, PMI path: /bin/agent -I, clock cycles every 10^6 / 10^5 (agent -n unrecorded) | $(med g0) ms | $(cell g0 g1) | $(cell g0 g10) |
| guest-wide, sample buffer: /bin/agent, the same periods | $(med g0) ms | $(cell g0 b1) | $(cell g0 b10) |
| native split $ROUNDS, perf record -e cpu-clock -c 10^6 / 10^5 | $(med ns0) ms | $(cell ns0 ns1) | $(cell ns0 ns10) |
| system-wide: /bin/split under kvmprof record --vm -F 1000 / 10000 | $(med s0) ms | $(cell s0 s1) | $(cell s0 s10) |

| contender | samples per run | forced exits per sample | µs of guest time per sample | overhead / native perf's |
|---|---|---|---|---|
| guest-wide, PMI path, 1 kHz | $(per_sample g0 g1) | $(ratio nm0 nm1 g0 g1) |
| guest-wide, PMI path, 10 kHz | $(per_sample g0 g10) | $(ratio nm0 nm10 g0 g10) |
| guest-wide, sample buffer, 1 kHz | $(per_sample g0 b1) | $(ratio nm0 nm1 g0 b1) |
| guest-wide, sample buffer, 10 kHz | $(per_sample g0 b10) | $(ratio nm0 nm10 g0 b10) |
| system-wide, 1 kHz | $(per_sample s0 s1) | $(ratio ns0 ns1 s0 s1) |
| system-wide, 10 kHz | $(per_sample s0 s10) | $(ratio ns0 ns10 s0 s10) |
TABLE
