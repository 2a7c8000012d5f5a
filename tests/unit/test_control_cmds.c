// SPDX-License-Identifier: MIT
/*
 * The control socket's requests and commands (vmm/profiling/control_request.c,
 * vmm/profiling/control_cmds.c) without a socket: request lines in, reply lines out,
 * as docs/control-socket.md gives them. The guest sampler's calls are
 * stand-ins; the VM is a struct filled by hand.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "control.h"
#include "control_session.h"
#include "exit_stats.h"
#include "guest_sampler.h"
#include "plugins/probe.h"
#include "pmu.h"
#include "vm.h"

/* --- stand-ins for the live VM --------------------------------------------- */

static bool sampler_on, stopping;

bool vm_stopping(struct vm *vm)
{
	(void)vm;
	return stopping;
}

bool guest_sampler_running(const struct vm *vm)
{
	(void)vm;
	return sampler_on;
}

bool guest_sampler_has_desc(struct vm *vm)
{
	(void)vm;
	return false;
}

int guest_sampler_start(struct vm *vm, const struct guest_sampler_request *req, int *memfd, size_t *ring_size,
			char err[GUEST_SAMPLER_ERR_MAX])
{
	(void)vm;
	(void)req;
	if (sampler_on) {
		snprintf(err, GUEST_SAMPLER_ERR_MAX, "guest sampling is already running");
		return -EBUSY;
	}
	*memfd = memfd_create("test-rings", MFD_CLOEXEC);
	assert_true(*memfd >= 0);
	*ring_size = 4096;
	sampler_on = true;
	return 0;
}

int guest_sampler_stop(struct vm *vm, struct guest_sampler_totals *t)
{
	(void)vm;
	if (!sampler_on)
		return -ESRCH;
	*t = (struct guest_sampler_totals){ .samples = 3, .records = 4, .kick_exits = 5, .kicks_no_period = 2 };
	sampler_on = false;
	return 0;
}

/* --- the VM and one connection ----------------------------------------------- */

/* The features whose state the commands read, as the VM takes them (their code stands in above or is not needed). */
const struct vcpu_hooks vmm_pmu_hooks = { .name = "vpmu", .vm_size = sizeof(struct vmm_pmu),
					  .vcpu_size = sizeof(struct vcpu_pmu) };
const struct vcpu_hooks guest_sampler_hooks = { .name = "guest-sampler", .vm_size = sizeof(struct guest_sampler),
						.vcpu_size = sizeof(struct guest_sampler_vcpu) };
static const struct vcpu_hooks *const features[] = { &guest_sampler_hooks, &vmm_pmu_hooks, &exit_stats_hooks, NULL };

static struct vm vm;
static struct vm_config cfg;
static struct control_session ses;
static char out[CONTROL_OUT_MAX];

static void set_vpmu(enum vpmu_model model, enum vpmu_backend_choice backend)
{
	vmm_pmu_of(&vm)->cfg.model = model;
	vmm_pmu_of(&vm)->cfg.n_gp = model == VPMU_MODEL_OFF ? 0 : 6;
	vmm_pmu_of(&vm)->backend = vpmu_backend_desc_of(backend);
}

static int setup(void **state)
{
	(void)state;
	memset(&vm, 0, sizeof(vm));
	cfg = (struct vm_config){ .ncpus = 2, .mem_size = 256u << 20 };
	vm.cfg = &cfg;
	vm.hooks = features;
	assert_int_equal(vm_hooks_alloc(&vm), 0);
	for (unsigned int i = 0; i < cfg.ncpus; i++) {
		vm.vcpu[i].vm = &vm;
		assert_int_equal(vcpu_hooks_alloc(&vm.vcpu[i]), 0);
	}
	set_vpmu(VPMU_MODEL_AMD, VPMU_BACKEND_CLOCK);
	vm.vcpu[0].tid = 100;
	sampler_on = stopping = false;
	ses = (struct control_session){ .vm = &vm, .start_ns = control_now_ns(), .pass_fd = -1 };
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	control_session_end(&ses);
	assert_false(sampler_on); /* the connection's sampling ends with it */
	for (unsigned int i = 0; i < cfg.ncpus; i++)
		vcpu_hooks_free(&vm.vcpu[i]);
	vm_hooks_free(&vm);
	return 0;
}

/* The reply to line: exactly one line, returned without its newline. */
static const char *ask(const char *line)
{
	size_t n = control_reply(&ses, line, strlen(line), out, sizeof(out));

	assert_true(n > 0);
	assert_int_equal(out[n - 1], '\n');
	assert_null(memchr(out, '\n', n - 1));
	out[n - 1] = '\0';
	return out;
}

static void assert_starts(const char *reply, const char *prefix)
{
	if (strncmp(reply, prefix, strlen(prefix)))
		fail_msg("reply %s\ndoes not start with %s", reply, prefix);
}

static void assert_contains(const char *reply, const char *part)
{
	if (!strstr(reply, part))
		fail_msg("reply %s\nlacks %s", reply, part);
}

/* --- requests ------------------------------------------------------------------ */

static void test_status_names_the_vpmu(void **state)
{
	const char *r;

	(void)state;
	r = ask("{\"cmd\":\"status\",\"id\":7}");
	assert_starts(r, "{\"ok\":true,\"id\":7,\"protocol\":1,\"state\":\"running\",");
	assert_contains(r, "\"vpmu\":{\"model\":\"amd\",\"backend\":\"clock\",\"mode\":\"cpu-switch\",\"counters\":6,");
}

static void test_status_names_the_exact_backend(void **state)
{
	(void)state;
	/* The copy of the names control.c used to keep said "none" here. */
	set_vpmu(VPMU_MODEL_INTEL, VPMU_BACKEND_EXACT);
	vmm_pmu_of(&vm)->cfg.mode = VPMU_MODE_DOMAIN_SWITCH;
	assert_contains(ask("{\"cmd\":\"status\"}"),
			"\"vpmu\":{\"model\":\"intel\",\"backend\":\"exact\",\"mode\":\"domain-switch\",");
}

static void test_status_without_a_vpmu(void **state)
{
	(void)state;
	set_vpmu(VPMU_MODEL_OFF, VPMU_BACKEND_AUTO);
	assert_contains(ask("{\"cmd\":\"status\"}"),
			"\"vpmu\":{\"model\":\"off\",\"backend\":\"none\",\"mode\":\"cpu-switch\",\"counters\":0,");
}

static void test_vcpus(void **state)
{
	(void)state;
	assert_contains(ask("{\"cmd\":\"vcpus\"}"), "\"vcpus\":[{\"index\":0,\"tid\":100},{\"index\":1,\"tid\":null}]}");
}

static void test_vpmu_stats_of_each_backend(void **state)
{
	(void)state;
	vcpu_pmu_of(&vm.vcpu[0])->exits = 5;
	vcpu_pmu_of(&vm.vcpu[1])->exits = 6;
	assert_starts(ask("{\"cmd\":\"vpmu-stats\"}"),
		      "{\"ok\":true,\"model\":\"amd\",\"backend\":\"clock\",\"mode\":\"cpu-switch\",\"vcpus\":2,"
		      "\"vm_exits\":11,");
	/* The exact backend is the VMM's own too: it has figures (it used to be refused as KVM's). */
	set_vpmu(VPMU_MODEL_AMD, VPMU_BACKEND_EXACT);
	assert_starts(ask("{\"cmd\":\"vpmu-stats\"}"), "{\"ok\":true,\"model\":\"amd\",\"backend\":\"exact\",");
	set_vpmu(VPMU_MODEL_AMD, VPMU_BACKEND_KVM);
	assert_string_equal(ask("{\"cmd\":\"vpmu-stats\"}"),
			    "{\"ok\":false,\"error\":\"no emulated vPMU in this run: KVM's in-kernel vPMU keeps no "
			    "figures here\"}");
	set_vpmu(VPMU_MODEL_OFF, VPMU_BACKEND_AUTO);
	assert_string_equal(ask("{\"cmd\":\"vpmu-stats\"}"),
			    "{\"ok\":false,\"error\":\"no vPMU in this run (model off)\"}");
}

static void test_sampling_belongs_to_the_session(void **state)
{
	(void)state;
	assert_string_equal(ask("{\"cmd\":\"sample-stop\"}"), "{\"ok\":false,\"error\":\"guest sampling is not running\"}");
	assert_starts(ask("{\"cmd\":\"sample-start\",\"event\":\"cpu-clock\",\"freq\":1000}"),
		      "{\"ok\":true,\"event\":\"cpu-clock\",\"period\":1000000,");
	assert_true(ses.sampling);
	assert_true(ses.pass_fd >= 0); /* the rings travel with this reply */
	assert_string_equal(ask("{\"cmd\":\"sample-start\"}"),
			    "{\"ok\":false,\"error\":\"the previous ring descriptor has not been sent yet: read the "
			    "replies\"}");
	close(ses.pass_fd);
	ses.pass_fd = -1;
	/* teardown ends the session: its sampling stops with it */
}

static void test_sample_stop(void **state)
{
	(void)state;
	ask("{\"cmd\":\"sample-start\"}");
	assert_string_equal(ask("{\"cmd\":\"sample-stop\"}"),
			    "{\"ok\":true,\"samples\":3,\"lost\":0,\"records\":4,\"vm_exits\":0,\"vm_exits_dropped\":0,"
			    "\"kick_exits\":5,\"kicks_no_period\":2,\"capture_mean_ns\":0,\"capture_max_ns\":0}");
	assert_false(ses.sampling);
}

static void test_bad_requests(void **state)
{
	(void)state;
	assert_string_equal(ask("{}"), "{\"ok\":false,\"error\":\"missing \\\"cmd\\\" (a string): status, vcpus, "
				       "vpmu-stats, sample-start, sample-stop, exit-stats, plugin-load, plugin-unload, "
				       "plugin-list, plugin-output, event-list or event-set\"}");
	assert_string_equal(ask("{\"cmd\":\"reboot\"}"), "{\"ok\":false,\"error\":\"unknown cmd 'reboot': status, "
							  "vcpus, vpmu-stats, sample-start, sample-stop, exit-stats, "
							  "plugin-load, plugin-unload, plugin-list, plugin-output, "
							  "event-list or event-set\"}");
	assert_string_equal(ask("{\"cmd\":\"vcpus\",\"period\":1}"),
			    "{\"ok\":false,\"error\":\"vcpus takes no key 'period'\"}");
	assert_string_equal(ask("{\"cmd\":\"status\",\"id\":[1]}"),
			    "{\"ok\":false,\"error\":\"\\\"id\\\" must be a string or an integer\"}");
	assert_string_equal(ask("[1]"), "{\"ok\":false,\"error\":\"a request is one JSON object per line, e.g. "
					"{\\\"cmd\\\":\\\"status\\\"}\"}");
	assert_starts(ask("{\"cmd\":\"vcpus\"} \t"), "{\"ok\":true,"); /* blanks after it are fine */
	assert_starts(ask("{\"cmd\":"), "{\"ok\":false,\"error\":\"not a JSON object: incomplete\"}");
}

/* --- exit-stats ------------------------------------------------------------------ */

static uint64_t fake_now;
static uint64_t fake_clock(void)
{
	return fake_now;
}

static void test_exit_stats(void **state)
{
	struct control_session other = { .vm = &vm, .pass_fd = -1 };
	struct kvm_run run = { .exit_reason = KVM_EXIT_IO, .io.direction = KVM_EXIT_IO_OUT };
	struct trace_ctx vcpu1;
	const char *start = "{\"cmd\":\"exit-stats\",\"start\":true}";
	char line[4096];
	size_t n;

	(void)state;
	exit_stats_of(&vm)->now_ns = fake_clock;
	assert_string_equal(ask("{\"cmd\":\"exit-stats\"}"),
			    "{\"ok\":true,\"counting\":false,\"holders\":0,\"exits\":0,\"host_ns\":0,\"reasons\":[],"
			    "\"vcpus\":[{\"index\":0,\"exits\":0,\"host_ns\":0},{\"index\":1,\"exits\":0,\"host_ns\":0}]}");
	assert_starts(ask("{\"cmd\":\"exit-stats\",\"start\":true}"), "{\"ok\":true,\"counting\":true,\"holders\":1,");
	assert_true(ses.exit_stats);
	/* A connection holds it once, however often it asks. */
	assert_starts(ask("{\"cmd\":\"exit-stats\",\"start\":true}"), "{\"ok\":true,\"counting\":true,\"holders\":1,");

	/* vCPU 1 runs: an OUT exit handled in 250 ns, then a signal in 30. */
	assert_int_equal(trace_ctx_register(&vcpu1, 1, &run, NULL), 0);
	fake_now = 1000;
	TRACE(vm_run_end, KVM_EXIT_IO, 0, 0);
	fake_now = 1250;
	TRACE(vm_entry);
	fake_now = 2000;
	TRACE(vm_run_end, KVM_EXIT_INTR, EINTR, 0);
	fake_now = 2030;
	TRACE(vm_entry);
	trace_ctx_unregister(&vcpu1);
	assert_string_equal(ask("{\"cmd\":\"exit-stats\",\"start\":false}"),
			    "{\"ok\":true,\"counting\":true,\"holders\":1,\"exits\":2,\"host_ns\":280,\"reasons\":["
			    "{\"reason\":\"signal\",\"count\":1,\"host_ns\":30},{\"reason\":\"io out\",\"count\":1,\"host_ns\":250}],"
			    "\"vcpus\":[{\"index\":0,\"exits\":0,\"host_ns\":0},{\"index\":1,\"exits\":2,\"host_ns\":280}]}");

	/* A second connection holds it too; its end drops only its own hold. */
	n = control_reply(&other, start, strlen(start), line, sizeof(line));
	assert_true(n > 0);
	assert_non_null(strstr(line, "\"holders\":2,"));
	control_session_end(&other);
	assert_starts(ask("{\"cmd\":\"exit-stats\"}"), "{\"ok\":true,\"counting\":true,\"holders\":1,");
	/* stop: counting ends, the totals stay. */
	assert_starts(ask("{\"cmd\":\"exit-stats\",\"stop\":true}"),
		      "{\"ok\":true,\"counting\":false,\"holders\":0,\"exits\":2,\"host_ns\":280,");
	assert_false(ses.exit_stats);
	assert_false(trace_event_on(KVMPROF_TRACE_vm_run_end));
	assert_string_equal(ask("{\"cmd\":\"exit-stats\",\"stop\":true}"),
			    "{\"ok\":false,\"error\":\"this connection did not start exit-stats\"}");

	/* Bad requests. */
	assert_string_equal(ask("{\"cmd\":\"exit-stats\",\"start\":1}"),
			    "{\"ok\":false,\"error\":\"\\\"start\\\" must be true or false\"}");
	assert_string_equal(ask("{\"cmd\":\"exit-stats\",\"start\":true,\"stop\":true}"),
			    "{\"ok\":false,\"error\":\"give \\\"start\\\" or \\\"stop\\\", not both\"}");
	assert_string_equal(ask("{\"cmd\":\"exit-stats\",\"reset\":true}"),
			    "{\"ok\":false,\"error\":\"exit-stats takes no key 'reset'\"}");
	assert_false(ses.exit_stats);

	/* The connection's end drops its hold (teardown ends it). */
	ask("{\"cmd\":\"exit-stats\",\"start\":true}");
	control_session_end(&ses);
	assert_false(exit_stats_counting(exit_stats_of(&vm)));
	assert_false(trace_event_on(KVMPROF_TRACE_vm_entry));
}

/* --- plugins and events ------------------------------------------------------- */

/* build/tests/plugins/good.so, next to this test (or to build/asan/tests). */
static char good_so[600];

static void test_plugin_commands(void **state)
{
	struct plugin_probe probe = { 0 };
	char req[1024];
	const char *r;

	(void)state;
	snprintf(req, sizeof(req), "{\"cmd\":\"plugin-load\",\"path\":\"%s\",\"args\":[\"probe=%p\"]}", good_so,
		 (void *)&probe);
	r = ask(req);
	assert_starts(r, "{\"ok\":true,\"plugin\":");
	assert_contains(r, "\"name\":\"good\",\"events\":[\"pio\",\"msr_read\",\"msr_write\"]");
	/* The same file again: refused, the first stays. */
	assert_contains(ask(req), "already loaded as plugin");
	r = ask("{\"cmd\":\"plugin-list\"}");
	assert_contains(r, "\"name\":\"good\"");
	assert_contains(r, "\"output_buffered\":");
	/* Its init printed a line: plugin-output takes it. */
	assert_contains(ask("{\"cmd\":\"plugin-output\",\"plugin\":1,\"max\":5}"), "\"output\":\"init \",\"more\":true");
	assert_contains(ask("{\"cmd\":\"plugin-output\",\"plugin\":1}"), "\"more\":false");
	r = ask("{\"cmd\":\"event-set\",\"plugin\":1,\"events\":\"msr_*\",\"enable\":false}");
	assert_contains(r, "\"changed\":2,\"events\":[\"pio\"]");
	assert_contains(ask("{\"cmd\":\"event-set\",\"plugin\":1,\"events\":\"vm_exit\",\"enable\":true}"),
			"has no callback for 'vm_exit'");
	assert_contains(ask("{\"cmd\":\"event-set\",\"plugin\":1,\"events\":\"pio\"}"), "\\\"enable\\\" must be given");
	assert_contains(ask("{\"cmd\":\"event-list\",\"pattern\":\"pio\"}"),
			"\"events\":[{\"id\":4,\"name\":\"pio\",\"args\":\"port:x,size:u,out:u,value:x\"");
	assert_contains(ask("{\"cmd\":\"event-list\",\"pattern\":\"pio\"}"), "\"subscribers\":1}");
	assert_contains(ask("{\"cmd\":\"event-list\",\"pattern\":\"bogus*\"}"), "\"ok\":false");
	r = ask("{\"cmd\":\"plugin-unload\",\"plugin\":1}");
	assert_contains(r, "\"name\":\"good\"");
	assert_contains(r, "\"output\":\"fini pio 0 msr 0\\n\",\"more\":false");
	assert_contains(ask("{\"cmd\":\"plugin-unload\",\"plugin\":1}"), "no plugin has id 1");
	assert_contains(ask("{\"cmd\":\"plugin-list\"}"), "\"plugins\":[]");
	/* Bad requests. */
	assert_contains(ask("{\"cmd\":\"plugin-load\"}"), "\\\"path\\\" must be given");
	assert_contains(ask("{\"cmd\":\"plugin-load\",\"path\":\"/nonexistent.so\"}"),
			"/nonexistent.so: No such file or directory");
	assert_contains(ask("{\"cmd\":\"plugin-load\",\"path\":\"x.so\",\"args\":\"a=b\"}"),
			"must be an array of");
	assert_contains(ask("{\"cmd\":\"plugin-load\",\"path\":\"x.so\",\"args\":[1]}"), "must be an array of");
	assert_contains(ask("{\"cmd\":\"plugin-unload\"}"), "\\\"plugin\\\" must be given");
	assert_contains(ask("{\"cmd\":\"plugin-unload\",\"plugin\":\"1\"}"), "must be a positive integer");
	assert_contains(ask("{\"cmd\":\"plugin-output\",\"plugin\":7}"), "no plugin has id 7");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_status_names_the_vpmu, setup, teardown),
		cmocka_unit_test_setup_teardown(test_status_names_the_exact_backend, setup, teardown),
		cmocka_unit_test_setup_teardown(test_status_without_a_vpmu, setup, teardown),
		cmocka_unit_test_setup_teardown(test_vcpus, setup, teardown),
		cmocka_unit_test_setup_teardown(test_vpmu_stats_of_each_backend, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sampling_belongs_to_the_session, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sample_stop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_requests, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exit_stats, setup, teardown),
		cmocka_unit_test_setup_teardown(test_plugin_commands, setup, teardown),
	};

	char dir[512];

	if (test_plugins_dir(dir, sizeof(dir)))
		return 1;
	snprintf(good_so, sizeof(good_so), "%s/good.so", dir);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
