# shellcheck shell=bash
# What the benchmark scripts share; sourced after they cd to the tree's top.
# median: of the numbers on standard input, one per line.
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# ratio_per_run A B: the median over runs of A's value over B's (files of one number a line, run i
# on line i; as many pairs as the shorter file has). This host has fast and slow phases that last
# minutes: a run's own ratio, its two sides seconds apart, moves far less than a ratio of medians.
ratio_per_run() { paste -d ' ' "$1" "$2" | awk 'NF == 2 && $2 > 0 { print $1 / $2 }' | median; }
# field KEY FILE: the first number after "KEY=" in FILE (the agent's and the guest programs' summary words).
field() { sed -n "s/.*\\b$1=\\([0-9.]*\\).*/\\1/p" "$2" | head -n 1; }
# reason NAME FILE: exits of one reason in the VMM's "VM exits by reason:" line.
reason() { sed -n "s|.*VM exits by reason:.*[ ,]$1 \\([0-9]*\\).*|\\1|p" "$2" | head -n 1; }
now_ns() { date +%s%N; }
# wait_sock PATH: until the VMM ($vmm_pid) has made its control socket; 1 if it died or took 5 s.
wait_sock() {
	local i
	for i in $(seq 500); do
		[ -S "$1" ] && return 0
		kill -0 "$vmm_pid" 2>/dev/null || return 1
		sleep 0.01
	done
	return 1
}

# bench_start: a temporary directory ($tmp), removed on exit with the VMM
# ($vmm_pid) and the recorder ($rec_pid) the script started, by pid only.
bench_cleanup() {
	[ -n "${rec_pid:-}" ] && kill "$rec_pid" 2>/dev/null
	[ -n "${vmm_pid:-}" ] && kill "$vmm_pid" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$tmp"
}
bench_start() {
	tmp=$(mktemp -d)
	vmm_pid=
	rec_pid=
	trap bench_cleanup EXIT
}
