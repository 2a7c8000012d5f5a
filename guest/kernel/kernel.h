/* SPDX-License-Identifier: MIT */
/* Guest kernel internals. */
#ifndef GUEST_KERNEL_H
#define GUEST_KERNEL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <guest/format.h>
#include <guest/string.h>
#include <guest/syscall.h>

#include "layout.h"

#define PAGE_SIZE 4096UL
#define MAX_PROCS 32
#define MAX_REGIONS 8
#define PROC_NAME_MAX PROC_PATH_MAX /* the path, as the process table gives it */
#define PANIC_STATUS 255

struct trapframe {
	uint64_t r15, r14, r13, r12, r11, r10, r9, r8;
	uint64_t rbp, rdi, rsi, rdx, rcx, rbx, rax;
	uint64_t vector, err;
	uint64_t rip, cs, rflags, rsp, ss; /* pushed by the CPU */
};

struct tss {
	uint32_t reserved0;
	uint64_t rsp0, rsp1, rsp2;
	uint64_t reserved1;
	uint64_t ist[7];
	uint64_t reserved2;
	uint16_t reserved3;
	uint16_t iomap_base;
} __attribute__((packed));

struct proc;
_Static_assert(sizeof(struct trapframe) == TRAPFRAME_SIZE, "trap frame");

/* Lives at the base of the CPU's CPU_BLOCK_SIZE-aligned stack block. */
struct cpu {
	int id;
	uint32_t apic_id;
	struct proc *cur;
	uint64_t ticks;
	uint64_t user_ticks; /* ticks that interrupted user mode */
	volatile int online;
	struct tss tss;
	/* PMU (pmu.c): whose counters are on this CPU's hardware, NMI interlock */
	struct proc *pmu_loaded;
	volatile int pmu_busy;     /* pmu.c is touching the counters: NMIs defer */
	volatile int pmu_deferred; /* an NMI arrived while busy */
	uint64_t pmu_deferred_rip, pmu_deferred_cs; /* what it interrupted */
	uint8_t pmu_all_on;        /* system-wide sampling's counter is armed here */
	uint8_t pmu_all_throttled; /* ... and stopped until the next tick (pmu_throttle.c) */
	uint32_t pmu_tick_pmis;    /* sampling PMIs since the last tick (pmu_throttle.c) */
	uint32_t pmu_tick_timer;   /* the timer's count at the last of them */
	uint8_t pmu_tick_early;    /* one of them saw the timer expire before its tick was taken */
	volatile unsigned int pmu_all_gen; /* pmu_all.c: the configuration this CPU applied */
	uint64_t nmis;
	uint64_t pmu_all_nmis_seen; /* nmis at the last sampling watchdog tick */
};

struct region {
	uint64_t start, end; /* user virtual, [start, end) */
};

/* One virtual counter of a process (pmu.c). */
struct pmu_slot {
	uint8_t used, running;
	uint8_t hw;        /* 0..7 general purpose, PMU_HW_FIXED + i fixed */
	uint64_t ctl;      /* GP: event select without EN; fixed: its 4-bit field */
	uint64_t total;    /* counting: events so far (hardware restarts at 0 on each load) */
	uint64_t remaining; /* sampling: events until the next overflow */
};
#define PMU_HW_FIXED 8
#define PMU_SLOTS (PMU_MAX_EVENTS + 1) /* the last one samples */
#define PMU_SAMPLE_SLOT PMU_MAX_EVENTS

struct pmu_proc {
	struct pmu_slot slot[PMU_SLOTS];
	int nevents;
	uint64_t period;
	unsigned int sflags;
	struct pmu_sample_stats st;
	int nrips;
	uint64_t rips[PMU_SAMPLE_BUF];
};

enum proc_state { P_UNUSED, P_RUNNABLE, P_RUNNING, P_SLEEPING };

struct proc {
	enum proc_state state;
	int pid;
	uint64_t cr3;
	uint64_t *pd; /* page directory of the 1-2 GiB user region */
	int pd_lo, pd_hi; /* pd[pd_lo..pd_hi] may be present */
	uint64_t wake_ns;
	struct trapframe tf;
	int nregions;
	struct region regions[MAX_REGIONS];
	char name[PROC_NAME_MAX];
	uint64_t text_start, text_end, text_offset; /* elf.c: the executable segment */
	struct pmu_proc pmu;
};

extern char cpu_blocks[];
extern uint64_t boot_pml4[];
extern uint64_t boot_pd_low[];
extern uint64_t boot_pd_apic[];
extern uint64_t gdt[];
extern uint64_t ap_boot_stack;
extern const uint64_t isr_table[];
extern char isr_spurious[];
extern char tramp_start[], tramp_end[];
extern char _kernel_start[], _kernel_end[], _etext[];
extern int quiet;

/* assembly */
void trap_return(struct trapframe *tf) __attribute__((noreturn));
void idle_halt(uint64_t stack_top) __attribute__((noreturn));

/* lib.c (strlen, strcmp, strncmp, memcmp: <guest/string.h>) */
void *memcpy(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void page_zero(void *page);
int parse_uint(const char *s, size_t n, uint64_t *out);

/* console.c (vsnprintf, snprintf: <guest/format.h>) */
void console_write(const char *s, size_t n);
void kprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void kinfo(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void panic(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void poweroff(uint32_t status) __attribute__((noreturn));
/* The console's bytes without its lock: for the last words of a CPU that powers off or panics. */
void console_write_unlocked(const char *s, size_t n);

/* acpi.c: the standard power-off (ACPI S5), for machines without kvmprof-vmm's exit port */
extern int acpi_poweroff_only;
void acpi_init(uint64_t rsdp_pa);
void acpi_poweroff(uint32_t status);

/* mm.c */
void mm_add_ram(uint64_t start, uint64_t end);
void mm_reserve(uint64_t start, uint64_t end);
void *page_alloc(void);
void page_free(void *page);
int as_create(struct proc *p);
void *as_map_page(struct proc *p, uint64_t va);
void as_destroy(struct proc *p);
int user_range_ok(const struct proc *p, uint64_t addr, uint64_t len);

/* elf.c */
int elf_load(struct proc *p, const void *image, size_t size, uint64_t *entry);

/* smp.c */
struct cpu *cpu_get(int id);
int ncpus_online(void);
void cpu_init(struct cpu *c);
void smp_boot(int maxcpus);
void lapic_eoi(void);
void boot_timer_start(void);
void timers_start(void);
uint64_t clock_ns(void); /* nanoseconds since the timers started, monotonic across CPUs */
/*
 * The same, and the timer's current count (counting down from a tick's
 * length to 0): the count goes up when the timer expired, whether or not
 * its tick could be taken yet.
 */
uint64_t clock_ns_timer(uint32_t *timer);
uint32_t lapic_id(void);
void smp_kick_others(void);

/* trap.c */
void idt_init(void);
void trap(struct trapframe *tf);

/* sched.c */
int proc_alloc_pid(void);
int proc_spawn(const char *path, int argc, char *const *argv);
int proc_wait(int pid, int *status); /* 1 exited (status set), 0 running, -GUEST_ESRCH */
int proc_list(struct proc_info *out, int max);
void proc_record_failure(int pid, int status);
void sched_tick(struct cpu *c, struct trapframe *tf);
void sched_idle_tick(struct cpu *c, struct trapframe *tf);
void sched_yield(struct cpu *c, struct trapframe *tf);
void sched_sleep(struct cpu *c, struct trapframe *tf, uint64_t ns);
void sched_exit(struct cpu *c, int status) __attribute__((noreturn));
void cpu_idle(void) __attribute__((noreturn));
void cpu_idle_body(void) __attribute__((noreturn));
int sched_nlive(void);
void syscall_dispatch(struct cpu *c, struct trapframe *tf);
void sys_spawn(struct cpu *c, struct trapframe *tf);
void sys_waitpid(struct cpu *c, struct trapframe *tf);
void sys_proc_list(struct cpu *c, struct trapframe *tf);

/* pmu.c */
void pmu_init(void);          /* BSP: detect by CPUID, print the model */
void pmu_cpu_init(void);      /* every CPU: LVTPC to NMI */
void pmu_proc_reset(struct proc *p);
void pmu_switch_out(struct cpu *c, struct proc *p, uint64_t user_rip);
void pmu_switch_in(struct cpu *c, struct proc *p);
void pmu_exit(struct cpu *c, struct proc *p);
void pmu_nmi(struct cpu *c, struct trapframe *tf);
int pmu_fixup(struct trapframe *tf); /* #GP at a safe RDMSR/WRMSR: resume at the fixup */
void sys_pmu_info(struct cpu *c, struct trapframe *tf);
void sys_pmu_open(struct cpu *c, struct trapframe *tf);
void sys_pmu_start(struct cpu *c, struct trapframe *tf);
void sys_pmu_stop(struct cpu *c, struct trapframe *tf);
void sys_pmu_read(struct cpu *c, struct trapframe *tf);
void sys_pmu_close(struct cpu *c, struct trapframe *tf);
void sys_pmu_sample_start(struct cpu *c, struct trapframe *tf);
void sys_pmu_sample_stop(struct cpu *c, struct trapframe *tf);
void sys_pmu_samples(struct cpu *c, struct trapframe *tf);

/* pmu_all.c: system-wide sampling */
void pmu_all_tick(struct cpu *c, struct trapframe *tf); /* timer tick: unthrottles, takes a lost PMI's overflow */
void pmu_all_poll(struct cpu *c); /* applies a new configuration on this CPU (IPI, tick) */
void sys_pmu_all_start(struct cpu *c, struct trapframe *tf);
void sys_pmu_all_stop(struct cpu *c, struct trapframe *tf);
void sys_pmu_all_read(struct cpu *c, struct trapframe *tf);
void sys_pmu_all_read_buf(struct cpu *c, struct trapframe *tf);
/* pmu_sbuf.c: a pmubuf= command-line option (guest/README.md); -1 if tok is none or its value is bad. */
int pmu_sbuf_option(const char *tok, size_t n);
/* pmu_throttle.c: the pmu_max_rate= option (guest/README.md); -1 if its value is bad. */
int pmu_throttle_option(const char *tok, size_t n);

/* pmu_test.c: test-only system calls for pmutest, enabled by the command line */
extern int pmu_test_enabled;
void sys_pmu_test_rdmsr(struct cpu *c, struct trapframe *tf);
void sys_pmu_test_wrmsr(struct cpu *c, struct trapframe *tf);
void sys_pmu_test_portio(struct cpu *c, struct trapframe *tf);
void sys_pmu_test_rdpmc(struct cpu *c, struct trapframe *tf);

/* agent.c: the agent channel (COM2) */
long agent_write(const void *buf, size_t len);

/* vmm_desc.c: the guest descriptor for kvmprof-vmm's sampler (kvmprof/guest_desc.h) */
extern int vmm_desc_test;
struct kp_guest_desc;
extern const struct kp_guest_desc kvmprof_guest_desc; /* KP_GDESC_SYMBOL */
void vmm_desc_register(void);

/* msr.S: RDMSR/WRMSR that return -GUEST_EIO instead of dying on #GP */
int msr_read_safe(uint32_t msr, uint64_t *val);
int rdpmc_safe(uint32_t ecx, uint64_t *val);
int msr_write_safe(uint32_t msr, uint64_t val);
extern char msr_read_insn[], msr_write_insn[], rdpmc_insn[], msr_safe_fixup[];

/* initrd access (main.c) */
int initrd_find(const char *path, const void **data, size_t *size);

static inline struct cpu *this_cpu(void)
{
	uint64_t sp;
	__asm__ volatile("mov %%rsp, %0" : "=r"(sp));
	return (struct cpu *)(sp & ~(uint64_t)(CPU_BLOCK_SIZE - 1));
}

static inline uint64_t cpu_stack_top(const struct cpu *c)
{
	return (uint64_t)c + CPU_BLOCK_SIZE;
}

static inline void outb(uint16_t port, uint8_t v)
{
	__asm__ volatile("outb %0, %1" : : "a"(v), "Nd"(port));
}
static inline void outl(uint16_t port, uint32_t v)
{
	__asm__ volatile("outl %0, %1" : : "a"(v), "Nd"(port));
}
static inline uint8_t inb(uint16_t port)
{
	uint8_t v;
	__asm__ volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}
static inline void write_cr3(uint64_t v)
{
	__asm__ volatile("mov %0, %%cr3" : : "r"(v) : "memory");
}
static inline uint64_t read_cr2(void)
{
	uint64_t v;
	__asm__ volatile("mov %%cr2, %0" : "=r"(v));
	return v;
}
static inline uint64_t rdmsr(uint32_t msr)
{
	uint32_t lo, hi;
	__asm__ volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
	return ((uint64_t)hi << 32) | lo;
}
static inline void wrmsr(uint32_t msr, uint64_t v)
{
	__asm__ volatile("wrmsr" : : "c"(msr), "a"((uint32_t)v), "d"((uint32_t)(v >> 32)) : "memory");
}
static inline void cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4])
{
	__asm__ volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(sub));
}
static inline void cpu_relax(void)
{
	__asm__ volatile("pause" ::: "memory");
}

static inline void spin_lock(volatile int *l)
{
	while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
		while (*l)
			cpu_relax();
}
static inline int spin_trylock_bounded(volatile int *l, long tries)
{
	while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE)) {
		if (--tries <= 0)
			return 0;
		cpu_relax();
	}
	return 1;
}
static inline void spin_unlock(volatile int *l)
{
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

static inline volatile uint32_t *lapic_reg(uint32_t off)
{
	return (volatile uint32_t *)(KVMPROF_LAPIC_BASE + off);
}
static inline uint32_t lapic_read(uint32_t off)
{
	return *lapic_reg(off);
}
static inline void lapic_write(uint32_t off, uint32_t v)
{
	*lapic_reg(off) = v;
}

#endif
