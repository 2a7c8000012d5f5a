# shellcheck shell=bash disable=SC2154 # rc, TMP, VMM, BUILD, HELPERS: set by run.sh
# End-to-end cases of the vPMU's sample buffer (docs/vpmu.md, "Sample
# buffer"): /bin/agent samples through it by default, and every count must
# agree exactly between the VMM (--vpmu-stats), the guest (the agent's
# summary line), the sample file (sample_check) and the report. The clock
# backend counts here: the counts compared are the VMM's and the guest's own
# records, whatever the backend. Sourced by tests/e2e/run.sh after
# guest-agent.sh (uses its AGENT_GUEST, AGENT_WORK, AGENT_REPORT,
# AGENT_CHECK and agent_field).

# sbuf_stat WHAT: a figure of the VMM's "sample buffer:" statistics line in $TMP/err.
sbuf_stat() {
	sed -n "s/^  sample buffer: .*\\b\\([0-9][0-9]*\\) $1.*/\\1/p" "$TMP/err" | head -n 1
}
sbuf_line() { grep '^  sample buffer:' "$TMP/err"; }
vpmu_stat() { sed -n "s/^  $1 *\\([0-9][0-9]*\\).*/\\1/p" "$TMP/err" | head -n 1; }

# sbuf_agree NAME: the VMM's, the agent's, the file's and the report's counts of the last run agree.
sbuf_agree() {
	local name=$1 written lost pmis samples alost apmis pending
	written=$(sbuf_stat 'records written')
	lost=$(sbuf_stat 'lost')
	pmis=$(sbuf_stat 'watermark PMIs')
	# A crossing raised after a vCPU's last entry (the guest powered off first) is never injected.
	pending=$(sed -n 's/^  PMIs injected .*, \([0-9][0-9]*\) pending when the VM stopped.*/\1/p' "$TMP/err" | head -n 1)
	samples=$(agent_field samples)
	alost=$(agent_field lost)
	apmis=$(agent_field pmis)
	if [ "$rc" != 0 ] || [ "$(agent_field buffer)" != 1 ]; then
		fail "$name" "rc=$rc, summary '$(grep '^agent:' "$TMP/out")' (expected buffer=1)"; return 1
	elif [ "$(agent_field throttled)" != 0 ]; then # the VMM records: no PMI budget (guest/kernel/pmu_all.c)
		fail "$name" "summary '$(grep '^agent:' "$TMP/out")': the buffered path was throttled"; return 1
	elif [ -z "$written" ] || [ "$written" != "$samples" ] || [ "$lost" != "$alost" ]; then
		fail "$name" "VMM '$(sbuf_line)' against the agent's '$(grep '^agent:' "$TMP/out")'"; return 1
	elif [ -z "$pending" ] || [ "$apmis" != "$(vpmu_stat 'PMIs injected')" ] ||
		[ "$pmis" != "$(($(vpmu_stat 'PMIs injected') + pending))" ]; then
		fail "$name" "watermark PMIs: VMM '$(sbuf_line)', $(vpmu_stat 'PMIs injected') injected, ${pending:-?} pending at the stop, the guest took $apmis"; return 1
	elif [ "$((written + lost))" != "$(vpmu_stat 'counter overflows')" ]; then
		fail "$name" "written + lost != the $(vpmu_stat 'counter overflows') overflows: $(sbuf_line)"; return 1
	elif ! "$AGENT_CHECK" "$TMP/agent.data" >"$TMP/check" 2>"$TMP/cerr"; then
		fail "$name" "sample file: $(cat "$TMP/cerr")"; return 1
	elif ! grep -qx "check: ok records=[0-9]* samples=$written kernel=[0-9]* user=[0-9]* lost=$lost exits=[0-9]*" "$TMP/check"; then
		fail "$name" "sample file: $(tail -n 1 "$TMP/check"), VMM: $(sbuf_line)"; return 1
	fi
	"$AGENT_REPORT" report -i "$TMP/agent.data" --guest-root "$BUILD/guest" >"$TMP/report" 2>"$TMP/rerr"
	if ! grep -q "^Event cycles (period [0-9]*): $written samples, $lost lost$" "$TMP/report"; then
		fail "$name" "report: '$(head -n 1 "$TMP/report")', VMM: $(sbuf_line)"; return 1
	fi
	echo "    $(grep '^agent:' "$TMP/out")"
	echo "   $(sbuf_line)"
	pass "$name"
}

# The agent drains every 50 ms; a watermark of 10 records of 64 bytes makes PMIs come.
rm -f "$TMP/agent.data"
vmm --vpmu-backend=clock --vpmu-stats --cpus 2 "${AGENT_GUEST[@]}" --agent-channel "$TMP/agent.data" \
	--cmdline "quiet pmubuf_watermark=640 start=/bin/agent:-c:100000:$AGENT_WORK" --timeout $((90 * HANG))
sbuf_agree vpmu-sbuf-counts-agree

# Drained only at the end: each CPU's 4 KiB buffer takes exactly 64 records (64 bytes each, no
# call stack), crosses its watermark once, and every later overflow is lost, not overwriting.
rm -f "$TMP/agent.data"
vmm --vpmu-backend=clock --vpmu-stats --cpus 2 "${AGENT_GUEST[@]}" --agent-channel "$TMP/agent.data" \
	--cmdline "quiet pmubuf_size=4096 pmubuf_watermark=640 start=/bin/agent:-D:-c:100000:$AGENT_WORK" --timeout $((90 * HANG))
if sbuf_agree vpmu-sbuf-full-buffer-agree; then
	cpus=$(agent_field cpus)
	if [ "$(sbuf_stat 'records written')" = $((64 * cpus)) ] && [ "$(sbuf_stat 'watermark PMIs')" = "$cpus" ] &&
		[ "$(sbuf_stat 'lost')" -gt 0 ]; then pass vpmu-sbuf-full-buffer-exact
	else fail vpmu-sbuf-full-buffer-exact "$(sbuf_line) (expected $((64 * cpus)) written, $cpus PMIs, the rest lost)"; fi
fi

# Call stacks: the VMM walks the guest's frame pointers into each record.
rm -f "$TMP/agent.data"
vmm --vpmu-backend=clock --vpmu-stats --cpus 2 "${AGENT_GUEST[@]}" --agent-channel "$TMP/agent.data" \
	--cmdline "quiet start=/bin/agent:-g:$AGENT_WORK" --timeout $((90 * HANG))
if sbuf_agree vpmu-sbuf-callchain-counts-agree; then
	"$AGENT_REPORT" report -i "$TMP/agent.data" --guest-root "$BUILD/guest" --format folded >"$TMP/folded" 2>"$TMP/rerr"
	if grep -q '^matmul;matmul`_start;matmul`main;matmul`matmul_multiply ' "$TMP/folded"; then pass vpmu-sbuf-callchain
	else fail vpmu-sbuf-callchain "no matmul_multiply stack from main: $(head -n 3 "$TMP/folded" | tr '\n' '|')"; fi
fi

# The PMI path, forced by the agent (-I) or by the guest's command line (pmubuf=off): the buffer
# is never armed, and every PMI is one sample or one loss.
sbuf_pmi_path() {
	local name=$1 kflags=$2 aflags=$3
	vmm --vpmu-backend=clock --vpmu-stats --cpus 2 "${AGENT_GUEST[@]}" --agent-channel "$TMP/agent.data" \
		--cmdline "quiet $kflags start=/bin/agent:$aflags$AGENT_WORK" --timeout $((90 * HANG))
	if [ "$rc" = 0 ] && [ "$(agent_field buffer)" = 0 ] && ! grep -q '^  sample buffer:' "$TMP/err" &&
		[ "$(agent_field samples)" -gt 0 ] &&
		[ "$(agent_field pmis)" = $(($(agent_field samples) + $(agent_field lost))) ]; then pass "$name"
	else fail "$name" "rc=$rc, '$(grep '^agent:' "$TMP/out")', $(sbuf_line)"; fi
}
sbuf_pmi_path vpmu-sbuf-pmi-path-agent-I "" "-I:"
sbuf_pmi_path vpmu-sbuf-pmi-path-pmubuf-off "pmubuf=off" ""

# A hostile guest's settings: each gets #GP, the VMM counts every one and carries on.
vmm --vpmu-backend=clock --vpmu-stats --cpus 1 "${AGENT_GUEST[@]}" --cmdline "quiet pmutest start=/bin/pmutest:sbuf" \
	--timeout $((60 * HANG))
if [ "$rc" = 0 ] && grep -qx 'pmutest sbuf: checks=31 failures=0' "$TMP/out" &&
	[ "$(sbuf_stat 'settings refused')" = 17 ]; then pass vpmu-sbuf-hostile-settings-gp
else fail vpmu-sbuf-hostile-settings-gp "rc=$rc, $(grep '^pmutest' "$TMP/out" | tr '\n' '|') $(sbuf_line)"; fi
