/* SPDX-License-Identifier: MIT */
/*
 * kvmprof-vmm plugins: shared libraries that the VMM loads at start
 * (--plugin FILE.so[,key=value...]) or while the VM runs (the control
 * socket's plugin-load, `kvmprof plugin load`), whose callbacks receive the
 * VMM's trace events (kvmprof/trace_events.h). docs/plugins.md is the guide.
 *
 * A plugin defines
 *   kvmprof_plugin_version       = KVMPROF_PLUGIN_VERSION (KVMPROF_PLUGIN_DECLARE does it)
 *   kvmprof_plugin_init(api, argc, argv)   0, or non-zero to refuse loading
 *   kvmprof_plugin_fini(void)              optional: before unload, results out
 * and receives events in either or both of two ways:
 *   KVMPROF_PLUGIN_ON(pio) { ... }         a handler for one event, by name:
 *                                          inlined into the VMM in a static build
 *   api->subscribe(api->id, "msr_*", cb, data)   one callback for every event
 *                                          matching the globs, from init only
 *
 * Callbacks run on the thread that emits the event: a vCPU thread (most
 * events) or the control socket's thread (control_request). vCPUs run in
 * parallel, so callbacks of different vCPUs run concurrently. In a callback
 * a plugin may read registers and guest memory through the api, keep
 * per-vCPU state (index by api->ctx_vcpu; api->vcpu_count is fixed), use
 * atomics, and call api->output. It must not block (no locks held long, no
 * sleeping, no waiting on other threads: the guest's vCPU stops meanwhile),
 * must not call exit, longjmp out or unload itself, and must not keep ctx
 * or args past the callback's return.
 *
 * Unload (plugin-unload) first stops every callback of the plugin: once it
 * answers none runs, and kvmprof_plugin_fini runs after that, on the
 * control thread, with no callback of this plugin running.
 */
#ifndef KVMPROF_PLUGIN_H
#define KVMPROF_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "kvmprof/trace_events.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The API version: the loader refuses a plugin built against another one.
 * Bumped when anything below changes incompatibly; new api functions are
 * appended to struct kvmprof_plugin_api (its size field says what a VMM has).
 */
#define KVMPROF_PLUGIN_VERSION 1

/* ctx_vcpu of an event that no vCPU emitted (control_request). */
#define KVMPROF_PLUGIN_NO_VCPU 0xffffu
/* Bytes of a guest process's name, its NUL included. */
#define KVMPROF_PLUGIN_COMM_MAX 17

/* The plugin's handle, for the api calls that act on the plugin itself. */
typedef unsigned int kvmprof_plugin_id;

/* Where an event happened: valid during the callback only. */
struct kvmprof_plugin_ctx;

/* The vCPU's registers at the event. */
struct kvmprof_plugin_regs {
	uint64_t rax, rbx, rcx, rdx, rsi, rdi, rsp, rbp;
	uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
	uint64_t rip, rflags;
	uint64_t cr0, cr2, cr3, cr4, efer;
	uint16_t cs, ss;
	uint8_t cpl; /* 0 kernel .. 3 user */
};

/* The guest process a vCPU runs, as the VMM's process attribution sees it. */
struct kvmprof_plugin_process {
	uint32_t pid; /* 0: idle */
	uint32_t tid;
	char comm[KVMPROF_PLUGIN_COMM_MAX];
};

/* A callback subscribed by pattern: event is the id, args its nargs arguments (trace_events.h). */
typedef void (*kvmprof_plugin_cb)(void *data, const struct kvmprof_plugin_ctx *ctx, unsigned int event,
				  const uint64_t *args, unsigned int nargs);

struct kvmprof_plugin_api {
	unsigned int version; /* KVMPROF_PLUGIN_VERSION of the VMM */
	size_t size;          /* sizeof(struct kvmprof_plugin_api) in the VMM */
	kvmprof_plugin_id id;
	const char *name;         /* the plugin's name: its file name without directory and ".so" */
	unsigned int vcpu_count;  /* ctx_vcpu is below this (or KVMPROF_PLUGIN_NO_VCPU) */
	unsigned int event_count; /* event ids are below this */

	/* The events, by id: NULL past the last. */
	const char *(*event_name)(unsigned int event);
	/* "name:type,...", as in trace_events.h. */
	const char *(*event_args)(unsigned int event);
	/* An event's id, or -1. */
	int (*event_find)(const char *name);

	/*
	 * From kvmprof_plugin_init only: cb gets every event that matches
	 * patterns (comma-separated globs, as --trace-events). Returns how many
	 * events matched (at least 1), or a negative errno: -EINVAL for a bad
	 * or empty pattern, -EBUSY outside init, -EEXIST when an event already
	 * has a callback of this plugin.
	 */
	int (*subscribe)(kvmprof_plugin_id id, const char *patterns, kvmprof_plugin_cb cb, void *data);

	/* In a callback, about the event's ctx. */
	unsigned int (*ctx_vcpu)(const struct kvmprof_plugin_ctx *ctx);
	/* 0, or -ENODEV off the vCPUs, or the failed ioctl's -errno. */
	int (*ctx_regs)(const struct kvmprof_plugin_ctx *ctx, struct kvmprof_plugin_regs *regs);
	/*
	 * Reads len bytes at guest-virtual gva through the vCPU's page tables,
	 * bounds-checked against guest RAM: 0, or -EFAULT (not mapped, not RAM,
	 * not canonical), -ENODEV off the vCPUs, -EINVAL for len over 1 MiB.
	 */
	int (*ctx_read_virt)(const struct kvmprof_plugin_ctx *ctx, uint64_t gva, void *buf, size_t len);
	/*
	 * The guest process on the vCPU: 0, or -ENOENT when the VMM cannot know
	 * (no process attribution for this guest: the bundled guest registers
	 * it; a Linux guest once `kvmprof record` sampled it), -EFAULT when the
	 * guest's structures cannot be read, -ENODEV off the vCPUs.
	 */
	int (*ctx_process)(const struct kvmprof_plugin_ctx *ctx, struct kvmprof_plugin_process *proc);

	/* Anywhere. */
	/* Guest-physical memory, bounds-checked: 0 or -EFAULT. */
	int (*read_phys)(uint64_t gpa, void *buf, size_t len);
	/* CLOCK_MONOTONIC in ns, the clock of trace files. */
	uint64_t (*time_ns)(void);
	/*
	 * Text to the plugin's output: the file given as out=FILE when loaded,
	 * else a buffer that `kvmprof plugin output` (plugin-output) reads and
	 * the unload reply ends with. Returns 0, or -ENOSPC when the buffer or
	 * the disk was full (the text is counted as lost, the VM goes on), -EIO.
	 */
	int (*output)(kvmprof_plugin_id id, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
};

/* The symbols a plugin defines. */
extern const unsigned int kvmprof_plugin_version;
int kvmprof_plugin_init(const struct kvmprof_plugin_api *api, int argc, char **argv);
void kvmprof_plugin_fini(void);

/* Defines kvmprof_plugin_version: once per plugin. */
#define KVMPROF_PLUGIN_DECLARE const unsigned int kvmprof_plugin_version = KVMPROF_PLUGIN_VERSION

/*
 * KVMPROF_PLUGIN_ON(pio) { if (args[2]) ... }: a handler for one event,
 * with ctx and args (the event's arguments) in scope. The loader finds it by
 * its name (kvmprof_plugin_on_<event>); a static build calls it directly.
 */
#define KVMPROF_PLUGIN_ON(event)                                                                 \
	void kvmprof_plugin_on_##event(const struct kvmprof_plugin_ctx *ctx, const uint64_t *args);     \
	void kvmprof_plugin_on_##event(const struct kvmprof_plugin_ctx *ctx __attribute__((unused)), \
				       const uint64_t *args __attribute__((unused)))

/* The handler's signature, as the loader looks it up. */
typedef void (*kvmprof_plugin_handler)(const struct kvmprof_plugin_ctx *ctx, const uint64_t *args);

#ifdef __cplusplus
}
#endif

#endif
