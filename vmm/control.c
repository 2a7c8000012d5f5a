// SPDX-License-Identifier: MIT
/*
 * The control socket: the host profiler's way into a running VMM. One thread
 * polls the listening socket, a wake-up eventfd and up to
 * CONTROL_MAX_CLIENTS clients, all non-blocking. Each request is one line of
 * JSON (a flat object) and gets exactly one line of JSON back. Whatever a
 * client does (garbage, endless lines, never reading) costs it its own
 * connection at worst: the VM and the other clients go on.
 */
#include <ctype.h>
#include <errno.h>
#include <json.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "control.h"
#include "vm.h"

_Static_assert(CONTROL_PATH_MAX + 1 == sizeof(((struct sockaddr_un *)0)->sun_path),
	       "CONTROL_PATH_MAX follows sun_path");

#define CONTROL_PROTOCOL 1
/* Bytes read from one client per poll round, so that a fast client cannot starve the others. */
#define CONTROL_READ_BUDGET (4 * CONTROL_LINE_MAX)

struct control_client {
	int fd; /* -1: a free slot */
	bool closing; /* read no more; close once the queued replies are out */
	bool sampling; /* this connection started guest sampling: it stops when the client goes */
	struct vm *vm;
	int pass_fd;    /* -1, or a descriptor to send with the byte of out at pass_at (SCM_RIGHTS) */
	size_t pass_at;
	size_t in_len, out_len;
	char in[CONTROL_LINE_MAX];
	char out[CONTROL_OUT_MAX];
};

struct control {
	char path[CONTROL_PATH_MAX + 1];
	dev_t dev; /* the socket file we made: only that one is removed at exit */
	ino_t ino;
	int listen_fd, wake_fd;
	struct vm *vm;
	pthread_t thread;
	bool started;
	uint64_t start_ns;
	struct control_client client[CONTROL_MAX_CLIENTS];
};

static uint64_t control_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int control_fail(char err[CONTROL_ERR_MAX], int e, const char *fmt, const char *path)
{
	int n = snprintf(err, CONTROL_ERR_MAX, fmt, path);

	if (e && n >= 0 && n < CONTROL_ERR_MAX)
		snprintf(err + n, (size_t)(CONTROL_ERR_MAX - n), ": %s", strerror(e));
	return -(e ? e : EINVAL);
}

/*
 * Whatever is at path must be a socket nobody accepts on (left by a VMM
 * that was killed): that one is removed. A live socket or any other kind of
 * file is never touched.
 */
static int control_clear_path(const struct sockaddr_un *addr, char err[CONTROL_ERR_MAX])
{
	const char *path = addr->sun_path;
	struct stat st;
	int fd, rc;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : control_fail(err, errno, "control socket %s", path);
	if (!S_ISSOCK(st.st_mode))
		return control_fail(err, 0, "control socket %s: exists and is not a socket: not replaced", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return control_fail(err, errno, "control socket %s", path);
	rc = connect(fd, (const struct sockaddr *)addr, sizeof(*addr));
	close(fd);
	if (rc == 0)
		return control_fail(err, 0, "control socket %s: another process is listening there", path);
	if (errno != ECONNREFUSED)
		return control_fail(err, errno, "control socket %s", path);
	if (unlink(path) < 0 && errno != ENOENT)
		return control_fail(err, errno, "control socket %s: cannot remove the stale socket", path);
	return 0;
}

int control_open(const char *path, struct control **out, char err[CONTROL_ERR_MAX])
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct control *c;
	struct stat st;
	mode_t old_mask;
	int rc;

	*out = NULL;
	if (strlen(path) > CONTROL_PATH_MAX)
		return control_fail(err, ENAMETOOLONG, "control socket %s", path);
	memcpy(addr.sun_path, path, strlen(path) + 1);
	rc = control_clear_path(&addr, err);
	if (rc)
		return rc;
	c = calloc(1, sizeof(*c));
	if (!c)
		return control_fail(err, ENOMEM, "control socket %s", path);
	memcpy(c->path, path, strlen(path) + 1);
	c->wake_fd = -1;
	for (unsigned int i = 0; i < CONTROL_MAX_CLIENTS; i++)
		c->client[i].fd = c->client[i].pass_fd = -1;
	c->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (c->listen_fd < 0) {
		rc = control_fail(err, errno, "control socket %s", path);
		free(c);
		return rc;
	}
	/* The umask makes the file 0600 from its creation: no window in which others may connect. */
	old_mask = umask(0177);
	rc = bind(c->listen_fd, (struct sockaddr *)&addr, sizeof(addr));
	umask(old_mask);
	if (rc < 0) {
		rc = control_fail(err, errno, "control socket %s", path);
		close(c->listen_fd);
		free(c);
		return rc;
	}
	if (stat(path, &st) == 0) {
		c->dev = st.st_dev;
		c->ino = st.st_ino;
	}
	c->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->wake_fd < 0 || listen(c->listen_fd, CONTROL_MAX_CLIENTS) < 0) {
		rc = control_fail(err, errno, "control socket %s", path);
		control_close(c);
		return rc;
	}
	*out = c;
	return 0;
}

/* --- replies ---------------------------------------------------------------- */

/* Model off: no backend at all, whatever the command line asked for. */
static const char *control_backend_name(const struct vm *vm)
{
	return vm->pmu.cfg.model == VPMU_MODEL_OFF ? "none" : vpmu_backend_name(vm->pmu.backend);
}

static void control_put(struct json_object *o, const char *key, struct json_object *v)
{
	json_object_object_add(o, key, v);
}

static void control_put_u64(struct json_object *o, const char *key, uint64_t v)
{
	json_object_object_add(o, key, json_object_new_uint64(v));
}

static void control_put_str(struct json_object *o, const char *key, const char *s)
{
	json_object_object_add(o, key, s ? json_object_new_string(s) : NULL);
}

static void control_status(struct control *c, struct json_object *r)
{
	const struct vm *vm = c->vm;
	const struct vm_config *cfg = vm->cfg;
	uint64_t up_ms = (control_now_ns() - c->start_ns) / 1000000;
	char uptime[32];
	struct json_object *vpmu = json_object_new_object();

	snprintf(uptime, sizeof(uptime), "%llu.%03llu", (unsigned long long)(up_ms / 1000),
		 (unsigned long long)(up_ms % 1000));
	control_put_u64(r, "protocol", CONTROL_PROTOCOL);
	control_put_str(r, "state", vm_stopping(c->vm) ? "exiting" : "running");
	control_put_u64(r, "pid", (uint64_t)getpid());
	control_put_u64(r, "vcpus", cfg->ncpus);
	control_put_u64(r, "mem_bytes", cfg->mem_size);
	control_put(r, "uptime_s", json_object_new_double_s((double)up_ms / 1e3, uptime));
	control_put_str(r, "kernel", cfg->kernel_path);
	control_put(r, "bundled_guest", json_object_new_boolean(!cfg->kernel_path));
	control_put_str(r, "initrd", cfg->initrd_embedded ? NULL : cfg->initrd_path);
	control_put_str(vpmu, "model", vpmu_model_name(vm->pmu.cfg.model));
	control_put_str(vpmu, "backend", control_backend_name(vm));
	control_put_str(vpmu, "mode", vpmu_mode_name(vm->pmu.cfg.mode));
	control_put_u64(vpmu, "counters", vm->pmu.cfg.model == VPMU_MODEL_OFF ? 0 : vm->pmu.cfg.n_gp);
	control_put_u64(vpmu, "fixed_counters", vm->pmu.cfg.model == VPMU_MODEL_OFF ? 0 : vm->pmu.cfg.n_fixed);
	control_put(r, "vpmu", vpmu);
	control_put(r, "sampling", json_object_new_boolean(guest_sampler_running(c->vm)));
	control_put(r, "guest_descriptor", json_object_new_boolean(guest_sampler_has_desc(c->vm)));
}

static void control_vcpus(struct control *c, struct json_object *r)
{
	struct vm *vm = c->vm;
	struct json_object *list = json_object_new_array();

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

/* Returns the error text, or NULL when r holds the figures. */
static const char *control_vpmu_stats(struct control *c, struct json_object *r)
{
	struct vm *vm = c->vm;
	struct vpmu_stats s = { 0 };
	uint64_t exits = 0;
	struct json_object *upper = json_object_new_array(), *counts = json_object_new_array();
	struct json_object *hist = json_object_new_object();

	if (!vmm_pmu_emulating(&vm->pmu)) {
		json_object_put(upper);
		json_object_put(counts);
		json_object_put(hist);
		return vm->pmu.cfg.model == VPMU_MODEL_OFF ? "no vPMU in this run (model off)" :
		       "no emulated vPMU in this run: KVM's in-kernel vPMU keeps no figures here";
	}
	for (unsigned int i = 0; i < vm->cfg->ncpus; i++) {
		const struct vcpu_pmu *p = &vm->vcpu[i].pmu;
		struct vpmu_stats one;

		control_load_stats(&one, &p->v.stats);
		/* Times of counters still open live in the backend until the vCPU folds them in. */
		for (unsigned int k = 0; k < VPMU_MAX_COUNTERS; k++) {
			one.time_enabled_ns += control_load(&p->perf.time_enabled[k]);
			one.time_running_ns += control_load(&p->perf.time_running[k]);
		}
		vpmu_stats_add(&s, &one);
		exits += control_load(&p->exits);
	}
	control_put_str(r, "model", vpmu_model_name(vm->pmu.cfg.model));
	control_put_str(r, "backend", control_backend_name(vm));
	control_put_str(r, "mode", vpmu_mode_name(vm->pmu.cfg.mode));
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

/* --- requests --------------------------------------------------------------- */

struct control_cmd {
	const char *name;
	const char *const *keys; /* allowed besides "cmd" and "id" */
};

static const char *const control_no_keys[] = { NULL };
static const char *const control_sample_keys[] = { "event", "period", "freq", "callgraph", "linux", NULL };

static const struct control_cmd control_cmds[] = {
	{ "status", control_no_keys },
	{ "vcpus", control_no_keys },
	{ "vpmu-stats", control_no_keys },
	{ "sample-start", control_sample_keys },
	{ "sample-stop", control_no_keys },
};

/* At most max bytes of s for an error message, cut on a UTF-8 character boundary. */
static int control_clip(const char *s, int max)
{
	int n = (int)strnlen(s, (size_t)max + 1);

	if (n <= max)
		return n;
	n = max;
	while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
	return n;
}

static bool control_key_allowed(const struct control_cmd *cmd, const char *key)
{
	if (!strcmp(key, "cmd") || !strcmp(key, "id"))
		return true;
	for (const char *const *k = cmd->keys; *k; k++)
		if (!strcmp(*k, key))
			return true;
	return false;
}

/* Reads an optional positive integer key; false (with the message in buf) if it is something else. */
static bool control_get_u64(struct json_object *req, const char *key, uint64_t *v, bool *given,
			    char *buf, size_t bufsz)
{
	struct json_object *o;

	*given = json_object_object_get_ex(req, key, &o);
	if (!*given)
		return true;
	if (!json_object_is_type(o, json_type_int) || json_object_get_int64(o) <= 0) {
		snprintf(buf, bufsz, "\"%s\" must be a positive integer", key);
		return false;
	}
	*v = json_object_get_uint64(o);
	return true;
}

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

static const char *control_sample_start(struct control *c, struct control_client *cl, struct json_object *req,
					struct json_object *r, char *buf, size_t bufsz)
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
			return "\"event\" must be a string: cpu-clock or cycles";
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
		if (strcmp(sr.event, "cpu-clock"))
			return "\"freq\" works with cpu-clock only: give cycles a \"period\"";
		if (freq > 100000)
			return "\"freq\" above 100000 Hz";
		sr.period = 1000000000ULL / freq;
	}
	if (json_object_object_get_ex(req, "callgraph", &o)) {
		if (!json_object_is_type(o, json_type_boolean))
			return "\"callgraph\" must be true or false";
		sr.callgraph = json_object_get_boolean(o);
	}
	if (json_object_object_get_ex(req, "linux", &o)) {
		bad = control_linux_layout(o, &lx, buf, bufsz);
		if (bad)
			return bad;
		sr.lx = &lx;
	}
	if (cl->pass_fd >= 0)
		return "the previous ring descriptor has not been sent yet: read the replies";
	if (vm_stopping(c->vm))
		return "the VM is exiting";
	if (guest_sampler_start(c->vm, &sr, &fd, &ring_size, err)) {
		snprintf(buf, bufsz, "%s", err);
		return buf;
	}
	cl->sampling = true;
	cl->pass_fd = fd; /* control_answer ties it to this reply */
	control_put_str(r, "event", sr.event);
	control_put_u64(r, "period", sr.period);
	control_put(r, "callgraph", json_object_new_boolean(sr.callgraph));
	control_put_u64(r, "vcpus", c->vm->cfg->ncpus);
	control_put_u64(r, "ring_size", ring_size);
	control_put_u64(r, "data_size", GUEST_SAMPLER_DATA_SIZE);
	/* How samples name guest processes: the Linux layout, or the descriptor the guest registers (if it does). */
	control_put_str(r, "processes", sr.lx ? "linux" : "descriptor");
	return NULL;
}

static const char *control_sample_stop(struct control *c, struct control_client *cl, struct json_object *r)
{
	struct guest_sampler_totals t;

	if (!guest_sampler_running(c->vm))
		return "guest sampling is not running";
	if (!cl->sampling)
		return "guest sampling belongs to another connection";
	guest_sampler_stop(c->vm, &t);
	cl->sampling = false;
	control_put_u64(r, "samples", t.samples);
	control_put_u64(r, "lost", t.lost);
	control_put_u64(r, "records", t.records);
	control_put_u64(r, "capture_mean_ns", t.capture_mean_ns);
	control_put_u64(r, "capture_max_ns", t.capture_max_ns);
	return NULL;
}

/* Fills r for one request line; returns the error text (in buf or static), or NULL. */
static const char *control_dispatch(struct control *c, struct control_client *cl, struct json_object *req,
				    struct json_object *r, char *buf, size_t bufsz)
{
	struct json_object *v;
	const struct control_cmd *cmd = NULL;
	const char *name;

	if (!json_object_is_type(req, json_type_object))
		return "a request is one JSON object per line, e.g. {\"cmd\":\"status\"}";
	if (json_object_object_get_ex(req, "id", &v)) {
		if (!json_object_is_type(v, json_type_string) && !json_object_is_type(v, json_type_int))
			return "\"id\" must be a string or an integer";
		control_put(r, "id", json_object_get(v));
	}
	if (!json_object_object_get_ex(req, "cmd", &v) || !json_object_is_type(v, json_type_string))
		return "missing \"cmd\" (a string): status, vcpus, vpmu-stats, sample-start or sample-stop";
	name = json_object_get_string(v);
	for (size_t i = 0; i < sizeof(control_cmds) / sizeof(control_cmds[0]); i++)
		if (!strcmp(name, control_cmds[i].name))
			cmd = &control_cmds[i];
	if (!cmd) {
		snprintf(buf, bufsz, "unknown cmd '%.*s': status, vcpus, vpmu-stats, sample-start or sample-stop",
			 control_clip(name, 64), name);
		return buf;
	}
	json_object_object_foreach(req, key, val) {
		(void)val;
		if (!control_key_allowed(cmd, key)) {
			snprintf(buf, bufsz, "%s takes no key '%.*s'", cmd->name, control_clip(key, 64), key);
			return buf;
		}
	}
	if (!strcmp(cmd->name, "status")) {
		control_status(c, r);
		return NULL;
	}
	if (!strcmp(cmd->name, "vcpus")) {
		control_vcpus(c, r);
		return NULL;
	}
	if (!strcmp(cmd->name, "vpmu-stats"))
		return control_vpmu_stats(c, r);
	if (!strcmp(cmd->name, "sample-start"))
		return control_sample_start(c, cl, req, r, buf, bufsz);
	return control_sample_stop(c, cl, r);
}

/* The reply to one request line, as one newline-terminated line in out; its length, or 0. */
static size_t control_reply(struct control *c, struct control_client *cl, const char *line, size_t len,
			    char *out, size_t outsz)
{
	struct json_object *r = json_object_new_object(), *req = NULL;
	struct json_tokener *tok = NULL;
	const char *error = NULL;
	char buf[CONTROL_ERR_MAX];
	const char *text;
	size_t n = 0;

	if (!r)
		return 0;
	/* json-c keeps insertion order and replaces values in place: "ok" comes first. */
	json_object_object_add(r, "ok", json_object_new_boolean(0));
	if (memchr(line, '\0', len)) {
		error = "the request holds a NUL byte: it must be one line of JSON text";
		goto reply;
	}
	tok = json_tokener_new_ex(8); /* requests are flat: deep nesting is garbage */
	if (!tok) {
		error = "out of memory";
		goto reply;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	req = json_tokener_parse_ex(tok, line, (int)len);
	if (!req) {
		enum json_tokener_error jerr = json_tokener_get_error(tok);

		snprintf(buf, sizeof(buf), "not a JSON object: %s",
			 jerr == json_tokener_continue ? "incomplete" : json_tokener_error_desc(jerr));
		error = buf;
		goto reply;
	}
	for (size_t i = json_tokener_get_parse_end(tok); i < len; i++) {
		if (line[i] != ' ' && line[i] != '\t') {
			error = "text after the JSON object: one request per line";
			goto reply;
		}
	}
	error = control_dispatch(c, cl, req, r, buf, sizeof(buf));
reply:
	json_object_object_add(r, "ok", json_object_new_boolean(!error));
	if (error)
		control_put_str(r, "error", error);
	text = json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	if (text) {
		n = strlen(text);
		if (n + 1 <= outsz) {
			memcpy(out, text, n);
			out[n++] = '\n';
		} else {
			n = 0;
		}
	}
	json_object_put(req);
	json_object_put(r);
	if (tok)
		json_tokener_free(tok);
	return n;
}

/* --- connections ------------------------------------------------------------ */

static void control_drop(struct control_client *cl)
{
	struct guest_sampler_totals t;

	if (cl->sampling)
		guest_sampler_stop(cl->vm, &t); /* sampling belongs to the connection that started it */
	cl->sampling = false;
	if (cl->pass_fd >= 0)
		close(cl->pass_fd);
	cl->pass_fd = -1;
	if (cl->fd >= 0)
		close(cl->fd);
	cl->fd = -1;
	cl->closing = false;
	cl->in_len = cl->out_len = 0;
}

/* Sends buf with the pending descriptor attached to its first byte. */
static ssize_t control_send_fd(struct control_client *cl, const char *buf, size_t len)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *cm;
	ssize_t n;

	memset(&u, 0, sizeof(u));
	cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &cl->pass_fd, sizeof(int));
	n = sendmsg(cl->fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n > 0) {
		/* The client holds its own copy now. */
		close(cl->pass_fd);
		cl->pass_fd = -1;
	}
	return n;
}

/* Sends what the socket takes now; drops the client on an error, or when it is closing and done. */
static void control_flush(struct control_client *cl)
{
	size_t done = 0;

	while (done < cl->out_len) {
		ssize_t n;

		if (cl->pass_fd >= 0 && cl->pass_at == done)
			n = control_send_fd(cl, cl->out + done, cl->out_len - done);
		else
			n = send(cl->fd, cl->out + done,
				 (cl->pass_fd >= 0 && cl->pass_at > done ? cl->pass_at : cl->out_len) - done,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0) {
			control_drop(cl);
			return;
		}
		done += (size_t)n;
	}
	memmove(cl->out, cl->out + done, cl->out_len - done);
	cl->out_len -= done;
	if (cl->pass_fd >= 0)
		cl->pass_at -= done;
	if (cl->closing && !cl->out_len)
		control_drop(cl);
}

/* Queues a reply; a client whose replies pile up unread is dropped rather than waited for. */
static void control_queue(struct control_client *cl, const char *text, size_t len)
{
	if (cl->out_len + len > CONTROL_OUT_MAX) {
		control_drop(cl);
		return;
	}
	memcpy(cl->out + cl->out_len, text, len);
	cl->out_len += len;
}

static void control_answer(struct control *c, struct control_client *cl, const char *line, size_t len)
{
	static char reply[CONTROL_OUT_MAX]; /* only the control thread uses it */
	size_t n, at;
	bool had_fd;

	while (len && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t'))
		len--;
	if (!len)
		return; /* blank lines are allowed and ignored: handy from a terminal */
	had_fd = cl->pass_fd >= 0;
	at = cl->out_len;
	n = control_reply(c, cl, line, len, reply, sizeof(reply));
	if (!had_fd && cl->pass_fd >= 0)
		cl->pass_at = at; /* sample-start's ring set travels with the first byte of its reply */
	if (!n) {
		static const char oom[] = "{\"ok\":false,\"error\":\"out of memory\"}\n";
		control_queue(cl, oom, sizeof(oom) - 1);
	} else {
		control_queue(cl, reply, n);
	}
}

/* Answers every complete line in the input buffer. */
static void control_lines(struct control *c, struct control_client *cl)
{
	size_t start = 0;
	char *nl;

	while (cl->fd >= 0 && (nl = memchr(cl->in + start, '\n', cl->in_len - start))) {
		size_t end = (size_t)(nl - cl->in);

		control_answer(c, cl, cl->in + start, end - start);
		start = end + 1;
	}
	if (cl->fd < 0)
		return;
	memmove(cl->in, cl->in + start, cl->in_len - start);
	cl->in_len -= start;
}

static void control_read(struct control *c, struct control_client *cl)
{
	size_t budget = CONTROL_READ_BUDGET;

	while (cl->fd >= 0 && !cl->closing && budget) {
		size_t room = sizeof(cl->in) - cl->in_len;
		ssize_t n = recv(cl->fd, cl->in + cl->in_len, room < budget ? room : budget, MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n < 0) {
			control_drop(cl);
			return;
		}
		if (n == 0) {
			/* The client is done sending: its last line may lack the newline. */
			if (cl->in_len)
				control_answer(c, cl, cl->in, cl->in_len);
			cl->in_len = 0;
			cl->closing = true;
			break;
		}
		budget -= (size_t)n;
		cl->in_len += (size_t)n;
		control_lines(c, cl);
		if (cl->fd >= 0 && cl->in_len == sizeof(cl->in)) {
			static const char too_long[] =
				"{\"ok\":false,\"error\":\"request longer than 4096 bytes: connection closed\"}\n";
			_Static_assert(CONTROL_LINE_MAX == 4096, "the message says 4096");
			/* No way to find where the next request starts: answer, then hang up. */
			control_queue(cl, too_long, sizeof(too_long) - 1);
			cl->in_len = 0;
			cl->closing = true;
		}
	}
	if (cl->fd >= 0)
		control_flush(cl);
}

static void control_accept(struct control *c, bool *backoff)
{
	for (;;) {
		int fd = accept4(c->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct control_client *slot = NULL;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			/* EMFILE and the like leave the listener readable: wait a little instead of spinning. */
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				*backoff = true;
			return;
		}
		for (unsigned int i = 0; i < CONTROL_MAX_CLIENTS && !slot; i++)
			if (c->client[i].fd < 0)
				slot = &c->client[i];
		if (!slot) {
			static const char busy[] =
				"{\"ok\":false,\"error\":\"too many control clients (at most 8): connection closed\"}\n";
			_Static_assert(CONTROL_MAX_CLIENTS == 8, "the message says 8");
			/* Best effort: a fresh socket's buffer takes one short line. */
			if (send(fd, busy, sizeof(busy) - 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
				/* nothing more to do for it */
			}
			close(fd);
			continue;
		}
		slot->fd = fd;
		slot->vm = c->vm;
		slot->pass_fd = -1;
		slot->sampling = false;
		slot->closing = false;
		slot->in_len = slot->out_len = 0;
	}
}

static void *control_thread(void *arg)
{
	struct control *c = arg;
	struct pollfd pfd[2 + CONTROL_MAX_CLIENTS];
	int who[2 + CONTROL_MAX_CLIENTS];
	bool backoff = false;

	pthread_setname_np(pthread_self(), "control");
	for (;;) {
		nfds_t n = 0;
		int rc;

		pfd[n++] = (struct pollfd){ .fd = c->wake_fd, .events = POLLIN };
		if (!backoff)
			pfd[n++] = (struct pollfd){ .fd = c->listen_fd, .events = POLLIN };
		for (int i = 0; i < CONTROL_MAX_CLIENTS; i++) {
			struct control_client *cl = &c->client[i];

			if (cl->fd < 0)
				continue;
			who[n] = i;
			pfd[n++] = (struct pollfd){
				.fd = cl->fd,
				.events = (short)((cl->closing ? 0 : POLLIN) | (cl->out_len ? POLLOUT : 0)),
			};
		}
		rc = poll(pfd, n, backoff ? 100 : -1);
		backoff = false;
		if (rc < 0 && errno != EINTR)
			break; /* cannot happen with valid descriptors; the VM goes on without its socket */
		if (rc <= 0)
			continue;
		if (pfd[0].revents)
			break;
		for (nfds_t k = 1; k < n; k++) {
			struct control_client *cl;

			if (pfd[k].fd == c->listen_fd) {
				if (pfd[k].revents)
					control_accept(c, &backoff);
				continue;
			}
			cl = &c->client[who[k]];
			if (cl->fd != pfd[k].fd)
				continue;
			if (pfd[k].revents & POLLNVAL) {
				control_drop(cl);
			} else if (pfd[k].revents & (POLLIN | POLLHUP | POLLERR)) {
				/* Read even on HUP: the peer may have sent its requests and shut down. */
				if (cl->closing)
					control_drop(cl); /* a closing client that hangs up needs no replies */
				else
					control_read(c, cl);
			} else if (pfd[k].revents & POLLOUT) {
				control_flush(cl);
			}
		}
	}
	for (int i = 0; i < CONTROL_MAX_CLIENTS; i++)
		control_drop(&c->client[i]);
	return NULL;
}

int control_start(struct control *c, struct vm *vm)
{
	sigset_t all, old;
	int rc;

	c->vm = vm;
	c->start_ns = control_now_ns();
	/* Signals belong to the main thread (SIGINT/SIGTERM) and the vCPU threads (kicks): none here. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&c->thread, NULL, control_thread, c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		return -rc;
	c->started = true;
	return 0;
}

void control_close(struct control *c)
{
	struct stat st;

	if (!c)
		return;
	if (c->started) {
		uint64_t one = 1;

		/* An eventfd write of 1 cannot block or fail short of an overflow no one will reach. */
		if (write(c->wake_fd, &one, sizeof(one)) < 0)
			pthread_cancel(c->thread);
		pthread_join(c->thread, NULL);
		c->started = false;
	}
	for (int i = 0; i < CONTROL_MAX_CLIENTS; i++)
		control_drop(&c->client[i]);
	if (c->listen_fd >= 0) {
		close(c->listen_fd);
		/* Only our own socket: one that replaced it (another VMM's) stays. */
		if (lstat(c->path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == c->dev && st.st_ino == c->ino)
			unlink(c->path);
	}
	if (c->wake_fd >= 0)
		close(c->wake_fd);
	free(c);
}
