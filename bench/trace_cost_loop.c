// SPDX-License-Identifier: MIT
/*
 * bench/trace_cost.c's event stream, built three times (bench/bench.mk):
 * ordinary, with console_bytes compiled in (KVMPROF_STATIC_PLUGIN) and with
 * the events compiled out; TRACE_COST_LOOP names each copy. One iteration
 * emits what one port-I/O exit of the guest workload brings (bench/trace.sh)
 * and a PMU MSR write's events.
 */
#include "trace.h"
#include "trace_cost.h"

void TRACE_COST_LOOP(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++) {
		TRACE(vm_entry);
		TRACE(vm_exit, 2, 0xffffffff81000000ull + (i & 0xfff), 0);
		TRACE(pio, 0x80, 1, 1, i & 0xff);
		TRACE(pio, 0x3f8, 1, 1, 'a' + (i & 15));
		TRACE(msr_write, 0xc0010000, i, 0);
		TRACE(pmu_counter_program, 1);
		/* Keeps the compiled-out copy a loop of the same length. */
		__asm__ volatile("" ::: "memory");
	}
}
