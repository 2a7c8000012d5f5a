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
#
# Usage: tests/nested/run.sh [--l1-only] [-v]
#   --l1-only  no VMM: prove L1 boots, the modules load and /dev/kvm works
#   -v         stream L1's serial console while it runs
# Environment: BUILD (build), VMM ($BUILD/kvmprof-vmm-static), CPUS (2),
#   L2_MEM (256M), QEMU_TIMEOUT (seconds for the whole QEMU run, 170),
#   L2_TIMEOUT (seconds per VMM run inside L1, 60), L2_APPEND (extra L2
#   kernel parameters), L1_APPEND (extra L1 kernel parameters), CASES
#   ("bzimage pvh"), L2_FLAVOUR (cloud-amd64, or amd64: Debian's generic
#   kernel as L2, which finds CPUs through an MP table; the cloud kernel has
#   CONFIG_X86_MPPARSE unset and needs an ACPI MADT to see more than 1 CPU).
# Prints one PASS/FAIL line per case and "N passed, N failed"; the full L1
# log is $BUILD/nested/l1.log.
set -u

ME=nested
BUILD=${BUILD:-build}
VMM=${VMM:-$BUILD/kvmprof-vmm-static}
CPUS=${CPUS:-2}
L2_MEM=${L2_MEM:-256M}
QEMU_TIMEOUT=${QEMU_TIMEOUT:-170}
L2_TIMEOUT=${L2_TIMEOUT:-60}
L2_APPEND=${L2_APPEND:-}
L1_APPEND=${L1_APPEND:-}
CASES=${CASES:-bzimage pvh}
L2_FLAVOUR=${L2_FLAVOUR:-cloud-amd64}
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

die() { echo "$ME: error: $*" >&2; exit 1; }

SRC=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$SRC/../.." && pwd)
cd "$TOP" || die "cannot cd to $TOP"
OUT=$BUILD/nested
mkdir -p "$OUT" || die "cannot create $OUT"

# --- prerequisites ------------------------------------------------------------
QEMU=${QEMU:-qemu-system-x86_64}
command -v "$QEMU" >/dev/null 2>&1 || die "$QEMU not found (apt-get install qemu-system-x86, or make deps)"
command -v cpio >/dev/null 2>&1 || die "cpio not found (apt-get install cpio)"
command -v timeout >/dev/null 2>&1 || die "timeout not found (coreutils)"
command -v gcc >/dev/null 2>&1 || die "gcc not found (needed for the static helpers l2-exit and kvm-check)"
BUSYBOX=${BUSYBOX:-/bin/busybox}
[ -x "$BUSYBOX" ] || die "busybox not found at $BUSYBOX (apt-get install busybox-static)"
readelf -l "$BUSYBOX" 2>/dev/null | grep -q 'INTERP' &&
	die "$BUSYBOX is dynamically linked; install busybox-static"
if [ "$L1_ONLY" = 0 ]; then
	[ -x "$VMM" ] || die "VMM binary $VMM not found (make $BUILD/kvmprof-vmm-static), or run with --l1-only"
	readelf -l "$VMM" 2>/dev/null | grep -q 'INTERP' &&
		die "$VMM is dynamically linked; L1 has no libc, it must be static"
fi

"$TOP/tests/debian-kernel.sh" "$BUILD" || die "tests/debian-kernel.sh failed"
DEB=$BUILD/debian
L2DEB=$DEB
if [ "$L2_FLAVOUR" != cloud-amd64 ]; then
	DEBIAN_KERNEL_FLAVOUR=$L2_FLAVOUR "$TOP/tests/debian-kernel.sh" "$BUILD" ||
		die "tests/debian-kernel.sh failed for L2_FLAVOUR=$L2_FLAVOUR"
	L2DEB=$BUILD/debian-$L2_FLAVOUR
fi

# --- static helpers -------------------------------------------------------------
for p in l2-exit kvm-check; do
	if [ ! -x "$OUT/$p" ] || [ "$SRC/$p.c" -nt "$OUT/$p" ] ||
	   [ "$TOP/include/kvmprof/platform.h" -nt "$OUT/$p" ]; then
		gcc -static -O2 -Wall -Wextra -Werror -I"$TOP/include" -o "$OUT/$p" "$SRC/$p.c" ||
			die "cannot build static $p (need libc6-dev with libc.a)"
	fi
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

# --- L1 initramfs ---------------------------------------------------------------
L2_CMDLINE="console=ttyS0 earlyprintk=serial,ttyS0,115200 panic=-1 reboot=t kvmprof_cpus=$CPUS $L2_APPEND"
L1=$OUT/l1-root
rm -rf "$L1" && mkdir -p "$L1/bin" "$L1/proc" "$L1/sys" "$L1/dev" "$L1/tmp" "$L1/lib/modules" "$L1/l2" ||
	die "cannot create $L1"
cp "$BUSYBOX" "$L1/bin/busybox" && ln -s busybox "$L1/bin/sh" &&
cp "$OUT/kvm-check" "$L1/bin/kvm-check" &&
cp "$DEB/modules/irqbypass.ko" "$DEB/modules/kvm.ko" "$DEB/modules/kvm-amd.ko" "$L1/lib/modules/" &&
cp "$OUT/l2.cpio" "$L1/l2/initrd.cpio" || die "cannot populate $L1"
# The big files go in as hard links when the file system allows it.
ln -f "$L2DEB/vmlinuz" "$L1/l2/bzImage" 2>/dev/null || cp "$L2DEB/vmlinuz" "$L1/l2/bzImage" || die "cannot copy vmlinuz"
ln -f "$L2DEB/vmlinux" "$L1/l2/vmlinux" 2>/dev/null || cp "$L2DEB/vmlinux" "$L1/l2/vmlinux" || die "cannot copy vmlinux"
if [ "$L1_ONLY" = 0 ]; then
	cp "$VMM" "$L1/bin/kvmprof-vmm" || die "cannot copy $VMM"
fi
{
	cat <<EOF
#!/bin/sh
CASES="$CASES"
CPUS=$CPUS
L2_MEM=$L2_MEM
L2_TIMEOUT=$L2_TIMEOUT
L2_CMDLINE="$L2_CMDLINE"
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
for c in $CASES; do
	case $c in
		bzimage) k=/l2/bzImage ;;
		pvh) k=/l2/vmlinux ;;
		*) echo "KVMPROF-L1-UNKNOWN-CASE $c"; continue ;;
	esac
	t0=$(cut -d' ' -f1 /proc/uptime)
	echo "KVMPROF-L1-BEGIN case=$c uptime=$t0"
	echo "+ kvmprof-vmm --kernel $k --initrd /l2/initrd.cpio --cpus $CPUS --mem $L2_MEM --cmdline \"$L2_CMDLINE\""
	timeout -s KILL $L2_TIMEOUT kvmprof-vmm --kernel $k --initrd /l2/initrd.cpio \
		--cpus $CPUS --mem $L2_MEM --cmdline "$L2_CMDLINE" < /dev/null
	rc=$?
	t1=$(cut -d' ' -f1 /proc/uptime)
	echo
	echo "KVMPROF-L1-END case=$c rc=$rc start=$t0 end=$t1"
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
L1_CMDLINE="console=ttyS0 panic=-1 mitigations=off $L1_APPEND"
echo "$ME: L2 kernel $(cat "$L2DEB/version"), L2 command line: $L2_CMDLINE"
echo "$ME: booting L1 under TCG (timeout ${QEMU_TIMEOUT}s, log $LOG)"
start=$(date +%s.%N)
set -- timeout -k 5 "$QEMU_TIMEOUT" "$QEMU" -accel tcg -cpu max,vendor=AuthenticAMD \
	-smp 2 -m 2G -kernel "$DEB/vmlinuz" -initrd "$OUT/l1.cpio" \
	-append "$L1_CMDLINE" -nographic -no-reboot
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
pass=0 fail=0
result() { # name ok detail
	if [ "$2" = 1 ]; then pass=$((pass + 1)); echo "PASS $1: $3"
	else fail=$((fail + 1)); echo "FAIL $1: $3"; fi
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
		[ "$rc" = 0 ] || why="${why:+$why; }VMM exit code $rc$([ "$rc" = 137 ] && echo " (killed after ${L2_TIMEOUT}s)")"
		panic=$(grep -m1 -o 'Kernel panic - not syncing:.*' "$sect")
		[ -z "$panic" ] || why="${why:+$why; }L2 $panic"
		vmsg=$(grep -m1 -o 'kvmprof-vmm: .*' "$sect")
		[ -z "$vmsg" ] || why="${why:+$why; }VMM said: $vmsg"
		result "l2-$c" 0 "$why${okl:+; L2 printed: $okl}; ${dur} in L1"
	fi
	[ -z "$ttyres" ] || result "l2-$c-tty" ${ttyres%% *} "${ttyres#* }"
done
if grep -q 'KVMPROF-L1-DONE' "$CLEAN"; then :; else
	echo "$ME: note: L1 did not finish (QEMU status $qrc$([ "$qrc" = 124 ] && echo ", timed out after ${QEMU_TIMEOUT}s"))"
	[ "$qrc" = 124 ] && fail=$((fail + 1)) && echo "FAIL l1-timeout: QEMU killed after ${QEMU_TIMEOUT}s"
fi
echo "$ME: wall time ${secs}s; L1 log: $LOG"
if [ "$fail" -gt 0 ]; then
	for c in $CASES; do
		[ -s "$OUT/l2-$c.log" ] || continue
		grep -q "KVMPROF-L2-OK cpus=$CPUS .*" "$OUT/l2-$c.log" &&
			grep -q "KVMPROF-L1-END case=$c rc=0 " "$OUT/l2-$c.log" && continue
		echo "---- case $c: L2 console and VMM output (tail of $OUT/l2-$c.log) ----"
		tail -n 50 "$OUT/l2-$c.log"
	done
	echo "---- tail of $LOG ----"
	tail -n 25 "$CLEAN"
	echo "----"
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
