/* SPDX-License-Identifier: MIT */
/*
 * The kvmprof sample file: one format written by the Linux agent
 * (`kvmprof-agent record`, `export`), the bundled guest's agent program and
 * (later) the VMM's guest sampler, and read by both reports.
 *
 * It is a stream, so it can be written through a serial port as it is
 * produced and read back from whatever arrived:
 *
 *   file header | record | record | ... | END record
 *
 * Every record starts with struct kp_rec_header; `size` covers header and
 * payload and is a multiple of 8, `crc` is the CRC-32 (zlib's polynomial)
 * of the header's first 8 bytes (type, size) followed by the payload with
 * its padding, and `reserved` is 0, so a corrupted byte anywhere in a
 * record is caught on read. A stream
 * without its END record was cut short: readers report it as truncated
 * instead of returning a partial profile as if it were whole.
 *
 * All integers little-endian; structures have natural alignment with
 * explicit padding, so host and freestanding guest code share them. Strings
 * are NUL-terminated inside their record; readers check that they are.
 *
 * Plain types only: this header is included by the freestanding guest.
 */
#ifndef KVMPROF_SAMPLE_FORMAT_H
#define KVMPROF_SAMPLE_FORMAT_H

#include <stdint.h>

#define KP_FILE_MAGIC "KVMPROF\0" /* 8 bytes */
#define KP_FILE_VERSION_MAJOR 1  /* readers refuse other majors */
#define KP_FILE_VERSION_MINOR 7  /* new record types bump this; readers skip unknown types */

struct kp_file_header {
	char magic[8];
	uint16_t version_major;
	uint16_t version_minor;
	uint32_t header_size; /* sizeof(struct kp_file_header); room to grow */
	uint32_t source;      /* enum kp_source: who wrote it */
	uint32_t reserved;
};

enum kp_source {
	KP_SOURCE_LINUX_AGENT = 1,   /* kvmprof-agent on a Linux system (host or guest) */
	KP_SOURCE_BUNDLED_GUEST = 2, /* the bundled guest's agent program */
	KP_SOURCE_VMM = 3,           /* kvmprof-vmm's guest sampler */
	KP_SOURCE_HOST_PROFILER = 4, /* kvmprof record: a VMM's threads from the host, and its guest's samples */
};

struct kp_rec_header {
	uint32_t type; /* enum kp_rec_type */
	uint32_t size; /* header + payload + padding, multiple of 8 */
	uint32_t crc;  /* CRC-32 of type, size, then payload and padding */
	uint32_t reserved; /* 0 */
};

/* Records can never be larger than this; a reader refuses bigger sizes. */
#define KP_REC_MAX_SIZE (1u << 20)

enum kp_rec_type {
	KP_REC_META = 1,   /* struct kp_rec_meta: one key=value string */
	KP_REC_EVENT = 2,  /* struct kp_rec_event: what samples of event_id mean */
	KP_REC_COMM = 3,   /* struct kp_rec_comm: a thread's name (also at exec) */
	KP_REC_MMAP = 4,   /* struct kp_rec_mmap: an executable mapping */
	KP_REC_FORK = 5,   /* struct kp_rec_task */
	KP_REC_EXIT = 6,   /* struct kp_rec_task */
	KP_REC_SAMPLE = 7, /* struct kp_rec_sample + callchain */
	KP_REC_KSYMS = 8,  /* struct kp_rec_ksyms: a chunk of /proc/kallsyms text */
	KP_REC_LOST = 9,   /* struct kp_rec_lost: samples the kernel dropped */
	KP_REC_END = 10,   /* struct kp_rec_end: the last record of a whole stream */
	KP_REC_KSYMS_Z = 11, /* struct kp_rec_ksyms_z: a zlib-compressed KSYMS chunk (since 1.1) */
	KP_REC_TASK_LAYOUT = 12, /* struct kp_rec_task_layout: where a Linux kernel keeps its current task (since 1.3) */
	KP_REC_VM_EXIT = 13, /* struct kp_rec_vm_exit + callchain: one VM exit and its host interval (since 1.4) */
	KP_REC_USER_STACK = 14, /* struct kp_rec_user_stack: the preceding sample's user registers and stack (since 1.5) */
	KP_REC_SAMPLES = 15, /* struct kp_rec_samples: consecutive samples, compactly encoded (since 1.6) */
};

/*
 * Well-known META keys: "hostname", "release" (uname -r), "command"
 * (what was recorded), "pmu" (what sampled: "hardware", or why not),
 * "time" (start, seconds since the epoch).
 */
#define KP_META_MAX 4096
struct kp_rec_meta {
	char text[KP_META_MAX]; /* "key=value\0"; only up to the NUL is stored */
};

#define KP_EVENT_NAME_MAX 128
#define KP_EVENT_FREQ 1u     /* `period` is a frequency in Hz */
#define KP_EVENT_FALLBACK 2u /* a software clock stands in for the event asked for */
struct kp_rec_event {
	uint32_t id;   /* samples refer to this */
	uint32_t type; /* perf_event_attr.type (PERF_TYPE_*), or 0xffffffff for the bundled guest's vPMU */
	uint64_t config;
	uint64_t period; /* events per sample, or Hz with KP_EVENT_FREQ */
	uint32_t flags;
	uint32_t reserved;
	char name[KP_EVENT_NAME_MAX]; /* as the user wrote it, NUL-terminated */
};

#define KP_COMM_MAX 16
#define KP_COMM_EXEC 1u  /* the name changed because the thread exec'd */
#define KP_COMM_GUEST 2u /* a guest's process, seen from the host (since 1.2) */
struct kp_rec_comm {
	uint32_t pid, tid;
	uint64_t time; /* ns, the same clock as samples */
	uint32_t flags;
	char comm[KP_COMM_MAX + 4]; /* NUL-terminated */
};

/*
 * An MMAP record with pid KP_PID_KERNEL maps the kernel's image (its ELF
 * file named by `filename`, e.g. "/kernel.elf" for the bundled guest):
 * kernel-mode samples resolve through it when no KSYMS records came.
 */
#define KP_PID_KERNEL 0xffffffffu
#define KP_BUILD_ID_MAX 20
#define KP_PATH_MAX 4096
struct kp_rec_mmap {
	uint32_t pid, tid;
	uint64_t time;
	uint64_t start, len, pgoff; /* pgoff in bytes, as perf's mmap record */
	uint32_t prot, flags;
	uint8_t build_id[KP_BUILD_ID_MAX];
	uint8_t build_id_size; /* 0: unknown */
	uint8_t domain;        /* enum kp_domain (since 1.2; 0 before) */
	uint8_t pad[2];
	char filename[]; /* NUL-terminated, at most KP_PATH_MAX with the NUL */
};

struct kp_rec_task {
	uint32_t pid, ppid, tid, ptid;
	uint64_t time;
};

/*
 * Whose address space a sample, mapping or process belongs to. A file
 * written inside a system (the agent, the bundled guest) is all NATIVE. A
 * host-side system-wide profile mixes the host's own samples (NATIVE: the
 * VMM's user code at CPL 3, the host kernel at CPL 0) with the guest's
 * (GUEST: guest user at CPL 3, guest kernel at CPL 0); guest pids and
 * addresses are a separate namespace from the host's.
 */
enum kp_domain {
	KP_DOMAIN_NATIVE = 0,
	KP_DOMAIN_GUEST = 1,
};

#define KP_CPL_KERNEL 0
#define KP_CPL_USER 3
#define KP_CALLCHAIN_MAX 127
struct kp_rec_sample {
	uint32_t event_id;
	uint32_t pid, tid, cpu;
	uint64_t time;
	uint64_t ip;
	uint64_t period; /* events this sample stands for (weight) */
	uint8_t cpl;     /* KP_CPL_KERNEL or KP_CPL_USER */
	uint8_t domain;  /* enum kp_domain (since 1.2; 0 before) */
	uint16_t nr_callchain; /* <= KP_CALLCHAIN_MAX, caller frames after ip */
	uint32_t reserved;
	uint64_t callchain[]; /* return addresses, innermost first */
};

/*
 * Consecutive samples in one record (since 1.6), each as the SAMPLE record
 * it stands for: readers hand them out one by one as SAMPLE records, in
 * order, where the block stood in the stream. A writer closes a block when
 * any other record comes (so the order against COMM, MMAP, USER_STACK...
 * is the order written; VM exits go into the block since 1.7, below), at a
 * flush, and at its size bounds.
 * A 1.6 stream may still hold plain SAMPLE records (ones the encoding does
 * not cover: reserved set, a CPL or domain out of range).
 *
 * Each sample is coded against the coded sample before it in the stream,
 * in this block or an earlier one (the stream's first against an all-zero
 * sample with no call chain; plain SAMPLE records play no part): blocks are
 * decoded in order, as every reader reads the stream, and a sample after
 * other records costs no more than one after a sample. Varints are LEB128 (7 bits a byte, low first, at most 10 bytes, no
 * overlong forms); zz(d) is the zigzag of a 64-bit difference d taken
 * modulo 2^64 ((d << 1) ^ (d >> 63 arithmetic)), zz32 of a 32-bit one.
 *
 *   flags: 1 byte, KP_SC_* below
 *   [EVENT]  varint event_id
 *   [TASK]   varint pid, varint zz32(tid - pid)
 *   [CPU]    varint cpu
 *   [PERIOD] varint period
 *   varint zz(time - previous time)
 *   varint zz(ip - previous ip of the same domain and CPL: 4 of them, 0 at first)
 *   [CHAIN]  varint nr (1..KP_CALLCHAIN_MAX), varint keep (<= nr and <= the
 *            previous sample's nr): the outermost `keep` frames are the
 *            previous chain's outermost `keep`; then the other nr - keep
 *            frames, innermost first, each varint zz(frame - ref), ref the
 *            ip for the first and the frame before for the others.
 *
 * Fields whose flag is clear repeat the previous sample's; cpl is
 * KP_CPL_USER with KP_SC_USER, else KP_CPL_KERNEL; domain is guest with
 * KP_SC_GUEST; no CHAIN means no call chain; reserved is 0. Exactly `count`
 * samples fill exactly `len` bytes; the padding after them is zero.
 */
#define KP_SC_EVENT 0x01u
#define KP_SC_TASK 0x02u
#define KP_SC_CPU 0x04u
#define KP_SC_PERIOD 0x08u
#define KP_SC_USER 0x10u
#define KP_SC_GUEST 0x20u
#define KP_SC_CHAIN 0x40u /* 0x80: a VM exit (since 1.7; readers of 1.6 files refuse it) */
/*
 * Since 1.7 a block holds VM exits too, each as the VM_EXIT record it
 * stands for, where it stood among the samples (a writer no longer closes
 * the block at an exit). An exit is coded against the coded exit before it
 * in the stream (the first against an all-zero exit), apart from samples:
 *
 *   flags: 1 byte, KP_XC_EXIT and the other KP_XC_* below
 *   [TASK]   varint pid, varint zz32(tid - pid)
 *   [CPU]    varint cpu, varint host_tid
 *   [KIND]   1 byte kind (<= KP_EXIT_KIND_MAX), 1 byte size
 *   [DETAIL] varint zz(detail - previous detail)
 *   varint zz(time - previous time), varint (end - time), varint zz(ip - previous ip)
 *   [CHAIN]  as a sample's, against the previous exit's chain
 *
 * cpl is KP_CPL_USER with KP_XC_USER; reserved fields are 0. `count` counts
 * samples and exits.
 */
#define KP_XC_TASK 0x01u
#define KP_XC_CPU 0x02u
#define KP_XC_KIND 0x04u
#define KP_XC_DETAIL 0x08u
#define KP_XC_USER 0x10u
#define KP_XC_CHAIN 0x20u
#define KP_XC_RESERVED 0x40u /* readers refuse it */
#define KP_XC_EXIT 0x80u
#define KP_SAMPLES_MAX 1024u /* samples in one block at most */
struct kp_rec_samples {
	uint32_t count; /* 1..KP_SAMPLES_MAX: samples, and since 1.7 exits */
	uint32_t len;   /* bytes of data, <= record payload */
	unsigned char data[];
};

struct kp_rec_ksyms {
	uint32_t seq; /* chunks are numbered from 0 and come in order */
	uint32_t len; /* bytes of text, <= record payload */
	char text[];  /* kallsyms lines; a chunk ends at a line end */
};

/*
 * The same text, compressed with zlib (RFC 1950). kallsyms is megabytes of
 * text and the agent channel is a UART (one VM exit per byte): compressed,
 * it crosses about five times faster. KSYMS and KSYMS_Z chunks share one
 * sequence. Readers hand it out decompressed, as a KSYMS record.
 */
#define KP_KSYMS_CHUNK_MAX (256u * 1024) /* raw bytes per chunk */
struct kp_rec_ksyms_z {
	uint32_t seq;
	uint32_t len;     /* compressed bytes, <= record payload */
	uint32_t raw_len; /* text bytes once inflated, <= KP_KSYMS_CHUNK_MAX */
	uint32_t reserved;
	unsigned char data[];
};

/*
 * Where a Linux kernel keeps the task each CPU runs, and the task_struct
 * fields that name it: what a VMM needs to tell a guest's processes apart
 * from outside (docs/guest-sampling.md). `kvmprof-agent export` writes one,
 * from /proc/kallsyms and the kernel's BTF (/sys/kernel/btf/vmlinux).
 *
 * x86-64 (KP_LAYOUT_LINUX_X86_64): per-CPU variables are linked at offsets
 * from 0 and CPU n's copy of one lives at __per_cpu_offset[n] + its offset
 * (the same base is GS in kernel mode). So, for CPU n:
 *
 *   task = *(u64 *)(*(u64 *)(per_cpu_offset + 8 * n) + current_task)
 *   tgid = *(s32 *)(task + task_tgid)     the process ("pid" in user space)
 *   pid  = *(s32 *)(task + task_pid)      the thread
 *   comm = task + task_comm, task_comm_size bytes, NUL-terminated
 *
 * current_task is the per-CPU offset of the `current_task` variable (Linux
 * up to 6.1 and from 6.15), or of `pcpu_hot` plus the offset of its
 * `current_task` member (6.2 to 6.14; flag KP_LAYOUT_PCPU_HOT).
 * per_cpu_offset is the kernel address of the array `__per_cpu_offset`.
 * The record describes a kernel that was running when it was written; a
 * reader that uses it against a live guest checks every number again.
 */
#define KP_LAYOUT_LINUX_X86_64 1u
#define KP_LAYOUT_PCPU_HOT 1u /* current_task is a member of pcpu_hot */
#define KP_LAYOUT_COMM_MAX 64 /* task_comm_size at most this (TASK_COMM_LEN is 16) */
struct kp_rec_task_layout {
	uint32_t kind;  /* KP_LAYOUT_LINUX_X86_64 */
	uint32_t flags; /* KP_LAYOUT_* */
	uint64_t current_task;   /* per-CPU offset of the current task pointer */
	uint64_t per_cpu_offset; /* address of __per_cpu_offset[] */
	uint32_t task_pid, task_tgid;       /* byte offsets of pid_t pid, tgid in struct task_struct */
	uint32_t task_comm, task_comm_size; /* char comm[task_comm_size] */
	uint32_t task_size;                 /* sizeof(struct task_struct): every field lies below it */
	uint32_t reserved;                  /* 0 */
};

/*
 * One VM exit the VMM handled while `kvmprof record` sampled the guest
 * (KP_SOURCE_VMM's rings, copied into the host profiler's file): what made
 * the guest exit, where the guest was, and the host interval [time, end)
 * from the end of KVM_RUN to the vCPU's next entry. Host samples of the
 * vCPU thread (host_tid) inside that interval are that exit's cost. The
 * guest fields are as in a guest SAMPLE (domain guest): pid 0 is idle or
 * unknown, the callchain is the guest's (with callgraph).
 */
enum kp_exit_kind {
	KP_EXIT_OTHER = 0,      /* detail: KVM's exit reason */
	KP_EXIT_IO_IN = 1,      /* detail: port; size: bytes */
	KP_EXIT_IO_OUT = 2,
	KP_EXIT_MMIO_READ = 3,  /* detail: guest-physical address */
	KP_EXIT_MMIO_WRITE = 4,
	KP_EXIT_MSR_READ = 5,   /* detail: MSR index */
	KP_EXIT_MSR_WRITE = 6,
	KP_EXIT_SIGNAL = 7,     /* KVM_RUN returned EINTR: a signal to the vCPU thread (the sampler's clock, a stop) */
	KP_EXIT_HLT = 8,
	KP_EXIT_KIND_MAX = KP_EXIT_HLT,
};

struct kp_rec_vm_exit {
	uint32_t pid, tid;     /* the guest process at the exit */
	uint32_t cpu;          /* vCPU index */
	uint32_t host_tid;     /* the vCPU thread */
	uint64_t time;         /* CLOCK_MONOTONIC ns: KVM_RUN returned */
	uint64_t end;          /* CLOCK_MONOTONIC ns: the vCPU entered the guest again (>= time) */
	uint64_t ip;           /* guest RIP */
	uint64_t detail;       /* see enum kp_exit_kind */
	uint8_t kind;          /* enum kp_exit_kind */
	uint8_t cpl;           /* KP_CPL_KERNEL or KP_CPL_USER */
	uint8_t size;          /* I/O and MMIO access size in bytes, else 0 */
	uint8_t reserved;
	uint16_t nr_callchain; /* <= KP_CALLCHAIN_MAX */
	uint16_t reserved2;
	uint64_t callchain[];  /* guest return addresses, innermost first */
};

/*
 * `record --call-graph dwarf`: the user-space registers and a copy of the
 * user stack at a sample, as perf's PERF_SAMPLE_REGS_USER and
 * PERF_SAMPLE_STACK_USER give them, for the report to unwind with the
 * programs' CFI (.eh_frame) where frame pointers are missing. It follows
 * its SAMPLE record directly and names the same thread and time; the
 * SAMPLE's own callchain then holds the kernel's frames only.
 */
#define KP_USER_REGS 17           /* x86-64 DWARF registers 0..16 */
#define KP_USER_STACK_MAX 65528u  /* perf's limit for sample_stack_user */
#define KP_DWARF_RSP 7
#define KP_DWARF_RIP 16
struct kp_rec_user_stack {
	uint32_t pid, tid;
	uint64_t time;
	/* rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip: DWARF's numbering, which the unwinder takes */
	uint64_t regs[KP_USER_REGS];
	uint32_t size;      /* bytes of data: the stack from regs[KP_DWARF_RSP] up, <= KP_USER_STACK_MAX */
	uint32_t reserved;  /* 0 */
	uint8_t data[];
};

struct kp_rec_lost {
	uint32_t event_id;
	uint32_t reserved;
	uint64_t lost;
};

struct kp_rec_end {
	uint64_t samples; /* SAMPLE records written, each sample of a SAMPLES block counted */
	uint64_t lost;    /* samples lost, all events */
	uint64_t records; /* records before END, each sample of a SAMPLES block counted */
	uint64_t duration_ns;
};

_Static_assert(sizeof(struct kp_file_header) == 24, "file header layout");
_Static_assert(sizeof(struct kp_rec_header) == 16, "record header layout");
_Static_assert(sizeof(struct kp_rec_event) == 160, "event record layout");
_Static_assert(sizeof(struct kp_rec_comm) == 40, "comm record layout");
_Static_assert(sizeof(struct kp_rec_mmap) == 72, "mmap record layout");
_Static_assert(sizeof(struct kp_rec_sample) == 48, "sample record layout");
_Static_assert(sizeof(struct kp_rec_task_layout) == 48, "task layout record layout");
_Static_assert(sizeof(struct kp_rec_vm_exit) == 56, "vm exit record layout");
_Static_assert(sizeof(struct kp_rec_user_stack) == 160, "user stack record layout");
_Static_assert(sizeof(struct kp_rec_samples) == 8, "sample block record layout");

#endif
