/* SPDX-License-Identifier: MIT */
/*
 * The consumer side of the VMM's guest-sample rings
 * (include/kvmprof/guest_ring.h): map the memfd that sample-start passed,
 * check its layout, and copy the records of every ring into the output
 * file unchanged. The rings are hostile input: every record header is
 * checked against the bytes available before it is read, and a record that
 * fails the sample-file checks is skipped (counted), never copied, so a bad
 * ring can never make the output file unreadable.
 */
#ifndef HOST_GUEST_RING_READER_H
#define HOST_GUEST_RING_READER_H

#include <stddef.h>
#include <stdint.h>

#include "format/sample_file.h"

struct guest_rings {
	unsigned char *map;
	size_t map_size;
	uint32_t nr_rings;
	uint64_t data_size, stride;
	uint64_t copied, samples; /* records copied, SAMPLE records among them */
	uint64_t bad;             /* records refused; the rest of that ring's pending bytes are skipped */
	unsigned char *scratch;   /* one record, copied out of shared memory before it is checked */
};

/* Maps the memfd (the descriptor may be closed afterwards). 0, or -errno with a message in err. */
int guest_rings_map(struct guest_rings *g, int fd, char *err, size_t errlen);
void guest_rings_unmap(struct guest_rings *g);

/* Copies every complete record now in the rings to w and frees their space. 0 or -errno from the writer. */
int guest_rings_drain(struct guest_rings *g, struct kp_writer *w);

/* Records the producers dropped for want of space, all rings (their `lost` counters). */
uint64_t guest_rings_lost(const struct guest_rings *g);
/* VM_EXIT records the VMM left out to keep room for samples (not in lost: no sample was lost). */
uint64_t guest_rings_exits_dropped(const struct guest_rings *g);

#endif
