/* SPDX-License-Identifier: MIT */
/*
 * kvmprof-vmm as a recording's VM (vm_target.h): the control socket gives
 * the pid and the vCPU thread ids (kept in META for the report);
 * sample-start hands over a memfd of rings (include/kvmprof/guest_ring.h)
 * whose records, the VMM's own guest samples and VM exits, are copied as
 * they are. Host samples of guest time are dropped: the VMM's guest
 * sampler accounts for that time with guest addresses.
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "collection/emit.h"
#include "guest_ring_reader.h"
#include "vm_client.h"
#include "vm_target.h"

struct vmm_target {
	const char *socket;
	struct vm_client vm;
	bool sampling; /* the VMM's guest sampler runs for us */
	bool gone;
	struct guest_rings gr;
	/* sample-stop's figures of the VMM's own cost per guest sample (none if the VM went first) */
	bool capture_known;
	uint64_t capture_mean_ns, capture_max_ns;
	bool has_layout;
};

/* The pid (status), then the vCPU threads (vcpus, which record needs for the report and stat does not). */
static int ask_vm(struct vm_target *t, struct vmm_target *v, bool need_vcpus)
{
	json_object *reply, *arr;
	char err[512];
	long long pid;
	int r;

	r = vm_client_connect(&v->vm, v->socket, err, sizeof(err));
	if (!r)
		r = vm_client_simple(&v->vm, "status", &reply, err, sizeof(err));
	if (r) {
		fprintf(stderr, "kvmprof: %s\n", err);
		return r;
	}
	r = vm_client_int(reply, "pid", 1, INT32_MAX, &pid);
	json_object_put(reply);
	if (r) {
		fprintf(stderr, "kvmprof: %s: status reply has no valid \"pid\": not a kvmprof-vmm?\n", v->socket);
		return r;
	}
	t->pid = (pid_t)pid;
	r = vm_client_simple(&v->vm, "vcpus", &reply, err, sizeof(err));
	if (r && need_vcpus)
		fprintf(stderr, "kvmprof: %s: vcpus: %s\n", v->socket, err);
	if (r)
		return need_vcpus ? r : 0;
	if (json_object_object_get_ex(reply, "vcpus", &arr) && json_object_is_type(arr, json_type_array)) {
		size_t n = json_object_array_length(arr);

		for (size_t i = 0; i < n && t->nvcpus < VM_TARGET_MAX_VCPUS; i++) {
			json_object *o = json_object_array_get_idx(arr, i);
			long long tid;

			/* A tid is null for the microseconds before a vCPU thread runs: 0 then. */
			t->vcpu_tid[t->nvcpus++] = vm_client_int(o, "tid", 1, INT32_MAX, &tid) ? 0 : (pid_t)tid;
		}
	}
	json_object_put(reply);
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

static int vmm_start(struct vm_target *t, struct record_session *s)
{
	struct vmm_target *v = t->priv;
	json_object *req = json_object_new_object(), *reply = NULL;
	char err[512];
	int fd = -1, r;

	if (!req)
		return -ENOMEM;
	json_object_object_add(req, "cmd", json_object_new_string("sample-start"));
	/* The host samples' event and rate, so both sides' samples weigh the same. */
	json_object_object_add(req, "event", json_object_new_string(s->event));
	json_object_object_add(req, s->freq ? "freq" : "period", json_object_new_int64((int64_t)s->rate));
	json_object_object_add(req, "callgraph", json_object_new_boolean(s->o->rec.callgraph != RECORD_CALLGRAPH_NONE));
	/* A VM_EXIT record per exit, with its host interval: what host samples of a vCPU thread were for. */
	json_object_object_add(req, "exits", json_object_new_boolean(!s->o->no_exits));
	if (s->layout)
		json_object_object_add(req, "linux", layout_json(s->layout));
	r = vm_client_call(&v->vm, req, &reply, &fd, VM_CLIENT_TIMEOUT_MS, err, sizeof(err));
	json_object_put(req);
	json_object_put(reply);
	if (r == -EREMOTEIO) {
		/* Its own answer to what was asked: recording the host side alone would hide that. */
		fprintf(stderr, "kvmprof: %s refused guest sampling: %s\n", v->socket, err);
		return -ECANCELED;
	}
	if (r) {
		fprintf(stderr, "kvmprof: no guest samples (sample-start: %s): recording the VMM's threads from the host only\n",
			err);
		snprintf(t->guest_status, sizeof(t->guest_status), "unavailable: %s", err);
		if (r == -ECONNRESET)
			v->gone = true;
		return 0;
	}
	if (fd < 0) {
		fprintf(stderr, "kvmprof: sample-start gave no ring descriptor: recording the host side only\n");
		snprintf(t->guest_status, sizeof(t->guest_status), "unavailable: sample-start passed no ring");
		return 0;
	}
	r = guest_rings_map(&v->gr, fd, err, sizeof(err));
	close(fd);
	if (r) {
		fprintf(stderr, "kvmprof: %s: recording the host side only\n", err);
		snprintf(t->guest_status, sizeof(t->guest_status), "unavailable: %s", err);
		return 0;
	}
	v->sampling = true;
	v->has_layout = s->layout != NULL;
	snprintf(t->guest_status, sizeof(t->guest_status), "on: %u vCPU rings%s", v->gr.nr_rings,
		 s->layout ? ", Linux task layout from the guest's export" : "");
	/* Which layout named the guest's processes, kept with the samples it named. */
	if (s->layout && kp_writer_add(s->w, KP_REC_TASK_LAYOUT, s->layout, sizeof(*s->layout)))
		fprintf(stderr, "kvmprof: cannot write the task layout record\n");
	return 0;
}

/* Whether the control connection was closed by the VMM (it exited). */
static bool vm_closed(struct vmm_target *v)
{
	char c;
	ssize_t n = recv(v->vm.fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);

	return n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR);
}

static bool vmm_gone(struct vm_target *t, short revents)
{
	struct vmm_target *v = t->priv;

	if ((revents & (POLLIN | POLLHUP | POLLERR)) && vm_closed(v))
		v->gone = true;
	return v->gone;
}

/* The guest's rings, after the host's (perf_rings_drain): the VMM writes them as it samples. */
static int vmm_step(struct vm_target *t, struct record_session *s, short revents, int *next_poll_ms)
{
	struct vmm_target *v = t->priv;
	int r = v->sampling ? guest_rings_drain(&v->gr, s->w) : 0;

	(void)next_poll_ms;
	if (r)
		return r;
	if (vmm_gone(t, revents)) {
		snprintf(t->gone_why, sizeof(t->gone_why), "the VM went away (control socket closed) after %.1f s", (double)(emit_now_ns() - s->t_start) / 1e9);
		return 1;
	}
	return 0;
}

static int vmm_guest_time(struct vm_target *t, const struct kp_rec_sample *s, bool perf_ip)
{
	(void)t, (void)s, (void)perf_ip;
	return 0; /* the VMM's sampler has samples of its own for that time */
}

static int vmm_stop(struct vm_target *t, struct record_session *s)
{
	struct vmm_target *v = t->priv;
	json_object *reply, *mean, *max;
	char err[512];

	if (!v->sampling)
		return 0;
	if (!v->gone && vm_client_simple(&v->vm, "sample-stop", &reply, err, sizeof(err))) {
		fprintf(stderr, "kvmprof: sample-stop: %s\n", err);
	} else if (!v->gone) {
		/* What one guest sample cost the VMM's vCPU thread (for benchmarks and the curious). */
		if (json_object_object_get_ex(reply, "capture_mean_ns", &mean) &&
		    json_object_is_type(mean, json_type_int) && json_object_object_get_ex(reply, "capture_max_ns", &max) &&
		    json_object_is_type(max, json_type_int) && json_object_get_int64(mean) >= 0 &&
		    json_object_get_int64(max) >= 0) {
			v->capture_known = true;
			v->capture_mean_ns = (uint64_t)json_object_get_int64(mean);
			v->capture_max_ns = (uint64_t)json_object_get_int64(max);
		}
		json_object_put(reply);
	}
	return guest_rings_drain(&v->gr, s->w);
}

static int vmm_epilogue(struct vm_target *t, struct record_session *s)
{
	struct vmm_target *v = t->priv;
	uint64_t lost = guest_rings_lost(&v->gr);
	int r = 0;

	if (!v->sampling)
		return 0;
	r = kp_writer_meta_u64(s->w, "guest_samples", v->gr.samples);
	if (!r && v->capture_known)
		r = kp_writer_meta_u64(s->w, "guest_capture_mean_ns", v->capture_mean_ns);
	if (!r && v->capture_known)
		r = kp_writer_meta_u64(s->w, "guest_capture_max_ns", v->capture_max_ns);
	if (!r)
		r = kp_writer_meta_u64(s->w, "vm_exits_dropped", guest_rings_exits_dropped(&v->gr));
	if (!r && lost) {
		struct kp_rec_lost l = { .event_id = s->event_id, .lost = lost };

		r = kp_writer_add(s->w, KP_REC_LOST, &l, sizeof(l));
	}
	return r;
}

static uint64_t vmm_guest_samples(const struct vm_target *t)
{
	const struct vmm_target *v = t->priv;

	return v->gr.samples;
}

static uint64_t vmm_guest_lost(const struct vm_target *t)
{
	const struct vmm_target *v = t->priv;

	return guest_rings_lost(&v->gr);
}

static void vmm_summary(const struct vm_target *t)
{
	const struct vmm_target *v = t->priv;

	if (v->capture_known)
		fprintf(stderr, "kvmprof: the VMM took each guest sample in %.2f us on average (max %.2f us)\n",
			(double)v->capture_mean_ns / 1e3, (double)v->capture_max_ns / 1e3);
	if (v->gr.bad)
		fprintf(stderr, "kvmprof: %" PRIu64 " malformed records in the guest sample rings were skipped\n",
			v->gr.bad);
}

static void vmm_close(struct vm_target *t)
{
	struct vmm_target *v = t->priv;

	guest_rings_unmap(&v->gr);
	vm_client_close(&v->vm);
	free(v);
	t->priv = NULL;
}

static const struct vm_target_ops vmm_ops = {
	.start = vmm_start,
	.step = vmm_step,
	.guest_time = vmm_guest_time,
	.stop = vmm_stop,
	.epilogue = vmm_epilogue,
	.guest_samples = vmm_guest_samples,
	.guest_lost = vmm_guest_lost,
	.summary = vmm_summary,
	.gone = vmm_gone,
	.close = vmm_close,
};

struct vm_client *vm_target_vmm_client(struct vm_target *t)
{
	return t->ops == &vmm_ops ? &((struct vmm_target *)t->priv)->vm : NULL;
}

int vm_target_open_vmm(struct vm_target *t, const char *socket, bool for_record)
{
	struct vmm_target *v = calloc(1, sizeof(*v));

	memset(t, 0, sizeof(*t));
	t->poll_fd = -1;
	if (!v) {
		fprintf(stderr, "kvmprof: out of memory\n");
		return 1;
	}
	v->socket = socket;
	v->vm.fd = v->vm.passed_fd = -1;
	t->ops = &vmm_ops;
	t->priv = v;
	if (ask_vm(t, v, for_record)) {
		vm_target_close(t);
		return 1;
	}
	snprintf(t->vmm, sizeof(t->vmm), "kvmprof-vmm");
	snprintf(t->label, sizeof(t->label), "VM '%s' (kvmprof-vmm", socket);
	t->samples_event = true;
	snprintf(t->what, sizeof(t->what), "system-wide: kvmprof-vmm pid %d (control socket %s)", (int)t->pid, socket);
	snprintf(t->guest_status, sizeof(t->guest_status), "not asked");
	/* The control socket: the VMM closing it means the VM is gone. */
	t->poll_fd = v->vm.fd;
	t->poll_ms = 100;
	return 0;
}
