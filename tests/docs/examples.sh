#!/usr/bin/env bash
# Every example in the README and the docs that a user would run as written:
# the fenced blocks tagged ```sh in README.md, docs/*.md and guest/README.md.
# Each runs as its own bash script (set -e: every command must succeed), from
# a fresh directory that sees this tree's build/, with build/ first on PATH
# (examples name the installed programs, kvmprof-vmm, as well as
# build/kvmprof-vmm), under a time limit; whatever it leaves running (a VMM
# started with &) is killed after. Blocks that are synopses, output or need
# what these hosts lack (a libvirt domain called web1, socat) are not
# tagged sh. Prints "PASS name" / "FAIL name: why" per example.
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
TOP=$PWD
T=$(mktemp -d "${TMPDIR:-/tmp}/kvmprof-doc-examples.XXXXXX")
trap 'rm -rf "$T"' EXIT
# shellcheck source=tests/lib/harness.sh
. tests/lib/harness.sh

# FILE LINE: the block that starts at LINE (its ```sh line), as a script.
block() {
	awk -v s="$2" 'NR > s && /^```/ { exit } NR > s' "$1"
}

# Each example's limit: 180 s, ten times as long in tests/kvmhost's emulated KVM host (TCG).
LIMIT=180
[ "${KVMHOST_L1:-0}" = 1 ] && LIMIT=1800
# The examples that run the guest's full default workloads under the exact vPMU backend run
# on a real KVM host only: in the emulated one every instruction of theirs goes through the
# exact backend's single steps under TCG (README's guest agent example: hash's 118M
# instructions took 3 minutes there, and matmul was still running after 20).
# Each: a text in the block, and why.
L1_TOO_SLOW=(
	'--agent-channel agent.data --cmdline "quiet start=/bin/agent"'
	"the guest agent's default workloads under the exact backend ran past 20 minutes there (hash's 118M instructions took 3); tests/e2e/guest-agent.sh runs the agent there on smaller ones"
	'kvmprof-vmm --cpus 2 --trace run.trace'
	"the default demos under the exact backend were still running after 6 minutes there (matmul and hash, on 2 vCPUs); tests/e2e/trace.sh traces smaller runs there"
)
# too_slow_in_l1 NAME SCRIPT: SKIPs (true) an example of L1_TOO_SLOW in the emulated KVM host.
too_slow_in_l1() {
	local i
	for ((i = 0; i < ${#L1_TOO_SLOW[@]}; i += 2)); do
		if grep -qF -- "${L1_TOO_SLOW[i]}" "$2"; then
			real_kvm_only "$1" "${L1_TOO_SLOW[i + 1]}"
			return
		fi
	done
	return 1
}

n=0
for f in README.md docs/*.md guest/README.md; do
	while IFS=: read -r line _; do
		n=$((n + 1))
		name="doc-example-${f//\//-}:$line"
		dir=$T/$n
		mkdir -p "$dir"
		ln -s "$TOP/$BUILD" "$dir/build"
		{ echo 'set -e -o pipefail'; block "$f" "$line"; } >"$dir/example.sh"
		too_slow_in_l1 "$name" "$dir/example.sh" && continue
		# In a session of its own, whose id it leaves in sid: what it starts with & is found by it.
		(
			cd "$dir" && PATH=$dir/build:$PATH LIMIT=$LIMIT exec setsid bash -c 'echo $$ >sid; exec timeout -k 5 "$LIMIT" bash example.sh'
		) >"$dir/out" 2>"$dir/err" </dev/null
		rc=$?
		[ -s "$dir/sid" ] && pkill -KILL -s "$(cat "$dir/sid")" 2>/dev/null
		if [ $rc = 0 ]; then
			pass "$name ($(grep -c . "$dir/example.sh") lines)"
		else
			fail "$name" "exited $rc (124: timed out)" "$dir/err" "$dir/out"
		fi
	done < <(grep -n '^```sh$' "$f")
done
if [ $n = 0 ]; then
	fail doc-examples "no \`\`\`sh block in README.md, docs/ or guest/README.md: nothing was run"
fi
harness_summary
