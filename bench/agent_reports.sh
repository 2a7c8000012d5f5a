#!/usr/bin/env bash
# bench-agent part 4, which needs no KVM: time to report recordings of
# several programs, kvmprof-agent report of a kvmprof-agent recording against
# perf report of a perf recording of the same program at the same period
# (cpu-clock every 10 µs; gcc every 100 µs, see below), alternating,
# medians; per sample, since the two recordings of one program never hold
# the same number of samples.
#   agent-work   the bench's own program (bench/agent_work.c), ~SAMPLES samples,
#                flat and with call chains;
#   python3      held out: Debian's /usr/bin/python3 running a loop for
#                HELD_CPU_S seconds of CPU (the
#                interpreter's own symbols, libc, ld.so, the kernel);
#   gcc -O2      held out: Debian's gcc compiling a generated C file (three
#                processes: the driver, cc1 with its large symbol table, as),
#                sampled every GCC_PERIOD ns of cpu-clock (default 100000):
#                at 10 µs, on a host where the sampling interrupt costs about
#                as much as the period (a PVM guest under load), cc1 barely
#                ran (1.6 s of CPU in a 300 s recording that did not end).
#                The python loop with call chains is sampled every
#                HELD_G_PERIOD ns (default 100000) for the same reason: at
#                10 µs neither kvmprof-agent nor perf record had let it have
#                3 s of CPU after 90 s (2026-11-29, loaded host), at 100 µs it
#                had them in 19 s.
# Each report run is timed by GNU time: wall, CPU (user + system) and peak
# RSS, every run. The ratios are of samples per CPU second, the median of
# each run's own: on a host shared with other work the wall time measures
# the queue for the CPU as much as the report (on 2026-11-29 a 0.45 s CPU
# report took 1.9-5.1 s of wall), while CPU time counts the report's own work.
# %U and %S have 10 ms steps: ~3% of a 0.3 s report.
#   RUNS=N (default 5), SAMPLES=N (default 1000000), HELD_CPU_S=N (the python
#   loop's CPU seconds, default 5), GCC_PERIOD=NS, HELD_G_PERIOD=NS, HELD_OUT=0 skips the
#   held-out programs
set -u
cd "$(dirname "$0")/.." || exit 1
# shellcheck source=bench/lib.sh
. bench/lib.sh
BUILD=${BUILD:-build}
RUNS=${RUNS:-5}
SAMPLES=${SAMPLES:-1000000}
HELD_OUT=${HELD_OUT:-1}
HELD_CPU_S=${HELD_CPU_S:-5}
GCC_PERIOD=${GCC_PERIOD:-100000}
HELD_G_PERIOD=${HELD_G_PERIOD:-100000}
AGENT=$BUILD/kvmprof-agent
WORK=$BUILD/bench/agent-work
PYTHON=/usr/bin/python3
GCC=/usr/bin/gcc
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() { echo "bench-agent: $*" >&2; exit 1; }
command -v perf >/dev/null || fail "perf is not installed (apt-get install linux-perf)"
[ -x "$AGENT" ] || fail "$AGENT is missing (make $AGENT)"
[ -x "$WORK" ] || fail "$WORK is missing (make $WORK)"
[ -x /usr/bin/time ] || fail "GNU time is not installed (apt-get install time)"

# The held-out programs' inputs: fixed, so every run of the bench records the same work.
# The python loop stops at HELD_CPU_S seconds of its own CPU time (~10^5
# samples a second at -c 10000), whatever the host's speed.
cat >"$tmp/loop.py" <<PY
import time
s = i = 0
while time.process_time() < $HELD_CPU_S:
    for _ in range(1000):
        s += len(str(i * i)) + len(repr(float(i) / 7))
        i += 1
print(s)
PY
for i in $(seq 400); do
	printf 'int f%d(const int *a, int n) { int s = %d; for (int j = 0; j < n; j++) s += (a[j] * %d) ^ (s >> 3); return s; }\n' "$i" "$i" "$i"
done >"$tmp/gen.c"

# record NAME G PERIOD CMD...: kvmprof-agent and perf recordings of CMD (G: plain or callgraph),
# cpu-clock every PERIOD ns.
declare -A nsamp size label
record() {
	local name=$1 g=$2 period=$3 gflag=()
	shift 3
	[ "$g" = callgraph ] && gflag=(-g)
	"$AGENT" record -q -e cpu-clock -c "$period" "${gflag[@]}" -o "$tmp/k.$name.$g" -- "$@" >/dev/null 2>"$tmp/rec.err" ||
		fail "kvmprof-agent record of $* failed: $(tail -n 3 "$tmp/rec.err")"
	perf record -q -e cpu-clock -c "$period" "${gflag[@]}" -o "$tmp/p.$name.$g" -- "$@" >/dev/null 2>"$tmp/rec.err" ||
		fail "perf record of $* failed: $(tail -n 3 "$tmp/rec.err")"
	nsamp[k.$name.$g]=$("$AGENT" report -i "$tmp/k.$name.$g" 2>/dev/null | sed -n 's/^Event.*: \([0-9]*\) samples.*/\1/p' | head -n 1)
	nsamp[p.$name.$g]=$(perf report -i "$tmp/p.$name.$g" --stats 2>/dev/null | sed -n 's/^ *SAMPLE events: *\([0-9]*\).*/\1/p' | head -n 1)
	size[k.$name.$g]=$(stat -c %s "$tmp/k.$name.$g")
	size[p.$name.$g]=$(stat -c %s "$tmp/p.$name.$g")
	if [ "${nsamp[k.$name.$g]:-0}" -lt 1 ] || [ "${nsamp[p.$name.$g]:-0}" -lt 1 ]; then
		fail "a recording of $* holds no samples"
	fi
	rows+=("$name.$g")
}

rows=()
echo "bench-agent: 4 recording ~$SAMPLES samples of $WORK with kvmprof-agent and perf..." >&2
"$AGENT" record -q -e cpu-clock -c 10000 -o "$tmp/cal.data" -- "$WORK" 500 >/dev/null 2>"$tmp/cal.err" ||
	fail "kvmprof-agent record failed: $(tail -n 3 "$tmp/cal.err")"
cal=$(sed -n 's/.*: \([0-9]*\) samples.*/\1/p' "$tmp/cal.err" | head -n 1)
work_ms=$(awk -v s="$SAMPLES" -v c="${cal:-0}" 'BEGIN { if (c < 1) c = 1; printf "%d", s * 500 / c }')
for g in plain callgraph; do
	record work $g 10000 "$WORK" "$work_ms"
	label[work.$g]="agent-work $work_ms, $([ $g = plain ] && echo flat || echo 'call chains (-g)')"
done
if [ "$HELD_OUT" != 0 ]; then
	echo "bench-agent: 4 recording the held-out programs (python3, gcc -O2)..." >&2
	for g in plain callgraph; do
		gtext=$([ $g = plain ] && echo flat || echo 'call chains (-g)')
		pyp=$([ $g = plain ] && echo 10000 || echo "$HELD_G_PERIOD")
		record python $g "$pyp" "$PYTHON" "$tmp/loop.py"
		label[python.$g]="held out: python3 loop, $HELD_CPU_S s of CPU, every $((pyp / 1000)) µs, $gtext"
		record gcc $g "$GCC_PERIOD" "$GCC" -O2 -c -o "$tmp/gen.o" "$tmp/gen.c"
		label[gcc.$g]="held out: gcc -O2 -c of 400 generated functions, every $((GCC_PERIOD / 1000)) µs, $gtext"
	done
fi

# One timed run: appends "wall_ms cpu_ms rss_kib" to FILE.
timed() { # FILE CMD...
	local file=$1
	shift
	/usr/bin/time -f '%e %U %S %M' -o "$tmp/time" "$@" >/dev/null 2>"$tmp/run.err" ||
		fail "$* failed: $(tail -n 3 "$tmp/run.err")"
	awk '{ printf "%d %d %d\n", $1 * 1000, ($2 + $3) * 1000, $4 }' "$tmp/time" >>"$file"
}
echo "bench-agent: 4 timing the reports, $RUNS runs each..." >&2
for _ in $(seq "$RUNS"); do
	for r in "${rows[@]}"; do
		if [ "${r##*.}" = plain ]; then kflag=(); pflag=(); else kflag=(--callgraph); pflag=(-g); fi
		timed "$tmp/rk.$r" "$AGENT" report -i "$tmp/k.$r" "${kflag[@]}"
		timed "$tmp/rp.$r" perf report -i "$tmp/p.$r" --stdio --sort dso,sym "${pflag[@]}"
	done
done

col() { awk -v c="$1" '{ print $c }' "$2"; }
side() { # k|p ROW: "N samples, S MB: W ms wall, C ms CPU, R MB peak RSS"
	local f="$tmp/r$1.$2" n=${nsamp[$1.$2]}
	printf '%s samples, %.1f MB: %s ms wall, %s ms CPU, %s k samples/CPU s, %.0f MB peak RSS' "$n" \
		"$(awk -v b="${size[$1.$2]}" 'BEGIN { print b / 1e6 }')" "$(col 1 "$f" | median)" \
		"$(col 2 "$f" | median)" "$(awk -v n="$n" -v ms="$(col 2 "$f" | median)" 'BEGIN { if (ms < 1) ms = 1; printf "%.0f", n / ms }')" \
		"$(col 3 "$f" | median | awk '{ print $1 / 1024 }')"
}
row() { # ROW
	local r=$1
	col 2 "$tmp/rk.$r" >"$tmp/ck"
	col 2 "$tmp/rp.$r" >"$tmp/cp"
	col 3 "$tmp/rk.$r" >"$tmp/mk"
	col 3 "$tmp/rp.$r" >"$tmp/mp"
	printf '| %s | %s | %s | %s | %s |\n' "${label[$r]}" "$(side k "$r")" "$(side p "$r")" \
		"$(awk -v q="$(ratio_per_run "$tmp/cp" "$tmp/ck")" -v nk="${nsamp[k.$r]}" -v np="${nsamp[p.$r]}" \
			'BEGIN { printf "%.2f", q * nk / np }')" \
		"$(awk -v q="$(ratio_per_run "$tmp/mk" "$tmp/mp")" 'BEGIN { printf "%.2f", q }')"
}

cat <<TABLE

Time to report on this host: cpu-clock every 10 µs unless the row says, kvmprof-agent report -i F against
perf report -i P --stdio --sort dso,sym (-g with call chains), $RUNS runs each, alternating
(medians; ratios: the median of each run's own):

| recording | kvmprof-agent report | perf report | kvmprof's samples per CPU second / perf's | kvmprof's peak RSS / perf's |
|---|---|---|---|---|
$(for r in "${rows[@]}"; do row "$r"; done)
TABLE
