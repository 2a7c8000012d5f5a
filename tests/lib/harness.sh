# shellcheck shell=sh
# The shell test suites' one harness, sourced by each of them (POSIX sh:
# tests/nested/run.sh runs under /bin/sh). A case reports itself with one of
#   pass NAME                 -> "PASS NAME"
#   fail NAME WHY [FILE...]   -> "FAIL NAME: WHY", then the tail of each
#                                non-empty FILE (default: $HARNESS_LOGS)
#   skip NAME WHY             -> "SKIP NAME: WHY" (the case cannot run on
#                                this host, and WHY says why)
# and tests/run-all.sh counts those lines. TAG (say "asan:") prefixes every
# NAME. harness_summary prints "N passed, N failed, N skipped" and returns
# non-zero if a case failed.

TAG=${TAG:-}
HARNESS_LOGS=${HARNESS_LOGS:-}
harness_passed=0
harness_failed=0
harness_skipped=0

pass() {
	harness_passed=$((harness_passed + 1))
	echo "PASS $TAG$1"
}

fail() {
	harness_failed=$((harness_failed + 1))
	echo "FAIL $TAG$1: ${2:-}"
	shift
	[ $# -gt 0 ] && shift
	# shellcheck disable=SC2086 # HARNESS_LOGS is a list of paths without spaces
	[ $# -gt 0 ] || set -- $HARNESS_LOGS
	for harness_log in "$@"; do
		[ -s "$harness_log" ] && tail -n 12 "$harness_log" | sed "s|^|    ${harness_log##*/}: |"
	done
	return 0
}

skip() {
	harness_skipped=$((harness_skipped + 1))
	echo "SKIP $TAG$1: $2"
}

harness_summary() {
	echo "$harness_passed passed, $harness_failed failed, $harness_skipped skipped"
	[ "$harness_failed" = 0 ]
}

# A sanitizer report in any of the logs is a failure even when the exit status looks right.
sanitizer_clean() {
	! grep -q -E 'ERROR: AddressSanitizer|runtime error:|LeakSanitizer' "$@"
}

# within A B TOLERANCE: |A - B| <= TOLERANCE, in awk's floating point.
within() {
	awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= t) }'
}

# real_kvm_only NAME WHY: a case too slow for tests/kvmhost's emulated KVM host
# (KVMHOST_L1=1, where TCG runs the VMM, its guest and the exact backend's
# emulator 5-100 times slower) prints "SKIP NAME: ..." there with WHY and
# returns 0; anywhere else it returns 1, and the case runs:
#   real_kvm_only NAME WHY || { the case; }
real_kvm_only() {
	[ "${KVMHOST_L1:-0}" = 1 ] || return 1
	skip "$1" "runs on a real KVM host only; in the emulated one (tests/kvmhost) $2"
}
