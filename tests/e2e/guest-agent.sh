# shellcheck shell=bash disable=SC2154 # rc, TMP, VMM, BUILD: set by run.sh
# End-to-end cases of guest-wide profiling in the bundled guest: /bin/agent
# samples every CPU through the guest kernel's system-wide sampling, runs
# the demos, and writes a kvmprof sample file to the agent channel (COM2);
# on the host, `kvmprof-agent report --guest-root build/guest` must name each
# demo's hot function as the top symbol of its process.
# Sourced by tests/e2e/run.sh (uses vmm, pass, fail, skip, $TMP, $rc, $VMM, $BUILD).
#
# This host has no hardware counters: the emulated vPMU backend is refused,
# so the cases run on the clock backend (cycles from the vCPU thread's run
# time, PMIs delivered the same way) and the emulated case says SKIP.

# The profiled workload: three times the demos' defaults, so that sampling
# every 10^6 cycles (1 ms on the clock backend) gives several hundred samples.
AGENT_WORK=/bin/matmul+128+60:/bin/hash+900
AGENT_MATMUL_LINE='matmul: n=128 iters=60 checksum=0x078d7288845245ed'
AGENT_HASH_LINE='hash: size=65536 iters=900 hash=0x621788137fc47f69'
AGENT_GUEST=(--kernel "$BUILD/guest/kernel.elf" --initrd "$BUILD/guest/initrd.cpio")
AGENT_REPORT=$BUILD/kvmprof-agent
# The file checker (built by make): the one reader (lib/format/sample_file.c) plus the agent's invariants.
AGENT_CHECK=$HELPERS/sample_check
if [ ! -x "$AGENT_CHECK" ]; then
	fail guest-agent-checker-builds "$AGENT_CHECK missing (make test-e2e builds it)"
fi

# agent_field KEY: the value of KEY= on the agent's summary line in $TMP/out.
agent_field() {
	sed -n "s/^agent: .*\\b$1=\\([0-9]*\\).*/\\1/p" "$TMP/out" | head -n 1
}

# agent_top_symbol COMMAND: the symbol of COMMAND's first (biggest) row of the
# report in $TMP/report (--sort pid,image,symbol: samples % pid command image symbol).
# In the emulated KVM host (tests/kvmhost) the top of a demo's own image: there the guest
# kernel's ring-0 work runs at another speed against the demo's ring-3 code than on a real
# KVM host, and on the clock backend (samples of time) the kernel's page_free as hash exits
# took as many samples as hash_block (64 against 63 in one run).
agent_top_symbol() {
	local image=.
	[ "${KVMHOST_L1:-0}" = 1 ] && image=$1
	awk -v cmd="$1" -v img="$image" '$4 == cmd && $1 ~ /^[0-9]+$/ && (img == "." || $5 == img) { print $6; exit }' "$TMP/report"
}

# agent_profile NAME BACKEND...: boots the agent with the demos and checks the
# summary, the file and the report's top symbols.
agent_profile() {
	local name=$1
	shift
	rm -f "$TMP/agent.data"
	vmm "$@" --cpus 2 "${AGENT_GUEST[@]}" --agent-channel "$TMP/agent.data" \
		--cmdline "quiet start=/bin/agent:$AGENT_WORK" --timeout $((90 * HANG))
	local samples lost demo_cycles least
	samples=$(agent_field samples)
	lost=$(agent_field lost)
	# The demos count their own user-mode cycles on the same vPMU: the
	# agent's system-wide counter, overflowing every 10^6 cycles, must have
	# sampled at least that many periods, less one partial period per demo
	# on each of the two CPUs. (A fixed figure was a timing threshold: on the
	# clock backend cycles are run time, and a loaded host runs them slower.)
	demo_cycles=$(sed -n 's/^\(matmul\|hash\): instructions=[0-9]* cycles=\([0-9]*\)$/\2/p' "$TMP/out" |
		awk '{ s += $1 } END { printf "%.0f\n", s }') # not print: mawk writes 2.97569e+09 past 2^31
	least=$((demo_cycles / 1000000 - 4))
	if [ "$rc" != 0 ]; then fail "$name" "exit code $rc"; return
	elif ! grep -qxF "$AGENT_MATMUL_LINE" "$TMP/out" || ! grep -qxF "$AGENT_HASH_LINE" "$TMP/out"; then
		fail "$name" "a demo's result line is missing or wrong under sampling"; return
	elif [ "$least" -lt 50 ]; then
		fail "$name" "the demos counted $demo_cycles cycles: too few to profile (their PMU lines: $(grep -E '^(matmul|hash): (instr|no PMU|PMU)' "$TMP/out" | tr '\n' ';'))"; return
	elif [ -z "$samples" ] || { [ "$samples" -lt "$least" ] &&
		! real_kvm_only "$name-every-period" "the VMM notices an overflow many periods late (the vCPU's kick timer fires at the L1 kernel's coarse grain), and one sample stands for the periods that passed: $samples samples where the demos counted $demo_cycles cycles"; }; then
		fail "$name" "summary: '$(grep '^agent:' "$TMP/out")' (expected $least samples or more: the demos counted $demo_cycles cycles)"; return
	fi
	echo "    $(grep '^agent:' "$TMP/out")"
	pass "$name"

	if ! "$AGENT_CHECK" "$TMP/agent.data" >"$TMP/check" 2>"$TMP/err"; then
		fail "$name-file" "$(cat "$TMP/err")"
	elif ! grep -qx "check: ok records=[0-9]* samples=$samples kernel=[1-9][0-9]* user=[1-9][0-9]* lost=$lost exits=2" "$TMP/check"; then
		fail "$name-file" "$(tail -n 1 "$TMP/check") (summary: samples=$samples lost=$lost)"
	elif ! grep -qE '^proc [0-9]+ matmul /bin/matmul samples=[1-9]' "$TMP/check" ||
		! grep -qE '^proc [0-9]+ hash /bin/hash samples=[1-9]' "$TMP/check"; then
		fail "$name-file" "no samples of the demos: $(grep '^proc' "$TMP/check" | tr '\n' ';')"
	else pass "$name-file"; fi

	if [ ! -x "$AGENT_REPORT" ]; then
		fail "$name-report" "$AGENT_REPORT is not built"; return
	fi
	"$AGENT_REPORT" report -i "$TMP/agent.data" --guest-root "$BUILD/guest" --sort pid,image,symbol \
		>"$TMP/report" 2>"$TMP/err"
	local rrc=$? mm hs
	mm=$(agent_top_symbol matmul)
	hs=$(agent_top_symbol hash)
	if [ $rrc != 0 ]; then fail "$name-report" "report exit code $rrc: $(head -c 300 "$TMP/err")"
	elif [ "$mm" != matmul_multiply ] || [ "$hs" != hash_block ]; then
		fail "$name-report" "top symbols: matmul '$mm', hash '$hs' (expected matmul_multiply, hash_block)"
		head -n 12 "$TMP/report" | sed 's/^/    report: /'
	else pass "$name-report"; fi
}

agent_profile guest-agent-clock --vpmu-backend=clock

if "$VMM" --kernel "$FIX/pvh-exit0.elf" --vpmu-backend=emulated >/dev/null 2>"$TMP/err"; then
	agent_profile guest-agent-emulated --vpmu-backend=emulated
else
	skip guest-agent-emulated "the emulated vPMU backend is refused here: $(head -n 1 "$TMP/err" | cut -c1-120)"
fi

# Options: one program with its arguments (`+`), a period, one CPU.
rm -f "$TMP/agent.data"
vmm --vpmu-backend=clock --cpus 1 "${AGENT_GUEST[@]}" --agent-channel "$TMP/agent.data" \
	--cmdline "quiet start=/bin/agent:-c:200000:/bin/matmul+64+100" --timeout $((60 * HANG))
if [ "$rc" = 0 ] && grep -q '^matmul: n=64 iters=100 ' "$TMP/out" && ! grep -q '^hash:' "$TMP/out" &&
	[ "$(agent_field cpus)" = 1 ] && "$AGENT_CHECK" "$TMP/agent.data" >"$TMP/check" 2>"$TMP/err" &&
	grep -qE '^proc [0-9]+ matmul /bin/matmul samples=[1-9]' "$TMP/check" &&
	grep -q 'exits=1$' "$TMP/check"; then
	pass guest-agent-options
else fail guest-agent-options "rc=$rc $(cat "$TMP/err" 2>/dev/null)"; fi

# Bad options: usage and status 2, nothing sampled; no PMU: says so, status 1.
vmm --vpmu-backend=clock "${AGENT_GUEST[@]}" --cmdline "quiet start=/bin/agent:-e:nosuchevent" --timeout $((60 * HANG))
if [ "$rc" = 2 ] && grep -q "agent: unknown event 'nosuchevent'" "$TMP/out" && grep -q '^usage: agent' "$TMP/out"; then
	pass guest-agent-bad-event
else fail guest-agent-bad-event "rc=$rc"; fi
vmm --vpmu=off "${AGENT_GUEST[@]}" --cmdline "quiet start=/bin/agent" --timeout $((60 * HANG))
if [ "$rc" = 1 ] && grep -q '^agent: no PMU' "$TMP/out"; then pass guest-agent-no-pmu
else fail guest-agent-no-pmu "rc=$rc"; fi

# Hostile: garbage through COM2 is data to the VMM, which carries on and keeps every byte.
rm -f "$TMP/junk.data"
vmm "${AGENT_GUEST[@]}" --agent-channel "$TMP/junk.data" --cmdline "quiet start=/bin/fault:com2:64" --timeout $((60 * HANG))
if [ "$rc" = 0 ] && grep -q '^fault: com2 wrote 64 KiB' "$TMP/out" && [ "$(stat -c %s "$TMP/junk.data")" = 65536 ]; then
	pass guest-agent-channel-garbage
else fail guest-agent-channel-garbage "rc=$rc, $(stat -c %s "$TMP/junk.data" 2>/dev/null) bytes"; fi
# ... and the reader refuses it with a message instead of a profile.
if "$AGENT_CHECK" "$TMP/junk.data" >/dev/null 2>"$TMP/err"; then fail guest-agent-garbage-refused "the checker accepted garbage"
elif [ -x "$AGENT_REPORT" ] && "$AGENT_REPORT" report -i "$TMP/junk.data" --guest-root "$BUILD/guest" >/dev/null 2>"$TMP/err"; then
	fail guest-agent-garbage-refused "the report accepted garbage"
else pass guest-agent-garbage-refused; fi
