# shellcheck shell=bash disable=SC2154 # rc, TMP, VMM, BUILD: set by run.sh
# End-to-end cases of guest sampling by the VMM (docs/guest-sampling.md):
# sample-start on the control socket, the rings drained by
# tests/e2e/ring_client.c through kvmprof's own ring reader (it checks every
# record), sample-stop, and the samples attributed to the bundled guest's
# processes through the guest descriptor. Sourced by tests/e2e/run.sh (uses
# pass, fail, $TMP, $VMM, $BUILD, $HELPERS).
GS_CLIENT=$HELPERS/ring_client
GS_SOCK=$TMP/gs.sock
# The clock backend: these cases are about the VMM's own sampling, not the guest's counters.
GS_GUEST=(--cpus 2 --vpmu-backend=clock --control "$GS_SOCK" --kernel "$BUILD/guest/kernel.elf" --initrd "$BUILD/guest/initrd.cpio")

# gs_boot CMDLINE: starts the VMM in the background (gs_pid), waits for its socket.
gs_boot() {
	rm -f "$GS_SOCK"
	# shellcheck disable=SC2086 # VMM may carry a prefix
	$VMM "${GS_GUEST[@]}" --cmdline "$1" --timeout $((60 * HANG)) >"$TMP/gs.out" 2>"$TMP/gs.err" </dev/null &
	gs_pid=$!
	ctl_wait_socket "$GS_SOCK" "$gs_pid"
}

# gs_end: waits up to 30 s for the VMM (killing it then); its status in rc.
gs_end() {
	for _ in $(seq 300); do kill -0 "$gs_pid" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$gs_pid" 2>/dev/null && kill -9 "$gs_pid"
	wait "$gs_pid"
	rc=$?
}

# gs_stop: ends the VM as a user's Ctrl-C would (SIGTERM; rc 130 when it stopped cleanly).
# The cases' guests run a program that outlasts any client (GS_ENDLESS): a guest that
# powered off before the client's sample-stop would fail them on a fast host (CI's did:
# matmul 128 2000 was over in under 2 s, and the client's stop got EPIPE).
GS_ENDLESS=/bin/matmul:128:100000000
gs_stop() {
	kill -TERM "$gs_pid" 2>/dev/null
	gs_end
}

# gs_ctl REQUEST: one request on a new connection; the reply in $TMP/gs.reply.
gs_ctl() {
	printf '%s\n' "$1" | "$CTL_CLIENT" "$GS_SOCK" >"$TMP/gs.reply" 2>&1
}

# gs_range ELF SYMBOL: "start end" of SYMBOL in ELF, as decimal numbers (mawk has no hex).
gs_range() {
	local addr size
	read -r addr size _ <<<"$(nm -S "$1" | awk -v s="$2" '$4 == s { print $1, $2 }')"
	[ -n "$addr" ] && echo "$((16#$addr)) $((16#$addr + 16#$size))"
}

# gs_pid_of COMM: the guest pid ring_client named COMM in $TMP/gs.ring.
gs_pid_of() {
	awk -v c="$1:" '$1 == "pid" && $3 == c { print $2; exit }' "$TMP/gs.ring"
}

if [ ! -x "${CTL_CLIENT:-}" ]; then
	fail guest-sampler-needs-control-client "tests/e2e/control.sh did not build it"
elif [ ! -x "$GS_CLIENT" ]; then
	fail guest-sampler-client-builds "$GS_CLIENT missing (make test-e2e builds it)"
elif ! gs_boot "quiet start=$GS_ENDLESS,/bin/hash:6000"; then
	fail guest-sampler-boot "no control socket: $(head -c 300 "$TMP/gs.err")"
	kill -9 "$gs_pid" 2>/dev/null
	wait "$gs_pid" 2>/dev/null
else
	# 1 ms of vCPU thread time per sample, with call stacks, 1.5 s (15 in the emulated KVM host,
	# where each poke below is a process that takes seconds to start); meanwhile others poke at it.
	# hash runs ~0.5 s of vCPU time (6000 rounds): its default 300 (~26 ms) could be over
	# before the client attached on a loaded host (6 samples, where 20 are asked for).
	"$GS_CLIENT" -p 1000000 -g -a -d "$([ "${KVMHOST_L1:-0}" = 1 ] && echo 15 || echo 1.5)" -o "$TMP/gs.data" "$GS_SOCK" >"$TMP/gs.ring" 2>&1 &
	client=$!
	# Until the client's sampling has begun (0.7 s was enough here, not in the emulated KVM host).
	for _ in $(seq 300); do
		gs_ctl '{"cmd":"status"}'
		grep -q '"sampling":true' "$TMP/gs.reply" && break
		sleep 0.1
	done
	status=$(cat "$TMP/gs.reply")
	gs_ctl '{"cmd":"sample-start","event":"cpu-clock","period":1000000}'
	second=$(cat "$TMP/gs.reply")
	gs_ctl '{"cmd":"sample-stop"}'
	other_stop=$(cat "$TMP/gs.reply")
	wait $client
	client_rc=$?
	# Sampling over, the VM runs on: hash ends on its own (its result line), matmul until stopped.
	gs_ctl '{"cmd":"status"}'
	after=$(cat "$TMP/gs.reply")
	for _ in $(seq $((300 * HANG))); do
		grep -q '^hash: size=65536 iters=6000 hash=0x' "$TMP/gs.out" && break
		kill -0 "$gs_pid" 2>/dev/null || break
		sleep 0.1
	done
	gs_stop
	if [ $rc = 130 ] && grep -q '"state":"running"' <<<"$after" && grep -q '"sampling":false' <<<"$after" &&
		grep -q '^hash: size=65536 iters=6000 hash=0x' "$TMP/gs.out"; then pass guest-sampler-vm-runs-on
	else fail guest-sampler-vm-runs-on "rc=$rc (130: stopped by SIGTERM), status after the client: $after; $(grep -c '^hash:' "$TMP/gs.out") hash result lines"; fi
	if [ $client_rc = 0 ] && grep -qx match "$TMP/gs.ring" && grep -q '^read: samples=[1-9][0-9]* .* bad=0$' "$TMP/gs.ring"
	then pass guest-sampler-records-valid-counts-match
	else fail guest-sampler-records-valid-counts-match "client rc=$client_rc: $(grep -E '^(stop|read|BAD)' "$TMP/gs.ring" | head -c 400)"; fi
	if grep -q '"sampling":true,"guest_descriptor":true' <<<"$status"; then pass guest-sampler-status-sampling
	else fail guest-sampler-status-sampling "$status"; fi
	if [ "$second" = '{"ok":false,"error":"guest sampling is already running"}' ] &&
		[ "$other_stop" = '{"ok":false,"error":"guest sampling belongs to another connection"}' ]; then
		pass guest-sampler-one-owner
	else fail guest-sampler-one-owner "$second / $other_stop"; fi

	# Samples of both demos, named by the guest descriptor.
	mm=$(gs_pid_of matmul)
	hs=$(gs_pid_of hash)
	mm_n=$(awk -v c=matmul: '$1 == "pid" && $3 == c { print $4 }' "$TMP/gs.ring")
	hs_n=$(awk -v c=hash: '$1 == "pid" && $3 == c { print $4 }' "$TMP/gs.ring")
	if [ -n "$mm" ] && [ -n "$hs" ] && [ "${mm_n:-0}" -ge 200 ] && [ "${hs_n:-0}" -ge 20 ] &&
		grep -q "^mmap pid $mm /bin/matmul 0x" "$TMP/gs.ring" && grep -q '^mmap pid -1 /kernel.elf 0x' "$TMP/gs.ring"
	then pass guest-sampler-processes-named
	else fail guest-sampler-processes-named "matmul pid '$mm' ($mm_n), hash pid '$hs' ($hs_n)"; fi

	# Nearly all of matmul's user-mode samples are in matmul_multiply (symbols from the guest's own
	# ELF): it does n^3 of the program's work against n^2 for the rest (n = 128), so 90% leaves room
	# for the loop set-up around it. Its kernel-mode samples (timer ticks, emulated at ~1.4 us per
	# ring-0 instruction on this host: their share follows the host's load) are not counted.
	read -r lo hi <<<"$(gs_range "$BUILD/guest/bin/matmul" matmul_multiply)"
	in=0
	all=0
	# "rip 0xADDR pid P cpl C: N"
	while read -r _ ip _ p _ cpl n; do
		if [ "$p" != "$mm" ] || [ "$cpl" != "3:" ]; then continue; fi
		all=$((all + n))
		[ $((ip)) -ge "${lo:-1}" ] && [ $((ip)) -lt "${hi:-0}" ] && in=$((in + n))
	done < <(grep '^rip ' "$TMP/gs.ring")
	if [ -n "$lo" ] && [ "$all" -ge 100 ] && [ $((in * 100 / all)) -ge 90 ]; then pass guest-sampler-matmul-hot-function
	else fail guest-sampler-matmul-hot-function "$in of $all matmul user-mode samples in matmul_multiply [$lo, $hi)"; fi

	# Call stacks: matmul_multiply's caller is main.
	read -r mlo mhi <<<"$(gs_range "$BUILD/guest/bin/matmul" main)"
	deep=0
	# "chain pid P: IP CALLER..."
	while read -r _ _ p ip caller _; do
		if [ "$p" != "$mm:" ] || [ -z "$caller" ]; then continue; fi
		[ $((ip)) -ge "$lo" ] && [ $((ip)) -lt "$hi" ] && [ $((caller)) -ge "${mlo:-1}" ] &&
			[ $((caller)) -lt "${mhi:-0}" ] && deep=$((deep + 1))
	done < <(grep '^chain ' "$TMP/gs.ring")
	if [ -n "$mlo" ] && [ "$deep" -ge 5 ]; then pass guest-sampler-callgraph-reaches-main
	else fail guest-sampler-callgraph-reaches-main "$deep chains from matmul_multiply to main: $(grep -m3 "^chain pid $mm:" "$TMP/gs.ring")"; fi

	# The drained records plus a header and END make a sample file the project's reader takes.
	if [ -x "$BUILD/kvmprof-agent" ]; then
		if "$BUILD/kvmprof-agent" report -i "$TMP/gs.data" --guest-root "$BUILD/guest" --sort pid,image,symbol \
			>"$TMP/gs.report" 2>"$TMP/err" && grep -q ' matmul ' "$TMP/gs.report"; then pass guest-sampler-file-reads
		else fail guest-sampler-file-reads "$(head -c 300 "$TMP/err")"; fi
	else
		fail guest-sampler-file-reads "$BUILD/kvmprof-agent missing (make test-e2e builds it)"
	fi
fi

# A guest that registers lying descriptors: refused ones are reported, the accepted liar
# (pointers to nowhere) costs it its process names, nothing else.
if [ -x "$GS_CLIENT" ] && gs_boot "quiet sampletest=baddesc start=$GS_ENDLESS,/bin/hash"; then
	"$GS_CLIENT" -g -d 1 "$GS_SOCK" >"$TMP/gs.ring" 2>&1
	client_rc=$?
	gs_stop
	if [ $rc = 130 ] && [ $client_rc = 0 ] && grep -qx match "$TMP/gs.ring" &&
		grep -q '^pid 0 \[unknown\]: [1-9]' "$TMP/gs.ring" && ! grep -q '^pid [1-9]' "$TMP/gs.ring" &&
		[ "$(grep -c 'guest descriptor at 0x[0-9a-f]* refused' "$TMP/gs.err")" = 2 ]; then
		pass guest-sampler-hostile-descriptor
	else fail guest-sampler-hostile-descriptor "vm rc=$rc client rc=$client_rc: $(grep -E '^(pid|read)' "$TMP/gs.ring" | head -c 300)"; fi
elif [ -x "$GS_CLIENT" ]; then
	fail guest-sampler-hostile-descriptor "no control socket: $(head -c 300 "$TMP/gs.err")"
fi

# A Linux task layout given to a guest that is not Linux (or lies about it): every read of it
# misses (the bundled guest maps nothing in the kernel half), samples get pid 0 [unknown],
# the VM and the rings are fine.
if [ -x "$GS_CLIENT" ] && gs_boot "quiet start=$GS_ENDLESS"; then
	"$GS_CLIENT" -g -d 1 -l '{"current_task":"0x20d40","per_cpu_offset":"0xffffffff82a1e9a0","pid":2416,"tgid":2420,"comm":2976,"comm_size":16,"task_size":9728}' \
		"$GS_SOCK" >"$TMP/gs.ring" 2>&1
	client_rc=$?
	gs_stop
	if [ $rc = 130 ] && [ $client_rc = 0 ] && grep -qx match "$TMP/gs.ring" &&
		grep -q '^start: .*"processes":"linux"' "$TMP/gs.ring" &&
		grep -q '^pid 0 \[unknown\]: [1-9]' "$TMP/gs.ring" && ! grep -q '^pid [1-9]' "$TMP/gs.ring"; then
		pass guest-sampler-linux-layout-misses
	else fail guest-sampler-linux-layout-misses "vm rc=$rc client rc=$client_rc: $(grep -E '^(start|pid|read)' "$TMP/gs.ring" | head -c 400)"; fi
elif [ -x "$GS_CLIENT" ]; then
	fail guest-sampler-linux-layout-misses "no control socket: $(head -c 300 "$TMP/gs.err")"
fi

# The client vanishes mid-sampling: sampling stops with it and can start again; fail requests.
if [ -x "$GS_CLIENT" ] && gs_boot "quiet start=$GS_ENDLESS"; then
	"$GS_CLIENT" -x -d 0.5 "$GS_SOCK" >"$TMP/gs.ring" 2>&1
	for _ in $(seq 20); do
		gs_ctl '{"cmd":"status"}'
		grep -q '"sampling":false' "$TMP/gs.reply" && break
		sleep 0.1
	done
	stopped=$(grep -c '"sampling":false' "$TMP/gs.reply")
	"$GS_CLIENT" -d 0.3 "$GS_SOCK" >"$TMP/gs.ring2" 2>&1
	again=$?
	printf '%s\n' '{"cmd":"sample-stop"}' '{"cmd":"sample-start","period":5}' \
		'{"cmd":"sample-start","event":"branch-misses"}' '{"cmd":"sample-start","period":1000000,"freq":1000}' \
		'{"cmd":"sample-start","callgraph":1}' '{"cmd":"sample-start","linux":5}' \
		'{"cmd":"sample-start","linux":{"current_task":"0x40","per_cpu_offset":"0xffffffff82a1e9a0","pid":2416,"tgid":2420,"comm":2976,"comm_size":16}}' \
		'{"cmd":"sample-start","linux":{"current_task":"0x40","per_cpu_offset":"0x3000","pid":2416,"tgid":2420,"comm":2976,"comm_size":16,"task_size":9728}}' \
		'{"cmd":"sample-start","event":"cycles","period":1000000}' |
		"$CTL_CLIENT" "$GS_SOCK" >"$TMP/gs.reply" 2>&1
	gs_stop
	if [ $rc = 130 ] && [ "$stopped" = 1 ] && [ $again = 0 ] && grep -qx match "$TMP/gs.ring2"; then
		pass guest-sampler-client-vanishes
	else fail guest-sampler-client-vanishes "vm rc=$rc stopped=$stopped again=$again"; fi
	if [ "$(sed -n 1p "$TMP/gs.reply")" = '{"ok":false,"error":"guest sampling is not running"}' ] &&
		sed -n 2p "$TMP/gs.reply" | grep -q '"error":"period out of range' &&
		sed -n 3p "$TMP/gs.reply" | grep -q "\"error\":\"unknown event 'branch-misses': cpu-clock, task-clock" &&
		sed -n 4p "$TMP/gs.reply" | grep -q 'not both' &&
		sed -n 5p "$TMP/gs.reply" | grep -q 'must be true or false' &&
		sed -n 6p "$TMP/gs.reply" | grep -q '"linux\\" must be an object' &&
		sed -n 7p "$TMP/gs.reply" | grep -q '"task_size\\" missing' &&
		sed -n 8p "$TMP/gs.reply" | grep -q 'linux layout refused: per_cpu_offset 0x3000 is not an aligned kernel address' &&
		sed -n 9p "$TMP/gs.reply" | grep -qE '"ok":false,"error":"event cycles: this host has no hardware PMU|"ok":true'
	then pass guest-sampler-bad-requests
	else fail guest-sampler-bad-requests "$(head -c 600 "$TMP/gs.reply")"; fi
elif [ -x "$GS_CLIENT" ]; then
	fail guest-sampler-client-vanishes "no control socket: $(head -c 300 "$TMP/gs.err")"
fi
