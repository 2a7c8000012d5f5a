/* SPDX-License-Identifier: MIT */
/*
 * agent [-e EVENT] [-c PERIOD] [-u | -k] [-n] [-I] [-g] [-D] [PROG[+ARG...]]...: the
 * bundled guest's profiling agent, like `kvmprof-agent record -a` on Linux.
 *
 * Samples EVENT (cycles by default; instructions, branches, branch-misses,
 * llc-refs, llc-misses, or rUUEE: raw event select EE, unit mask UU, with
 * bits 16-19 the high event bits on AMD) every PERIOD events (1000000) on
 * every CPU, in user and kernel mode (-u: user only, -k: kernel only),
 * runs the programs (default /bin/matmul and /bin/hash; `+` separates a
 * program's arguments, since the kernel command line splits words at
 * spaces and start= at `:`), waits for them, stops, and writes a kvmprof
 * sample file (include/kvmprof/sample_format.h) to the agent channel:
 *
 *   header, META pmu/command/release (and throttled, if it was), EVENT,
 *   COMM + MMAP per process (and for the kernel: MMAP of pid
 *   KP_PID_KERNEL, "/kernel.elf"), the samples
 *   in compact SAMPLES blocks (lib/format/sample_block.c, the host's own coder:
 *   about 8 bytes a sample instead of 64, each byte a VM exit),
 *   EXIT per exited process, LOST if records were dropped, END.
 *
 * The file's paths are the guest's ("/bin/matmul"): `kvmprof-agent report
 * --guest-root build/guest` finds them under build/guest/bin/.
 *
 * Samples are kept in memory until the end and the stream written after
 * the workloads, so that writing (a VM exit per port access) does not
 * disturb what is measured. Prints one summary line on the console:
 *   agent: samples=N lost=N pmis=N late=N cpus=N processes=N bytes=N ms=N.NNN throttled=N
 * (late: PMIs that never came, whose overflows the kernel took at a tick;
 * ms: the workload phase's guest time, from the first spawn to the last exit;
 * throttled: times a CPU used up its PMI budget for a tick and the kernel
 * stopped its counter until the next, guest/kernel/pmu_throttle.c: PMI path
 * only, and then also the file's META throttled)
 * Samples go through the VMM's sample buffer when the VMM offers one
 * (include/kvmprof/vpmu_sbuf.h: the VMM writes each sample record, a PMI
 * comes per watermark crossing; the records are copied into the stream as
 * they are), else a PMI each; -I forces the PMI path, -g records call
 * stacks (buffer only). The summary line ends in buffer=1 or buffer=0.
 * -D drains only after the run (tests: a buffer that fills, exact losses).
 * -n runs and times the programs the same way without sampling and writes
 * nothing to the channel (all counts 0): the baseline of the overhead
 * benchmark (bench/agent.sh).
 * Exit status: 0, 1 no PMU or sampling refused, 2 usage.
 */
#include <guest/crc32.h>
#include <kvmprof/sample_block.h>
#include <kvmprof/sample_format.h>

#include <stdbool.h>

#include "libc.h"

#define MAX_PROGS 8
#define MAX_RECORDS 65536 /* samples kept; more are counted as lost */
#define RAW_BYTES (16u << 20) /* the sample buffer's records kept, as they came; more are counted as lost */
#define RAW_SPILL 4096        /* what a full store reads at a time, to count and drop */
#define DRAIN_MS 50       /* rings hold PMU_ALL_RING per CPU: drain well before */
#define OUT_CHUNK 16384   /* bytes per write() to the channel */
#define EVENT_TYPE_GUEST 0xffffffffu

static struct pmu_record recs[MAX_RECORDS];
static long nrecs, overflowed;
static unsigned char raw[RAW_BYTES] __attribute__((aligned(8)));
static uint64_t raw_len, raw_samples;
static struct proc_info procs[PROC_HISTORY + 1];

/* ---- options --------------------------------------------------------------- */

struct prog {
	const char *path;
	char args[PROC_ARGS_MAX];
	int pid;
};

static struct {
	struct pmu_event ev;
	char event_name[KP_EVENT_NAME_MAX];
	uint64_t period;
	struct prog progs[MAX_PROGS];
	int nprogs;
	char command[512];
	bool no_sampling;
	bool pmi_path;  /* -I: a PMI per sample even where the VMM offers its buffer */
	bool callchain; /* -g */
	bool drain_at_end; /* -D */
} opt;

static int parse_event(const char *s, struct pmu_event *ev)
{
	static const struct {
		const char *name;
		unsigned int kind;
	} names[] = {
		{ "cycles", PMU_CYCLES },		{ "instructions", PMU_INSTRUCTIONS },
		{ "branches", PMU_BRANCHES },		{ "branch-misses", PMU_BRANCH_MISSES },
		{ "llc-refs", PMU_LLC_REFS },		{ "llc-misses", PMU_LLC_MISSES },
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcmp(s, names[i].name)) {
			ev->kind = names[i].kind;
			return 0;
		}
	}
	if (s[0] != 'r' || !s[1])
		return -1;
	unsigned long v = 0;
	for (const char *p = s + 1; *p; p++) {
		int d = *p >= '0' && *p <= '9' ? *p - '0' :
			*p >= 'a' && *p <= 'f' ? *p - 'a' + 10 :
			*p >= 'A' && *p <= 'F' ? *p - 'A' + 10 : -1;
		if (d < 0 || v >> 20)
			return -1;
		v = v << 4 | (unsigned long)d;
	}
	if (v >> 20)
		return -1;
	ev->kind = PMU_RAW;
	ev->event = (unsigned short)((v & 0xff) | ((v >> 16) & 0xf) << 8);
	ev->umask = (unsigned char)(v >> 8);
	return 0;
}

static int usage(void)
{
	printf("usage: agent [-e EVENT] [-c PERIOD] [-u | -k] [-n] [-I] [-g] [-D] [PROG[+ARG...]]...\n");
	return 2;
}

static int parse_args(int argc, char **argv)
{
	opt.ev.kind = PMU_CYCLES;
	opt.ev.flags = PMU_USR | PMU_OS;
	memcpy(opt.event_name, "cycles", 7);
	opt.period = 1000000;
	size_t n = 0;
	for (int i = 0; i < argc; i++)
		n += (size_t)snprintf(opt.command + n, n < sizeof(opt.command) ? sizeof(opt.command) - n : 0,
				      "%s%s", i ? " " : "", argv[i]);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-e") && i + 1 < argc) {
			a = argv[++i];
			if (parse_event(a, &opt.ev) || strlen(a) >= KP_EVENT_NAME_MAX) {
				printf("agent: unknown event '%s' (cycles, instructions, branches, "
				       "branch-misses, llc-refs, llc-misses, rUUEE)\n", a);
				return -1;
			}
			memcpy(opt.event_name, a, strlen(a) + 1);
		} else if (!strcmp(a, "-c") && i + 1 < argc) {
			long p = atol_def(argv[++i], -1);
			if (p < (long)PMU_PERIOD_MIN || p > (long)PMU_PERIOD_MAX) {
				printf("agent: period '%s': must be %llu..%llu\n", argv[i], PMU_PERIOD_MIN,
				       PMU_PERIOD_MAX);
				return -1;
			}
			opt.period = (uint64_t)p;
		} else if (!strcmp(a, "-u")) {
			opt.ev.flags = PMU_USR;
		} else if (!strcmp(a, "-k")) {
			opt.ev.flags = PMU_OS;
		} else if (!strcmp(a, "-n")) {
			opt.no_sampling = true;
		} else if (!strcmp(a, "-I")) {
			opt.pmi_path = true;
		} else if (!strcmp(a, "-g")) {
			opt.callchain = true;
		} else if (!strcmp(a, "-D")) {
			opt.drain_at_end = true;
		} else if (a[0] == '/' && opt.nprogs < MAX_PROGS) {
			struct prog *p = &opt.progs[opt.nprogs++];
			char *plus = (char *)a;
			while (*plus && *plus != '+')
				plus++;
			if (*plus) { /* path+arg+arg: the arguments, with spaces */
				*plus++ = '\0';
				size_t len = strlen(plus);
				if (len >= sizeof(p->args))
					return -1;
				for (size_t j = 0; j <= len; j++)
					p->args[j] = plus[j] == '+' ? ' ' : plus[j];
			}
			p->path = a;
		} else {
			return -1;
		}
	}
	if (opt.pmi_path && opt.callchain) {
		printf("agent: -g needs the sample buffer: not with -I\n");
		return -1;
	}
	if (!opt.nprogs) {
		opt.progs[0].path = "/bin/matmul";
		opt.progs[1].path = "/bin/hash";
		opt.nprogs = 2;
	}
	return 0;
}

/* ---- sampling -------------------------------------------------------------- */

/* Records in n bytes of whole records. */
static uint64_t count_records(const unsigned char *p, uint64_t n)
{
	uint64_t k = 0;
	for (uint64_t off = 0; off + sizeof(struct kp_rec_header) <= n; k++) {
		const struct kp_rec_header *h = (const struct kp_rec_header *)(p + off);
		if (h->size < sizeof(*h))
			break;
		off += h->size;
	}
	return k;
}

/*
 * The sample buffer's records: kept as they are, for the stream. One read
 * while sampling runs: the reading itself is sampled (emulated ring 0 is
 * slow), so reading until the buffers are empty could go on for ever; after
 * the stop, until they are.
 */
static void drain_buffer(bool until_empty)
{
	static unsigned char spill[RAW_SPILL] __attribute__((aligned(8)));
	for (bool again = true; again; again = until_empty) {
		uint64_t room = RAW_BYTES - raw_len;
		bool keep = room >= RAW_SPILL; /* a record is at most ~1 KiB */
		long n = keep ? pmu_all_read_buf(raw + raw_len, (long)room) : pmu_all_read_buf(spill, RAW_SPILL);
		if (n <= 0)
			return;
		uint64_t k = count_records(keep ? raw + raw_len : spill, (uint64_t)n);
		if (keep) {
			raw_len += (uint64_t)n;
			raw_samples += k;
		} else {
			overflowed += (long)k;
		}
	}
}

static void drain(bool until_empty)
{
	drain_buffer(until_empty);
	for (;;) {
		long room = MAX_RECORDS - nrecs;
		static struct pmu_record spill[256];
		long n = room > 0 ? pmu_all_read(recs + nrecs, room) : pmu_all_read(spill, 256);
		if (n <= 0)
			return;
		if (room > 0)
			nrecs += n;
		else
			overflowed += n;
	}
}

/* ---- the sample stream ----------------------------------------------------- */

static unsigned char out[OUT_CHUNK];
static size_t out_len;
static uint64_t out_bytes, out_records, out_samples;

static void flush(void)
{
	if (out_len)
		write(GUEST_FD_AGENT, out, out_len);
	out_bytes += out_len;
	out_len = 0;
}

static void put(const void *p, size_t n)
{
	const unsigned char *s = p;
	while (n) {
		size_t k = sizeof(out) - out_len < n ? sizeof(out) - out_len : n;
		memcpy(out + out_len, s, k);
		out_len += k;
		s += k;
		n -= k;
		if (out_len == sizeof(out))
			flush();
	}
}

/* One record: payload of len bytes, then tail (a string, may be NULL), zero padded to 8. */
static void emit(uint32_t type, const void *payload, size_t len, const char *tail)
{
	static const unsigned char zeros[8];
	size_t tlen = tail ? strlen(tail) + 1 : 0, body = len + tlen, pad = (8 - body % 8) % 8;
	struct kp_rec_header h = { .type = type, .size = (uint32_t)(sizeof(h) + body + pad) };
	uint32_t crc = crc32_update(0, &h, 8); /* type and size, then the payload */
	crc = crc32_update(crc32_update(crc32_update(crc, payload, len), tail, tlen), zeros, pad);
	h.crc = crc;
	put(&h, sizeof(h));
	put(payload, len);
	put(tail, tlen);
	put(zeros, pad);
	out_records++;
}

static struct kp_sample_block block;

/* The samples gathered in `block` as one SAMPLES record; END counts each of them as a record. */
static void emit_block(void)
{
	uint32_t n = kp_sample_block_count(&block);

	if (!n)
		return;
	emit(KP_REC_SAMPLES, &block.payload, kp_sample_block_len(&block), NULL);
	out_records += n - 1;
	kp_sample_block_clear(&block);
}

static void emit_meta(const char *key, const char *value)
{
	char kv[KP_META_MAX];
	snprintf(kv, sizeof(kv), "%s=%s", key, value);
	emit(KP_REC_META, kv, 0, kv);
}

static void emit_comm(unsigned int pid, uint64_t time, const char *comm)
{
	struct kp_rec_comm c = { .pid = pid, .tid = pid, .time = time, .flags = KP_COMM_EXEC };
	size_t n = strlen(comm);
	memcpy(c.comm, comm, n < KP_COMM_MAX ? n : KP_COMM_MAX);
	emit(KP_REC_COMM, &c, sizeof(c), NULL);
}

static void emit_mmap(unsigned int pid, const struct proc_info *p)
{
	struct kp_rec_mmap m = {
		.pid = pid, .tid = pid, .time = p->start_ns, .start = p->text_start,
		.len = p->text_end - p->text_start, .pgoff = p->text_offset,
		.prot = 5, /* PROT_READ | PROT_EXEC */
	};
	emit(KP_REC_MMAP, &m, sizeof(m), p->path);
}

static const char *model_name(const struct pmu_info *pi)
{
	return pi->model == PMU_MODEL_INTEL ? "intel" : pi->model == PMU_MODEL_AMD ? "amd" : "none";
}

static void write_stream(const struct pmu_info *pi, int nprocs, uint64_t lost, uint64_t throttled,
			 uint64_t t0, uint64_t t1)
{
	struct kp_file_header fh = {
		.magic = KP_FILE_MAGIC,
		.version_major = KP_FILE_VERSION_MAJOR,
		.version_minor = KP_FILE_VERSION_MINOR,
		.header_size = sizeof(fh),
		.source = KP_SOURCE_BUNDLED_GUEST,
	};
	char s[128];
	put(&fh, sizeof(fh));
	snprintf(s, sizeof(s), "vpmu %s v%u, %u counters", model_name(pi), pi->version, pi->gp);
	emit_meta("pmu", s);
	emit_meta("command", opt.command);
	emit_meta("release", "kvmprof bundled guest");
	if (throttled) { /* the report says how often the samples stopped for the rest of a tick */
		snprintf(s, sizeof(s), "%lu", (unsigned long)throttled);
		emit_meta("throttled", s);
	}

	struct kp_rec_event ev = { .id = 0, .type = EVENT_TYPE_GUEST, .period = opt.period };
	memcpy(&ev.config, &opt.ev, sizeof(opt.ev)); /* struct pmu_event, little-endian */
	memcpy(ev.name, opt.event_name, strlen(opt.event_name) + 1);
	emit(KP_REC_EVENT, &ev, sizeof(ev), NULL);

	emit_comm(0, 0, "idle"); /* samples taken while a CPU idled */
	emit_mmap(KP_PID_KERNEL, &procs[0]);
	for (int i = 1; i < nprocs; i++) {
		emit_comm(procs[i].pid, procs[i].start_ns, procs[i].comm);
		emit_mmap(procs[i].pid, &procs[i]);
	}
	kp_sample_block_init(&block);
	for (long i = 0; i < nrecs; i++) {
		const struct pmu_record *r = &recs[i];
		struct kp_rec_sample smp = {
			.pid = r->pid, .tid = r->pid, .cpu = r->cpu, .time = r->time, .ip = r->rip,
			.period = opt.period, .cpl = r->cpl == 3 ? KP_CPL_USER : KP_CPL_KERNEL,
		};
		if (kp_sample_block_add(&block, &smp))
			emit_block();
		out_samples++;
	}
	/*
	 * The VMM wrote the buffer's samples as sealed sample-file records: coded
	 * into the same blocks (~6 bytes instead of 64 down a line that exits per
	 * byte); a record the block coding cannot hold exactly goes as it is.
	 */
	for (uint64_t off = 0; off + sizeof(struct kp_rec_header) <= raw_len;) {
		const struct kp_rec_header *h = (const struct kp_rec_header *)(raw + off);
		if (h->size < sizeof(*h) || h->size > raw_len - off)
			break;
		const void *body = h + 1;
		size_t len = h->size - sizeof(*h);
		if (h->type == KP_REC_SAMPLE && kp_sample_encodable(body, len)) {
			if (kp_sample_block_add(&block, body))
				emit_block();
		} else {
			emit_block();
			put(h, h->size);
			out_records++;
		}
		off += h->size;
	}
	emit_block();
	out_samples += raw_samples;
	int me = getpid();
	for (int i = 1; i < nprocs; i++) {
		if (procs[i].state != PROC_EXITED)
			continue;
		int child = 0;
		for (int j = 0; j < opt.nprogs; j++)
			child |= opt.progs[j].pid == (int)procs[i].pid;
		struct kp_rec_task t = {
			.pid = procs[i].pid, .tid = procs[i].pid,
			.ppid = child ? (uint32_t)me : 0, .ptid = child ? (uint32_t)me : 0,
			.time = procs[i].exit_ns,
		};
		emit(KP_REC_EXIT, &t, sizeof(t), NULL);
	}
	if (lost) {
		struct kp_rec_lost l = { .event_id = 0, .lost = lost };
		emit(KP_REC_LOST, &l, sizeof(l), NULL);
	}
	struct kp_rec_end end = {
		.samples = out_samples, .lost = lost, .records = out_records, .duration_ns = t1 - t0,
	};
	emit(KP_REC_END, &end, sizeof(end), NULL);
	flush();
}

int main(int argc, char **argv)
{
	struct pmu_info pi;
	struct pmu_all_stats st = { 0 };
	if (parse_args(argc, argv))
		return usage();
	if (pmu_info(&pi) < 0 && !opt.no_sampling) {
		printf("agent: no PMU: nothing to sample with\n");
		return 1;
	}
	unsigned int flags = (opt.pmi_path ? 0 : PMU_ALL_BUFFER) | (opt.callchain ? PMU_ALL_CALLCHAIN : 0);
	long r = opt.no_sampling ? 0 : pmu_all_start(&opt.ev, opt.period, flags);
	if (r < 0) {
		printf("agent: system-wide sampling refused: error %ld\n", r);
		return 1;
	}
	uint64_t t0 = clock_ns();
	int running = 0, failed = 0;
	for (int i = 0; i < opt.nprogs; i++) {
		struct prog *p = &opt.progs[i];
		long pid = spawn(p->path, p->args[0] ? p->args : NULL);
		if (pid < 0) {
			printf("agent: %s: cannot start: error %ld\n", p->path, pid);
			failed = 1;
			continue;
		}
		p->pid = (int)pid;
		running++;
	}
	while (running) {
		if (!opt.drain_at_end)
			drain(false);
		sleep_ms(DRAIN_MS);
		for (int i = 0; i < opt.nprogs; i++) {
			int status;
			if (opt.progs[i].pid > 0 && waitpid(opt.progs[i].pid, &status, WAIT_NOHANG) > 0) {
				if (status)
					printf("agent: %s exited with status %d\n", opt.progs[i].path, status);
				opt.progs[i].pid = -opt.progs[i].pid; /* done; keep the pid for EXIT */
				running--;
			}
		}
	}
	for (int i = 0; i < opt.nprogs; i++)
		opt.progs[i].pid = opt.progs[i].pid < 0 ? -opt.progs[i].pid : opt.progs[i].pid;
	uint64_t t1 = clock_ns();
	long nprocs = 1;
	uint64_t lost = 0;
	if (!opt.no_sampling) {
		pmu_all_stop(&st);
		drain(true);
		nprocs = proc_list(procs, PROC_HISTORY + 1);
		if (nprocs < 1)
			nprocs = 1; /* cannot happen: entry 0 is the kernel */
		lost = st.drops + (uint64_t)overflowed;
		write_stream(&pi, (int)nprocs, lost, st.throttled, t0, t1);
	}
	printf("agent: samples=%lu lost=%lu pmis=%lu late=%lu cpus=%lu processes=%ld bytes=%lu "
	       "ms=%lu.%03lu throttled=%lu buffer=%lu\n",
	       (unsigned long)out_samples, (unsigned long)lost, st.pmis, st.late, st.cpus, nprocs - 1,
	       (unsigned long)out_bytes, (unsigned long)((t1 - t0) / 1000000),
	       (unsigned long)((t1 - t0) / 1000 % 1000), st.throttled, st.buffered);
	return failed;
}
