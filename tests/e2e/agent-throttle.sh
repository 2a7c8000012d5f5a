# shellcheck shell=bash disable=SC2154 # rc, TMP, BUILD: set by run.sh
# End-to-end cases of the bundled guest's PMI throttle
# (guest/kernel/pmu_throttle.c): on the PMI path (/bin/agent -I) a CPU takes
# at most 5 sampling PMIs per timer tick (1250 a second, pmu_max_rate= on
# the command line); the one that uses up the budget stops the counter
# until the next tick. On the clock backend a period of 10^5 cycles is
# shorter than the guest's emulated PMI handler, which without the throttle
# ran handlers back to back and never finished (docs/benchmarks.md). Only
# counts are compared, no times. Sourced by tests/e2e/run.sh after
# guest-agent.sh (uses its AGENT_GUEST, AGENT_WORK, AGENT_*_LINE,
# AGENT_CHECK, AGENT_REPORT and agent_field).

THROTTLE_BUDGET=5 # PMIs per tick: the default 1250 a second at 250 Hz
# Why the counts per tick differ in the emulated KVM host (tests/kvmhost).
L1_BURSTS="the clock backend's overflows are noticed at the L1 kernel's coarse timer grain, so PMIs come in bursts and not one a period, and the budget per tick runs out otherwise"


# throttle_run NAME KERNEL_FLAGS AGENT_FLAGS: the demos on 2 vCPUs under the agent on the PMI path;
# 0 when they finished with their results and the agent's counts agree with its file and the report.
throttle_run() {
	local name=$1 kflags=$2 aflags=$3 samples lost pmis period
	rm -f "$TMP/agent.data"
	vmm --vpmu-backend=clock --cpus 2 "${AGENT_GUEST[@]}" --agent-channel "$TMP/agent.data" \
		--cmdline "quiet $kflags start=/bin/agent:-I:$aflags$AGENT_WORK" --timeout $((100 * HANG))
	samples=$(agent_field samples)
	lost=$(agent_field lost)
	pmis=$(agent_field pmis)
	period=${aflags#-c:}
	period=${period%:}
	if [ "$rc" != 0 ] || ! grep -qxF "$AGENT_MATMUL_LINE" "$TMP/out" || ! grep -qxF "$AGENT_HASH_LINE" "$TMP/out"; then
		fail "$name" "rc=$rc (124: did not finish), the demos' lines: $(grep -E '^(matmul|hash): n|^(matmul|hash): size' "$TMP/out" | tr '\n' '|')"
		return 1
	elif [ "$(agent_field buffer)" != 0 ] || [ -z "$(agent_field throttled)" ] || [ -z "$samples" ] ||
		[ "$samples" = 0 ] || [ "$pmis" != $((samples + lost)) ]; then
		fail "$name" "summary '$(grep '^agent:' "$TMP/out")': want buffer=0, throttled=, pmis = samples + lost"
		return 1
	elif ! "$AGENT_CHECK" "$TMP/agent.data" >"$TMP/check" 2>"$TMP/cerr"; then
		fail "$name" "sample file: $(cat "$TMP/cerr")"
		return 1
	elif ! grep -qx "check: ok records=[0-9]* samples=$samples kernel=[0-9]* user=[0-9]* lost=$lost exits=2" "$TMP/check"; then
		fail "$name" "sample file: $(tail -n 1 "$TMP/check"), summary: samples=$samples lost=$lost"
		return 1
	fi
	"$AGENT_REPORT" report -i "$TMP/agent.data" --guest-root "$BUILD/guest" >"$TMP/report" 2>"$TMP/rerr"
	if ! grep -qx "Event cycles (period $period): $samples samples, $lost lost" "$TMP/report"; then
		fail "$name" "report: '$(head -n 1 "$TMP/report")', summary: samples=$samples lost=$lost"
		return 1
	fi
	echo "    $(grep '^agent:' "$TMP/out")"
	pass "$name"
}

# Period 10^5: the workload finishes, some tick's budget ran out, each throttle took a budget of
# PMIs, and the file (META throttled) makes the report say how often. (A counter that wrapped again
# between the last PMI's re-arm and its stop gives a sample, not another throttle: pmu_all.c.)
if throttle_run agent-throttle-short-period-finishes "" "-c:100000:"; then
	throttled=$(agent_field throttled)
	if [ "$throttled" -gt 0 ] && [ "$(agent_field pmis)" -ge $((THROTTLE_BUDGET * throttled)) ]; then
		pass agent-throttle-short-period-throttled
	else fail agent-throttle-short-period-throttled "'$(grep '^agent:' "$TMP/out")': want 0 < throttled <= pmis / $THROTTLE_BUDGET"; fi
	if grep -qxF "# sampling throttled $throttled times (a CPU's PMI budget for a tick ran out)" "$TMP/report"; then
		pass agent-throttle-report-says-so
	else fail agent-throttle-report-says-so "no '# sampling throttled $throttled times' in the report: $(grep throttled "$TMP/report")"; fi
fi

# Period 10^6 (the default, 4 PMIs a tick): never throttled. A bad pmu_max_rate= is ignored, with a line.
if throttle_run agent-throttle-long-period-runs "pmu_max_rate=lots" "-c:1000000:"; then
	if [ "$(agent_field throttled)" = 0 ] && ! grep -q throttled "$TMP/report"; then
		pass agent-throttle-long-period-never-throttled
	elif real_kvm_only agent-throttle-long-period-never-throttled "$L1_BURSTS ($(grep '^agent:' "$TMP/out"))"; then
		:
	else fail agent-throttle-long-period-never-throttled "'$(grep '^agent:' "$TMP/out")': want throttled=0 and no report line"; fi
	if grep -qx 'kvmprof guest: bad pmu_max_rate option ignored' "$TMP/out"; then pass agent-throttle-bad-rate-ignored
	else fail agent-throttle-bad-rate-ignored "no 'bad pmu_max_rate option ignored' line"; fi
fi

# pmu_max_rate=250: a budget of one PMI a tick, so every sampling PMI throttles (at period 10^6
# no wrap fits between a PMI's re-arm and its stop, so there is no sample of that kind).
if throttle_run agent-throttle-rate-option-runs "pmu_max_rate=250" "-c:1000000:"; then
	if [ "$(agent_field throttled)" = "$(agent_field pmis)" ]; then pass agent-throttle-rate-option-every-pmi
	elif real_kvm_only agent-throttle-rate-option-every-pmi "$L1_BURSTS ($(grep '^agent:' "$TMP/out"))"; then
		:
	else fail agent-throttle-rate-option-every-pmi "'$(grep '^agent:' "$TMP/out")': want throttled = pmis"; fi
fi
