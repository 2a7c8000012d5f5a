# shellcheck shell=bash disable=SC2154 # rc, TMP, VMM, HELPERS: set by run.sh
# End-to-end cases of the plugin host (docs/plugins.md): every bad plugin at
# start-up and while the VM runs, the api on real vCPUs, and plugins loaded
# and unloaded over and over while the bundled guest runs on 2 vCPUs (under
# the ASan VMM too, with TAG=asan:). The test plugins are tests/unit/plugins/*.c
# (build/tests/plugins/*.so). Sourced by tests/e2e/run.sh after control.sh
# (uses ctl_wait_socket, ctl_wait_exit, expect_error, vmm).
PH_DIR=$BUILD/tests/plugins
PH_KVMPROF=$BUILD/kvmprof
[ -n "${TAG:-}" ] && [ -x "$BUILD/asan/kvmprof" ] && PH_KVMPROF=$BUILD/asan/kvmprof

# ph_value NAME FILE: the number after "NAME " in a counter plugin's output.
ph_value() {
	sed -n "s/^$1 \([0-9]*\)$/\1/p" "$2" | head -1
}

if [ ! -f "$PH_DIR/counter.so" ]; then
	fail plugin-host-test-plugins "$PH_DIR/counter.so missing (make builds build/tests/plugins)"
else
	# --- bad plugins at start-up: one line, exit 1, the guest never runs ------
	expect_error plugin-start-missing-file 1 "^kvmprof-vmm: --plugin $TMP/nope.so: No such file or directory$" \
		--plugin "$TMP/nope.so"
	expect_error plugin-start-not-a-library 1 "^kvmprof-vmm: --plugin /etc/hostname: not a loadable library: " \
		--plugin /etc/hostname
	expect_error plugin-start-not-a-plugin 1 "not_plugin.so: not a kvmprof plugin \(no kvmprof_plugin_version symbol" \
		--plugin "$PH_DIR/not_plugin.so"
	expect_error plugin-start-no-init 1 "no_init.so: not a kvmprof plugin \(no kvmprof_plugin_init symbol" \
		--plugin "$PH_DIR/no_init.so"
	expect_error plugin-start-version-mismatch 1 "old_version.so: built for plugin API version 42, this VMM has version 1: rebuild it$" \
		--plugin "$PH_DIR/old_version.so"
	expect_error plugin-start-init-fails 1 "init_fails.so: kvmprof_plugin_init refused \(returned 3\): refusing$" \
		--plugin "$PH_DIR/init_fails.so"
	expect_error plugin-start-init-crashes 1 "init_crashes.so: kvmprof_plugin_init crashed \(Segmentation fault\); not loaded$" \
		--plugin "$PH_DIR/init_crashes.so"
	expect_error plugin-start-init-aborts 1 "init_crashes.so: kvmprof_plugin_init crashed \(Aborted\); not loaded$" \
		--plugin "$PH_DIR/init_crashes.so,how=abort"
	expect_error plugin-start-bad-argument 1 "counter.so: argument 'oops' is not key=value$" \
		--plugin "$PH_DIR/counter.so,oops"
	# The first one's fini output follows the error: the run never started, but what it printed is not lost.
	vmm --plugin "$PH_DIR/counter.so" --plugin "$PH_DIR/counter.so"
	if [ "$rc" = 1 ] && head -1 "$TMP/err" | grep -qx "kvmprof-vmm: --plugin $PH_DIR/counter.so: already loaded as plugin 1 (counter)" &&
		grep -qx "com1 0" "$TMP/err"; then pass plugin-start-twice
	else fail plugin-start-twice "rc=$rc: $(head -c 300 "$TMP/err")"; fi
	expect_error plugin-start-empty 2 "^kvmprof-vmm: --plugin needs a file name" --plugin ''
	# A plugin built with ASan, into a VMM without it: its runtime would end the VMM inside dlopen.
	if [ -z "${TAG:-}" ]; then
		expect_error plugin-start-asan-plugin-plain-vmm 1 "good.so: built with a sanitizer \(it needs libasan\.so\.[0-9]+\): it loads only into a VMM built with it" \
			--plugin "$PH_DIR/sanitized/good.so"
	fi

	# --- the api on real vCPUs: each COM1 byte's registers, guest memory, process --
	vmm --cpus 2 --plugin "$PH_DIR/counter.so" --console "$TMP/ph-console.txt" \
		--cmdline "quiet start=/bin/spam:200,/bin/spam:200"
	sed -n '/^kvmprof-vmm: plugin 1 (counter) output:$/,$p' "$TMP/err" >"$TMP/ph-out"
	bytes=$(wc -c <"$TMP/ph-console.txt")
	com1=$(ph_value com1 "$TMP/ph-out")
	if [ "$rc" = 0 ] && [ "${com1:-x}" = "$bytes" ] && [ "$bytes" -gt 1000 ]; then pass plugin-counts-console-bytes
	else fail plugin-counts-console-bytes "rc=$rc, the plugin counted '${com1:-}' COM1 bytes, the console has $bytes"; fi
	# Every byte's registers and the guest byte at its RIP are readable; its process is known for all
	# but the kernel's own lines before the guest registered its processes, and mostly spam.
	why=
	[ "$(ph_value regs_ok "$TMP/ph-out")" = "$com1" ] || why="regs read for $(ph_value regs_ok "$TMP/ph-out") of $com1 bytes"
	[ "$(ph_value read_ok "$TMP/ph-out")" = "$com1" ] || why="guest memory at RIP read for $(ph_value read_ok "$TMP/ph-out") of $com1"
	[ "$(ph_value bad_vcpu "$TMP/ph-out")" = 0 ] || why="vCPU numbers out of range"
	spam=$(ph_value spam "$TMP/ph-out")
	[ "${spam:-0}" -gt $((com1 * 9 / 10)) ] || why="spam named for ${spam:-0} of $com1 bytes (expected > 90%: spam writes nearly all)"
	if [ -z "$why" ] && [ -n "$com1" ]; then pass plugin-api-on-real-vcpus; else fail plugin-api-on-real-vcpus "${why:-no output}"; fi

	# --- while the VM runs: load and unload, over and over, on 2 busy vCPUs ----
	PH_SOCK=$TMP/ph.sock
	# With the leak check on (run.sh turns it off for the rest): under the ASan VMM, nothing a plugin's
	# load, unload or refusal allocated may outlive the VM.
	# shellcheck disable=SC2086 # VMM may carry a prefix
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 $VMM --cpus 2 --timeout $((100 * HANG)) --control "$PH_SOCK" --console "$TMP/ph-run.txt" \
		--cmdline "quiet start=/bin/spam:90000,/bin/spam:90000" >"$TMP/out" 2>"$TMP/err" </dev/null &
	ph_pid=$!
	if ! ctl_wait_socket "$PH_SOCK" $ph_pid; then
		fail plugin-runtime-vm-starts "no control socket: $(head -c 300 "$TMP/err")"
		kill -9 $ph_pid 2>/dev/null
		wait $ph_pid 2>/dev/null
	else
		ph() { "$PH_KVMPROF" plugin --vm "$PH_SOCK" "$@"; }
		why=
		rounds=0
		for round in $(seq 15); do
			id=$(ph load "$PH_DIR/counter.so" 2>"$TMP/ph-load.err") || { why="round $round: load: $(cat "$TMP/ph-load.err")"; break; }
			sleep 0.1
			ph unload "$id" >"$TMP/ph-unload.out" 2>"$TMP/ph-unload.err" || { why="round $round: unload $id: $(cat "$TMP/ph-unload.err")"; break; }
			c=$(ph_value com1 "$TMP/ph-unload.out")
			[ "${c:-0}" -gt 0 ] || { why="round $round: the plugin saw no COM1 byte: $(head -c 200 "$TMP/ph-unload.out")"; break; }
			rounds=$round
		done
		if [ -z "$why" ] && kill -0 $ph_pid 2>/dev/null; then pass plugin-load-unload-15-times-while-running
		else fail plugin-load-unload-15-times-while-running "${why:-the VMM died after $rounds rounds}: $(tail -c 300 "$TMP/err")"; fi

		# Two at once, one unloaded first; list shows what is loaded; event-set switches pio off.
		id1=$(ph load "$PH_DIR/counter.so" 2>/dev/null)
		cp "$PH_DIR/counter.so" "$TMP/counter2.so"
		id2=$(ph load "$TMP/counter2.so" 2>/dev/null)
		ph list >"$TMP/ph-list" 2>&1
		if grep -qE "^$id1 +counter +pio " "$TMP/ph-list" && grep -qE "^$id2 +counter2 +pio " "$TMP/ph-list"; then
			pass plugin-list-shows-both
		else fail plugin-list-shows-both "ids '$id1' '$id2': $(head -c 300 "$TMP/ph-list")"; fi
		ph disable "$id2" pio >"$TMP/ph-set" 2>&1
		sleep 0.2
		ph unload "$id1" >"$TMP/ph-1.out" 2>/dev/null
		ph unload "$id2" >"$TMP/ph-2.out" 2>/dev/null
		c1=$(ph_value com1 "$TMP/ph-1.out")
		c2=$(ph_value com1 "$TMP/ph-2.out")
		# Switched off right after loading: the second saw far fewer bytes than the first (none after the switch).
		if grep -q "1 event switched off; now getting -" "$TMP/ph-set" && [ "${c1:-0}" -gt 0 ] &&
			[ "${c2:-0}" -lt "${c1:-0}" ]; then pass plugin-event-set-off
		else fail plugin-event-set-off "$(head -c 200 "$TMP/ph-set"); com1 $c1 and $c2"; fi

		# docs/plugins.md's example, as the page says: its code block is plugins/console_bytes.c, its one
		# cc line builds it against the headers make install installs, it loads into this running VM,
		# and its unload prints the bytes the console got meanwhile.
		why=
		awk '/^```c$/ { on = 1; next } on && /^```$/ { exit } on' docs/plugins.md >"$TMP/doc-example.c"
		cmp -s "$TMP/doc-example.c" plugins/console_bytes.c || why="the page's code block is not plugins/console_bytes.c"
		cc_line=$(grep -m1 '^cc -shared' docs/plugins.md)
		make --no-print-directory -s install DESTDIR="$TMP/inst" >"$TMP/inst.log" 2>&1 || why="make install: $(tail -c 200 "$TMP/inst.log")"
		if [ -z "$why" ]; then
			mkdir -p "$TMP/doc/plugins" && cp plugins/console_bytes.c "$TMP/doc/plugins/"
			(cd "$TMP/doc" && C_INCLUDE_PATH="$TMP/inst/usr/local/include" sh -c "$cc_line") >"$TMP/doc.log" 2>&1 ||
				why="'$cc_line' failed: $(head -c 300 "$TMP/doc.log")"
		fi
		if [ -z "$why" ]; then
			# It counts every byte written while it was surely loaded, and none outside the load and unload.
			b0=$(wc -c <"$TMP/ph-run.txt")
			id=$(ph load "$TMP/doc/console_bytes.so" 2>"$TMP/doc.err") || why="load: $(cat "$TMP/doc.err")"
			b1=$(wc -c <"$TMP/ph-run.txt")
			sleep 0.3
			b2=$(wc -c <"$TMP/ph-run.txt")
			[ -n "$id" ] && ph unload "$id" >"$TMP/doc.out" 2>"$TMP/doc.err"
			b3=$(wc -c <"$TMP/ph-run.txt")
			n=$(sed -n 's/^console bytes \([0-9]*\)$/\1/p' "$TMP/doc.out")
			[ -n "$why" ] || { [ -n "$n" ] && [ $((b2 - b1)) -gt 0 ] && [ "$n" -ge $((b2 - b1)) ] && [ "$n" -le $((b3 - b0)) ]; } ||
				why="it counted '${n:-}' bytes; the console grew by $((b2 - b1)) while it was loaded, $((b3 - b0)) from load to unload"
		fi
		if [ -z "$why" ]; then pass plugin-docs-example-as-documented; else fail plugin-docs-example-as-documented "$why"; fi

		# Bad input at run time: a clear error, exit 1, and the VM goes on.
		why=
		ph load "$TMP/nope.so" 2>"$TMP/ph-e" && why="loading a missing file succeeded"
		grep -q "nope.so: No such file or directory" "$TMP/ph-e" || why="missing file: $(cat "$TMP/ph-e")"
		cp "$PH_DIR/init_crashes.so" "$TMP/crash.so"
		ph load "$TMP/crash.so" 2>"$TMP/ph-e" && why="a crashing init loaded"
		grep -q "kvmprof_plugin_init crashed (Segmentation fault); not loaded" "$TMP/ph-e" || why="crash: $(cat "$TMP/ph-e")"
		ph load "$PH_DIR/old_version.so" 2>"$TMP/ph-e" && why="an old version loaded"
		grep -q "built for plugin API version 42" "$TMP/ph-e" || why="version: $(cat "$TMP/ph-e")"
		if [ -z "${TAG:-}" ]; then
			ph load "$PH_DIR/sanitized/good.so" probe=0 2>"$TMP/ph-e" && why="an ASan plugin loaded into the plain VMM"
			grep -q "built with a sanitizer" "$TMP/ph-e" || why="ASan plugin: $(cat "$TMP/ph-e")"
		fi
		ph unload 4242 2>"$TMP/ph-e" && why="unloading an unknown id succeeded"
		grep -q "no plugin has id 4242" "$TMP/ph-e" || why="unknown id: $(cat "$TMP/ph-e")"
		ph unload nonsense 2>"$TMP/ph-e"
		[ $? = 2 ] || why="a bad id is not a usage error"
		if [ -z "$why" ] && kill -0 $ph_pid 2>/dev/null && [ "$(ph list | wc -l)" = 1 ]; then pass plugin-runtime-bad-input
		else fail plugin-runtime-bad-input "${why:-the VMM died or a plugin stayed loaded}"; fi

		# A plugin whose output goes to a full disk: its loss is counted and said, the VM never notices.
		id=$(ph load "$PH_DIR/counter.so" out=/dev/full noisy=200 2>/dev/null)
		sleep 0.5
		ph unload "$id" >/dev/null 2>"$TMP/ph-e"
		urc=$?
		if [ $urc = 1 ] && grep -qE "plugin $id: [0-9]+ bytes of its output were lost \(No space left on device\)" "$TMP/ph-e" &&
			kill -0 $ph_pid 2>/dev/null; then pass plugin-output-full-disk
		else fail plugin-output-full-disk "rc=$urc: $(cat "$TMP/ph-e")"; fi

		kill -TERM $ph_pid
		ctl_wait_exit $ph_pid
		# Interrupted (130), no sanitizer report, no crash.
		if [ "$rc" = 130 ] && ! grep -qE "ERROR: (Address|Leak)Sanitizer|runtime error:" "$TMP/err"; then pass plugin-runtime-vm-clean-exit
		else fail plugin-runtime-vm-clean-exit "rc=$rc: $(grep -m3 -E 'ERROR|runtime error' "$TMP/err")"; fi
	fi
fi
