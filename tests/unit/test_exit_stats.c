// SPDX-License-Identifier: MIT
/*
 * VM exits by reason (vmm/profiling/exit_stats.c): vm_run_end and vm_entry
 * emitted through the real dispatch (vmm/trace.c) on a test context, with a
 * clock the test sets, give exact counts and host times per reason; nothing
 * is counted while nobody holds it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <linux/kvm.h>
#include <string.h>

#include "exit_stats.h"
#include "kvmprof/trace_file.h"
#include "trace.h"

static uint64_t fake_now;
static uint64_t fake_clock(void)
{
	return fake_now;
}

static struct exit_stats es;
static struct kvm_run run;
static struct trace_ctx ctx;

static int setup(void **state)
{
	(void)state;
	memset(&es, 0, sizeof(es));
	memset(&run, 0, sizeof(run));
	es.now_ns = fake_clock;
	fake_now = 1000;
	return trace_ctx_register(&ctx, 0, &run, NULL);
}

static int teardown(void **state)
{
	(void)state;
	while (es.refs)
		exit_stats_put(&es);
	trace_ctx_unregister(&ctx);
	return 0;
}

/* The events as vcpu.c emits them on this thread's context, at time t. */
static void entry_at(uint64_t t)
{
	fake_now = t;
	TRACE(vm_entry);
}

static void end_at(uint64_t t, uint64_t reason, uint64_t err, uint64_t emulated)
{
	fake_now = t;
	TRACE(vm_run_end, reason, err, emulated);
}

static void end_io_at(uint64_t t, bool out)
{
	run.exit_reason = KVM_EXIT_IO;
	run.io.direction = out ? KVM_EXIT_IO_OUT : KVM_EXIT_IO_IN;
	end_at(t, KVM_EXIT_IO, 0, 0);
}

static void assert_slot(unsigned int vcpu, unsigned int slot, uint64_t count, uint64_t host_ns)
{
	struct exit_stats_slot s = exit_stats_read(&es, vcpu, slot);
	char name[32];

	if (s.count != count || s.host_ns != host_ns)
		fail_msg("slot %s: count %llu host_ns %llu, want %llu and %llu", exit_stats_slot_name(slot, name, sizeof(name)),
			 (unsigned long long)s.count, (unsigned long long)s.host_ns, (unsigned long long)count,
			 (unsigned long long)host_ns);
}

static void test_counts_and_times_by_reason(void **state)
{
	(void)state;
	assert_int_equal(exit_stats_get(&es), 0);
	entry_at(1000); /* the first entry after subscribing closes nothing */
	end_io_at(1100, true);
	entry_at(1350); /* io out: 250 ns */
	end_io_at(2000, true);
	entry_at(2100); /* io out: 100 ns more */
	end_io_at(3000, false);
	entry_at(3007); /* io in: 7 ns */
	/* A signal: KVM_RUN failed with EINTR, whatever exit_reason kvm_run still holds. */
	end_at(4000, KVM_EXIT_IO, EINTR, 0);
	entry_at(4020);
	end_at(5000, KVM_EXIT_INTR, 0, 0);
	entry_at(5001);
	end_at(6000, KVM_EXIT_X86_WRMSR, 0, 0);
	entry_at(6500);
	end_at(7000, KVM_EXIT_X86_RDMSR, 0, 0);
	entry_at(7040);
	end_at(8000, 0, 0, 1); /* the exact backend's emulator slice */
	entry_at(8003);
	end_at(9000, 0, EAGAIN, 0);
	entry_at(9900);
	end_at(10000, 37, 0, 0);
	entry_at(10011);
	end_at(11000, 1000, 0, 0);
	entry_at(11013);
	end_at(12000, KVM_EXIT_SHUTDOWN, 0, 0); /* no entry follows: counted, its time still open */

	assert_slot(0, EXIT_STATS_IO_OUT, 2, 350);
	assert_slot(0, KVM_EXIT_IO, 1, 7);
	assert_slot(0, KVM_EXIT_INTR, 2, 21);
	assert_slot(0, KVM_EXIT_X86_WRMSR, 1, 500);
	assert_slot(0, KVM_EXIT_X86_RDMSR, 1, 40);
	assert_slot(0, EXIT_STATS_EMULATED, 1, 3);
	assert_slot(0, EXIT_STATS_AP_WAIT, 1, 900);
	assert_slot(0, 37, 1, 11);
	assert_slot(0, EXIT_STATS_OTHER_REASON, 1, 13);
	assert_slot(0, KVM_EXIT_SHUTDOWN, 1, 0);
	assert_slot(1, EXIT_STATS_IO_OUT, 0, 0);
}

static void test_each_vcpu_its_own(void **state)
{
	struct trace_ctx other, control;

	(void)state;
	assert_int_equal(exit_stats_get(&es), 0);
	end_io_at(100, true);
	/* vCPU 3's thread, in between: its exit and entry are its own. */
	assert_int_equal(trace_ctx_register(&other, 3, &run, NULL), 0);
	end_io_at(150, true);
	entry_at(190);
	trace_ctx_unregister(&other);
	/* The control thread's context has no vCPU: ignored. */
	assert_int_equal(trace_ctx_register(&control, KVMPROF_TRACE_NO_VCPU, NULL, NULL), 0);
	end_at(200, KVM_EXIT_HLT, 0, 0);
	entry_at(210);
	trace_ctx_unregister(&control);
	/* Back on vCPU 0 (a thread's context is the one it registered last). */
	trace_ctx_unregister(&ctx);
	assert_int_equal(trace_ctx_register(&ctx, 0, &run, NULL), 0);
	entry_at(400);
	assert_slot(0, EXIT_STATS_IO_OUT, 1, 300);
	assert_slot(3, EXIT_STATS_IO_OUT, 1, 40);
	for (unsigned int v = 0; v < KVMPROF_MAX_CPUS; v++)
		assert_slot(v, KVM_EXIT_HLT, 0, 0);
}

static void test_counted_only_while_held(void **state)
{
	(void)state;
	end_io_at(100, true);
	entry_at(200);
	assert_slot(0, EXIT_STATS_IO_OUT, 0, 0);
	assert_false(trace_event_on(KVMPROF_TRACE_vm_run_end));

	/* Two holders: the first put leaves it on. */
	assert_int_equal(exit_stats_get(&es), 0);
	assert_int_equal(exit_stats_get(&es), 0);
	exit_stats_put(&es);
	assert_true(exit_stats_counting(&es));
	assert_true(trace_event_on(KVMPROF_TRACE_vm_run_end) && trace_event_on(KVMPROF_TRACE_vm_entry));
	end_io_at(300, true);
	/* The last put while an exit is open: its time must not run on into the next holding. */
	exit_stats_put(&es);
	assert_false(exit_stats_counting(&es));
	assert_false(trace_event_on(KVMPROF_TRACE_vm_run_end) || trace_event_on(KVMPROF_TRACE_vm_entry));
	exit_stats_put(&es); /* one too many: nothing */
	entry_at(5000);
	end_io_at(6000, true);
	entry_at(7000);
	assert_slot(0, EXIT_STATS_IO_OUT, 1, 0);

	/* Held again: the totals go on from there. */
	assert_int_equal(exit_stats_get(&es), 0);
	entry_at(8000);
	end_io_at(9000, true);
	entry_at(9005);
	assert_slot(0, EXIT_STATS_IO_OUT, 2, 5);
}

static void test_slot_names(void **state)
{
	char buf[32];

	(void)state;
	assert_string_equal(exit_stats_slot_name(KVM_EXIT_IO, buf, sizeof(buf)), "io in");
	assert_string_equal(exit_stats_slot_name(EXIT_STATS_IO_OUT, buf, sizeof(buf)), "io out");
	assert_string_equal(exit_stats_slot_name(KVM_EXIT_MMIO, buf, sizeof(buf)), "mmio");
	assert_string_equal(exit_stats_slot_name(KVM_EXIT_X86_RDMSR, buf, sizeof(buf)), "msr read");
	assert_string_equal(exit_stats_slot_name(KVM_EXIT_X86_WRMSR, buf, sizeof(buf)), "msr write");
	assert_string_equal(exit_stats_slot_name(KVM_EXIT_INTR, buf, sizeof(buf)), "signal");
	assert_string_equal(exit_stats_slot_name(KVM_EXIT_HLT, buf, sizeof(buf)), "hlt");
	assert_string_equal(exit_stats_slot_name(KVM_EXIT_SHUTDOWN, buf, sizeof(buf)), "shutdown");
	assert_string_equal(exit_stats_slot_name(KVM_EXIT_DEBUG, buf, sizeof(buf)), "debug");
	assert_string_equal(exit_stats_slot_name(EXIT_STATS_EMULATED, buf, sizeof(buf)), "emulator slice");
	assert_string_equal(exit_stats_slot_name(37, buf, sizeof(buf)), "reason 37");
	assert_int_equal(exit_stats_slot_of(KVM_EXIT_IO, 0, 0, true), EXIT_STATS_IO_OUT);
	assert_int_equal(exit_stats_slot_of(KVM_EXIT_IO, EINTR, 0, true), KVM_EXIT_INTR);
	assert_int_equal(exit_stats_slot_of(0, EIO, 0, false), EXIT_STATS_RUN_ERROR);
	assert_int_equal(exit_stats_slot_of(64, 0, 0, false), EXIT_STATS_OTHER_REASON);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_counts_and_times_by_reason, setup, teardown),
		cmocka_unit_test_setup_teardown(test_each_vcpu_its_own, setup, teardown),
		cmocka_unit_test_setup_teardown(test_counted_only_while_held, setup, teardown),
		cmocka_unit_test_setup_teardown(test_slot_names, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
