// SPDX-License-Identifier: MIT
/*
 * The control socket's request handling (vmm/profiling/control_request.c and the
 * commands of vmm/profiling/control_cmds.c), linked without the socket layer
 * (vmm/profiling/control.c): each input line goes to control_reply as the poll loop
 * hands over a complete line, and the few VM calls the commands make
 * (guest_sampler_*, vm_stopping, and the plugin host's plugin_*: the
 * harness loads no library a fuzzed path names) are stand-ins below whose
 * answers the input chooses. The first byte picks the VM's shape (vPMU model and
 * backend, vCPUs, exiting or not, whether sampling starts); the rest is
 * request lines.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "control.h"
#include "control_session.h"
#include "exit_stats.h"
#include "guest_sampler.h"
#include "plugin_host.h"
#include "pmu.h"
#include "vm.h"

/* The features whose state the commands read, as the VM takes them (their code stands in below or is not needed). */
const struct vcpu_hooks vmm_pmu_hooks = { .name = "vpmu", .vm_size = sizeof(struct vmm_pmu),
					  .vcpu_size = sizeof(struct vcpu_pmu) };
const struct vcpu_hooks guest_sampler_hooks = { .name = "guest-sampler", .vm_size = sizeof(struct guest_sampler),
						.vcpu_size = sizeof(struct guest_sampler_vcpu) };
static const struct vcpu_hooks *const features[] = { &guest_sampler_hooks, &vmm_pmu_hooks, &exit_stats_hooks, NULL };

static uint8_t shape;
static bool sampler_on;

bool vm_stopping(struct vm *vm)
{
	(void)vm;
	return shape & 0x40;
}

bool guest_sampler_running(const struct vm *vm)
{
	(void)vm;
	return sampler_on;
}

bool guest_sampler_has_desc(struct vm *vm)
{
	(void)vm;
	return shape & 0x20;
}

int guest_sampler_start(struct vm *vm, const struct guest_sampler_request *req, int *memfd, size_t *ring_size,
			char err[GUEST_SAMPLER_ERR_MAX])
{
	(void)vm;
	if (sampler_on || (shape & 0x80)) {
		snprintf(err, GUEST_SAMPLER_ERR_MAX, "guest sampling is already running (%s)", req->event);
		return -EBUSY;
	}
	*memfd = memfd_create("fuzz-rings", MFD_CLOEXEC);
	if (*memfd < 0) {
		snprintf(err, GUEST_SAMPLER_ERR_MAX, "memfd: %s", strerror(errno));
		return -errno;
	}
	*ring_size = 4096;
	sampler_on = true;
	return 0;
}

int guest_sampler_stop(struct vm *vm, struct guest_sampler_totals *t)
{
	(void)vm;
	if (!sampler_on)
		return -ESRCH;
	*t = (struct guest_sampler_totals){ .samples = 1, .records = 2 };
	sampler_on = false;
	return 0;
}

/* One pretend plugin, id 1, loaded by any path that ends in ".so". */
static bool plugin_loaded;
static char plugin_out[64];
static size_t plugin_out_len;
static const char odd_output[] = "ok \xff\xc0\x80 \xe2\x82 \0 \x01\n";

int plugin_load(const char *path, int argc, char *const *argv, char *err, size_t errsz)
{
	size_t n = strlen(path);

	for (int i = 0; i < argc; i++)
		if (!strchr(argv[i], '=')) {
			snprintf(err, errsz, "%s: argument '%s' is not key=value", path, argv[i]);
			return -EINVAL;
		}
	if (n < 3 || strcmp(path + n - 3, ".so") || plugin_loaded) {
		snprintf(err, errsz, "%s: not loadable", path);
		return -ENOEXEC;
	}
	plugin_loaded = true;
	/* Bytes the output's UTF-8 cleaning must handle: invalid sequences, a NUL, control characters. */
	memcpy(plugin_out, odd_output, sizeof(odd_output) - 1);
	plugin_out_len = sizeof(odd_output) - 1;
	return 1;
}

int plugin_unload(unsigned int id, struct plugin_unload_result *res, char *err, size_t errsz)
{
	memset(res, 0, sizeof(*res));
	if (id != 1 || !plugin_loaded) {
		snprintf(err, errsz, "no plugin has id %u", id);
		return -ENOENT;
	}
	plugin_loaded = false;
	strcpy(res->name, "fuzz");
	res->output = malloc(plugin_out_len + 1);
	if (res->output)
		memcpy(res->output, plugin_out, plugin_out_len);
	res->output_len = res->output ? plugin_out_len : 0;
	return 0;
}

void plugin_unload_result_free(struct plugin_unload_result *res)
{
	free(res->output);
	res->output = NULL;
}

int plugin_output_keep(unsigned int id, const char *name, const char *text, size_t len)
{
	(void)id;
	(void)name;
	(void)text;
	(void)len;
	return 0;
}

unsigned int plugin_list(struct plugin_info *out, unsigned int max)
{
	if (!plugin_loaded)
		return 0;
	if (max) {
		memset(out, 0, sizeof(*out));
		out->id = 1;
		strcpy(out->name, "fuzz");
		out->events[KVMPROF_TRACE_pio] = out->handles[KVMPROF_TRACE_pio] = true;
	}
	return 1;
}

int plugin_set_events(unsigned int id, const char *patterns, bool on, unsigned int *changed, char *err,
		      size_t errsz)
{
	*changed = 0;
	if (id != 1 || !plugin_loaded) {
		snprintf(err, errsz, "no plugin has id %u", id);
		return -ENOENT;
	}
	*changed = on && !strcmp(patterns, "pio");
	return 0;
}

long plugin_output_take(unsigned int id, char *buf, size_t max, bool *more, uint64_t *lost)
{
	size_t n = plugin_out_len < max ? plugin_out_len : max;

	if (id != 1 || !plugin_loaded)
		return -ENOENT;
	memcpy(buf, plugin_out, n);
	*more = false;
	*lost = 0;
	return (long)n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct vm vm;
	static struct vm_config cfg;
	static char out[CONTROL_OUT_MAX];
	struct control_session ses;
	size_t start = 1;

	if (size < 1)
		return 0;
	shape = data[0];
	sampler_on = false;
	plugin_loaded = false;
	memset(&vm, 0, sizeof(vm));
	cfg = (struct vm_config){ .ncpus = 1 + (shape & 7), .mem_size = 256u << 20,
				  .kernel_path = (shape & 8) ? "/boot/vmlinuz" : NULL };
	vm.cfg = &cfg;
	vm.hooks = features;
	if (vm_hooks_alloc(&vm))
		return 0;
	for (unsigned int i = 0; i < cfg.ncpus; i++) {
		vm.vcpu[i].vm = &vm;
		if (vcpu_hooks_alloc(&vm.vcpu[i]))
			__builtin_trap();
	}
	vmm_pmu_of(&vm)->cfg.model = (enum vpmu_model)((shape >> 3) % 3);
	vmm_pmu_of(&vm)->backend = vpmu_backend_desc_of((enum vpmu_backend_choice)((shape >> 4) % 5)); /* NULL for auto */
	ses = (struct control_session){ .vm = &vm, .start_ns = control_now_ns(), .pass_fd = -1 };
	/* Lines as the connection hands them over: each shorter than its input buffer. */
	while (start < size) {
		const uint8_t *nl = memchr(data + start, '\n', size - start);
		size_t end = nl ? (size_t)(nl - data) : size;

		if (end - start < CONTROL_LINE_MAX) {
			size_t n = control_reply(&ses, (const char *)data + start, end - start, out, sizeof(out));

			/* The protocol's promise: exactly one line back. */
			if (n && (out[n - 1] != '\n' || memchr(out, '\n', n - 1)))
				__builtin_trap();
		}
		/* What the connection does once the reply is out: the descriptor is sent. */
		if (ses.pass_fd >= 0) {
			close(ses.pass_fd);
			ses.pass_fd = -1;
		}
		start = end + 1;
	}
	control_session_end(&ses);
	for (unsigned int i = 0; i < cfg.ncpus; i++)
		vcpu_hooks_free(&vm.vcpu[i]);
	vm_hooks_free(&vm);
	return 0;
}
