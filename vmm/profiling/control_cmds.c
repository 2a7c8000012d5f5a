// SPDX-License-Identifier: MIT
/*
 * The control socket's commands (docs/control-socket.md), each with its
 * handler in one table. The figures come from the vCPU threads with relaxed
 * atomic loads: a command never makes a vCPU wait.
 */
#include <ctype.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pmu.h"
#include "guest_sampler.h"
#include "control_exit_stats.h"
#include "control_json.h"
#include "control_plugins.h"
#include "control_session.h"
#include "vm.h"

uint64_t control_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Model off: no backend at all, whatever the command line asked for. */
static const char *control_backend_name(const struct vm *vm)
{
	return vmm_pmu_backend_name(vmm_pmu_of(vm));
}

static const char *control_status(struct control_session *ses, struct json_object *req, struct json_object *r,
				  char *buf, size_t bufsz)
{
	const struct vm *vm = ses->vm;
	const struct vm_config *cfg = vm->cfg;
	uint64_t up_ms = (control_now_ns() - ses->start_ns) / 1000000;
	char uptime[32];
	struct json_object *vpmu = json_object_new_object();

	(void)req;
	(void)buf;
	(void)bufsz;
	snprintf(uptime, sizeof(uptime), "%llu.%03llu", (unsigned long long)(up_ms / 1000),
		 (unsigned long long)(up_ms % 1000));
	control_put_u64(r, "protocol", CONTROL_PROTOCOL);
	control_put_str(r, "state", vm_stopping(ses->vm) ? "exiting" : "running");
	control_put_u64(r, "pid", (uint64_t)getpid());
	control_put_u64(r, "vcpus", cfg->ncpus);
	control_put_u64(r, "mem_bytes", cfg->mem_size);
	control_put(r, "uptime_s", json_object_new_double_s((double)up_ms / 1e3, uptime));
	control_put_str(r, "kernel", cfg->kernel_path);
	control_put(r, "bundled_guest", json_object_new_boolean(!cfg->kernel_path));
	control_put_str(r, "initrd", cfg->initrd_embedded ? NULL : cfg->initrd_path);
	control_put_str(vpmu, "model", vpmu_model_name(vmm_pmu_of(vm)->cfg.model));
	control_put_str(vpmu, "backend", control_backend_name(vm));
	control_put_str(vpmu, "mode", vpmu_mode_name(vmm_pmu_of(vm)->cfg.mode));
	control_put_u64(vpmu, "counters", vmm_pmu_of(vm)->cfg.model == VPMU_MODEL_OFF ? 0 : vmm_pmu_of(vm)->cfg.n_gp);
	control_put_u64(vpmu, "fixed_counters", vmm_pmu_of(vm)->cfg.model == VPMU_MODEL_OFF ? 0 : vmm_pmu_of(vm)->cfg.n_fixed);
	control_put(r, "vpmu", vpmu);
	control_put(r, "sampling", json_object_new_boolean(guest_sampler_running(ses->vm)));
	control_put(r, "guest_descriptor", json_object_new_boolean(guest_sampler_has_desc(ses->vm)));
	return NULL;
}

static const char *control_vcpus(struct control_session *ses, struct json_object *req, struct json_object *r,
				 char *buf, size_t bufsz)
{
	struct vm *vm = ses->vm;
	struct json_object *list = json_object_new_array();

	(void)req;
	(void)buf;
	(void)bufsz;
	control_put_u64(r, "pid", (uint64_t)getpid());
	for (unsigned int i = 0; i < vm->cfg->ncpus; i++) {
		struct json_object *e = json_object_new_object();
		pid_t tid = __atomic_load_n(&vm->vcpu[i].tid, __ATOMIC_ACQUIRE);

		control_put_u64(e, "index", i);
		/* 0 until the vCPU thread has run its first line: null, not a wrong id. */
		control_put(e, "tid", tid > 0 ? json_object_new_int(tid) : NULL);
		json_object_array_add(list, e);
	}
	control_put(r, "vcpus", list);
	return NULL;
}

/*
 * The vCPU threads update their statistics with plain stores and no lock,
 * so that the run loop never waits on this thread. Each 64-bit field is read
 * whole (an aligned load), but the fields are not one consistent snapshot.
 */
static void control_load_stats(struct vpmu_stats *dst, const struct vpmu_stats *src)
{
	const uint64_t *s = (const uint64_t *)src;
	uint64_t *d = (uint64_t *)dst;

	_Static_assert(sizeof(*src) % sizeof(uint64_t) == 0, "vpmu_stats holds only uint64_t");
	for (size_t i = 0; i < sizeof(*src) / sizeof(uint64_t); i++)
		d[i] = __atomic_load_n(&s[i], __ATOMIC_RELAXED);
}

static uint64_t control_load(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static const char *control_vpmu_stats(struct control_session *ses, struct json_object *req, struct json_object *r,
				      char *buf, size_t bufsz)
{
	struct vm *vm = ses->vm;
	struct vpmu_stats s = { 0 };
	uint64_t exits = 0;
	struct json_object *upper = json_object_new_array(), *counts = json_object_new_array();
	struct json_object *hist = json_object_new_object();

	(void)req;
	(void)buf;
	(void)bufsz;
	if (!vmm_pmu_emulating(vmm_pmu_of(vm))) {
		json_object_put(upper);
		json_object_put(counts);
		json_object_put(hist);
		return vmm_pmu_of(vm)->cfg.model == VPMU_MODEL_OFF ? "no vPMU in this run (model off)" :
		       "no emulated vPMU in this run: KVM's in-kernel vPMU keeps no figures here";
	}
	for (unsigned int i = 0; i < vm->cfg->ncpus; i++) {
		const struct vcpu_pmu *p = vcpu_pmu_of(&vm->vcpu[i]);
		const struct vpmu_perf_backend *times =
			p->backend && vmm_pmu_of(vm)->backend->times ? vmm_pmu_of(vm)->backend->times(p->backend) : NULL;
		struct vpmu_stats one;

		control_load_stats(&one, &p->v.stats);
		/* Times of counters still open live in the backend until the vCPU folds them in. */
		for (unsigned int k = 0; times && k < VPMU_MAX_COUNTERS; k++) {
			one.time_enabled_ns += control_load(&times->time_enabled[k]);
			one.time_running_ns += control_load(&times->time_running[k]);
		}
		vpmu_stats_add(&s, &one);
		exits += control_load(&p->exits);
	}
	control_put_str(r, "model", vpmu_model_name(vmm_pmu_of(vm)->cfg.model));
	control_put_str(r, "backend", control_backend_name(vm));
	control_put_str(r, "mode", vpmu_mode_name(vmm_pmu_of(vm)->cfg.mode));
	control_put_u64(r, "vcpus", vm->cfg->ncpus);
	control_put_u64(r, "vm_exits", exits);
	control_put_u64(r, "msr_reads", s.msr_reads);
	control_put_u64(r, "msr_writes", s.msr_writes);
	control_put_u64(r, "msr_gp", s.msr_gp);
	control_put_u64(r, "overflows", s.overflows);
	control_put_u64(r, "pmis_injected", s.pmis_injected);
	control_put_u64(r, "pmis_masked", s.pmis_masked);
	control_put_u64(r, "reprograms", s.reprograms);
	control_put_u64(r, "filtered_events", s.filtered_events);
	control_put_u64(r, "unsupported_events", s.unsupported_events);
	control_put_u64(r, "program_failures", s.program_failures);
	control_put_u64(r, "events_past_overflow_mean", s.overflows ? s.events_past_sum / s.overflows : 0);
	control_put_u64(r, "events_past_overflow_max", s.events_past_max);
	control_put_u64(r, "latency_mean_ns", s.pmis_injected ? s.latency_sum_ns / s.pmis_injected : 0);
	control_put_u64(r, "latency_max_ns", s.latency_max_ns);
	/* Bucket b counts latencies below 2^b us; the last one everything from 2^(b-1) us up. */
	for (unsigned int b = 0; b < VPMU_LATENCY_BUCKETS; b++) {
		json_object_array_add(upper, b == VPMU_LATENCY_BUCKETS - 1 ? NULL : json_object_new_uint64(1ULL << b));
		json_object_array_add(counts, json_object_new_uint64(s.latency_us[b]));
	}
	control_put(hist, "upper_us", upper);
	control_put(hist, "counts", counts);
	control_put(r, "latency_histogram", hist);
	control_put_u64(r, "time_enabled_ns", s.time_enabled_ns);
	control_put_u64(r, "time_running_ns", s.time_running_ns);
	return NULL;
}

/* Reads an optional positive integer key; false (with the message in buf) if it is something else. */
/*
 * An unsigned 64-bit number given as a JSON integer (at least 0) or as a
 * "0x..." hex string: kernel addresses do not fit JSON's int64, and many
 * JSON tools lose precision past 2^53.
 */
static bool control_get_addr(struct json_object *o, uint64_t *v)
{
	const char *str;
	char *end;

	if (json_object_is_type(o, json_type_int)) {
		if (json_object_get_int64(o) < 0)
			return false;
		*v = json_object_get_uint64(o);
		return true;
	}
	if (!json_object_is_type(o, json_type_string))
		return false;
	str = json_object_get_string(o);
	if (strncmp(str, "0x", 2) || !isxdigit((unsigned char)str[2]) || strlen(str) > 18)
		return false;
	errno = 0;
	*v = strtoull(str + 2, &end, 16);
	return !errno && !*end;
}

/*
 * sample-start's "linux": a Linux guest's task layout (the agent's export,
 * through kvmprof record). Shape only here; task_layout_check judges the
 * numbers.
 */
static const char *control_linux_layout(struct json_object *o, struct kp_rec_task_layout *l, char *buf,
					size_t bufsz)
{
	static const char *const keys[] = { "current_task", "per_cpu_offset", "pid", "tgid", "comm", "comm_size",
					    "task_size" };
	uint64_t v[7];

	if (!json_object_is_type(o, json_type_object))
		return "\"linux\" must be an object: {\"current_task\":\"0x...\",\"per_cpu_offset\":\"0x...\","
		       "\"pid\":N,\"tgid\":N,\"comm\":N,\"comm_size\":N,\"task_size\":N}";
	json_object_object_foreach(o, key, val) {
		bool known = false;

		(void)val;
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			known |= !strcmp(key, keys[i]);
		if (!known) {
			snprintf(buf, bufsz, "\"linux\" takes no key '%.*s'", control_clip(key, 64), key);
			return buf;
		}
	}
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		struct json_object *f;

		if (!json_object_object_get_ex(o, keys[i], &f) || !control_get_addr(f, &v[i]) ||
		    (i >= 2 && v[i] > UINT32_MAX)) {
			snprintf(buf, bufsz, "\"linux\": \"%s\" missing or not a %s", keys[i],
				 i < 2 ? "number (an integer or a \"0x...\" string)" : "32-bit integer");
			return buf;
		}
	}
	*l = (struct kp_rec_task_layout){
		.kind = KP_LAYOUT_LINUX_X86_64, .current_task = v[0], .per_cpu_offset = v[1],
		.task_pid = (uint32_t)v[2], .task_tgid = (uint32_t)v[3], .task_comm = (uint32_t)v[4],
		.task_comm_size = (uint32_t)v[5], .task_size = (uint32_t)v[6],
	};
	return NULL;
}

static const char *control_sample_start(struct control_session *ses, struct json_object *req, struct json_object *r,
					char *buf, size_t bufsz)
{
	struct guest_sampler_request sr = { .event = "cpu-clock", .period = 1000000 };
	struct kp_rec_task_layout lx;
	struct json_object *o;
	const char *bad;
	uint64_t period = 0, freq = 0;
	bool has_period, has_freq;
	char err[GUEST_SAMPLER_ERR_MAX];
	size_t ring_size;
	int fd;

	if (json_object_object_get_ex(req, "event", &o)) {
		if (!json_object_is_type(o, json_type_string))
			return "\"event\" must be a string: " GUEST_SAMPLER_EVENTS;
		sr.event = json_object_get_string(o);
	}
	if (!control_get_u64(req, "period", &period, &has_period, buf, bufsz) ||
	    !control_get_u64(req, "freq", &freq, &has_freq, buf, bufsz))
		return buf;
	if (has_period && has_freq)
		return "give \"period\" or \"freq\", not both";
	if (has_period)
		sr.period = period;
	if (has_freq) {
		const struct guest_sampler_event *ev = guest_sampler_event(sr.event);

		if (ev && ev->type != PERF_TYPE_SOFTWARE) {
			snprintf(buf, bufsz, "\"freq\" works with the clocks (cpu-clock, task-clock) only: give %s a \"period\"",
				 ev->name);
			return buf;
		}
		if (freq > 100000)
			return "\"freq\" above 100000 Hz";
		sr.period = 1000000000ULL / freq;
	}
	if (json_object_object_get_ex(req, "callgraph", &o)) {
		if (!json_object_is_type(o, json_type_boolean))
			return "\"callgraph\" must be true or false";
		sr.callgraph = json_object_get_boolean(o);
	}
	if (json_object_object_get_ex(req, "exits", &o)) {
		if (!json_object_is_type(o, json_type_boolean))
			return "\"exits\" must be true or false";
		sr.exits = json_object_get_boolean(o);
	}
	if (json_object_object_get_ex(req, "linux", &o)) {
		bad = control_linux_layout(o, &lx, buf, bufsz);
		if (bad)
			return bad;
		sr.lx = &lx;
	}
	if (ses->pass_fd >= 0)
		return "the previous ring descriptor has not been sent yet: read the replies";
	if (vm_stopping(ses->vm))
		return "the VM is exiting";
	if (guest_sampler_start(ses->vm, &sr, &fd, &ring_size, err)) {
		snprintf(buf, bufsz, "%s", err);
		return buf;
	}
	ses->sampling = true;
	ses->pass_fd = fd; /* the connection sends it with this reply */
	control_put_str(r, "event", sr.event);
	control_put_u64(r, "period", sr.period);
	control_put(r, "callgraph", json_object_new_boolean(sr.callgraph));
	control_put(r, "exits", json_object_new_boolean(sr.exits));
	control_put_u64(r, "vcpus", ses->vm->cfg->ncpus);
	control_put_u64(r, "ring_size", ring_size);
	control_put_u64(r, "data_size", GUEST_SAMPLER_DATA_SIZE);
	/* How samples name guest processes: the Linux layout, or the descriptor the guest registers (if it does). */
	control_put_str(r, "processes", sr.lx ? "linux" : "descriptor");
	return NULL;
}

static const char *control_sample_stop(struct control_session *ses, struct json_object *req, struct json_object *r,
				       char *buf, size_t bufsz)
{
	struct guest_sampler_totals t;

	(void)req;
	(void)buf;
	(void)bufsz;
	if (!guest_sampler_running(ses->vm))
		return "guest sampling is not running";
	if (!ses->sampling)
		return "guest sampling belongs to another connection";
	guest_sampler_stop(ses->vm, &t);
	ses->sampling = false;
	control_put_u64(r, "samples", t.samples);
	control_put_u64(r, "lost", t.lost);
	control_put_u64(r, "records", t.records);
	control_put_u64(r, "vm_exits", t.vm_exits);
	control_put_u64(r, "vm_exits_dropped", t.vm_exits_dropped);
	control_put_u64(r, "kick_exits", t.kick_exits);
	control_put_u64(r, "kicks_no_period", t.kicks_no_period);
	control_put_u64(r, "capture_mean_ns", t.capture_mean_ns);
	control_put_u64(r, "capture_max_ns", t.capture_max_ns);
	return NULL;
}

static const char *const control_no_keys[] = { NULL };
static const char *const control_sample_keys[] = { "event", "period", "freq", "callgraph", "exits", "linux", NULL };

static const struct control_cmd control_cmds[] = {
	{ "status", control_no_keys, control_status },
	{ "vcpus", control_no_keys, control_vcpus },
	{ "vpmu-stats", control_no_keys, control_vpmu_stats },
	{ "sample-start", control_sample_keys, control_sample_start },
	{ "sample-stop", control_no_keys, control_sample_stop },
	{ "exit-stats", control_exit_stats_keys, control_exit_stats },
	{ "plugin-load", control_plugin_load_keys, control_plugin_load },
	{ "plugin-unload", control_plugin_id_keys, control_plugin_unload },
	{ "plugin-list", control_no_keys, control_plugin_list },
	{ "plugin-output", control_plugin_output_keys, control_plugin_output },
	{ "event-list", control_event_list_keys, control_event_list },
	{ "event-set", control_event_set_keys, control_event_set },
};

#define CONTROL_NCMDS (sizeof(control_cmds) / sizeof(control_cmds[0]))

const struct control_cmd *control_cmd_find(const char *name)
{
	for (size_t i = 0; i < CONTROL_NCMDS; i++)
		if (!strcmp(name, control_cmds[i].name))
			return &control_cmds[i];
	return NULL;
}

void control_cmd_list(char *buf, size_t size)
{
	size_t used = 0;

	if (size)
		buf[0] = '\0';
	for (size_t i = 0; i < CONTROL_NCMDS && used < size; i++) {
		const char *sep = i == 0 ? "" : i + 1 == CONTROL_NCMDS ? " or " : ", ";
		int n = snprintf(buf + used, size - used, "%s%s", sep, control_cmds[i].name);

		if (n < 0)
			return;
		used += (size_t)n;
	}
}

void control_session_end(struct control_session *ses)
{
	struct guest_sampler_totals t;

	if (ses->sampling)
		guest_sampler_stop(ses->vm, &t); /* sampling belongs to the connection that started it */
	ses->sampling = false;
	control_exit_stats_end(ses);
	if (ses->pass_fd >= 0)
		close(ses->pass_fd);
	ses->pass_fd = -1;
}
