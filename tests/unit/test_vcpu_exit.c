// SPDX-License-Identifier: MIT
/*
 * The vCPU exit dispatch (vmm/vcpu_exit.c): each exit KVM can leave in a
 * struct kvm_run, built by hand, and the outcome the run loop gets for it
 * (continue, stop with a status, crash with a reason), as Firecracker's
 * test_handle_kvm_exit does. The port devices that stop the guest (the
 * exit port, the reset controls) are the real ones; the features that take
 * MSR and debug exits need a live vCPU and are stand-in features here,
 * registered through the hook table (vcpu_hooks.h) as the real ones are;
 * a dummy feature sees every hook called, in order. No KVM:
 * nothing in the dispatch may stop the VM itself, and this test links no
 * vm_request_stop that it could call.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "acpi_pm.h"
#include "exit_port.h"
#include "kvmprof/platform.h"
#include "reset.h"
#include "vcpu_exit.h"
#include "vcpu_hooks.h"
#include "vm.h"

/* --- stand-in features for what needs a live vCPU ------------------------- */

static bool exact_standin_debug(struct vcpu *vcpu)
{
	(void)vcpu;
	function_called();
	return mock_type(bool);
}

static bool tracer_standin_debug(struct vcpu *vcpu)
{
	(void)vcpu;
	function_called();
	return mock_type(bool);
}

static struct vcpu *msr_handled_for;

static bool pmu_standin_msr(struct vcpu *vcpu)
{
	msr_handled_for = vcpu;
	vcpu->run->msr.data = 0x1234;
	return true;
}

/* In vm_features' order: the vPMU, the engine, the tracer. */
static const struct vcpu_hooks pmu_standin = { .name = "vpmu", .msr_exit = pmu_standin_msr };
static const struct vcpu_hooks exact_standin = { .name = "exact", .debug_exit = exact_standin_debug };
static const struct vcpu_hooks tracer_standin = { .name = "pmi-trace", .debug_exit = tracer_standin_debug };
static const struct vcpu_hooks *const standins[] = { &pmu_standin, &exact_standin, &tracer_standin, NULL };

/* --- the machine ------------------------------------------------------------ */

/* KVM puts port I/O data in the run area's second page. */
#define IO_DATA_OFFSET 4096
#define TEST_DEVICE_PORT 0x80

static struct vm vm;
static struct vcpu vcpu;
static union {
	struct kvm_run run;
	uint8_t bytes[2 * 4096];
} area;

/* A device that answers reads with 0x10, 0x11, ... and keeps what it was written. */
static struct test_device {
	unsigned int reads, writes;
	uint8_t written[8];
} device;

static struct vcpu_outcome test_device_io(void *opaque, uint16_t offset, uint8_t *data, unsigned int size,
					  bool is_write)
{
	struct test_device *d = opaque;

	assert_int_equal(offset, 0);
	assert_int_equal(size, 1);
	if (is_write)
		d->written[d->writes++ % sizeof(d->written)] = data[0];
	else
		data[0] = (uint8_t)(0x10 + d->reads++);
	return vcpu_continue();
}

static int setup(void **state)
{
	(void)state;
	memset(&vm, 0, sizeof(vm));
	memset(&area, 0, sizeof(area));
	memset(&device, 0, sizeof(device));
	msr_handled_for = NULL;
	assert_int_equal(exit_port_init(&vm.io), 0);
	assert_int_equal(reset_init(&vm.io), 0);
	assert_int_equal(acpi_pm_init(&vm.acpi_pm, &vm.io), 0);
	assert_int_equal(ioport_register(&vm.io, TEST_DEVICE_PORT, 1, test_device_io, &device), 0);
	vm.hooks = standins;
	vcpu = (struct vcpu){ .vm = &vm, .run = &area.run };
	return 0;
}

static uint8_t *io_data(void)
{
	return area.bytes + IO_DATA_OFFSET;
}

static void set_io(uint8_t direction, uint16_t port, uint8_t size, uint32_t count)
{
	area.run.exit_reason = KVM_EXIT_IO;
	area.run.io.direction = direction;
	area.run.io.port = port;
	area.run.io.size = size;
	area.run.io.count = count;
	area.run.io.data_offset = IO_DATA_OFFSET;
}

static void set_exit(uint32_t reason)
{
	area.run.exit_reason = reason;
}

static void assert_continue(struct vcpu_outcome o)
{
	assert_int_equal(o.action, VCPU_CONTINUE);
}

static void assert_stop(struct vcpu_outcome o, int status, const char *reason)
{
	assert_int_equal(o.action, VCPU_STOP);
	assert_int_equal(o.status, status);
	if (reason)
		assert_string_equal(o.reason, reason);
	else
		assert_null(o.reason);
}

static void assert_crash(struct vcpu_outcome o, const char *reason)
{
	assert_int_equal(o.action, VCPU_CRASH);
	assert_string_equal(o.reason, reason);
}

/* --- port I/O ---------------------------------------------------------------- */

static void test_io_out_reaches_the_device(void **state)
{
	(void)state;
	set_io(KVM_EXIT_IO_OUT, TEST_DEVICE_PORT, 1, 1);
	io_data()[0] = 0x5a;
	assert_continue(vcpu_handle_exit(&vcpu));
	assert_int_equal(device.writes, 1);
	assert_int_equal(device.written[0], 0x5a);
}

static void test_io_in_string_fills_each_element(void **state)
{
	(void)state;
	/* REP INSB of three bytes: one exit, three accesses, the data back to back. */
	set_io(KVM_EXIT_IO_IN, TEST_DEVICE_PORT, 1, 3);
	assert_continue(vcpu_handle_exit(&vcpu));
	assert_int_equal(device.reads, 3);
	assert_memory_equal(io_data(), ((uint8_t[]){ 0x10, 0x11, 0x12 }), 3);
}

static void test_io_in_unclaimed_reads_all_ones(void **state)
{
	(void)state;
	set_io(KVM_EXIT_IO_IN, 0x1234, 2, 1);
	assert_continue(vcpu_handle_exit(&vcpu));
	assert_int_equal(io_data()[0], 0xff);
	assert_int_equal(io_data()[1], 0xff);
	assert_int_equal(vm.io.unclaimed, 1);
}

static void test_io_out_unclaimed_is_ignored(void **state)
{
	(void)state;
	set_io(KVM_EXIT_IO_OUT, 0x1234, 1, 1);
	assert_continue(vcpu_handle_exit(&vcpu));
	assert_int_equal(vm.io.unclaimed, 1);
}

static void test_exit_port_stops_with_the_status(void **state)
{
	(void)state;
	set_io(KVM_EXIT_IO_OUT, KVMPROF_EXIT_PORT, 4, 1);
	memcpy(io_data(), &(uint32_t){ 42 }, 4);
	assert_stop(vcpu_handle_exit(&vcpu), 42, NULL);
}

static void test_exit_port_status_zero_is_success(void **state)
{
	(void)state;
	set_io(KVM_EXIT_IO_OUT, KVMPROF_EXIT_PORT, 4, 1);
	memcpy(io_data(), &(uint32_t){ 0 }, 4);
	assert_stop(vcpu_handle_exit(&vcpu), 0, NULL);
}

static void test_exit_port_caps_a_large_status(void **state)
{
	(void)state;
	/* 256 truncated to a byte would read as success: it becomes 255. */
	set_io(KVM_EXIT_IO_OUT, KVMPROF_EXIT_PORT, 4, 1);
	memcpy(io_data(), &(uint32_t){ 256 }, 4);
	assert_stop(vcpu_handle_exit(&vcpu), 255, NULL);
}

static void test_exit_port_takes_a_byte_write(void **state)
{
	(void)state;
	set_io(KVM_EXIT_IO_OUT, KVMPROF_EXIT_PORT, 1, 1);
	io_data()[0] = 7;
	assert_stop(vcpu_handle_exit(&vcpu), 7, NULL);
}

static void test_exit_port_read_is_an_open_bus(void **state)
{
	(void)state;
	set_io(KVM_EXIT_IO_IN, KVMPROF_EXIT_PORT, 4, 1);
	assert_continue(vcpu_handle_exit(&vcpu));
	assert_memory_equal(io_data(), ((uint8_t[]){ 0xff, 0xff, 0xff, 0xff }), 4);
}

static void test_string_out_ends_at_the_first_stop(void **state)
{
	(void)state;
	/* REP OUTSD of two statuses: the first stops the guest, the second is never written. */
	set_io(KVM_EXIT_IO_OUT, KVMPROF_EXIT_PORT, 4, 2);
	memcpy(io_data(), (uint32_t[]){ 3, 4 }, 8);
	assert_stop(vcpu_handle_exit(&vcpu), 3, NULL);
}

static void test_i8042_reset_pulse_stops(void **state)
{
	(void)state;
	set_io(KVM_EXIT_IO_OUT, KVMPROF_I8042_COMMAND_PORT, 1, 1);
	io_data()[0] = 0xfe;
	assert_stop(vcpu_handle_exit(&vcpu), 0, RESET_MESSAGE);
}

static void test_i8042_other_command_continues(void **state)
{
	(void)state;
	set_io(KVM_EXIT_IO_OUT, KVMPROF_I8042_COMMAND_PORT, 1, 1);
	io_data()[0] = 0xd1; /* write output port: not a reset by itself */
	assert_continue(vcpu_handle_exit(&vcpu));
	set_io(KVM_EXIT_IO_IN, KVMPROF_I8042_COMMAND_PORT, 1, 1);
	assert_continue(vcpu_handle_exit(&vcpu));
	assert_int_equal(io_data()[0], 0xff); /* no controller there */
}

static void test_reset_control_register(void **state)
{
	(void)state;
	set_io(KVM_EXIT_IO_OUT, KVMPROF_RESET_CONTROL_PORT, 1, 1);
	io_data()[0] = 0x02; /* system reset type without RST_CPU: nothing yet */
	assert_continue(vcpu_handle_exit(&vcpu));
	io_data()[0] = 0x06;
	assert_stop(vcpu_handle_exit(&vcpu), 0, RESET_MESSAGE);
}

static void pm1_cnt_write(uint16_t v)
{
	set_io(KVM_EXIT_IO_OUT, KVMPROF_ACPI_PM1A_CNT_PORT, 2, 1);
	memcpy(io_data(), &v, 2);
}

static uint16_t pm1_read(uint16_t port)
{
	uint16_t v;

	set_io(KVM_EXIT_IO_IN, port, 2, 1);
	assert_continue(vcpu_handle_exit(&vcpu));
	memcpy(&v, io_data(), 2);
	return v;
}

static void test_acpi_s5_powers_off(void **state)
{
	(void)state;
	/* ACPICA's order: the sleep type alone, then with SLP_EN. */
	pm1_cnt_write(KVMPROF_ACPI_S5_TYPE << KVMPROF_ACPI_PM1_CNT_SLP_TYP_SHIFT);
	assert_continue(vcpu_handle_exit(&vcpu));
	pm1_cnt_write(KVMPROF_ACPI_S5_TYPE << KVMPROF_ACPI_PM1_CNT_SLP_TYP_SHIFT | KVMPROF_ACPI_PM1_CNT_SLP_EN);
	assert_stop(vcpu_handle_exit(&vcpu), 0, NULL);
}

static void test_acpi_other_sleep_types_go_on(void **state)
{
	(void)state;
	/* S1 (type 1) and QEMU's S5 (type 0) are not this machine's S5: refused, the guest runs on. */
	for (uint16_t type = 0; type < 7; type++) {
		pm1_cnt_write((uint16_t)(type << KVMPROF_ACPI_PM1_CNT_SLP_TYP_SHIFT | KVMPROF_ACPI_PM1_CNT_SLP_EN));
		assert_continue(vcpu_handle_exit(&vcpu));
	}
	assert_int_equal(vm.acpi_pm.sleep_refused, 1);
}

static void test_acpi_registers_read_back(void **state)
{
	(void)state;
	/* SCI_EN always set (always in ACPI mode); SLP_EN is write-only; status never rises. */
	assert_int_equal(pm1_read(KVMPROF_ACPI_PM1A_CNT_PORT), KVMPROF_ACPI_PM1_CNT_SCI_EN);
	pm1_cnt_write(3u << KVMPROF_ACPI_PM1_CNT_SLP_TYP_SHIFT);
	assert_continue(vcpu_handle_exit(&vcpu));
	assert_int_equal(pm1_read(KVMPROF_ACPI_PM1A_CNT_PORT),
			 3u << KVMPROF_ACPI_PM1_CNT_SLP_TYP_SHIFT | KVMPROF_ACPI_PM1_CNT_SCI_EN);
	set_io(KVM_EXIT_IO_OUT, KVMPROF_ACPI_PM1A_EVT_PORT + 2, 2, 1);
	memcpy(io_data(), &(uint16_t){ 0x0121 }, 2);
	assert_continue(vcpu_handle_exit(&vcpu));
	assert_int_equal(pm1_read(KVMPROF_ACPI_PM1A_EVT_PORT), 0);
	assert_int_equal(pm1_read(KVMPROF_ACPI_PM1A_EVT_PORT + 2), 0x0121);
	/* Past the control block, inside the range: an open bus. */
	assert_int_equal(pm1_read(KVMPROF_ACPI_PM1A_CNT_PORT + 2), 0xffff);
}

/* --- other exits ------------------------------------------------------------- */

static void test_mmio_read_is_an_open_bus(void **state)
{
	(void)state;
	set_exit(KVM_EXIT_MMIO);
	area.run.mmio.phys_addr = 0xd0000000;
	area.run.mmio.len = 4;
	area.run.mmio.is_write = 0;
	assert_continue(vcpu_handle_exit(&vcpu));
	for (size_t i = 0; i < sizeof(area.run.mmio.data); i++)
		assert_int_equal(area.run.mmio.data[i], 0xff);
}

static void test_mmio_write_is_dropped(void **state)
{
	(void)state;
	set_exit(KVM_EXIT_MMIO);
	area.run.mmio.is_write = 1;
	area.run.mmio.len = 4;
	memcpy(area.run.mmio.data, "\x01\x02\x03\x04", 4);
	assert_continue(vcpu_handle_exit(&vcpu));
	assert_memory_equal(area.run.mmio.data, "\x01\x02\x03\x04", 4);
}

static void test_intr_continues(void **state)
{
	(void)state;
	/* A signal (a kick, a sampler or vPMU timer) interrupted KVM_RUN. */
	set_exit(KVM_EXIT_INTR);
	assert_continue(vcpu_handle_exit(&vcpu));
}

static void test_msr_exits_go_to_the_vpmu(void **state)
{
	(void)state;
	set_exit(KVM_EXIT_X86_RDMSR);
	area.run.msr.index = 0xc0010201;
	assert_continue(vcpu_handle_exit(&vcpu));
	assert_ptr_equal(msr_handled_for, &vcpu);
	assert_int_equal(area.run.msr.data, 0x1234);
	msr_handled_for = NULL;
	set_exit(KVM_EXIT_X86_WRMSR);
	assert_continue(vcpu_handle_exit(&vcpu));
	assert_ptr_equal(msr_handled_for, &vcpu);
}

static void test_msr_exit_nobody_takes_crashes(void **state)
{
	static const struct vcpu_hooks *const none[] = { &exact_standin, NULL };

	(void)state;
	vm.hooks = none;
	set_exit(KVM_EXIT_X86_WRMSR);
	assert_crash(vcpu_handle_exit(&vcpu), "unexpected MSR exit");
	assert_null(msr_handled_for);
}

static void test_debug_exit_of_the_exact_backend(void **state)
{
	(void)state;
	set_exit(KVM_EXIT_DEBUG);
	expect_function_call(exact_standin_debug);
	will_return(exact_standin_debug, true);
	assert_continue(vcpu_handle_exit(&vcpu)); /* the tracer is not asked */
}

static void test_debug_exit_of_the_pmi_tracer(void **state)
{
	(void)state;
	set_exit(KVM_EXIT_DEBUG);
	expect_function_call(exact_standin_debug);
	will_return(exact_standin_debug, false);
	expect_function_call(tracer_standin_debug);
	will_return(tracer_standin_debug, true);
	assert_continue(vcpu_handle_exit(&vcpu));
}

static void test_debug_exit_nobody_asked_for_crashes(void **state)
{
	(void)state;
	set_exit(KVM_EXIT_DEBUG);
	expect_function_call(exact_standin_debug);
	will_return(exact_standin_debug, false);
	expect_function_call(tracer_standin_debug);
	will_return(tracer_standin_debug, false);
	assert_crash(vcpu_handle_exit(&vcpu), "unexpected debug exit");
}


/*
 * A dummy feature registered beside another sees each of its hooks called
 * in the VM's and the vCPU's order; of two that take runs or debug exits,
 * the first that claims one has it.
 */
static char hook_log[512];

static void logf_hook(const char *who, const char *what)
{
	size_t n = strlen(hook_log);

	snprintf(hook_log + n, sizeof(hook_log) - n, "%s%s.%s", n ? " " : "", who, what);
}

#define DUMMY_HOOKS(tag, claims)                                                                 \
	static int tag##_setup(struct vm *v)                                                     \
	{                                                                                        \
		(void)v;                                                                         \
		logf_hook(#tag, "setup");                                                        \
		return 0;                                                                        \
	}                                                                                        \
	static void tag##_announce(const struct vm *v)                                           \
	{                                                                                        \
		(void)v;                                                                         \
		logf_hook(#tag, "announce");                                                     \
	}                                                                                        \
	static struct kvm_cpuid2 *tag##_cpuid(const struct vm *v, struct kvm_cpuid2 *c)         \
	{                                                                                        \
		(void)v;                                                                         \
		logf_hook(#tag, "cpuid");                                                        \
		return c;                                                                        \
	}                                                                                        \
	static int tag##_init(struct vcpu *c)                                                    \
	{                                                                                        \
		(void)c;                                                                         \
		logf_hook(#tag, "init");                                                         \
		return 0;                                                                        \
	}                                                                                        \
	static void tag##_destroy(struct vcpu *c)                                                \
	{                                                                                        \
		(void)c;                                                                         \
		logf_hook(#tag, "destroy");                                                      \
	}                                                                                        \
	static void tag##_before(struct vcpu *c)                                                 \
	{                                                                                        \
		(void)c;                                                                         \
		logf_hook(#tag, "before");                                                       \
	}                                                                                        \
	static void tag##_after(struct vcpu *c)                                                  \
	{                                                                                        \
		(void)c;                                                                         \
		logf_hook(#tag, "after");                                                        \
	}                                                                                        \
	static bool tag##_run(struct vcpu *c, int *rc, bool *ran)                                \
	{                                                                                        \
		(void)c;                                                                         \
		logf_hook(#tag, "run");                                                          \
		if (claims) {                                                                    \
			*rc = 0;                                                                 \
			*ran = false;                                                            \
		}                                                                                \
		return claims;                                                                   \
	}                                                                                        \
	static void tag##_after_exit(struct vcpu *c)                                             \
	{                                                                                        \
		(void)c;                                                                         \
		logf_hook(#tag, "after_exit");                                                   \
	}                                                                                        \
	static bool tag##_debug(struct vcpu *c)                                                  \
	{                                                                                        \
		(void)c;                                                                         \
		logf_hook(#tag, "debug");                                                        \
		return claims;                                                                   \
	}                                                                                        \
	static void tag##_stats(struct vm *v)                                                    \
	{                                                                                        \
		(void)v;                                                                         \
		logf_hook(#tag, "stats");                                                        \
	}                                                                                        \
	static const struct vcpu_hooks tag##_hooks = {                                           \
		.name = #tag, .vm_setup = tag##_setup, .announce = tag##_announce,                \
		.cpuid = tag##_cpuid, .init = tag##_init,                                         \
		.destroy = tag##_destroy, .before_run = tag##_before, .after_run = tag##_after,    \
		.run = tag##_run, .after_exit = tag##_after_exit, .debug_exit = tag##_debug,      \
		.print_stats = tag##_stats,                                                       \
	}

DUMMY_HOOKS(a, false);
DUMMY_HOOKS(b, true);

static void test_hooks_called_in_order(void **state)
{
	static const struct vcpu_hooks *const features[] = { &a_hooks, &b_hooks, NULL };
	struct kvm_cpuid2 cpuid = { 0 };
	bool ran = true;
	int rc = -1;

	(void)state;
	vm.hooks = features;
	hook_log[0] = '\0';
	assert_int_equal(vm_hooks_setup(&vm), 0);
	assert_ptr_equal(vm_hooks_cpuid(&vm, &cpuid), &cpuid);
	assert_int_equal(vcpu_hooks_init(&vcpu), 0);
	vcpu_hooks_before_run(&vcpu);
	assert_true(vcpu_hooks_run(&vcpu, &rc, &ran));
	assert_int_equal(rc, 0);
	assert_false(ran);
	vcpu_hooks_after_run(&vcpu);
	vcpu_hooks_after_exit(&vcpu);
	assert_true(vcpu_hooks_debug_exit(&vcpu));
	assert_false(vcpu_hooks_msr_exit(&vcpu)); /* neither has an MSR hook */
	vcpu_hooks_destroy(&vcpu);
	vm_hooks_print_stats(&vm);
	assert_string_equal(hook_log, "a.setup b.setup a.announce b.announce a.cpuid b.cpuid a.init b.init a.before b.before a.run b.run "
				      "a.after b.after a.after_exit b.after_exit a.debug b.debug a.destroy b.destroy "
				      "a.stats b.stats");

	/* Nobody takes the run: KVM_RUN's. */
	static const struct vcpu_hooks *const only_a[] = { &a_hooks, NULL };
	vm.hooks = only_a;
	hook_log[0] = '\0';
	assert_false(vcpu_hooks_run(&vcpu, &rc, &ran));
	assert_false(vcpu_hooks_debug_exit(&vcpu));
	assert_string_equal(hook_log, "a.run a.debug");
}

static int failing_init(struct vcpu *c)
{
	(void)c;
	logf_hook("fails", "init");
	return -ENOMEM;
}

static int refusing_setup(struct vm *v)
{
	(void)v;
	logf_hook("refuses", "setup");
	return -EBUSY;
}

/* A feature that refuses the VM at setup stops it before anything is announced (its one line is the last). */
static void test_hooks_setup_refusal_announces_nothing(void **state)
{
	static const struct vcpu_hooks refuses = { .name = "refuses", .vm_setup = refusing_setup };
	static const struct vcpu_hooks *const features[] = { &a_hooks, &refuses, &b_hooks, NULL };

	(void)state;
	vm.hooks = features;
	hook_log[0] = '\0';
	assert_int_equal(vm_hooks_setup(&vm), -EBUSY);
	assert_string_equal(hook_log, "a.setup refuses.setup");
}

/* A feature whose init fails stops the vCPU's creation there, and the core says which feature and vCPU. */
static void test_hooks_init_failure_names_the_feature(void **state)
{
	static const struct vcpu_hooks fails = { .name = "made-up feature", .init = failing_init };
	static const struct vcpu_hooks *const features[] = { &a_hooks, &fails, &b_hooks, NULL };
	FILE *err = tmpfile();
	char said[256] = "";
	int saved = dup(STDERR_FILENO);

	(void)state;
	assert_non_null(err);
	assert_true(saved >= 0);
	vm.hooks = features;
	hook_log[0] = '\0';
	fflush(stderr);
	dup2(fileno(err), STDERR_FILENO);
	int rc = vcpu_hooks_init(&vcpu);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	rewind(err);
	assert_non_null(fgets(said, sizeof(said), err));
	fclose(err);
	assert_int_equal(rc, -ENOMEM);
	assert_string_equal(hook_log, "a.init fails.init");
	assert_string_equal(said, "kvmprof-vmm: vCPU 0: made-up feature: Cannot allocate memory\n");
}

static void test_system_event_shutdown_powers_off(void **state)
{
	(void)state;
	set_exit(KVM_EXIT_SYSTEM_EVENT);
	area.run.system_event.type = KVM_SYSTEM_EVENT_SHUTDOWN;
	assert_stop(vcpu_handle_exit(&vcpu), 0, "guest powered off");
}

static void test_system_event_reset_stops(void **state)
{
	(void)state;
	set_exit(KVM_EXIT_SYSTEM_EVENT);
	area.run.system_event.type = KVM_SYSTEM_EVENT_RESET;
	assert_stop(vcpu_handle_exit(&vcpu), 0, RESET_MESSAGE);
}

static void test_system_event_crash_crashes(void **state)
{
	(void)state;
	set_exit(KVM_EXIT_SYSTEM_EVENT);
	area.run.system_event.type = KVM_SYSTEM_EVENT_CRASH;
	assert_crash(vcpu_handle_exit(&vcpu), "guest reported a crash");
}

static void test_shutdown_is_a_triple_fault(void **state)
{
	(void)state;
	set_exit(KVM_EXIT_SHUTDOWN);
	assert_crash(vcpu_handle_exit(&vcpu), "guest triple fault");
}

static void test_fail_entry_crashes(void **state)
{
	(void)state;
	set_exit(KVM_EXIT_FAIL_ENTRY);
	area.run.fail_entry.hardware_entry_failure_reason = 0x21;
	assert_crash(vcpu_handle_exit(&vcpu), "VM entry failed");
}

static void test_internal_error_crashes(void **state)
{
	(void)state;
	set_exit(KVM_EXIT_INTERNAL_ERROR);
	area.run.internal.suberror = KVM_INTERNAL_ERROR_EMULATION;
	assert_crash(vcpu_handle_exit(&vcpu), "KVM internal error");
}

static void test_hlt_is_unexpected(void **state)
{
	(void)state;
	/* With the in-kernel irqchip KVM waits in HLT itself: an HLT exit means something is off. */
	set_exit(KVM_EXIT_HLT);
	assert_crash(vcpu_handle_exit(&vcpu), "unhandled VM exit");
}

static void test_unknown_reason_crashes(void **state)
{
	(void)state;
	set_exit(9999);
	assert_crash(vcpu_handle_exit(&vcpu), "unhandled VM exit");
}

/* --- trace events of the exits the VMM handles --------------------------------- */

static struct traced {
	unsigned int n;
	unsigned int event[8];
	uint64_t args[8][KVMPROF_TRACE_MAX_ARGS];
} traced;

static void trace_cb(void *opaque, const struct trace_ctx *ctx, unsigned int event, const uint64_t *args,
		     unsigned int nargs)
{
	(void)opaque, (void)ctx;
	if (traced.n < 8) {
		traced.event[traced.n] = event;
		memcpy(traced.args[traced.n], args, nargs * sizeof(*args));
	}
	traced.n++;
}

static struct trace_subscriber trace_sub = { .cb = trace_cb };
static struct trace_ctx trace_ctx;

static int setup_traced(void **state)
{
	memset(&traced, 0, sizeof(traced));
	trace_sub.events[KVMPROF_TRACE_pio] = trace_sub.events[KVMPROF_TRACE_mmio] = true;
	assert_int_equal(trace_ctx_register(&trace_ctx, 0, &area.run, NULL), 0);
	assert_int_equal(trace_subscribe(&trace_sub), 0);
	return setup(state);
}

static int teardown_traced(void **state)
{
	(void)state;
	trace_unsubscribe(&trace_sub);
	trace_ctx_unregister(&trace_ctx);
	return 0;
}

static void assert_traced(unsigned int i, unsigned int event, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3)
{
	assert_int_equal(traced.event[i], event);
	assert_int_equal(traced.args[i][0], a0);
	assert_int_equal(traced.args[i][1], a1);
	assert_int_equal(traced.args[i][2], a2);
	assert_int_equal(traced.args[i][3], a3);
}

/* One pio event per access of a string IN, with the value the device gave. */
static void test_trace_pio_string_in(void **state)
{
	(void)state;
	set_io(KVM_EXIT_IO_IN, TEST_DEVICE_PORT, 1, 3);
	assert_continue(vcpu_handle_exit(&vcpu));
	assert_int_equal(traced.n, 3);
	for (unsigned int i = 0; i < 3; i++)
		assert_traced(i, KVMPROF_TRACE_pio, TEST_DEVICE_PORT, 1, 0, 0x10 + i);
}

/* A string OUT that stops the guest: the stopping access is traced, the one never made is not. */
static void test_trace_pio_out_until_stop(void **state)
{
	(void)state;
	set_io(KVM_EXIT_IO_OUT, KVMPROF_EXIT_PORT, 4, 2);
	memcpy(io_data(), (uint32_t[]){ 0x12345678, 4 }, 8);
	assert_stop(vcpu_handle_exit(&vcpu), 255, NULL);
	assert_int_equal(traced.n, 1);
	assert_traced(0, KVMPROF_TRACE_pio, KVMPROF_EXIT_PORT, 4, 1, 0x12345678);
}

static void test_trace_mmio(void **state)
{
	(void)state;
	set_exit(KVM_EXIT_MMIO);
	area.run.mmio.phys_addr = 0xd0000000;
	area.run.mmio.len = 2;
	area.run.mmio.is_write = 0;
	assert_continue(vcpu_handle_exit(&vcpu));
	area.run.mmio.is_write = 1;
	area.run.mmio.len = 4;
	memcpy(area.run.mmio.data, "\x01\x02\x03\x04", 4);
	assert_continue(vcpu_handle_exit(&vcpu));
	assert_int_equal(traced.n, 2);
	assert_traced(0, KVMPROF_TRACE_mmio, 0xd0000000, 2, 0, 0xffff); /* the open bus, as the guest reads it */
	assert_traced(1, KVMPROF_TRACE_mmio, 0xd0000000, 4, 1, 0x04030201);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_io_out_reaches_the_device, setup),
		cmocka_unit_test_setup_teardown(test_trace_pio_string_in, setup_traced, teardown_traced),
		cmocka_unit_test_setup_teardown(test_trace_pio_out_until_stop, setup_traced, teardown_traced),
		cmocka_unit_test_setup_teardown(test_trace_mmio, setup_traced, teardown_traced),
		cmocka_unit_test_setup(test_io_in_string_fills_each_element, setup),
		cmocka_unit_test_setup(test_io_in_unclaimed_reads_all_ones, setup),
		cmocka_unit_test_setup(test_io_out_unclaimed_is_ignored, setup),
		cmocka_unit_test_setup(test_acpi_s5_powers_off, setup),
		cmocka_unit_test_setup(test_acpi_other_sleep_types_go_on, setup),
		cmocka_unit_test_setup(test_acpi_registers_read_back, setup),
		cmocka_unit_test_setup(test_exit_port_stops_with_the_status, setup),
		cmocka_unit_test_setup(test_exit_port_status_zero_is_success, setup),
		cmocka_unit_test_setup(test_exit_port_caps_a_large_status, setup),
		cmocka_unit_test_setup(test_exit_port_takes_a_byte_write, setup),
		cmocka_unit_test_setup(test_exit_port_read_is_an_open_bus, setup),
		cmocka_unit_test_setup(test_string_out_ends_at_the_first_stop, setup),
		cmocka_unit_test_setup(test_i8042_reset_pulse_stops, setup),
		cmocka_unit_test_setup(test_i8042_other_command_continues, setup),
		cmocka_unit_test_setup(test_reset_control_register, setup),
		cmocka_unit_test_setup(test_mmio_read_is_an_open_bus, setup),
		cmocka_unit_test_setup(test_mmio_write_is_dropped, setup),
		cmocka_unit_test_setup(test_intr_continues, setup),
		cmocka_unit_test_setup(test_msr_exits_go_to_the_vpmu, setup),
		cmocka_unit_test_setup(test_msr_exit_nobody_takes_crashes, setup),
		cmocka_unit_test_setup(test_hooks_called_in_order, setup),
		cmocka_unit_test_setup(test_hooks_setup_refusal_announces_nothing, setup),
		cmocka_unit_test_setup(test_hooks_init_failure_names_the_feature, setup),
		cmocka_unit_test_setup(test_debug_exit_of_the_exact_backend, setup),
		cmocka_unit_test_setup(test_debug_exit_of_the_pmi_tracer, setup),
		cmocka_unit_test_setup(test_debug_exit_nobody_asked_for_crashes, setup),
		cmocka_unit_test_setup(test_system_event_shutdown_powers_off, setup),
		cmocka_unit_test_setup(test_system_event_reset_stops, setup),
		cmocka_unit_test_setup(test_system_event_crash_crashes, setup),
		cmocka_unit_test_setup(test_shutdown_is_a_triple_fault, setup),
		cmocka_unit_test_setup(test_fail_entry_crashes, setup),
		cmocka_unit_test_setup(test_internal_error_crashes, setup),
		cmocka_unit_test_setup(test_hlt_is_unexpected, setup),
		cmocka_unit_test_setup(test_unknown_reason_crashes, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
