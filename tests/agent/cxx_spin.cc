// SPDX-License-Identifier: MIT
/*
 * cxx_spin [SECONDS]: spins (default 1 s of CPU time) in a member of a
 * class template in a namespace, fixture::Spinner<unsigned long>::spin,
 * whose symbol is mangled (_ZN7fixture7SpinnerImE4spinEmj): the report
 * shows it demangled as perf report does, or mangled with --no-demangle.
 */
#include <cstdint>
#include <cstdlib>
#include <ctime>

namespace fixture {
template <typename T> struct Spinner {
	__attribute__((noinline)) static T spin(T x, unsigned n)
	{
		for (unsigned i = 0; i < n; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
		}
		return x;
	}
};
} // namespace fixture

static double cpu_seconds()
{
	timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double want = argc > 1 ? atof(argv[1]) : 1.0, t0 = cpu_seconds();
	volatile uint64_t sink = 1;

	while (cpu_seconds() - t0 < want)
		sink = fixture::Spinner<uint64_t>::spin(sink, 1u << 16);
	return (int)(sink & 0);
}
