#!/usr/bin/env bash
# Guest-wide sampling through the vPMU's sample buffer against the PMI path
# (docs/vpmu.md, "Sample buffer"), side by side in one run, printed as a
# Markdown table: the bundled guest's /bin/agent sampling cycles (clock
# backend: vCPU thread run time at 1 GHz) at period 10^6 (~1 kHz) and 10^5
# (~10 kHz), with the buffer (the default) and with a PMI per sample (-I),
# each against the same workload run unsampled (-n); the three alternate,
# and each figure is the median of the agent's ms= (the workload phase's
# guest time) over the runs. Each run ends by writing its sample file over
# COM2, one VM exit per byte (~64 bytes a sample: about a minute for 10^5
# samples), which the figures leave out but LIMIT must allow for. A run
# that has not finished after LIMIT seconds is stopped and its mode not run
# again at that period: the PMI
# path at 10^5 on this host, where one PMI's handler (~240 emulated ring-0
# instructions) takes longer than a period, so PMIs follow each other and
# the workload hardly advances; the table says so, with the PMIs the VMM
# injected before the stop.
#   RUNS=N (default 5), LIMIT=S (default 300), PERIODS="1000000 100000" (the default)
set -u
cd "$(dirname "$0")/.." || exit 1
# shellcheck source=bench/lib.sh
. bench/lib.sh
BUILD=${BUILD:-build}
RUNS=${RUNS:-5}
LIMIT=${LIMIT:-300}
PERIODS=${PERIODS:-1000000 100000}
VMM=$BUILD/kvmprof-vmm
WORKLOAD=/bin/matmul+128+900 # ~1.1 s of guest ring 3 on this host, as bench/agent.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() { echo "bench-agent-buffer: $*" >&2; exit 1; }

echo "bench-agent-buffer: bundled guest, clock backend, 1 vCPU, $RUNS runs of each mode at each period..." >&2
for period in $PERIODS; do
	for _ in $(seq "$RUNS"); do
		for mode in buffer pmi off; do
			[ -e "$tmp/stuck.$period.$mode" ] && continue
			case $mode in buffer) flag="" ;; pmi) flag="-I:" ;; off) flag="-n:" ;; esac
			"$VMM" --cpus 1 --vpmu-backend=clock --vpmu-stats --timeout "$LIMIT" --agent-channel "$tmp/chan" \
				--cmdline "quiet start=/bin/agent:-c:$period:$flag$WORKLOAD" >"$tmp/out" 2>"$tmp/err"
			rc=$?
			if grep -q 'guest still running after --timeout' "$tmp/err"; then
				sed -n 's/^  PMIs injected *\([0-9]*\).*/\1/p' "$tmp/err" >"$tmp/stuck.$period.$mode"
				continue
			fi
			[ $rc = 0 ] || fail "the $mode run at period $period failed: $(tail -n 3 "$tmp/err")"
			ms=$(field ms "$tmp/out")
			[ -n "$ms" ] || fail "no agent summary line ($mode, $period): $(tail -n 3 "$tmp/out")"
			want=$([ $mode = buffer ] && echo 1 || echo 0)
			[ "$(field buffer "$tmp/out")" = "$want" ] || fail "$mode run at $period: $(grep '^agent:' "$tmp/out")"
			echo "$ms" >>"$tmp/ms.$period.$mode"
			echo "$(field samples "$tmp/out") $(field pmis "$tmp/out")" >>"$tmp/n.$period.$mode"
		done
	done
done

echo "| period (clock backend) | unsampled ms | buffer: ms, overhead | samples | PMIs | per sample | PMI path (-I): ms, overhead | samples | PMIs | per sample |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for period in $PERIODS; do
	off=$(median <"$tmp/ms.$period.off")
	cells=""
	for mode in buffer pmi; do
		if [ -e "$tmp/stuck.$period.$mode" ]; then
			cells="$cells|did not finish in $LIMIT s ($(cat "$tmp/stuck.$period.$mode") PMIs injected)|-|-|-"
			continue
		fi
		ms=$(median <"$tmp/ms.$period.$mode")
		read -r n p < <(awk '{ s += $1; p += $2 } END { printf "%.0f %.0f", s / NR, p / NR }' "$tmp/n.$period.$mode")
		cells="$cells$(awk -v off="$off" -v ms="$ms" -v n="$n" -v p="$p" 'BEGIN {
			printf "|%.1f, %+.1f%%|%s|%s|%.1f us", ms, (ms - off) * 100 / off, n, p, (ms - off) * 1000 / n }')"
	done
	echo "| $period | $off $cells |"
done
