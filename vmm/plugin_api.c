// SPDX-License-Identifier: MIT
/* What a plugin may ask at an event: registers, guest memory, the guest process (plugin_api.h). */
#include <errno.h>
#include <linux/kvm.h>
#include <string.h>
#include <time.h>

#include "guest_sampler.h"
#include "guest_procs.h"
#include "guest_walk.h"
#include "plugin_api.h"
#include "common/trace_event_table.h"
#include "vm.h"

static struct vm *plugin_vm;

void plugin_api_set_vm(struct vm *vm)
{
	plugin_vm = vm;
}

/*
 * The vCPU behind ctx, only on that vCPU's own thread: a ctx passed to
 * another thread gets NULL rather than another vCPU's state (KVM's vCPU
 * ioctls belong to the vCPU's thread).
 */
static struct vcpu *ctx_vcpu_of(const struct kvmprof_plugin_ctx *pctx)
{
	const struct trace_ctx *ctx = (const struct trace_ctx *)pctx;

	if (!ctx || ctx != trace_self())
		return NULL;
	return ctx->owner;
}

static unsigned int api_ctx_vcpu(const struct kvmprof_plugin_ctx *pctx)
{
	const struct trace_ctx *ctx = (const struct trace_ctx *)pctx;

	return ctx ? ctx->vcpu : KVMPROF_PLUGIN_NO_VCPU;
}

static int api_ctx_regs(const struct kvmprof_plugin_ctx *pctx, struct kvmprof_plugin_regs *out)
{
	struct vcpu *v = ctx_vcpu_of(pctx);
	struct kvm_regs rbuf;
	struct kvm_sregs sbuf;
	const struct kvm_regs *r;
	const struct kvm_sregs *s;

	if (!v)
		return -ENODEV;
	if (!vcpu_exit_regs(v, &rbuf, &sbuf, &r, &s))
		return -errno;
	*out = (struct kvmprof_plugin_regs){
		.rax = r->rax, .rbx = r->rbx, .rcx = r->rcx, .rdx = r->rdx,
		.rsi = r->rsi, .rdi = r->rdi, .rsp = r->rsp, .rbp = r->rbp,
		.r8 = r->r8, .r9 = r->r9, .r10 = r->r10, .r11 = r->r11,
		.r12 = r->r12, .r13 = r->r13, .r14 = r->r14, .r15 = r->r15,
		.rip = r->rip, .rflags = r->rflags,
		.cr0 = s->cr0, .cr2 = s->cr2, .cr3 = s->cr3, .cr4 = s->cr4, .efer = s->efer,
		.cs = s->cs.selector, .ss = s->ss.selector,
		.cpl = (uint8_t)vcpu_cpl(s),
	};
	return 0;
}

/* The vCPU's paging, from its special registers. */
static int vcpu_paging(struct vcpu *v, struct guest_paging *pg)
{
	struct kvm_sregs sbuf;
	const struct kvm_sregs *s;

	if (!vcpu_exit_regs(v, NULL, &sbuf, NULL, &s))
		return -errno;
	return guest_paging_init(pg, s->cr0, s->cr3, s->cr4, s->efer) ? -EFAULT : 0;
}

static int api_ctx_read_virt(const struct kvmprof_plugin_ctx *pctx, uint64_t gva, void *buf, size_t len)
{
	struct vcpu *v = ctx_vcpu_of(pctx);
	struct guest_paging pg;
	struct vmi_mem ram;
	int rc;

	if (!v)
		return -ENODEV;
	if (len > PLUGIN_READ_MAX || (len && !buf))
		return -EINVAL;
	rc = vcpu_paging(v, &pg);
	if (rc)
		return rc;
	ram = guest_mem_vmi(&v->vm->mem);
	return guest_read_virt(&ram, &pg, gva, buf, len) ? -EFAULT : 0;
}

static int api_ctx_process(const struct kvmprof_plugin_ctx *pctx, struct kvmprof_plugin_process *out)
{
	struct vcpu *v = ctx_vcpu_of(pctx);
	const struct guest_sampler *gs;
	const struct guest_sampler_vcpu *gv;
	struct guest_os os = { 0 };
	struct guest_task task;
	struct guest_paging pg;
	struct vmi_mem ram;
	int entry = -1, rc;

	if (!v)
		return -ENODEV;
	memset(out, 0, sizeof(*out));
	/* A Linux task layout is the sampler's, and stable only while its sampling runs on this vCPU. */
	gs = guest_sampler_of(v->vm);
	gv = guest_sampler_vcpu_of(v);
	if (gs && gv && __atomic_load_n(&gv->active, __ATOMIC_ACQUIRE) && gs->has_lx)
		os.linux_layout = &gs->lx;
	else if (gs && guest_sampler_has_desc(v->vm))
		os.desc = &gs->desc;
	else
		return -ENOENT;
	rc = vcpu_paging(v, &pg);
	if (rc)
		return rc;
	ram = guest_mem_vmi(&v->vm->mem);
	if (guest_procs_current(&os, &ram, &pg, v->id, &entry, &task))
		return -EFAULT;
	out->pid = task.pid;
	out->tid = task.tid;
	if (task.pid)
		guest_procs_comm(&os, &ram, &pg, &task, out->comm);
	else
		strcpy(out->comm, "[idle]");
	return 0;
}

static int api_read_phys(uint64_t gpa, void *buf, size_t len)
{
	struct vmi_mem ram;

	if (!plugin_vm || len > PLUGIN_READ_MAX || (len && !buf))
		return -EINVAL;
	ram = guest_mem_vmi(&plugin_vm->mem);
	return vmi_mem_read(&ram, gpa, buf, len) ? -EFAULT : 0;
}

static uint64_t api_time_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static const char *api_event_name(unsigned int event)
{
	const struct trace_event_info *e = trace_event_info(event);

	return e ? e->name : NULL;
}

static const char *api_event_args(unsigned int event)
{
	const struct trace_event_info *e = trace_event_info(event);

	return e ? e->args : NULL;
}

static int api_event_find(const char *name)
{
	for (unsigned int e = 0; name && e < KVMPROF_TRACE_EVENT_COUNT; e++)
		if (!strcmp(trace_event_info(e)->name, name))
			return (int)e;
	return -1;
}

void plugin_api_fill(struct kvmprof_plugin_api *api)
{
	api->version = KVMPROF_PLUGIN_VERSION;
	api->size = sizeof(*api);
	api->vcpu_count = plugin_vm ? plugin_vm->cfg->ncpus : 0;
	api->event_count = KVMPROF_TRACE_EVENT_COUNT;
	api->event_name = api_event_name;
	api->event_args = api_event_args;
	api->event_find = api_event_find;
	api->ctx_vcpu = api_ctx_vcpu;
	api->ctx_regs = api_ctx_regs;
	api->ctx_read_virt = api_ctx_read_virt;
	api->ctx_process = api_ctx_process;
	api->read_phys = api_read_phys;
	api->time_ns = api_time_ns;
}
