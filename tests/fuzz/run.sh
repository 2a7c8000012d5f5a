#!/usr/bin/env bash
# Runs libFuzzer targets: run.sh [--smoke] TARGET...
# Each target starts from its checked-in corpus (tests/fuzz/corpus/TARGET)
# and the build's seeds ($BUILD/fuzz/seeds/TARGET), copied into a working
# corpus under $BUILD/fuzz/work/TARGET that grows across runs, and runs for
# FUZZ_SECONDS (FUZZ_RUNS: at most that many executions; FUZZ_MAX_LEN: the
# largest input). Prints per target its executions, their rate, the corpus
# size and whether it crashed; a crash, leak or timeout leaves its input in
# $BUILD/fuzz/artifacts/TARGET/ and fails the run. --smoke prints PASS/FAIL
# lines for make test (tests/lib/harness.sh).
set -u
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=tests/lib/harness.sh
. tests/lib/harness.sh
BUILD=${BUILD:-build}
SECONDS_EACH=${FUZZ_SECONDS:-180}
smoke=0
if [ "${1:-}" = --smoke ]; then smoke=1; shift; fi
failed=0
[ $smoke = 1 ] || printf '%-16s %14s %10s %8s  %s\n' target executions exec/s corpus result
for t in "$@"; do
	bin=$BUILD/fuzz/fuzz_$t
	work=$BUILD/fuzz/work/$t
	art=$BUILD/fuzz/artifacts/$t
	log=$BUILD/fuzz/$t.log
	mkdir -p "$work" "$art"
	for d in tests/fuzz/corpus/$t "$BUILD/fuzz/seeds/$t"; do
		[ -d "$d" ] && find "$d" -maxdepth 1 -type f -exec cp -f {} "$work/" \;
	done
	if [ ! -x "$bin" ]; then
		fail "fuzz-$t" "$bin not built"
		failed=1
		continue
	fi
	# -timeout: one input taking 10 s is a hang; -rss_limit_mb: one growing without bound is a leak.
	# The smoke run is seeded, so that make test fuzzes the same way every time.
	seed=()
	[ $smoke = 1 ] && seed=(-seed=1)
	# FUZZ_RUNS: stop after that many executions (or FUZZ_SECONDS, whichever comes first).
	[ -n "${FUZZ_RUNS:-}" ] && seed+=(-runs="$FUZZ_RUNS")
	# FUZZ_MAX_LEN: cap the input size (the sample-file targets run faster on small inputs).
	[ -n "${FUZZ_MAX_LEN:-}" ] && seed+=(-max_len="$FUZZ_MAX_LEN")
	ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0} \
	UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
		"$bin" "${seed[@]}" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$art/" "$work" >"$log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
	files=$(find "$work" -type f | wc -l)
	if [ $rc != 0 ] || grep -qE '^==[0-9]+==ERROR|runtime error:|^SUMMARY: ' "$log"; then
		what=$(grep -m1 -E 'ERROR: |runtime error:|deadly signal|timeout' "$log" | cut -c1-160)
		crash=$(ls -t "$art" 2>/dev/null | head -n 1)
		failed=1
		if [ $smoke = 1 ]; then
			fail "fuzz-$t" "${what:-exit $rc} (input: $art/$crash; log: $log)"
		else
			printf '%-16s %14s %10s %8s  %s\n' "$t" "${execs:-?}" "${rate:-?}" "$files" \
				"CRASH ${what:-exit $rc}: $art/$crash"
		fi
	elif [ $smoke = 1 ]; then
		pass "fuzz-$t (${execs:-?} executions in ${SECONDS_EACH} s, corpus $files)"
	else
		printf '%-16s %14s %10s %8s  %s\n' "$t" "${execs:-?}" "${rate:-?}" "$files" "0 crashes"
	fi
done
exit $failed
