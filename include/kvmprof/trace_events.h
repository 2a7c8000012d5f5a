/* SPDX-License-Identifier: MIT */
/*
 * The VMM's trace events, declared once. Everything else (the VMM's emit
 * calls, the event table, the trace file reader, plugins later) is
 * generated from KVMPROF_TRACE_EVENTS.
 *
 * Each entry: EV(id, name, nargs, args, description)
 *   id     stable numeric id, written into trace files: append only, never
 *          renumber or reuse (a file written by an older VMM must still read)
 *   name   the event's name, matched by --trace-events globs
 *   nargs  how many arguments it carries (at most KVMPROF_TRACE_MAX_ARGS);
 *          the emit macro checks its callers against it at compile time
 *   args   "name:type,..." with type u (unsigned decimal), x (hex) or
 *          s (up to 8 bytes of text packed little-endian into the argument)
 *
 * Every record also carries the vCPU and a CLOCK_MONOTONIC time.
 * docs/trace.md says where each event fires and which never fire on KVM.
 */
#ifndef KVMPROF_TRACE_EVENTS_H
#define KVMPROF_TRACE_EVENTS_H

#define KVMPROF_TRACE_MAX_ARGS 6

#define KVMPROF_TRACE_EVENTS(EV) \
	EV(0, vcpu_start, 0, "", "a vCPU thread starts its run loop") \
	EV(1, vcpu_stop, 0, "", "a vCPU thread leaves its run loop") \
	EV(2, vm_exit, 3, "reason:u,rip:x,cpl:u", "KVM_RUN returned: KVM's exit reason, guest RIP and CPL") \
	EV(3, vm_entry, 0, "", "the vCPU is about to enter the guest (KVM_RUN)") \
	EV(4, pio, 4, "port:x,size:u,out:u,value:x", "one port I/O access the VMM handled (out=1: a write)") \
	EV(5, mmio, 4, "addr:x,size:u,write:u,value:x", "one MMIO access the VMM handled (open bus)") \
	EV(6, msr_read, 3, "index:x,value:x,gp:u", "RDMSR of a PMU MSR, handled by the vPMU (gp=1: #GP)") \
	EV(7, msr_write, 3, "index:x,value:x,gp:u", "WRMSR of a PMU MSR, handled by the vPMU (gp=1: #GP)") \
	EV(8, cpuid, 2, "leaf:x,subleaf:x", "CPUID exit: never fires, KVM answers CPUID in the kernel") \
	EV(9, hlt, 0, "", "HLT exit: never fires, the in-kernel LAPIC handles HLT") \
	EV(10, pmu_counter_program, 1, "reprograms:u", "the vPMU reprogrammed its counters for the guest's new settings, before an entry") \
	EV(11, pmu_overflow, 1, "overflows:u", "guest counters overflowed since the vPMU last looked (at a run's end or entry)") \
	EV(12, pmi_inject, 2, "nmi:u,vector:u", "the vPMU delivered a PMI through the guest's LVTPC (nmi=1: as an NMI)") \
	EV(13, guest_sample, 6, "pid:u,tid:u,ip:x,cpl:u,period:u,depth:u", "the guest sampler took a sample") \
	EV(14, guest_process_switch, 3, "from:u,to:u,tid:u", "the sampler saw another guest process on this vCPU") \
	EV(15, control_request, 3, "cmd:s,ok:u,bytes:u", "the control socket answered a request") \
	EV(16, vm_run_end, 3, "reason:u,err:u,emulated:u", "a run ended: KVM_RUN returned (exit reason, its errno) or an emulator slice did; no registers read") \
	EV(17, rdpmc, 3, "ecx:x,value:x,gp:u", "RDPMC done by the VMM in the guest's place (exact backend; gp=1: #GP)")

enum kvmprof_trace_event {
#define KVMPROF_TRACE_ENUM(id, name, nargs, args, desc) KVMPROF_TRACE_##name = id,
	KVMPROF_TRACE_EVENTS(KVMPROF_TRACE_ENUM)
#undef KVMPROF_TRACE_ENUM
};

/* Ids are dense from 0: one past the highest. */
#define KVMPROF_TRACE_COUNT_ONE(id, name, nargs, args, desc) +1
#define KVMPROF_TRACE_EVENT_COUNT (0 KVMPROF_TRACE_EVENTS(KVMPROF_TRACE_COUNT_ONE))

/* Each event's argument count, as a constant the emit macro can check. */
enum kvmprof_trace_nargs {
#define KVMPROF_TRACE_NARGS(id, name, nargs, args, desc) KVMPROF_TRACE_NARGS_##name = nargs,
	KVMPROF_TRACE_EVENTS(KVMPROF_TRACE_NARGS)
#undef KVMPROF_TRACE_NARGS
};

#endif
