#!/usr/bin/env bash
# End-to-end tests of kvmprof-vmm on this host's KVM: boots of the bundled
# guest and of the tiny PVH fixtures, exit codes, bad input, crash diagnostics.
# Prints "PASS name" / "FAIL name: why" / "SKIP name: why" per case and
# "N passed, N failed, N skipped" (tests/lib/harness.sh).
# VMM=path selects the binary (the ASan build, say); TAG prefixes case names.
# The helper programs and fixtures are built by make (make test-e2e).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
VMM=${VMM:-$BUILD/kvmprof-vmm}
FIX=$BUILD/fixtures
# shellcheck disable=SC2034 # used by the parts sourced below
HELPERS=$BUILD/tests/e2e
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# A failed case shows the end of the last VMM run's output.
HARNESS_LOGS="$TMP/out $TMP/err"
# shellcheck source=tests/lib/harness.sh
. tests/lib/harness.sh
# ASan's leak check wants ptrace-like privileges some sandboxes lack; errors still abort.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# HANG: the factor of every hang guard (a VMM's --timeout of 30 s and more, the limit
# around it): 10 in tests/kvmhost's emulated KVM host (KVMHOST_L1=1), where the VMM, its
# guest and the exact backend's emulator run 5-100 times slower under TCG, else 1. A
# shorter --timeout is what its case tests, and stays as it is.
HANG=1
[ "${KVMHOST_L1:-0}" = 1 ] && HANG=10
# The control-socket test client's own hang guard (20 s).
export CONTROL_CLIENT_ALARM=$((20 * HANG))

# vmm ARGS...: runs the VMM with a hard limit, output in $TMP/out and $TMP/err, status in $rc.
vmm() {
	# shellcheck disable=SC2086 # VMM may carry a privilege-dropping prefix
	timeout -k 5 $((120 * HANG)) $VMM "$@" >"$TMP/out" 2>"$TMP/err" </dev/null
	rc=$?
}

# expect_error NAME CODE PATTERN ARGS...: fails with exit CODE and exactly one stderr line matching PATTERN.
expect_error() {
	local name=$1 code=$2 pattern=$3
	shift 3
	vmm "$@"
	local lines
	lines=$(wc -l <"$TMP/err")
	if [ "$rc" != "$code" ]; then
		fail "$name" "exit code $rc, expected $code"
	elif [ "$lines" != 1 ]; then
		fail "$name" "expected one line on stderr, got $lines"
	elif ! grep -qE -- "$pattern" "$TMP/err"; then
		fail "$name" "stderr does not match /$pattern/"
	else
		pass "$name"
	fi
}

# --- the tiny PVH fixtures -------------------------------------------------
vmm --kernel "$FIX/pvh-exit0.elf"
if [ $rc = 0 ] && grep -qx 'pvh-tiny: hello from the guest' "$TMP/out"; then pass pvh-boot-exit0
else fail pvh-boot-exit0 "rc=$rc"; fi

vmm --kernel "$FIX/pvh-exit42.elf" --cpus 2
if [ $rc = 42 ]; then pass pvh-exit-status-is-exit-code; else fail pvh-exit-status-is-exit-code "rc=$rc, expected 42"; fi

vmm --kernel "$FIX/pvh-exit0.elf" --console "$TMP/console.txt" --agent-channel "$TMP/agent.txt"
if [ $rc = 0 ] && [ ! -s "$TMP/out" ] && grep -qx 'pvh-tiny: hello from the guest' "$TMP/console.txt" &&
	grep -qx 'pvh-tiny: hello from the guest' "$TMP/agent.txt"; then pass console-and-agent-channel-files
else fail console-and-agent-channel-files "rc=$rc"; fi

# COM2 to a UNIX socket that a reader listens on.
if command -v python3 >/dev/null; then
	python3 - "$TMP/agent.sock" "$TMP/sock.txt" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1); s.settimeout(30)
c, _ = s.accept(); data = b""
while True:
    b = c.recv(4096)
    if not b: break
    data += b
open(sys.argv[2], "wb").write(data)
PY
	for _ in $(seq 50); do [ -S "$TMP/agent.sock" ] && break; sleep 0.1; done
	vmm --kernel "$FIX/pvh-exit0.elf" --agent-channel "$TMP/agent.sock"
	wait
	if [ $rc = 0 ] && grep -qx 'pvh-tiny: hello from the guest' "$TMP/sock.txt" 2>/dev/null; then pass agent-channel-unix-socket
	else fail agent-channel-unix-socket "rc=$rc"; fi
else
	skip agent-channel-unix-socket "python3 not installed (the socket's reader)"
fi

vmm --kernel "$FIX/pvh-triple-fault.elf"
if [ $rc = 125 ] && grep -q 'guest triple fault' "$TMP/err" && grep -qE '^  rip [0-9a-f]{16}' "$TMP/err"; then
	pass triple-fault-diagnostic
else fail triple-fault-diagnostic "rc=$rc"; fi

vmm --kernel "$FIX/pvh-spin.elf" --timeout 1
if [ $rc = 124 ] && grep -q -- '--timeout' "$TMP/err"; then pass timeout-stops-spinning-guest
else fail timeout-stops-spinning-guest "rc=$rc"; fi

# SIGINT once the guest runs: a background job of a script starts with SIGINT
# ignored, so one sent before the VMM has blocked it for vm_run is lost (in the
# emulated KVM host the VMM takes over a second to get there).
"$VMM" --kernel "$FIX/pvh-spin.elf" >"$TMP/out" 2>"$TMP/err" </dev/null &
pid=$!
for _ in $(seq $((100 * HANG))); do grep -q 'hello from the guest' "$TMP/out" && break; sleep 0.1; done
kill -INT $pid
for _ in $(seq 100); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
if kill -0 $pid 2>/dev/null; then kill -9 $pid; fail sigint-stops-guest "still running 10 s after SIGINT"
else
	wait $pid
	rc=$?
	if [ $rc = 130 ] && grep -q 'stopping the guest' "$TMP/err"; then pass sigint-stops-guest
	else fail sigint-stops-guest "rc=$rc"; fi
fi

vmm --help
if [ $rc = 0 ] && grep -q -- '--kernel FILE' "$TMP/out" && grep -q -- '--agent-channel' "$TMP/out"; then pass help
else fail help "rc=$rc"; fi
# --version was an unknown option (issue 16)
vmm --version
if [ $rc = 0 ] && grep -q '^kvmprof-vmm [0-9.]* (sample format [0-9]*\.[0-9]*, plugin API [0-9]*)$' "$TMP/out"; then
	pass "version ($(cat "$TMP/out"))"
else fail version "rc=$rc: $(head -c 200 "$TMP/out")"; fi

# --- bad input: one line naming the file or value, non-zero exit ------------
head -c 100 "$FIX/pvh-exit0.elf" >"$TMP/truncated.elf"
printf '#!/bin/sh\necho not a kernel\n' >"$TMP/script"
: >"$TMP/empty"
head -c $((20 << 20)) /dev/zero >"$TMP/big.initrd"
expect_error kernel-missing 1 "kernel $TMP/nope.elf: No such file" --kernel "$TMP/nope.elf"
expect_error kernel-truncated 1 "kernel $TMP/truncated.elf: .*truncated" --kernel "$TMP/truncated.elf"
expect_error kernel-not-a-kernel 1 "kernel $TMP/script: neither a PVH ELF kernel nor a Linux bzImage" --kernel "$TMP/script"
expect_error kernel-empty 1 "kernel $TMP/empty: file is empty" --kernel "$TMP/empty"
expect_error kernel-directory 1 "kernel $TMP: not a regular file" --kernel "$TMP"
expect_error kernel-segment-outside-memory 1 "segment .* outside guest memory" --kernel "$FIX/pvh-high.elf" --mem 64M
expect_error initrd-too-large 1 "initrd .*big.initrd.* use a larger --mem" --kernel "$FIX/pvh-exit0.elf" --initrd "$TMP/big.initrd" --mem 16M
expect_error initrd-missing 1 "initrd $TMP/nope: No such file" --kernel "$FIX/pvh-exit0.elf" --initrd "$TMP/nope"
expect_error mem-unparsable 2 "--mem 'lots': not a size" --mem lots
expect_error mem-too-small 2 "--mem 1M is too small" --mem 1M
expect_error mem-too-large 2 "--mem 64G is too large" --mem 64G
expect_error cpus-zero 2 "--cpus '0': must be a number from 1 to 8" --cpus 0
expect_error cpus-too-many 2 "--cpus '9'" --cpus 9
expect_error unknown-option 2 "unknown option '--turbo'" --turbo
expect_error option-without-value 2 "needs a value" --kernel
expect_error console-unwritable 1 "console /nonexistent/dir/c.txt: No such file" --kernel "$FIX/pvh-exit0.elf" --console /nonexistent/dir/c.txt
expect_error kvm-missing 1 "$TMP/no-kvm does not exist: this host has no KVM" --kernel "$FIX/pvh-exit0.elf" --kvm-device "$TMP/no-kvm"
expect_error kvm-not-a-kvm-device 1 "/dev/null is not a KVM device" --kernel "$FIX/pvh-exit0.elf" --kvm-device /dev/null
# As an unprivileged user, the real /dev/kvm (mode 0600 here) is not permitted.
# /dev/kvm of mode 600, or 660 with a group (kvm) that nobody is not in: either refuses nobody.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && [ $((0$(stat -c %a /dev/kvm) & 7)) = 0 ]; then
	VMM_SAVED=$VMM
	VMM="setpriv --reuid=65534 --regid=65534 --clear-groups $VMM"
	expect_error kvm-not-permitted 1 "/dev/kvm: permission denied" --kernel "$FIX/pvh-exit0.elf"
	VMM=$VMM_SAVED
else
	skip kvm-not-permitted "needs root, setpriv and a /dev/kvm closed to others to run the VMM as a user it refuses"
fi

# --- vPMU options -------------------------------------------------------------
printf 'action deny\nevent 0xc0\nevnt 0x76\n' >"$TMP/bad.filter"
expect_error vpmu-model-unknown 2 "--vpmu 'arm': must be off, amd or intel" --vpmu=arm
expect_error vpmu-counters-out-of-range 2 "--vpmu-counters '9': must be a number from 1 to 8" --vpmu-counters 9
expect_error vpmu-counters-above-model 1 "--vpmu-counters 7: the amd model has at most 6 counters" --vpmu=amd --vpmu-counters 7 --kernel "$FIX/pvh-exit0.elf"
expect_error vpmu-backend-unknown 2 "--vpmu-backend 'fast'" --vpmu-backend=fast
expect_error vpmu-mode-unknown 2 "--vpmu-mode 'both'" --vpmu-mode=both
expect_error vpmu-filter-malformed 1 "bad.filter.*line 3" --vpmu-filter "$TMP/bad.filter" --kernel "$FIX/pvh-exit0.elf"
expect_error vpmu-filter-missing 1 "$TMP/none.filter" --vpmu-filter "$TMP/none.filter" --kernel "$FIX/pvh-exit0.elf"
# A FIFO (no writer) or a device where a file belongs is refused at once, never waited on.
mkfifo "$TMP/fifo"
expect_error kernel-fifo 1 "kernel $TMP/fifo: not a regular file" --kernel "$TMP/fifo"
expect_error initrd-fifo 1 "initrd $TMP/fifo: not a regular file" --kernel "$FIX/pvh-exit0.elf" --initrd "$TMP/fifo"
expect_error vpmu-filter-fifo 1 "$TMP/fifo: not a regular file" --vpmu-filter "$TMP/fifo" --kernel "$FIX/pvh-exit0.elf"
expect_error kernel-char-device 1 "kernel /dev/zero: not a regular file" --kernel /dev/zero
# A bzImage cut inside its setup header, just past "HdrS" (0x206 bytes).
head -c 512 /dev/zero >"$TMP/cut.bz"
printf '\x55\xaa\xeb\x00HdrS' | dd of="$TMP/cut.bz" bs=1 seek=$((0x1fe)) conv=notrunc status=none
expect_error bzimage-cut-in-header 1 "kernel .*truncated inside its setup header" --kernel "$TMP/cut.bz"
# The kvm backend runs the guest where the in-kernel vPMU works, and says why not
# where it does not (this host's, platform.md): one case or the other, never none.
vmm --kernel "$FIX/pvh-exit0.elf" --vpmu-backend=kvm
if [ $rc = 0 ]; then
	if grep -q 'vPMU: .* kvm backend (in-kernel vPMU)' "$TMP/err"; then pass vpmu-kvm-backend-runs
	else fail vpmu-kvm-backend-runs "the guest ran, but not on the kvm backend"; fi
elif grep -q -- '--vpmu-backend=kvm: the in-kernel vPMU is unavailable: ..' "$TMP/err"; then
	pass vpmu-kvm-backend-unavailable-says-why
else
	fail vpmu-kvm-backend-unavailable-says-why "rc=$rc"
fi
# With hardware counters, emulated runs the guest and auto counts in hardware; without, emulated
# is refused and auto runs the guest on the exact backend, saying why.
if perf_probe=$("$VMM" --kernel "$FIX/pvh-exit0.elf" --vpmu-backend=emulated 2>&1 >/dev/null); then
	if grep -q 'vPMU: .* emulated backend' <<<"$perf_probe"; then pass vpmu-emulated-runs-with-hw-counters
	else fail vpmu-emulated-runs-with-hw-counters "$perf_probe"; fi
	vmm --kernel "$FIX/pvh-exit0.elf"
	if [ $rc = 0 ] && grep -qE 'vPMU: .* (kvm|emulated) backend' "$TMP/err"; then pass vpmu-auto-with-hw-counters-counts-in-hardware
	else fail vpmu-auto-with-hw-counters-counts-in-hardware "rc=$rc: $(head -c 300 "$TMP/err")"; fi
else
	if grep -q 'the host cannot count hardware events' <<<"$perf_probe"; then pass vpmu-emulated-refused-without-hw-counters
	else fail vpmu-emulated-refused-without-hw-counters "$perf_probe"; fi
	vmm --kernel "$FIX/pvh-exit0.elf"
	if [ $rc = 0 ] && grep -q 'vPMU: .* exact backend' "$TMP/err"; then pass vpmu-auto-without-hw-counters-is-exact
	else fail vpmu-auto-without-hw-counters-is-exact "rc=$rc: $(head -c 300 "$TMP/err")"; fi
fi

# The guest debug owner (vmm/guest_debug.c) refuses the exact backend's steps beside the PMI
# tracer: 4 + 2 breakpoints, a vCPU has 4; the refusal is its last line, and no feature announced
# itself before it (the vPMU's banner comes only once every feature's setup passed).
vmm --vpmu-backend=exact --vpmu-trace-pmi 5 --kernel "$FIX/pvh-exit0.elf"
if [ "$rc" = 1 ] && ! grep -q 'vPMU: ' "$TMP/err" && tail -n 1 "$TMP/err" | grep -q '^kvmprof-vmm: the emulation engine (for the exact vPMU backend) and --vpmu-trace-pmi/--vpmu-trace-tick need 6 hardware breakpoints together, a vCPU has 4: use one at a time; --vpmu-backend=clock counts without it$'; then
	pass "guest-debug-owner-refuses-exact-with-pmi-trace"
else fail "guest-debug-owner-refuses-exact-with-pmi-trace" "rc=$rc: $(tail -c 300 "$TMP/err")"; fi

# --- the bundled guest, the control socket, guest sampling ------------------
# In this order (guest-sampler.sh, forced-exits.sh, hostile-guest.sh, trace.sh, static-plugin.sh and
# plugin-host.sh use control.sh's client and functions, plugins.sh trace.sh's); a part
# that is missing fails, it is not left out.
for part in bundled-guest vpmu-guest guest-agent vpmu-sbuf agent-throttle control guest-sampler forced-exits hostile-guest trace \
	plugins static-plugin exit-records cross-layer plugin-host; do
	# E2E_PARTS (a list of these parts; unset: all) leaves the others out, each with a SKIP
	# saying why (E2E_PARTS_WHY): tests/run-all.sh's ASan pass in the emulated KVM host.
	if [ -n "${E2E_PARTS:-}" ] && [[ " $E2E_PARTS " != *" $part "* ]]; then
		skip "e2e-part-$part" "the cases of tests/e2e/$part.sh: ${E2E_PARTS_WHY:-not in E2E_PARTS}"
		continue
	fi
	if [ -f "tests/e2e/$part.sh" ]; then
		part_start=$SECONDS
		# shellcheck source=/dev/null
		. "tests/e2e/$part.sh"
		# Where the suite's time goes (make test's budget: tests/run-all.sh).
		echo "(e2e part $part: $((SECONDS - part_start)) s)"
	else
		HARNESS_LOGS='' fail "e2e-$part" "tests/e2e/$part.sh is missing: its cases did not run"
	fi
done

harness_summary
