#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Nested Linux-guest test: boot Linux (L2) under kvmprof-vmm inside a
# QEMU-TCG guest (L1) that has its own, real (non-PVM) KVM.
#
#   host (PVM KVM) ── qemu-system-x86_64 -accel tcg -cpu max,vendor=AuthenticAMD
#     L1: Debian cloud kernel; /init loads irqbypass, kvm, kvm-amd, runs
#         kvm-check, then kvmprof-vmm-static twice (bzImage, PVH vmlinux)
#       L2: the same Debian kernel; /init prints KVMPROF-L2-OK cpus=N and
#           powers off with a 32-bit OUT to port 0xf4 (tests/nested/l2-exit.c)
#       agent case: L2 also runs kvmprof-agent record/report/export on a
#           workload (hotloop.c); the export goes through the VMM's COM2
#           (--agent-channel FILE in L1), which L1 copies to its own ttyS1,
#           QEMU's second serial port, a file on the host (agent-check.c)
#
# Usage: tests/nested/run.sh [--l1-only] [-v]
#   --l1-only  no VMM: prove L1 boots, the modules load and /dev/kvm works
#   -v         stream L1's serial console while it runs
# Environment: BUILD (build), VMM ($BUILD/kvmprof-vmm-static), CPUS (2),
#   AGENT_CPUS (the agent case's L2 CPUs, 1: see tests/nested/README.md), L2_MEM (256M), QEMU_TIMEOUT (seconds for the whole QEMU run, 450),
#   L2_TIMEOUT (seconds per VMM run inside L1, 180), L2_APPEND (extra L2
#   kernel parameters), L1_APPEND (extra L1 kernel parameters), CASES
#   ("bzimage pvh agent"; agent is skipped if AGENT is missing), AGENT
#   ($BUILD/kvmprof-agent, static), HOTLOOP_MS (CPU time of the agent
#   case's workload, 1500), EXPORT_TIMEOUT (seconds `kvmprof-agent export`
#   may take in L2, 600, a hang guard: it took 73 s here beside one busy L1, 115 s beside one and a build), EXPORT_STALL (seconds
#   of no byte sent on L2's ttyS1 before the export counts as hung, 120); the agent case's
#   VMM run gets L2_TIMEOUT plus EXPORT_TIMEOUT, and QEMU_TIMEOUT defaults to 450 plus
#   EXPORT_TIMEOUT), L2_FLAVOUR (cloud-amd64, or amd64: Debian's generic
#   kernel as L2, which finds CPUs through an MP table; the cloud kernel has
#   CONFIG_X86_MPPARSE unset and needs an ACPI MADT to see more than 1 CPU),
#   KVMPROF ($BUILD/kvmprof-static: system-wide profiling of L2 from L1 in
#   the agent case; skipped without it), SYSPROF_SECS (its --duration, 3),
#   SYSPROF_MS (CPU time of the workload it profiles, 8000), VPMU (the
#   VMM's vPMU options for every L2 run, --vpmu=off), VMM_ENV (environment
#   assignments for the VMM in L1, e.g. KVMPROF_DBG_X=1), PERF (/usr/bin/perf,
#   the perf case's: Linux's perf with the shared libraries it links),
#   L2_PERF_SCRIPT (the perf case's script in L2, tests/nested/l2-perf.sh),
#   L2_PERF_EXTRA (files put into the perf case's /bin for such a script),
#   PERF_N1, PERF_N2 (its countloop iteration counts, 1000000 3000000).
# Prints one PASS/FAIL/SKIP line per case and "N passed, N failed, N skipped"
# (tests/lib/harness.sh); the full L1 log is $BUILD/nested/l1.log. The
# helper programs are built by make (make test-nested).
set -u

ME=nested
BUILD=${BUILD:-build}
VMM=${VMM:-$BUILD/kvmprof-vmm-static}
CPUS=${CPUS:-2}
AGENT_CPUS=${AGENT_CPUS:-1}
L2_MEM=${L2_MEM:-256M}
L2_TIMEOUT=${L2_TIMEOUT:-180}
L2_APPEND=${L2_APPEND:-}
L1_APPEND=${L1_APPEND:-}
CASES=${CASES:-bzimage pvh agent}
AGENT=${AGENT:-$BUILD/kvmprof-agent}
HOTLOOP_MS=${HOTLOOP_MS:-1500}
EXPORT_TIMEOUT=${EXPORT_TIMEOUT:-600}
EXPORT_STALL=${EXPORT_STALL:-120}
L2_FLAVOUR=${L2_FLAVOUR:-cloud-amd64}
KVMPROF=${KVMPROF:-$BUILD/kvmprof-static}
SYSPROF_SECS=${SYSPROF_SECS:-3}
SYSPROF_MS=${SYSPROF_MS:-8000}
VPMU=${VPMU:---vpmu=off}
VMM_ENV=${VMM_ENV:-}
PERF=${PERF:-/usr/bin/perf}
PERF_N1=${PERF_N1:-1000000}
PERF_N2=${PERF_N2:-3000000}
L1_ONLY=0
VERBOSE=${V:-0}
for a in "$@"; do
	case $a in
		--l1-only) L1_ONLY=1 ;;
		-v) VERBOSE=1 ;;
		-h|--help) sed -n '3,/^set -u/s/^# \{0,1\}//p' "$0" | grep -v '^set -u'; exit 0 ;;
		*) echo "$ME: unknown argument '$a' (try --help)" >&2; exit 2 ;;
	esac
done
[ "$L1_ONLY" = 1 ] && CASES=

SRC=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$SRC/../.." && pwd)
L2_PERF_SCRIPT=${L2_PERF_SCRIPT:-$SRC/l2-perf.sh}
L2_PERF_EXTRA=${L2_PERF_EXTRA:-}
# shellcheck source=tests/lib/harness.sh
. "$TOP/tests/lib/harness.sh"
# A missing prerequisite or a failed setup step ends the run as one counted FAIL.
die() { fail nested-setup "$*"; exit 1; }
cd "$TOP" || die "cannot cd to $TOP"
OUT=$BUILD/nested
mkdir -p "$OUT" || die "cannot create $OUT"

# --- prerequisites ------------------------------------------------------------
QEMU=${QEMU:-qemu-system-x86_64}
command -v "$QEMU" >/dev/null 2>&1 || die "$QEMU not found (apt-get install qemu-system-x86, or make deps)"
command -v cpio >/dev/null 2>&1 || die "cpio not found (apt-get install cpio)"
command -v timeout >/dev/null 2>&1 || die "timeout not found (coreutils)"
BUSYBOX=${BUSYBOX:-/bin/busybox}
[ -x "$BUSYBOX" ] || die "busybox not found at $BUSYBOX (apt-get install busybox-static)"
readelf -l "$BUSYBOX" 2>/dev/null | grep -q 'INTERP' &&
	die "$BUSYBOX is dynamically linked; install busybox-static"
if [ "$L1_ONLY" = 0 ]; then
	[ -x "$VMM" ] || die "VMM binary $VMM not found (make $BUILD/kvmprof-vmm-static), or run with --l1-only"
	readelf -l "$VMM" 2>/dev/null | grep -q 'INTERP' &&
		die "$VMM is dynamically linked; L1 has no libc, it must be static"
fi
# The agent case needs the static agent; without it the case is skipped (and
# said so), not failed: the boot cases do not depend on it.
AGENT_CASE=0 AGENT_SKIP=
case " $CASES " in *" agent "*) AGENT_CASE=1 ;; esac
if [ "$AGENT_CASE" = 1 ]; then
	if [ ! -x "$AGENT" ]; then
		AGENT_SKIP="$AGENT not built (make $AGENT)"
	elif readelf -l "$AGENT" 2>/dev/null | grep -q 'INTERP'; then
		AGENT_SKIP="$AGENT is dynamically linked; L2's initramfs has no libc"
	fi
	if [ -n "$AGENT_SKIP" ]; then
		AGENT_CASE=0
		CASES=$(echo " $CASES " | sed 's/ agent / /g; s/^ *//; s/ *$//')
	fi
fi
# The perf case: Linux's own perf in L2, dynamically linked, its libraries
# copied beside it (Debian's linux-perf; make deps installs it).
PERF_CASE=0
case " $CASES " in *" perf "*) PERF_CASE=1 ;; esac
if [ "$PERF_CASE" = 1 ]; then
	[ -x "$PERF" ] || die "perf not found at $PERF (apt-get install linux-perf)"
	[ -r "$L2_PERF_SCRIPT" ] || die "perf case script $L2_PERF_SCRIPT not found"
fi
# System-wide profiling of L2 from L1 rides on the agent case (its export
# carries the task layout and the maps): it needs the static kvmprof.
SYSPROF=0 SYSPROF_SKIP=
if [ "$AGENT_CASE" = 1 ]; then
	if [ ! -x "$KVMPROF" ]; then
		SYSPROF_SKIP="$KVMPROF not built (make $KVMPROF)"
	elif readelf -l "$KVMPROF" 2>/dev/null | grep -q 'INTERP'; then
		SYSPROF_SKIP="$KVMPROF is dynamically linked; L1's initramfs has no libc"
	else
		SYSPROF=1
	fi
fi
# The export crawls through the emulated UART (one VM exit per byte, which
# costs ~95 us in this nested stack), so the agent case gets more time.
# Every limit here is a hang guard with room for a host slowed down by
# others: the whole run took 200-253 s beside a busy L1 here, and a loaded CI
# host ran it 2.7 times slower (an agent case of 282 s: the old limits of
# 60 s per VMM run, 180 s for the export and 390 s in all killed it).
if [ "$AGENT_CASE" = 1 ]; then
	QEMU_TIMEOUT=${QEMU_TIMEOUT:-$((450 + EXPORT_TIMEOUT + 40 * SYSPROF))}
else
	QEMU_TIMEOUT=${QEMU_TIMEOUT:-450}
fi

"$TOP/tests/debian-kernel.sh" "$BUILD" || die "tests/debian-kernel.sh failed"
DEB=$BUILD/debian
L2DEB=$DEB
if [ "$L2_FLAVOUR" != cloud-amd64 ]; then
	DEBIAN_KERNEL_FLAVOUR=$L2_FLAVOUR "$TOP/tests/debian-kernel.sh" "$BUILD" ||
		die "tests/debian-kernel.sh failed for L2_FLAVOUR=$L2_FLAVOUR"
	L2DEB=$BUILD/debian-$L2_FLAVOUR
fi

# --- helpers, built by make (tests/nested/nested.mk) -------------------------------
# l2-exit and kvm-check (static), and for the agent case hotloop (static) and agent-check.
for p in l2-exit kvm-check $([ "$AGENT_CASE" = 1 ] && echo hotloop agent-check) $([ "$PERF_CASE" = 1 ] && echo countloop pmuself); do
	[ -x "$OUT/$p" ] || die "$OUT/$p not built (make $OUT/$p; make test-nested builds it)"
done

# --- L2 initramfs ---------------------------------------------------------------
# /init: mount, print the marker through the tty and through /dev/kmsg (a
# printk reaches the console by polling even if UART interrupts are broken),
# then power off via the exit port: status 0 if it sees kvmprof_cpus CPUs
# (a kernel parameter the kernel hands to init as an environment variable),
# 1 otherwise.
L2=$OUT/l2-root
rm -rf "$L2" && mkdir -p "$L2/bin" "$L2/proc" "$L2/sys" "$L2/dev" || die "cannot create $L2"
cp "$BUSYBOX" "$L2/bin/busybox" && ln -s busybox "$L2/bin/sh" &&
cp "$OUT/l2-exit" "$L2/bin/l2-exit" || die "cannot populate $L2"
cat > "$L2/init" <<'EOF'
#!/bin/sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
n=$(grep -c '^processor' /proc/cpuinfo)
online=$(cat /sys/devices/system/cpu/online 2>/dev/null)
up=$(cut -d' ' -f1 /proc/uptime)
want=${kvmprof_cpus:-$n}
status=0
[ "$n" = "$want" ] || status=1
msg="KVMPROF-L2-OK cpus=$n online=$online want=$want uptime=$up kernel=$(uname -r)"
echo "<2>$msg via=kmsg" > /dev/kmsg 2>/dev/null
echo "$msg via=tty"
# Give the UART a moment to drain the tty (its interrupts move the bytes),
# then log what /proc/interrupts says about it, through printk.
sleep 1
{ cat /proc/consoles; grep -E 'ttyS|IO-APIC|XT-PIC' /proc/interrupts; grep -E '^[01]:' /proc/tty/driver/serial
  echo "init-fds: $(readlink /proc/1/fd/0) $(readlink /proc/1/fd/1) $(readlink /proc/1/fd/2)"; } 2>&1 | while read -r l; do
	echo "<2>KVMPROF-L2-IRQ $l" > /dev/kmsg
done
# The agent case (kvmprof_case=agent on the command line, only in the
# initramfs that carries the agent): profile the workload, print the report
# between markers for the host to check, export to ttyS1 (the agent
# channel). Each step's exit code and uptimes go into its end marker.
if [ "${kvmprof_case:-}" = agent ]; then
	t0=$(cut -d' ' -f1 /proc/uptime)
	echo "KVMPROF-L2-AGENT-RECORD-BEGIN uptime=$t0"
	/bin/kvmprof-agent record -o /tmp/k.data -- /bin/hotloop ${kvmprof_hotloop_ms:-1500}
	rc=$?
	[ $rc = 0 ] || status=1
	echo "KVMPROF-L2-AGENT-RECORD-END rc=$rc start=$t0 end=$(cut -d' ' -f1 /proc/uptime) bytes=$(wc -c < /tmp/k.data)"
	echo "KVMPROF-L2-AGENT-REPORT-BEGIN"
	/bin/kvmprof-agent report -i /tmp/k.data
	rc=$?
	[ $rc = 0 ] || status=1
	echo "KVMPROF-L2-AGENT-REPORT-END rc=$rc"
	# System-wide profiling from L1 (kvmprof_sysprof_ms): a workload that
	# exists, stopped, while the export runs (so its maps go out with it and
	# it takes no CPU from the UART), and runs once the export is done, when
	# L1 profiles the VM. Stopped only once it has exec'd, or the export
	# would carry the shell's maps under its pid.
	hl=
	if [ -n "${kvmprof_sysprof_ms:-}" ]; then
		/bin/hotloop $kvmprof_sysprof_ms > /tmp/hotloop.out 2>&1 &
		hl=$!
		i=0
		while [ "$(readlink /proc/$hl/exe)" != /bin/hotloop ] && [ $i -lt 200 ]; do sleep 0.01; i=$((i + 1)); done
		kill -STOP $hl
		echo "KVMPROF-L2-SYSPROF-WORKLOAD pid=$hl exe=$(readlink /proc/$hl/exe) stopped for the export"
	fi
	t0=$(cut -d' ' -f1 /proc/uptime)
	echo "KVMPROF-L2-AGENT-EXPORT-BEGIN uptime=$t0"
	# Hang guards that slowness cannot trip (a loaded CI host ran this
	# stack 2.7 times slower than an idle one): the export is killed when
	# ttyS1 has sent nothing for kvmprof_export_stall seconds (its longest
	# silence, reading and compressing kallsyms before the first byte, is
	# a few seconds), or after kvmprof_export_timeout in all; either says
	# rc=124 and why=.
	/bin/kvmprof-agent export &
	ep=$!
	last= guard=
	s0=$(cut -d. -f1 /proc/uptime)
	moved=$s0
	while kill -0 $ep 2>/dev/null; do
		sleep 1
		now=$(cut -d. -f1 /proc/uptime)
		tx=$(sed -n 's/^1:.* tx:\([0-9]*\).*/\1/p' /proc/tty/driver/serial)
		[ "$tx" = "$last" ] || last=$tx moved=$now
		if [ $((now - moved)) -ge ${kvmprof_export_stall:-120} ]; then guard="stalled: ttyS1 sent nothing for $((now - moved))s"; break; fi
		if [ $((now - s0)) -ge ${kvmprof_export_timeout:-600} ]; then guard="ran $((now - s0))s"; break; fi
	done
	[ -n "$guard" ] && kill -9 $ep
	wait $ep
	rc=$?
	[ -n "$guard" ] && rc=124
	[ $rc = 0 ] || status=1
	# tx: what ttyS1's UART sent so far, the rate's numerator.
	echo "KVMPROF-L2-AGENT-EXPORT-END rc=$rc start=$t0 end=$(cut -d' ' -f1 /proc/uptime) limit=${kvmprof_export_timeout:-600} $(grep -o '^1:.* tx:[0-9]*' /proc/tty/driver/serial | sed 's/.* tx:/tx=/')${guard:+ why=$guard}"
	if [ -n "$hl" ]; then
		t0=$(cut -d' ' -f1 /proc/uptime)
		echo "KVMPROF-L2-SYSPROF-RUN-BEGIN pid=$hl uptime=$t0"
		kill -CONT $hl
		# Meanwhile, lines to the serial console: each byte an OUT to port
		# 0x3f8 from the 8250 driver, for the cross-layer stacks (issue 14).
		( n=0; while kill -0 $hl 2>/dev/null; do
			echo "KVMPROF-L2-SERIAL-LINE $n ................................"; n=$((n + 1)); sleep 0.05
		  done > /dev/ttyS0; echo "KVMPROF-L2-SERIAL-LINES $n" ) &
		sl=$!
		wait $hl
		rc=$?
		wait $sl
		echo "KVMPROF-L2-SYSPROF-RUN-END rc=$rc pid=$hl start=$t0 end=$(cut -d' ' -f1 /proc/uptime) $(tail -n 1 /tmp/hotloop.out)"
	fi
fi
# The perf case (kvmprof_case=perf): Linux's perf through the vPMU.
if [ "${kvmprof_case:-}" = perf ]; then
	echo "KVMPROF-L2-PERF-BEGIN uptime=$(cut -d' ' -f1 /proc/uptime)"
	/bin/l2-perf.sh
	rc=$?
	[ $rc = 0 ] || status=1
	echo "KVMPROF-L2-PERF-END rc=$rc uptime=$(cut -d' ' -f1 /proc/uptime)"
fi
echo "KVMPROF-L2-EXIT status=$status via=outl32"
/bin/l2-exit $status 4
echo "KVMPROF-L2-EXIT status=$status via=outb"
/bin/l2-exit $status 1
echo "KVMPROF-L2-EXIT via=poweroff"
poweroff -f
sleep 5
echo o > /proc/sysrq-trigger
EOF
chmod +x "$L2/init"
(cd "$L2" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) > "$OUT/l2.cpio" ||
	die "cannot write $OUT/l2.cpio"
# The agent case's image: the same tree plus the agent and the workload, in
# its own archive so the boot cases stay as small as they were.
if [ "$AGENT_CASE" = 1 ]; then
	mkdir -p "$L2/tmp" && cp "$AGENT" "$L2/bin/kvmprof-agent" && cp "$OUT/hotloop" "$L2/bin/hotloop" ||
		die "cannot add the agent to $L2"
	(cd "$L2" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) > "$OUT/l2-agent.cpio" ||
		die "cannot write $OUT/l2-agent.cpio"
fi

# The perf case's image: the base tree plus perf, every shared library it
# links (at the paths ldd names) and the counted workload.
if [ "$PERF_CASE" = 1 ]; then
	P=$OUT/l2-perf-root
	rm -rf "$P" && cp -a "$L2" "$P" && mkdir -p "$P/tmp" "$P/usr/bin" &&
	cp "$PERF" "$P/usr/bin/perf" && ln -s ../usr/bin/perf "$P/bin/perf" &&
	cp "$OUT/countloop" "$P/bin/countloop" && cp "$OUT/pmuself" "$P/bin/pmuself" &&
	cp "$L2_PERF_SCRIPT" "$P/bin/l2-perf.sh" &&
	chmod +x "$P/bin/l2-perf.sh" || die "cannot populate $P"
	for f in $L2_PERF_EXTRA; do
		cp "$f" "$P/bin/" || die "cannot add $f (L2_PERF_EXTRA) to $P"
	done
	libs=$(ldd "$PERF" | sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) .*/\1/p')
	[ -n "$libs" ] || die "ldd found no libraries for $PERF"
	for l in $libs; do
		mkdir -p "$P$(dirname "$l")" && cp -L "$l" "$P$l" || die "cannot copy $l for perf"
	done
	rm -f "$P/init.tmp"
	(cd "$P" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) > "$OUT/l2-perf.cpio" ||
		die "cannot write $OUT/l2-perf.cpio"
fi

# --- L1 initramfs ---------------------------------------------------------------
L2_CMDLINE="console=ttyS0 earlyprintk=serial,ttyS0,115200 panic=-1 reboot=t kvmprof_cpus=$CPUS $L2_APPEND"
L1=$OUT/l1-root
rm -rf "$L1" && mkdir -p "$L1/bin" "$L1/proc" "$L1/sys" "$L1/dev" "$L1/tmp" "$L1/lib/modules" "$L1/l2" ||
	die "cannot create $L1"
cp "$BUSYBOX" "$L1/bin/busybox" && ln -s busybox "$L1/bin/sh" &&
cp "$OUT/kvm-check" "$L1/bin/kvm-check" &&
cp "$DEB/modules/irqbypass.ko" "$DEB/modules/kvm.ko" "$DEB/modules/kvm-amd.ko" "$L1/lib/modules/" &&
cp "$OUT/l2.cpio" "$L1/l2/initrd.cpio" || die "cannot populate $L1"
if [ "$AGENT_CASE" = 1 ]; then
	cp "$OUT/l2-agent.cpio" "$L1/l2/initrd-agent.cpio" || die "cannot populate $L1"
fi
if [ "$PERF_CASE" = 1 ]; then
	cp "$OUT/l2-perf.cpio" "$L1/l2/initrd-perf.cpio" || die "cannot populate $L1"
fi
# The big files go in as hard links when the file system allows it.
ln -f "$L2DEB/vmlinuz" "$L1/l2/bzImage" 2>/dev/null || cp "$L2DEB/vmlinuz" "$L1/l2/bzImage" || die "cannot copy vmlinuz"
ln -f "$L2DEB/vmlinux" "$L1/l2/vmlinux" 2>/dev/null || cp "$L2DEB/vmlinux" "$L1/l2/vmlinux" || die "cannot copy vmlinux"
if [ "$L1_ONLY" = 0 ]; then
	cp "$VMM" "$L1/bin/kvmprof-vmm" || die "cannot copy $VMM"
fi
if [ "$SYSPROF" = 1 ]; then
	cp "$KVMPROF" "$L1/bin/kvmprof" || die "cannot copy $KVMPROF"
fi
{
	cat <<EOF
#!/bin/sh
CASES="$CASES"
CPUS=$CPUS
AGENT_CPUS=$AGENT_CPUS
HOTLOOP_MS=$HOTLOOP_MS
EXPORT_TIMEOUT=$EXPORT_TIMEOUT
L2_MEM=$L2_MEM
L2_TIMEOUT=$L2_TIMEOUT
L2_CMDLINE="$L2_CMDLINE"
SYSPROF=$SYSPROF
SYSPROF_SECS=$SYSPROF_SECS
SYSPROF_MS=$SYSPROF_MS
VPMU="$VPMU"
VMM_ENV="$VMM_ENV"
PERF_N1=$PERF_N1
PERF_N2=$PERF_N2
EOF
	cat <<'EOF'
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
echo "KVMPROF-L1-INIT uptime=$(cut -d' ' -f1 /proc/uptime) kernel=$(uname -r) cpus=$(grep -c '^processor' /proc/cpuinfo) svm=$(grep -c -w svm /proc/cpuinfo)"
ok=1
for m in irqbypass kvm kvm-amd; do
	if ! insmod /lib/modules/$m.ko; then echo "KVMPROF-L1-INSMOD-FAIL $m"; ok=0; fi
done
[ -c /dev/kvm ] || mknod /dev/kvm c 10 232
if [ $ok = 1 ] && kvm-check --hold; then
	echo "KVMPROF-L1-KVM ok uptime=$(cut -d' ' -f1 /proc/uptime)"
else
	echo "KVMPROF-L1-KVM fail"
	lsmod; ls -l /dev/kvm; dmesg | grep -i -E 'kvm|svm' | tail -20
fi
# The agent case's system-wide profile: once L2's export is whole in the
# agent channel (its last 48 bytes are the END record: type 10, size 48),
# the workload runs in L2 and kvmprof samples the VM through its control
# socket, the task layout taken from that export.
sysprof_record() {
	whole=0
	while kill -0 $vpid 2>/dev/null; do
		if [ -s /tmp/agent-channel ] &&
		   [ "$(tail -c 48 /tmp/agent-channel | od -A n -t x1 | tr -d ' \n' | cut -c1-16)" = 0a00000030000000 ]; then
			whole=1
			break
		fi
		# Seldom: every check forks a few processes in L1, and L1's IPIs and
		# TLB work exit the L2 vCPUs that are busy with the export; with a
		# 0.5 s poll L2 triple-faulted mid-export in 3 of 5 runs (TCG's
		# nested SVM).
		sleep 3
	done
	if [ $whole = 0 ]; then
		echo "KVMPROF-L1-SYSPROF-RECORD rc=none: the VMM exited before the export was whole"
		return
	fi
	rt0=$(cut -d' ' -f1 /proc/uptime)
	kvmprof record --vm /tmp/vm.sock --guest-export /tmp/agent-channel --duration $SYSPROF_SECS -q \
		-o /tmp/sysprof.data > /tmp/sysprof.err 2>&1
	src=$?
	echo "KVMPROF-L1-SYSPROF-RECORD rc=$src start=$rt0 end=$(cut -d' ' -f1 /proc/uptime) bytes=$(wc -c < /tmp/sysprof.data 2>/dev/null || echo 0)"
	sed 's/^/KVMPROF-L1-SYSPROF-SAYS /' /tmp/sysprof.err
}
for c in $CASES; do
	initrd=/l2/initrd.cpio cmdline=$L2_CMDLINE limit=$L2_TIMEOUT ncpus=$CPUS
	set --
	case $c in
		bzimage) k=/l2/bzImage ;;
		pvh) k=/l2/vmlinux ;;
		agent)
			# COM2 of the VMM goes to a file: what `kvmprof-agent export` sends.
			# During the export the 8250's transmit interrupt keeps one L2 CPU
			# in IRQ context (the VMM's UART is always ready for the next
			# byte), so RCU reports a stall after 21 s and sends that CPU an
			# NMI; an L1 once died silently right then (TCG's nested SVM).
			# The stall report says nothing about the agent: suppress it.
			# One L2 CPU (AGENT_CPUS): with two, the export's ~420000 OUTs,
			# the UART's interrupts and the IPIs between L2's vCPUs cross
			# L1's CPUs, and TCG's nested SVM broke under them: L2 triple-faulted, or L1
			# took an interrupt between a #VMEXIT and the VMLOAD of its own
			# GS base and overflowed its stack in exc_page_fault (2 of 2 runs
			# failed so, 3 of 3 passed with one CPU; the boot cases keep SMP).
			k=/l2/bzImage initrd=/l2/initrd-agent.cpio ncpus=$AGENT_CPUS
			cmdline="$(echo "$cmdline" | sed "s/kvmprof_cpus=[0-9]*/kvmprof_cpus=$AGENT_CPUS/")"
			cmdline="$cmdline rcupdate.rcu_cpu_stall_suppress=1 kvmprof_case=agent kvmprof_hotloop_ms=$HOTLOOP_MS kvmprof_export_timeout=$EXPORT_TIMEOUT kvmprof_export_stall=$EXPORT_STALL"
			limit=$((L2_TIMEOUT + EXPORT_TIMEOUT))
			rm -f /tmp/agent-channel /tmp/vm.sock /tmp/sysprof.data
			set -- --agent-channel /tmp/agent-channel
			if [ "$SYSPROF" = 1 ]; then
				cmdline="$cmdline kvmprof_sysprof_ms=$SYSPROF_MS"
				limit=$((limit + 30))
				set -- "$@" --control /tmp/vm.sock
			fi ;;
		perf)
			k=/l2/bzImage initrd=/l2/initrd-perf.cpio
			cmdline="$cmdline kvmprof_case=perf kvmprof_perf_n1=$PERF_N1 kvmprof_perf_n2=$PERF_N2" ;;
		*) echo "KVMPROF-L1-UNKNOWN-CASE $c"; continue ;;
	esac
	t0=$(cut -d' ' -f1 /proc/uptime)
	echo "KVMPROF-L1-BEGIN case=$c uptime=$t0"
	# VPMU: the vPMU options (--vpmu=off by default: L1 has no hardware PMU,
	# and L2 Linux is tested without one, the agent's cpu-clock fallback).
	# The VMM's own --timeout stops the guest and still prints what it
	# prints at its end (--vpmu-stats); timeout(1) kills it 60 s later if not.
	set -- --timeout $limit "$@"
	echo "+ $VMM_ENV kvmprof-vmm --kernel $k --initrd $initrd --cpus $ncpus $VPMU --mem $L2_MEM $* --cmdline \"$cmdline\""
	if [ $c = agent ] && [ "$SYSPROF" = 1 ]; then
		env $VMM_ENV timeout -s KILL $((limit + 60)) kvmprof-vmm --kernel $k --initrd $initrd \
			--cpus $ncpus $VPMU --mem $L2_MEM "$@" --cmdline "$cmdline" < /dev/null &
		vpid=$!
		sysprof_record
		wait $vpid
		rc=$?
	else
		env $VMM_ENV timeout -s KILL $((limit + 60)) kvmprof-vmm --kernel $k --initrd $initrd \
			--cpus $ncpus $VPMU --mem $L2_MEM "$@" --cmdline "$cmdline" < /dev/null
		rc=$?
	fi
	t1=$(cut -d' ' -f1 /proc/uptime)
	echo
	echo "KVMPROF-L1-END case=$c rc=$rc start=$t0 end=$t1"
	if [ $c = agent ]; then
		# Hand the agent channel's bytes to the host unchanged: L1's ttyS1 is
		# QEMU's second serial port, a file on the host. Raw mode, so the tty
		# layer neither adds CRs nor eats control bytes; the redirection's
		# close waits until the UART has sent everything (closing_wait).
		n=$(wc -c < /tmp/agent-channel 2>/dev/null || echo 0)
		t0=$(cut -d' ' -f1 /proc/uptime)
		if stty -F /dev/ttyS1 raw -echo -ixon -ixoff -crtscts 2>&1 && cat /tmp/agent-channel > /dev/ttyS1; then
			how=ok
		else
			how=failed
		fi
		echo "KVMPROF-L1-AGENT-COPY $how bytes=$n start=$t0 end=$(cut -d' ' -f1 /proc/uptime)"
		# The system-wide recording follows on the same port; the host
		# splits the two by this byte count.
		if [ -s /tmp/sysprof.data ]; then
			m=$(wc -c < /tmp/sysprof.data)
			t0=$(cut -d' ' -f1 /proc/uptime)
			if cat /tmp/sysprof.data > /dev/ttyS1; then how=ok; else how=failed; fi
			echo "KVMPROF-L1-SYSPROF-COPY $how bytes=$m start=$t0 end=$(cut -d' ' -f1 /proc/uptime)"
		fi
	fi
done
echo "KVMPROF-L1-DONE uptime=$(cut -d' ' -f1 /proc/uptime)"
poweroff -f
sleep 2
echo o > /proc/sysrq-trigger
sleep 10
EOF
} > "$L1/init"
chmod +x "$L1/init"
(cd "$L1" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) > "$OUT/l1.cpio" ||
	die "cannot write $OUT/l1.cpio"

# --- boot L1 ----------------------------------------------------------------------
LOG=$OUT/l1.log
L1_CMDLINE="console=ttyS0 panic=-1 mitigations=off no_timer_check $L1_APPEND"
echo "$ME: L2 kernel $(cat "$L2DEB/version"), L2 command line: $L2_CMDLINE"
echo "$ME: booting L1 under TCG (timeout ${QEMU_TIMEOUT}s, log $LOG)"
start=$(date +%s.%N)
# L1's ttyS0 (console, monitor) is stdio; its ttyS1 writes to a file, where
# the agent case's exported stream arrives.
CHANNEL=$OUT/agent-channel.kp
rm -f "$CHANNEL"
set -- timeout -k 5 "$QEMU_TIMEOUT" "$QEMU" -accel tcg -cpu max,vendor=AuthenticAMD \
	-smp 2 -m 2G -kernel "$DEB/vmlinuz" -initrd "$OUT/l1.cpio" \
	-append "$L1_CMDLINE" -nographic -serial mon:stdio -serial "file:$CHANNEL" -no-reboot
: > "$LOG"
"$@" < /dev/null > "$LOG" 2>&1 &
qpid=$!
trap 'kill $qpid 2>/dev/null' EXIT
trap 'kill $qpid 2>/dev/null; exit 130' INT TERM
[ "$VERBOSE" = 1 ] && tail -n +1 -f --pid=$qpid "$LOG" &
# If L1 reports it is done but does not power off (a wedged CPU), stop QEMU.
done_at=
while kill -0 $qpid 2>/dev/null; do
	if [ -z "$done_at" ] && grep -q 'KVMPROF-L1-DONE' "$LOG"; then done_at=$(date +%s); fi
	if [ -n "$done_at" ] && [ $(( $(date +%s) - done_at )) -ge 15 ]; then
		echo "$ME: L1 finished but did not power off within 15s; stopping QEMU"
		kill $qpid 2>/dev/null
		break
	fi
	sleep 0.5
done
wait $qpid
qrc=$?
trap - EXIT INT TERM
[ "$VERBOSE" = 1 ] && sleep 0.3
end=$(date +%s.%N)
secs=$(awk "BEGIN { printf \"%.1f\", $end - $start }")
echo "$ME: QEMU exited with status $qrc after ${secs}s"

# --- check ------------------------------------------------------------------------
CLEAN=$OUT/l1.clean.log
tr -d '\r' < "$LOG" > "$CLEAN"
# The system-wide recording came after the agent channel on L1's ttyS1: split it off.
SYSPROF_DATA=$OUT/sysprof.kp
rm -f "$SYSPROF_DATA"
spm=$(grep -m1 -o 'KVMPROF-L1-SYSPROF-COPY ok bytes=[0-9]*' "$CLEAN" | sed 's/.*bytes=//')
if [ -n "$spm" ] && [ "$spm" -gt 0 ] && [ -f "$CHANNEL" ] && [ "$(wc -c < "$CHANNEL")" -ge "$spm" ]; then
	tail -c "$spm" "$CHANNEL" > "$SYSPROF_DATA" && truncate -s -"$spm" "$CHANNEL"
fi
result() { # name ok detail
	if [ "$2" = 1 ]; then pass "$1: $3"; else fail "$1" "$3"; fi
}
# The lines of FILE from the first one matching BEGIN to the next matching END.
between() { # begin-regex end-regex file
	awk -v b="$1" -v e="$2" '$0 ~ b { on = 1; next } on && $0 ~ e { exit } on { print }' "$3"
}
# Why a VMM run ended early, for a failure's one line (all CI shows): its
# exit code, the VMM's first message, and L1's kernel trouble if any.
run_end_why() { # section-log end-line
	local code says l1
	code=$(echo "$2" | sed -n 's/.* rc=\([0-9]*\) .*/\1/p')
	says=$(grep -a -m1 -o 'kvmprof-vmm: .*' "$1")
	l1=$(grep -a -m1 -o -E '(BUG|Kernel panic)[^]]*' "$CLEAN")
	printf '%s' "${code:+; VMM exit code $code}${says:+; VMM said: $says}${l1:+; L1: $l1}"
}
# The agent case: three checks on what L2 printed and what reached the host.
check_agent() { # section-log end-line
	local sect="$1" endl="$2" vmm why recl rec repl rep top rows expl copyl n got chk secs rate
	vmm=
	if [ ! -s "$sect" ]; then vmm="case never started in L1"
	elif [ -z "$endl" ]; then vmm="VMM run did not finish before L1 was stopped"
	fi
	# l2-agent-fallback: record ran the workload on the cpu-clock fallback
	# and said why (no PMU in L2: none exists anywhere in this stack).
	recl=$(grep -m1 -o 'KVMPROF-L2-AGENT-RECORD-END .*' "$sect")
	rec=$(between 'KVMPROF-L2-AGENT-RECORD-BEGIN' 'KVMPROF-L2-AGENT-RECORD-END' "$sect")
	secs=$(echo "$recl" | sed -n 's/.* start=\([0-9.]*\) end=\([0-9.]*\).*/\1 \2/p' | awk '{ printf "%.1f", $2 - $1 }')
	if [ -z "$recl" ]; then
		result l2-agent-fallback 0 "${vmm:-no KVMPROF-L2-AGENT-RECORD-END marker}"
	elif ! echo "$recl" | grep -q ' rc=0 '; then
		result l2-agent-fallback 0 "kvmprof-agent record failed ($recl): $(echo "$rec" | tail -n 3 | tr '\n' ' ')"
	elif ! echo "$rec" | grep -i 'cpu-clock' | grep -q -i 'pmu'; then
		result l2-agent-fallback 0 "record succeeded but never said it fell back to cpu-clock for lack of a PMU; it said: $(echo "$rec" | tail -n 3 | tr '\n' ' ')"
	else
		result l2-agent-fallback 1 "$(echo "$rec" | grep -i 'cpu-clock' | grep -i -m1 'pmu'); $(echo "$rec" | grep -m1 -o 'hotloop: [0-9]* iterations in [0-9]* ms of CPU time'); ${secs}s in L2, $(echo "$recl" | sed -n 's/.* bytes=\([0-9]*\).*/\1/p') bytes recorded"
	fi
	# l2-agent-report-top-symbol: the first row of the report's table (a
	# line that starts with a sample count) names the workload's hot function.
	repl=$(grep -m1 -o 'KVMPROF-L2-AGENT-REPORT-END .*' "$sect")
	rep=$(between 'KVMPROF-L2-AGENT-REPORT-BEGIN' 'KVMPROF-L2-AGENT-REPORT-END' "$sect")
	rows=$(echo "$rep" | grep -E '^ *[0-9]+ +[0-9.]+%? ')
	top=$(echo "$rows" | head -n 1 | awk '{ print $NF }')
	if [ -z "$repl" ]; then
		result l2-agent-report-top-symbol 0 "${vmm:-no KVMPROF-L2-AGENT-REPORT-END marker}"
	elif ! echo "$repl" | grep -q 'rc=0'; then
		result l2-agent-report-top-symbol 0 "kvmprof-agent report failed ($repl): $(echo "$rep" | tail -n 3 | tr '\n' ' ')"
	elif [ "$top" != hotloop_spin ]; then
		result l2-agent-report-top-symbol 0 "top symbol '${top}', want hotloop_spin; report: $(echo "$rep" | head -n 12 | tr '\n' '|')"
	else
		result l2-agent-report-top-symbol 1 "top row: $(echo "$rows" | head -n 1 | sed 's/  */ /g; s/^ //')"
	fi
	# l2-agent-export: export succeeded in L2, L1 copied the whole agent
	# channel to the host, and the stream reads cleanly with kernel symbols
	# and the maps of the processes alive at export time (/init's busybox,
	# the agent itself).
	expl=$(grep -m1 -o 'KVMPROF-L2-AGENT-EXPORT-END .*' "$sect")
	copyl=$(grep -m1 -o 'KVMPROF-L1-AGENT-COPY .*' "$CLEAN")
	n=$(echo "$copyl" | sed -n 's/.* bytes=\([0-9]*\).*/\1/p')
	got=$(wc -c < "$CHANNEL" 2>/dev/null || echo 0)
	# Rate through L2's ttyS1: bytes its UART sent over the export's time.
	rate=$(echo "$expl" | sed -n 's/.* start=\([0-9.]*\) end=\([0-9.]*\).* tx=\([0-9]*\).*/\1 \2 \3/p' |
		awk '{ if ($2 > $1) printf "%d bytes in %.1fs, %.1f KB/s", $3, $2 - $1, $3 / ($2 - $1) / 1000 }')
	why=
	if [ -z "$expl" ]; then why="${vmm:-no KVMPROF-L2-AGENT-EXPORT-END marker}$(run_end_why "$sect" "$endl")"
	elif echo "$expl" | grep -q -E ' rc=(124|143) '; then
		why="kvmprof-agent export killed by its hang guard ($(echo "$expl" | sed -n 's/.* why=//p'); EXPORT_STALL, EXPORT_TIMEOUT $(echo "$expl" | sed -n 's/.* limit=\([0-9]*\).*/\1/p')s): ttyS1 sent ${rate:-?} of a ~420 KB export (tests/nested/README.md, \"The agent case\")"
	elif ! echo "$expl" | grep -q ' rc=0 '; then why="kvmprof-agent export failed ($expl)"
	elif [ -z "$copyl" ]; then why="L1 never copied the agent channel out (no KVMPROF-L1-AGENT-COPY line)"
	elif ! echo "$copyl" | grep -q 'COPY ok'; then why="L1 could not copy the agent channel to its ttyS1: $copyl"
	elif [ "${n:-0}" = 0 ]; then why="the VMM's agent channel file in L1 is empty"
	elif [ "$got" != "$n" ]; then why="$CHANNEL has $got bytes, L1 sent $n"
	fi
	if [ -n "$why" ]; then
		result l2-agent-export 0 "$why"
		return
	fi
	if chk=$("$OUT/agent-check" -s start_kernel -s schedule -m busybox -m kvmprof-agent "$CHANNEL" 2>&1); then
		result l2-agent-export 1 "$(echo "$chk" | tail -n 1 | sed 's/^ok: //'); ttyS1 in L2: ${rate:-?}; copy-out $(echo "$copyl" | sed -n 's/.* start=\([0-9.]*\) end=\([0-9.]*\).*/\1 \2/p' | awk '{ printf "%.1f", $2 - $1 }')s in L1"
	else
		result l2-agent-export 0 "$(echo "$chk" | tr '\n' ' ')"
	fi
}
# System-wide profiling of L2 from L1 (kvmprof record through the VMM's
# control socket, the task layout from the agent's export), reported on the
# host with the export's kallsyms and maps and the L2 staging tree.
check_sysprof() { # section-log
	local sect="$1" wl pid recl says runl rep rc kern ksyms hl top serial
	wl=$(grep -m1 -o 'KVMPROF-L2-SYSPROF-WORKLOAD pid=[0-9]*' "$sect")
	pid=${wl##*pid=}
	recl=$(grep -m1 -o 'KVMPROF-L1-SYSPROF-RECORD .*' "$CLEAN")
	says=$(grep -o 'KVMPROF-L1-SYSPROF-SAYS .*' "$CLEAN" | sed 's/KVMPROF-L1-SYSPROF-SAYS //' | tr '\n' ' ')
	runl=$(grep -m1 -o 'KVMPROF-L2-SYSPROF-RUN-END .*' "$sect")
	rep=$OUT/sysprof.report
	rc=1
	if [ -s "$SYSPROF_DATA" ]; then
		"$KVMPROF" report -i "$SYSPROF_DATA" --guest-export "$CHANNEL" --guest-root "$L2" >"$rep" 2>"$rep.err"
		rc=$?
	fi
	if [ -z "$recl" ]; then
		result l2-sysprof-record 0 "no KVMPROF-L1-SYSPROF-RECORD line (workload: ${wl:-not started})"
	elif ! echo "$recl" | grep -q ' rc=0 '; then
		result l2-sysprof-record 0 "kvmprof record in L1 failed: $recl; it said: ${says:-nothing}$(run_end_why "$sect" "$(grep -a -m1 -o 'KVMPROF-L1-END case=agent .*' "$sect")")"
	elif [ ! -s "$SYSPROF_DATA" ]; then
		result l2-sysprof-record 0 "the recording did not reach the host ($(grep -m1 -o 'KVMPROF-L1-SYSPROF-COPY .*' "$CLEAN"))"
	elif [ $rc != 0 ]; then
		result l2-sysprof-record 0 "kvmprof report exited $rc: $(head -c 300 "$rep.err")"
	else
		result l2-sysprof-record 1 "$(sed -n 's/^guest samples: //p' "$rep"); L1: $says; L2 workload: ${runl:-?}"
	fi
	[ $rc = 0 ] || return
	# Guest kernel samples named through the export's kallsyms.
	kern=$(awk '$1 ~ /^[0-9]+$/ && $3 == "guest" && $4 == "kernel" && $NF != "[unknown]" { n += $1 } END { print n + 0 }' "$rep")
	ksyms=$(awk '$1 ~ /^[0-9]+$/ && $3 == "guest" && $4 == "kernel" && $NF != "[unknown]" { print $NF }' "$rep" | head -n 4 | tr '\n' ' ')
	if [ "$kern" -gt 0 ]; then
		result l2-sysprof-guest-kernel-symbols 1 "$kern guest kernel samples resolved, e.g. $ksyms"
	else
		result l2-sysprof-guest-kernel-symbols 0 "no guest kernel sample resolved to a symbol: $(grep -A4 '^domain' "$rep" | tr '\n' '|')"
	fi
	# Guest user samples of the workload's tgid, read from its task_struct, named hotloop.
	hl=$(awk -v p="[$pid]" '$1 ~ /^[0-9]+$/ && $3 == "guest" && $4 == "user" && $6 == "hotloop" && $7 == p { n += $1 } END { print n + 0 }' "$rep")
	if [ -n "$pid" ] && [ "$hl" -gt 0 ]; then
		result l2-sysprof-process 1 "$hl guest user samples in process hotloop [$pid] (L2 said pid=$pid)"
	else
		result l2-sysprof-process 0 "no guest user samples of hotloop [${pid:-?}]; guest user rows: $(awk '$3 == "guest" && $4 == "user"' "$rep" | head -n 4 | sed 's/  */ /g' | tr '\n' '|')"
	fi
	# The serial console's exits (issue 14): in the cross-layer stacks, host samples of the VMM
	# handling an OUT to port 0x3f8 have the Linux kernel's serial code above the exit's frame.
	"$KVMPROF" report -i "$SYSPROF_DATA" --guest-export "$CHANNEL" --guest-root "$L2" -f folded >"$rep.folded" 2>/dev/null
	"$KVMPROF" report -i "$SYSPROF_DATA" --guest-export "$CHANNEL" --guest-root "$L2" --exits >"$rep.exits" 2>/dev/null
	serial=$(grep -o '[^;`]*`[a-z0-9_]*\(serial\|8250\|uart\)[a-z0-9_]*;\[exit:_io_out_0x3f8\]' "$rep.folded" | sort | uniq -c | sort -rn | head -n 3 | tr -s ' ' | tr '\n' ',')
	if [ -n "$serial" ]; then
		result l2-sysprof-serial-exit-stacks 1 "above [exit: io out 0x3f8]: $serial ($(grep -m1 'io out 0x3f8' "$rep.exits" | tr -s ' '))"
	else
		result l2-sysprof-serial-exit-stacks 0 "no stack with a serial function above [exit: io out 0x3f8]; exits: $(sed -n '/^by reason/,/^$/p' "$rep.exits" | head -n 5 | tr -s ' ' | tr '\n' '|'); stacks: $(grep -m2 'exit:_io_out' "$rep.folded" | cut -c1-300)"
	fi
	top=$(awk '$1 ~ /^[0-9]+$/ && $3 == "guest" && $4 == "user" && $6 == "hotloop" { print $8, $9; exit }' "$rep")
	if [ "$top" = "hotloop hotloop_spin" ]; then
		result l2-sysprof-hot-symbol 1 "top row of [guest] hotloop: $(awk '$3 == "guest" && $4 == "user" && $6 == "hotloop" { print; exit }' "$rep" | sed 's/  */ /g; s/^ //')"
	else
		result l2-sysprof-hot-symbol 0 "top row of [guest] hotloop is '$top', want 'hotloop hotloop_spin'"
	fi
}
# The perf case: the guest kernel's PMU driver found the vPMU, and perf stat
# of countloop at two iteration counts differs by exactly the loop's two
# instructions and one branch per iteration.
perf_count() { # section-log n event: the count perf stat printed, or "" (not counted, not supported)
	between "KVMPROF-L2-PERF-STAT n=$2 " "KVMPROF-L2-PERF-STAT-END n=$2" "$1" |
		awk -F, -v e="$3" '$3 == e && $1 ~ /^[0-9]+$/ { print $1; exit }'
}
check_perf() { # section-log end-line
	local sect="$1" endl="$2" pmu why ok=1 i1 i2 b1 b2 di db wi wb
	why=
	if [ ! -s "$sect" ]; then why="case never started in L1"
	elif [ -z "$endl" ]; then why="VMM run did not finish before L1 was stopped$(run_end_why "$sect" "")"
	fi
	pmu=$(grep -m1 -o 'KVMPROF-L2-PERF-PMU .*' "$sect" | sed 's/KVMPROF-L2-PERF-PMU //')
	if [ -z "$pmu" ]; then result l2-perf-pmu 0 "${why:-no KVMPROF-L2-PERF-PMU line}"
	elif echo "$pmu" | grep -q -E 'Performance Events:.*(AMD|Intel|PMU driver)' && ! echo "$pmu" | grep -q 'no PMU'; then
		result l2-perf-pmu 1 "L2's dmesg: $pmu"
	else result l2-perf-pmu 0 "L2's kernel found no PMU: $pmu"
	fi
	i1=$(perf_count "$sect" "$PERF_N1" instructions:u) i2=$(perf_count "$sect" "$PERF_N2" instructions:u)
	b1=$(perf_count "$sect" "$PERF_N1" branches:u) b2=$(perf_count "$sect" "$PERF_N2" branches:u)
	wi=$((2 * (PERF_N2 - PERF_N1))) wb=$((PERF_N2 - PERF_N1))
	if [ -z "$i1" ] || [ -z "$i2" ] || [ -z "$b1" ] || [ -z "$b2" ]; then
		ok=0
		why="${why:+$why; }perf stat counted instructions:u ${i1:-none}/${i2:-none}, branches:u ${b1:-none}/${b2:-none} for n=$PERF_N1/$PERF_N2: $(between "KVMPROF-L2-PERF-STAT n=$PERF_N1 " "KVMPROF-L2-PERF-STAT-END" "$sect" | head -n 4 | tr '
' '|')"
	else
		di=$((i2 - i1)) db=$((b2 - b1))
		[ "$di" = "$wi" ] && [ "$db" = "$wb" ] || ok=0
		why="instructions:u $i1 and $i2 (difference $di, want $wi), branches:u $b1 and $b2 (difference $db, want $wb) for countloop $PERF_N1 and $PERF_N2"
	fi
	result l2-perf-stat-user-exact $ok "$why"
	# Self-monitoring: read() and RDPMC through the mmap page, at both counts.
	check_perf_self "$sect" instructions "$wi"
	check_perf_self "$sect" branches "$wb"
}
self_field() { # section-log n event field: pmuself's value, or ""
	between "KVMPROF-L2-PERF-SELF n=$2\$" "KVMPROF-L2-PERF-SELF-END n=$2 " "$1" |
		awk -v e="$3" -v f="$4=" '$1 == "pmuself:" && $2 == e { for (i = 3; i <= NF; i++) if (index($i, f) == 1) { v = substr($i, length(f) + 1); if (v ~ /^[0-9]+$/) print v; exit } }'
}
check_perf_self() { # section-log event want-difference
	local r1 r2 p1 p2 ok=1 why
	r1=$(self_field "$1" "$PERF_N1" "$2" read) r2=$(self_field "$1" "$PERF_N2" "$2" read)
	p1=$(self_field "$1" "$PERF_N1" "$2" rdpmc) p2=$(self_field "$1" "$PERF_N2" "$2" rdpmc)
	if [ -z "$r1" ] || [ -z "$r2" ] || [ -z "$p1" ] || [ -z "$p2" ]; then
		ok=0
		why="pmuself $2: read ${r1:-none}/${r2:-none}, rdpmc ${p1:-none}/${p2:-none} for n=$PERF_N1/$PERF_N2: $(between "KVMPROF-L2-PERF-SELF n=$PERF_N1\$" "KVMPROF-L2-PERF-SELF-END" "$1" | head -n 3 | tr '\n' '|')"
	else
		[ $((r2 - r1)) = "$3" ] && [ $((p2 - p1)) = "$3" ] || ok=0
		why="pmuself $2: read() $r1 and $r2 (difference $((r2 - r1))), RDPMC through the mmap page $p1 and $p2 (difference $((p2 - p1))), want $3"
	fi
	result "l2-perf-self-rdpmc-$2" $ok "$why"
}
line=$(grep -m1 -o 'KVMPROF-L1-INIT.*' "$CLEAN")
if [ -n "$line" ]; then result l1-boot 1 "$line"; else result l1-boot 0 "L1 never reached /init"; fi
k=$(grep -m1 -o 'KVMPROF-L1-KVM.*' "$CLEAN")
case $k in
	*"KVMPROF-L1-KVM ok"*) result l1-kvm 1 "modules loaded, $(grep -m1 -o 'kvm-check: .*' "$CLEAN")" ;;
	"") result l1-kvm 0 "no KVMPROF-L1-KVM line" ;;
	*) result l1-kvm 0 "$(grep -o -E 'KVMPROF-L1-INSMOD-FAIL.*|kvm-check: .*' "$CLEAN" | tr '\n' ' ')" ;;
esac
for c in $CASES; do
	sect=$OUT/l2-$c.log
	awk -v c="$c" '
		$0 ~ "KVMPROF-L1-BEGIN case=" c "( |$)" { on = 1 }
		on { print }
		$0 ~ "KVMPROF-L1-END case=" c " " { on = 0 }' "$CLEAN" > "$sect"
	endl=$(grep -o "KVMPROF-L1-END case=$c .*" "$sect" | head -n 1)
	okl=$(grep -o 'KVMPROF-L2-OK cpus=[0-9]* .*via=tty' "$sect" | head -n 1)
	[ -n "$okl" ] || okl=$(grep -o 'KVMPROF-L2-OK cpus=[0-9]*.*' "$sect" | head -n 1)
	via=$(grep -o 'KVMPROF-L2-OK cpus=.* via=[a-z]*' "$sect" | sed 's/.* via=//' | sort -u | tr '\n' '+')
	okl=${okl% via=*}${via:+ (marker seen via ${via%+})}
	cpus=$(echo "$okl" | sed -n 's/.*KVMPROF-L2-OK cpus=\([0-9]*\).*/\1/p')
	rc=$(echo "$endl" | sed -n 's/.* rc=\([0-9]*\).*/\1/p')
	times=$(echo "$endl" | sed -n 's/.* start=\([0-9.]*\) end=\([0-9.]*\).*/\1 \2/p')
	dur=
	[ -n "$times" ] && dur=$(echo "$times" | awk '{ printf "%.1fs", $2 - $1 }')
	if [ "$c" = perf ]; then
		[ -n "$endl" ] && echo "$ME: perf case: VMM run ${dur} in L1, exit code $rc"
		check_perf "$sect" "$endl"
		continue
	fi
	if [ "$c" = agent ]; then
		[ -n "$endl" ] && echo "$ME: agent case: VMM run ${dur} in L1, exit code $rc"
		check_agent "$sect" "$endl"
		[ "$SYSPROF" = 1 ] && check_sysprof "$sect"
		continue
	fi
	if [ ! -s "$sect" ]; then
		result "l2-$c" 0 "case never started in L1"
	elif [ -z "$endl" ]; then
		result "l2-$c" 0 "VMM run did not finish before L1 was stopped${okl:+; L2 printed: $okl}"
	fi
	# L2 user space writing to its console needs the UART's interrupt.
	if [ -s "$sect" ] && grep -q 'KVMPROF-L2-OK cpus=[0-9]* .*via=kmsg' "$sect"; then
		if grep -q 'KVMPROF-L2-OK cpus=[0-9]* .*via=tty' "$sect"; then
			ttyres="1 L2 user space wrote its marker on the tty ($(grep -m1 -o 'KVMPROF-L2-IRQ [0-9]*: .*ttyS0' "$sect" | sed 's/KVMPROF-L2-IRQ //; s/  */ /g'))"
		else
			irql=$(grep -m1 -o 'KVMPROF-L2-IRQ [0-9]*: .*ttyS0' "$sect" | sed 's/KVMPROF-L2-IRQ //; s/  */ /g')
			ttyres="0 L2's /init ran (printk marker) but its tty writes never reached the console: $(grep -m1 -o 'KVMPROF-L2-IRQ 0: uart.*' "$sect" | sed 's/KVMPROF-L2-IRQ 0: //'); ${irql:-no ttyS0 line in /proc/interrupts: the 8250 could not get its IRQ, so tty writes fail with EIO}"
		fi
	else
		ttyres=
	fi
	if [ ! -s "$sect" ] || [ -z "$endl" ]; then
		:
	elif [ -n "$okl" ] && [ "$cpus" = "$CPUS" ] && [ "$rc" = 0 ]; then
		result "l2-$c" 1 "$okl; VMM exit code 0; ${dur} in L1"
	else
		why=
		[ -n "$okl" ] || why="no KVMPROF-L2-OK marker"
		[ -z "$okl" ] || [ "$cpus" = "$CPUS" ] || why="L2 saw cpus=$cpus, want $CPUS"
		if [ -n "$okl" ] && [ "$cpus" != "$CPUS" ] && grep -q 'ACPI MADT or MP tables are not detected' "$sect"; then
			why="$why (L2 found no ACPI MADT$([ "$L2_FLAVOUR" = cloud-amd64 ] && echo "; the cloud kernel has CONFIG_X86_MPPARSE unset, so it ignores MP tables: the VMM needs ACPI tables, or use L2_FLAVOUR=amd64"))"
		fi
		[ "$rc" = 0 ] || why="${why:+$why; }VMM exit code $rc$([ "$rc" = 124 ] && echo " (stopped after ${L2_TIMEOUT}s)")$([ "$rc" = 137 ] && echo " (killed after ${L2_TIMEOUT}s + 60 s)")"
		panic=$(grep -m1 -o 'Kernel panic - not syncing:.*' "$sect")
		[ -z "$panic" ] || why="${why:+$why; }L2 $panic"
		vmsg=$(grep -m1 -o 'kvmprof-vmm: .*' "$sect")
		[ -z "$vmsg" ] || why="${why:+$why; }VMM said: $vmsg"
		result "l2-$c" 0 "$why${okl:+; L2 printed: $okl}; ${dur} in L1"
	fi
	[ -z "$ttyres" ] || result "l2-$c-tty" ${ttyres%% *} "${ttyres#* }"
done
if [ -n "$AGENT_SKIP" ]; then
	for n in l2-agent-fallback l2-agent-report-top-symbol l2-agent-export; do
		skip "$n" "$AGENT_SKIP"
	done
fi
if [ -n "$AGENT_SKIP$SYSPROF_SKIP" ] && [ "$L1_ONLY" = 0 ]; then
	for n in l2-sysprof-record l2-sysprof-guest-kernel-symbols l2-sysprof-process l2-sysprof-hot-symbol; do
		skip "$n" "${SYSPROF_SKIP:-$AGENT_SKIP}"
	done
fi
if grep -q 'KVMPROF-L1-DONE' "$CLEAN"; then :; else
	echo "$ME: note: L1 did not finish (QEMU status $qrc$([ "$qrc" = 124 ] && echo ", timed out after ${QEMU_TIMEOUT}s"))"
	[ "$qrc" = 124 ] && fail l1-timeout "QEMU killed after ${QEMU_TIMEOUT}s"
fi
echo "$ME: wall time ${secs}s; L1 log: $LOG"
if [ "$harness_failed" -gt 0 ]; then
	for c in $CASES; do
		[ -s "$OUT/l2-$c.log" ] || continue
		want=$CPUS
		[ "$c" = agent ] && want=$AGENT_CPUS
		grep -q "KVMPROF-L2-OK cpus=$want .*" "$OUT/l2-$c.log" &&
			grep -q "KVMPROF-L1-END case=$c rc=0 " "$OUT/l2-$c.log" && continue
		echo "---- case $c: L2 console and VMM output (tail of $OUT/l2-$c.log) ----"
		tail -n 50 "$OUT/l2-$c.log"
	done
	echo "---- tail of $LOG ----"
	tail -n 25 "$CLEAN"
	echo "----"
fi
harness_summary
