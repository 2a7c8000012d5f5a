// SPDX-License-Identifier: MIT
/*
 * The control socket's request handling (vmm/profiling/control_request.c and the
 * commands of vmm/profiling/control_cmds.c), linked without the socket layer
 * (vmm/profiling/control.c): each input line goes to control_reply as the poll loop
 * hands over a complete line, and the few VM calls the commands make
 * (guest_sampler_*, vm_stopping) are stand-ins below whose answers the
 * input chooses. The first byte picks the VM's shape (vPMU model and
 * backend, vCPUs, exiting or not, whether sampling starts); the rest is
 * request lines.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "control.h"
#include "control_session.h"
#include "vm.h"

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
	memset(&vm, 0, sizeof(vm));
	cfg = (struct vm_config){ .ncpus = 1 + (shape & 7), .mem_size = 256u << 20,
				  .kernel_path = (shape & 8) ? "/boot/vmlinuz" : NULL };
	vm.cfg = &cfg;
	vm.pmu.cfg.model = (enum vpmu_model)((shape >> 3) % 3);
	vm.pmu.backend = (enum vpmu_backend_choice)((shape >> 4) % 5);
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
	return 0;
}
