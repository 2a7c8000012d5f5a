/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_GUEST_PMU_HW_H
#define KVMPROF_GUEST_PMU_HW_H

/*
 * Between the PMU driver (pmu.c) and system-wide sampling (pmu_all.c),
 * which owns one counter of every CPU while it runs. Everything from
 * pmu_suspend on touches the counters: call it between pmu_enter and
 * pmu_leave, the interlock that defers an NMI arriving meanwhile.
 */
#include "kernel.h"

/* pmu.c */
int pmu_present(void);
/* System-wide sampling's counter: the last general-purpose one; -1 on a PMU with too few. */
int pmu_all_counter(void);
/* The event select of a sampling counter (INT set, EN clear): 0 or -EINVAL. */
int pmu_sampling_ctl(const struct pmu_event *e, uint64_t *ctl);
void pmu_enter(struct cpu *c);
void pmu_leave(struct cpu *c); /* runs a deferred NMI */
/*
 * Around a change of system-wide sampling's counter on this CPU: the loaded
 * process's counters are saved and loaded again (pmu_resume gets what
 * pmu_suspend returned), so that the global enable register gets both.
 */
struct proc *pmu_suspend(struct cpu *c);
void pmu_resume(struct cpu *c, struct proc *p);
void pmu_counter_stop(int hw);
/* Arms counter hw with select ctl to overflow after period events. */
void pmu_counter_start(int hw, uint64_t ctl, uint64_t period);
/* Whether counter hw wrapped (overflowed); *past: the events counted since. */
int pmu_counter_wrapped(int hw, uint64_t *past);
void pmu_counter_rearm(int hw, uint64_t left);
/* Whether the VMM offers kvmprof's sample buffer (CPUID, include/kvmprof/vpmu_sbuf.h). */
int pmu_sbuf_offered(void);
/* Writes one of its MSRs, named by its KP_MSR_SBUF_* number. */
void pmu_sbuf_write(uint32_t reg, uint64_t val);
/* The PMI handler's work, for an overflow found without its PMI. */
void pmu_handle_nmi(struct cpu *c, uint64_t rip, uint64_t cs);

/* pmu_sbuf.c: whether system-wide sampling may use the buffer (offered, not pmubuf=off). */
int pmu_sbuf_usable(void);
/* pmu_sbuf.c: this CPU's sample buffer for system-wide sampling's counter hw (pmu_enter held). */
void pmu_sbuf_arm(struct cpu *c, int hw, uint64_t period, int callchain);
void pmu_sbuf_disarm(void);
void pmu_sbuf_pmi(void); /* a watermark PMI on this CPU */
/* Sums the records the VMM wrote and lost in the first ncpus CPUs' buffers. */
void pmu_sbuf_totals(int ncpus, unsigned long *written, unsigned long *lost);
/* Moves whole records from the first ncpus CPUs' buffers to out (room bytes); returns the bytes (under pmu_all.c's lock). */
uint64_t pmu_sbuf_drain(int ncpus, uint8_t *out, uint64_t room);

/*
 * pmu_throttle.c: a sampling PMI on this CPU, the timer's count then
 * (clock_ns_timer); 1 when it used up the tick's budget: stop the counter
 * until the next tick. pmu_throttle_tick: a tick was taken; 1 if a stopped
 * counter may run again (0: this tick's budget is used up already).
 */
int pmu_throttle_pmi(struct cpu *c, uint32_t timer);
int pmu_throttle_tick(struct cpu *c);

/* pmu_all.c: system-wide sampling's overflow check, from the PMI handler. */
void pmu_all_nmi(struct cpu *c, uint64_t rip, uint64_t cs);

#endif
