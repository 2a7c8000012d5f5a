/* SPDX-License-Identifier: MIT */
/*
 * kvmprof's sample buffer (include/kvmprof/vpmu_sbuf.h), for system-wide
 * sampling (pmu_all.c): one buffer per CPU, handed to the VMM through its
 * MSRs, into which the VMM writes a sample record per overflow of the
 * sampling counter, re-arming the counter itself. No NMI per sample: the
 * VMM raises one when a buffer's unread bytes cross the watermark (half the
 * buffer), and the handler only counts it and re-syncs the records' clock;
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

#define SBUF_DATA (256u * 1024)
#define SBUF_WATERMARK (SBUF_DATA / 2)

struct sbuf {
	struct kp_ring_ctl ctl;
	uint8_t pad[KP_SBUF_PAGE - sizeof(struct kp_ring_ctl)];
	uint8_t data[SBUF_DATA];
} __attribute__((aligned(KP_SBUF_PAGE)));

static struct sbuf sbufs[MAX_CPUS];

void pmu_sbuf_arm(struct cpu *c, int hw, uint64_t period, int callchain)
{
	struct sbuf *b = &sbufs[c->id];
	/* The VMM starts an armed ring at 0; a reader sees it empty until then. */
	b->ctl.head = b->ctl.lost = b->ctl.written = 0;
	__atomic_store_n(&b->ctl.tail, 0, __ATOMIC_RELEASE);
	/* The kernel is identity-mapped: the buffer's virtual address is its physical one. */
	pmu_sbuf_write(KP_MSR_SBUF_BASE, (uint64_t)b);
	pmu_sbuf_write(KP_MSR_SBUF_SIZE, SBUF_DATA);
	pmu_sbuf_write(KP_MSR_SBUF_WATERMARK, SBUF_WATERMARK);
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
	uint64_t t = b->ctl.tail, h = __atomic_load_n(&b->ctl.head, __ATOMIC_ACQUIRE), n = 0;
	if (h - t > SBUF_DATA)
		return 0; /* cannot happen: the VMM never writes past the tail */
	while (t != h) {
		uint64_t pos = t % SBUF_DATA, to_end = SBUF_DATA - pos;
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
