/* SPDX-License-Identifier: MIT */
/* bench/trace_cost.c's three copies of one event loop (trace_cost_loop.c). */
#ifndef KVMPROF_BENCH_TRACE_COST_H
#define KVMPROF_BENCH_TRACE_COST_H

#include "kvmprof/trace_events.h"

/* Events per iteration, by id: what trace_cost_loop.c emits. */
#define TRACE_COST_PER_ITERATION                                                      \
	{ [KVMPROF_TRACE_vm_entry] = 1, [KVMPROF_TRACE_vm_exit] = 1, [KVMPROF_TRACE_pio] = 2, \
	  [KVMPROF_TRACE_msr_write] = 1, [KVMPROF_TRACE_pmu_counter_program] = 1 }

void trace_cost_loop(unsigned long n);        /* events compiled in */
void trace_cost_loop_static(unsigned long n); /* with console_bytes's handler at the sites */
void trace_cost_loop_out(unsigned long n);    /* events compiled out */

#endif
