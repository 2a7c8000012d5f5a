#!/usr/bin/env bash
# tests/kvmhost/kvmhost's own cases: a command's output, status and
# directory; one L1 for many commands and two sessions at once; its faults
# (usage, QEMU missing, too little memory, an L1 that cannot boot, a command
# that hangs, Ctrl-C, an owner that goes away), each one line and a
# non-zero status, and no QEMU left behind. Prints PASS/FAIL/SKIP lines
# (tests/lib/harness.sh). About two minutes (four L1 boots).
set -u
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=tests/lib/harness.sh
. tests/lib/harness.sh
K=tests/kvmhost/kvmhost
T=$(mktemp -d "${TMPDIR:-/tmp}/kvmhost-test.XXXXXX")
RUNS=$T/runs
export KVMHOST_RUNS=$RUNS
me=$BASHPID
S1= S2=
cleanup() {
	for s in "$S1" "$S2"; do [ -z "$s" ] || $K stop -s "$s" 2>/dev/null; done
	rm -rf "$T"
}
trap cleanup EXIT

# qemu_of SESSION: the pid of its QEMU, if it still runs.
qemu_of() { local p; p=$(cat "$1/qemu.pid" 2>/dev/null) && kill -0 "$p" 2>/dev/null && echo "$p"; }
# no_qemu_left: no QEMU of this test's sessions is running.
no_qemu_left() { ! pgrep -f "qemu-system-x86_64 .*$RUNS/" >/dev/null; }
# one_line FILE PATTERN: FILE is one line, matching PATTERN.
one_line() { [ "$(grep -c . "$1")" = 1 ] && grep -qE -- "$2" "$1"; }

# --- usage -------------------------------------------------------------------
$K frobnicate >"$T/o" 2>"$T/e"
rc=$?
$K exec >/dev/null 2>"$T/e2"
rc2=$?
$K start -c 9 >/dev/null 2>"$T/e3"
rc3=$?
if [ $rc = 2 ] && one_line "$T/e" "unknown command 'frobnicate'" && [ $rc2 = 2 ] && one_line "$T/e2" 'no COMMAND' &&
	[ $rc3 = 2 ] && one_line "$T/e3" '-c 9: must be 1 to 8'; then
	pass kvmhost-usage
else fail kvmhost-usage "exit $rc/$rc2/$rc3 (want 2 each, one line)" "$T/e" "$T/e2" "$T/e3"; fi

$K --help >"$T/help" 2>&1
if [ $? = 0 ] && grep -q '^Usage:' "$T/help" && grep -q 'kvmhost run' "$T/help"; then pass kvmhost-help
else fail kvmhost-help "no usage text" "$T/help"; fi

# --- what the machine lacks: one line, 125, nothing started --------------------
mkdir -p "$T/bin"
for t in bash perl busybox flock timeout setsid cpio readelf sh sed grep cat mktemp dirname readlink; do
	p=$(command -v "$t") && ln -sf "$p" "$T/bin/$t"
done
PATH=$T/bin $K start -o $me >/dev/null 2>"$T/e"
rc=$?
if [ $rc = 125 ] && one_line "$T/e" "'qemu-system-x86_64' is missing: make deps installs it"; then pass kvmhost-no-qemu
else fail kvmhost-no-qemu "exit $rc (want 125, one line)" "$T/e"; fi

$K start -o $me -m 100000G >/dev/null 2>"$T/e"
rc=$?
if [ $rc = 125 ] && one_line "$T/e" 'too little memory: L1 needs 100000G .* MiB are available' && no_qemu_left; then
	pass kvmhost-too-little-memory
else fail kvmhost-too-little-memory "exit $rc (want 125, one line)" "$T/e"; fi

# An L1 that cannot boot (48 MiB: Debian's kernel and its initramfs do not fit): one line, no QEMU left.
$K start -o $me -m 48M >/dev/null 2>"$T/e"
rc=$?
if [ $rc = 125 ] && [ "$(grep -c 'error' "$T/e")" = 1 ] && grep -q 'L1 did not start: .*console: ' "$T/e" && no_qemu_left; then
	pass "kvmhost-l1-does-not-boot ($(grep error "$T/e" | cut -c1-120))"
else fail kvmhost-l1-does-not-boot "exit $rc (want 125, one error line), QEMU left: $(no_qemu_left && echo no || echo yes)" "$T/e"; fi

# --- one session, many commands ---------------------------------------------------
if ! S1=$($K start -o $me 2>"$T/start1"); then
	fail kvmhost-start "$(cat "$T/start1")"
else
	pass "kvmhost-start ($(grep -o 'ready in [0-9]* s' "$T/start1"))"
	q1=$(qemu_of "$S1")
	KVMHOST_SESSION=$S1 $K exec -C tests -- bash -c 'echo "out $PWD $KVMHOST_L1 $KVMHOST_TEST_VAR"; echo err >&2; [ -c /dev/kvm ] && exit 7' \
		>"$T/o" 2>"$T/e" </dev/null
	rc=$?
	if [ $rc = 7 ] && [ "$(cat "$T/o")" = "out $PWD/tests 1 " ] && [ "$(cat "$T/e")" = err ]; then
		pass kvmhost-exec-status-output-directory
	else fail kvmhost-exec-status-output-directory "exit $rc (want 7): $(cat "$T/o")" "$T/e"; fi

	# The caller's environment goes along; the working tree is shared read-write.
	KVMHOST_TEST_VAR='x 1' KVMHOST_SESSION=$S1 $K exec -- bash -c 'echo "$KVMHOST_TEST_VAR"' "it's" >"$T/o" 2>"$T/e"
	rc=$?
	if [ $rc = 0 ] && [ "$(cat "$T/o")" = 'x 1' ]; then pass kvmhost-exec-environment
	else fail kvmhost-exec-environment "exit $rc: '$(cat "$T/o")'" "$T/e"; fi
	f=build/kvmhost-test-rw.$$
	rm -f "$f"
	KVMHOST_SESSION=$S1 $K exec -- bash -c "echo shared >$f" 2>"$T/e"
	if [ "$(cat "$f" 2>/dev/null)" = shared ]; then pass kvmhost-tree-read-write
	else fail kvmhost-tree-read-write "L1 wrote $f, the host reads '$(cat "$f" 2>/dev/null)'" "$T/e"; fi
	rm -f "$f"

	# Commands at once in one L1, each its own output and status.
	for i in 1 2 3; do
		KVMHOST_SESSION=$S1 $K exec -- bash -c "sleep 1; echo c$i; exit $((10 + i))" >"$T/c$i" 2>&1 &
		eval "p$i=\$!"
	done
	wait "$p1"; r1=$?; wait "$p2"; r2=$?; wait "$p3"; r3=$?
	if [ "$r1 $r2 $r3" = "11 12 13" ] && [ "$(cat "$T/c1" "$T/c2" "$T/c3" | tr '\n' ' ')" = "c1 c2 c3 " ]; then
		pass kvmhost-concurrent-commands
	else fail kvmhost-concurrent-commands "status $r1 $r2 $r3 (want 11 12 13): $(cat "$T/c1" "$T/c2" "$T/c3" | tr '\n' ' ')"; fi

	# A command that outlives -t: 124, one line, and it is gone from L1.
	KVMHOST_SESSION=$S1 $K exec -t 3 -- bash -c 'echo $$ >/tmp/hung.pid; sleep 1000' >/dev/null 2>"$T/e"
	rc=$?
	left=$(KVMHOST_SESSION=$S1 $K exec -- bash -c 'kill -0 $(cat /tmp/hung.pid) 2>/dev/null && echo alive || echo gone')
	if [ $rc = 124 ] && one_line "$T/e" 'timeout: 3s passed while the command ran in L1' && [ "$left" = gone ]; then
		pass kvmhost-exec-timeout
	else fail kvmhost-exec-timeout "exit $rc (want 124), the command in L1: $left" "$T/e"; fi

	# Ctrl-C: 130, and the command in L1 is stopped, also one that ignores SIGINT.
	# env puts SIGINT back to default: a shell cannot trap a signal ignored when it started, and
	# this suite may itself run with SIGINT ignored (under nohup, or as a script's background job:
	# set -m cannot undo that). Seen: exec still running a minute after SIGINT, SigIgn 0x...07.
	KVMHOST_SESSION=$S1 env --default-signal=INT $K exec -- bash -c 'trap "" INT; echo $$ >/tmp/int.pid; echo started; sleep 1000' >"$T/int.out" 2>"$T/e" &
	ep=$!
	for _ in $(seq 120); do grep -q started "$T/int.out" 2>/dev/null && break; sleep 0.5; done
	kill -INT $ep
	for _ in $(seq 60); do kill -0 $ep 2>/dev/null || break; sleep 1; done
	# Still there after a minute: what it was doing (seen once under load, not understood yet).
	if kill -0 $ep 2>/dev/null; then
		{
			echo "exec still running a minute after SIGINT:"
			grep -E '^(State|SigIgn|SigCgt|SigBlk|SigPnd|ShdPnd)' /proc/$ep/status
			ps -o pid,pgid,stat,wchan:20,args --ppid $ep
		} >>"$T/e" 2>&1
		kill -9 $ep
	fi
	wait $ep
	rc=$?
	left=$(KVMHOST_SESSION=$S1 $K exec -- bash -c 'kill -0 $(cat /tmp/int.pid) 2>/dev/null && echo alive || echo gone')
	if [ $rc = 130 ] && [ "$left" = gone ] && [ "$(qemu_of "$S1")" = "$q1" ]; then pass kvmhost-exec-interrupted
	else fail kvmhost-exec-interrupted "exit $rc (want 130), the command in L1: $left" "$T/e"; fi

	# A second session at once: its own L1, and stopping it leaves the first serving.
	if ! S2=$($K start -o $me 2>"$T/start2"); then
		fail kvmhost-two-sessions "the second did not start: $(cat "$T/start2")"
	else
		q2=$(qemu_of "$S2")
		o1=$(KVMHOST_SESSION=$S1 $K exec -- cat /ctl/ready 2>/dev/null; echo "$?")
		$K stop -s "$S2"
		S2=
		sleep 1
		o2=$(KVMHOST_SESSION=$S1 $K exec -- echo still 2>&1)
		if [ -n "$q2" ] && [ "$q2" != "$q1" ] && ! kill -0 "$q2" 2>/dev/null && [ "$o2" = still ]; then
			pass kvmhost-two-sessions
		else fail kvmhost-two-sessions "QEMU $q1 and $q2; after the second stopped, the first says '$o2' ($o1)"; fi
	fi

	# run uses the session's L1 (no boot of its own).
	t0=$SECONDS
	n0=$(find "$RUNS" -maxdepth 1 -name 's.*' | wc -l) # the failed boot's folder is kept
	out=$(KVMHOST_SESSION=$S1 $K run -- bash -c 'echo $KVMHOST_L1' 2>&1)
	if [ "$out" = 1 ] && [ "$(find "$RUNS" -maxdepth 1 -name 's.*' | wc -l)" = "$n0" ]; then pass kvmhost-run-reuses-session
	else fail kvmhost-run-reuses-session "'$out', sessions: $(ls "$RUNS" | tr '\n' ' ') ($((SECONDS - t0)) s)"; fi

	$K stop -s "$S1"
	S1=
	if [ -n "$q1" ] && ! kill -0 "$q1" 2>/dev/null && no_qemu_left; then pass kvmhost-stop
	else fail kvmhost-stop "QEMU $q1 still runs"; fi
fi

# --- the owner goes away (kill -9): its L1 goes too ----------------------------------
bash -c 'sleep 1000' &
owner=$!
if S1=$($K start -o $owner 2>"$T/e"); then
	q=$(qemu_of "$S1")
	kill -9 $owner
	wait $owner 2>/dev/null
	for _ in $(seq 100); do kill -0 "$q" 2>/dev/null || break; sleep 0.2; done
	if [ -n "$q" ] && ! kill -0 "$q" 2>/dev/null; then pass kvmhost-owner-gone-stops-l1
	else fail kvmhost-owner-gone-stops-l1 "QEMU $q still runs 20 s after its owner was killed"; fi
	$K stop -s "$S1" 2>/dev/null
	S1=
else
	kill $owner
	fail kvmhost-owner-gone-stops-l1 "no L1: $(cat "$T/e")"
fi
if no_qemu_left; then pass kvmhost-no-qemu-left
else fail kvmhost-no-qemu-left "$(pgrep -af "qemu-system-x86_64 .*$RUNS/" | cut -c1-200)"; fi
harness_summary
