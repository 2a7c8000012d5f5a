# shellcheck shell=bash disable=SC2154 # rc, TMP, VMM, FIX, HELPERS: set by run.sh
# End-to-end cases of the VMM's trace events and --trace file (docs/trace.md),
# read back with `kvmprof trace`, checked against what the guest did and what
# the VMM counted itself. Sourced by tests/e2e/run.sh after control.sh (uses
# vmm, expect_error, pass, fail, ctl, ctl_wait_socket, ctl_wait_exit).
TR_KVMPROF=$BUILD/kvmprof
[ -n "${TAG:-}" ] && [ -x "$BUILD/asan/kvmprof" ] && TR_KVMPROF=$BUILD/asan/kvmprof

# tr_count FILE EVENT: EVENT's count in `kvmprof trace --counts` of FILE (0 if absent).
tr_count() {
	"$TR_KVMPROF" trace -i "$1" --counts | awk -v e="$2" '$1 == e { n = $2 } END { print n + 0 }'
}
# tr_stat NAME: the first number after NAME in the VMM's --vpmu-stats (on $TMP/err).
tr_stat() {
	awk -v name="$1" 'index($0, "  " name) == 1 { sub("^  " name " *", ""); print $1 + 0; exit }' "$TMP/err"
}
# tr_sum FILE EVENT ARG: the sum of ARG= over EVENT's records.
tr_sum() {
	"$TR_KVMPROF" trace -i "$1" | awk -v e="$2" -v a="$3=" '$3 == e { for (i = 4; i <= NF; i++)
		if (index($i, a) == 1) s += substr($i, length(a) + 1) } END { print s + 0 }'
}

# --- COM1: one pio out record per byte the guest wrote ----------------------------
# The console file holds exactly the bytes the guest wrote to COM1's data
# register (port 0x3f8 with DLAB clear); the bundled guest never sets DLAB,
# so every 1-byte OUT to 0x3f8 is a console byte.
vmm --cpus 2 --trace "$TMP/pio.trace" --trace-events pio --console "$TMP/pio.console" \
	--cmdline "quiet start=/bin/exit" --timeout $((60 * HANG))
if [ "$rc" != 0 ]; then fail trace-pio-com1-bytes "exit code $rc: $(head -c 300 "$TMP/err")"
elif ! "$TR_KVMPROF" trace -i "$TMP/pio.trace" >"$TMP/pio.txt" 2>"$TMP/pio.rerr"; then
	fail trace-pio-com1-bytes "the reader refused the file: $(cat "$TMP/pio.rerr")"
else
	outs=$(grep -c ' pio port=0x3f8 size=1 out=1 ' "$TMP/pio.txt")
	bytes=$(wc -c <"$TMP/pio.console")
	others=$(grep -vc ' pio ' "$TMP/pio.txt")
	if [ "$bytes" -gt 0 ] && [ "$outs" = "$bytes" ] && [ "$others" = 0 ] &&
		grep -q "^kvmprof-vmm: --trace $TMP/pio.trace: [0-9]* records, 0 lost" "$TMP/err"; then
		pass trace-pio-com1-bytes
	else fail trace-pio-com1-bytes "$outs pio outs to 0x3f8, $bytes console bytes, $others non-pio lines"; fi
	# Each OUT's value is the byte: the records spell out the console.
	printf '%b' "$(awk '/ pio port=0x3f8 size=1 out=1 / { v = substr($7, 9); printf "\\x%s", (length(v) < 2 ? "0" v : v) }' \
		"$TMP/pio.txt")" >"$TMP/pio.spelled"
	if cmp -s "$TMP/pio.spelled" "$TMP/pio.console"; then pass trace-pio-values-are-console-text
	else fail trace-pio-values-are-console-text "the OUT values differ from the console file"; fi
fi

# --- vm_exit against the VMM's own count, vCPU start/stop, the vPMU events ----------
# The clock backend keeps the vPMU's figures on any host and never runs the
# emulator, so every KVM_RUN return is one exit in both counts.
vmm --cpus 2 --vpmu=amd --vpmu-backend=clock --vpmu-stats --trace "$TMP/pmu.trace" \
	--trace-events 'vm_*,vcpu_*,msr_*,pmu_*,pmi_*' --cmdline "quiet start=/bin/pmutest:pmi:1000000:20:0:cycles" \
	--timeout $((60 * HANG))
if [ "$rc" != 0 ]; then fail trace-vm-exits-match-vmm-count "exit code $rc: $(head -c 300 "$TMP/err")"
else
	t=$(tr_count "$TMP/pmu.trace" vm_exit) s=$(tr_stat "VM exits")
	if [ "$t" -gt 0 ] && [ "$t" = "$s" ]; then pass trace-vm-exits-match-vmm-count
	else fail trace-vm-exits-match-vmm-count "$t vm_exit records, the VMM counted $s"; fi
	t=$(tr_count "$TMP/pmu.trace" vm_entry)
	if [ "$t" -ge "$s" ]; then pass trace-vm-entries-cover-exits
	else fail trace-vm-entries-cover-exits "$t vm_entry records for $s exits"; fi
	"$TR_KVMPROF" trace -i "$TMP/pmu.trace" >"$TMP/pmu.txt"
	starts=$(awk '$3 == "vcpu_start" { print $2 }' "$TMP/pmu.txt" | sort | tr '\n' ' ')
	stops=$(awk '$3 == "vcpu_stop" { print $2 }' "$TMP/pmu.txt" | sort | tr '\n' ' ')
	if [ "$starts" = "0 1 " ] && [ "$stops" = "0 1 " ]; then pass trace-vcpu-start-stop-once-per-vcpu
	else fail trace-vcpu-start-stop-once-per-vcpu "starts on vCPUs '$starts', stops on '$stops'"; fi
	reads=$(awk '/PMU MSR exits/ { print $4 }' "$TMP/err") writes=$(awk '/PMU MSR exits/ { print $6 }' "$TMP/err")
	tr=$(tr_count "$TMP/pmu.trace" msr_read) tw=$(tr_count "$TMP/pmu.trace" msr_write)
	if [ "$tr" -gt 0 ] && [ "$tr" = "$reads" ] && [ "$tw" = "$writes" ]; then pass trace-msr-events-match-vpmu-stats
	else fail trace-msr-events-match-vpmu-stats "$tr/$tw msr_read/msr_write records, the vPMU counted $reads/$writes"; fi
	p=$(tr_count "$TMP/pmu.trace" pmi_inject) ps=$(tr_stat "PMIs injected")
	o=$(tr_sum "$TMP/pmu.trace" pmu_overflow overflows) os=$(tr_stat "counter overflows")
	g=$(tr_sum "$TMP/pmu.trace" pmu_counter_program reprograms) gs=$(tr_stat "counter reprogrammings")
	if [ "$p" -gt 0 ] && [ "$p" = "$ps" ] && [ "$o" = "$os" ] && [ "$g" -gt 0 ] && [ "$g" = "$gs" ]; then
		pass trace-vpmu-events-match-vpmu-stats
	else
		fail trace-vpmu-events-match-vpmu-stats "PMIs $p/$ps, overflows $o/$os, reprogrammings $g/$gs (trace/stats)"
		# What the vPMU did, for a failure seen once in the emulated KVM host (no PMI in
		# a loop that took 100-1100 ms of vCPU time in 50 other runs there).
		grep -v -E ' vm_(exit|entry|run_end) ' "$TMP/pmu.txt" | head -n 60 | sed 's/^/    vpmu: /'
	fi
	# --counts agrees with the text: per event, and in total with the trailer.
	awk '{ n[$3]++ } END { for (e in n) print e, n[e] }' "$TMP/pmu.txt" | sort >"$TMP/pmu.text-counts"
	"$TR_KVMPROF" trace -i "$TMP/pmu.trace" --counts | awk '$1 != "records" && $1 != "lost" { print $1, $2 }' |
		sort >"$TMP/pmu.counts"
	total=$("$TR_KVMPROF" trace -i "$TMP/pmu.trace" --counts | awk '$1 == "records" { print $2 }')
	if cmp -s "$TMP/pmu.text-counts" "$TMP/pmu.counts" && [ "$total" = "$(wc -l <"$TMP/pmu.txt")" ]; then
		pass trace-reader-counts-agree-with-text
	else fail trace-reader-counts-agree-with-text "$(diff "$TMP/pmu.text-counts" "$TMP/pmu.counts" | head -3)"; fi
fi

# --- the exact backend: PMU MSR accesses its emulator answers are traced too ------
# pmutest's PMI loop runs with its counters live, so the emulator runs the
# guest kernel's RDMSR/WRMSR itself (no KVM exit) for most of them.
vmm --cpus 2 --vpmu=amd --vpmu-backend=exact --vpmu-stats --trace "$TMP/exact.trace" --trace-events 'msr_*' \
	--cmdline "quiet start=/bin/pmutest:pmi:100000:20" --timeout $((60 * HANG))
reads=$(awk '/PMU MSR exits/ { print $4 }' "$TMP/err") writes=$(awk '/PMU MSR exits/ { print $6 }' "$TMP/err")
tr=$(tr_count "$TMP/exact.trace" msr_read) tw=$(tr_count "$TMP/exact.trace" msr_write)
if [ "$rc" = 0 ] && [ "${reads:-0}" -gt 10 ] && [ "$tr" = "$reads" ] && [ "$tw" = "$writes" ]; then
	pass trace-msr-events-of-the-exact-backend
else fail trace-msr-events-of-the-exact-backend "rc=$rc: $tr/$tw msr_read/msr_write records, the vPMU counted $reads/$writes"; fi

# --- the control socket's requests; a whole file after SIGINT ----------------------
if [ -x "$CTL_CLIENT" ]; then
	rm -f "$CTL_SOCK"
	# shellcheck disable=SC2086 # VMM may carry a prefix
	$VMM --kernel "$FIX/pvh-spin.elf" --cpus 2 --timeout $((100 * HANG)) --control "$CTL_SOCK" --trace "$TMP/ctl.trace" \
		--trace-events 'control_request,vcpu_*' >"$TMP/trctl.out" 2>"$TMP/trctl.err" </dev/null &
	tr_pid=$!
	if ! ctl_wait_socket "$CTL_SOCK" $tr_pid; then
		fail trace-control-requests "no socket: $(head -c 300 "$TMP/trctl.err")"
		kill -9 $tr_pid 2>/dev/null
		wait $tr_pid 2>/dev/null
	else
		ctl "$(printf '{"cmd":"status"}\n{"cmd":"nope"}\n')"
		kill -INT $tr_pid
		ctl_wait_exit $tr_pid
		if [ "$rc" != 130 ]; then fail trace-whole-file-after-sigint "exit code $rc, expected 130"
		elif ! "$TR_KVMPROF" trace -i "$TMP/ctl.trace" >"$TMP/ctl.txt" 2>"$TMP/ctl.rerr"; then
			fail trace-whole-file-after-sigint "the reader refused it: $(cat "$TMP/ctl.rerr")"
		else
			pass trace-whole-file-after-sigint
			if [ "$(awk '$3 == "control_request" { print $2, $4, $5 }' "$TMP/ctl.txt" | tr '\n' ';')" = \
				"- cmd=status ok=1;- cmd=nope ok=0;" ]; then pass trace-control-requests
			else fail trace-control-requests "$(grep control_request "$TMP/ctl.txt" | head -3 | tr '\n' ';')"; fi
		fi
	fi
fi

# --- the guest sampler: guest_sample per sample, guest_process_switch per change --------
# Two processes share one vCPU, so the sampler sees the guest switch between them.
if [ -x "$TR_KVMPROF" ]; then
	rm -f "$TMP/gs.sock"
	# shellcheck disable=SC2086 # VMM may carry a prefix
	$VMM --cpus 1 --vpmu-backend=clock --control "$TMP/gs.sock" --trace "$TMP/gs.trace" --trace-events 'guest_*' \
		--timeout $((60 * HANG)) --cmdline "quiet start=/bin/matmul:128:300,/bin/matmul:128:300" >"$TMP/gs.out" 2>"$TMP/gs.err" </dev/null &
	gs_pid=$!
	if ! ctl_wait_socket "$TMP/gs.sock" $gs_pid; then
		fail trace-guest-samples "no socket: $(head -c 300 "$TMP/gs.err")"
		kill -9 $gs_pid 2>/dev/null
		wait $gs_pid 2>/dev/null
	else
		"$BUILD/kvmprof" record --vm "$TMP/gs.sock" -F 2000 -q -o "$TMP/gs.data" 2>"$TMP/gs.rec"
		ctl_wait_exit $gs_pid
		"$TR_KVMPROF" trace -i "$TMP/gs.trace" >"$TMP/gs.txt" 2>&1
		# kvmprof record's last line: "..., N guest samples, L lost in ...".
		want=$(sed -n 's/.* \([0-9]*\) guest samples, \([0-9]*\) lost in .*/\1 \2/p' "$TMP/gs.rec")
		got=$(grep -c ' guest_sample ' "$TMP/gs.txt")
		if [ "$rc" = 0 ] && [ -n "$want" ] && [ "${want% *}" -gt 0 ] &&
			{ [ "$got" = "${want% *}" ] || { [ "${want#* }" != 0 ] && [ "$got" -ge "${want% *}" ]; }; }; then
			pass trace-guest-samples-match-recording
		else fail trace-guest-samples-match-recording "rc=$rc, $got guest_sample records, recorded (samples lost): '$want'"; fi
		# Replaying the samples' pids gives exactly the switch records, in order.
		replay=$(awk '$3 == "guest_sample" { sub("pid=", "", $4); if ($2 in last && last[$2] != $4)
			printf "%s %s>%s;", $2, last[$2], $4; last[$2] = $4 }' "$TMP/gs.txt")
		switches=$(awk '$3 == "guest_process_switch" { sub("from=", "", $4); sub("to=", "", $5); printf "%s %s>%s;", $2, $4, $5 }' \
			"$TMP/gs.txt")
		if [ -n "$switches" ] && [ "$switches" = "$replay" ]; then pass trace-guest-process-switches-follow-samples
		else fail trace-guest-process-switches-follow-samples "switches '${switches:0:80}', from the samples '${replay:0:80}'"; fi
	fi
fi

# --- bad input: one line each ----------------------------------------------------------
expect_error trace-events-matching-nothing 2 "^kvmprof-vmm: --trace-events 'bogus_\*' matches no event" \
	--trace "$TMP/x.trace" --trace-events 'pio,bogus_*' --kernel "$FIX/pvh-exit0.elf"
expect_error trace-events-without-trace 2 '^kvmprof-vmm: --trace-events needs --trace FILE$' \
	--trace-events pio --kernel "$FIX/pvh-exit0.elf"
expect_error trace-file-not-creatable 1 "^kvmprof-vmm: --trace $TMP/no/such/dir/t: No such file or directory$" \
	--trace "$TMP/no/such/dir/t" --kernel "$FIX/pvh-exit0.elf"

# tr_reader_error NAME CODE PATTERN ARGS...: kvmprof trace fails with CODE, one stderr line, no stdout.
tr_reader_error() {
	local name=$1 code=$2 pattern=$3
	shift 3
	"$TR_KVMPROF" trace "$@" >"$TMP/rd.out" 2>"$TMP/rd.err"
	local got=$?
	if [ "$got" != "$code" ]; then fail "$name" "exit code $got, expected $code"
	elif [ "$(wc -l <"$TMP/rd.err")" != 1 ] || [ -s "$TMP/rd.out" ]; then
		fail "$name" "expected one stderr line and no output: $(head -c 200 "$TMP/rd.err")"
	elif ! grep -qE -- "$pattern" "$TMP/rd.err"; then fail "$name" "stderr does not match /$pattern/: $(cat "$TMP/rd.err")"
	else pass "$name"; fi
}
if [ -s "$TMP/pio.trace" ]; then
	size=$(stat -c %s "$TMP/pio.trace")
	head -c $((size - 40)) "$TMP/pio.trace" >"$TMP/cut.trace"
	tr_reader_error trace-reader-refuses-truncated 1 "^kvmprof trace: $TMP/cut.trace: offset [0-9]+: (truncated record|no trailer)" \
		-i "$TMP/cut.trace"
	{ cat "$TMP/pio.trace"; printf 'x'; } >"$TMP/long.trace"
	tr_reader_error trace-reader-refuses-trailing-bytes 1 "offset $size: data after the trailer" -i "$TMP/long.trace"
fi
head -c 100 /dev/urandom >"$TMP/random.trace"
tr_reader_error trace-reader-refuses-garbage 1 'offset 0: not a kvmprof trace file' -i "$TMP/random.trace"
tr_reader_error trace-reader-missing-file 1 'No such file or directory' -i "$TMP/none.trace"
tr_reader_error trace-reader-needs-input 2 '^kvmprof trace: -i FILE is required' --counts
tr_reader_error trace-reader-unknown-option 2 '^kvmprof trace: unknown option --bogus' -i x --bogus
