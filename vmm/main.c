// SPDX-License-Identifier: MIT
/* kvmprof-vmm: loads a kernel and initrd, builds the machine, runs it, exits with the guest's status. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acpi.h"
#include "control.h"
#include "mptable.h"
#include "options.h"
#include "plugin_host.h"
#include "trace_file_writer.h"
#include "vm.h"

extern const uint8_t kvmprof_guest_kernel[], kvmprof_guest_initrd[];
extern const uint64_t kvmprof_guest_kernel_size, kvmprof_guest_initrd_size;

struct blob {
	const uint8_t *data;
	size_t size;
	uint8_t *owned;
};

/* Reads a whole regular file no larger than max bytes; prints why not. */
static int blob_read(struct blob *b, const char *what, const char *path, uint64_t max)
{
	struct stat st;
	/* O_NONBLOCK: a FIFO or a device must be refused below, not block the open. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	size_t done = 0;

	if (fd < 0) {
		fprintf(stderr, "kvmprof-vmm: %s %s: %s\n", what, path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		fprintf(stderr, "kvmprof-vmm: %s %s: not a regular file\n", what, path);
		goto fail;
	}
	if (st.st_size == 0) {
		fprintf(stderr, "kvmprof-vmm: %s %s: file is empty\n", what, path);
		goto fail;
	}
	if ((uint64_t)st.st_size > max) {
		fprintf(stderr, "kvmprof-vmm: %s %s: %lld bytes do not fit in %llu MiB of guest memory: use a larger --mem\n",
			what, path, (long long)st.st_size, (unsigned long long)(max >> 20));
		goto fail;
	}
	b->owned = malloc((size_t)st.st_size);
	if (!b->owned) {
		fprintf(stderr, "kvmprof-vmm: %s %s: out of memory\n", what, path);
		goto fail;
	}
	while (done < (size_t)st.st_size) {
		ssize_t n = read(fd, b->owned + done, (size_t)st.st_size - done);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			fprintf(stderr, "kvmprof-vmm: %s %s: read failed: %s\n", what, path,
				n < 0 ? strerror(errno) : "file shrank");
			goto fail;
		}
		done += (size_t)n;
	}
	close(fd);
	b->data = b->owned;
	b->size = done;
	return 0;
fail:
	free(b->owned);
	b->owned = NULL;
	close(fd);
	return -1;
}

static int load_guest(struct vm *vm, const struct vm_config *cfg)
{
	struct blob kernel = { kvmprof_guest_kernel, (size_t)kvmprof_guest_kernel_size, NULL };
	struct blob initrd = { NULL, 0, NULL };
	const char *kernel_name = cfg->kernel_path ? cfg->kernel_path : "(bundled guest)";
	struct memmap map;
	char err[BOOT_ERR_MAX] = "";
	int rc = -1;

	if (cfg->kernel_path && blob_read(&kernel, "kernel", cfg->kernel_path, cfg->mem_size))
		goto out;
	if (cfg->initrd_embedded) {
		initrd.data = kvmprof_guest_initrd;
		initrd.size = (size_t)kvmprof_guest_initrd_size;
	} else if (cfg->initrd_path && blob_read(&initrd, "initrd", cfg->initrd_path, cfg->mem_size)) {
		goto out;
	}
	memmap_build(&map, cfg->mem_size);
	struct boot_config boot = {
		.mem = &vm->mem, .map = &map,
		.kernel = kernel.data, .kernel_size = kernel.size,
		.initrd = initrd.data, .initrd_size = initrd.size,
		.cmdline = cfg->cmdline,
	};
	rc = boot_load(&boot, &vm->entry, err);
	if (rc) {
		fprintf(stderr, "kvmprof-vmm: kernel %s: %s\n", kernel_name, err);
		goto out;
	}
	rc = mptable_write(&vm->mem, cfg->ncpus);
	if (!rc)
		rc = acpi_write_tables(&vm->mem, cfg->ncpus);
	if (rc)
		fprintf(stderr, "kvmprof-vmm: cannot write the MP and ACPI tables: %s\n", strerror(-rc));
out:
	free(kernel.owned);
	free(initrd.owned);
	return rc ? -1 : 0;
}

/* The trace file's last word: what it holds and what it lost, never silently. */
static void trace_close_and_report(struct trace_file *trace, const char *path)
{
	struct trace_file_totals t;

	trace_file_close(trace, &t);
	fprintf(stderr, "kvmprof-vmm: --trace %s: %llu records, %llu lost (%llu buffer full, %llu write errors)%s\n",
		path, (unsigned long long)t.records, (unsigned long long)(t.lost_full + t.lost_write),
		(unsigned long long)t.lost_full, (unsigned long long)t.lost_write,
		t.trailer_written ? "" : "; the trailer could not be written: the file reads as unfinished");
}

/* The VM never ran: the file is left whole (header and trailer), with nothing to report. */
static void trace_close_quietly(struct trace_file *trace)
{
	struct trace_file_totals t;

	if (trace)
		trace_file_close(trace, &t);
}

int main(int argc, char **argv)
{
	struct vm_config cfg;
	struct vm vm = { 0 };
	struct control *control = NULL;
	struct trace_file *trace = NULL;
	char err[OPTIONS_ERR_MAX], control_err[CONTROL_ERR_MAX], perr[PLUGIN_ERR_MAX];
	int rc = vmm_options_parse(argc, argv, &cfg, err);

	if (rc > 0)
		return 0;
	if (rc < 0) {
		fprintf(stderr, "kvmprof-vmm: %s\n", err);
		return VMM_EXIT_USAGE;
	}
	/*
	 * A client may signal the VMM as soon as its control socket exists, before
	 * vm_run waits for SIGINT/SIGTERM: keep them pending until then.
	 */
	if (cfg.control_path) {
		sigset_t stop_signals;

		sigemptyset(&stop_signals);
		sigaddset(&stop_signals, SIGINT);
		sigaddset(&stop_signals, SIGTERM);
		pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
	}
	/* First: a bad --control path is the only message, before any of the VM's own. */
	if (cfg.control_path && control_open(cfg.control_path, &control, control_err)) {
		fprintf(stderr, "kvmprof-vmm: %s\n", control_err);
		return VMM_EXIT_SETUP;
	}
	/* Then the trace file: a bad --trace path is reported before the VM's own messages too. */
	if (cfg.trace_path && trace_file_open(&trace, cfg.trace_path, cfg.trace_enabled, cfg.ncpus, err, sizeof(err))) {
		fprintf(stderr, "kvmprof-vmm: %s\n", err);
		control_close(control);
		return VMM_EXIT_SETUP;
	}
	/*
	 * Then the plugins, also before the VM's own messages, and before the
	 * vCPUs start: a plugin sees every event from the first vcpu_start.
	 */
	vm.cfg = &cfg;
	plugin_host_init(&vm);
	/* The --plugin options, then a static build's built-in plugin. */
	if (plugin_load_start(cfg.plugins, cfg.nplugins, perr, sizeof(perr)) < 0) {
		fprintf(stderr, "kvmprof-vmm: --plugin %s\n", perr);
		plugin_unload_all();
		trace_close_quietly(trace);
		control_close(control);
		return VMM_EXIT_SETUP;
	}
	vm.control = control;
	rc = guest_mem_alloc(&vm.mem, cfg.mem_size);
	if (rc) {
		fprintf(stderr, "kvmprof-vmm: cannot allocate %llu MiB of guest memory: %s\n",
			(unsigned long long)(cfg.mem_size >> 20), strerror(-rc));
		plugin_unload_all();
		trace_close_quietly(trace);
		control_close(control);
		return VMM_EXIT_SETUP;
	}
	vm.kvm_fd = vm.vm_fd = vm.console_fd = vm.agent_fd = -1;
	/* Files first: a bad kernel is reported even on a host without KVM. */
	if (load_guest(&vm, &cfg) || vm_create(&vm, &cfg)) {
		plugin_unload_all();
		trace_close_quietly(trace);
		control_close(control);
		vm_destroy(&vm);
		guest_mem_free(&vm.mem);
		return VMM_EXIT_SETUP;
	}
	rc = vm_run(&vm);
	/* Before vm_destroy: the control thread reads the vCPUs. After it: it loads and unloads plugins. */
	control_close(control);
	/* Plugins' fini may read guest memory: before it goes. */
	plugin_unload_all();
	if (trace)
		trace_close_and_report(trace, cfg.trace_path);
	vm_destroy(&vm);
	guest_mem_free(&vm.mem);
	return rc;
}
