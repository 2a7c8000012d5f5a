# shellcheck shell=bash disable=SC2154 # rc, TMP, VMM, BUILD, HELPERS: set by run.sh
# End-to-end cases of the guest sampler's forced exit (issue 17): its clock
# kicks the vCPU thread out of KVM_RUN (vmm/kick.h), and every such exit is
# one sample, counted exactly on each side: the VMM's sample-stop figures
# (samples; kick_exits, the runs its clock's signal ended; kicks_no_period,
# those that found no new period), the rings read back by
# tests/e2e/ring_client.c (SAMPLE records, VM_EXIT records of a signal) and
# `kvmprof report` of the file. The vPMU is off, so that no other kick ends
# a run while the sampler samples. Sourced by tests/e2e/run.sh after
# guest-sampler.sh (uses gs_stop and GS_ENDLESS: the guest outlasts the client).
FX_SOCK=$TMP/fx.sock
FX_KVMPROF=$BUILD/kvmprof
[ -n "${TAG:-}" ] && [ -x "$BUILD/asan/kvmprof" ] && FX_KVMPROF=$BUILD/asan/kvmprof

# fx_json KEY: KEY's number in ring_client's sample-stop reply.
fx_json() { sed -n "s/^stop: .*\"$1\":\([0-9]*\).*/\1/p" "$TMP/fx.ring"; }

if [ ! -x "$HELPERS/ring_client" ]; then
	fail forced-exits-client-builds "$HELPERS/ring_client missing (make test-e2e builds it)"
else
	rm -f "$FX_SOCK"
	# shellcheck disable=SC2086 # VMM may carry a prefix
	$VMM --cpus 2 --vpmu=off --control "$FX_SOCK" --kernel "$BUILD/guest/kernel.elf" \
		--initrd "$BUILD/guest/initrd.cpio" --cmdline "quiet start=$GS_ENDLESS,/bin/hash:6000" \
		--timeout $((60 * HANG)) >"$TMP/fx.out" 2>"$TMP/fx.err" </dev/null &
	gs_pid=$!
	if ! ctl_wait_socket "$FX_SOCK" $gs_pid; then
		fail forced-exits-vm-starts "no socket: $(head -c 300 "$TMP/fx.err")"
		kill -9 $gs_pid 2>/dev/null
		wait $gs_pid 2>/dev/null
	else
		# 2 s at 1 kHz of vCPU thread time, with a VM_EXIT record per exit.
		"$HELPERS/ring_client" -e -d 2 -o "$TMP/fx.data" "$FX_SOCK" >"$TMP/fx.ring" 2>&1
		crc=$?
		gs_stop
		samples=$(fx_json samples)
		kicks=$(fx_json kick_exits)
		idle=$(fx_json kicks_no_period)
		vm_exits=$(fx_json vm_exits)
		read -r records signals <<<"$(sed -n 's/^exits: records=\([0-9]*\) signal=\([0-9]*\)$/\1 \2/p' "$TMP/fx.ring")"
		read_samples=$(sed -n 's/^read: samples=\([0-9]*\) .* lost=0 bad=0$/\1/p' "$TMP/fx.ring")
		if [ $crc = 0 ] && grep -qx match "$TMP/fx.ring" && [ -n "$samples" ] && [ "$samples" -gt 0 ] &&
			[ "$read_samples" = "$samples" ]; then pass forced-exits-samples-taken-are-samples-read
		else fail forced-exits-samples-taken-are-samples-read "ring_client rc=$crc: $(grep -E '^(stop|read)' "$TMP/fx.ring" | head -c 400)"; fi
		# Every run the clock's kick ended is one signal exit record, and a sample unless no period had passed.
		if [ -n "$kicks" ] && [ -n "$idle" ] && [ "$kicks" -gt 0 ] && [ "${signals:-x}" = "$kicks" ] &&
			[ "$kicks" = $((samples + idle)) ]; then pass forced-exits-one-per-sample
		else fail forced-exits-one-per-sample "kick_exits=${kicks:-?} kicks_no_period=${idle:-?} samples=${samples:-?} signal exit records=${signals:-?}"; fi
		# No exit record was left out or invented: the VMM's count is the records read.
		if [ -n "$vm_exits" ] && [ "${records:-x}" = "$vm_exits" ] && [ "$(fx_json vm_exits_dropped)" = 0 ]; then
			pass forced-exits-exit-records-all-read
		else fail forced-exits-exit-records-all-read "vm_exits=${vm_exits:-?} records read=${records:-?} dropped=$(fx_json vm_exits_dropped)"; fi
		# The report reads every sample the VMM took.
		"$FX_KVMPROF" report -i "$TMP/fx.data" >"$TMP/fx.report" 2>&1
		reported=$(sed -n 's/^event: .*, \([0-9]*\) samples, 0 lost$/\1/p' "$TMP/fx.report")
		if [ "${reported:-x}" = "$samples" ]; then pass forced-exits-report-reads-every-sample
		else fail forced-exits-report-reads-every-sample "${reported:-no} samples reported of ${samples:-?}: $(head -c 300 "$TMP/fx.report")"; fi
	fi
fi
