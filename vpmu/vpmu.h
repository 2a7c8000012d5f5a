/* SPDX-License-Identifier: MIT */
/*
 * The virtual PMU: the guest-visible performance-monitoring registers of an
 * AMD (legacy, PerfCtrCore, PerfMonV2) or Intel (architectural perfmon v2)
 * model, backed by host counters through a small backend interface.
 *
 * The register model is pure code: no system calls. The VMM calls
 *   vpmu_msr_read()/vpmu_msr_write()  on PMU MSR exits,
 *   vpmu_vcpu_before_run()            just before each KVM_RUN,
 *   vpmu_vcpu_after_run()             just after each KVM_RUN returns,
 * passing a monotonic timestamp, and the vPMU asks the VMM to deliver a PMI
 * through one callback. Host counters sit behind struct vpmu_backend_ops
 * (vpmu/backend_perf.c: host perf_event on the vCPU thread); unit tests use
 * a fake backend.
 */
#ifndef KVMPROF_VPMU_H
#define KVMPROF_VPMU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum vpmu_model {
	VPMU_MODEL_OFF,
	VPMU_MODEL_AMD,   /* legacy K7 + PerfCtrCore (6 counters) + PerfMonV2 */
	VPMU_MODEL_INTEL, /* architectural perfmon version 2 */
};

enum vpmu_mode {
	VPMU_MODE_CPU_SWITCH,    /* count only while guest code runs */
	VPMU_MODE_DOMAIN_SWITCH, /* also while the VMM works for the guest on its vCPU thread */
};

enum vpmu_host_vendor { VPMU_HOST_AMD, VPMU_HOST_INTEL, VPMU_HOST_OTHER };

#define VPMU_MAX_GP 8
#define VPMU_MAX_FIXED 3
#define VPMU_FIXED_BASE VPMU_MAX_GP /* counter index of fixed counter 0 */
#define VPMU_MAX_COUNTERS (VPMU_MAX_GP + VPMU_MAX_FIXED)
#define VPMU_AMD_MAX_GP 6
#define VPMU_INTEL_MAX_GP 8
#define VPMU_WIDTH 48
#define VPMU_COUNTER_MASK ((1ULL << VPMU_WIDTH) - 1)

/* MSRs: AMD */
#define MSR_K7_EVNTSEL0 0xc0010000u
#define MSR_K7_PERFCTR0 0xc0010004u
#define MSR_F15H_PERF_CTL0 0xc0010200u /* CTLn = base + 2n, CTRn = base + 2n + 1 */
#define MSR_AMD64_PERF_CNTR_GLOBAL_STATUS 0xc0000300u
#define MSR_AMD64_PERF_CNTR_GLOBAL_CTL 0xc0000301u
#define MSR_AMD64_PERF_CNTR_GLOBAL_STATUS_CLR 0xc0000302u
#define MSR_AMD64_PERF_CNTR_GLOBAL_STATUS_SET 0xc0000303u
/* MSRs: Intel */
#define MSR_IA32_PMC0 0x0c1u
#define MSR_IA32_PERFEVTSEL0 0x186u
#define MSR_IA32_PERF_CAPABILITIES 0x345u
#define MSR_CORE_PERF_FIXED_CTR0 0x309u
#define MSR_CORE_PERF_FIXED_CTR_CTRL 0x38du
#define MSR_CORE_PERF_GLOBAL_STATUS 0x38eu
#define MSR_CORE_PERF_GLOBAL_CTRL 0x38fu
#define MSR_CORE_PERF_GLOBAL_OVF_CTRL 0x390u
#define MSR_IA32_PMC0_FULL 0x4c1u
#define PERF_CAP_FW_WRITES (1ULL << 13)

/* Event-select bits, common to both vendors where they overlap. */
#define EVTSEL_EVENT 0x000000ffULL
#define EVTSEL_UMASK 0x0000ff00ULL
#define EVTSEL_USR (1ULL << 16)
#define EVTSEL_OS (1ULL << 17)
#define EVTSEL_EDGE (1ULL << 18)
#define EVTSEL_INT (1ULL << 20)
#define EVTSEL_EN (1ULL << 22)
#define EVTSEL_INV (1ULL << 23)
#define EVTSEL_CMASK 0xff000000ULL
#define AMD_EVTSEL_EVENT_HI 0xf00000000ULL /* event select bits 11:8 */

/* Events the exact backend counts by running the guest in an emulator (vmm/engine/emu.h). */
enum vpmu_exact_kind {
	VPMU_EXACT_NONE,
	VPMU_EXACT_INSNS,    /* instructions retired */
	VPMU_EXACT_BRANCHES, /* branch instructions retired */
	VPMU_EXACT_TAKEN,    /* taken branch instructions retired */
};

/* What a host counter must count for one virtual counter. */
struct vpmu_event {
	uint32_t type;     /* PERF_TYPE_HARDWARE or PERF_TYPE_RAW */
	uint64_t config;
	bool count_user;   /* guest USR bit */
	bool count_kernel; /* guest OS bit */
	bool translated;   /* architectural event mapped to a generic host event */
	bool is_cycles;    /* core or reference cycles: the clock backend can count these */
	enum vpmu_exact_kind exact; /* what an emulator counts for it, or NONE */
};

/* --- event filter (KVM_SET_PMU_EVENT_FILTER semantics) ------------------- */
#define VPMU_FILTER_MAX_EVENTS 300
enum vpmu_filter_action { VPMU_FILTER_ALLOW, VPMU_FILTER_DENY };

struct vpmu_filter {
	enum vpmu_filter_action action;
	unsigned int nevents;
	struct {
		uint16_t select; /* event select, 12 bits (AMD uses bits 11:8) */
		uint8_t umask;
	} events[VPMU_FILTER_MAX_EVENTS];
	uint32_t fixed_bitmap; /* decides fixed counters alone */
};

#define VPMU_ERR_MAX 256

/* Formats a message for the user into err (VPMU_ERR_MAX bytes); err may be NULL. */
void vpmu_set_err(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The host CPU's vendor, from CPUID leaf 0 (Hygon counts as AMD). */
enum vpmu_host_vendor vpmu_host_vendor(void);

/* Parses a filter file's text; on error, err names the line. */
int vpmu_filter_parse(const char *text, size_t len, struct vpmu_filter *f, char err[VPMU_ERR_MAX]);
int vpmu_filter_load(const char *path, struct vpmu_filter *f, char err[VPMU_ERR_MAX]);
bool vpmu_filter_allows_event(const struct vpmu_filter *f, uint16_t select, uint8_t umask);
bool vpmu_filter_allows_fixed(const struct vpmu_filter *f, unsigned int fixed_idx);
/* Whether libpfm4 (once initialized) knows a hardware core PMU of this host CPU. */
bool vpmu_filter_host_core_pmu(void);

/* --- configuration, shared by all vCPUs of a VM -------------------------- */
struct vpmu_config {
	enum vpmu_model model;
	enum vpmu_mode mode;
	enum vpmu_host_vendor host;
	unsigned int n_gp;    /* general-purpose counters offered */
	unsigned int n_fixed; /* Intel: 3; AMD: 0 */
	const struct vpmu_filter *filter; /* NULL: everything allowed */
	/*
	 * The exact backend: events an emulator counts are countable whatever
	 * the host, and the Intel model's CPUID marks the others unavailable.
	 */
	bool exact;
	/*
	 * The sample buffer (include/kvmprof/vpmu_sbuf.h, vpmu_sbuf.c) is
	 * offered: CPUID says so and its MSRs exist. ram_size bounds where it
	 * may lie.
	 */
	bool sbuf;
	uint64_t ram_size;
};

/*
 * Fills cfg for a model; requested_gp 0 means the model's maximum. Returns
 * -EINVAL with a message when requested_gp is out of range.
 */
int vpmu_config_init(struct vpmu_config *cfg, enum vpmu_model model, unsigned int requested_gp,
		     enum vpmu_mode mode, enum vpmu_host_vendor host, char err[VPMU_ERR_MAX]);

/* One CPUID leaf as the vPMU wants it. */
struct vpmu_cpuid_leaf {
	uint32_t function;
	uint32_t eax, ebx, ecx, edx;
};

/*
 * Adjusts the CPUID leaves the model advertises (0xA; 0x80000001 ECX bit 23;
 * 0x80000022; leaf 1 ECX PDCM; kvmprof's leaves 0x40000100-1, which offer
 * the sample buffer when cfg->sbuf): called per entry by the VMM. Clears
 * them for VPMU_MODEL_OFF.
 */
void vpmu_cpuid_adjust(const struct vpmu_config *cfg, struct vpmu_cpuid_leaf *leaf);

/* The MSR ranges a model owns, for the VMM's KVM MSR filter. */
struct vpmu_msr_range {
	uint32_t base;
	uint32_t count;
};
#define VPMU_MAX_MSR_RANGES 12
unsigned int vpmu_msr_ranges(const struct vpmu_config *cfg, struct vpmu_msr_range *out);
/* Whether an MSR lies in those ranges: the vPMU answers it. */
bool vpmu_msr_owned(const struct vpmu_config *cfg, uint32_t msr);

/* Translates a guest event select to a host event; -ENOENT if the host cannot count it. */
int vpmu_event_translate(const struct vpmu_config *cfg, unsigned int idx, uint64_t ctl,
			 struct vpmu_event *ev);

/* --- per vCPU ------------------------------------------------------------ */
struct vpmu_vcpu;

struct vpmu_backend_ops {
	const char *name;
	/* Starts a host counter for virtual counter idx; its raw count starts at 0. */
	int (*program)(struct vpmu_vcpu *v, unsigned int idx, const struct vpmu_event *ev);
	void (*release)(struct vpmu_vcpu *v, unsigned int idx);
	/* Raw counts of every programmed counter, indexed like the virtual counters. */
	int (*read)(struct vpmu_vcpu *v, uint64_t raw[VPMU_MAX_COUNTERS]);
	/* Asks for a notification after about `events` more events (0: none). Optional. */
	void (*arm)(struct vpmu_vcpu *v, unsigned int idx, uint64_t events);
};

struct vpmu_counter {
	uint64_t ctl;       /* AMD PERF_CTL / Intel PERFEVTSEL; fixed: its 4-bit FIXED_CTR_CTRL field */
	uint64_t count;     /* guest-visible value, masked to VPMU_WIDTH */
	uint64_t raw_last;  /* backend raw count at the last sync point */
	uint64_t programmed_ctl; /* ctl when the host counter was set up */
	uint64_t last_delta, last_interval; /* events and ns of the last guest run: the rate */
	bool programmed;    /* a host counter backs it */
	/*
	 * The guest may read it with RDPMC (vpmu_rdpmc_live()): from the first
	 * non-zero control (or a non-zero value written under a non-zero
	 * control) until the guest writes 0 to its value while its control is
	 * 0, or until vpmu_rdpmc_drain() finds it freed. Linux clears neither
	 * when it frees a counter, and clears an Intel fixed counter's control
	 * before its last read.
	 */
	bool live;
	/*
	 * Read with RDPMC since its control last changed, that control not
	 * enabling it: Linux's last read of a counter it frees
	 * (x86_pmu_stop: disable, then x86_perf_event_update).
	 */
	bool read_stopped;
	/*
	 * Its control last disabled it inside the guest's NMI handler (or
	 * where the VMM could not tell): a throttled event, stopped by the PMI
	 * handler, stays assigned and is read again (read(), its deletion)
	 * with no write in between. Never freed by a read until enabled again.
	 */
	bool stopped_in_nmi;
	bool unsupported;   /* the guest asked for an event the host cannot count */
	uint64_t ovf_time;  /* estimated time of a pending overflow, ns */
};

/* Whether a control value enables its counter, leaving aside any global enable (Intel's PERF_GLOBAL_CTRL). */
static inline bool vpmu_ctl_enables(unsigned int idx, uint64_t ctl)
{
	return idx >= VPMU_FIXED_BASE ? (ctl & 3) != 0 : (ctl & EVTSEL_EN) != 0;
}

#define VPMU_LATENCY_BUCKETS 12

struct vpmu_stats {
	uint64_t msr_reads, msr_writes, msr_gp;
	uint64_t overflows, pmis_injected, pmis_masked;
	uint64_t reprograms, program_failures, unsupported_events, filtered_events;
	uint64_t latency_us[VPMU_LATENCY_BUCKETS]; /* overflow to PMI injection */
	uint64_t latency_sum_ns, latency_max_ns;
	uint64_t events_past_sum, events_past_max; /* guest events past the overflow at the last sync */
	uint64_t time_enabled_ns, time_running_ns; /* host multiplexing, from the backend */
	uint64_t sbuf_records, sbuf_lost, sbuf_pmis; /* sample buffer: written, not written (full), watermark PMIs */
	uint64_t sbuf_refused; /* sample-buffer MSR writes refused with #GP */
	uint64_t rdpmcs, rdpmc_gp; /* RDPMCs served (vpmu_rdpmc), and those that raised #GP */
	uint64_t rdpmc_drained;    /* counters found freed after their last RDPMC (vpmu_rdpmc_drain) */
};

/*
 * The sample buffer of one vCPU (include/kvmprof/vpmu_sbuf.h): what the
 * guest programmed, and the producer's own copy of the ring's head (the
 * guest may write anything into the ring's control block).
 */
struct vpmu_sbuf {
	uint64_t ctl, base, size, watermark, reload;
	uint64_t guest_time; /* KP_MSR_SBUF_TIME as last written, and when (host ns) */
	uint64_t guest_time_at;
	uint64_t head, written, lost;
	uint32_t due;         /* overflows whose records the VMM has still to write */
};

struct vpmu_vcpu {
	const struct vpmu_config *cfg;
	unsigned int id;
	struct vpmu_counter ctr[VPMU_MAX_COUNTERS];
	uint64_t global_ctrl;   /* Intel PERF_GLOBAL_CTRL / AMD PerfMonV2 GLOBAL_CTL */
	uint64_t global_status; /* Intel PERF_GLOBAL_STATUS / AMD GLOBAL_STATUS */
	uint64_t fixed_ctrl;    /* Intel FIXED_CTR_CTRL */
	bool reprogram;         /* event selects changed: apply before the next entry */
	bool pmi_pending;
	uint64_t entry_time;    /* ns, at the last before_run */
	uint64_t pmi_overflow_time;
	struct vpmu_sbuf sbuf;
	const struct vpmu_backend_ops *ops;
	void *backend;
	/* Delivers a PMI to this vCPU through its LVTPC; returns false if LVTPC is masked. */
	bool (*inject_pmi)(void *ctx);
	void *pmi_ctx;
	/*
	 * Whether the guest may be inside its NMI handler at the MSR access
	 * being handled (struct vpmu_counter, stopped_in_nmi). The VMM sets it
	 * around an access it knows the state of (the emulation engine's);
	 * true otherwise: an MSR exit does not say.
	 */
	bool maybe_in_nmi;
	struct vpmu_stats stats;
};

void vpmu_vcpu_init(struct vpmu_vcpu *v, const struct vpmu_config *cfg, unsigned int id,
		    const struct vpmu_backend_ops *ops, void *backend,
		    bool (*inject_pmi)(void *ctx), void *pmi_ctx);
void vpmu_vcpu_release(struct vpmu_vcpu *v);

/* Return values of the MSR handlers. */
#define VPMU_MSR_OK 0
#define VPMU_MSR_GP 1      /* inject #GP into the guest */
#define VPMU_MSR_NOT_PMU 2 /* not a PMU MSR of this model */

int vpmu_msr_read(struct vpmu_vcpu *v, uint32_t msr, uint64_t *val);
int vpmu_msr_write(struct vpmu_vcpu *v, uint32_t msr, uint64_t val);
/*
 * RDPMC with ECX = ecx (vpmu_rdpmc.c): VPMU_MSR_OK with the counter in
 * *val, or VPMU_MSR_GP for an ECX the model has no counter for. Whether the
 * guest may execute RDPMC at all (CR4.PCE in ring 3) is the caller's to check.
 */
int vpmu_rdpmc(struct vpmu_vcpu *v, uint32_t ecx, uint64_t *val);
/*
 * Whether the guest may read a counter with RDPMC now: one of its counters
 * is live (struct vpmu_counter). An RDPMC-serving backend (the exact one,
 * through the emulation engine) keeps the vCPU where it can answer RDPMC
 * while this holds.
 */
bool vpmu_rdpmc_live(const struct vpmu_vcpu *v);
/*
 * At a point where no kernel section with interrupts off is open on the
 * vCPU (guest ring 3, or RFLAGS.IF set, and no user RDPMC allowed by
 * CR4.PCE): every live counter that is disabled and was read since it was
 * disabled, outside an NMI handler, is no longer live. That read was
 * Linux's last one of a counter it freed (x86_pmu_del); Linux reads a
 * counter again only after writing it (x86_pmu_start, x86_pmu_enable_all),
 * which makes it live again. Why the point matters: inside such a section
 * Linux may free a counter and start it again without a write before the
 * section ends (perf_adjust_freq_unthr_context: start without reload, its
 * enable deferred to perf_pmu_enable), and an NMI there reads it. Returns
 * how many it freed.
 */
unsigned int vpmu_rdpmc_drain(struct vpmu_vcpu *v);

/*
 * Before an entry: vpmu_vcpu_prepare_entry() applies pending event-select
 * changes and delivers a pending PMI; vpmu_vcpu_enter() takes the baseline
 * read (cpu-switch) and should come last, right before KVM_RUN, so that
 * little VMM work falls after it. vpmu_vcpu_before_run() does both.
 */
void vpmu_vcpu_prepare_entry(struct vpmu_vcpu *v, uint64_t now_ns);
void vpmu_vcpu_enter(struct vpmu_vcpu *v, uint64_t now_ns);
void vpmu_vcpu_before_run(struct vpmu_vcpu *v, uint64_t now_ns);
void vpmu_vcpu_after_run(struct vpmu_vcpu *v, uint64_t now_ns);
/*
 * In the middle of a run: what the backend counted so far reaches the
 * guest's counters, as after_run would bring it (a read the VMM answers
 * in place, inside a run, must see every event before it).
 */
void vpmu_vcpu_sync(struct vpmu_vcpu *v, uint64_t now_ns);

/*
 * How long from now the vCPU should be forced out of the guest so that an
 * overflow that needs a PMI is noticed near its time (the host here only
 * notices counter overflow at VM exits): ns, or 0 when nothing needs it.
 */
uint64_t vpmu_vcpu_exit_deadline(const struct vpmu_vcpu *v, uint64_t now_ns);

/* Events until counter idx overflows, if its overflow raises a PMI; 0 otherwise. */
uint64_t vpmu_counter_pmi_distance(const struct vpmu_vcpu *v, unsigned int idx);

/* Effective enable of a counter: local enable, global enable, filter. */
bool vpmu_counter_enabled(const struct vpmu_vcpu *v, unsigned int idx);

void vpmu_stats_add(struct vpmu_stats *sum, const struct vpmu_stats *s);

/* --- the sample buffer (vpmu_sbuf.c) ------------------------------------- */

/* Whether msr is a sample-buffer MSR this configuration offers. */
bool vpmu_sbuf_msr(const struct vpmu_config *cfg, uint32_t msr);
int vpmu_sbuf_msr_read(struct vpmu_vcpu *v, uint32_t msr, uint64_t *val);
/* KP_MSR_SBUF_TIME's write keeps the value; the caller stamps sbuf.guest_time_at with the host time. */
int vpmu_sbuf_msr_write(struct vpmu_vcpu *v, uint32_t msr, uint64_t val);
/* Whether an overflow of counter idx goes to the buffer (it is armed for that counter). */
bool vpmu_sbuf_takes(const struct vpmu_vcpu *v, unsigned int idx);

/*
 * Appends one sealed record (a SAMPLE) to the guest's ring, whose control
 * page is at ctl_page (this process's pointer to guest RAM at the buffer's
 * base; the data area follows it): written, or counted as lost when it does
 * not fit. Raises a PMI (pmi_pending) when the unread bytes were below the
 * watermark before this record and are at or above it after (or the
 * record did not fit): one PMI per watermark crossing.
 */
void vpmu_sbuf_put(struct vpmu_vcpu *v, uint8_t *ctl_page, const uint8_t *rec, uint32_t size, uint64_t now_ns);

/* The guest's clock at host time now_ns, as the last KP_MSR_SBUF_TIME write says. */
uint64_t vpmu_sbuf_guest_time(const struct vpmu_vcpu *v, uint64_t now_ns);

#endif
