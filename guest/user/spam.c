/* SPDX-License-Identifier: MIT */
/*
 * spam [ms] [lines] [console|agent|both] [pause_ms]: writes numbered 64-byte
 * lines to the console (COM1), the agent channel (COM2) or both, for `ms`
 * milliseconds (default 3000) or until `lines` lines (default no limit),
 * then prints how many. pause_ms (default 0): sleep that long first, so
 * that a profiler attached meanwhile sees every byte. Every byte is a port write the VMM emulates: the
 * workload that shows the VMM's serial emulation and the host kernel's exit
 * handling in a system-wide profile, and the flood of the hostile-guest
 * tests (a console or agent channel nobody reads).
 */
#include "libc.h"

int main(int argc, char **argv)
{
	uint64_t ms = (uint64_t)atol_def(argc > 1 ? argv[1] : NULL, 3000);
	long max = atol_def(argc > 2 ? argv[2] : NULL, 0);
	const char *to = argc > 3 ? argv[3] : "console";
	long pause = atol_def(argc > 4 ? argv[4] : NULL, 0);
	bool console = strcmp(to, "agent") != 0, agent = !strcmp(to, "agent") || !strcmp(to, "both");
	uint64_t t0;
	long n = 0;
	char line[80];

	if (pause > 0)
		sleep_ms((unsigned long)pause);
	t0 = clock_ns();
	while (clock_ns() - t0 < ms * 1000000ull && (max <= 0 || n < max)) {
		size_t len = (size_t)snprintf(line, sizeof(line), "spam %8ld ................................................\n", n);

		if (console)
			write(1, line, len);
		if (agent)
			write(GUEST_FD_AGENT, line, len);
		n++;
	}
	printf("spam: %ld lines in %lu ms\n", n, (unsigned long)((clock_ns() - t0) / 1000000ull));
	return 0;
}
