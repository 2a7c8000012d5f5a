#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The perf case's script in L2 (run by /init with kvmprof_case=perf): Linux's
# own perf counting through kvmprof's virtual PMU. Prints what the host
# checks (tests/nested/run.sh, check_perf) between markers:
#   KVMPROF-L2-PERF-PMU <the kernel's "Performance Events" line, or none>
#   KVMPROF-L2-PERF-STAT n=N rc=RC then perf stat's CSV (-x,) lines, then
#   KVMPROF-L2-PERF-STAT-END n=N
# for countloop at the two iteration counts kvmprof_perf_n1 and
# kvmprof_perf_n2 (same digit count: the argument parsing is counted too).
# and pmuself at the same counts between KVMPROF-L2-PERF-SELF n=N and
# KVMPROF-L2-PERF-SELF-END n=N rc=RC. Exits non-zero if a step failed.
n1=${kvmprof_perf_n1:-1000000}
n2=${kvmprof_perf_n2:-3000000}
status=0
pmu=$(dmesg | grep -m1 -E 'Performance Events:|no PMU driver')
echo "KVMPROF-L2-PERF-PMU ${pmu:-none}"
for n in $n1 $n2; do
	perf stat -x, -e instructions:u,branches:u /bin/countloop "$n" 2> /tmp/stat.out
	rc=$?
	[ $rc = 0 ] || status=1
	echo "KVMPROF-L2-PERF-STAT n=$n rc=$rc"
	# The shell's own read, not cat: no program started to print it.
	while IFS= read -r l; do echo "$l"; done < /tmp/stat.out
	echo "KVMPROF-L2-PERF-STAT-END n=$n"
done
# Self-monitoring (tests/nested/pmuself.c): read() and RDPMC through the mmap page.
for n in $n1 $n2; do
	echo "KVMPROF-L2-PERF-SELF n=$n"
	/bin/pmuself "$n"
	rc=$?
	[ $rc = 0 ] || status=1
	echo "KVMPROF-L2-PERF-SELF-END n=$n rc=$rc"
done
exit $status
