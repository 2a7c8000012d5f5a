/* SPDX-License-Identifier: MIT */
/*
 * report_script on a cross-layer stack (profile_exit_fixture.h's world): a
 * host sample of the VMM's vCPU thread taken while it handled a guest's
 * I/O exit prints the host's frames, the exit's frame (no address), then
 * the guest's stack at the exit. Addresses are as recorded: the host's
 * and the guest's callers are return addresses; the ip and the guest's RIP
 * at the exit are where the CPU was.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "profile_exit_fixture.h"
#include "report/report.h"

static char *script(const struct profile *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(report_script(f, p, NULL), 0);
	fclose(f);
	return buf;
}

static void test_cross_layer_stack(void **state)
{
	static const uint64_t guest_chain[] = { PF_GUEST_SYSCALL + 0x21, FX_BETA + 5 };
	static const uint64_t vmm_chain[] = { FX_BETA + 5 };
	struct profile_options opt = { .guest_root = pf_dir, .cross_layer = true };
	struct profile *p;
	char want[4096], *out;

	(void)state;
	assert_int_equal(profile_new(&p, &opt), 0);
	pf_world(p, pf_native_elf);
	pf_event(p, 0, 1 /* PERF_TYPE_SOFTWARE */, 0 /* cpu-clock */, 1000000, 0);
	pf_vm_exit(p, &(struct pf_exit){ .host_tid = 101, .pid = PF_SPAM_PID, .time = 1000, .end = 2000,
					 .ip = PF_CONSOLE_WRITE + 0x10, .kind = KP_EXIT_IO_OUT, .detail = 0x3f8,
					 .cpl = KP_CPL_KERNEL, .chain = guest_chain, .chain_len = 2 });
	pf_host_sample(p, 101, 1500, FX_ALPHA + 1, KP_CPL_USER, vmm_chain, 1);
	/* The guest's own sample, earlier: time order puts it first. */
	pf_sample(p, KP_DOMAIN_GUEST, PF_SPAM_PID, PF_SPAM_PID, 1200, 1000000, FX_BETA + 1, KP_CPL_USER, NULL, 0);
	assert_int_equal(profile_finish(p), 0);

	out = script(p);
	snprintf(want, sizeof(want),
		 "spam     7/7     user [000]     0.000001:    1000000 ev0: \n"
		 "\t        40020001 beta+0x1 (/bin/fx)\n"
		 "\n"
		 "vmm   100/101   user [000]     0.000001:    1000000 ev0: \n"
		 "\t        40010001 alpha+0x1 (%s)\n"
		 "\t        40020005 beta+0x5 (%s)\n"
		 "\t               0 [exit: io out 0x3f8] ([vm_exit])\n"
		 "\tffffffff81001010 console_write+0x10 ([guest.kernel])\n"
		 "\tffffffff81000021 guest_syscall+0x21 ([guest.kernel])\n"
		 "\t        40020005 beta+0x5 (/bin/fx)\n"
		 "\n",
		 pf_native_elf, pf_native_elf);
	assert_string_equal(out, want);
	free(out);
	profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cross_layer_stack),
	};

	return cmocka_run_group_tests(tests, pf_setup, pf_teardown);
}
