# End-to-end cases for the bundled guest; sourced by tests/e2e/run.sh (uses vmm, pass, fail, $TMP).
# The demo results are deterministic: any change in them is a bug in the
# guest kernel (lost registers across a preemption or a CPU migration, say).
MATMUL_LINE='matmul: n=128 iters=20 checksum=0x1168211bfa944dd3'
HASH_LINE='hash: size=65536 iters=300 hash=0xd8a8fce5aa0c0bad'

for cpus in 1 2 8; do
	vmm --cpus "$cpus" --timeout 60
	if [ $rc != 0 ]; then fail "bundled-guest-${cpus}cpu" "exit code $rc"
	elif ! grep -q "kvmprof guest: $cpus cpus" "$TMP/out"; then fail "bundled-guest-${cpus}cpu" "guest did not see $cpus CPUs"
	elif ! grep -qxF "$MATMUL_LINE" "$TMP/out"; then fail "bundled-guest-${cpus}cpu" "matmul result missing or wrong"
	elif ! grep -qxF "$HASH_LINE" "$TMP/out"; then fail "bundled-guest-${cpus}cpu" "hash result missing or wrong"
	else pass "bundled-guest-${cpus}cpu"; fi
done

vmm --cmdline "start=/bin/exit:7" --timeout 60
if [ $rc = 7 ]; then pass guest-status-is-vmm-exit-code; else fail guest-status-is-vmm-exit-code "rc=$rc, expected 7"; fi

vmm --cpus 2 --cmdline "start=/bin/exit:0,/bin/exit:9" --timeout 60
if [ $rc = 9 ]; then pass guest-first-nonzero-status-wins; else fail guest-first-nonzero-status-wins "rc=$rc, expected 9"; fi

# A faulting process dies with a signal-like status; the others finish.
vmm --cpus 2 --cmdline "start=/bin/fault:segv,/bin/matmul" --timeout 60
if [ $rc = 139 ] && grep -q 'killed: #PF' "$TMP/out" && grep -qxF "$MATMUL_LINE" "$TMP/out"; then
	pass guest-user-fault-kills-only-that-process
else fail guest-user-fault-kills-only-that-process "rc=$rc"; fi

vmm --cmdline "start=/bin/fault:badptr" --timeout 60
if [ $rc = 0 ] && grep -q 'badptr ok' "$TMP/out"; then pass guest-syscalls-refuse-bad-pointers
else fail guest-syscalls-refuse-bad-pointers "rc=$rc"; fi

vmm --cmdline "start=/bin/nope" --timeout 60
if [ $rc != 0 ] && grep -q '/bin/nope: not found' "$TMP/out"; then pass guest-missing-program
else fail guest-missing-program "rc=$rc"; fi
