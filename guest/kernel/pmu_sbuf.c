/* SPDX-License-Identifier: MIT */
/*
 * kvmprof's sample buffer (include/kvmprof/vpmu_sbuf.h), for system-wide
 * sampling (pmu_all.c): one buffer per CPU, handed to the VMM through its
 * MSRs, into which the VMM writes a sample record per overflow of the
 * sampling counter, re-arming the counter itself. No NMI per sample: the
 * VMM raises one when a buffer's unread bytes cross the watermark (half the
 * buffer), and the handler only counts it and re-syncs the records' clock;
 * the command line can turn the buffer off or shrink it (pmu_sbuf_option);
 * readers (the agent's pmu_all_read_buf, every 50 ms) drain the buffers,
 * and the other half of the buffer is the slack for the wait.
 *
 * The records are already sample-file records: draining copies them
 * whole. The VMM is the only writer of head, the readers (under pmu_all.c's
 * lock) of tail.
 */
#include <kvmprof/guest_ring.h>
#include <kvmprof/sample_format.h>
#include <kvmprof/vpmu_sbuf.h>

#include "kernel.h"
#include "pmu_hw.h"

#define SBUF_DATA (256u * 1024) /* the largest data area; pmubuf_size= may use less */

struct sbuf {
	struct kp_ring_ctl ctl;
	uint8_t pad[KP_SBUF_PAGE - sizeof(struct kp_ring_ctl)];
	uint8_t data[SBUF_DATA];
} __attribute__((aligned(KP_SBUF_PAGE)));

static struct sbuf sbufs[MAX_CPUS];
static struct {
	int off;                  /* pmubuf=off: the PMI path even where the VMM offers the buffer */
	uint64_t size, watermark; /* data bytes used, and the watermark; 0: the defaults */
} opt;

int pmu_sbuf_option(const char *tok, size_t n)
{
	uint64_t v;
	if (n == 10 && !strncmp(tok, "pmubuf=off", 10)) {
		opt.off = 1;
		return 0;
	}
	if (n > 12 && !strncmp(tok, "pmubuf_size=", 12) && !parse_uint(tok + 12, n - 12, &v) &&
	    v >= KP_SBUF_SIZE_MIN && v <= SBUF_DATA && !(v & (v - 1))) {
		opt.size = v;
		return 0;
	}
	if (n > 17 && !strncmp(tok, "pmubuf_watermark=", 17) && !parse_uint(tok + 17, n - 17, &v) && v >= 1 &&
	    v <= SBUF_DATA) {
		opt.watermark = v;
		return 0;
	}
	return -1;
}

int pmu_sbuf_usable(void)
{
	return pmu_sbuf_offered() && !opt.off;
}

/* The data area's size this session: set at start, while no CPU has its buffer armed. */
static uint64_t data_size(void)
{
	return opt.size ? opt.size : SBUF_DATA;
}

static uint64_t watermark(void)
{
	uint64_t w = opt.watermark ? opt.watermark : data_size() / 2;
	return w < data_size() ? w : data_size(); /* the VMM refuses one above the size */
}

void pmu_sbuf_arm(struct cpu *c, int hw, uint64_t period, int callchain)
{
	struct sbuf *b = &sbufs[c->id];
	/* The VMM starts an armed ring at 0; a reader sees it empty until then. */
	b->ctl.head = b->ctl.lost = b->ctl.written = 0;
	__atomic_store_n(&b->ctl.tail, 0, __ATOMIC_RELEASE);
	/* The kernel is identity-mapped: the buffer's virtual address is its physical one. */
	pmu_sbuf_write(KP_MSR_SBUF_BASE, (uint64_t)b);
	pmu_sbuf_write(KP_MSR_SBUF_SIZE, data_size());
	pmu_sbuf_write(KP_MSR_SBUF_WATERMARK, watermark());
	pmu_sbuf_write(KP_MSR_SBUF_RELOAD, period);
	pmu_sbuf_write(KP_MSR_SBUF_TIME, clock_ns());
	pmu_sbuf_write(KP_MSR_SBUF_CTL, KP_SBUF_CTL_EN | (uint64_t)hw << KP_SBUF_CTL_COUNTER_SHIFT |
						(callchain ? KP_SBUF_CTL_CALLCHAIN : 0));
}

void pmu_sbuf_disarm(void)
{
	pmu_sbuf_write(KP_MSR_SBUF_CTL, 0);
}

void pmu_sbuf_pmi(void)
{
	/* The records' times run on from the last clock the VMM was told: keep it close. */
	pmu_sbuf_write(KP_MSR_SBUF_TIME, clock_ns());
}

void pmu_sbuf_totals(int ncpus, unsigned long *written, unsigned long *lost)
{
	for (int i = 0; i < ncpus; i++) {
		*written += __atomic_load_n(&sbufs[i].ctl.written, __ATOMIC_RELAXED);
		*lost += __atomic_load_n(&sbufs[i].ctl.lost, __ATOMIC_RELAXED);
	}
}

/* Copies CPU i's whole records to out (room bytes), padding skipped; returns the bytes copied. */
static uint64_t drain_one(struct sbuf *b, uint8_t *out, uint64_t room)
{
	uint64_t t = b->ctl.tail, h = __atomic_load_n(&b->ctl.head, __ATOMIC_ACQUIRE), n = 0, size = data_size();
	if (h - t > size)
		return 0; /* cannot happen: the VMM never writes past the tail */
	while (t != h) {
		uint64_t pos = t % size, to_end = size - pos;
		const struct kp_rec_header *r = (const struct kp_rec_header *)(b->data + pos);
		if (to_end < sizeof(*r)) { /* too short for a PAD record: zeros */
			t += to_end;
			continue;
		}
		if (r->size < sizeof(*r) || r->size % 8 || r->size > to_end || r->size > h - t)
			break; /* cannot happen: the VMM writes whole, aligned records */
		if (r->type != KP_RING_PAD) {
			if (r->size > room - n)
				break;
			memcpy(out + n, r, r->size);
			n += r->size;
		}
		t += r->size;
	}
	__atomic_store_n(&b->ctl.tail, t, __ATOMIC_RELEASE);
	return n;
}

uint64_t pmu_sbuf_drain(int ncpus, uint8_t *out, uint64_t room)
{
	uint64_t n = 0;
	for (int i = 0; i < ncpus && n < room; i++)
		n += drain_one(&sbufs[i], out + n, room - n);
	return n;
}
