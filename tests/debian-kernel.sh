#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Fetch a Debian cloud kernel and give it stable paths under $BUILD/debian:
#
#   vmlinuz    the bzImage (Linux 64-bit boot protocol)
#   vmlinux    the ELF decompressed from the bzImage's payload; checked to
#              carry the Xen PVH entry note (type 18), so it boots through PVH
#   modules/   irqbypass.ko kvm.ko kvm-amd.ko (decompressed if shipped so),
#              the modules named in DEBIAN_KERNEL_MODULES (space-separated,
#              as tests/kvmhost asks for virtio, 9p, overlay and virtiofs)
#              with the modules they depend on, and `order`: every module
#              file there, each after the ones it depends on (insmod order)
#   version    the kernel release (e.g. 6.1.0-56-cloud-amd64)
#
# The .deb comes from `apt-get download` of the package that
# linux-image-cloud-amd64 depends on (override: DEBIAN_KERNEL_PKG=name).
# DEBIAN_KERNEL_FLAVOUR=amd64 fetches the generic kernel instead (through
# linux-image-amd64) into $BUILD/debian-amd64: unlike the cloud kernel it
# has CONFIG_X86_MPPARSE=y (SMP from an MP table without ACPI) and
# CONFIG_DEVPORT=y. Idempotent: once everything is in place a run does
# nothing. Safe to run concurrently (flock).
# Usage: tests/debian-kernel.sh [BUILD_DIR]
set -eu

BUILD=${1:-${BUILD:-build}}
FLAVOUR=${DEBIAN_KERNEL_FLAVOUR:-cloud-amd64}
case $FLAVOUR in
	cloud-amd64) DIR=$BUILD/debian ;;
	amd64) DIR=$BUILD/debian-amd64 ;;
	*) echo "debian-kernel: error: DEBIAN_KERNEL_FLAVOUR must be cloud-amd64 or amd64, not '$FLAVOUR'" >&2; exit 1 ;;
esac
ME=debian-kernel

die() { echo "$ME: error: $*" >&2; exit 1; }

MODULES="irqbypass kvm kvm-amd ${DEBIAN_KERNEL_MODULES:-}"

# A module's name as .modinfo's depends= and insmod spell it: dashes are underscores.
modname() { echo "$1" | tr - _; }

have_all() {
	[ -f "$DIR/stamp" ] && [ -s "$DIR/vmlinuz" ] && [ -s "$DIR/vmlinux" ] && [ -f "$DIR/modules/order" ] || return 1
	for m in $MODULES; do
		grep -qx "$(modname "$m")" "$DIR/modules/names" 2>/dev/null || return 1
	done
}

# Fast path without taking the lock.
if have_all; then exit 0; fi

for t in apt-get apt-cache dpkg-deb readelf od flock; do
	command -v "$t" >/dev/null 2>&1 || die "missing tool '$t' (install apt, dpkg, binutils, coreutils, util-linux)"
done

mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)

# Serialise concurrent runs (unit tests and the nested harness may race).
exec 9>"$DIR/.lock"
flock 9
if have_all; then exit 0; fi

# --- 1. the .deb ------------------------------------------------------------
META=linux-image-$FLAVOUR
resolve_pkg() {
	apt-cache depends "$META" 2>/dev/null |
		sed -n "s/^ *Depends: \\(linux-image-[0-9][^ ]*-$FLAVOUR\\)\$/\\1/p" | head -n 1
}

deb=$(ls "$DIR"/linux-image-[0-9]*-"$FLAVOUR"_*_amd64.deb 2>/dev/null | grep -v -- '-dbg_' | head -n 1 || true)
if [ -z "$deb" ]; then
	pkg=${DEBIAN_KERNEL_PKG:-}
	[ -n "$pkg" ] || pkg=$(resolve_pkg)
	if [ -z "$pkg" ]; then
		echo "$ME: $META not known to apt, running apt-get update" >&2
		[ "$(id -u)" = 0 ] || die "$META unknown and 'apt-get update' needs root"
		apt-get update -qq >&2 || die "apt-get update failed"
		pkg=$(resolve_pkg)
	fi
	[ -n "$pkg" ] || die "cannot resolve linux-image-*-$FLAVOUR from $META's dependencies"
	echo "$ME: downloading $pkg" >&2
	tmp=$DIR/dl.tmp
	rm -rf "$tmp" && mkdir -p "$tmp"
	# apt-get download as root warns that it runs unsandboxed; harmless.
	(cd "$tmp" && apt-get download -q "$pkg" >&2 2>"$tmp.err") ||
	(apt-get update -qq >&2 && cd "$tmp" && apt-get download -q "$pkg" >&2) ||
		{ cat "$tmp.err" >&2 2>/dev/null; die "apt-get download $pkg failed"; }
	rm -f "$tmp.err"
	f=$(ls "$tmp"/*.deb 2>/dev/null | head -n 1)
	[ -n "$f" ] || die "apt-get download $pkg produced no .deb"
	mv "$f" "$DIR/"
	rmdir "$tmp" 2>/dev/null || true
	deb=$DIR/$(basename "$f")
fi

# --- 2. extract ---------------------------------------------------------------
root=$DIR/root
rm -rf "$root"
dpkg-deb -x "$deb" "$root" || die "dpkg-deb -x $deb failed"
vmlinuz=$(ls "$root"/boot/vmlinuz-* 2>/dev/null | head -n 1)
[ -n "$vmlinuz" ] || die "no boot/vmlinuz-* in $deb"
ver=${vmlinuz##*/vmlinuz-}
moddir=$root/lib/modules/$ver
[ -d "$moddir" ] || die "no lib/modules/$ver in $deb"

cp -f "$vmlinuz" "$DIR/vmlinuz.tmp" && mv -f "$DIR/vmlinuz.tmp" "$DIR/vmlinuz"

# --- 3. vmlinux from the bzImage payload -------------------------------------
# Setup header (Documentation/arch/x86/boot.rst): setup_sects at 0x1f1 (0
# means 4), "HdrS" at 0x202, payload_offset/payload_length at 0x248/0x24c,
# payload_offset counted from the start of the protected-mode code, which
# begins at (setup_sects + 1) * 512. The payload ends with 4 bytes holding
# the decompressed size (size_append), which the decompressors do not want.
u8()  { od -An -tu1 -j "$2" -N1 "$1" | tr -d ' '; }
u32() { od -An -tu4 -j "$2" -N4 "$1" | tr -d ' '; }
bz=$DIR/vmlinuz
[ "$(od -An -c -j 514 -N4 "$bz" | tr -d ' ')" = HdrS ] || die "$bz is not a bzImage (no HdrS)"
setup_sects=$(u8 "$bz" 497)
[ "$setup_sects" -ne 0 ] || setup_sects=4
poff=$(u32 "$bz" 584)
plen=$(u32 "$bz" 588)
start=$(( (setup_sects + 1) * 512 + poff ))
[ "$poff" -gt 0 ] && [ "$plen" -gt 4 ] || die "bzImage has no payload_offset/payload_length (boot protocol < 2.08?)"
magic=$(od -An -tx1 -j "$start" -N6 "$bz" | tr -d ' \n')
case $magic in
	1f8b*)         dec="gzip -dc" ;;
	fd377a585a00)  dec="xz -dc" ;;
	28b52ffd*)     dec="zstd -dc" ;;
	5d0000*)       dec="xz --format=lzma -dc" ;;
	425a68*)       dec="bzip2 -dc" ;;
	02214c18*)     dec="lz4 -dc" ;;
	*) die "unknown payload compression (magic $magic) at offset $start of $bz" ;;
esac
command -v "${dec%% *}" >/dev/null 2>&1 || die "need '${dec%% *}' to decompress the kernel payload"
want=$(u32 "$bz" $((start + plen - 4)))
tail -c +$((start + 1)) "$bz" | head -c $((plen - 4)) | $dec > "$DIR/vmlinux.tmp" ||
	die "decompressing the payload with '$dec' failed"
got=$(stat -c %s "$DIR/vmlinux.tmp")
[ "$got" = "$want" ] || die "decompressed payload is $got bytes, header says $want"
[ "$(od -An -tx1 -N5 "$DIR/vmlinux.tmp" | tr -d ' \n')" = 7f454c4602 ] ||
	die "decompressed payload is not a 64-bit ELF"
# PVH entry: ELF note owner "Xen", type 18 (XEN_ELFNOTE_PHYS32_ENTRY).
readelf -n "$DIR/vmlinux.tmp" 2>/dev/null |
	grep -Eq '^[[:space:]]*Xen[[:space:]]+0x[0-9a-f]+[[:space:]]+(Unknown note type: \(0x00000012\)|.*PHYS32_ENTRY)' ||
	die "vmlinux has no Xen ELF note type 18 (PHYS32_ENTRY): not PVH-bootable"
mv -f "$DIR/vmlinux.tmp" "$DIR/vmlinux"

# --- 4. modules, each after those it depends on ---------------------------------
rm -rf "$DIR/modules.tmp" && mkdir -p "$DIR/modules.tmp" || die "cannot write $DIR/modules.tmp"
seen=" "
add_module() { # NAME: the module's file, decompressed, after its dependencies
	n=$(modname "$1")
	case $seen in *" $n "*) return 0 ;; esac
	seen="$seen$n "
	src=$(find "$moddir" \( -name "$n.ko*" -o -name "$(echo "$n" | tr _ -).ko*" \) | head -n 1)
	[ -n "$src" ] || die "module $n not found in $deb"
	f=${src##*/}
	f=${f%.ko*}.ko
	case $src in
		*.ko.xz)  xz -dc "$src" ;;
		*.ko.zst) zstd -qdc "$src" ;;
		*.ko.gz)  gzip -dc "$src" ;;
		*)        cat "$src" ;;
	esac > "$DIR/modules.tmp/$f" || die "cannot decompress $src"
	# The recursion reuses n and f: keep this module's file name on a stack.
	stack="$f $stack"
	for d in $(readelf -p .modinfo "$DIR/modules.tmp/$f" | sed -n 's/.*depends=//p' | tr , ' '); do
		add_module "$d"
	done
	set -- $stack
	echo "$1" >> "$DIR/modules.tmp/order"
	modname "${1%.ko}" >> "$DIR/modules.tmp/names"
	shift
	stack="$*"
}
stack=
for m in $MODULES; do add_module "$m"; done
rm -rf "$DIR/modules" && mv "$DIR/modules.tmp" "$DIR/modules" || die "cannot move $DIR/modules.tmp into place"

echo "$ver" > "$DIR/version"
echo "$(basename "$deb")" > "$DIR/stamp"
echo "$ME: $ver ready in $DIR (vmlinuz, vmlinux, modules/)" >&2
