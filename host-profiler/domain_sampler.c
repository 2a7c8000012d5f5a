/* SPDX-License-Identifier: MIT */
#include "domain_sampler.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "desc_reader.h"
#include "collection/emit.h"
#include "guest_stack.h"
#include "guest_walk.h"

/* The attribution's sink: the recording, as guest records. */
struct sink_ctx {
	struct domain_sampler *ds;
	int err; /* the writer's first error */
};

static bool sink_comm(void *opaque, uint32_t pid, uint64_t time, const char *comm)
{
	struct sink_ctx *k = opaque;
	struct kp_rec_comm c;
	int r;

	memset(&c, 0, sizeof(c));
	c.pid = c.tid = pid;
	c.time = time;
	c.flags = KP_COMM_GUEST;
	snprintf(c.comm, sizeof(c.comm), "%.*s", KP_COMM_MAX - 1, comm);
	r = kp_writer_add(k->ds->w, KP_REC_COMM, &c, sizeof(c));
	if (r && !k->err)
		k->err = r;
	return !r;
}

static bool sink_mmap(void *opaque, uint32_t pid, uint64_t time, uint64_t start, uint64_t len, uint64_t pgoff,
		      const char *path)
{
	struct sink_ctx *k = opaque;
	struct {
		struct kp_rec_mmap m;
		char name[KP_GDESC_PATH_MAX + 8];
	} u;
	size_t plen = strnlen(path, KP_GDESC_PATH_MAX - 1);
	int r;

	memset(&u, 0, sizeof(u));
	u.m = (struct kp_rec_mmap){ .pid = pid, .tid = pid, .time = time, .start = start, .len = len, .pgoff = pgoff,
				    .prot = 5 /* PROT_READ | PROT_EXEC */, .domain = KP_DOMAIN_GUEST };
	memcpy(u.m.filename, path, plen);
	r = kp_writer_add(k->ds->w, KP_REC_MMAP, &u, sizeof(u.m) + plen + 1);
	if (r && !k->err)
		k->err = r;
	return !r;
}

int domain_sampler_init(struct domain_sampler *ds, const struct qemu_monitor *mon, struct qemu_ram *ram,
			const pid_t *tids, unsigned int nvcpus, unsigned int hz, bool callgraph, struct kp_writer *w,
			uint32_t event_id)
{
	memset(ds, 0, sizeof(*ds));
	ds->mon = mon;
	ds->w = w;
	ds->event_id = event_id;
	ds->callgraph = callgraph;
	ds->hz = hz;
	/* Three snapshot periods either side, and never less than 20 ms (a slow round trip). */
	ds->window_ns = 3000000000ull / hz > 20000000ull ? 3000000000ull / hz : 20000000ull;
	ds->ram = ram;
	if (ram)
		ds->mem = qemu_ram_vmi(ram);
	ds->vcpu = calloc(nvcpus, sizeof(*ds->vcpu));
	if (!ds->vcpu)
		return -ENOMEM;
	ds->nvcpus = nvcpus;
	for (unsigned int i = 0; i < nvcpus; i++) {
		ds->vcpu[i].tid = tids[i];
		if (guest_attrib_init(&ds->vcpu[i].attrib)) {
			domain_sampler_free(ds);
			return -ENOMEM;
		}
	}
	return 0;
}

void domain_sampler_free(struct domain_sampler *ds)
{
	for (unsigned int i = 0; ds->vcpu && i < ds->nvcpus; i++)
		guest_attrib_free(&ds->vcpu[i].attrib);
	free(ds->vcpu);
	ds->vcpu = NULL;
	ds->nvcpus = 0;
}

void domain_sampler_use_desc(struct domain_sampler *ds, uint64_t gva)
{
	ds->desc_gva = gva;
	ds->desc_state = 0;
}

void domain_sampler_use_linux(struct domain_sampler *ds, const struct kp_rec_task_layout *lx)
{
	ds->lx = *lx;
	ds->has_lx = true;
}

/* The descriptor, read once through the first usable paging: the running kernel's own copy. */
static void read_desc(struct domain_sampler *ds, const struct guest_paging *pg)
{
	char why[GUEST_DESC_WHY_MAX];

	if (guest_read_virt(&ds->mem, pg, ds->desc_gva, &ds->desc, sizeof(ds->desc))) {
		snprintf(ds->desc_why, sizeof(ds->desc_why), "unreadable at 0x%llx", (unsigned long long)ds->desc_gva);
		ds->desc_state = -1;
	} else if (guest_desc_check(&ds->desc, why)) {
		snprintf(ds->desc_why, sizeof(ds->desc_why), "%s", why);
		ds->desc_state = -1;
	} else {
		ds->desc_state = 1;
	}
}

/* One vCPU's snapshot from its registers. */
static void snapshot(struct domain_sampler *ds, struct domain_vcpu *v, unsigned int cpu,
		     const struct qemu_vcpu_regs *r, uint64_t time, struct sink_ctx *k)
{
	const struct guest_attrib_sink sink = { .comm = sink_comm, .mmap = sink_mmap, .opaque = k };
	struct domain_snapshot *s = &v->hist[v->count % DOMAIN_SAMPLER_HISTORY];
	struct guest_paging pg;
	struct guest_os os = { 0 };
	bool pg_ok = ds->ram && guest_paging_init(&pg, r->cr0, r->cr3, r->cr4, r->efer) == 0;

	if (pg_ok && ds->has_lx)
		os.linux_layout = &ds->lx;
	else if (pg_ok && ds->desc_gva) {
		if (ds->desc_state == 0)
			read_desc(ds, &pg);
		if (ds->desc_state > 0)
			os.desc = &ds->desc;
	}
	memset(s, 0, offsetof(struct domain_snapshot, callchain));
	s->time = time;
	s->ip = r->rip;
	s->cpl = r->cpl == 3 ? KP_CPL_USER : KP_CPL_KERNEL;
	s->halted = r->halted;
	/*
	 * A host sample may join a snapshot up to a window later than itself:
	 * what the snapshot tells of a process is dated a window earlier.
	 */
	guest_attribute(&v->attrib, &os, &ds->mem, pg_ok ? &pg : NULL, cpu,
			time > ds->window_ns ? time - ds->window_ns : 0, &sink, &s->pid, &s->tid);
	if (ds->callgraph && pg_ok)
		s->nr_callchain = (uint16_t)guest_callchain(&ds->mem, &pg, s->cpl == KP_CPL_USER, r->rsp, r->rbp,
							    r->tr_base, s->callchain, KP_CALLCHAIN_MAX);
	v->count++;
}

int domain_sampler_take(struct domain_sampler *ds)
{
	struct qemu_vcpu_regs regs[QEMU_HMP_MAX_VCPUS];
	struct sink_ctx k = { .ds = ds };
	uint64_t t0 = emit_now_ns(), t1, dt;
	char *reply = NULL;
	int n, rc;

	ds->rounds++;
	rc = ds->mon->hmp(ds->mon->ctx, "info registers -a", &reply, ds->last_error, sizeof(ds->last_error));
	t1 = emit_now_ns();
	dt = t1 - t0;
	if (rc) {
		ds->round_failures++;
		return -EIO;
	}
	/* A round trip's time when it gave registers: a failed one may have waited out a shutdown. */
	ds->rtt_ns += dt;
	ds->rtt_rounds++;
	if (dt > ds->rtt_max_ns)
		ds->rtt_max_ns = dt;
	n = qemu_hmp_parse_registers(reply, regs, QEMU_HMP_MAX_VCPUS);
	free(reply);
	if (n < 0) {
		ds->round_failures++;
		snprintf(ds->last_error, sizeof(ds->last_error), "QEMU's registers (info registers -a) did not parse");
		return n;
	}
	for (int i = 0; i < n; i++)
		if (regs[i].cpu < ds->nvcpus)
			snapshot(ds, &ds->vcpu[regs[i].cpu], regs[i].cpu, &regs[i], t0 + dt / 2, &k);
	return k.err;
}

enum linux_kernel_fit domain_sampler_kernel_fit(struct domain_sampler *ds, linux_symbol_start_fn is_start, void *ctx,
						unsigned int *vec, uint64_t *handler)
{
	struct qemu_vcpu_regs regs[QEMU_HMP_MAX_VCPUS];
	char *reply = NULL;
	int n;

	if (!ds->ram || ds->mon->hmp(ds->mon->ctx, "info registers -a", &reply, ds->last_error, sizeof(ds->last_error)))
		return LINUX_KERNEL_UNKNOWN;
	n = qemu_hmp_parse_registers(reply, regs, QEMU_HMP_MAX_VCPUS);
	free(reply);
	for (int i = 0; i < n; i++) {
		struct guest_paging pg;
		enum linux_kernel_fit fit;

		if (!regs[i].idt_base || guest_paging_init(&pg, regs[i].cr0, regs[i].cr3, regs[i].cr4, regs[i].efer))
			continue;
		fit = linux_kernel_fit(&ds->mem, &pg, regs[i].idt_base, regs[i].idt_limit, is_start, ctx, vec, handler);
		if (fit != LINUX_KERNEL_UNKNOWN)
			return fit;
	}
	return LINUX_KERNEL_UNKNOWN;
}

/* The snapshot of v nearest to time t, or NULL when none lies within the window. */
static const struct domain_snapshot *nearest(const struct domain_sampler *ds, const struct domain_vcpu *v,
					     uint64_t t)
{
	uint64_t first = v->count > DOMAIN_SAMPLER_HISTORY ? v->count - DOMAIN_SAMPLER_HISTORY : 0;
	uint64_t lo = first, hi = v->count, best_d = UINT64_MAX;
	const struct domain_snapshot *best = NULL;

	/* The first snapshot at or after t; the one before it is the other candidate. */
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (v->hist[mid % DOMAIN_SAMPLER_HISTORY].time < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (uint64_t i = lo > first ? lo - 1 : lo; i <= lo && i < v->count; i++) {
		const struct domain_snapshot *s = &v->hist[i % DOMAIN_SAMPLER_HISTORY];
		uint64_t d = s->time > t ? s->time - t : t - s->time;

		if (d < best_d) {
			best_d = d;
			best = s;
		}
	}
	return best && best_d <= ds->window_ns ? best : NULL;
}

int domain_sampler_join(struct domain_sampler *ds, const struct kp_rec_sample *host, bool perf_ip)
{
	struct {
		struct kp_rec_sample s;
		uint64_t cc[KP_CALLCHAIN_MAX];
	} u;
	const struct domain_snapshot *snap = NULL;
	unsigned int cpu;
	int rc;

	for (cpu = 0; cpu < ds->nvcpus; cpu++)
		if ((uint32_t)ds->vcpu[cpu].tid == host->tid)
			break;
	if (cpu < ds->nvcpus)
		snap = nearest(ds, &ds->vcpu[cpu], host->time);
	if (!snap) {
		ds->unjoined++;
		return 0;
	}
	u.s = (struct kp_rec_sample){ .event_id = ds->event_id, .pid = snap->pid, .tid = snap->tid, .cpu = cpu,
				      .time = host->time, .ip = perf_ip ? host->ip : snap->ip, .period = host->period,
				      .cpl = perf_ip ? host->cpl : snap->cpl, .domain = KP_DOMAIN_GUEST };
	/* The snapshot's stack belongs to its RIP: with perf's RIP it is only the same when the RIPs are. */
	if (!perf_ip || (host->ip == snap->ip && host->cpl == snap->cpl)) {
		u.s.nr_callchain = snap->nr_callchain;
		memcpy(u.cc, snap->callchain, snap->nr_callchain * sizeof(uint64_t));
	}
	ds->joined++;
	ds->perf_guest_ip += perf_ip;
	rc = kp_writer_add(ds->w, KP_REC_SAMPLE, &u, sizeof(u.s) + u.s.nr_callchain * sizeof(uint64_t));
	return rc ? rc : 1;
}
