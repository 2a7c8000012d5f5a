// SPDX-License-Identifier: MIT
/*
 * The plugin host (vmm/plugin_host.c) with real libraries
 * (tests/unit/plugins/, built into build/tests/plugins/): loading and
 * every way to refuse it, events reaching a plugin's handlers, event-set,
 * output (buffer, file, a full disk, a full buffer), and unloading while
 * another thread dispatches.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "plugins/probe.h"
#include "plugin_host.h"
#include "trace.h"
#include "vcpu_hooks.h"

/*
 * plugin_api.c asks the guest sampler whether the guest registered its
 * processes: it did not; no VM here takes the sampler as a feature.
 */
const struct vcpu_hooks guest_sampler_hooks = { .name = "guest-sampler" };
bool guest_sampler_has_desc(struct vm *vm);
bool guest_sampler_has_desc(struct vm *vm)
{
	(void)vm;
	return false;
}

static char plugin_dir[600];
static struct trace_ctx test_ctx;

static const char *so(const char *name)
{
	static char path[4][700];
	static int next;
	char *p = path[next++ % 4];

	snprintf(p, sizeof(path[0]), "%s/%s.so", plugin_dir, name);
	return p;
}

static char probe_arg[64];

static const char *probe_of(struct plugin_probe *p)
{
	snprintf(probe_arg, sizeof(probe_arg), "probe=%p", (void *)p);
	return probe_arg;
}

static int load(const char *name, char *err, ...)
{
	char *argv[8];
	const char *a;
	va_list ap;
	int argc = 0;

	va_start(ap, err);
	while (argc < 8 && (a = va_arg(ap, const char *)))
		argv[argc++] = (char *)a;
	va_end(ap);
	err[0] = '\0';
	return plugin_load(so(name), argc, argv, err, PLUGIN_ERR_MAX);
}

/* Unloads id; returns its remaining buffered output (malloc'd) or NULL. */
static char *unload(int id, struct plugin_unload_result *res)
{
	char err[PLUGIN_ERR_MAX];
	char *out;

	assert_int_equal(plugin_unload((unsigned int)id, res, err, sizeof(err)), 0);
	out = res->output;
	res->output = NULL;
	return out;
}

static void assert_contains(const char *s, const char *part)
{
	if (!s || !strstr(s, part))
		fail_msg("'%s' does not contain '%s'", s ? s : "(null)", part);
}

static int setup(void **state)
{
	(void)state;
	assert_int_equal(trace_ctx_register(&test_ctx, 0, NULL, NULL), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	trace_ctx_unregister(&test_ctx);
	assert_int_equal(plugin_list(NULL, 0), 0); /* every test unloads what it loads */
	return 0;
}

static void test_load_dispatch_unload(void **state)
{
	struct plugin_probe probe = { 0 };
	struct plugin_info info[PLUGIN_MAX];
	struct plugin_unload_result res;
	char err[PLUGIN_ERR_MAX], *out;
	int id;

	(void)state;
	id = load("good", err, probe_of(&probe), "k=v", NULL);
	assert_true(id > 0);
	assert_int_equal(plugin_list(info, PLUGIN_MAX), 1);
	assert_int_equal(info[0].id, (unsigned int)id);
	assert_string_equal(info[0].name, "good");
	assert_true(info[0].events[KVMPROF_TRACE_pio] && info[0].events[KVMPROF_TRACE_msr_read] &&
		    info[0].events[KVMPROF_TRACE_msr_write]);
	assert_false(info[0].events[KVMPROF_TRACE_vm_exit]);

	TRACE(pio, 0x3f8, 1, 1, 'A');
	TRACE(pio, 0x3f8, 1, 1, 'B');
	TRACE(msr_write, 0xc0010000, 0x430076, 0);
	TRACE(msr_read, 0xc0010004, 5, 0);
	TRACE(vm_exit, 2, 0x1000, 0);
	assert_int_equal(probe.pio_calls, 2);
	assert_int_equal(probe.msr_calls, 1); /* the msr_* callback counts writes only */
	assert_int_equal(probe.last_args[3], 'B');
	assert_int_equal(probe.last_vcpu, 0);
	/* Off the vCPUs (this context has no vCPU behind it) the vCPU's state is not there to read. */
	assert_int_equal(probe.regs_rc, -ENODEV);
	assert_int_equal(probe.read_rc, -ENODEV);
	assert_int_equal(probe.proc_rc, -ENODEV);

	out = unload(id, &res);
	assert_string_equal(res.name, "good");
	assert_contains(out, "init good with 2 args");
	assert_contains(out, "fini pio 2 msr 1\n");
	assert_null(strstr(out, "subscribe after init was accepted"));
	free(out);
	/* Gone: no callback, no list entry, unknown id. */
	TRACE(pio, 0x3f8, 1, 1, 'C');
	assert_int_equal(probe.pio_calls, 2);
	assert_int_equal(plugin_unload((unsigned int)id, &res, err, sizeof(err)), -ENOENT);
	assert_contains(err, "no plugin has id");
}

static void test_event_set(void **state)
{
	struct plugin_probe probe = { 0 };
	struct plugin_unload_result res;
	char err[PLUGIN_ERR_MAX];
	unsigned int changed;
	int id;

	(void)state;
	id = load("good", err, probe_of(&probe), NULL);
	assert_true(id > 0);
	assert_int_equal(plugin_set_events((unsigned int)id, "pio", false, &changed, err, sizeof(err)), 0);
	assert_int_equal(changed, 1);
	TRACE(pio, 0x80, 1, 1, 0);
	assert_int_equal(probe.pio_calls, 0);
	assert_int_equal(plugin_set_events((unsigned int)id, "p*", true, &changed, err, sizeof(err)), 0);
	assert_int_equal(changed, 1);
	TRACE(pio, 0x80, 1, 1, 0);
	assert_int_equal(probe.pio_calls, 1);
	/* Only events it has a callback for. */
	assert_int_equal(plugin_set_events((unsigned int)id, "vm_exit", true, &changed, err, sizeof(err)), -EINVAL);
	assert_contains(err, "no callback for 'vm_exit'");
	assert_int_equal(plugin_set_events((unsigned int)id, "nonsense", true, &changed, err, sizeof(err)), -EINVAL);
	assert_int_equal(plugin_set_events(9999, "pio", true, &changed, err, sizeof(err)), -ENOENT);
	free(unload(id, &res));
}

static void test_refusals(void **state)
{
	char err[PLUGIN_ERR_MAX];
	struct plugin_probe probe = { 0 };
	struct plugin_unload_result res;
	int id;

	(void)state;
	assert_int_equal(load("no_such_plugin", err, NULL), -ENOENT);
	assert_contains(err, "No such file or directory");
	assert_int_equal(load("not_plugin", err, NULL), -ENOEXEC);
	assert_contains(err, "not a kvmprof plugin (no kvmprof_plugin_version symbol");
	assert_int_equal(load("no_init", err, NULL), -ENOEXEC);
	assert_contains(err, "no kvmprof_plugin_init symbol");
	assert_int_equal(load("old_version", err, NULL), -EPROTO);
	assert_contains(err, "built for plugin API version 42, this VMM has version 1");
	assert_int_equal(load("init_fails", err, NULL), -ECANCELED);
	assert_contains(err, "kvmprof_plugin_init refused (returned 3): refusing");
	assert_int_equal(load("good", err, NULL), -ECANCELED); /* no probe= argument: its init says no */
	assert_int_equal(load("good", err, "novalue", NULL), -EINVAL);
	assert_contains(err, "argument 'novalue' is not key=value");
	assert_int_equal(load("good", err, "out=/tmp/a", "out=/tmp/b", NULL), -EINVAL);
	assert_int_equal(load("good", err, "out=/nonexistent-dir/x", NULL), -ENOENT);
	assert_contains(err, "out=/nonexistent-dir/x: No such file or directory");
	/* A file that is not a library at all. */
	err[0] = '\0';
	assert_int_equal(plugin_load("/etc/hostname", 0, NULL, err, sizeof(err)), -ENOEXEC);
	assert_contains(err, "not a loadable library");
	/* Twice. */
	id = load("good", err, probe_of(&probe), NULL);
	assert_true(id > 0);
	assert_int_equal(load("good", err, probe_of(&probe), NULL), -EEXIST);
	assert_contains(err, "already loaded as plugin");
	free(unload(id, &res));
	assert_int_equal(plugin_list(NULL, 0), 0);
}

/* A plugin built with ASan: its runtime must be the process's first library. */
static void test_sanitized_plugin(void **state)
{
	struct plugin_probe probe = { 0 };
	struct plugin_unload_result res;
	char err[PLUGIN_ERR_MAX];
	int id;

	(void)state;
	id = load("sanitized/good", err, probe_of(&probe), NULL);
#if defined(__SANITIZE_ADDRESS__)
	/* This host has the runtime: it loads and works. */
	assert_true(id > 0);
	TRACE(pio, 0x80, 1, 1, 0);
	assert_int_equal(probe.pio_calls, 1);
	free(unload(id, &res));
#else
	/* Refused before dlopen, which would have ended this process. */
	(void)res;
	assert_int_equal(id, -ENOEXEC);
	assert_contains(err, "sanitized/good.so: built with a sanitizer (it needs libasan.so");
	assert_contains(err, "build/asan/kvmprof-vmm");
#endif
}

static void test_init_crashes(void **state)
{
	static const char *const how[] = { "how=segv", "how=abort", "how=fpe" };
	static const char *const what[] = { "Segmentation fault", "Aborted", "Floating point exception" };
	char err[PLUGIN_ERR_MAX];

	(void)state;
	for (int i = 0; i < 3; i++) {
		/* The same library each time: the loader keeps a crashed one mapped, and dlopen hands it back. */
		assert_int_equal(load("init_crashes", err, how[i], NULL), -EFAULT);
		assert_contains(err, "kvmprof_plugin_init crashed");
		assert_contains(err, what[i]);
	}
	assert_int_equal(plugin_list(NULL, 0), 0);
}

static void test_output_to_file_and_full_disk(void **state)
{
	char path[] = "/tmp/kvmprof-plugin-out-XXXXXX";
	struct plugin_probe probe = { 0 };
	struct plugin_unload_result res;
	char arg[64], err[PLUGIN_ERR_MAX], text[256] = { 0 };
	struct plugin_info info;
	FILE *f;
	int fd, id;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	snprintf(arg, sizeof(arg), "out=%s", path);
	id = load("good", err, probe_of(&probe), arg, NULL);
	assert_true(id > 0);
	TRACE(pio, 0x80, 1, 1, 0);
	assert_null(unload(id, &res));
	assert_string_equal(res.output_file, path);
	assert_int_equal(res.output_lost, 0);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_true(fread(text, 1, sizeof(text) - 1, f) > 0);
	fclose(f);
	unlink(path);
	assert_contains(text, "init good with 1 args");
	assert_contains(text, "fini pio 1 msr 0\n");

	/* A full disk: the output is lost and counted, the plugin stays loaded and its events go on. */
	id = load("good", err, probe_of(&probe), "out=/dev/full", "big=70000", NULL);
	assert_true(id > 0);
	TRACE(pio, 0x80, 1, 1, 0);
	assert_int_equal(probe.pio_calls, 2);
	assert_int_equal(plugin_list(&info, 1), 1);
	assert_null(unload(id, &res));
	assert_true(res.output_lost > 70000);
	assert_int_equal(res.output_errno, ENOSPC);
}

static void test_output_buffer(void **state)
{
	struct plugin_probe probe = { 0 };
	struct plugin_unload_result res;
	char err[PLUGIN_ERR_MAX], arg[32], *out, buf[64];
	uint64_t lost;
	bool more;
	int id;
	long n;

	(void)state;
	/* Read in pieces while loaded. */
	id = load("good", err, probe_of(&probe), NULL);
	assert_true(id > 0);
	n = plugin_output_take((unsigned int)id, buf, 10, &more, &lost);
	assert_int_equal(n, 10);
	assert_true(more);
	assert_memory_equal(buf, "init good ", 10);
	n = plugin_output_take((unsigned int)id, buf, sizeof(buf), &more, &lost);
	assert_true(n > 0);
	assert_false(more);
	assert_memory_equal(buf + n - 1, "\n", 1);
	assert_int_equal(plugin_output_take((unsigned int)id, buf, sizeof(buf), &more, &lost), 0);
	free(unload(id, &res));
	assert_int_equal(plugin_output_take((unsigned int)id, buf, sizeof(buf), &more, &lost), -ENOENT);

	/* More than the buffer holds: what does not fit is lost and counted. */
	snprintf(arg, sizeof(arg), "big=%u", PLUGIN_BUFFER_MAX + 100);
	id = load("good", err, probe_of(&probe), arg, NULL);
	assert_true(id > 0);
	out = unload(id, &res);
	assert_non_null(out);
	assert_int_equal(res.output_len, PLUGIN_BUFFER_MAX);
	assert_true(res.output_lost >= 100);
	/* Kept output (what an unload reply could not carry) is read under the old id until it is gone. */
	assert_int_equal(plugin_output_keep((unsigned int)id, "good", "tail", 4), 0);
	assert_int_equal(plugin_output_take((unsigned int)id, buf, 3, &more, &lost), 3);
	assert_true(more);
	assert_int_equal(plugin_output_take((unsigned int)id, buf, sizeof(buf), &more, &lost), 1);
	assert_false(more);
	assert_int_equal(buf[0], 'l');
	assert_int_equal(plugin_output_take((unsigned int)id, buf, sizeof(buf), &more, &lost), -ENOENT);
	free(out);
}

static void test_plugin_limit(void **state)
{
	char err[PLUGIN_ERR_MAX], copy[PLUGIN_MAX + 1][64], cmd[1400];
	struct plugin_probe probe = { 0 };
	struct plugin_unload_result res;
	int ids[PLUGIN_MAX + 1];

	(void)state;
	/* dlopen hands back the same library for the same file: distinct copies are distinct plugins. */
	for (int i = 0; i <= PLUGIN_MAX; i++) {
		snprintf(copy[i], sizeof(copy[i]), "/tmp/kvmprof-plugin-%d-%d.so", (int)getpid(), i);
		snprintf(cmd, sizeof(cmd), "cp %s %s", so("good"), copy[i]);
		assert_int_equal(system(cmd), 0);
	}
	for (int i = 0; i <= PLUGIN_MAX; i++) {
		char *argv[] = { (char *)probe_of(&probe) };

		ids[i] = plugin_load(copy[i], 1, argv, err, sizeof(err));
		if (i < PLUGIN_MAX)
			assert_true(ids[i] > 0);
	}
	assert_int_equal(ids[PLUGIN_MAX], -ENOSPC);
	assert_contains(err, "plugins are loaded already");
	TRACE(pio, 0x80, 1, 1, 0);
	assert_int_equal(probe.pio_calls, PLUGIN_MAX); /* each plugin saw the event once */
	for (int i = 0; i < PLUGIN_MAX; i++)
		free(unload(ids[i], &res));
	for (int i = 0; i <= PLUGIN_MAX; i++)
		unlink(copy[i]);
}

/* A vCPU stand-in: emits pio events as fast as it can until told to stop. */
struct emitter {
	int stop;
	long emitted;
};

static void *emit_pio(void *arg)
{
	struct emitter *e = arg;
	struct trace_ctx ctx;

	assert_int_equal(trace_ctx_register(&ctx, 1, NULL, NULL), 0);
	while (!__atomic_load_n(&e->stop, __ATOMIC_ACQUIRE)) {
		TRACE(pio, 0x3f8, 1, 1, 'x');
		__atomic_add_fetch(&e->emitted, 1, __ATOMIC_RELAXED);
	}
	trace_ctx_unregister(&ctx);
	return NULL;
}

static void test_unload_while_dispatching(void **state)
{
	struct timespec pause = { 0, 2000000 };
	struct plugin_probe probe = { 0 };
	struct plugin_unload_result res;
	struct emitter e = { 0 };
	char err[PLUGIN_ERR_MAX];
	pthread_t t;

	(void)state;
	assert_int_equal(pthread_create(&t, NULL, emit_pio, &e), 0);
	for (int round = 0; round < 20; round++) {
		long calls, emitted;
		int id = load("good", err, probe_of(&probe), "slow=1", NULL);

		assert_true(id > 0);
		/* Let the emitter get into the slow callback. */
		emitted = __atomic_load_n(&e.emitted, __ATOMIC_RELAXED);
		while (__atomic_load_n(&e.emitted, __ATOMIC_RELAXED) < emitted + 3)
			nanosleep(&pause, NULL);
		free(unload(id, &res));
		/* No callback runs once unload returned, and none starts later. */
		assert_int_equal(__atomic_load_n(&probe.inside, __ATOMIC_SEQ_CST), 0);
		calls = __atomic_load_n(&probe.pio_calls, __ATOMIC_SEQ_CST);
		nanosleep(&pause, NULL);
		assert_int_equal(__atomic_load_n(&probe.pio_calls, __ATOMIC_SEQ_CST), calls);
	}
	__atomic_store_n(&e.stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	assert_true(probe.pio_calls >= 60);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_load_dispatch_unload, setup, teardown),
		cmocka_unit_test_setup_teardown(test_event_set, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sanitized_plugin, setup, teardown),
		cmocka_unit_test_setup_teardown(test_init_crashes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_output_to_file_and_full_disk, setup, teardown),
		cmocka_unit_test_setup_teardown(test_output_buffer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_plugin_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unload_while_dispatching, setup, teardown),
	};

	if (test_plugins_dir(plugin_dir, sizeof(plugin_dir)))
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
