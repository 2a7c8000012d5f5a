# shellcheck shell=bash disable=SC2154 # rc, TMP, VMM, BUILD: set by run.sh
# End-to-end cases of the cross-layer profiles (issue 14, items 2-4): the
# bundled guest's exitloop makes VM exits of one kind from a function of
# its own while `kvmprof record -g` runs; the report's cross-layer stacks
# for those exits go guest user -> guest kernel -> [exit: ...] -> VMM ->
# host kernel, the drill-down from the whole recording follows that path,
# and the exit table counts exactly the exits the guest made. Sourced by
# tests/e2e/run.sh after control.sh (ctl_wait_socket, ctl_wait_exit).
CL_KVMPROF=$BUILD/kvmprof
[ -n "${TAG:-}" ] && [ -x "$BUILD/asan/kvmprof" ] && CL_KVMPROF=$BUILD/asan/kvmprof

# cl_record NAME CMDLINE: boots the guest with CMDLINE, records it with -g until it powers off
# (into $TMP/cl-NAME.data); console bytes written meanwhile in cl_bytes. False if the VM did not start.
cl_record() {
	local name=$1 cmdline=$2 sock=$TMP/cl-$1.sock before after
	# shellcheck disable=SC2086 # VMM may carry a prefix
	$VMM --cpus 2 --control "$sock" --console "$TMP/cl-$name.console" --timeout $((90 * HANG)) \
		--cmdline "$cmdline" >"$TMP/cl-$name.out" 2>"$TMP/cl-$name.err" </dev/null &
	local pid=$!
	if ! ctl_wait_socket "$sock" $pid || ! ctl_wait_file "$TMP/cl-$name.console" $pid; then
		fail "cross-layer-$name-vm-starts" "no socket: $(head -c 300 "$TMP/cl-$name.err")"
		kill -9 $pid 2>/dev/null
		wait $pid 2>/dev/null
		return 1
	fi
	before=$(wc -c <"$TMP/cl-$name.console")
	"$CL_KVMPROF" record --vm "$sock" -g -q -d $((60 * HANG)) ${cl_record_args:-} -o "$TMP/cl-$name.data" 2>"$TMP/cl-$name.rec.err"
	ctl_wait_exit $pid
	after=$(wc -c <"$TMP/cl-$name.console")
	cl_bytes=$((after - before))
	return 0
}

# cl_report NAME ARGS...: kvmprof report of that recording against the bundled guest's files.
cl_report() {
	local name=$1
	shift
	"$CL_KVMPROF" report -i "$TMP/cl-$name.data" --guest-root "$BUILD/guest" "$@" 2>>"$TMP/cl-$name.rep.err"
}

# The exits of one reason in the table's "by reason" section: their count.
cl_exits_by_reason() {
	awk -v r="$2" '/^by reason/ { on = 1; next } /^by guest function/ { on = 0 }
		on && $0 ~ ("  " r " *$") { print $1 }' "$1"
}

# --- console: write() -> sys_write -> console_write -> OUT 0x3f8, one exit per byte --------------
# The guest waits 1.5 s (the recording attaches meanwhile), then 1500 lines of 31 bytes.
if cl_record console "quiet start=/bin/exitloop:console:1500:$((1500 * HANG))"; then
	cl_report console -f folded >"$TMP/cl-console.folded"
	# One stack through all five layers: exitloop's own function and the libc wrapper, the guest
	# kernel's path, the exit's frame, the VMM's exit handler, and host kernel frames below it.
	stack='^\[guest-kernel\]_exitloop;exitloop`_start;exitloop`main;exitloop`console_log;exitloop`write;'
	stack+='kernel\.elf`trap_common;(kernel\.elf`[a-z_]*;)*kernel\.elf`console_write;\[exit:_io_out_0x3f8\];'
	stack+='libc\.so\.6`start_thread;kvmprof-vmm`vcpu_thread;kvmprof-vmm`vcpu_handle_exit;.*\[kernel\.kallsyms\]`'
	if grep -Eq "$stack" "$TMP/cl-console.folded"; then pass cross-layer-console-stack
	else fail cross-layer-console-stack "no folded stack matches $stack: $(grep -m3 'exit:' "$TMP/cl-console.folded" | cut -c1-400)"; fi
	# Every exit frame sits between the guest's frames and the host's, exactly once per stack.
	# (The host side may start anywhere: a leaf without frame pointers in a library cuts it short.)
	# (Above it a guest frame: the kernel's, exitloop's, or the guest's [unknown] where its RIP has no symbol.)
	if awk '/\[exit:/ { n = gsub(/\[exit:/, "&"); if (n != 1 || $0 !~ /^[^;]*;.*`[^;]*;\[exit:[^;]*\];[^;]*`/ ||
		$0 ~ /\[exit:[^;]*\];.*(kernel\.elf|exitloop)`/) { bad++; print > "/dev/stderr" } } END { exit bad > 0 }' \
		"$TMP/cl-console.folded" 2>"$TMP/cl-console.badframes"; then
		pass cross-layer-console-exit-frame-between-layers
	else fail cross-layer-console-exit-frame-between-layers "$(head -n 3 "$TMP/cl-console.badframes" | cut -c1-300)"; fi
	# The drill-down from the whole recording lands on that path: the process, its function, the
	# kernel's console_write.
	cl_report console --drill >"$TMP/cl-console.drill"
	if grep -q 'process       exitloop \[1\] (guest process)' "$TMP/cl-console.drill" ||
		! real_kvm_only cross-layer-console-drill-from-the-vm "L1's KVM under TCG takes more of the vCPU threads than the guest process: the heaviest path is the VMM's (42% against exitloop's 35% in one run), which the drill rightly follows"; then
	if grep -q 'process       exitloop \[1\] (guest process)' "$TMP/cl-console.drill" &&
		grep -q 'guest user    exitloop`console_log' "$TMP/cl-console.drill" &&
		grep -q 'guest kernel  kernel.elf`console_write' "$TMP/cl-console.drill" &&
		grep -q '^ultimate bottleneck: ' "$TMP/cl-console.drill"; then pass cross-layer-console-drill-from-the-vm
	else fail cross-layer-console-drill-from-the-vm "$(cat "$TMP/cl-console.drill")"; fi
	fi
	# From the exit's own frame the walk goes through the VMM and ends in the VMM or the host kernel.
	cl_report console --drill '[exit: io out 0x3f8]' >"$TMP/cl-console.drill-exit"
	if grep -Eq '^ +0 +100\.0% +0\.0% +VM exit +\[exit: io out 0x3f8\]$' "$TMP/cl-console.drill-exit" &&
		grep -Eq '^ultimate bottleneck: .*, (VMM user|host kernel): ' "$TMP/cl-console.drill-exit"; then
		pass cross-layer-console-drill-from-the-exit
	else fail cross-layer-console-drill-from-the-exit "$(cat "$TMP/cl-console.drill-exit")"; fi
	# Exactly one OUT exit per console byte the guest wrote while the recording ran (the recording
	# counts what it left out or lost: none of either here, the rings are far larger than this).
	cl_report console --exits >"$TMP/cl-console.exits"
	outs=$(cl_exits_by_reason "$TMP/cl-console.exits" 'io out 0x3f8')
	lost=$(sed -n 's/^Not here: \([0-9]*\) exit records .* in the rings (\([0-9]*\), .*/\1+\2/p' "$TMP/cl-console.exits")
	if [ -n "$outs" ] && [ "$outs" = "$cl_bytes" ] && [ "$outs" -ge 46500 ] && [ "${lost:-x}" = 0+0 ] &&
		grep -Eq '^ +[0-9]+ .*io out 0x3f8 +exitloop \[1\] +kernel\.elf`console_write$' "$TMP/cl-console.exits"; then
		pass cross-layer-console-exit-count
	else fail cross-layer-console-exit-count "${outs:-no} io-out 0x3f8 exits in the table, $cl_bytes console bytes, lost ${lost:-?}: $(head -c 600 "$TMP/cl-console.exits")"; fi
	# The text report says how many host samples the exits took.
	if cl_report console | grep -Eq '^VM exits: [0-9]+ recorded; [1-9][0-9]* of [0-9]+ host samples fell in their handling'; then
		pass cross-layer-console-text-summary
	else fail cross-layer-console-text-summary "$(cl_report console | head -8)"; fi
	# The SVG colours exit frames and names the layer in its legend; --no-cross-layer keeps host stacks.
	if cl_report console -f svg -o "$TMP/cl-console.svg" && grep -q '>VM exit</text>' "$TMP/cl-console.svg" &&
		grep -q 'exit: io out 0x3f8' "$TMP/cl-console.svg"; then pass cross-layer-console-svg-layer
	else fail cross-layer-console-svg-layer "$(grep -c 'exit:' "$TMP/cl-console.svg" 2>/dev/null) exit frames in the SVG"; fi
	if ! cl_report console -f folded --no-cross-layer | grep -q 'exit:'; then pass cross-layer-off-keeps-host-stacks
	else fail cross-layer-off-keeps-host-stacks "exit frames with --no-cross-layer"; fi
fi

# --- msr: the guest kernel reads the first PMU counter for exitloop, one RDMSR exit each -------
if cl_record msr "quiet pmutest start=/bin/exitloop:msr:40000:$((1500 * HANG))"; then
	cl_report msr --exits >"$TMP/cl-msr.exits"
	msr=$(grep -o 'MSR 0x[0-9a-f]*' "$TMP/cl-msr.console" | head -1 | cut -d' ' -f2)
	reads=$(cl_exits_by_reason "$TMP/cl-msr.exits" "msr read ${msr:-none}")
	if grep -q "exitloop: msr 40000 reads of MSR $msr" "$TMP/cl-msr.console" && [ "$reads" = 40000 ] &&
		grep -Eq "^ +40000 .*msr read $msr +exitloop \[1\] +kernel\.elf\`" "$TMP/cl-msr.exits"; then
		pass cross-layer-msr-exit-count
	else fail cross-layer-msr-exit-count "${reads:-no} reads of ${msr:-?} in the table: $(tail -c 300 "$TMP/cl-msr.console") $(head -c 500 "$TMP/cl-msr.exits")"; fi
	# Host samples inside those exits go on into exitloop's read_pmc_msr through the kernel's
	# system call; the VMM's vCPU thread is below the exit frame.
	stack='^\[guest-kernel\]_exitloop;exitloop`_start;exitloop`main;exitloop`read_pmc_msr;exitloop`pmu_test_rdmsr;'
	stack+='kernel\.elf`trap_common;(kernel\.elf`[a-z_]*;)*\[exit:_msr_read_'"$msr"'\];libc\.so\.6`start_thread;kvmprof-vmm`vcpu_thread;'
	if cl_report msr -f folded | grep -Eq "$stack"; then pass cross-layer-msr-stack
	else fail cross-layer-msr-stack "no folded stack matches $stack: $(cl_report msr -f folded | grep -m3 'exit:' | cut -c1-400)"; fi
fi

# --- hostile: badstack's RBP and RSP point anywhere while it writes to the console; its exits ---
# --- still have their frame --------------------------------------------------------------------
if cl_record badstack "quiet start=/bin/badstack:2500:write"; then
	cl_report badstack -f folded >"$TMP/cl-badstack.folded"
	cl_report badstack --exits >"$TMP/cl-badstack.exits"
	rep=$?
	# Its console exits are counted for badstack, host samples fell in them, and every joined host
	# sample's stack has exactly one exit frame, whatever the guest's stack walk found.
	if [ $rep = 0 ] && grep -Eq '^ +[0-9]+ .*io out 0x3f8 +badstack \[1\] +kernel\.elf`console_write$' "$TMP/cl-badstack.exits" &&
		grep -Eq '^\[guest-kernel\]_badstack;.*kernel\.elf`console_write;\[exit:_io_out_0x3f8\];' "$TMP/cl-badstack.folded" &&
		awk '/\[exit:/ { if (gsub(/\[exit:/, "&") != 1) bad++ } END { exit bad > 0 }' "$TMP/cl-badstack.folded" &&
		! grep -q 'ERROR: AddressSanitizer\|runtime error' "$TMP/cl-badstack.rep.err"; then
		pass cross-layer-hostile-stack-keeps-exit-frame
	else fail cross-layer-hostile-stack-keeps-exit-frame "report rc=$rep: $(head -c 400 "$TMP/cl-badstack.exits") $(head -c 300 "$TMP/cl-badstack.rep.err")"; fi
fi

# --- record --no-exits: no exit records, and the report says so --------------------------------
if cl_record_args=--no-exits cl_record noexits "quiet start=/bin/exitloop:console:200:1000"; then
	if cl_report noexits --exits | grep -q '^kvmprof exit cost: 0 VM exits' && ! cl_report noexits -f folded | grep -q 'exit:' &&
		cl_report noexits | grep -q '^guest kernel'; then pass cross-layer-record-no-exits
	else fail cross-layer-record-no-exits "$(cl_report noexits --exits | head -3)"; fi
fi
