#!/usr/bin/env bash
# Boot time and memory overhead of kvmprof-vmm next to QEMU (-accel kvm,
# -M microvm, the fastest QEMU machine for a PVH kernel), both booting the
# same bundled kernel.elf and initrd, timed by the same harness
# (bench/boot_time.c) in alternating runs. Prints a Markdown table.
#   RUNS=N (default 10)
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
RUNS=${RUNS:-10}
VMM=$BUILD/kvmprof-vmm
BT=$BUILD/bench/boot-time
KERNEL=$BUILD/guest/kernel.elf
INITRD=$BUILD/guest/initrd.cpio
MEM=256

command -v qemu-system-x86_64 >/dev/null || { echo "bench: qemu-system-x86_64 missing (make deps)" >&2; exit 1; }
# -cpu host less arch-capabilities: QEMU cannot set MSR 0x10a on this host's KVM.
QEMU=(qemu-system-x86_64 -M microvm,x-option-roms=off,isa-serial=on,rtc=on -accel kvm
      -cpu host,-arch-capabilities -m ${MEM}M -smp 1 -nodefaults -no-user-config -nographic
      -serial stdio -kernel "$KERNEL" -initrd "$INITRD"
      -device isa-debug-exit,iobase=0xf4,iosize=4)
OURS=("$VMM" --kernel "$KERNEL" --initrd "$INITRD" --mem ${MEM}M --cpus 1)
BOOT_CMDLINE="quiet start=/bin/exit"   # boot, run one trivial process, power off

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
field() { sed -n "s/.*$1=\([-0-9.]*\).*/\1/p"; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "bench: $RUNS alternating runs each of kvmprof-vmm and QEMU booting the bundled guest..." >&2
for i in $(seq "$RUNS"); do
	"$BT" -- "${OURS[@]}" --cmdline "$BOOT_CMDLINE" >>"$tmp/ours" 2>/dev/null
	"$BT" -- "${QEMU[@]}" -append "$BOOT_CMDLINE" >>"$tmp/qemu" 2>/dev/null
	printf '.' >&2
done
echo >&2
# Statuses: ours exits with the guest's 0; QEMU's isa-debug-exit turns 0 into 1.
grep -qv 'status=0' "$tmp/ours" && { echo "bench: kvmprof-vmm runs failed:" >&2; cat "$tmp/ours" >&2; exit 1; }
grep -qv 'status=1' "$tmp/qemu" && { echo "bench: QEMU runs failed:" >&2; cat "$tmp/qemu" >&2; exit 1; }

o_first=$(field first_byte_ms <"$tmp/ours" | median)
o_exit=$(field exit_ms <"$tmp/ours" | median)
q_first=$(field first_byte_ms <"$tmp/qemu" | median)
q_exit=$(field exit_ms <"$tmp/qemu" | median)

# Memory: sampled 300 ms into a workload that outlasts the sample on both
# (the default demos end within 300 ms under QEMU, whose guest has no PMU),
# then stopped. kvmprof-vmm twice: with the vPMU off, like QEMU here, and
# with its default vPMU, where the demo counts its instructions in the exact
# backend's emulator on a host without hardware counters.
RSS_CMDLINE="quiet start=/bin/matmul:128:3000"
"$BT" --rss-at 300 --kill-after-rss -- "${OURS[@]}" --vpmu=off --cmdline "$RSS_CMDLINE" >"$tmp/ours.rss" 2>/dev/null
"$BT" --rss-at 300 --kill-after-rss -- "${OURS[@]}" --cmdline "$RSS_CMDLINE" >"$tmp/ours-vpmu.rss" 2>/dev/null
"$BT" --rss-at 300 --kill-after-rss -- "${QEMU[@]}" -append "$RSS_CMDLINE" >"$tmp/qemu.rss" 2>/dev/null
o_rss=$(field rss_kb <"$tmp/ours.rss"); o_ram=$(field guest_ram_kb <"$tmp/ours.rss")
v_rss=$(field rss_kb <"$tmp/ours-vpmu.rss"); v_ram=$(field guest_ram_kb <"$tmp/ours-vpmu.rss")
q_rss=$(field rss_kb <"$tmp/qemu.rss"); q_ram=$(field guest_ram_kb <"$tmp/qemu.rss")
for v in "$o_rss" "$v_rss" "$q_rss"; do
	[ -n "$v" ] || { echo "bench: a memory sample found no process at 300 ms (it ended first)" >&2; exit 1; }
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a / b }'; }
cat <<TABLE

Boot of the bundled guest (kernel.elf + initrd.cpio, 1 vCPU, ${MEM} MiB, command line
"$BOOT_CMDLINE"), median of $RUNS alternating runs, host $(uname -r), $(nproc) CPUs:

| measure | kvmprof-vmm | QEMU microvm (-accel kvm) | QEMU / kvmprof-vmm |
|---|---|---|---|
| VMM start to first COM1 byte | ${o_first} ms | ${q_first} ms | $(ratio "$q_first" "$o_first") |
| VMM start to guest power-off (process exit) | ${o_exit} ms | ${q_exit} ms | $(ratio "$q_exit" "$o_exit") |
| resident memory beyond guest RAM, "$RSS_CMDLINE" at 300 ms, vPMU off | $(( (o_rss - o_ram) / 1024 )) MiB ($((o_rss - o_ram)) KiB) | $(( (q_rss - q_ram) / 1024 )) MiB ($((q_rss - q_ram)) KiB) | $(ratio "$((q_rss - q_ram))" "$((o_rss - o_ram))") |
| the same with kvmprof-vmm's default vPMU (the exact backend's emulator where there are no hardware counters) | $(( (v_rss - v_ram) / 1024 )) MiB ($((v_rss - v_ram)) KiB) | | |
TABLE
