# shellcheck shell=bash disable=SC2154 # rc, TMP, VMM, FIX, BUILD: set by run.sh
# End-to-end cases of the example plugins (plugins/README.md): each one's
# output against what the guest did, as a --trace file of the same run and
# the VMM's --vpmu-stats saw it, and each one's refusal of a bad argument.
# Sourced by tests/e2e/run.sh after trace.sh (uses vmm, expect_error, pass,
# fail, skip, tr_count, tr_stat, TR_KVMPROF). Under the ASan VMM (TAG set)
# the plugins are the ASan builds, and one case loads a plain build.
PL_DIR=$BUILD/plugins
[ -n "${TAG:-}" ] && [ -d "$BUILD/asan/plugins" ] && PL_DIR=$BUILD/asan/plugins
PL_NAMES="exit_histogram msr_log io_latency pmu_reprogram"

# pl_trace_keys FILE: "event key" per vm_exit, pio, mmio and MSR record of the trace FILE, one line each,
# in the keys exit_histogram prints: "vm_exit 2", "pio out:0x3f8", "mmio write:0x..", "msr_read 0xc0010201".
pl_trace_keys() {
	"$TR_KVMPROF" trace -i "$1" | awk '
		function arg(name,  i) { for (i = 4; i <= NF; i++) if (index($i, name "=") == 1) return substr($i, length(name) + 2) }
		$3 == "vm_exit" { print "vm_exit", arg("reason") }
		$3 == "pio" { print "pio", (arg("out") == 1 ? "out:" : "in:") arg("port") }
		$3 == "mmio" { print "mmio", (arg("write") == 1 ? "write:" : "read:") arg("addr") }
		$3 ~ /^msr_/ { print $3, arg("index") }'
}

pl_missing=
for name in $PL_NAMES; do [ -f "$PL_DIR/$name.so" ] || pl_missing="$pl_missing $name.so"; done
if [ -n "$pl_missing" ]; then
	HARNESS_LOGS='' fail plugins-built "missing in $PL_DIR:$pl_missing (make plugins)"
elif [ ! -w /dev/kvm ]; then
	skip plugins-examples "no usable /dev/kvm"
else

# --- all four plugins in one run of the PMU test, against its trace and --vpmu-stats ---
# The clock backend keeps the vPMU's figures on any host; pmutest programs a
# counter, takes PMIs, reads and writes the PMU's MSRs (all exits to the VMM).
pl_start=$(date +%s%N)
vmm --cpus 2 --vpmu=amd --vpmu-backend=clock --vpmu-stats --console "$TMP/pl.console" \
	--plugin "$PL_DIR/exit_histogram.so,out=$TMP/pl.eh" --plugin "$PL_DIR/msr_log.so,out=$TMP/pl.ml" \
	--plugin "$PL_DIR/io_latency.so,out=$TMP/pl.il" --plugin "$PL_DIR/pmu_reprogram.so,out=$TMP/pl.pr" \
	--trace "$TMP/pl.trace" --trace-events 'vm_exit,pio,mmio,msr_*' \
	--cmdline "start=/bin/pmutest:pmi:1000000:20:0:cycles" --timeout $((60 * HANG))
pl_run_ns=$(($(date +%s%N) - pl_start))
if [ "$rc" != 0 ] || ! grep -q "^kvmprof-vmm: --trace $TMP/pl.trace: [0-9]* records, 0 lost" "$TMP/err"; then
	fail plugins-run "exit code $rc, or the trace lost records: $(head -c 300 "$TMP/err")"
else
	# exit_histogram: COM1's OUT count is the console's bytes.
	com1=$(awk '$2 == "pio" && $3 == "out:0x3f8" { n += $1 } END { print n + 0 }' "$TMP/pl.eh")
	bytes=$(wc -c <"$TMP/pl.console")
	if [ "$bytes" -gt 0 ] && [ "$com1" = "$bytes" ]; then pass plugin-exit-histogram-com1-bytes
	else fail plugin-exit-histogram-com1-bytes "$com1 OUTs to 0x3f8 counted, $bytes console bytes" "$TMP/pl.eh"; fi

	# exit_histogram: every reason, port and MSR count, summed over processes, equals the trace's.
	pl_trace_keys "$TMP/pl.trace" | sort | uniq -c | awk '{ print $2, $3, $1 }' | sort >"$TMP/pl.want"
	awk '$1 ~ /^[0-9]+$/ { k = $3; if ($2 == "vm_exit") sub(":.*", "", k); n[$2 " " k] += $1 }
		END { for (k in n) print k, n[k] }' "$TMP/pl.eh" | sort >"$TMP/pl.got"
	if [ -s "$TMP/pl.want" ] && cmp -s "$TMP/pl.want" "$TMP/pl.got" &&
		grep -qx "total vm_exit $(tr_count "$TMP/pl.trace" vm_exit)" "$TMP/pl.eh"; then
		pass plugin-exit-histogram-matches-trace
	else fail plugin-exit-histogram-matches-trace "$(diff "$TMP/pl.want" "$TMP/pl.got" | head -4 | tr '\n' ';')" "$TMP/pl.eh"; fi

	# exit_histogram: the MSR exits are pmutest's (it drives the PMU), by its pid from the guest's table.
	msr_procs=$(awk '$1 ~ /^[0-9]+$/ && $2 ~ /^msr_/ { print $4, $5 }' "$TMP/pl.eh" | sort -u | tr '\n' ';')
	if [ "$msr_procs" = "1 pmutest;" ]; then pass plugin-exit-histogram-by-process
	else fail plugin-exit-histogram-by-process "the MSR rows' processes: '$msr_procs', expected '1 pmutest;'" "$TMP/pl.eh"; fi

	# msr_log: one line per MSR record, the same accesses in the same order on each vCPU.
	"$TR_KVMPROF" trace -i "$TMP/pl.trace" | awk '$3 ~ /^msr_/ { print $2, $3, $4, $5, $6 }' | sort -s -k1,1 >"$TMP/pl.ml.want"
	awk '$3 ~ /^msr_/ { print $2, $3, $4, $5, $6 }' "$TMP/pl.ml" | sort -s -k1,1 >"$TMP/pl.ml.got"
	n=$(wc -l <"$TMP/pl.ml.got")
	if [ "$n" -gt 0 ] && [ "$n" = $(($(tr_count "$TMP/pl.trace" msr_read) + $(tr_count "$TMP/pl.trace" msr_write))) ] &&
		cmp -s "$TMP/pl.ml.want" "$TMP/pl.ml.got" && grep -q "^msr_log: $n accesses logged, 0 filtered out, 0 lines lost" "$TMP/pl.ml"; then
		pass plugin-msr-log-matches-trace
	else fail plugin-msr-log-matches-trace "$n lines; $(diff "$TMP/pl.ml.want" "$TMP/pl.ml.got" | head -3 | tr '\n' ';')" "$TMP/pl.ml"; fi

	# io_latency: it saw every OUT the trace has; each one measured or counted as unfinished.
	outs=$(grep -c ' pio port=[^ ]* size=[0-9]* out=1 ' < <("$TR_KVMPROF" trace -i "$TMP/pl.trace"))
	read -r il_outs il_measured il_unfinished il_unmeasured < <(sed -n \
		's/^io_latency: \([0-9]*\) pio outs, \([0-9]*\) measured, \([0-9]*\) unfinished .*, \([0-9]*\) unmeasured .*/\1 \2 \3 \4/p' "$TMP/pl.il")
	il_sum=$(awk '/^port / { n += $4 } END { print n + 0 }' "$TMP/pl.il")
	if [ "$outs" -gt 0 ] && [ "${il_outs:-x}" = "$outs" ] && [ "$il_sum" = "${il_measured:-x}" ] &&
		[ $((il_measured + il_unfinished + il_unmeasured)) = "$outs" ]; then pass plugin-io-latency-counts-every-out
	else fail plugin-io-latency-counts-every-out "trace: $outs OUTs; plugin: '$il_outs' outs, '$il_measured' measured ($il_sum in the ports), '$il_unfinished' unfinished" "$TMP/pl.il"; fi
	# Latencies are above 0 and below the run's length; COM1 has its line.
	bad=$(awk -v run="$pl_run_ns" '/^port / { if ($6 <= 0 || $10 >= run || $6 > $8 || $8 > $10) print }' "$TMP/pl.il")
	if [ -z "$bad" ] && grep -q '^port 0x3f8: count [1-9]' "$TMP/pl.il"; then pass plugin-io-latency-within-run
	else fail plugin-io-latency-within-run "run of $pl_run_ns ns; ${bad:-no port 0x3f8 line}" "$TMP/pl.il"; fi

	# pmu_reprogram: its total is the vPMU's own count, pmutest's row holds it.
	total=$(sed -n 's/^total \([0-9]*\) counter reprogrammings$/\1/p' "$TMP/pl.pr")
	stat=$(tr_stat "counter reprogrammings")
	rows=$(awk '$1 ~ /^[0-9]+$/ { n += $1 } END { print n + 0 }' "$TMP/pl.pr")
	if [ "${stat:-0}" -gt 0 ] && [ "${total:-x}" = "$stat" ] && [ "$rows" = "$stat" ] &&
		awk '$3 == 1 && $4 == "pmutest" && $1 > 0 { f = 1 } END { exit !f }' "$TMP/pl.pr"; then
		pass plugin-pmu-reprogram-matches-vpmu-stats
	else fail plugin-pmu-reprogram-matches-vpmu-stats "plugin total '$total' (rows $rows), --vpmu-stats $stat" "$TMP/pl.pr"; fi
fi

# --- msr_log's filter: only the MSRs asked for, all of them ------------------------------
# exit_histogram rides along with process=no: the same totals, no process column.
vmm --cpus 2 --vpmu=amd --vpmu-backend=clock --plugin "$PL_DIR/msr_log.so,msr=0xc0010200-0xc0010201,msr=0xc0000301,out=$TMP/pl.mlf" \
	--plugin "$PL_DIR/exit_histogram.so,process=no,out=$TMP/pl.ehn" \
	--trace "$TMP/pl.mlf.trace" --trace-events 'msr_*' --cmdline "quiet start=/bin/pmutest:pmi:1000000:20:0:cycles" --timeout $((60 * HANG))
want=$("$TR_KVMPROF" trace -i "$TMP/pl.mlf.trace" 2>/dev/null | awk '$3 ~ /^msr_/ && ($4 == "index=0xc0010200" ||
	$4 == "index=0xc0010201" || $4 == "index=0xc0000301") { n++ } END { print n + 0 }')
all=$(tr_count "$TMP/pl.mlf.trace" msr_read)+$(tr_count "$TMP/pl.mlf.trace" msr_write)
got=$(grep -c ' msr_' "$TMP/pl.mlf")
others=$(awk '$3 ~ /^msr_/ && $4 != "index=0xc0010200" && $4 != "index=0xc0010201" && $4 != "index=0xc0000301"' "$TMP/pl.mlf" | wc -l)
if [ "$rc" = 0 ] && [ "$want" -gt 0 ] && [ "$got" = "$want" ] && [ "$others" = 0 ] && [ "$want" -lt $((all)) ] &&
	grep -q "^msr_log: $want accesses logged, $((all - want)) filtered out, 0 lines lost" "$TMP/pl.mlf"; then
	pass plugin-msr-log-filter
else fail plugin-msr-log-filter "rc=$rc, $got lines ($others of other MSRs), the trace has $want of those MSRs of $((all))" "$TMP/pl.mlf"; fi
procs=$(awk '$1 ~ /^[0-9]+$/ { print $4, $5 }' "$TMP/pl.ehn" | sort -u | tr '\n' ';')
if [ "$rc" = 0 ] && [ "$procs" = "- -;" ] && grep -qx "total msr_read $(tr_count "$TMP/pl.mlf.trace" msr_read)" "$TMP/pl.ehn" &&
	grep -qx "total msr_write $(tr_count "$TMP/pl.mlf.trace" msr_write)" "$TMP/pl.ehn"; then
	pass plugin-exit-histogram-without-process
else fail plugin-exit-histogram-without-process "rc=$rc, processes '$procs'" "$TMP/pl.ehn"; fi

# --- io_latency on the agent channel: COM2's string OUTs (rep outsb), every byte one OUT ---
vmm --cpus 2 --vpmu-backend=clock --plugin "$PL_DIR/io_latency.so,port=0x2f8,out=$TMP/pl.ila" \
	--agent-channel "$TMP/pl.agent" --trace "$TMP/pl.ila.trace" --trace-events pio \
	--cmdline "quiet start=/bin/agent:/bin/matmul+32+2" --timeout $((60 * HANG))
bytes=$(wc -c <"$TMP/pl.agent" 2>/dev/null || echo 0)
outs=$("$TR_KVMPROF" trace -i "$TMP/pl.ila.trace" 2>/dev/null | grep -c ' pio port=0x2f8 size=1 out=1 ')
line=$(grep '^io_latency: ' "$TMP/pl.ila")
if [ "$rc" = 0 ] && [ "$bytes" -gt 0 ] && [ "$outs" = "$bytes" ] &&
	[ "$line" = "io_latency: $bytes pio outs, $bytes measured, 0 unfinished (the vCPU stopped before its next exit), 0 unmeasured (over 4096 in one exit)" ] &&
	grep -q "^port 0x2f8: count $bytes " "$TMP/pl.ila" && [ "$(grep -c '^port ' "$TMP/pl.ila")" = 1 ]; then
	pass plugin-io-latency-agent-channel
else fail plugin-io-latency-agent-channel "rc=$rc, $bytes agent bytes, $outs OUTs to 0x2f8 in the trace; '$line'" "$TMP/pl.ila"; fi

# --- the ASan VMM loads a plain plugin too -----------------------------------------
if [ -n "${TAG:-}" ] && [ "$PL_DIR" != "$BUILD/plugins" ]; then
	vmm --cpus 2 --vpmu=off --plugin "$BUILD/plugins/exit_histogram.so,out=$TMP/pl.plain" --console "$TMP/pl.plain.console" \
		--cmdline "quiet start=/bin/exit" --timeout $((60 * HANG))
	com1=$(awk '$2 == "pio" && $3 == "out:0x3f8" { n += $1 } END { print n + 0 }' "$TMP/pl.plain" 2>/dev/null)
	if [ "$rc" = 0 ] && [ "$com1" -gt 0 ] && [ "$com1" = "$(wc -c <"$TMP/pl.plain.console")" ]; then
		pass plugin-plain-build-in-asan-vmm
	else fail plugin-plain-build-in-asan-vmm "rc=$rc, $com1 COM1 OUTs counted"; fi
fi

# --- a bad argument: the plugin's own message on the VMM's one error line, exit 1 -----------
pl_refused="^kvmprof-vmm: --plugin $PL_DIR/%s.so: kvmprof_plugin_init refused \\(returned 1\\): %s$"
# shellcheck disable=SC2059 # the format is ours
{
expect_error plugin-exit-histogram-bad-argument 1 "$(printf "$pl_refused" exit_histogram \
	"exit_histogram: process=maybe: not yes or no")" --cpus 2 --vpmu=off --plugin "$PL_DIR/exit_histogram.so,process=maybe"
expect_error plugin-msr-log-bad-argument 1 "$(printf "$pl_refused" msr_log \
	"msr_log: msr=0x10-0x1 is not an MSR index or range .*")" --cpus 2 --vpmu=off --plugin "$PL_DIR/msr_log.so,msr=0x10-0x1"
expect_error plugin-io-latency-bad-argument 1 "$(printf "$pl_refused" io_latency \
	"io_latency: port=0x10000: not a port number \\(0 to 0xffff\\)")" --cpus 2 --vpmu=off --plugin "$PL_DIR/io_latency.so,port=0x10000"
expect_error plugin-pmu-reprogram-bad-argument 1 "$(printf "$pl_refused" pmu_reprogram \
	"pmu_reprogram: unknown argument 'every=1' \\(it takes none but out=FILE\\)")" --cpus 2 --vpmu=off --plugin "$PL_DIR/pmu_reprogram.so,every=1"
}
fi
