// SPDX-License-Identifier: MIT
/*
 * Self-monitoring through perf_event_open in L2, without the perf tool:
 * counts its own ring-3 instructions and branches around a loop of known
 * size, and reads each counter twice, with read() and with RDPMC through
 * the event's mmap'ed page (cap_user_rdpmc, the way PAPI-style tools read
 * counters). Prints one line a reading:
 *
 *   pmuself: EVENT n=N read=COUNT rdpmc=COUNT|none index=I cap_user_rdpmc=0|1
 *
 * Usage: pmuself N    (exit 0 if every event opened and read)
 *
 * The loop is countloop's: DEC and JNZ, N times. Between the enable and
 * the disable ioctl the counted ring-3 code is that loop plus the ioctl's
 * own few user instructions, the same for every N: two runs at N1 and N2
 * differ by exactly 2*(N2-N1) instructions and N2-N1 branches.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

struct counter {
	const char *name;
	uint64_t config;
	int fd;
	struct perf_event_mmap_page *pc;
};

static uint64_t rdpmc(uint32_t ecx)
{
	uint32_t lo, hi;

	__asm__ volatile("rdpmc" : "=a"(lo), "=d"(hi) : "c"(ecx));
	return (uint64_t)hi << 32 | lo;
}

/* The count through the mmap page, as perf_event_mmap_page's comment gives the loop; -1 without RDPMC. */
static int64_t mmap_count(const struct perf_event_mmap_page *pc, uint32_t *index)
{
	uint32_t seq, idx;
	uint64_t count;
	int64_t pmc;

	do {
		seq = pc->lock;
		__sync_synchronize();
		idx = pc->index;
		count = pc->offset;
		if (!pc->cap_user_rdpmc || !idx)
			return -1;
		pmc = (int64_t)rdpmc(idx - 1);
		pmc <<= 64 - pc->pmc_width;
		pmc >>= 64 - pc->pmc_width;
		count += (uint64_t)pmc;
		__sync_synchronize();
	} while (pc->lock != seq);
	*index = idx;
	return (int64_t)count;
}

static int open_counter(struct counter *c)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_HARDWARE;
	a.config = c->config;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	c->fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	if (c->fd < 0) {
		fprintf(stderr, "pmuself: perf_event_open %s: %s\n", c->name, strerror(errno));
		return -1;
	}
	c->pc = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED, c->fd, 0);
	if (c->pc == MAP_FAILED)
		c->pc = NULL;
	return 0;
}

int main(int argc, char **argv)
{
	struct counter c[2] = { { "instructions", PERF_COUNT_HW_INSTRUCTIONS, -1, NULL },
				{ "branches", PERF_COUNT_HW_BRANCH_INSTRUCTIONS, -1, NULL } };
	int64_t viammap[2] = { -1, -1 };
	uint32_t index[2] = { 0, 0 };
	char *end;
	long n;
	int status = 0;

	if (argc != 2 || (n = strtol(argv[1], &end, 10)) < 1 || *end) {
		fprintf(stderr, "usage: pmuself N (N >= 1)\n");
		return 2;
	}
	for (int i = 0; i < 2; i++)
		if (open_counter(&c[i]))
			return 1;
	ioctl(c[0].fd, PERF_EVENT_IOC_ENABLE, 0);
	ioctl(c[1].fd, PERF_EVENT_IOC_ENABLE, 0);
	__asm__ volatile("1: dec %0\n\tjnz 1b" : "+r"(n) : : "cc");
	/* While still counting: the mmap page's reading (it includes these reads' own instructions). */
	for (int i = 0; i < 2; i++)
		if (c[i].pc)
			viammap[i] = mmap_count(c[i].pc, &index[i]);
	ioctl(c[1].fd, PERF_EVENT_IOC_DISABLE, 0);
	ioctl(c[0].fd, PERF_EVENT_IOC_DISABLE, 0);
	n = strtol(argv[1], NULL, 10);
	for (int i = 0; i < 2; i++) {
		uint64_t v;

		if (read(c[i].fd, &v, sizeof(v)) != (ssize_t)sizeof(v)) {
			fprintf(stderr, "pmuself: read %s: %s\n", c[i].name, strerror(errno));
			status = 1;
			continue;
		}
		printf("pmuself: %s n=%ld read=%llu rdpmc=", c[i].name, n, (unsigned long long)v);
		if (viammap[i] < 0)
			printf("none");
		else
			printf("%lld", (long long)viammap[i]);
		printf(" index=%u cap_user_rdpmc=%u\n", index[i], c[i].pc ? (unsigned int)c[i].pc->cap_user_rdpmc : 0);
	}
	return status;
}
