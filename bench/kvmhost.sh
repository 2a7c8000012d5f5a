#!/usr/bin/env bash
# What tests/kvmhost's emulated KVM host costs (an L1 under QEMU's TCG, for
# machines without /dev/kvm): its boot, one command's round trip, and how
# much slower the same work runs in it than here, each side by side in one
# run (these machines have fast and slow phases). Prints a Markdown table.
#   RUNS=N (default 3): boots; 4N commands and N rounds of each workload.
# The VMM itself cannot run here without /dev/kvm: its rows are L1 only.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
RUNS=${RUNS:-3}
KVMHOST=tests/kvmhost/kvmhost
# shellcheck source=bench/lib.sh
. bench/lib.sh
bench_start
S=
trap '[ -z "$S" ] || $KVMHOST stop -s "$S"; bench_cleanup' EXIT

for f in "$BUILD/kvmprof-vmm" "$BUILD/guest/kernel.elf" "$BUILD/tests/test_lib_profile"; do
	[ -e "$f" ] || { echo "bench-kvmhost: $f missing (make all $BUILD/tests/test_lib_profile)" >&2; exit 1; }
done
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f\n", (b - a) / 1e9 }'; }

# 1. Boot: kvmhost start until L1 serves, then stop (the kernel is fetched beforehand).
DEBIAN_KERNEL_FLAVOUR=amd64 DEBIAN_KERNEL_MODULES="virtio_pci virtio_console 9pnet_virtio 9p overlay virtiofs" \
	sh tests/debian-kernel.sh "$BUILD" >/dev/null 2>&1 || { echo "bench-kvmhost: cannot fetch the L1 kernel" >&2; exit 1; }
for _ in $(seq "$RUNS"); do
	t=$(now_ns)
	s=$($KVMHOST start -o $$ 2>/dev/null) || { echo "bench-kvmhost: L1 did not start" >&2; exit 1; }
	secs "$t" "$(now_ns)" >>"$tmp/boot"
	$KVMHOST stop -s "$s"
done

S=$($KVMHOST start -o $$ 2>/dev/null) || { echo "bench-kvmhost: L1 did not start" >&2; exit 1; }
# 2. One command's round trip: `true` through exec, next to bash -c true here.
for _ in $(seq $((4 * RUNS))); do
	t=$(now_ns); bash -c true; secs "$t" "$(now_ns)" >>"$tmp/cmd.native"
	t=$(now_ns); $KVMHOST exec -s "$S" -- true; secs "$t" "$(now_ns)" >>"$tmp/cmd.l1"
done

# 3. The same work here and in L1, alternating: host code (the profile model's unit
# tests: samples, symbols, call chains) and a build step (gcc -O2 of one VMM file).
rep=("$BUILD/tests/test_lib_profile")
cc=(gcc -O2 -std=c17 -D_GNU_SOURCE -Iinclude -Ilib -Ivpmu -Ivmi -Ivmm -Ivmm/profiling -c vmm/vcpu.c -o "$BUILD/bench-kvmhost.o")
for _ in $(seq "$RUNS"); do
	for w in rep cc; do
		declare -n argv=$w
		t=$(now_ns); "${argv[@]}" >/dev/null 2>&1; secs "$t" "$(now_ns)" >>"$tmp/$w.native"
		t=$(now_ns); $KVMHOST exec -s "$S" -- "${argv[@]}" >/dev/null 2>&1; secs "$t" "$(now_ns)" >>"$tmp/$w.l1"
	done
done
rm -f "$BUILD/bench-kvmhost.o"

# 4. The VMM in L1 (no native side here): a trivial boot, and pmutest's loop of 2*10^6
# instructions counted by the clock backend and exactly by the exact backend's emulator.
vmm() { $KVMHOST exec -s "$S" -- "$BUILD/kvmprof-vmm" "$@" >/dev/null 2>&1; }
for _ in $(seq "$RUNS"); do
	t=$(now_ns); vmm --cmdline "quiet start=/bin/exit"; secs "$t" "$(now_ns)" >>"$tmp/boot.vmm"
	t=$(now_ns); vmm --vpmu-backend=clock --cmdline "quiet start=/bin/pmutest:loop:1000000"; secs "$t" "$(now_ns)" >>"$tmp/clock.vmm"
	t=$(now_ns); vmm --vpmu-backend=exact --cmdline "quiet start=/bin/pmutest:loop:1000000"; secs "$t" "$(now_ns)" >>"$tmp/exact.vmm"
done

m() { median <"$tmp/$1"; }
echo "| what ($RUNS runs, medians) | here | in L1 | L1 / here (median of per-run ratios) |"
echo "|---|---|---|---|"
echo "| boot: \`kvmhost start\` until L1 serves | | $(m boot) s | |"
echo "| one command: \`true\` | $(m cmd.native) s | $(m cmd.l1) s | $(ratio_per_run "$tmp/cmd.l1" "$tmp/cmd.native") |"
echo "| host code: \`build/tests/test_lib_profile\` | $(m rep.native) s | $(m rep.l1) s | $(ratio_per_run "$tmp/rep.l1" "$tmp/rep.native") |"
echo "| build: \`gcc -O2 -c vmm/vcpu.c\` | $(m cc.native) s | $(m cc.l1) s | $(ratio_per_run "$tmp/cc.l1" "$tmp/cc.native") |"
echo "| kvmprof-vmm: boot, \`/bin/exit\`, power off | (no KVM) | $(m boot.vmm) s | |"
echo "| kvmprof-vmm: \`pmutest loop 10^6\`, clock backend | (no KVM) | $(m clock.vmm) s | |"
echo "| kvmprof-vmm: \`pmutest loop 10^6\`, exact backend | (no KVM) | $(m exact.vmm) s | exact / clock $(ratio_per_run "$tmp/exact.vmm" "$tmp/clock.vmm") |"
