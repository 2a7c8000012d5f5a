#!/usr/bin/env bash
# `make test`: unit tests (plain and ASan+UBSan builds), end-to-end tests of
# the VMM and the bundled guest, and the nested Linux-guest tests. Every suite
# prints "PASS name" / "FAIL name: why" lines (tests/lib/harness.sh); a case
# that cannot run on this host (no hardware counters, say) prints "SKIP name:
# why". This script adds them up and ends with "N passed, N failed, N skipped,
# N flaky" (flaky: failed on a first nested run, passed on the second; also
# counted as passed). A run that executed no test fails.
# Set KVMPROF_SKIP_NESTED=1 to leave out the nested tests (about 2 minutes);
# KVMPROF_SUITES="unit fuzz agent host libvirt e2e docs nested kvmhost" (the default) picks suites.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
export BUILD
LOG=$BUILD/test.log
mkdir -p "$BUILD"
# shellcheck source=tests/lib/harness.sh
. tests/lib/harness.sh

# cmocka's TAP output: "ok N - name" / "not ok N - name" / "not ok N # SKIP name",
# the last after the test's own message saying why (print_message before skip()).
# The unit tests that open /dev/kvm (their other cases run anywhere) run where KVM is.
KVM_UNIT_TESTS=" test_vpmu_kvm "
unit_suite() {
	local bin=$1 TAG=$2 out rc said= run=()
	if [[ $KVM_UNIT_TESTS == *" $(basename "$bin") "* ]]; then
		if [ -n "$kvmhost_failed" ]; then
			fail "$(basename "$bin")" "needs KVM, and the L1 that stands in for the missing /dev/kvm did not start: $kvmhost_failed"
			return
		fi
		run=("$KVMHOST" run --)
	fi
	out=$("${run[@]}" env CMOCKA_MESSAGE_OUTPUT=TAP "$bin" 2>&1)
	rc=$?
	while IFS= read -r line; do
		case "$line" in
		"ok "*) pass "${line#ok * - }" ;;
		"not ok "*" # SKIP "*) skip "${line#not ok * # SKIP }" "${said:-the test skipped itself}" ;;
		"not ok "*) fail "${line#not ok * - }" "cmocka says why below" ;;
		"#"*) echo "    $line" ;;
		esac
		case "$line" in
		"ok "* | "not ok "* | "#"* | [0-9]*..[0-9]*) said= ;;
		*) said=$line ;;
		esac
	done <<<"$out"
	if [ $rc -ne 0 ] && ! grep -q '^not ok' <<<"$out"; then
		fail "$(basename "$bin")" "exited $rc"
		tail -n 20 <<<"$out" | sed 's/^/    /'
	fi
}

SUITES=" ${KVMPROF_SUITES:-unit fuzz agent host libvirt e2e docs nested kvmhost} "
want() { [[ $SUITES == *" $1 "* ]]; }

# KVM: the suites that need it run here when /dev/kvm works. Where it does
# not, tests/kvmhost boots two L1s under QEMU's TCG (nested SVM) for this run
# and stops them when it ends: TCG runs each L1 on one host core, so the
# suites that run the VMM go in two streams, one an L1, beside the others
# (kvm_stream_a, kvm_stream_b). Each KVM suite goes through in_kvm_host.
KVMHOST=tests/kvmhost/kvmhost
KVMHOST_SESSION= kvm_session_a= kvm_session_b= kvmhost_failed=
if kvm_why=$($KVMHOST check); then
	KVM_KIND="native: /dev/kvm works here"
else
	KVM_KIND="emulated: $kvm_why here, so the suites that need KVM ran in L1s under QEMU's TCG with nested SVM (tests/kvmhost)"
	# An L1 for each stream that has work (kvm_stream_a: e2e; kvm_stream_b: host, docs), one
	# for test_vpmu_kvm alone (make test-unit); with one, both streams use it.
	n=0
	want e2e && n=1
	{ want host || want docs; } && n=$((n + 1))
	[ $n -gt 0 ] || ! want unit || n=1
	if [ $n -gt 0 ]; then
		echo "== KVM: $kvm_why here, so $n L1(s) boot under QEMU's TCG with nested SVM for what needs KVM (tests/kvmhost)"
		trap '[ -z "$kvm_session_a" ] || [ "$kvm_session_a" = "$kvm_session_b" ] || $KVMHOST stop -s "$kvm_session_a"; [ -z "$kvm_session_b" ] || $KVMHOST stop -s "$kvm_session_b"' EXIT
		: >"$BUILD/kvmhost-a"
		: >"$BUILD/kvmhost-start-a.log"
		[ $n = 1 ] || $KVMHOST start -o $$ >"$BUILD/kvmhost-a" 2>"$BUILD/kvmhost-start-a.log" &
		$KVMHOST start -o $$ >"$BUILD/kvmhost-b" 2>"$BUILD/kvmhost-start-b.log"
		wait
		kvm_session_a=$(cat "$BUILD/kvmhost-a") kvm_session_b=$(cat "$BUILD/kvmhost-b")
		[ $n = 2 ] || kvm_session_a=$kvm_session_b
		cat "$BUILD/kvmhost-start-a.log" "$BUILD/kvmhost-start-b.log"
		if [ -z "$kvm_session_b" ] || { [ $n = 2 ] && [ -z "$kvm_session_a" ]; }; then
			kvmhost_failed=$(cat "$BUILD/kvmhost-start-a.log" "$BUILD/kvmhost-start-b.log" | grep -m1 'error')
			kvmhost_failed=${kvmhost_failed:-"see $BUILD/kvmhost-start-[ab].log"}
		fi
		KVMHOST_SESSION=$kvm_session_b
	fi
fi
export KVMHOST_SESSION

# in_kvm_host NAME COMMAND...: COMMAND where KVM is (here, or in the L1); a
# suite that cannot get one fails, it is never skipped.
in_kvm_host() {
	local name=$1
	shift
	if [ -n "$kvmhost_failed" ]; then
		echo "FAIL $name: needs KVM, and the L1 that stands in for the missing /dev/kvm did not start: $kvmhost_failed"
		return
	fi
	$KVMHOST run -- "$@"
}

# timed NAME FUNCTION: runs a suite and says how long it took (make test's budget is ~20 minutes).
timed() {
	local t0
	t0=$(date +%s)
	"$2"
	echo "(suite $1: $(($(date +%s) - t0)) s)"
}

nested_suites() {
	echo "== nested Linux guests (QEMU-TCG L1 with KVM, Linux L2 under kvmprof-vmm)"
	nested_suite
}

# tests/kvmhost's own cases, where make test uses it (no /dev/kvm here).
kvmhost_suite() {
	echo "== the emulated KVM host itself (tests/kvmhost: output, status, sessions, faults)"
	if [[ $KVM_KIND == native* ]]; then
		echo "SKIP kvmhost: /dev/kvm works here, so make test does not use the emulated KVM host"
		return
	fi
	shell_suite kvmhost tests/kvmhost/test.sh
}

# The suites that run the VMM, in two streams when they run in L1s (above).
# Under ASan the emulated KVM host runs the e2e parts that serve outside
# input (control socket, hostile guests, plugins); a real KVM host runs all.
E2E_ASAN_L1_PARTS="control hostile-guest plugin-host"
# Balanced by a run of each (build/test-kvm-[ab].log of a make test at 11f6fa0, the
# native suites beside them): e2e 2155 s in one; host 734, ASan host 1043, docs 52 and
# then ASan e2e's parts (~460 at 97dc076) in the other.
kvm_stream_a() {
	want e2e && timed e2e e2e_suite_plain
}
kvm_stream_b() {
	want host && timed host host_suite_plain
	want host && timed asan:host host_suite_asan
	want docs && timed docs docs_suite
	want e2e && timed asan:e2e e2e_suite_asan
}

run_suites() {
	local a= b= log_a=$BUILD/test-kvm-a.log log_b=$BUILD/test-kvm-b.log
	if [ -n "$kvm_session_a" ] && { want e2e || want host || want docs; }; then
		echo "== the suites that run the VMM go on in the L1s meanwhile; their logs, shown at the end: $log_a, $log_b"
		KVMHOST_SESSION=$kvm_session_a kvm_stream_a >"$log_a" 2>&1 &
		a=$!
		KVMHOST_SESSION=$kvm_session_b kvm_stream_b >"$log_b" 2>&1 &
		b=$!
	fi
	want unit && timed unit unit_suites
	want fuzz && timed fuzz fuzz_suite
	want agent && timed agent agent_suites
	[ -n "$a" ] || { want host && timed host host_suites; }
	want libvirt && timed libvirt libvirt_suites
	[ -n "$a" ] || { want e2e && timed e2e e2e_suites; }
	[ -n "$a" ] || { want docs && timed docs docs_suite; }
	want kvmhost && timed kvmhost kvmhost_suite
	if [ -n "$a" ]; then
		echo "== the suites in the first L1 ($log_a): what they printed so far, then as it comes"
		tail -n +1 -s 1 -f --pid="$a" "$log_a"
		wait "$a"
		echo "== the suites in the second L1 ($log_b)"
		tail -n +1 -s 1 -f --pid="$b" "$log_b"
		wait "$b"
	fi
	# Last, once the L1s above no longer load the machine: beside two
	# CPU-bound processes on 2 cores (as those L1s are), the agent case's
	# serial export from L2 ran 30 times slower than alone (193 KB of
	# ~420 KB in ~790 s, against all of it in 57 s) and CI failed it on
	# both tries; alone the suite takes about 2 minutes.
	if want nested && [ "${KVMPROF_SKIP_NESTED:-0}" != 1 ]; then
		timed nested nested_suites
	fi
}

# The nested stack is QEMU's emulated nested SVM under TCG, and now and then
# it fails on its own: L1 resets itself mid-run (QEMU exits 0 without L1's end
# marker), or an L2 triple-faults or hangs while booting, before any kvmprof
# code under test has run (seen on unchanged code during the agent's long
# serial export and at L2 boot). A failed nested run is therefore run once
# more and the second run's results count; the first stays in the log with
# its lines marked "first try:". A case that failed the first time and
# not the second is a flake, and says so: "FLAKY name: why it failed the
# first time", counted in the summary. A real regression fails both times
# (and counts as failed).
nested_suite() {
	local first=$BUILD/nested-first-try.log second=$BUILD/nested-second-try.log name why
	VMM=$BUILD/kvmprof-vmm-static bash tests/nested/run.sh >"$first" 2>&1
	if ! grep -q '^FAIL ' "$first"; then
		cat "$first"
		return
	fi
	sed 's/^\(PASS\|FAIL\|SKIP\) /first try: \1 /' "$first"
	echo "nested: the first run failed (above, marked 'first try:'); running the nested cases once more"
	VMM=$BUILD/kvmprof-vmm-static bash tests/nested/run.sh 2>&1 | tee "$second"
	while IFS= read -r line; do
		name=${line#FAIL }
		name=${name%%: *}
		why=${line#FAIL "$name": }
		grep -q "^FAIL $name:" "$second" || echo "FLAKY $name: failed on the first run only: $why"
	done < <(grep '^FAIL ' "$first")
}

unit_suites() {
	echo "== unit tests"
	local t0=$SECONDS
	if ! bash tests/debian-kernel.sh "$BUILD" >"$BUILD/debian-kernel.log" 2>&1; then
		echo "FAIL debian-kernel: could not fetch the Debian kernel the unit tests read"
		tail -n 5 "$BUILD/debian-kernel.log" | sed 's/^/    /'
	fi
	echo "(unit: the Debian kernel in $((SECONDS - t0)) s)"
	for bin in ${KVMPROF_UNIT_TESTS:-"$BUILD"/tests/test_*}; do
		unit_binary "$bin" ""
	done
	echo "== unit tests under ASan + UBSan"
	for bin in ${KVMPROF_ASAN_UNIT_TESTS:-"$BUILD"/asan/tests/test_*}; do
		unit_binary "$bin" "asan:"
	done
}

# make passes the test binaries it builds (KVMPROF_UNIT_TESTS,
# KVMPROF_ASAN_UNIT_TESTS), so a stale binary left in build/ by a renamed
# test is not run and counted, and one make should have built but did not
# fails; run by hand, the script takes whatever build/ holds.
unit_binary() {
	local bin=$1 tag=$2
	local t0=$SECONDS
	case $bin in *.d) return ;; esac
	if [ -f "$bin" ] && [ -x "$bin" ]; then
		unit_suite "$bin" "$tag"
		# The slow ones, for make test's budget.
		[ $((SECONDS - t0)) -lt 10 ] || echo "(unit $tag$(basename "$bin"): $((SECONDS - t0)) s)"
	elif [ -n "${KVMPROF_UNIT_TESTS:-}" ]; then
		fail "$tag$(basename "$bin")" "$bin was not built"
	fi
}

# Every libFuzzer target for a few seconds from its corpus (make fuzz runs them long).
fuzz_suite() {
	echo "== fuzz smoke: every libFuzzer target for ${FUZZ_SMOKE_SECONDS:-5} s (tests/fuzz, docs/fuzzing.md)"
	# From make (KVMPROF_FUZZ_TARGETS), or its one-line list when run by hand.
	FUZZ_SECONDS=${FUZZ_SMOKE_SECONDS:-5} bash tests/fuzz/run.sh --smoke \
		${KVMPROF_FUZZ_TARGETS:-$(sed -n 's/^FUZZ_TARGETS := //p' tests/fuzz/fuzz.mk)}
}

# [KVM=1] shell_suite NAME [VAR=VALUE...] SCRIPT: a shell suite, streamed (KVM=1: one
# that needs KVM, run through in_kvm_host). A shell error in it
# ("SCRIPT: line N: ...": an unbound variable under set -u, a command not found, a syntax
# error) may have ended it, or a case, before the cases after it ran: that is a failure,
# not fewer cases.
shell_suite() {
	local name=$1 out=$BUILD/suite-output-${1//[:\/]/-}.txt err
	shift
	if [ "${KVM:-0}" = 1 ]; then
		in_kvm_host "$name" env "${@:1:$#-1}" bash "${@: -1}"
	else
		env "${@:1:$#-1}" bash "${@: -1}"
	fi 2>&1 | tee "$out"
	err=$(grep -m 1 -E '^[^ ]+\.sh: line [0-9]+: [^0-9]' "$out")
	[ -z "$err" ] || echo "FAIL $name: a shell error in the suite (its later cases may not have run): $err"
}

agent_suites() {
	echo "== kvmprof-agent on this host"
	shell_suite agent tests/agent/run.sh
	echo "== kvmprof-agent on this host, ASan + UBSan build"
	shell_suite asan:agent AGENT="$BUILD/asan/kvmprof-agent" TAG=asan: tests/agent/run.sh
	echo "== SVG flame graph in headless Chromium"
	shell_suite svg tests/agent/svg.sh
	shell_suite asan:svg AGENT="$BUILD/asan/kvmprof-agent" TAG=asan: tests/agent/svg.sh
}

host_suite_plain() {
	echo "== kvmprof: system-wide profiling from the host"
	KVM=1 shell_suite host tests/host-profiler/run.sh
}
host_suite_asan() {
	echo "== kvmprof, ASan + UBSan build"
	KVM=1 shell_suite asan:host KVMPROF="$BUILD/asan/kvmprof" TAG=asan: tests/host-profiler/run.sh
}
host_suites() {
	host_suite_plain
	host_suite_asan
}

libvirt_suites() {
	echo "== kvmprof and libvirt: QEMU domains by name (a real libvirtd)"
	shell_suite libvirt tests/libvirt/run.sh
	echo "== kvmprof and libvirt, ASan + UBSan build (the core cases)"
	shell_suite asan:libvirt KVMPROF="$BUILD/asan/kvmprof" TAG=asan: LIBVIRT_QUICK=1 tests/libvirt/run.sh
}

docs_suite() {
	echo "== the README's and the docs' examples, as written (their \`\`\`sh blocks)"
	KVM=1 shell_suite docs tests/docs/examples.sh
}

e2e_suite_plain() {
	echo "== end-to-end tests"
	KVM=1 shell_suite e2e tests/e2e/run.sh
}
e2e_suite_asan() {
	local parts=()
	# shellcheck disable=SC2054 # a comma in the words, not between array items
	[ -z "$kvm_session_a" ] ||
		parts=(E2E_PARTS="$E2E_ASAN_L1_PARTS" E2E_PARTS_WHY="under ASan the emulated KVM host runs only $E2E_ASAN_L1_PARTS (there the ASan VMM runs ~50 times slower than here); a real KVM host runs all")
	echo "== end-to-end tests, ASan + UBSan VMM"
	KVM=1 shell_suite asan:e2e VMM="$BUILD/asan/kvmprof-vmm" TAG=asan: "${parts[@]}" tests/e2e/run.sh
}
e2e_suites() {
	e2e_suite_plain
	e2e_suite_asan
}

start=$(date +%s)
run_suites 2>&1 | tee "$LOG"
pass=$(grep -a -c '^PASS ' "$LOG")
fail=$(grep -a -c '^FAIL ' "$LOG")
skipped=$(grep -a -c '^SKIP ' "$LOG")
flaky=$(grep -a -c '^FLAKY ' "$LOG")
if [ "$skipped" -gt 0 ]; then
	echo
	echo "Skipped (cannot run on this host):"
	grep -a '^SKIP ' "$LOG" | sed 's/^SKIP /  /'
fi
if [ "$flaky" -gt 0 ]; then
	echo
	echo "Flaky (failed on the first run, passed on the second):"
	grep -a '^FLAKY ' "$LOG" | sed 's/^FLAKY /  /'
fi
# Failures last, next to the count: a CI log cut to its head and tail keeps them.
if [ "$fail" -gt 0 ]; then
	echo
	echo "Failed:"
	grep -a '^FAIL ' "$LOG" | sed 's/^FAIL /  /'
fi
echo "(full log: $LOG, $(($(date +%s) - start)) s)"
echo "KVM: $KVM_KIND"
echo "$pass passed, $fail failed, $skipped skipped, $flaky flaky"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
