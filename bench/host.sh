#!/usr/bin/env bash
# System-wide profiling from the host (issue 5), each figure measured side by
# side in one run and printed as Markdown tables:
#   1. slowdown of a guest workload while `kvmprof record --vm SOCK -F 1000`
#      samples the VMM and the guest, against the same VMM (--control too)
#      with nobody attached: the bundled guest's /bin/split on 1 vCPU, which
#      times its own loop in guest time (ms=) and sleeps before and after it so
#      that the recording is in place before the loop starts and stops
#      (SIGINT, then sample-stop) before the guest powers off; alternating,
#      medians; with the VMM's own time per guest sample (sample-stop's
#      capture_mean_ns, which kvmprof record prints) and the forced VM exits
#      per sample (--vpmu-trace-pmi 0 counts exits by reason); and, to split
#      the cost, a third contender: the VMM's guest sampler alone at the same
#      rate (tests/e2e/ring_client.c draining the rings through kvmprof's
#      ring reader, no host perf events);
#   2. attribution against a known split: /bin/split spends 75% of its loop in
#      split_three_quarters and 25% in split_one_quarter; the same recordings'
#      reports (kvmprof report --guest-root), samples summed over the runs;
#   3. time to report ~10^6 samples: kvmprof report of a system-wide recording
#      (2 vCPUs running matmul and hash, -F 10000) against perf report of a
#      perf recording of a host program with as many samples (cpu-clock every
#      10 µs of bench/agent_work.c), alternating, medians; flat and with call
#      chains (record -g, report -g); samples per second and peak RSS.
# This host has no hardware PMU, so kvmprof record samples cpu-clock on both
# sides; the guest's virtual PMU plays no part and is off (--vpmu=off).
#   RUNS=N (default 7: this host is noisy), SAMPLES=N (default 1000000)
set -u
cd "$(dirname "$0")/.." || exit 1
# shellcheck source=bench/lib.sh
. bench/lib.sh
BUILD=${BUILD:-build}
RUNS=${RUNS:-7}
SAMPLES=${SAMPLES:-1000000}
VMM=$BUILD/kvmprof-vmm
KVMPROF=$BUILD/kvmprof
WORK=$BUILD/bench/agent-work
RING=$BUILD/tests/e2e/ring_client # the VMM's guest sampler drained without kvmprof's host side
ROUNDS=150000 # /bin/split's loop: ~1.1 s of guest ring 3 on this host
PAUSE=1000    # ms /bin/split sleeps before and after it: kvmprof record attaches in ~0.2 s
RATE=10000    # Hz per thread for the 10^6-sample recording
bench_start

fail() { echo "bench-host: $*" >&2; exit 1; }
# report_count FILE SYMBOL: samples of SYMBOL in a kvmprof report.
report_count() { awk -v s="$2" '$NF == s { n += $1 } END { print n + 0 }' "$1"; }

command -v perf >/dev/null || fail "perf is not installed (apt-get install linux-perf)"
echo "bench-host: 1-2 bundled guest /bin/split on 1 vCPU, kvmprof record -F 1000, the guest sampler alone" \
	"or nothing attached, $RUNS runs each way..." >&2

# 1 and 2. The same VMM command line every way; only what is attached differs.
for run in $(seq "$RUNS"); do
	for mode in on guest off; do
		sock=$tmp/vm.sock
		# In a subshell whose `times` gives the VMM's CPU time: guest time also
		# counts the moments other processes hold this shared host's CPUs.
		(
			"$VMM" --cpus 1 --vpmu=off --vpmu-trace-pmi 0 --control "$sock" \
				--cmdline "quiet start=/bin/split:$ROUNDS:$PAUSE" >"$tmp/out" 2>"$tmp/err"
			rc=$?
			times >"$tmp/times"
			exit $rc
		) &
		vmm_pid=$!
		if [ $mode != off ]; then
			wait_sock "$sock" || fail "the VMM made no control socket: $(tail -n 3 "$tmp/err")"
			if [ $mode = on ]; then
				"$KVMPROF" record --vm "$sock" -F 1000 -q -o "$tmp/rec.$run" 2>"$tmp/rec.err" &
			else
				# -x: leaves without sample-stop when killed or after -d; the VMM stops sampling then.
				"$RING" -p 1000000 -x -d 60 "$sock" >/dev/null 2>"$tmp/rec.err" &
			fi
			rec_pid=$!
			# Stop the recording once the loop has printed its line, during the pause after it.
			until grep -q '^split:' "$tmp/out"; do
				kill -0 "$vmm_pid" 2>/dev/null || break
				sleep 0.05
			done
			if [ $mode = on ]; then
				kill -INT "$rec_pid"
				wait "$rec_pid" || fail "kvmprof record failed: $(tail -n 3 "$tmp/rec.err")"
			else
				kill -TERM "$rec_pid"
				wait "$rec_pid"
			fi
			rec_pid=
		fi
		wait "$vmm_pid" || fail "the $mode run failed: $(tail -n 3 "$tmp/err")"
		vmm_pid=
		ms=$(field ms "$tmp/out")
		[ -n "$ms" ] || fail "no split line in the $mode run: $(tail -n 3 "$tmp/out")"
		echo "$ms" >>"$tmp/ms.$mode"
		# The children's line of `times`: user and system time as NmS.SSSs.
		sed -n '2s/^\([0-9]*\)m\([0-9.]*\)s \([0-9]*\)m\([0-9.]*\)s$/\1 \2 \3 \4/p' "$tmp/times" |
			awk '{ printf "%.0f\n", ($1 * 60 + $2 + $3 * 60 + $4) * 1000 }' >>"$tmp/cpu.$mode"
		echo "$(reason 'signal (EINTR)' "$tmp/err")" >>"$tmp/eintr.$mode"
		if [ $mode = on ]; then
			cap=$(sed -n 's/.*guest sample in \([0-9.]*\) us on average (max \([0-9.]*\) us).*/\1 \2/p' "$tmp/rec.err")
			gs=$(sed -n 's/.*samples), \([0-9]*\) guest samples.*/\1/p' "$tmp/rec.err")
			hg=$(sed -n 's/.* host samples (\([0-9]*\) more fell in guest code.*/\1/p' "$tmp/rec.err")
			[ -n "$cap" ] && [ -n "$gs" ] ||
				fail "kvmprof record gave no guest samples or capture figure: $(cat "$tmp/rec.err")"
			echo "$cap $gs ${hg:-0}" >>"$tmp/cap"
			"$KVMPROF" report -i "$tmp/rec.$run" --guest-root "$BUILD/guest" >"$tmp/rep.$run" 2>&1 ||
				fail "kvmprof report failed: $(tail -n 3 "$tmp/rep.$run")"
			echo "$(report_count "$tmp/rep.$run" split_three_quarters) $(report_count "$tmp/rep.$run" split_one_quarter)" \
				>>"$tmp/split"
		fi
	done
done
ms_on=$(median <"$tmp/ms.on")
ms_off=$(median <"$tmp/ms.off")
ms_guest=$(median <"$tmp/ms.guest")
slow_on=$(ratio_per_run "$tmp/ms.on" "$tmp/ms.off")
slow_guest=$(ratio_per_run "$tmp/ms.guest" "$tmp/ms.off")
cpu_slow_on=$(ratio_per_run "$tmp/cpu.on" "$tmp/cpu.off")
cpu_slow_guest=$(ratio_per_run "$tmp/cpu.guest" "$tmp/cpu.off")
cpu_on=$(median <"$tmp/cpu.on")
cpu_off=$(median <"$tmp/cpu.off")
cpu_guest=$(median <"$tmp/cpu.guest")
cap_mean=$(awk '{ print $1 }' "$tmp/cap" | median)
cap_max=$(awk '{ print $2 }' "$tmp/cap" | median)
gs_run=$(awk '{ print $3 }' "$tmp/cap" | median)
hg_run=$(awk '{ print $4 }' "$tmp/cap" | median)
# Forced exits per guest sample and the time each sample costs the guest, from the sums / medians.
read -r eintr_on gs_sum < <(paste "$tmp/eintr.on" "$tmp/cap" | awk '{ e += $1; g += $4 } END { print e, g }')
eintr_off=$(awk '{ e += $1 } END { print e }' "$tmp/eintr.off")
exits_ps=$(awk -v a="$eintr_on" -v b="$eintr_off" -v n="$gs_sum" 'BEGIN { printf "%.2f", (a - b) / n }')
us_ps=$(awk -v r="$slow_on" -v b="$ms_off" -v n="$gs_run" 'BEGIN { printf "%.1f", (r - 1) * b * 1000 / n }')
rate=$(awk -v n="$gs_run" -v ms="$ms_on" 'BEGIN { printf "%.0f", n / (ms / 1000) }')
read -r s3 s1 < <(awk '{ a += $1; b += $2 } END { print a, b }' "$tmp/split")
[ "$((s3 + s1))" -gt 0 ] || fail "no samples in split_three_quarters or split_one_quarter: $(head -n 30 "$tmp/rep.1")"
share=$(awk -v a="$s3" -v b="$s1" 'BEGIN { printf "%.1f%% / %.1f%%", a * 100 / (a + b), b * 100 / (a + b) }')
# The binomial standard error of the measured share, to judge the difference from 75%.
sigma=$(awk -v a="$s3" -v b="$s1" 'BEGIN { n = a + b; p = a / n; printf "%.1f", 100 * sqrt(p * (1 - p) / n) }')

# 3. A system-wide recording of ~SAMPLES samples: the rate from a short one first.
echo "bench-host: 3 recording ~$SAMPLES samples with kvmprof record (2 vCPUs, -F $RATE) and perf..." >&2
record_long() { # SECONDS FILE [RECORD FLAGS]
	local sock=$tmp/vm.sock secs=$1 out=$2
	shift 2
	"$VMM" --cpus 2 --vpmu=off --control "$sock" \
		--cmdline "quiet start=/bin/matmul:128:10000000,/bin/hash:10000000" >/dev/null 2>"$tmp/long.err" &
	vmm_pid=$!
	wait_sock "$sock" || fail "the VMM made no control socket: $(tail -n 3 "$tmp/long.err")"
	"$KVMPROF" record --vm "$sock" -F $RATE -q --duration "$secs" "$@" -o "$out" 2>"$tmp/rec.err" ||
		fail "kvmprof record failed: $(tail -n 3 "$tmp/rec.err")"
	kill -TERM "$vmm_pid"
	wait "$vmm_pid"
	vmm_pid=
}
ksamples() { "$KVMPROF" report -i "$1" 2>/dev/null | sed -n 's/^event: .*, \([0-9]*\) samples, .*/\1/p' | head -n 1; }
record_long 3 "$tmp/cal.data"
cal=$(ksamples "$tmp/cal.data")
secs=$(awk -v s="$SAMPLES" -v c="${cal:-0}" 'BEGIN { if (c < 1) c = 1; t = s * 3 / c; if (t > 120) t = 120; printf "%.1f", t }')
pstat() { perf report -i "$1" --stats 2>/dev/null | sed -n 's/^ *SAMPLE events: *\([0-9]*\).*/\1/p' | head -n 1; }
# Flat (k.flat, p.flat) and with call chains (record -g: k.g, p.g).
declare -A n wms
for g in flat g; do
	if [ $g = flat ]; then gflag=(); else gflag=(-g); fi
	record_long "$secs" "$tmp/k.$g" "${gflag[@]}"
	n[k.$g]=$(ksamples "$tmp/k.$g")
	[ $g = flat ] && k_guest=$(sed -n 's/.*samples), \([0-9]*\) guest samples.*/\1/p' "$tmp/rec.err")
	# perf: as many samples of a host program (calibrated like bench/agent.sh).
	perf record -q -e cpu-clock -c 10000 "${gflag[@]}" -o "$tmp/pcal.data" -- "$WORK" 500 >/dev/null 2>"$tmp/pcal.err" ||
		fail "perf record failed: $(tail -n 3 "$tmp/pcal.err")"
	pcal=$(pstat "$tmp/pcal.data")
	work_ms=$(awk -v s="${n[k.$g]:-0}" -v c="${pcal:-0}" 'BEGIN { if (c < 1) c = 1; printf "%d", s * 500 / c }')
	# The program's CPU share changes with what else runs on this shared host:
	# rescale and record again (twice at most) until perf's count is within 10%.
	for _ in 1 2 3; do
		perf record -q -e cpu-clock -c 10000 "${gflag[@]}" -o "$tmp/p.$g" -- "$WORK" "$work_ms" >/dev/null 2>"$tmp/prec.err" ||
			fail "perf record failed: $(tail -n 3 "$tmp/prec.err")"
		n[p.$g]=$(pstat "$tmp/p.$g")
		awk -v p="${n[p.$g]:-0}" -v k="${n[k.$g]:-0}" 'BEGIN { exit !(p > 0.9 * k && p < 1.1 * k) }' && break
		work_ms=$(awk -v w="$work_ms" -v p="${n[p.$g]:-0}" -v k="${n[k.$g]:-0}" 'BEGIN { if (p < 1) p = 1; printf "%d", w * k / p }')
	done
	wms[$g]=$work_ms
done
echo "bench-host: 3 timing the reports, $RUNS runs each..." >&2
for _ in $(seq "$RUNS"); do
	for g in flat g; do
		if [ $g = flat ]; then gflag=(); else gflag=(-g); fi
		t0=$(now_ns)
		"$KVMPROF" report -i "$tmp/k.$g" --guest-root "$BUILD/guest" "${gflag[@]}" >/dev/null 2>&1 || fail "kvmprof report failed"
		t1=$(now_ns)
		perf report -i "$tmp/p.$g" --stdio --sort dso,sym "${gflag[@]}" >/dev/null 2>&1 || fail "perf report failed"
		t2=$(now_ns)
		echo $(((t1 - t0) / 1000000)) >>"$tmp/rk.$g"
		echo $(((t2 - t1) / 1000000)) >>"$tmp/rp.$g"
	done
done
# Peak RSS of each report, once (GNU time's %M, KiB), apart from the timed runs.
declare -A rss
for g in flat g; do
	if [ $g = flat ]; then gflag=(); else gflag=(-g); fi
	/usr/bin/time -f %M -o "$tmp/rss" "$KVMPROF" report -i "$tmp/k.$g" --guest-root "$BUILD/guest" "${gflag[@]}" \
		>/dev/null 2>&1 || fail "kvmprof report failed"
	rss[k.$g]=$(tail -n 1 "$tmp/rss")
	/usr/bin/time -f %M -o "$tmp/rss" perf report -i "$tmp/p.$g" --stdio --sort dso,sym "${gflag[@]}" >/dev/null 2>&1 ||
		fail "perf report failed"
	rss[p.$g]=$(tail -n 1 "$tmp/rss")
done
mb() { awk -v b="$(stat -c %s "$1")" 'BEGIN { printf "%.1f", b / 1e6 }'; }
row() { # g label
	local k p
	k=$(median <"$tmp/rk.$1")
	p=$(median <"$tmp/rp.$1")
	printf '| %s | %s samples, %s MB: %s ms, %s k samples/s, %s MB peak RSS | %s samples (%s ms of CPU), %s MB: %s ms, %s k samples/s, %s MB peak RSS | %s |\n' "$2" \
		"${n[k.$1]}" "$(mb "$tmp/k.$1")" "$k" "$(awk -v n="${n[k.$1]}" -v ms="$k" 'BEGIN { printf "%.0f", n / ms }')" \
		"$(awk -v r="${rss[k.$1]}" 'BEGIN { printf "%.0f", r / 1024 }')" \
		"${n[p.$1]}" "${wms[$1]}" "$(mb "$tmp/p.$1")" "$p" "$(awk -v n="${n[p.$1]}" -v ms="$p" 'BEGIN { printf "%.0f", n / ms }')" \
		"$(awk -v r="${rss[p.$1]}" 'BEGIN { printf "%.0f", r / 1024 }')" \
		"$(awk -v r="$(ratio_per_run "$tmp/rp.$1" "$tmp/rk.$1")" -v nk="${n[k.$1]}" -v np="${n[p.$1]}" \
			'BEGIN { printf "%.2f", r * nk / np }')"
}

cat <<TABLE

System-wide profiling, bundled guest on 1 vCPU (--vpmu=off), kvmprof record -F 1000 (cpu-clock: no
hardware PMU here), host $(uname -r), $RUNS runs each way (medians; ratios: the median of each run's own):

| measure | value |
|---|---|
| /bin/split loop ($ROUNDS rounds), recorded / not recorded (VMM with --control both ways), guest time | $ms_on ms / $ms_off ms; per run $(awk -v r="$slow_on" 'BEGIN { printf "%.3f (%+.1f%%)", r, (r - 1) * 100 }') |
| the same, the VMM's guest sampler alone (1 ms, no host perf events) / not recorded | $ms_guest ms / $ms_off ms; per run $(awk -v r="$slow_guest" 'BEGIN { printf "%.3f (%+.1f%%)", r, (r - 1) * 100 }') |
| the VMM's CPU time (user + system, whole run): recorded, sampler alone, not recorded | $cpu_on ms, $cpu_guest ms, $cpu_off ms; per run $(awk -v a="$cpu_slow_on" -v g="$cpu_slow_guest" 'BEGIN { printf "%+.1f%%, %+.1f%%", (a - 1) * 100, (g - 1) * 100 }') |
| guest samples per run; per second of the loop | $gs_run; $rate |
| host samples per run that struck guest code (dropped: guest time) | $hg_run |
| the VMM's time per guest sample (sample-stop's capture_mean_ns / capture_max_ns) | mean $cap_mean µs (max $cap_max µs) |
| forced VM exits (signal, EINTR) per guest sample: (recorded − not recorded) / samples | $exits_ps |
| guest time lost per guest sample: (recorded − not recorded) / samples | $us_ps µs |

Attribution of the same recordings' samples (kvmprof report --guest-root $BUILD/guest), summed over $RUNS runs:

| function | known share | samples | measured share |
|---|---|---|---|
| split_three_quarters / split_one_quarter | 75% / 25% | $s3 / $s1 | $share (± $sigma, one standard error) |

Time to report ~$SAMPLES samples on this host, $RUNS runs each (medians; the last column the median of each run's own ratio), peak RSS from one run:

| report | kvmprof report --guest-root (2 vCPUs, matmul and hash, -F $RATE, $secs s) | perf report --stdio --sort dso,sym (cpu-clock every 10 µs of $WORK) | kvmprof's samples/s / perf's |
|---|---|---|---|
$(row flat "flat ($k_guest guest samples)")
$(row g "call chains (record -g; report -g)")
TABLE
