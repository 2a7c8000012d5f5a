# shellcheck shell=bash disable=SC2154 # rc, TMP, VMM, HELPERS: set by run.sh
# End-to-end cases of the two other VMM builds (vmm/variants.mk,
# docs/plugins.md): the static build with plugins/console_bytes.c compiled
# in (build/static/console_bytes/kvmprof-vmm), and the build with its trace
# events compiled out (build/notrace/kvmprof-vmm). Sourced by
# tests/e2e/run.sh after control.sh (uses pass, fail, skip, ctl, ctl_wait_socket, ctl_wait_exit).
SP_VMM=$BUILD/static/console_bytes/kvmprof-vmm
SP_OBJ=$BUILD/static/console_bytes/plugin.o
SP_SO=$BUILD/plugins/console_bytes.so
NT_VMM=$BUILD/notrace/kvmprof-vmm

# svmm BINARY ARGS...: one run with a hard limit, output in $TMP/out and $TMP/err, status in $rc.
svmm() {
	timeout -k 5 $((120 * HANG)) "$@" >"$TMP/out" 2>"$TMP/err" </dev/null
	rc=$?
}
# sp_count FILE: the count in console_bytes's "console bytes N" line (-1 if none).
sp_count() {
	awk '$1 == "console" && $2 == "bytes" { n = $3 } END { print (n == "" ? -1 : n) }' "$1"
}

if [ -n "${TAG:-}" ]; then
	# Neither build has an ASan variant: the plain pass runs these cases.
	skip static-plugin "the static and compiled-out builds are checked in the plain pass only"
elif [ ! -x "$SP_VMM" ] || [ ! -x "$NT_VMM" ] || [ ! -f "$SP_SO" ]; then
	fail static-plugin-builds "$SP_VMM, $NT_VMM or $SP_SO missing (make test-e2e builds them)"
else
	# --- the same source both ways, in one run: the compiled-in handler and the loaded library ---
	svmm "$SP_VMM" --cpus 2 --vpmu=off --plugin "$SP_SO" --console "$TMP/sp.console" \
		--cmdline "quiet start=/bin/spam:10000:200,/bin/spam:10000:200" --timeout $((60 * HANG))
	bytes=$(wc -c <"$TMP/sp.console")
	counts=$(awk '/^kvmprof-vmm: plugin [0-9]+ \(console_bytes\) output:$/ { getline; if ($1 == "console") print $3 }' "$TMP/err" |
		tr '\n' ' ')
	if [ "$rc" = 0 ] && [ "$bytes" -gt 12000 ] && [ "$counts" = "$bytes $bytes " ]; then
		pass static-plugin-counts-console-bytes
	else fail static-plugin-counts-console-bytes "rc=$rc, console $bytes bytes, plugin counts (built in, loaded): '$counts'"; fi

	# --- inlined: the handler is a symbol of the plugin's object, and none is left in the VMM ---
	# A call through a pointer (the loader's way) would keep the function, under its name.
	if ! nm "$SP_OBJ" | grep -q ' T kvmprof_plugin_on_pio$'; then
		fail static-plugin-handler-inlined "$SP_OBJ has no kvmprof_plugin_on_pio: the check below would prove nothing"
	elif nm "$SP_VMM" | grep -q 'kvmprof_plugin_on_pio'; then
		fail static-plugin-handler-inlined "$SP_VMM still has $(nm "$SP_VMM" | grep kvmprof_plugin_on_pio)"
	else pass static-plugin-handler-inlined; fi

	# --- arguments and out=FILE as for a loaded plugin; the trace file sees the same events ---
	svmm "$SP_VMM" --vpmu=off --plugin "builtin,out=$TMP/sp.out" --console "$TMP/sp2.console" \
		--trace "$TMP/sp.trace" --trace-events pio --cmdline "quiet start=/bin/spam:10000:50" --timeout $((60 * HANG))
	bytes=$(wc -c <"$TMP/sp2.console")
	outs=$("$BUILD/kvmprof" trace -i "$TMP/sp.trace" 2>/dev/null | grep -c ' pio port=0x3f8 size=1 out=1 ')
	if [ "$rc" = 0 ] && [ "$(sp_count "$TMP/sp.out")" = "$bytes" ] && [ "$outs" = "$bytes" ] &&
		! grep -q 'output:$' "$TMP/err"; then
		pass static-plugin-builtin-args-and-trace
	else fail static-plugin-builtin-args-and-trace "rc=$rc, out=FILE says $(sp_count "$TMP/sp.out"), console $bytes, trace $outs pio outs"; fi

	svmm "$SP_VMM" --vpmu=off --plugin builtin --plugin builtin --cmdline "quiet start=/bin/exit"
	if [ "$rc" != 0 ] && head -n 1 "$TMP/err" | grep -q -- '--plugin builtin: the built-in plugin is loaded already'; then
		pass static-plugin-builtin-twice-refused
	else fail static-plugin-builtin-twice-refused "rc=$rc: $(head -c 300 "$TMP/err")"; fi

	svmm "$BUILD/kvmprof-vmm" --vpmu=off --plugin builtin --cmdline "quiet start=/bin/exit"
	if [ "$rc" != 0 ] && [ "$(wc -l <"$TMP/err")" = 1 ] && grep -q 'has no built-in plugin' "$TMP/err"; then
		pass static-plugin-none-in-the-ordinary-build
	else fail static-plugin-none-in-the-ordinary-build "rc=$rc: $(head -c 300 "$TMP/err")"; fi

	# --- over the control socket: never unloaded; event-set switches its handler off ---
	sp_sock=$TMP/sp.sock
	"$SP_VMM" --vpmu=off --control "$sp_sock" --console "$TMP/sp3.console" --timeout $((60 * HANG)) \
		--cmdline "quiet start=/bin/spam:4000" >"$TMP/sp3.out" 2>"$TMP/sp3.err" </dev/null &
	sp_pid=$!
	if ! ctl_wait_socket "$sp_sock" $sp_pid; then
		fail static-plugin-control "no socket: $(head -c 300 "$TMP/sp3.err")"
		kill -9 $sp_pid 2>/dev/null
		wait $sp_pid 2>/dev/null
	else
		CTL_SOCK=$sp_sock ctl '{"cmd":"plugin-unload","plugin":1}'
		if grep -q '"ok":false' "$TMP/reply" && grep -q 'cannot be unloaded' "$TMP/reply"; then
			pass static-plugin-unload-refused
		else fail static-plugin-unload-refused "reply $(head -c 300 "$TMP/reply")"; fi
		# Some output first, then off: the count stops while the guest goes on writing.
		for _ in $(seq 50); do [ -s "$TMP/sp3.console" ] && break; sleep 0.1; done
		CTL_SOCK=$sp_sock ctl '{"cmd":"event-set","plugin":1,"events":"pio","enable":false}'
		set_reply=$(cat "$TMP/reply")
		ctl_wait_exit $sp_pid
		bytes=$(wc -c <"$TMP/sp3.console")
		n=$(awk '/\(console_bytes\) output:$/ { getline; print $3 }' "$TMP/sp3.err")
		if [ "$rc" = 0 ] && grep -q '"ok":true' <<<"$set_reply" && [ -n "$n" ] && [ "$n" -gt 0 ] &&
			[ "$n" -lt "$bytes" ]; then
			pass static-plugin-event-set-off
		else fail static-plugin-event-set-off "rc=$rc, counted $n of $bytes console bytes, event-set: $(head -c 200 <<<"$set_reply")"; fi
	fi

	# --- compiled out: the guest runs the same; --trace and plugins say why they cannot ---
	svmm "$NT_VMM" --cpus 2 --vpmu=off --console "$TMP/nt.console" --cmdline "quiet start=/bin/spam:10000:50" --timeout $((60 * HANG))
	# No TRACE site is left: nothing calls the dispatch (the ordinary build's sites do).
	calls=$(objdump -d "$NT_VMM" | grep -c 'call.*<trace_dispatch>')
	calls_plain=$(objdump -d "$BUILD/kvmprof-vmm" | grep -c 'call.*<trace_dispatch>')
	if [ "$rc" = 0 ] && grep -q '^spam: 50 lines' "$TMP/nt.console" && [ "$calls" = 0 ] && [ "$calls_plain" -gt 0 ]; then
		pass notrace-runs-with-no-trace-sites
	else fail notrace-runs-with-no-trace-sites "rc=$rc, $calls calls of trace_dispatch left ($calls_plain in the ordinary build)"; fi
	svmm "$NT_VMM" --vpmu=off --trace "$TMP/nt.trace" --cmdline "quiet start=/bin/exit"
	if [ "$rc" != 0 ] && [ "$(wc -l <"$TMP/err")" = 1 ] && grep -q -- '--trace .*compiled out' "$TMP/err" && [ ! -e "$TMP/nt.trace" ]; then
		pass notrace-trace-refused
	else fail notrace-trace-refused "rc=$rc: $(head -c 300 "$TMP/err")"; fi
	svmm "$NT_VMM" --vpmu=off --plugin "$SP_SO" --cmdline "quiet start=/bin/exit"
	if [ "$rc" != 0 ] && [ "$(wc -l <"$TMP/err")" = 1 ] && grep -q -- '--plugin .*compiled out' "$TMP/err"; then
		pass notrace-plugin-refused
	else fail notrace-plugin-refused "rc=$rc: $(head -c 300 "$TMP/err")"; fi
fi
