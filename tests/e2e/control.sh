# End-to-end cases for the control socket (--control, docs/control-socket.md);
# sourced by tests/e2e/run.sh (uses vmm, expect_error, pass, fail, $VMM, $FIX, $TMP).
# The client is tests/e2e/control_client.c (built by make): no socat or python needed.
CTL_CLIENT=$HELPERS/control_client
CTL_SOCK=$TMP/ctl.sock

# ctl_wait_socket PATH PID: waits up to 10 s for the socket to appear; false if it did not or PID died.
ctl_wait_socket() {
	for _ in $(seq 100); do
		[ -S "$1" ] && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# ctl_wait_file FILE PID: waits up to 10 s (HANG times that in the emulated KVM host) for
# FILE, while PID runs. The VMM makes its control socket before it opens --console's file.
ctl_wait_file() {
	for _ in $(seq $((100 * HANG))); do
		[ -e "$1" ] && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# ctl_wait_exit PID: waits up to 15 s for PID to end; sets rc to its status (or 999 after killing it).
ctl_wait_exit() {
	for _ in $(seq 150); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$1" 2>/dev/null; then
		kill -9 "$1"
		wait "$1" 2>/dev/null
		rc=999
	else
		wait "$1" 2>/dev/null # no "Killed" job notice for the SIGKILL case
		rc=$?
	fi
}

# ctl REQUEST-TEXT: sends it on one connection, the replies land in $TMP/reply.
ctl() {
	printf '%s' "$1" | "$CTL_CLIENT" "$CTL_SOCK" >"$TMP/reply" 2>&1
}

if [ ! -x "$CTL_CLIENT" ]; then
	fail control-client-builds "$CTL_CLIENT missing (make test-e2e builds it)"
else
	# A spinning guest on two vCPUs, with the vPMU's clock backend so that there are figures.
	# shellcheck disable=SC2086 # VMM may carry a prefix
	$VMM --kernel "$FIX/pvh-spin.elf" --cpus 2 --vpmu=amd --vpmu-backend=clock --timeout $((100 * HANG)) \
		--control "$CTL_SOCK" >"$TMP/ctl.out" 2>"$TMP/ctl.err" </dev/null &
	ctl_pid=$!
	if ! ctl_wait_socket "$CTL_SOCK" $ctl_pid; then
		fail control-socket-created "no socket at $CTL_SOCK: $(head -c 300 "$TMP/ctl.err")"
		kill -9 $ctl_pid 2>/dev/null
		wait $ctl_pid 2>/dev/null
	else
		if [ "$(stat -c %a "$CTL_SOCK")" = 600 ]; then pass control-socket-mode-0600
		else fail control-socket-mode-0600 "mode $(stat -c %a "$CTL_SOCK")"; fi

		# A client that connects, never sends a whole line and never reads: held open to the end.
		mkfifo "$TMP/idle.fifo"
		"$CTL_CLIENT" "$CTL_SOCK" <"$TMP/idle.fifo" >"$TMP/idle.out" 2>&1 &
		idle_pid=$!
		exec 4>"$TMP/idle.fifo"
		printf '{"cmd":' >&4

		ctl '{"cmd":"status"}'
		if grep -q '^{"ok":true,' "$TMP/reply" && grep -q '"state":"running"' "$TMP/reply" &&
			grep -q "\"pid\":$ctl_pid," "$TMP/reply" && grep -q '"vcpus":2,' "$TMP/reply" &&
			grep -q '"mem_bytes":268435456,' "$TMP/reply" && grep -q '"uptime_s":[0-9.]*,' "$TMP/reply" &&
			grep -q '"vpmu":{"model":"amd","backend":"clock","mode":"cpu-switch"' "$TMP/reply" &&
			grep -qF "\"kernel\":\"$FIX/pvh-spin.elf\"" "$TMP/reply" && [ "$(wc -l <"$TMP/reply")" = 1 ]; then
			pass control-status
		else fail control-status "$(head -c 400 "$TMP/reply")"; fi

		# vCPU thread ids: real threads of the VMM, named vcpuN. The socket serves from the moment the
		# vCPU threads are created; a thread not yet scheduled says "tid":null, so ask until both ran.
		for _ in $(seq 100); do
			ctl '{"cmd":"vcpus","id":"v1"}'
			grep -q '"tid":null' "$TMP/reply" || break
			sleep 0.1
		done
		tids=$(grep -o '"tid":[0-9]*' "$TMP/reply" | cut -d: -f2)
		why=
		grep -q '^{"ok":true,"id":"v1",' "$TMP/reply" || why="reply $(head -c 300 "$TMP/reply")"
		[ "$(echo "$tids" | grep -c .)" = 2 ] || why="expected 2 thread ids: $(head -c 300 "$TMP/reply")"
		i=0
		for tid in $tids; do
			comm=$(cat "/proc/$ctl_pid/task/$tid/comm" 2>/dev/null)
			[ "$comm" = "vcpu$i" ] || why="tid $tid of vCPU $i: comm '$comm'"
			i=$((i + 1))
		done
		if [ -z "$why" ]; then pass control-vcpus-thread-ids; else fail control-vcpus-thread-ids "$why"; fi

		# At least one exit: on a loaded host the spinning guest may not have run yet.
		for _ in $(seq 100); do
			ctl '{"cmd":"vpmu-stats"}'
			grep -qE '"vm_exits":[1-9][0-9]*,' "$TMP/reply" && break
			sleep 0.1
		done
		if grep -q '^{"ok":true,"model":"amd","backend":"clock",' "$TMP/reply" &&
			grep -qE '"vm_exits":[1-9][0-9]*,' "$TMP/reply" && grep -q '"pmis_injected":0,' "$TMP/reply" &&
			grep -q '"latency_histogram":{"upper_us":\[1,2,4,' "$TMP/reply"; then pass control-vpmu-stats
		else fail control-vpmu-stats "$(head -c 400 "$TMP/reply")"; fi

		# exit-stats: held by the connection that started it, dropped (unsubscribed while the vCPUs run) when it goes.
		ctl '{"cmd":"exit-stats","start":true}
{"cmd":"exit-stats"}
'
		why=
		[ "$(grep -c '^{"ok":true,"counting":true,"holders":1,"exits":[0-9]*,"host_ns":[0-9]*,"reasons":\[' "$TMP/reply")" = 2 ] ||
			why="start and read: $(head -c 300 "$TMP/reply")"
		grep -q '"vcpus":\[{"index":0,"exits":[0-9]*,"host_ns":[0-9]*},{"index":1,' "$TMP/reply" || why="no per-vCPU totals: $(head -c 300 "$TMP/reply")"
		ctl '{"cmd":"exit-stats"}'
		grep -q '^{"ok":true,"counting":false,"holders":0,' "$TMP/reply" || why="after its connection ended: $(head -c 300 "$TMP/reply")"
		if [ -z "$why" ] && kill -0 $ctl_pid 2>/dev/null; then pass control-exit-stats-held-by-its-connection
		else fail control-exit-stats-held-by-its-connection "${why:-the VMM died}"; fi

		ctl '{"cmd":"sample-start","event":"cpu-clock","period":1000000}
{"cmd":"sample-stop"}
'
		# Served on any guest (tests/e2e/guest-sampler.sh drains the rings); this client drops the descriptor.
		if sed -n 1p "$TMP/reply" | grep -q '^{"ok":true,"event":"cpu-clock","period":1000000,"callgraph":false,"exits":false,"vcpus":2,"ring_size":[0-9]*,' &&
			sed -n 2p "$TMP/reply" | grep -qE '^\{"ok":true,"samples":[0-9]+,"lost":0,'; then
			pass control-sample-start-stop
		else fail control-sample-start-stop "$(head -c 300 "$TMP/reply")"; fi

		# Malformed requests: an error reply each, and the same connection still answers.
		printf '%s\n' 'garbage' '{"cmd":' '[1,2]' '{"cmd":"status"} trailing' '{"cmd":"reboot"}' \
			'{"cmd":"status","bogus":1}' '{"cmd":7}' '{"a":{"b":{"c":{"d":{"e":{"f":{"g":{"h":{"i":1}}}}}}}}}' \
			'' '{"cmd":"status"}' >"$TMP/bad.req"
		printf '\x00\xff\xfe\x01\n\xc3\x28"\n{"cmd":"status"}' >>"$TMP/bad.req"
		"$CTL_CLIENT" "$CTL_SOCK" <"$TMP/bad.req" >"$TMP/reply" 2>&1
		errors=$(grep -c '^{"ok":false,"error":"[^"]' "$TMP/reply")
		oks=$(grep -c '^{"ok":true,' "$TMP/reply")
		if [ "$errors" = 10 ] && [ "$oks" = 2 ] && [ "$(wc -l <"$TMP/reply")" = 12 ] &&
			sed -n 12p "$TMP/reply" | grep -q '"state":"running"'; then pass control-malformed-requests
		else fail control-malformed-requests "$errors errors, $oks ok: $(head -c 600 "$TMP/reply")"; fi

		# Random bytes: only error replies, whatever the line lengths turn out to be.
		head -c 65536 /dev/urandom | "$CTL_CLIENT" "$CTL_SOCK" >"$TMP/reply" 2>&1
		if [ -s "$TMP/reply" ] && ! grep -qv '^{"ok":false,"error":"[^"]' "$TMP/reply"; then pass control-binary-garbage
		else fail control-binary-garbage "$(head -c 300 "$TMP/reply")"; fi

		# Longest accepted request (4095 bytes and its newline), then one too long.
		id=$(printf '%*s' 4071 '' | tr ' ' a) # 24 bytes of JSON around it
		ctl "{\"cmd\":\"status\",\"id\":\"$id\"}
"
		if grep -q "^{\"ok\":true,\"id\":\"$id\"," "$TMP/reply"; then pass control-request-4095-bytes
		else fail control-request-4095-bytes "$(head -c 300 "$TMP/reply")"; fi
		{ printf '%*s' 5000 '' | tr ' ' a; printf '\n{"cmd":"status"}\n'; } | "$CTL_CLIENT" "$CTL_SOCK" >"$TMP/reply" 2>&1
		if [ "$(cat "$TMP/reply")" = '{"ok":false,"error":"request longer than 4096 bytes: connection closed"}' ]; then
			pass control-oversized-request
		else fail control-oversized-request "$(head -c 300 "$TMP/reply")"; fi

		# Eight clients at once are served; the ninth and tenth are told why they are refused.
		# The idle client holds one slot: seven of the ten get replies.
		"$CTL_CLIENT" -n 10 "$CTL_SOCK" >"$TMP/reply" 2>&1
		oks=$(grep -c '^[0-9] {"ok":true,"protocol":1,' "$TMP/reply")
		busy=$(grep -c '"error":"too many control clients (at most 8): connection closed"' "$TMP/reply")
		if [ "$oks" = 7 ] && [ "$busy" = 3 ]; then pass control-many-clients
		else fail control-many-clients "$oks served, $busy refused: $(head -c 600 "$TMP/reply")"; fi

		# A client that sends and never reads is dropped once its replies pile up.
		hog=$("$CTL_CLIENT" -H "$CTL_SOCK" 2>&1)
		ctl '{"cmd":"status"}'
		if grep -q '^dropped after [0-9]* requests' <<<"$hog" && grep -q '"state":"running"' "$TMP/reply"; then
			pass control-client-never-reading-is-dropped
		else fail control-client-never-reading-is-dropped "$hog / $(head -c 200 "$TMP/reply")"; fi

		# A second VMM on the same path does not take the socket over.
		expect_error control-socket-in-use 1 "control socket $CTL_SOCK: another process is listening there" \
			--kernel "$FIX/pvh-exit0.elf" --control "$CTL_SOCK"

		# SIGINT: the VM stops as usual (the idle client does not hold it) and the socket goes.
		kill -INT $ctl_pid
		ctl_wait_exit $ctl_pid
		if [ "$rc" = 130 ] && [ ! -e "$CTL_SOCK" ] && ! grep -qiE 'ERROR: AddressSanitizer|runtime error' "$TMP/ctl.err"; then
			pass control-sigint-removes-socket
		else fail control-sigint-removes-socket "rc=$rc, socket $(ls -l "$CTL_SOCK" 2>&1): $(tail -n 3 "$TMP/ctl.err")"; fi
		exec 4>&-
		ctl_wait_exit $idle_pid
	fi

	vmm --kernel "$FIX/pvh-exit0.elf" --control "$CTL_SOCK"
	if [ "$rc" = 0 ] && [ ! -e "$CTL_SOCK" ]; then pass control-guest-exit-removes-socket
	else fail control-guest-exit-removes-socket "rc=$rc"; fi

	vmm --kernel "$FIX/pvh-spin.elf" --timeout 1 --control "$CTL_SOCK"
	if [ "$rc" = 124 ] && [ ! -e "$CTL_SOCK" ]; then pass control-timeout-removes-socket
	else fail control-timeout-removes-socket "rc=$rc"; fi

	# SIGTERM removes the socket; SIGKILL leaves a stale one, which the next VMM replaces.
	for sig in TERM KILL; do
		# shellcheck disable=SC2086
		$VMM --kernel "$FIX/pvh-spin.elf" --control "$CTL_SOCK" >/dev/null 2>"$TMP/err" </dev/null &
		pid=$!
		ctl_wait_socket "$CTL_SOCK" $pid
		kill -$sig $pid
		ctl_wait_exit $pid 2>/dev/null # no "Killed" job notice
		if [ $sig = TERM ]; then
			if [ "$rc" = 130 ] && [ ! -e "$CTL_SOCK" ]; then pass control-sigterm-removes-socket
			else fail control-sigterm-removes-socket "rc=$rc"; fi
		fi
	done
	if [ -S "$CTL_SOCK" ]; then
		vmm --kernel "$FIX/pvh-exit0.elf" --control "$CTL_SOCK"
		if [ "$rc" = 0 ] && [ ! -e "$CTL_SOCK" ]; then pass control-stale-socket-replaced
		else fail control-stale-socket-replaced "rc=$rc"; fi
	else fail control-stale-socket-replaced "SIGKILL left no socket to test with"; fi

	echo 'precious' >"$TMP/regular"
	expect_error control-refuses-regular-file 1 "control socket $TMP/regular: exists and is not a socket" \
		--kernel "$FIX/pvh-exit0.elf" --control "$TMP/regular"
	if [ "$(cat "$TMP/regular")" != precious ]; then fail control-regular-file-untouched "file changed"; fi
	expect_error control-missing-directory 1 "control socket $TMP/no/such/dir.sock: No such file" \
		--kernel "$FIX/pvh-exit0.elf" --control "$TMP/no/such/dir.sock"
	long=$TMP/$(printf '%*s' 120 '' | tr ' ' x).sock
	expect_error control-path-too-long 2 "--control .*: too long for a UNIX socket path" \
		--kernel "$FIX/pvh-exit0.elf" --control "$long"
fi
