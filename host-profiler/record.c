/* SPDX-License-Identifier: MIT */
/*
 * How a system-wide recording is laid out:
 *
 *  - the VM (vm_target.h: kvmprof-vmm or a libvirt domain's QEMU) gives
 *    its process and vCPU thread ids, kept in META for the report;
 *  - host side: one perf event per (online CPU, VM thread), with inherit
 *    so threads the VM starts later are followed; one ring buffer per CPU
 *    (PERF_EVENT_IOC_SET_OUTPUT), as kvmprof-agent record -p does; COMM and
 *    MMAP of the VM's process from /proc at the start, then perf's own; the
 *    host's kallsyms;
 *  - guest side: the target's (kvmprof-vmm's rings, a domain's register
 *    samples), written into the same file;
 *  - host samples taken while guest code ran are guest time. They are not
 *    written as host samples; they are counted in META
 *    `host_samples_in_guest` and handed to the target, which has the
 *    guest's side of that time. On hardware-virtualization KVM perf marks
 *    them with a PERF_RECORD_MISC_GUEST_* cpumode; on a PVM host (kvm_pvm)
 *    they carry no mark and land in the host kernel function
 *    pvm_do_nmi_irqoff, whose address range is taken from the host's
 *    kallsyms; under TCG the target knows its translated code. So every
 *    sample in the file is in exactly one domain and none is counted twice.
 */
#include "host_record.h"

#define hrec host_recording

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "collection/convert.h"
#include "collection/emit.h"
#include "collection/events.h"
#include "symbols/kallsyms.h"
#include "common/perf_open.h"
#include "collection/perf_rings.h"
#include "collection/procfs.h"
#include "cli/record_fallback.h"
#include "format/record_file.h"
#include "format/record_output.h"
#include "format/sample_file.h"
#include "vm_target.h"

#define MAX_CPUS 1024
#define RING_PAGES 128
#define RING_PAGES_DWARF 512 /* stack copies: 8 KiB a sample by default */
#define HOST_EVENT_ID 0

/* Host kernel functions whose samples mean "guest code was running" (see the top). */
static const char *const guest_entry_symbols[] = { "pvm_do_nmi_irqoff" };
#define NR_GUEST_ENTRY (sizeof(guest_entry_symbols) / sizeof(guest_entry_symbols[0]))

struct host_recording {
	const struct host_record_opts *o;
	struct vm_target t;
	struct record_session sess;

	struct events_event ev;
	uint32_t ev_flags;
	uint64_t ev_rate;
	char pmu[192];
	int cpus[MAX_CPUS], ncpus;
	pid_t *tids;
	size_t ntids;
	struct perf_rings rs; /* the host events, their ids and a ring per CPU */

	struct kp_writer *w;
	struct emit_ctx e;
	struct convert_ctx conv;
	int out_fd;
	const char *out_name;

	uint64_t entry_lo[NR_GUEST_ENTRY], entry_hi[NR_GUEST_ENTRY];
	bool entry_known;
	/* host samples of guest time: perf's guest cpumode, the PVM entry, the target's rule (TCG) */
	uint64_t in_guest_mode, in_guest_entry, in_guest_code;

	uint64_t t_start;
	/* Both sides sample from here on (the guest sampler answered): --duration counts from it. */
	uint64_t t_sampling;
	uint64_t window_end;  /* host_record_window's end (CLOCK_MONOTONIC ns), 0: none */
	uint64_t last_progress;
	bool tty, gone, started;
	/* --guest-export: a Linux guest's task layout, for the guest sampler */
	bool has_layout;
	struct kp_rec_task_layout layout;
	struct kallsyms *export_ksyms; /* the export's kernel symbols: is the guest still in that boot? */
	char guest_event_note[256]; /* why the guest side samples another event than the host's, "" */
};

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static void install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal; /* no SA_RESTART: poll returns to see the flag */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* The samples' event and rate, as the user asked (-e, -F, -c), the default cycles. */
static void pick_event(struct hrec *R)
{
	const struct host_record_opts *o = R->o;
	uint64_t p;

	if (o->rec.nevents) {
		R->ev = o->rec.events[0];
	} else {
		char unk[8], err[64];

		events_parse("cycles", &R->ev, unk, sizeof(unk), err, sizeof(err));
	}
	p = R->ev.period ? R->ev.period : o->rec.period;
	R->ev_flags = p ? 0 : KP_EVENT_FREQ;
	R->ev_rate = p ? p : (o->rec.freq ? o->rec.freq : RECORD_DEFAULT_HZ);
}

static void fill_attr(const struct hrec *R, bool tracking, struct perf_event_attr *a)
{
	*a = R->ev.attr;
	a->size = sizeof(*a);
	if (R->ev_flags & KP_EVENT_FREQ) {
		a->freq = 1;
		a->sample_freq = R->ev_rate;
	} else {
		a->sample_period = R->ev_rate;
	}
	convert_sample_layout(a, R->o->rec.callgraph, R->o->rec.dwarf_stack); /* after freq: it decides the layout */
	a->disabled = 1;
	a->inherit = 1;
	/* Hardware counters must run in guest mode too: their guest-mode samples are then guest time. */
	a->exclude_guest = 0;
	/* The clock the guest samplers stamp guest samples with, so both sides share a time line. */
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	if (tracking)
		perf_attr_track_tasks(a);
}

/* One open decides what the host can do: without a PMU, cpu-clock stands in. */
static int probe_event(struct hrec *R)
{
	struct perf_event_attr a;
	int fd;

	for (;;) {
		fill_attr(R, false, &a);
		fd = perf_open(&a, R->tids[0], R->cpus[0], -1);
		if (fd >= 0) {
			close(fd);
			if (!R->pmu[0])
				perf_open_describe_pmu(R->pmu, sizeof(R->pmu), perf_attr_is_hardware(&R->ev.attr), NULL, 0);
			return 0;
		}
		int e = -fd;

		if (perf_open_no_pmu(&R->ev.attr, e) && !(R->ev_flags & KP_EVENT_FALLBACK)) {
			/* The default event is not something the user asked for: name the clock, quietly. */
			bool asked = R->o->rec.nevents > 0;

			record_fall_back_to_clock(&R->ev, &R->ev_flags, &R->ev_rate, R->o->rec.freq, asked, e, R->pmu,
						  sizeof(R->pmu), "kvmprof", asked);
			continue;
		}
		fprintf(stderr, "kvmprof: perf_event_open %s on thread %d of %s: %s\n", R->ev.name, (int)R->tids[0],
			R->t.vmm, strerror(e));
		if (e == EACCES || e == EPERM)
			fprintf(stderr, "kvmprof: not allowed; see kernel.perf_event_paranoid, or run as root\n");
		return -e;
	}
}

static int open_events(struct hrec *R)
{
	char dir[64];
	int r;

	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)R->t.pid);
	r = procfs_list_ids(dir, &R->tids, &R->ntids);
	if (r || !R->ntids) {
		fprintf(stderr, "kvmprof: %s pid %d: %s\n", R->t.vmm, (int)R->t.pid,
			r ? strerror(-r) : "no threads (has it exited?)");
		return r ? r : -ESRCH;
	}
	r = probe_event(R);
	if (r)
		return r;
	r = perf_rings_init(&R->rs, "kvmprof", R->cpus, R->ncpus);
	if (r)
		return r;
	for (int c = 0; c < R->ncpus; c++) {
		for (size_t t = 0; t < R->ntids; t++) {
			struct perf_event_attr a;
			int fd;

			fill_attr(R, true, &a);
			fd = perf_open(&a, R->tids[t], R->cpus[c], -1);
			if (fd < 0) {
				int e = -fd;

				if (e == ESRCH || (e == ENODEV && R->ncpus > 1))
					continue; /* a thread that exited, a CPU that went offline */
				fprintf(stderr, "kvmprof: perf_event_open %s on thread %d, CPU %d: %s\n", R->ev.name,
					(int)R->tids[t], R->cpus[c], strerror(e));
				return -e;
			}
			r = perf_rings_add(&R->rs, c, (int)fd, HOST_EVENT_ID, &a,
					   R->o->rec.callgraph == RECORD_CALLGRAPH_DWARF ? RING_PAGES_DWARF : RING_PAGES);
			if (r)
				return r;
		}
	}
	if (!R->rs.nfds) {
		fprintf(stderr, "kvmprof: every thread of %s pid %d exited before sampling began\n", R->t.vmm,
			(int)R->t.pid);
		return -ESRCH;
	}
	return 0;
}

/* ---- host samples that are guest time ---- */

static void find_guest_entry(struct hrec *R, const char *text, size_t len)
{
	struct kallsyms *ks;

	if (kallsyms_parse(&ks, text, len))
		return;
	for (size_t i = 0; i < NR_GUEST_ENTRY; i++) {
		/* The hypervisor's entry code may be a module's (kvm-pvm). */
		struct kallsyms_sym s;

		if (kallsyms_find(ks, guest_entry_symbols[i], KALLSYMS_IMAGE_OR_MODULE, &s) && kallsyms_is_text(s.type) &&
		    s.end > s.addr) {
			R->entry_lo[i] = s.addr;
			R->entry_hi[i] = s.end;
			R->entry_known = true;
		}
	}
	kallsyms_free(ks);
}

/* convert's filter: 1 keeps a host sample, 0 leaves it to the guest's side, < 0 fails. */
static int keep_host_sample(void *ctx, const struct kp_rec_sample *s, uint16_t misc)
{
	struct hrec *R = ctx;
	uint16_t mode = misc & PERF_RECORD_MISC_CPUMODE_MASK;

	if (mode == PERF_RECORD_MISC_GUEST_KERNEL || mode == PERF_RECORD_MISC_GUEST_USER) {
		R->in_guest_mode++;
		return R->t.ops->guest_time(&R->t, s, true);
	}
	if (s->cpl == KP_CPL_KERNEL)
		for (size_t i = 0; i < NR_GUEST_ENTRY; i++)
			if (s->ip >= R->entry_lo[i] && s->ip < R->entry_hi[i]) {
				R->in_guest_entry++;
				return R->t.ops->guest_time(&R->t, s, false);
			}
	if (R->t.ops->guest_code && R->t.ops->guest_code(&R->t, s)) {
		R->in_guest_code++;
		return R->t.ops->guest_time(&R->t, s, false);
	}
	return 1;
}

/* ---- the file ---- */

/*
 * META vmm_threads: "tid:role;..." for the VM's threads as they are now,
 * the role "main loop" (the process's first thread), "vCPU N", "I/O"
 * (QEMU's iothreads "IO ...", its worker pool, vhost) or else the
 * thread's own name; the report names QEMU's threads by it.
 */
static int write_thread_roles(struct hrec *R)
{
	char meta[KP_META_MAX - 16], comm[32], role[48];
	size_t n = 0;

	meta[0] = 0;
	for (size_t i = 0; i < R->ntids && n < sizeof(meta) - 64; i++) {
		pid_t tid = R->tids[i];

		if (procfs_read_comm(R->t.pid, tid, comm, sizeof(comm)))
			continue;
		for (char *c = comm; *c; c++)
			if (*c == ';' || *c == ':' || (unsigned char)*c < 32)
				*c = '_';
		snprintf(role, sizeof(role), "%s", comm);
		if (tid == R->t.pid)
			snprintf(role, sizeof(role), "main loop");
		else if (!strncmp(comm, "IO ", 3) || !strncmp(comm, "worker", 6) || !strncmp(comm, "vhost", 5))
			snprintf(role, sizeof(role), "I/O");
		for (unsigned int v = 0; v < R->t.nvcpus; v++)
			if (R->t.vcpu_tid[v] == tid)
				snprintf(role, sizeof(role), "vCPU %u", v);
		n += (size_t)snprintf(meta + n, sizeof(meta) - n, "%s%d:%s", n ? ";" : "", (int)tid, role);
	}
	return kp_writer_meta(R->w, "vmm_threads", meta);
}

static int write_preamble(struct hrec *R)
{
	char buf[64 + VM_TARGET_MAX_VCPUS * 24], *text = NULL;
	size_t n = 0, len;
	struct kp_rec_event ev;
	bool hidden;
	int r;

	r = emit_meta_system(&R->e);
	if (!r)
		r = kp_writer_meta(R->w, "command", R->t.what);
	if (!r)
		r = kp_writer_meta(R->w, "pmu", R->pmu);
	if (!r)
		r = kp_writer_meta(R->w, "vmm", R->t.vmm);
	if (!r) {
		snprintf(buf, sizeof(buf), "%d", (int)R->t.pid);
		r = kp_writer_meta(R->w, "vmm_pid", buf);
	}
	for (unsigned int i = 0; i < R->t.nvcpus && n < sizeof(buf); i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%d", i ? "," : "", (int)R->t.vcpu_tid[i]);
	if (!r)
		r = kp_writer_meta(R->w, "vcpu_tids", n ? buf : "");
	if (!r && R->t.domain[0])
		r = kp_writer_meta(R->w, "domain", R->t.domain);
	if (!r && R->t.uri[0])
		r = kp_writer_meta(R->w, "domain_uri", R->t.uri);
	if (!r)
		r = write_thread_roles(R);
	memset(&ev, 0, sizeof(ev));
	ev.id = HOST_EVENT_ID;
	ev.type = R->ev.attr.type;
	ev.config = R->ev.attr.config;
	ev.period = R->ev_rate;
	ev.flags = R->ev_flags;
	memcpy(ev.name, R->ev.name, sizeof(ev.name));
	if (!r)
		r = kp_writer_add(R->w, KP_REC_EVENT, &ev, sizeof(ev));
	if (r)
		return r;
	/* The host's kernel symbols: for the report, and for telling guest time apart here. */
	r = procfs_read_kallsyms(&text, &len, &hidden);
	if (r) {
		fprintf(stderr, "kvmprof: /proc/kallsyms: %s; host kernel samples will not resolve\n", strerror(-r));
		return 0;
	}
	if (hidden) {
		fprintf(stderr, "kvmprof: /proc/kallsyms shows only zero addresses (kernel.kptr_restrict); host kernel "
				"samples will not resolve\n");
	} else {
		find_guest_entry(R, text, len);
		len = procfs_kallsyms_keep_text(text, len);
		r = kp_writer_ksyms(R->w, text, len);
	}
	free(text);
	return r;
}

/* After a recording, what the report needs to know about guest time. */
static int write_epilogue(struct hrec *R)
{
	int r = kp_writer_meta_u64(R->w, "host_samples_in_guest", R->in_guest_mode + R->in_guest_entry + R->in_guest_code);

	if (!r)
		r = kp_writer_meta(R->w, "host_guest_rule",
				   R->in_guest_code ? (R->entry_known ? "perf's guest-mode flag, the host kernel's guest entry "
								     "(pvm_do_nmi_irqoff), or QEMU's translated guest code (TCG)"
								   : "perf's guest-mode flag, or QEMU's translated guest code (TCG)")
				   : R->entry_known ? "perf's guest-mode flag, or the host kernel's guest entry (pvm_do_nmi_irqoff)"
						    : "perf's guest-mode flag");
	if (!r)
		r = kp_writer_meta(R->w, "guest_sampling", R->t.guest_status);
	if (!r)
		r = R->t.ops->epilogue(&R->t, &R->sess);
	return r;
}

/* ---- guest sampling: a Linux guest's task layout ---- */

#define EXPORT_KSYMS_MAX (64u << 20) /* a kernel's kallsyms text is ~5 MB; the export sends its text symbols */

/*
 * The TASK_LAYOUT record of a Linux guest's export (--guest-export). The
 * whole stream is read, not just up to the record: an export cut short or
 * corrupted in transit would fail the report later, so it fails here,
 * before anything is recorded. The file is the guest's word; the reader
 * checked its shape, the guest sampler checks the numbers again. 0 (with
 * or without a layout, said on stderr), or 1 when the file cannot be read.
 */
static int read_guest_layout(struct hrec *R)
{
	const char *path = R->o->guest_export;
	struct kp_reader *rd;
	struct kp_record rec;
	char err[512], why[KP_META_MAX] = "the export has none (an agent older than sample file 1.3?)";
	struct kallsyms *ksyms;
	size_t ksyms_len = 0;
	bool ksyms_failed;
	int r;

	if (!path)
		return 0;
	ksyms = kallsyms_new();
	ksyms_failed = !ksyms;
	if (kp_reader_open(&rd, path, err, sizeof(err))) {
		fprintf(stderr, "kvmprof: --guest-export: %s\n", err);
		kallsyms_free(ksyms);
		return 1;
	}
	while ((r = kp_reader_next(rd, &rec, err, sizeof(err))) > 0) {
		if (rec.type == KP_REC_KSYMS && !ksyms_failed) {
			size_t n = rec.ksyms->len;

			if (n > rec.payload_len - sizeof(*rec.ksyms))
				n = rec.payload_len - sizeof(*rec.ksyms);
			ksyms_len += n;
			if (ksyms_len > EXPORT_KSYMS_MAX || kallsyms_add(ksyms, rec.ksyms->text, n))
				ksyms_failed = true;
		} else if (rec.type == KP_REC_TASK_LAYOUT && !R->has_layout) {
			if (rec.layout->kind == KP_LAYOUT_LINUX_X86_64) {
				R->layout = *rec.layout;
				R->has_layout = true;
				continue;
			}
			snprintf(why, sizeof(why), "its layout is of kind %u, not Linux x86-64", rec.layout->kind);
		} else if (rec.type == KP_REC_META && !strncmp(rec.meta->text, "task_layout=", 12)) {
			snprintf(why, sizeof(why), "%s", rec.meta->text + 12);
		}
	}
	kp_reader_close(rd);
	if (r < 0) {
		fprintf(stderr, "kvmprof: --guest-export: %s\n", err);
		R->has_layout = false;
		kallsyms_free(ksyms);
		return 1;
	}
	/* Without the symbols (an export cut to its layout, or too big) the boot cannot be checked: no failure. */
	if (R->has_layout && ksyms_len && !ksyms_failed) {
		kallsyms_finish(ksyms);
		R->export_ksyms = ksyms;
	} else {
		kallsyms_free(ksyms);
	}
	if (!R->has_layout)
		fprintf(stderr, "kvmprof: no task layout in %s (%s): guest samples will not name Linux processes\n",
			path, why);
	return 0;
}

/* ---- the loop ---- */

static uint64_t guest_samples(const struct hrec *R)
{
	return R->t.ops->guest_samples(&R->t);
}

static void progress(struct hrec *R, bool final)
{
	static bool shown;

	if (final) {
		if (shown)
			fprintf(stderr, "\r\033[K");
		return;
	}
	fprintf(stderr, "\rkvmprof: recording: %" PRIu64 " host samples, %" PRIu64 " guest samples, %" PRIu64
		" lost, %.1f MB ", kp_writer_samples(R->w) - guest_samples(R), guest_samples(R),
		R->conv.lost + R->t.ops->guest_lost(&R->t), (double)kp_writer_bytes(R->w) / 1e6);
	shown = true;
}

/* After each drain of the host rings: the guest's side, progress, then whether the window is over. */
static int loop_step(void *ctx, short vm_revents, int *next_poll_ms)
{
	struct hrec *R = ctx;
	uint64_t now;
	int r = R->t.ops->step(&R->t, &R->sess, vm_revents, next_poll_ms);

	if (r > 0) {
		R->gone = true;
		return 1;
	}
	if (r)
		return r;
	now = emit_now_ns();
	if (R->tty && now - R->last_progress >= 1000000000ull) {
		progress(R, false);
		R->last_progress = now;
	}
	if (stop_signal || (R->window_end && now >= R->window_end))
		return 1;
	if (R->o->should_stop && R->o->should_stop(R->o->should_stop_ctx))
		return 1;
	/* Wake up for the window's end, not a poll period after it. */
	if (R->window_end) {
		uint64_t left_ms = (R->window_end - now + 999999) / 1000000;

		if (left_ms < (uint64_t)*next_poll_ms)
			*next_poll_ms = (int)left_ms;
	}
	return 0;
}

int host_record_window(struct hrec *R, uint64_t end_ns)
{
	int r;

	R->window_end = end_ns;
	r = perf_rings_loop(&R->rs, &R->conv, R->t.poll_fd, R->t.poll_ms, loop_step, R);
	if (r < 0)
		return r;
	if (R->gone) {
		if (R->tty)
			progress(R, true);
		return HOST_WINDOW_VM_GONE;
	}
	if (stop_signal || (R->o->should_stop && R->o->should_stop(R->o->should_stop_ctx)))
		return HOST_WINDOW_STOPPED;
	return HOST_WINDOW_DONE;
}

static void cleanup(struct hrec *R)
{
	kallsyms_free(R->export_ksyms);
	R->export_ksyms = NULL;
	perf_rings_free(&R->rs);
	free(R->tids);
	emit_fini(&R->e);
	vm_target_close(&R->t);
}

static int finish(struct hrec *R)
{
	uint64_t duration = emit_now_ns() - R->t_start, samples = kp_writer_samples(R->w), gs = guest_samples(R);
	uint64_t lost = R->conv.lost + R->t.ops->guest_lost(&R->t), bytes;
	uint64_t dropped = R->in_guest_mode + R->in_guest_entry + R->in_guest_code;
	int r;

	r = write_epilogue(R);
	if (r)
		return r;
	r = record_output_close(R->w, &R->out_fd, lost, duration, &bytes);
	R->w = NULL;
	if (r)
		return r;
	fprintf(stderr, "kvmprof: %" PRIu64 " host samples (%" PRIu64 " more fell in guest code: left to the guest's "
		"samples), %" PRIu64 " guest samples, %" PRIu64 " lost in %.1f s, written to %s (%.2f MB)\n",
		samples - gs, dropped, gs, lost, (double)duration / 1e9, R->out_name, (double)bytes / 1e6);
	R->t.ops->summary(&R->t);
	return 0;
}

/*
 * What kvmprof-vmm's guest sampler is asked to sample with: the host's own
 * event where it can (the clocks, by period or frequency; cycles and
 * instructions by period), or, for another event sampled by frequency,
 * cpu-clock at the same frequency: both sides then sample the same time at
 * the same rate, which is what makes their samples weigh the same. 0, or
 * 1 after a one-line message: a period of an event the sampler cannot
 * count (said before anything is recorded).
 */
static int pick_guest_event(struct hrec *R)
{
	const struct perf_event_attr *a = &R->ev.attr;
	bool freq = R->ev_flags & KP_EVENT_FREQ;

	R->sess.freq = freq;
	R->sess.rate = R->ev_rate;
	R->guest_event_note[0] = 0;
	if (events_is_clock(a->type, a->config)) {
		R->sess.event = a->config == PERF_COUNT_SW_TASK_CLOCK ? "task-clock" : "cpu-clock";
	} else if (a->type == PERF_TYPE_HARDWARE && !freq &&
		   (a->config == PERF_COUNT_HW_CPU_CYCLES || a->config == PERF_COUNT_HW_INSTRUCTIONS)) {
		R->sess.event = a->config == PERF_COUNT_HW_CPU_CYCLES ? "cycles" : "instructions";
	} else if (freq) {
		R->sess.event = "cpu-clock";
		snprintf(R->guest_event_note, sizeof(R->guest_event_note),
			 "the guest side samples cpu-clock at %" PRIu64 " Hz (kvmprof-vmm's sampler takes %s by period "
			 "only)", R->ev_rate, R->ev.name);
	} else {
		fprintf(stderr, "kvmprof: -e %s with a period: kvmprof-vmm samples its guest with cpu-clock, task-clock, "
				"cycles or instructions by period; sample %s with -F, or use one of those\n",
			R->ev.name, R->ev.name);
		return 1;
	}
	return 0;
}

/* The VM to record: --vm's kvmprof-vmm, --domain's, ... (vm_targets.c). 0, or 1 after a message. */
static int open_target(struct hrec *R)
{
	return vm_target_open(&R->t, &R->o->target, R->o->connect, R->o);
}

int host_record_open(struct hrec **out, const struct host_record_opts *o)
{
	struct hrec *R = calloc(1, sizeof(*R));
	struct rlimit rl;
	int ncpus;

	if (!R) {
		fprintf(stderr, "kvmprof: %s\n", strerror(ENOMEM));
		return 1;
	}
	R->o = o;
	R->out_fd = -1;
	R->t.poll_fd = -1;
	R->tty = !o->rec.quiet && isatty(2);
	stop_signal = 0;
	install_signals();
	pick_event(R);
	ncpus = procfs_online_cpus(R->cpus, MAX_CPUS);
	if (ncpus < 0) {
		fprintf(stderr, "kvmprof: /sys/devices/system/cpu/online: %s\n", strerror(-ncpus));
		free(R);
		return 1;
	}
	R->ncpus = ncpus;
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (read_guest_layout(R) || open_target(R) || open_events(R) || (R->t.samples_event && pick_guest_event(R))) {
		host_record_close(R);
		return 1;
	}
	*out = R;
	return 0;
}

int host_record_start(struct hrec *R, int fd, const char *name)
{
	const struct host_record_opts *o = R->o;
	int r;

	R->out_fd = fd;
	R->out_name = name;
	r = kp_writer_open(&R->w, R->out_fd, KP_SOURCE_HOST_PROFILER);
	if (r)
		goto write_error;
	emit_init(&R->e, R->w);
	R->conv = (struct convert_ctx){ .e = &R->e, .ids = R->rs.ids, .nids = R->rs.nids, .callchain = o->rec.callgraph,
					.user_stack = o->rec.callgraph == RECORD_CALLGRAPH_DWARF,
					.keep_sample = keep_host_sample, .keep_ctx = R };
	R->sess.o = o;
	R->sess.w = R->w;
	R->sess.event_id = HOST_EVENT_ID;
	R->sess.layout = R->has_layout ? &R->layout : NULL;
	R->sess.layout_ksyms = R->has_layout ? R->export_ksyms : NULL;
	if (R->guest_event_note[0])
		fprintf(stderr, "kvmprof: %s\n", R->guest_event_note);
	r = write_preamble(R);
	if (r)
		goto write_error;
	R->t_start = R->sess.t_start = R->last_progress = emit_now_ns();
	perf_rings_enable(&R->rs, true);
	/* The VM's threads and mappings as they are now; perf reports later changes. */
	r = emit_process(&R->e, R->t.pid, 0);
	if (r && r != -ESRCH)
		goto write_error;
	r = R->t.ops->start(&R->t, &R->sess);
	if (r == -ECANCELED)
		return HOST_START_REFUSED; /* said by the target */
	if (r)
		goto write_error;
	R->started = true;
	R->t_sampling = emit_now_ns();
	return 0;
write_error:
	fprintf(stderr, "kvmprof: writing %s: %s\n", R->out_name, strerror(-r));
	return 1;
}

int host_record_stop(struct hrec *R)
{
	int r;

	if (!R->started)
		return 0;
	R->started = false;
	perf_rings_enable(&R->rs, false);
	r = perf_rings_drain(&R->rs, &R->conv);
	if (!r)
		r = R->t.ops->stop(&R->t, &R->sess);
	if (R->tty)
		progress(R, true);
	return r;
}

void host_record_close(struct hrec *R)
{
	if (!R)
		return;
	if (R->w)
		kp_writer_abort(R->w);
	cleanup(R);
	free(R);
}

const char *host_record_gone_why(const struct hrec *R)
{
	return R->t.gone_why;
}

struct kp_writer *host_record_writer(struct hrec *R)
{
	return R->w;
}

void host_record_status(const struct hrec *R, struct host_record_status *st)
{
	st->event = R->ev.name;
	st->rate = R->ev_rate;
	st->freq = R->ev_flags & KP_EVENT_FREQ;
	st->clock = events_is_clock(R->ev.attr.type, R->ev.attr.config);
	st->lost = R->conv.lost + R->t.ops->guest_lost(&R->t);
	st->guest_status = R->t.guest_status;
}

int host_record_run(const struct host_record_opts *o)
{
	const char *out = o->rec.output ? o->rec.output : RECORD_DEFAULT_OUTPUT;
	struct hrec *R;
	int fd, r;
	bool ok = false, kept_old = false;

	if (host_record_open(&R, o))
		return 1;
	/* Only now that the VM answered: a wrong socket must not clobber an earlier file. */
	if (!strcmp(out, "-")) {
		fd = 1;
		out = "standard output";
	} else {
		char err[4400];

		/* An earlier recording there becomes OUT.old, as with perf record. */
		fd = record_file_create(out, &kept_old, err, sizeof(err));
		if (fd < 0) {
			fprintf(stderr, "kvmprof: %s\n", err);
			host_record_close(R);
			return 1;
		}
	}
	r = host_record_start(R, fd, out); /* R->out_fd is fd from here on; finish closes it */
	if (r == HOST_START_REFUSED) {
		/* The VM refused what was asked (said): no recording, no file that looks like one, the earlier one back. */
		if (fd > 1)
			record_file_undo(out, kept_old);
		goto out;
	}
	if (r)
		goto out;
	/*
	 * Not from t_start: writing the VM's threads and mappings and starting
	 * the guest sampler took 0.1-0.4 s of a 1 s recording in the emulated KVM
	 * host, and a loaded one took nearly all of it (1 guest sample).
	 */
	r = host_record_window(R, o->duration > 0 ? R->t_sampling + (uint64_t)(o->duration * 1e9) : 0);
	if (r == HOST_WINDOW_VM_GONE)
		fprintf(stderr, "kvmprof: %s; keeping what was recorded\n", host_record_gone_why(R));
	if (r >= 0)
		r = host_record_stop(R);
	if (!r)
		r = finish(R);
	if (r) {
		fprintf(stderr, "kvmprof: writing %s: %s\n", R->out_name, strerror(-r));
		goto out;
	}
	ok = true;
out:
	if (R->out_fd > 1)
		close(R->out_fd);
	host_record_close(R);
	return ok ? 0 : 1;
}
