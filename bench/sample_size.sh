#!/usr/bin/env bash
# Bytes per sample (issue 17, 3b): kvmprof's sample file against perf.data
# for the same program, flat and with call chains (-g), printed as a
# Markdown table by bench/sample_size.py:
#   1. kvmprof-agent record -e cpu-clock -c 10000 [-g] of bench/agent_work.c
#      against perf record -e cpu-clock -c 10000 [-g] of it;
#   2. kvmprof record --vm of the bundled guest (2 vCPUs, matmul and hash,
#      as bench/host.sh's long recording, -c 10000 here) against perf record
#      -e cpu-clock -c 10000 [-g] of the same VMM command for as long.
# With OLD=DIR (a build directory of an older tree, e.g. /work/main/build),
# its kvmprof-agent and kvmprof record too, for the format before.
#   SECS=N (default 3): each recording's length
set -u
cd "$(dirname "$0")/.." || exit 1
# shellcheck source=bench/lib.sh
. bench/lib.sh
BUILD=${BUILD:-build}
SECS=${SECS:-3}
OLD=${OLD:-}
WORK=$BUILD/bench/agent-work
bench_start
fail() { echo "bench-sample-size: $*" >&2; exit 1; }
command -v perf >/dev/null || fail "perf is not installed (apt-get install linux-perf)"

GUEST="quiet start=/bin/matmul:128:10000000,/bin/hash:10000000"
vm_record() { # BUILD_DIR FILE [-g]
	local sock=$tmp/vm.sock
	rm -f "$sock"
	"$1/kvmprof-vmm" --cpus 2 --vpmu=off --control "$sock" --cmdline "$GUEST" >/dev/null 2>"$tmp/vmm.err" &
	vmm_pid=$!
	for _ in $(seq 500); do [ -S "$sock" ] && break; sleep 0.01; done
	"$1/kvmprof" record --vm "$sock" -c 10000 ${3:-} -q --duration "$SECS" -o "$2" 2>"$tmp/rec.err" ||
		fail "kvmprof record failed: $(tail -n 3 "$tmp/rec.err")"
	kill -TERM "$vmm_pid"
	wait "$vmm_pid"
	vmm_pid=
}
ms=$((SECS * 1000))
for g in "" -g; do
	n=${g:-flat}
	"$BUILD/kvmprof-agent" record -q -e cpu-clock -c 10000 $g -o "$tmp/agent-$n.kvmprof" -- "$WORK" "$ms" \
		>/dev/null 2>&1 || fail "kvmprof-agent record failed"
	[ -n "$OLD" ] && { "$OLD/kvmprof-agent" record -q -e cpu-clock -c 10000 $g -o "$tmp/agent-$n.old" -- \
		"$WORK" "$ms" >/dev/null 2>&1 || fail "$OLD/kvmprof-agent record failed"; }
	perf record -q -e cpu-clock -c 10000 $g -o "$tmp/agent-$n.perf" -- "$WORK" "$ms" >/dev/null 2>&1 ||
		fail "perf record failed"
	vm_record "$BUILD" "$tmp/vm-$n.kvmprof" $g
	[ -n "$OLD" ] && vm_record "$OLD" "$tmp/vm-$n.old" $g
	perf record -q -e cpu-clock -c 10000 $g -o "$tmp/vm-$n.perf" -- timeout "$SECS" "$BUILD/kvmprof-vmm" --cpus 2 \
		--vpmu=off --cmdline "$GUEST" >/dev/null 2>&1
	[ -s "$tmp/vm-$n.perf" ] || fail "perf record of the VMM failed"
done
(cd "$tmp" && python3 "$OLDPWD/bench/sample_size.py" --table agent-flat.* agent--g.* vm-flat.* vm--g.*)
