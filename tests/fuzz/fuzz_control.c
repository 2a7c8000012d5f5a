// SPDX-License-Identifier: MIT
/*
 * The control socket's request handling (vmm/control.c), cut off from the
 * live VM at its seams: the socket layer is not used (each input line goes
 * straight to the handler that the poll loop calls for a complete line),
 * and the few VM calls the handler makes (guest_sampler_*, vm_stopping)
 * are stand-ins below whose answers the input chooses. The
 * first byte picks the VM's shape (vPMU model and backend, vCPUs, exiting
 * or not, whether sampling starts); the rest is request lines.
 */
#include <fcntl.h>
#include <sys/mman.h>

#include "../../vmm/control.c"

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
	static struct control c;
	struct control_client *cl = &c.client[0];
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
	vm.pmu.backend = (enum vmm_vpmu_backend)((shape >> 4) & 3);
	memset(&c, 0, sizeof(c));
	c.vm = &vm;
	c.listen_fd = c.wake_fd = -1;
	*cl = (struct control_client){ .fd = open("/dev/null", O_WRONLY | O_CLOEXEC), .vm = &vm, .pass_fd = -1 };
	/* Lines as control_lines hands them over: each shorter than the input buffer. */
	while (start < size && cl->fd >= 0) {
		const uint8_t *nl = memchr(data + start, '\n', size - start);
		size_t end = nl ? (size_t)(nl - data) : size;

		if (end - start < CONTROL_LINE_MAX)
			control_answer(&c, cl, (const char *)data + start, end - start);
		/* What the poll loop does once the reply is out: the queue drains, the descriptor is sent. */
		cl->out_len = 0;
		if (cl->pass_fd >= 0) {
			close(cl->pass_fd);
			cl->pass_fd = -1;
		}
		start = end + 1;
	}
	control_drop(cl);
	return 0;
}
