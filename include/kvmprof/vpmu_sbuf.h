/* SPDX-License-Identifier: MIT */
/*
 * The vPMU's sample buffer: the guest/VMM ABI (docs/vpmu.md, "Sample
 * buffer"). Like Intel PEBS or AMD IBS, samples go to guest memory without
 * an interrupt each: on an overflow of the chosen counter, kvmprof-vmm
 * itself writes a sample record into a ring the guest gave it, re-arms the
 * counter with the reload value, and raises a PMI only when the unread
 * bytes cross the watermark.
 *
 * Discovery: CPUID leaf KP_CPUID_LEAF (run in ring 0) returns the maximum
 * kvmprof leaf in EAX and the signature "kvmprof-vpmu" in EBX, ECX, EDX;
 * leaf KP_CPUID_FEATURES returns feature bits in EAX (KP_CPUID_SBUF) and
 * the first sample-buffer MSR in EBX. A guest that does not look never sees
 * the buffer; the MSRs exist only when the bit is set.
 *
 * The buffer, per vCPU, in guest-physical memory (contiguous):
 *   BASE                 struct kp_ring_ctl (include/kvmprof/guest_ring.h), one page
 *   BASE + 4096          SIZE bytes of records: the ring's data area
 * Records are sample-file records (struct kp_rec_header + struct
 * kp_rec_sample + callchain, CRC set, 8-byte aligned; KP_RING_PAD fills the
 * end of the area when a record does not fit there), so the guest copies
 * them into its sample file unchanged. The VMM owns ctl.head, ctl.lost and
 * ctl.written; the guest owns ctl.tail. A record that does not fit in the
 * free space is not written and counts in ctl.lost: unread records are
 * never overwritten. Arming resets head, lost and written to 0, so the
 * guest sets tail to 0 before it arms.
 *
 * Hostile guests: every value is checked when written, the combination when
 * KP_SBUF_CTL_EN is set; a bad one gets #GP and changes nothing. The
 * buffer's placement cannot be changed while it is armed (#GP). A tail that
 * makes no sense (ahead of head, or more than SIZE behind) reads as a full
 * buffer.
 *
 * Plain types only: included by the freestanding guest.
 */
#ifndef KVMPROF_VPMU_SBUF_H
#define KVMPROF_VPMU_SBUF_H

#include <stdint.h>

#define KP_CPUID_LEAF 0x40000100u     /* EAX: highest kvmprof leaf; EBX ECX EDX: "kvmprof-vpmu" */
#define KP_CPUID_FEATURES 0x40000101u /* EAX: KP_CPUID_*; EBX: KP_MSR_SBUF_CTL */
#define KP_CPUID_SIG_EBX 0x706d766bu  /* "kvmp" */
#define KP_CPUID_SIG_ECX 0x2d666f72u  /* "rof-" */
#define KP_CPUID_SIG_EDX 0x756d7076u  /* "vpmu" */
#define KP_CPUID_SBUF (1u << 0)       /* the sample buffer and its MSRs */

/* The MSRs (read and write), one set per vCPU. */
#define KP_MSR_SBUF_CTL 0x4b500000u       /* KP_SBUF_CTL_* */
#define KP_MSR_SBUF_BASE 0x4b500001u      /* guest-physical address of the control page, 4 KiB aligned */
#define KP_MSR_SBUF_SIZE 0x4b500002u      /* bytes of data: a power of two, KP_SBUF_SIZE_MIN..MAX */
#define KP_MSR_SBUF_WATERMARK 0x4b500003u /* unread bytes at which the PMI comes: 1..SIZE */
#define KP_MSR_SBUF_RELOAD 0x4b500004u    /* events per sample: 1..KP_SBUF_RELOAD_MAX */
#define KP_MSR_SBUF_TIME 0x4b500005u      /* write: the guest's clock now, ns; records' times follow it */
#define KP_SBUF_MSRS 6

#define KP_SBUF_CTL_EN (1ULL << 0)        /* armed */
#define KP_SBUF_CTL_CALLCHAIN (1ULL << 1) /* frame-pointer call stacks in the records */
#define KP_SBUF_CTL_COUNTER_SHIFT 8       /* bits 15:8: the general-purpose counter it serves */
#define KP_SBUF_CTL_COUNTER_MASK (0xffULL << KP_SBUF_CTL_COUNTER_SHIFT)
#define KP_SBUF_CTL_VALID (KP_SBUF_CTL_EN | KP_SBUF_CTL_CALLCHAIN | KP_SBUF_CTL_COUNTER_MASK)

#define KP_SBUF_PAGE 4096u
#define KP_SBUF_SIZE_MIN 4096ULL
#define KP_SBUF_SIZE_MAX (16ULL << 20)
#define KP_SBUF_RELOAD_MAX (1ULL << 47)

#endif
