# shellcheck shell=bash disable=SC2154 # rc, TMP, VMM, BUILD, HELPERS: set by run.sh
# End-to-end cases of exit attribution's recording (issue 14, item 1):
# `kvmprof record` asks the VMM for a VM_EXIT record per exit, with its host
# interval, in the guest-sample rings; checked through the one reader by
# tests/e2e/exit_check.c against what the guest did. Sourced by
# tests/e2e/run.sh after control.sh (uses ctl_wait_socket, ctl_wait_exit).
XR_CHECK=$HELPERS/exit_check
XR_KVMPROF=$BUILD/kvmprof
[ -n "${TAG:-}" ] && [ -x "$BUILD/asan/kvmprof" ] && XR_KVMPROF=$BUILD/asan/kvmprof

if [ ! -x "$XR_CHECK" ]; then
	fail exit-records-helper "$XR_CHECK missing (make test-e2e builds it)"
else
	# The guest waits 1.5 s, then writes 300 lines of 63 bytes to COM1 and its summary, and powers off:
	# the recording, attached meanwhile, sees every byte, and every byte is one OUT exit to port 0x3f8.
	xr_sock=$TMP/xr.sock
	# shellcheck disable=SC2086 # VMM may carry a prefix
	$VMM --cpus 2 --control "$xr_sock" --console "$TMP/xr.console" --timeout $((60 * HANG)) \
		--cmdline "quiet start=/bin/spam:20000:300:console:$((1500 * HANG))" >"$TMP/xr.out" 2>"$TMP/xr.err" </dev/null &
	xr_pid=$!
	if ! ctl_wait_socket "$xr_sock" $xr_pid || ! ctl_wait_file "$TMP/xr.console" $xr_pid; then
		fail exit-records-vm-starts "no socket: $(head -c 300 "$TMP/xr.err")"
		kill -9 $xr_pid 2>/dev/null
		wait $xr_pid 2>/dev/null
	else
		before=$(wc -c <"$TMP/xr.console")
		"$XR_KVMPROF" record --vm "$xr_sock" -g -q -d $((20 * HANG)) -o "$TMP/xr.data" 2>"$TMP/xr.rec.err"
		ctl_wait_exit $xr_pid
		after=$(wc -c <"$TMP/xr.console")
		"$XR_CHECK" "$TMP/xr.data" >"$TMP/xr.check" 2>&1
		xrc=$?
		outs=$(awk '$1 == "exit" && $2 == 2 && $3 == "3f8" { print $4 }' "$TMP/xr.check")
		if [ $xrc = 0 ] && [ -n "$outs" ] && [ "$outs" = $((after - before)) ] && [ "$outs" -ge 18900 ]; then
			pass exit-records-one-per-com1-byte
		else fail exit-records-one-per-com1-byte "check rc=$xrc; ${outs:-no} io-out 0x3f8 exits recorded, the console got $((after - before)) bytes meanwhile: $(tail -c 300 "$TMP/xr.check")"; fi
		# Every exit of the spam phase is spam's (its process, from the guest's own table), most have
		# a guest stack (-g), both vCPUs ran, and the sampler's clock signals show as signal exits.
		total=$(sed -n 's/^check: ok exits=\([0-9]*\) .*/\1/p' "$TMP/xr.check")
		named=$(sed -n 's/.* named=\([0-9]*\) .*/\1/p' "$TMP/xr.check")
		stacks=$(sed -n 's/.* stacks=\([0-9]*\)$/\1/p' "$TMP/xr.check")
		signals=$(awk '$1 == "exit" && $2 == 7 { print $4 }' "$TMP/xr.check")
		if [ -n "$total" ] && [ "${named:-0}" -ge "${outs:-1}" ] && [ "${stacks:-0}" -ge "${outs:-1}" ] &&
			[ "${signals:-0}" -gt 0 ] && grep -q ' vcpus=2 ' "$TMP/xr.check"; then
			pass exit-records-attributed
		else fail exit-records-attributed "$(tail -1 "$TMP/xr.check"), $outs COM1 outs, ${signals:-no} signal exits"; fi
		# The recording still reports (its cross-layer stacks: tests/e2e/cross-layer.sh).
		if "$XR_KVMPROF" report -i "$TMP/xr.data" --guest-root "$BUILD/guest" >"$TMP/xr.report" 2>&1 &&
			grep -q '^guest user' "$TMP/xr.report"; then pass exit-records-file-reports
		else fail exit-records-file-reports "$(head -c 300 "$TMP/xr.report")"; fi
	fi
fi
