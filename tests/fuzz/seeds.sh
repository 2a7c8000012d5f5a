#!/usr/bin/env bash
# Seed corpora the build makes from its own outputs, next to the small
# checked-in ones (tests/fuzz/corpus/<target>/): real kernels, a real
# initrd, a real recording. Each fuzz run starts from both.
set -eu
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
OUT=$BUILD/fuzz/seeds
rm -rf "$OUT"
mkdir -p "$OUT"/{sample_file,sample_records,kallsyms,procfs,guest_mem,boot,cpio,vpmu_filter,control,task_layout,plugin_elf,qemu_hmp}

# qemu_hmp: QEMU 7.2's own replies (tests/fixtures/qemu-7.2), each with its parser's selector byte.
for f in tests/fixtures/qemu-7.2/registers-*.txt; do
	{ printf '\000'; cat "$f"; } >"$OUT/qemu_hmp/$(basename "$f")"
done
for f in tests/fixtures/qemu-7.2/mtree-*.txt; do
	{ printf '\001'; cat "$f"; } >"$OUT/qemu_hmp/$(basename "$f")"
done
printf '\002Host virtual address for 0x100000 (pc.ram) is 0x7f3123f00000\r\n' >"$OUT/qemu_hmp/gpa2hva"

# boot: the PVH fixtures and a cut bzImage header (a full bzImage is 8 MB: too slow to mutate).
for f in "$BUILD"/fixtures/pvh-*.elf; do
	printf '\001\000\000' | cat - "$f" >"$OUT/boot/$(basename "$f")"
done
if [ -f "$BUILD/debian/vmlinuz" ]; then
	{ printf '\002\000\000'; head -c 4096 "$BUILD/debian/vmlinuz"; } >"$OUT/boot/debian-vmlinuz-head"
fi
# plugin_elf: the test plugins, plain and the one built with ASan (its DT_NEEDED names libasan).
cp "$BUILD"/tests/plugins/not_plugin.so "$OUT/plugin_elf/plain.so"
cp "$BUILD"/tests/plugins/sanitized/good.so "$OUT/plugin_elf/asan.so"
# cpio: the bundled guest's initrd, cut to its first entries.
head -c 16384 "$BUILD/guest/initrd.cpio" >"$OUT/cpio/initrd-head"
# sample_file: a short real recording (flag byte 0: plain reading), and its cut (flag 1: --recover).
if "$BUILD/kvmprof-agent" record -o "$OUT/rec.data" -F 2000 -- sh -c 'i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done' \
	>/dev/null 2>&1; then
	# Without its kallsyms (most of the file) so that mutations reach the samples.
	{ printf '\000'; cat "$OUT/rec.data"; } >"$OUT/sample_file/recording"
	{ printf '\001'; head -c 2000 "$OUT/rec.data"; } >"$OUT/sample_file/recording-cut"
	rm -f "$OUT/rec.data"
fi
# ...and one with --call-graph dwarf (small stack copies): USER_STACK records, which the report unwinds.
if "$BUILD/kvmprof-agent" record --call-graph dwarf,256 -o "$OUT/rec.data" -F 2000 -- \
	sh -c 'i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done' >/dev/null 2>&1; then
	{ printf '\000'; cat "$OUT/rec.data"; } >"$OUT/sample_file/recording-dwarf"
	rm -f "$OUT/rec.data"
fi
# kallsyms: this machine's, cut (addresses are zero without privilege; both are seeds).
head -c 8192 /proc/kallsyms >"$OUT/kallsyms/proc-kallsyms" 2>/dev/null || true
# procfs: this process's maps lines and the online CPU list.
i=0
while IFS= read -r line && [ $i -lt 8 ]; do
	printf '%s' "$line" >"$OUT/procfs/maps-$i"
	i=$((i + 1))
done </proc/self/maps
cat /sys/devices/system/cpu/online >"$OUT/procfs/cpu-online" 2>/dev/null || true
