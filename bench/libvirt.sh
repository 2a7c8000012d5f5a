#!/usr/bin/env bash
# What profiling a libvirt domain costs (issue 15), measured side by side in
# one run and printed as Markdown tables:
#   1. a libvirt domain (QEMU, 1 vCPU, the bundled guest's /bin/split, which
#      times its own loop in guest time, ms=, and sleeps before and after it
#      so that the recording is in place first): the loop's time with
#      `kvmprof record --domain -F 1000` at the default register rate (100
#      Hz), at the highest (250 Hz), and with nothing attached; alternating,
#      medians. With each: QEMU's and libvirtd's CPU time over the loop (the
#      kernel's accounting: the monitor's round trips cost both), kvmprof's
#      own CPU time per second recorded, the monitor's round trip per
#      register sample and the register samples it reached per second (the
#      recording is stopped with SIGINT in the pause after the loop);
#   2. the same loop under kvmprof-vmm, `kvmprof record --vm -F 1000` against
#      nothing attached, for comparison;
#   3. attribution against a known split: /bin/split spends 75% of its loop
#      in split_three_quarters and 25% in split_one_quarter; the default-rate
#      domain recordings' reports, samples summed over the runs.
# This host has no hardware PMU: kvmprof record samples cpu-clock.
#   RUNS=N (default 5), ROUNDS=N (the loop, default 400000: ~3 s here)
set -u
cd "$(dirname "$0")/.." || exit 1
# shellcheck source=bench/lib.sh
. bench/lib.sh
BUILD=${BUILD:-build}
RUNS=${RUNS:-5}
ROUNDS=${ROUNDS:-400000}
PAUSE=2500 # ms /bin/split sleeps before and after its loop: kvmprof record --domain attaches in ~0.3 s
VMM=$BUILD/kvmprof-vmm
KVMPROF=$BUILD/kvmprof
URI=qemu:///system
VIRSH="virsh -q -c $URI"
tmp=$(mktemp -d)
chmod 755 "$tmp"
dom=kvmprof-bench-$$
vmm_pid=
rec_pid=
cleanup() {
	$VIRSH destroy "$dom" >/dev/null 2>&1
	bench_cleanup
}
trap cleanup EXIT

fail() { echo "bench-libvirt: $*" >&2; exit 1; }
# ticks PID: user + system clock ticks of a process (0 when it is gone).
ticks() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
hz=$(getconf CLK_TCK)
report_count() { awk -v s="$2" '$NF == s { n += $1 } END { print n + 0 }' "$1"; }
wait_line() { # FILE PATTERN SECONDS
	local i
	for i in $(seq $(($3 * 20))); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

[ "$(id -u)" = 0 ] || fail "needs root (it runs libvirt domains and reads QEMU's memory)"
# The daemons and /dev/kvm as the tests set them up.
# shellcheck source=tests/libvirt/setup.sh
. tests/libvirt/setup.sh
libvirt_start "$URI" || fail "libvirtd does not answer at $URI"
type=$(libvirt_domain_type)
cp "$BUILD/guest/kernel.elf" "$BUILD/guest/initrd.cpio" "$tmp/"
chmod 644 "$tmp/kernel.elf" "$tmp/initrd.cpio"
libvirt_guest_xml "$dom" "$type" 1 "$tmp" "quiet start=/bin/split:$ROUNDS:$PAUSE" "$tmp/console" >"$tmp/dom.xml"
libvirtd_pid=$(pgrep -xo libvirtd)

echo "bench-libvirt: 1 a $type domain running /bin/split ($ROUNDS rounds), kvmprof record --domain at 100 Hz," \
	"at 250 Hz, or nothing attached, $RUNS runs each way..." >&2
for run in $(seq "$RUNS"); do
	for mode in off on on250; do
		rm -f "$tmp/console"
		$VIRSH create "$tmp/dom.xml" >"$tmp/create" 2>&1 || fail "virsh create: $(cat "$tmp/create")"
		qpid=$(cat "/run/libvirt/qemu/$dom.pid")
		wait_line "$tmp/console" 'kvmprof guest' 60 || fail "the guest did not boot: $(cat "$tmp/console")"
		if [ $mode != off ]; then
			hzopt=
			[ $mode = on250 ] && hzopt="--guest-hz 250"
			# shellcheck disable=SC2086
			"$KVMPROF" record --domain "$dom" -F 1000 $hzopt -q -o "$tmp/rec.$mode.$run" 2>"$tmp/rec.err" &
			rec_pid=$!
		fi
		# The loop starts PAUSE ms after the guest's programs do: QEMU's and libvirtd's CPU over exactly the loop.
		sleep "$(awk -v p=$PAUSE 'BEGIN { print p / 2000 }')"
		q0=$(ticks "$qpid")
		l0=$(ticks "$libvirtd_pid")
		w0=$(date +%s%N)
		wait_line "$tmp/console" '^split:' 120 || fail "no split line: $(cat "$tmp/console")"
		q1=$(ticks "$qpid")
		l1=$(ticks "$libvirtd_pid")
		w1=$(date +%s%N)
		ms=$(field ms "$tmp/console")
		echo "$ms" >>"$tmp/ms.$mode"
		# CPU ms per second of wall time, from the middle of the pause to the loop's end.
		awk -v a="$q0" -v b="$q1" -v w="$((w1 - w0))" -v hz="$hz" 'BEGIN { printf "%.1f\n", (b - a) * 1000 / hz / (w / 1e9) }' \
			>>"$tmp/qemu.$mode"
		awk -v a="$l0" -v b="$l1" -v w="$((w1 - w0))" -v hz="$hz" 'BEGIN { printf "%.1f\n", (b - a) * 1000 / hz / (w / 1e9) }' \
			>>"$tmp/libvirtd.$mode"
		if [ $mode != off ]; then
			# Stopped in the pause after the loop, as a user would (Ctrl-C), before the guest powers off;
			# its CPU time read just before (what it does after, closing the file, is not the recording's).
			self=$(ticks "$rec_pid")
			kill -INT "$rec_pid"
			wait "$rec_pid" || fail "kvmprof record failed: $(tail -n 3 "$tmp/rec.err")"
			rec_pid=
			secs=$(sed -n 's/.* lost in \([0-9.]*\) s, written.*/\1/p' "$tmp/rec.err")
			awk -v t="$self" -v s="$secs" -v hz="$hz" 'BEGIN { printf "%.1f\n", t * 1000 / hz / s }' >>"$tmp/self.$mode"
			sed -n "s/.* vCPUs \([0-9]*\) times (\([0-9]*\) failed), \([0-9.]*\) ms a round trip on average (max \([0-9.]*\) ms).*/\1 \3 \4/p" \
				"$tmp/rec.err" | awk -v s="$secs" '{ printf "%.1f %s %s\n", $1 / s, $2, $3 }' >>"$tmp/rtt.$mode"
			grep -q 'round trip' "$tmp/rec.err" || fail "no monitor figures: $(cat "$tmp/rec.err")"
		fi
		for _ in $(seq 200); do kill -0 "$qpid" 2>/dev/null || break; sleep 0.05; done
		$VIRSH destroy "$dom" >/dev/null 2>&1
		if [ $mode = on ]; then
			"$KVMPROF" report -i "$tmp/rec.on.$run" --guest-root "$BUILD/guest" >"$tmp/rep.$run" 2>&1 ||
				fail "kvmprof report failed: $(tail -n 3 "$tmp/rep.$run")"
			echo "$(report_count "$tmp/rep.$run" split_three_quarters) $(report_count "$tmp/rep.$run" split_one_quarter)" \
				>>"$tmp/split"
		fi
	done
done

echo "bench-libvirt: 2 the same loop under kvmprof-vmm, kvmprof record --vm or nothing, $RUNS runs each way..." >&2
for run in $(seq "$RUNS"); do
	for mode in off on; do
		sock=$tmp/vm.sock
		rm -f "$sock"
		"$VMM" --cpus 1 --vpmu=off --control "$sock" --cmdline "quiet start=/bin/split:$ROUNDS:$PAUSE" \
			>"$tmp/vmm.out" 2>"$tmp/vmm.err" &
		vmm_pid=$!
		if [ $mode = on ]; then
			for _ in $(seq 500); do [ -S "$sock" ] && break; sleep 0.01; done
			"$KVMPROF" record --vm "$sock" -F 1000 -q -o "$tmp/vm.data" 2>"$tmp/vrec.err" &
			rec_pid=$!
		fi
		wait "$vmm_pid" || fail "kvmprof-vmm failed: $(tail -n 3 "$tmp/vmm.err")"
		vmm_pid=
		if [ $mode = on ]; then
			wait "$rec_pid"
			rec_pid=
		fi
		field ms "$tmp/vmm.out" >>"$tmp/vms.$mode"
	done
done

m() { median <"$tmp/$1"; }
col() { awk -v c="$2" '{ print $c }' "$tmp/$1" | median; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.1f%%", (a / b - 1) * 100 }'; }
read -r s3 s1 < <(awk '{ a += $1; b += $2 } END { print a, b }' "$tmp/split")
[ "$((s3 + s1))" -gt 0 ] || fail "no split samples: $(head -n 30 "$tmp/rep.1")"
share=$(awk -v a="$s3" -v b="$s1" 'BEGIN { printf "%.1f%% / %.1f%%", a * 100 / (a + b), b * 100 / (a + b) }')
sigma=$(awk -v a="$s3" -v b="$s1" 'BEGIN { n = a + b; p = a / n; printf "%.1f", 100 * sqrt(p * (1 - p) / n) }')

cat <<EOF

### A libvirt domain ($type, 1 vCPU) running /bin/split ($ROUNDS rounds), $RUNS runs each way, medians

| | nothing attached | record --domain, 100 Hz registers | record --domain, 250 Hz registers |
|---|---:|---:|---:|
| the guest's loop (ms) | $(m ms.off) | $(m ms.on) ($(ratio "$(m ms.on)" "$(m ms.off)")) | $(m ms.on250) ($(ratio "$(m ms.on250)" "$(m ms.off)")) |
| QEMU's CPU (ms per s, over the loop and the half pause before it) | $(m qemu.off) | $(m qemu.on) | $(m qemu.on250) |
| libvirtd's CPU (ms per s, the same window) | $(m libvirtd.off) | $(m libvirtd.on) | $(m libvirtd.on250) |
| kvmprof's own CPU (ms per s recorded) | | $(m self.on) | $(m self.on250) |
| register samples reached (per s) | | $(col rtt.on 1) | $(col rtt.on250 1) |
| monitor round trip, mean (ms) | | $(col rtt.on 2) | $(col rtt.on250 2) |
| monitor round trip, max (ms) | | $(col rtt.on 3) | $(col rtt.on250 3) |

### The same loop under kvmprof-vmm (1 vCPU), $RUNS runs each way, medians

| | nothing attached | kvmprof record --vm |
|---|---:|---:|
| the guest's loop (ms) | $(m vms.off) | $(m vms.on) ($(ratio "$(m vms.on)" "$(m vms.off)")) |

### Attribution in the domain recordings (100 Hz registers, $RUNS runs summed)

split_three_quarters / split_one_quarter: $share of $((s3 + s1)) guest samples (expected 75% / 25%; binomial standard error ${sigma} points)
EOF
