/* SPDX-License-Identifier: MIT */
/*
 * How a system-wide recording is laid out:
 *
 *  - the VMM is found through its control socket (status: pid; vcpus:
 *    the vCPU thread ids, kept in META for the report);
 *  - host side: one perf event per (online CPU, VMM thread), with inherit
 *    so threads the VMM starts later are followed; one ring buffer per CPU
 *    (PERF_EVENT_IOC_SET_OUTPUT), as kvmprof-agent record -p does; COMM and
 *    MMAP of the VMM from /proc at the start, then perf's own; the host's
 *    kallsyms;
 *  - guest side: sample-start hands over a memfd of rings
 *    (include/kvmprof/guest_ring.h) whose records are copied as they are;
 *  - host samples taken while guest code ran are guest time, and the guest
 *    sampler already accounts for that time with guest addresses. They are
 *    dropped here, not written, and counted in META
 *    `host_samples_in_guest`: on bare-metal KVM perf marks them with a
 *    PERF_RECORD_MISC_GUEST_* cpumode; on a PVM host (kvm_pvm) they carry no
 *    mark and land in the host kernel function pvm_do_nmi_irqoff, whose
 *    address range is taken from the host's kallsyms. So every sample in
 *    the file is in exactly one domain and none is counted twice.
 */
#include "host_record.h"

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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "convert.h"
#include "emit.h"
#include "guest_ring_reader.h"
#include "kallsyms.h"
#include "perf_open.h"
#include "perf_rings.h"
#include "procfs.h"
#include "record_fallback.h"
#include "record_output.h"
#include "sample_file.h"
#include "vm_client.h"

#define MAX_CPUS 1024
#define MAX_VCPUS 64
#define RING_PAGES 128
#define POLL_MS 100
#define HOST_EVENT_ID 0

/* Host kernel functions whose samples mean "guest code was running" (see the top). */
static const char *const guest_entry_symbols[] = { "pvm_do_nmi_irqoff" };
#define NR_GUEST_ENTRY (sizeof(guest_entry_symbols) / sizeof(guest_entry_symbols[0]))

struct hrec {
	const struct host_record_opts *o;
	struct vm_client vm;
	pid_t vmm_pid;
	int nvcpus;
	long long vcpu_tid[MAX_VCPUS];

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
	uint64_t in_guest_mode, in_guest_entry; /* host samples dropped as guest time */

	bool sampling; /* the VMM's guest sampler runs for us */
	struct guest_rings gr;
	char guest_status[640];
	bool vm_gone;
	/* sample-stop's figures of the VMM's own cost per guest sample (none if the VM went first) */
	bool capture_known;
	uint64_t capture_mean_ns, capture_max_ns;
	uint64_t t_start;
	/* --guest-export: a Linux guest's task layout, for sample-start */
	bool has_layout;
	struct kp_rec_task_layout layout;
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

/* ---- the VMM ---- */

static int ask_vm(struct hrec *R)
{
	json_object *reply, *arr;
	char err[512];
	long long v;
	int r;

	r = vm_client_connect(&R->vm, R->o->vm, err, sizeof(err));
	if (!r)
		r = vm_client_simple(&R->vm, "status", &reply, err, sizeof(err));
	if (r) {
		fprintf(stderr, "kvmprof: %s\n", err);
		return r;
	}
	r = vm_client_int(reply, "pid", 1, INT32_MAX, &v);
	json_object_put(reply);
	if (r) {
		fprintf(stderr, "kvmprof: %s: status reply has no valid \"pid\": not a kvmprof-vmm?\n", R->o->vm);
		return r;
	}
	R->vmm_pid = (pid_t)v;
	r = vm_client_simple(&R->vm, "vcpus", &reply, err, sizeof(err));
	if (r) {
		fprintf(stderr, "kvmprof: %s: vcpus: %s\n", R->o->vm, err);
		return r;
	}
	if (json_object_object_get_ex(reply, "vcpus", &arr) && json_object_is_type(arr, json_type_array)) {
		size_t n = json_object_array_length(arr);

		for (size_t i = 0; i < n && R->nvcpus < MAX_VCPUS; i++) {
			json_object *o = json_object_array_get_idx(arr, i);

			/* A tid is null for the microseconds before a vCPU thread runs: 0 then. */
			R->vcpu_tid[R->nvcpus++] = vm_client_int(o, "tid", 1, INT32_MAX, &v) ? 0 : v;
		}
	}
	json_object_put(reply);
	return 0;
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
	a->sample_type = CONVERT_SAMPLE_TYPE | (R->o->rec.callgraph ? PERF_SAMPLE_CALLCHAIN : 0);
	if (R->ev_flags & KP_EVENT_FREQ) {
		a->freq = 1;
		a->sample_freq = R->ev_rate;
	} else {
		a->sample_period = R->ev_rate;
	}
	a->disabled = 1;
	a->inherit = 1;
	a->sample_id_all = 1;
	/* Hardware counters must run in guest mode too: their guest-mode samples are then dropped by cpumode. */
	a->exclude_guest = 0;
	/* The clock the VMM stamps guest samples with, so both sides share a time line. */
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	if (tracking) {
		a->mmap = 1;
		a->mmap2 = 1;
		a->comm = 1;
		a->comm_exec = 1;
		a->task = 1;
	}
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
		fprintf(stderr, "kvmprof: perf_event_open %s on thread %d of the VMM: %s\n", R->ev.name, (int)R->tids[0],
			strerror(e));
		if (e == EACCES || e == EPERM)
			fprintf(stderr, "kvmprof: not allowed; see kernel.perf_event_paranoid, or run as root\n");
		return -e;
	}
}

static int open_events(struct hrec *R)
{
	char dir[64];
	int r;

	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)R->vmm_pid);
	r = procfs_list_ids(dir, &R->tids, &R->ntids);
	if (r || !R->ntids) {
		fprintf(stderr, "kvmprof: VMM pid %d: %s\n", (int)R->vmm_pid,
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
			r = perf_rings_add(&R->rs, c, (int)fd, HOST_EVENT_ID, RING_PAGES);
			if (r)
				return r;
		}
	}
	if (!R->rs.nfds) {
		fprintf(stderr, "kvmprof: every thread of VMM pid %d exited before sampling began\n", (int)R->vmm_pid);
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
		const struct kallsyms_sym *s = kallsyms_find(ks, guest_entry_symbols[i], KALLSYMS_IMAGE_OR_MODULE);

		if (s && kallsyms_is_text(s->type) && s->end > s->addr) {
			R->entry_lo[i] = s->addr;
			R->entry_hi[i] = s->end;
			R->entry_known = true;
		}
	}
	kallsyms_free(ks);
}

static bool keep_host_sample(void *ctx, const struct kp_rec_sample *s, uint16_t misc)
{
	struct hrec *R = ctx;
	uint16_t mode = misc & PERF_RECORD_MISC_CPUMODE_MASK;

	if (mode == PERF_RECORD_MISC_GUEST_KERNEL || mode == PERF_RECORD_MISC_GUEST_USER) {
		R->in_guest_mode++;
		return false;
	}
	if (s->cpl == KP_CPL_KERNEL)
		for (size_t i = 0; i < NR_GUEST_ENTRY; i++)
			if (s->ip >= R->entry_lo[i] && s->ip < R->entry_hi[i]) {
				R->in_guest_entry++;
				return false;
			}
	return true;
}

/* ---- the file ---- */

static int write_preamble(struct hrec *R)
{
	char buf[64 + MAX_VCPUS * 24], *text = NULL;
	size_t n = 0, len;
	struct kp_rec_event ev;
	bool hidden;
	int r;

	r = emit_meta_system(&R->e);
	if (!r) {
		snprintf(buf, sizeof(buf), "system-wide: kvmprof-vmm pid %d (control socket %s)", (int)R->vmm_pid,
			 R->o->vm);
		r = kp_writer_meta(R->w, "command", buf);
	}
	if (!r)
		r = kp_writer_meta(R->w, "pmu", R->pmu);
	if (!r) {
		snprintf(buf, sizeof(buf), "%d", (int)R->vmm_pid);
		r = kp_writer_meta(R->w, "vmm_pid", buf);
	}
	for (int i = 0; i < R->nvcpus && n < sizeof(buf); i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%lld", i ? "," : "", R->vcpu_tid[i]);
	if (!r)
		r = kp_writer_meta(R->w, "vcpu_tids", n ? buf : "");
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
	char buf[64];
	int r;

	snprintf(buf, sizeof(buf), "%" PRIu64, R->in_guest_mode + R->in_guest_entry);
	r = kp_writer_meta(R->w, "host_samples_in_guest", buf);
	if (!r)
		r = kp_writer_meta(R->w, "host_guest_rule",
				   R->entry_known ? "perf guest cpumode, or the host kernel's pvm_do_nmi_irqoff"
						  : "perf guest cpumode");
	if (!r)
		r = kp_writer_meta(R->w, "guest_sampling", R->guest_status);
	if (!r && R->sampling) {
		uint64_t lost = guest_rings_lost(&R->gr);

		snprintf(buf, sizeof(buf), "%" PRIu64, R->gr.samples);
		r = kp_writer_meta(R->w, "guest_samples", buf);
		if (!r && R->capture_known) {
			snprintf(buf, sizeof(buf), "%" PRIu64, R->capture_mean_ns);
			r = kp_writer_meta(R->w, "guest_capture_mean_ns", buf);
		}
		if (!r && R->capture_known) {
			snprintf(buf, sizeof(buf), "%" PRIu64, R->capture_max_ns);
			r = kp_writer_meta(R->w, "guest_capture_max_ns", buf);
		}
		if (!r) {
			snprintf(buf, sizeof(buf), "%" PRIu64, guest_rings_exits_dropped(&R->gr));
			r = kp_writer_meta(R->w, "vm_exits_dropped", buf);
		}
		if (!r && lost) {
			struct kp_rec_lost l = { .event_id = HOST_EVENT_ID, .lost = lost };

			r = kp_writer_add(R->w, KP_REC_LOST, &l, sizeof(l));
		}
	}
	return r;
}

/* ---- guest sampling through the VMM ---- */

/*
 * The TASK_LAYOUT record of a Linux guest's export (--guest-export). The
 * whole stream is read, not just up to the record: an export cut short or
 * corrupted in transit would fail the report later, so it fails here,
 * before anything is recorded. The file is the guest's word; the reader
 * checked its shape, the VMM checks the numbers again. 0 (with or without
 * a layout, said on stderr), or 1 when the file cannot be read.
 */
static int read_guest_layout(struct hrec *R)
{
	const char *path = R->o->guest_export;
	struct kp_reader *rd;
	struct kp_record rec;
	char err[512], why[KP_META_MAX] = "the export has none (an agent older than sample file 1.3?)";
	int r;

	if (!path)
		return 0;
	if (kp_reader_open(&rd, path, err, sizeof(err))) {
		fprintf(stderr, "kvmprof: --guest-export: %s\n", err);
		return 1;
	}
	while ((r = kp_reader_next(rd, &rec, err, sizeof(err))) > 0) {
		if (rec.type == KP_REC_TASK_LAYOUT && !R->has_layout) {
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
		return 1;
	}
	if (!R->has_layout)
		fprintf(stderr, "kvmprof: no task layout in %s (%s): guest samples will not name Linux processes\n",
			path, why);
	return 0;
}

static void add_hex(json_object *o, const char *key, uint64_t v)
{
	char buf[24];

	/* A string: kernel addresses do not fit JSON's int64 (docs/control-socket.md). */
	snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
	json_object_object_add(o, key, json_object_new_string(buf));
}

static json_object *layout_json(const struct kp_rec_task_layout *l)
{
	json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	add_hex(o, "current_task", l->current_task);
	add_hex(o, "per_cpu_offset", l->per_cpu_offset);
	json_object_object_add(o, "pid", json_object_new_int64(l->task_pid));
	json_object_object_add(o, "tgid", json_object_new_int64(l->task_tgid));
	json_object_object_add(o, "comm", json_object_new_int64(l->task_comm));
	json_object_object_add(o, "comm_size", json_object_new_int64(l->task_comm_size));
	json_object_object_add(o, "task_size", json_object_new_int64(l->task_size));
	return o;
}

static void start_guest_sampling(struct hrec *R)
{
	json_object *req = json_object_new_object(), *reply = NULL;
	char err[512];
	int fd = -1, r;

	if (!req)
		return;
	json_object_object_add(req, "cmd", json_object_new_string("sample-start"));
	/* The host samples' event and rate, so both sides' samples weigh the same. */
	json_object_object_add(req, "event", json_object_new_string(R->ev.attr.type == PERF_TYPE_SOFTWARE &&
								   (R->ev_flags & KP_EVENT_FALLBACK)
							   ? "cpu-clock" : R->ev.name));
	if (R->ev_flags & KP_EVENT_FREQ)
		json_object_object_add(req, "freq", json_object_new_int64((int64_t)R->ev_rate));
	else
		json_object_object_add(req, "period", json_object_new_int64((int64_t)R->ev_rate));
	json_object_object_add(req, "callgraph", json_object_new_boolean(R->o->rec.callgraph));
	/* A VM_EXIT record per exit, with its host interval: what host samples of a vCPU thread were for. */
	json_object_object_add(req, "exits", json_object_new_boolean(!R->o->no_exits));
	if (R->has_layout)
		json_object_object_add(req, "linux", layout_json(&R->layout));
	r = vm_client_call(&R->vm, req, &reply, &fd, VM_CLIENT_TIMEOUT_MS, err, sizeof(err));
	json_object_put(req);
	json_object_put(reply);
	if (r) {
		fprintf(stderr, "kvmprof: no guest samples (sample-start: %s): recording the VMM's threads from the host only\n",
			err);
		snprintf(R->guest_status, sizeof(R->guest_status), "unavailable: %s", err);
		if (r == -ECONNRESET)
			R->vm_gone = true;
		return;
	}
	if (fd < 0) {
		fprintf(stderr, "kvmprof: sample-start gave no ring descriptor: recording the host side only\n");
		snprintf(R->guest_status, sizeof(R->guest_status), "unavailable: sample-start passed no ring");
		return;
	}
	r = guest_rings_map(&R->gr, fd, err, sizeof(err));
	close(fd);
	if (r) {
		fprintf(stderr, "kvmprof: %s: recording the host side only\n", err);
		snprintf(R->guest_status, sizeof(R->guest_status), "unavailable: %s", err);
		return;
	}
	R->sampling = true;
	snprintf(R->guest_status, sizeof(R->guest_status), "on: %u vCPU rings%s", R->gr.nr_rings,
		 R->has_layout ? ", Linux task layout from the guest's export" : "");
	/* Which layout named the guest's processes, kept with the samples it named. */
	if (R->has_layout && kp_writer_add(R->w, KP_REC_TASK_LAYOUT, &R->layout, sizeof(R->layout)))
		fprintf(stderr, "kvmprof: cannot write the task layout record\n");
}

static void stop_guest_sampling(struct hrec *R)
{
	json_object *reply, *mean, *max;
	char err[512];

	if (!R->sampling || R->vm_gone)
		return;

	if (vm_client_simple(&R->vm, "sample-stop", &reply, err, sizeof(err))) {
		fprintf(stderr, "kvmprof: sample-stop: %s\n", err);
		return;
	}
	/* What one guest sample cost the VMM's vCPU thread (for benchmarks and the curious). */
	if (json_object_object_get_ex(reply, "capture_mean_ns", &mean) && json_object_is_type(mean, json_type_int) &&
	    json_object_object_get_ex(reply, "capture_max_ns", &max) && json_object_is_type(max, json_type_int) &&
	    json_object_get_int64(mean) >= 0 && json_object_get_int64(max) >= 0) {
		R->capture_known = true;
		R->capture_mean_ns = (uint64_t)json_object_get_int64(mean);
		R->capture_max_ns = (uint64_t)json_object_get_int64(max);
	}
	json_object_put(reply);
}

/* ---- the loop ---- */

/* The guest's rings, after the host's (perf_rings_drain): the VMM writes them as it samples. */
static int drain_guest(struct hrec *R)
{
	return R->sampling ? guest_rings_drain(&R->gr, R->w) : 0;
}

/* Whether the control connection was closed by the VMM (it exited). */
static bool vm_closed(struct hrec *R)
{
	char c;
	ssize_t n = recv(R->vm.fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);

	return n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR);
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
		" lost, %.1f MB ", kp_writer_samples(R->w) - R->gr.samples, R->gr.samples,
		R->conv.lost + guest_rings_lost(&R->gr), (double)kp_writer_bytes(R->w) / 1e6);
	shown = true;
}

struct loop {
	struct hrec *R;
	bool tty;
	uint64_t last_progress, end; /* end: --duration's, 0 without one */
};

/* After each drain of the host rings: the guest's, progress, then whether to stop. */
static int loop_step(void *ctx, short vm_revents)
{
	struct loop *L = ctx;
	struct hrec *R = L->R;
	uint64_t now;
	int r = drain_guest(R);

	if (r)
		return r;
	now = emit_now_ns();
	if (L->tty && now - L->last_progress >= 1000000000ull) {
		progress(R, false);
		L->last_progress = now;
	}
	if (stop_signal || (L->end && now >= L->end))
		return 1;
	if ((vm_revents & (POLLIN | POLLHUP | POLLERR)) && vm_closed(R)) {
		if (L->tty)
			progress(R, true);
		fprintf(stderr, "kvmprof: the VM went away (control socket closed) after %.1f s; keeping what was "
				"recorded\n", (double)(now - R->t_start) / 1e9);
		R->vm_gone = true;
		return 1;
	}
	return 0;
}

static int record_loop(struct hrec *R)
{
	struct loop L = { .R = R, .tty = !R->o->rec.quiet && isatty(2), .last_progress = emit_now_ns(),
			  .end = R->o->duration > 0 ? R->t_start + (uint64_t)(R->o->duration * 1e9) : 0 };
	/* The control socket too: the VMM closing it means the VM is gone. */
	int r = perf_rings_loop(&R->rs, &R->conv, R->vm.fd, POLL_MS, loop_step, &L);

	if (L.tty)
		progress(R, true);
	return r;
}

static void cleanup(struct hrec *R)
{
	perf_rings_free(&R->rs);
	free(R->tids);
	guest_rings_unmap(&R->gr);
	emit_fini(&R->e);
	vm_client_close(&R->vm);
}

static int finish(struct hrec *R)
{
	uint64_t duration = emit_now_ns() - R->t_start, samples = kp_writer_samples(R->w);
	uint64_t lost = R->conv.lost + guest_rings_lost(&R->gr), bytes;
	uint64_t dropped = R->in_guest_mode + R->in_guest_entry;
	int r;

	r = write_epilogue(R);
	if (r)
		return r;
	r = record_output_close(R->w, &R->out_fd, lost, duration, &bytes);
	R->w = NULL;
	if (r)
		return r;
	fprintf(stderr, "kvmprof: %" PRIu64 " host samples (%" PRIu64 " more fell in guest code: left to the guest's "
		"samples), %" PRIu64 " guest samples%s, %" PRIu64 " lost in %.1f s, written to %s (%.2f MB)\n",
		samples - R->gr.samples, dropped, R->gr.samples, R->sampling ? "" : " (no guest sampler)", lost,
		(double)duration / 1e9, R->out_name, (double)bytes / 1e6);
	if (R->capture_known)
		fprintf(stderr, "kvmprof: the VMM took each guest sample in %.2f us on average (max %.2f us)\n",
			(double)R->capture_mean_ns / 1e3, (double)R->capture_max_ns / 1e3);
	if (R->gr.bad)
		fprintf(stderr, "kvmprof: %" PRIu64 " malformed records in the guest sample rings were skipped\n",
			R->gr.bad);
	return 0;
}

int host_record_run(const struct host_record_opts *o)
{
	static struct hrec R; /* large; static keeps it off the stack */
	const char *out = o->rec.output ? o->rec.output : RECORD_DEFAULT_OUTPUT;
	struct rlimit rl;
	int r, ncpus;
	bool ok = false;

	memset(&R, 0, sizeof(R));
	R.o = o;
	R.out_fd = -1;
	R.vm.fd = R.vm.passed_fd = -1;
	stop_signal = 0;
	snprintf(R.guest_status, sizeof(R.guest_status), "not asked");
	install_signals();
	pick_event(&R);
	ncpus = procfs_online_cpus(R.cpus, MAX_CPUS);
	if (ncpus < 0) {
		fprintf(stderr, "kvmprof: /sys/devices/system/cpu/online: %s\n", strerror(-ncpus));
		return 1;
	}
	R.ncpus = ncpus;
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (read_guest_layout(&R) || ask_vm(&R) || open_events(&R))
		goto out;
	/* Only now that the VM answered: a wrong socket must not clobber an earlier file. */
	R.out_name = out;
	if (!strcmp(out, "-")) {
		R.out_fd = 1;
		R.out_name = "standard output";
	} else {
		R.out_fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (R.out_fd < 0) {
			fprintf(stderr, "kvmprof: cannot create %s: %s\n", out, strerror(errno));
			goto out;
		}
	}
	r = kp_writer_open(&R.w, R.out_fd, KP_SOURCE_HOST_PROFILER);
	if (r)
		goto write_error;
	emit_init(&R.e, R.w);
	R.conv = (struct convert_ctx){ .e = &R.e, .ids = R.rs.ids, .nids = R.rs.nids, .callchain = o->rec.callgraph,
				       .keep_sample = keep_host_sample, .keep_ctx = &R };
	r = write_preamble(&R);
	if (r)
		goto write_error;
	R.t_start = emit_now_ns();
	perf_rings_enable(&R.rs, true);
	/* The VMM's threads and mappings as they are now; perf reports later changes. */
	r = emit_process(&R.e, R.vmm_pid, 0);
	if (r && r != -ESRCH)
		goto write_error;
	start_guest_sampling(&R);
	r = record_loop(&R);
	perf_rings_enable(&R.rs, false);
	stop_guest_sampling(&R);
	if (!r)
		r = perf_rings_drain(&R.rs, &R.conv);
	if (!r)
		r = drain_guest(&R);
	if (!r)
		r = finish(&R);
	if (r)
		goto write_error;
	ok = true;
	goto out;

write_error:
	fprintf(stderr, "kvmprof: writing %s: %s\n", R.out_name, strerror(-r));
	if (R.w)
		kp_writer_abort(R.w);
	R.w = NULL;
out:
	if (R.out_fd > 1)
		close(R.out_fd);
	cleanup(&R);
	return ok ? 0 : 1;
}
