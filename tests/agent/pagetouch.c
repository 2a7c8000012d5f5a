/* SPDX-License-Identifier: MIT */
/*
 * Fixture for the stat tests: exactly PAGES page faults of its own, on
 * top of what loading any program costs. It maps PAGES fresh anonymous
 * pages (no huge pages, so each is one fault) and writes one byte to each;
 * then, with a second argument, spins for that many seconds of CPU time
 * (for stat -p to find it running).
 *
 * usage: pagetouch PAGES [SPIN_SECONDS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long pages = argc > 1 ? atol(argv[1]) : 4096, psz = sysconf(_SC_PAGESIZE);
	double spin = argc > 2 ? atof(argv[2]) : 0;
	volatile char *p;

	if (pages < 1)
		return 2;
	p = mmap(NULL, (size_t)(pages * psz), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("pagetouch: mmap");
		return 1;
	}
	madvise((void *)p, (size_t)(pages * psz), MADV_NOHUGEPAGE);
	for (long i = 0; i < pages; i++)
		p[i * psz] = 1;
	if (spin > 0) {
		struct timespec ts;

		do
			clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
		while ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9 < spin);
	}
	return 0;
}
