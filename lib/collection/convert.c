/* SPDX-License-Identifier: MIT */
#include "collection/convert.h"

#include <string.h>

#include "kvmprof/sample_format.h"

static const struct convert_id *id_of(const struct convert_ctx *c, uint64_t id)
{
	static const struct convert_id unknown = { 0, 0, 0 };

	for (size_t i = 0; i < c->nids; i++)
		if (c->ids[i].id == id)
			return &c->ids[i];
	return &unknown;
}

static uint32_t event_of(const struct convert_ctx *c, uint64_t id)
{
	return id_of(c, id)->event;
}

static uint64_t rd64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint32_t rd32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

void convert_sample_layout(struct perf_event_attr *a, int callgraph, uint32_t stack_size)
{
	a->sample_type = CONVERT_SAMPLE_TYPE;
	if (a->freq)
		a->sample_type |= PERF_SAMPLE_PERIOD;
	a->sample_id_all = 1;
	if (!callgraph)
		return;
	a->sample_type |= PERF_SAMPLE_CALLCHAIN;
	if (callgraph != 2)
		return;
	a->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
	a->sample_regs_user = CONVERT_REGS_USER_MASK;
	a->sample_stack_user = stack_size;
	a->exclude_callchain_user = 1;
}

uint64_t convert_fixed_period(const struct perf_event_attr *a)
{
	return (a->sample_type & PERF_SAMPLE_PERIOD) ? 0 : a->sample_period;
}

/* perf's x86 register numbers (PERF_REG_X86_*) in CONVERT_REGS_USER_MASK's order, as DWARF numbers. */
static const uint8_t perf_to_dwarf[KP_USER_REGS] = {
	0,  /* ax */ 3,	 /* bx */ 2,  /* cx */ 1,  /* dx */ 4,	/* si */ 5,  /* di */
	6,  /* bp */ 7,	 /* sp */ 16, /* ip */ 8,  /* r8 */ 9,	/* r9 */ 10, /* r10 */
	11, /* r11 */ 12, /* r12 */ 13, /* r13 */ 14, /* r14 */ 15, /* r15 */
};

/*
 * The REGS_USER and STACK_USER fields at p (end: the sample's end) to a
 * USER_STACK record for sample s. 0 when there are none (a kernel thread,
 * a sample without user context, a malformed tail), else 1 with *len.
 */
static int user_stack(const unsigned char *p, const unsigned char *end, const struct kp_rec_sample *s,
		      struct kp_rec_user_stack *u, size_t *len)
{
	uint64_t abi, size, dyn;

	if (end - p < 8)
		return 0;
	abi = rd64(p);
	p += 8;
	if (abi == PERF_SAMPLE_REGS_ABI_NONE)
		return 0;
	if (abi != PERF_SAMPLE_REGS_ABI_64 || end - p < KP_USER_REGS * 8 + 8)
		return 0;
	memset(u, 0, sizeof(*u));
	for (int i = 0; i < KP_USER_REGS; i++)
		u->regs[perf_to_dwarf[i]] = rd64(p + 8 * i);
	p += KP_USER_REGS * 8;
	size = rd64(p);
	p += 8;
	/* size bytes of copy, then how many of them the kernel filled (dyn_size). */
	if (!size || size > KP_USER_STACK_MAX || (uint64_t)(end - p) < size + 8)
		return 0;
	dyn = rd64(p + size);
	if (dyn > size)
		dyn = size;
	u->pid = s->pid;
	u->tid = s->tid;
	u->time = s->time;
	u->size = (uint32_t)dyn;
	memcpy(u->data, p, dyn);
	*len = sizeof(*u) + dyn;
	return 1;
}

static int conv_sample(struct convert_ctx *c, const struct perf_event_header *h)
{
	/* A stack copy is up to 64 KiB: one buffer per thread, not on the stack. */
	static _Thread_local union {
		struct kp_rec_user_stack u;
		unsigned char bytes[sizeof(struct kp_rec_user_stack) + KP_USER_STACK_MAX];
	} us;
	const unsigned char *p = (const unsigned char *)(h + 1), *tail;
	size_t body = h->size - sizeof(*h), us_len = 0, fixed;
	const struct convert_id *id;
	struct {
		struct kp_rec_sample s;
		uint64_t cc[KP_CALLCHAIN_MAX];
	} u;
	uint16_t mode = h->misc & PERF_RECORD_MISC_CPUMODE_MASK;
	int r;

	/* identifier, ip, pid/tid, time, cpu/res; then the period in frequency mode. */
	if (body < 40)
		return 0;
	id = id_of(c, rd64(p));
	fixed = id->fixed_period ? 40 : 48;
	if (body < fixed)
		return 0;
	tail = p + fixed;
	memset(&u.s, 0, sizeof(u.s));
	u.s.event_id = id->event;
	u.s.ip = rd64(p + 8);
	u.s.pid = rd32(p + 16);
	u.s.tid = rd32(p + 20);
	u.s.time = rd64(p + 24);
	u.s.cpu = rd32(p + 32);
	u.s.period = id->fixed_period ? id->fixed_period : rd64(p + 40);
	u.s.cpl = mode == PERF_RECORD_MISC_USER || mode == PERF_RECORD_MISC_GUEST_USER ? KP_CPL_USER
										      : KP_CPL_KERNEL;
	if (c->callchain && body >= fixed + 8) {
		const unsigned char *chain = p + fixed + 8;
		uint64_t nr = rd64(p + fixed);
		bool skipped_ip = false;

		if (nr > (body - fixed - 8) / 8)
			nr = (body - fixed - 8) / 8;
		tail = chain + nr * 8;
		for (uint64_t i = 0; i < nr && u.s.nr_callchain < KP_CALLCHAIN_MAX; i++) {
			uint64_t a = rd64(chain + i * 8);

			/* PERF_CONTEXT_KERNEL / _USER markers say where the chain crosses modes. */
			if (a >= (uint64_t)PERF_CONTEXT_MAX)
				continue;
			/* The chain starts with the sampled ip itself; the record has it already. */
			if (!skipped_ip) {
				skipped_ip = true;
				if (a == u.s.ip)
					continue;
			}
			u.cc[u.s.nr_callchain++] = a;
		}
	}
	if (c->keep_sample) {
		int keep = c->keep_sample(c->keep_ctx, &u.s, h->misc);

		if (keep <= 0)
			return keep;
	}
	r = kp_writer_add(c->e->w, KP_REC_SAMPLE, &u, sizeof(u.s) + u.s.nr_callchain * sizeof(uint64_t));
	if (r || !c->user_stack || !user_stack(tail, p + body, &u.s, &us.u, &us_len))
		return r;
	return kp_writer_add(c->e->w, KP_REC_USER_STACK, &us, us_len);
}

/* Time from the sample_id_all trailer of a non-sample record. */
static uint64_t trailer_time(const struct perf_event_header *h)
{
	if (h->size < sizeof(*h) + CONVERT_ID_TRAILER)
		return 0;
	return rd64((const unsigned char *)h + h->size - CONVERT_ID_TRAILER + 8);
}

static int conv_mmap2(struct convert_ctx *c, const struct perf_event_header *h)
{
	const unsigned char *p = (const unsigned char *)(h + 1);
	size_t fixed = 8 + 24 + 24 + 8; /* pid/tid, addr/len/pgoff, dev/ino or build-id, prot/flags */
	size_t body = h->size - sizeof(*h);
	char name[KP_PATH_MAX];
	size_t maxlen;
	uint32_t pid = rd32(p);

	if (body < fixed + CONVERT_ID_TRAILER)
		return 0;
	/* Kernel and module maps (pid -1): kernel samples resolve through KSYMS. */
	if (pid == UINT32_MAX)
		return 0;
	maxlen = body - fixed - CONVERT_ID_TRAILER;
	if (maxlen >= sizeof(name))
		maxlen = sizeof(name) - 1;
	memcpy(name, p + fixed, maxlen);
	name[maxlen] = 0;
	return emit_mmap(c->e, pid, rd32(p + 4), trailer_time(h), rd64(p + 8), rd64(p + 16), rd64(p + 24),
			 rd32(p + 56), rd32(p + 60), name);
}

static int conv_comm(struct convert_ctx *c, const struct perf_event_header *h)
{
	const unsigned char *p = (const unsigned char *)(h + 1);
	size_t body = h->size - sizeof(*h);
	char comm[KP_COMM_MAX + 1];
	size_t n;

	if (body < 8 + CONVERT_ID_TRAILER)
		return 0;
	n = body - 8 - CONVERT_ID_TRAILER;
	if (n > KP_COMM_MAX)
		n = KP_COMM_MAX;
	memcpy(comm, p + 8, n);
	comm[n] = 0;
	return emit_comm(c->e, rd32(p), rd32(p + 4), trailer_time(h), comm,
			 h->misc & PERF_RECORD_MISC_COMM_EXEC);
}

static int conv_task(struct convert_ctx *c, const struct perf_event_header *h)
{
	const unsigned char *p = (const unsigned char *)(h + 1);

	if (h->size < sizeof(*h) + 24)
		return 0;
	return emit_task(c->e, h->type == PERF_RECORD_FORK ? KP_REC_FORK : KP_REC_EXIT, rd32(p), rd32(p + 4),
			 rd32(p + 8), rd32(p + 12), rd64(p + 16));
}

static int conv_lost(struct convert_ctx *c, uint64_t id, uint64_t lost)
{
	struct kp_rec_lost l = { .event_id = event_of(c, id), .lost = lost };

	c->lost += lost;
	return kp_writer_add(c->e->w, KP_REC_LOST, &l, sizeof(l));
}

int convert_record(struct convert_ctx *c, const struct perf_event_header *h)
{
	const unsigned char *p = (const unsigned char *)(h + 1);

	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		return conv_sample(c, h);
	case PERF_RECORD_MMAP2:
		return conv_mmap2(c, h);
	case PERF_RECORD_COMM:
		return conv_comm(c, h);
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		return conv_task(c, h);
	case PERF_RECORD_LOST:
		if (h->size >= sizeof(*h) + 16)
			return conv_lost(c, rd64(p), rd64(p + 8));
		return 0;
	case PERF_RECORD_LOST_SAMPLES:
		if (h->size >= sizeof(*h) + 8 + CONVERT_ID_TRAILER)
			return conv_lost(c, rd64((const unsigned char *)h + h->size - 8), rd64(p));
		return 0;
	default:
		return 0; /* throttling and the like: nothing a report needs */
	}
}
