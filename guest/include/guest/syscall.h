/* SPDX-License-Identifier: MIT */
/*
 * System-call ABI of the kvmprof bundled guest, shared by the kernel
 * (guest/kernel) and the user library (guest/user/lib).
 *
 * The system-call instruction is `ud2` (0x0f 0x0b): SYSCALL/SYSRET and
 * `int n` do not work from ring 3 on the paravirtual KVM this project runs
 * on, but the #UD exception does. The kernel recognises a #UD raised by a
 * ud2 in user mode as a system call, and returns past it (RIP + 2).
 *
 *   rax = number, rdi/rsi/rdx = arguments 1..3, result in rax
 *   every other register is preserved; errors are -GUEST_Exxx values.
 *
 * To add a system call: give it the next number here, bump SYS_COUNT,
 * add its handler to the table in guest/kernel/syscall.c and a wrapper in
 * guest/user/lib/libc.c.
 */
#ifndef GUEST_SYSCALL_H
#define GUEST_SYSCALL_H

#define SYS_write 1  /* write(fd 1|2 COM1, 3 agent channel COM2; buf, len) -> bytes written */
#define SYS_exit 2   /* exit(status): never returns */
#define SYS_getpid 3 /* getpid() -> pid (1, 2, ...) */
#define SYS_yield 4  /* yield() -> 0 */
#define SYS_sleep 5  /* sleep(milliseconds) -> 0; 4 ms granularity */
#define SYS_clock 6  /* clock() -> nanoseconds since boot (monotonic) */
/* Performance counters of the calling process (see "PMU" below). */
#define SYS_pmu_info 7          /* pmu_info(struct pmu_info *) -> 0 | -ENODEV (info still filled) */
#define SYS_pmu_open 8          /* pmu_open(const struct pmu_event *, n 1..4) -> 0 */
#define SYS_pmu_start 9         /* pmu_start() -> 0: the opened counters run */
#define SYS_pmu_stop 10         /* pmu_stop() -> 0: they stop, counts kept */
#define SYS_pmu_read 11         /* pmu_read(uint64_t *counts, n) -> counters copied */
#define SYS_pmu_close 12        /* pmu_close() -> 0: counting session closed */
#define SYS_pmu_sample_start 13 /* pmu_sample_start(const struct pmu_event *, period, flags) -> 0 */
#define SYS_pmu_sample_stop 14  /* pmu_sample_stop(struct pmu_sample_stats * or NULL) -> PMIs */
#define SYS_pmu_samples 15      /* pmu_samples(uint64_t *rips, max) -> n: drains the RIP buffer */
/* Test-only (kernel command line `pmutest`), -ENOSYS otherwise. */
#define SYS_pmu_test_rdmsr 16   /* (msr, uint64_t *val) -> 0 | -EIO if it raised #GP */
#define SYS_pmu_test_wrmsr 17   /* (msr, val) -> 0 | -EIO if it raised #GP */
#define SYS_pmu_test_portio 18  /* (n 0..1000000) -> 0: n `outb` to port 0x80 from the kernel */
/* Processes. */
#define SYS_spawn 19     /* spawn(const char *path, const char *args or NULL) -> pid */
#define SYS_waitpid 20   /* waitpid(pid, int *status or NULL, flags) -> pid | 0 (WAIT_NOHANG, running) */
#define SYS_proc_list 21 /* proc_list(struct proc_info *, max) -> entries copied */
/* System-wide sampling: every CPU, every process and the kernel ("PMU" below). */
#define SYS_pmu_all_start 22 /* pmu_all_start(const struct pmu_event *, period, flags) -> CPUs sampling */
#define SYS_pmu_all_stop 23  /* pmu_all_stop(struct pmu_all_stats * or NULL) -> PMIs */
#define SYS_pmu_all_read 24  /* pmu_all_read(struct pmu_record *, max) -> n: drains the records */
#define SYS_pmu_all_read_buf 25 /* pmu_all_read_buf(void *, bytes) -> bytes: drains the sample buffers' records */
/* Test-only, as 16-18. */
#define SYS_pmu_test_rdpmc 26 /* (ecx, uint64_t *val) -> 0 | -EIO if it raised #GP: RDPMC in ring 0 */
#define SYS_COUNT 27 /* one more than the highest number */

/* write() file descriptors */
#define GUEST_FD_AGENT 3 /* COM2, the agent channel (kvmprof-vmm --agent-channel) */

/* Error numbers (returned negated), Linux values. */
#define GUEST_ENOENT 2
#define GUEST_ESRCH 3
#define GUEST_EIO 5
#define GUEST_E2BIG 7
#define GUEST_ENOEXEC 8
#define GUEST_EBADF 9
#define GUEST_EFAULT 14
#define GUEST_EBUSY 16
#define GUEST_ENODEV 19
#define GUEST_EINVAL 22
#define GUEST_ENOSYS 38

/* User address space: programs link at 0x40000000, stack ends at 0x7fff0000. */
#define GUEST_USER_BASE 0x40000000UL
#define GUEST_USER_END 0x80000000UL
#define GUEST_USER_STACK_TOP 0x7fff0000UL
#define GUEST_USER_STACK_SIZE 0x10000UL

/*
 * PMU. Each process has its own virtual counters: the kernel saves and
 * restores them when it switches processes, on any CPU. A counting session
 * holds up to PMU_MAX_EVENTS events; independently, one event can be
 * sampled: the counter is armed to overflow every `period` events, each
 * overflow interrupt (a PMI, delivered as an NMI) is counted, the
 * interrupted user RIP recorded (the first PMU_SAMPLE_BUF of them until
 * drained by pmu_samples), and the counter re-armed. Errors: -ENODEV no
 * PMU, -EINVAL bad arguments or no free counter, -EFAULT bad pointer.
 */
#define PMU_MAX_EVENTS 4
#define PMU_SAMPLE_BUF 64
#define PMU_PERIOD_MIN 1000ULL
#define PMU_PERIOD_MAX 0x7fffffffULL

/* struct pmu_event.kind */
#define PMU_RAW 0          /* event select `event` (AMD: 12 bits), `umask` */
#define PMU_INSTRUCTIONS 1 /* named architectural events, mapped per model */
#define PMU_CYCLES 2
#define PMU_BRANCHES 3
#define PMU_BRANCH_MISSES 4
#define PMU_LLC_REFS 5   /* Intel model only */
#define PMU_LLC_MISSES 6 /* Intel model only */
#define PMU_KIND_MAX 6

/* struct pmu_event.flags: at least one of USR, OS */
#define PMU_USR 0x01   /* count in user mode (ring 3) */
#define PMU_OS 0x02    /* count in kernel mode (ring 0) */
#define PMU_NOFIXED 0x04 /* Intel: use a general-purpose counter, not a fixed one */
#define PMU_FLAGS_ALL 0x07

struct pmu_event {
	unsigned int kind;
	unsigned short event;
	unsigned char umask;
	unsigned char flags;
};

/* pmu_sample_start flags (pmu_all_start: also PMU_ALL_*) */
#define PMU_SAMPLE_KEEP_OVERSHOOT 0x01 /* re-arm with period - overshoot (as Linux does) */
/*
 * pmu_all_start: use the VMM's sample buffer when CPUID offers it
 * (include/kvmprof/vpmu_sbuf.h): the VMM writes each sample, a PMI comes
 * only per watermark crossing, and pmu_all_read_buf drains the records.
 * Without the offer, the PMI path (pmu_all_read); pmu_all_stop says which.
 */
#define PMU_ALL_BUFFER 0x02
#define PMU_ALL_CALLCHAIN 0x04 /* with the buffer: frame-pointer call stacks (-EINVAL without it) */

struct pmu_sample_stats {
	unsigned long pmis;           /* PMIs (overflows) taken */
	unsigned long recorded;       /* RIPs recorded since the start */
	unsigned long overshoot_sum;  /* events counted past the overflow, summed */
	unsigned long overshoot_max;
};

/*
 * System-wide sampling (pmu_all_*). One event is sampled on every CPU, in
 * user and kernel mode (flags PMU_USR, PMU_OS) and in the idle loop,
 * independently of the per-process counters: it uses the last
 * general-purpose counter, which per-process sessions then never get (the
 * PMU needs at least PMU_SLOTS_ALL_MIN of them, else -EBUSY). Each PMI
 * appends a struct pmu_record to its CPU's ring of PMU_ALL_RING records
 * (the NMI handler is the only writer of its CPU's ring); a full ring drops
 * the record and counts it. pmu_all_read drains the rings of all CPUs (a
 * process may drain while sampling runs, which is how a long run avoids
 * drops). pmu_all_start resets rings and statistics; -EBUSY if system-wide
 * sampling already runs. pmu_all_stop returns when every CPU has stopped
 * its counter; the records stay until drained or the next start.
 */
#define PMU_ALL_RING 4096     /* records per CPU */
#define PMU_SLOTS_ALL_MIN 6   /* general-purpose counters system-wide sampling needs */

struct pmu_record {
	unsigned long rip;  /* interrupted instruction: user or kernel address */
	unsigned long time; /* ns, the clock() clock */
	unsigned int pid;   /* current process, 0 when the CPU was idle */
	unsigned short cpu;
	unsigned char cpl;  /* 0 kernel, 3 user */
	unsigned char reserved;
};

struct pmu_all_stats {
	unsigned long pmis;    /* overflows handled, all CPUs */
	unsigned long records; /* records written to the rings */
	unsigned long drops;   /* records lost to a full ring */
	unsigned long cpus;    /* CPUs that sampled */
	unsigned long late;    /* of the PMIs: overflows whose PMI never came, taken at a tick */
	unsigned long buffered; /* 1: the VMM's sample buffer sampled (pmis: its watermark PMIs) */
	unsigned long throttled; /* times a CPU's PMI budget ran out: its counter stopped until the next tick */
};

/*
 * Processes. spawn starts an initrd program (path, then `args` split at
 * spaces into at most 14 arguments, each string within PROC_ARGS_MAX bytes
 * in all): -ENOENT not in the initrd, -E2BIG too many or too long
 * arguments, -ENOEXEC not a valid executable or no memory or process slot.
 * waitpid(pid, status, 0) waits for pid to exit (any process may wait for
 * any pid; exited processes are remembered, see proc_list); with
 * WAIT_NOHANG it returns 0 at once if pid still runs. -ESRCH: no such pid
 * (never started, or forgotten). proc_list copies the process table: entry
 * 0 is the kernel (pid 0, path "/kernel.elf", its text), then the last
 * PROC_HISTORY processes started, running or exited, in pid order.
 */
#define WAIT_NOHANG 1
#define PROC_ARGS_MAX 256
#define PROC_HISTORY 64
#define PROC_PATH_MAX 64
#define PROC_COMM_MAX 16

/* struct proc_info.state */
#define PROC_RUNNING 1
#define PROC_EXITED 2

struct proc_info {
	unsigned int pid;
	unsigned int state;
	int status;            /* exit status once PROC_EXITED */
	unsigned int reserved;
	unsigned long start_ns, exit_ns; /* clock() times; exit_ns 0 while running */
	unsigned long text_start, text_end; /* the executable PT_LOAD segment: [start, end) */
	unsigned long text_offset;          /* its file offset (p_offset) */
	char comm[PROC_COMM_MAX];           /* the path's last component */
	char path[PROC_PATH_MAX];           /* as given to spawn (or start=) */
};

/* struct pmu_info.model */
#define PMU_MODEL_NONE 0
#define PMU_MODEL_INTEL 1 /* architectural perfmon (CPUID 0xA) */
#define PMU_MODEL_AMD 2   /* PerfCtrCore (+ PerfMonV2) */

struct pmu_info {
	unsigned int model;
	unsigned int version;    /* Intel: perfmon version; AMD: 2 with PerfMonV2, else 1 */
	unsigned int gp;         /* general-purpose counters */
	unsigned int fixed;      /* Intel fixed counters */
	unsigned int width;      /* counter bits */
	unsigned int full_width; /* Intel: IA32_A_PMCx writes available */
	unsigned int test;       /* `pmutest` on the command line */
	unsigned int reserved;
};

#endif
