#!/usr/bin/env bash
# What a forced VM exit ("kick") costs (issue 17), side by side in one run:
#   1. bench/kick_cost.c: a ring-3 guest loop kicked at 1 kHz and 10 kHz by
#      each mechanism (per-thread timer or cpu-clock perf event; a signal
#      handler setting immediate_exit, or the signal blocked and unblocked
#      only inside KVM_RUN and taken with sigtimedwait or a signalfd; another
#      thread's immediate_exit with and without a signal), alternating,
#      medians of ROUNDS rounds;
#   2. with OLD_VMM=path (a kvmprof-vmm built before the change, e.g. from a
#      worktree of main): the guest's slowdown under `kvmprof record --vm
#      SOCK -F 1000`, the old VMM against this tree's, each against itself
#      unrecorded: the bundled guest's /bin/split on 1 vCPU, which times its
#      own loop in guest time, the method of bench/host.sh's first part;
#      alternating, medians of RUNS runs.
#   ROUNDS=N (default 7), RUNS=N (default 7), OLD_VMM=path (default: part 2 not run)
set -u
cd "$(dirname "$0")/.." || exit 1
# shellcheck source=bench/lib.sh
. bench/lib.sh
BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-7}
RUNS=${RUNS:-7}
OLD_VMM=${OLD_VMM:-}
NEW_VMM=$BUILD/kvmprof-vmm
KVMPROF=$BUILD/kvmprof
ROUNDS_SPLIT=150000 # /bin/split's loop: ~1.1 s of guest ring 3 on this host
PAUSE=1000          # ms /bin/split sleeps before and after it: kvmprof record attaches in ~0.2 s
bench_start

fail() { echo "bench-kick: $*" >&2; exit 1; }

echo "## 1. $BUILD/bench/kick-cost --rounds $ROUNDS"
"$BUILD/bench/kick-cost" --rounds "$ROUNDS" >"$tmp/kick" || fail "kick-cost failed"
sed -n '/^guest:/p; /^medians/,$p' "$tmp/kick"

[ -n "$OLD_VMM" ] || exit 0
[ -x "$OLD_VMM" ] || fail "OLD_VMM=$OLD_VMM is not an executable"
echo
echo "## 2. /bin/split:$ROUNDS_SPLIT on 1 vCPU under kvmprof record --vm -F 1000, $OLD_VMM against $NEW_VMM, $RUNS runs"
# run VMM MODE: one boot; appends the loop's guest ms (and the signal exits, recorded runs) to $tmp/ms.VMM.MODE.
run() {
	local vmm=$1 mode=$2 tag sock=$tmp/vm.sock ms eintr
	tag=$([ "$vmm" = "$OLD_VMM" ] && echo old || echo new)
	rm -f "$sock"
	# In a subshell whose `times` gives the VMM's CPU time, which other processes on this shared host do not
	# inflate as they do the guest's own clock.
	(
		"$vmm" --cpus 1 --vpmu=off --vpmu-trace-pmi 0 --control "$sock" \
			--cmdline "quiet start=/bin/split:$ROUNDS_SPLIT:$PAUSE" >"$tmp/out" 2>"$tmp/err" </dev/null
		rc=$?
		times >"$tmp/times"
		exit $rc
	) &
	vmm_pid=$!
	if [ "$mode" = on ]; then
		wait_sock "$sock" || fail "$tag: the VMM made no control socket: $(tail -n 3 "$tmp/err")"
		"$KVMPROF" record --vm "$sock" -F 1000 -q -o "$tmp/rec.data" 2>"$tmp/rec.err" &
		rec_pid=$!
		until grep -q '^split:' "$tmp/out"; do
			kill -0 "$vmm_pid" 2>/dev/null || break
			sleep 0.05
		done
		kill -INT "$rec_pid"
		wait "$rec_pid" || fail "$tag: kvmprof record failed: $(tail -n 3 "$tmp/rec.err")"
		rec_pid=
	fi
	wait "$vmm_pid" || fail "$tag $mode: the VMM failed: $(tail -n 3 "$tmp/err")"
	vmm_pid=
	ms=$(field ms "$tmp/out")
	[ -n "$ms" ] || fail "$tag $mode: no split line: $(tail -n 3 "$tmp/out")"
	echo "$ms" >>"$tmp/ms.$tag.$mode"
	sed -n '2s/^\([0-9]*\)m\([0-9.]*\)s \([0-9]*\)m\([0-9.]*\)s$/\1 \2 \3 \4/p' "$tmp/times" |
		awk '{ printf "%.0f\n", ($1 * 60 + $2 + $3 * 60 + $4) * 1000 }' >>"$tmp/cpu.$tag.$mode"
	eintr=$(reason 'signal (EINTR)' "$tmp/err")
	echo "${eintr:-0}" >>"$tmp/eintr.$tag.$mode"
	[ "$mode" = on ] && sed -n 's/.*samples), \([0-9]*\) guest samples.*/\1/p' "$tmp/rec.err" >>"$tmp/gs.$tag"
	return 0
}
for r in $(seq "$RUNS"); do
	# Alternate the order: neither VMM always runs first.
	if [ $((r % 2)) = 1 ]; then order="$OLD_VMM $NEW_VMM"; else order="$NEW_VMM $OLD_VMM"; fi
	for vmm in $order; do
		run "$vmm" off
		run "$vmm" on
	done
done
echo
echo "| VMM | split loop, not recorded | recorded | slowdown | guest time lost per sample | VMM CPU, not recorded / recorded | CPU per sample | guest samples | signal exits per sample |"
echo "|---|---|---|---|---|---|---|---|---|"
for tag in old new; do
	off=$(median <"$tmp/ms.$tag.off")
	on=$(median <"$tmp/ms.$tag.on")
	gs=$(median <"$tmp/gs.$tag")
	e_on=$(median <"$tmp/eintr.$tag.on")
	e_off=$(median <"$tmp/eintr.$tag.off")
	c_on=$(median <"$tmp/cpu.$tag.on")
	c_off=$(median <"$tmp/cpu.$tag.off")
	awk -v t="$tag" -v off="$off" -v on="$on" -v gs="$gs" -v eon="$e_on" -v eoff="$e_off" -v con="$c_on" \
		-v coff="$c_off" 'BEGIN {
		printf "| %s | %.1f ms | %.1f ms | %+.1f%% | %.1f µs | %d / %d ms | %.1f µs | %d | %.2f |\n", t, off, on,
			(on / off - 1) * 100, gs ? (on - off) * 1000 / gs : 0, coff, con, gs ? (con - coff) * 1000 / gs : 0,
			gs, gs ? (eon - eoff) / gs : 0 }'
done
echo
echo "per run (guest ms of the loop, then the VMM's CPU ms; not recorded / recorded):"
for tag in old new; do
	echo "$tag: $(paste -d/ "$tmp/ms.$tag.off" "$tmp/ms.$tag.on" | tr '\n' ' ')"
	echo "$tag: $(paste -d/ "$tmp/cpu.$tag.off" "$tmp/cpu.$tag.on" | tr '\n' ' ')"
done
