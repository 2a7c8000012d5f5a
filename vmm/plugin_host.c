// SPDX-License-Identifier: MIT
/* Loading, unloading and the output of plugins (plugin_host.h). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin_api.h"
#include "plugin_elf.h"
#include "plugin_host.h"
#include "trace.h"
#include "common/trace_event_table.h"

struct plugin {
	unsigned int id;
	char name[64];
	char path[256];
	void *dl;
	void (*fini)(void);
	struct trace_subscriber sub;
	kvmprof_plugin_handler on[KVMPROF_TRACE_EVENT_COUNT]; /* KVMPROF_PLUGIN_ON handlers */
	kvmprof_plugin_cb cb[KVMPROF_TRACE_EVENT_COUNT];      /* api->subscribe callbacks */
	void *cb_data[KVMPROF_TRACE_EVENT_COUNT];
	bool in_init; /* subscribe is allowed */
	const struct plugin_builtin *builtin; /* compiled in (static build): its handlers run at the TRACE sites */
	struct kvmprof_plugin_api api;

	/* Output: out_lock guards everything below (vCPU threads write, the control thread reads). */
	pthread_mutex_t out_lock;
	int out_fd;           /* out=FILE, or -1: the buffer */
	char out_file[256];
	char *buf;            /* file: gathered for one write; buffer: kept for plugin-output */
	size_t len, cap;
	uint64_t out_bytes, out_lost;
	int out_errno;
};

static struct plugin *plugins[PLUGIN_MAX];
/* Unloaded plugins' output that their unload reply could not carry, until plugin-output reads it. */
static struct kept_output {
	unsigned int id;
	char name[64];
	char *text;
	size_t len, off;
} kept[PLUGIN_MAX];
static unsigned int next_id = 1;
/* Guards plugins[] against plugin-list and output readers; loads and unloads are serialized by their callers. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;

void plugin_host_init(struct vm *vm)
{
	plugin_api_set_vm(vm);
}

/* --- events ----------------------------------------------------------------- */

static void plugin_event(void *opaque, const struct trace_ctx *ctx, unsigned int event, const uint64_t *args,
			 unsigned int nargs)
{
	const struct plugin *p = opaque;
	const struct kvmprof_plugin_ctx *pctx = (const struct kvmprof_plugin_ctx *)ctx;

	if (p->on[event])
		p->on[event](pctx, args);
	if (p->cb[event])
		p->cb[event](p->cb_data[event], pctx, event, args, nargs);
}

static struct plugin *plugin_by_id(unsigned int id)
{
	for (unsigned int i = 0; i < PLUGIN_MAX; i++)
		if (plugins[i] && plugins[i]->id == id)
			return plugins[i];
	return NULL;
}

/* The plugin has a callback for event: loaded handlers, subscribe's, or a built-in plugin's handlers. */
static bool plugin_handles(const struct plugin *p, unsigned int event)
{
	return p->on[event] || p->cb[event] || (p->builtin && p->builtin->handles[event]);
}

/* The event is on for p now. */
static bool plugin_event_enabled(const struct plugin *p, unsigned int event)
{
	return p->sub.events[event] ||
	       (p->builtin && p->builtin->handles[event] && __atomic_load_n(&trace_static_on[event], __ATOMIC_RELAXED));
}

/*
 * For the api functions, which any thread may call: plugins[] is written
 * under registry_lock, and a plugin leaves it only after its callbacks
 * stopped and its fini ran.
 */
static struct plugin *plugin_find(kvmprof_plugin_id id)
{
	for (unsigned int i = 0; i < PLUGIN_MAX; i++) {
		struct plugin *p = __atomic_load_n(&plugins[i], __ATOMIC_ACQUIRE);

		if (p && p->id == id)
			return p;
	}
	return NULL;
}

static int api_subscribe(kvmprof_plugin_id id, const char *patterns, kvmprof_plugin_cb cb, void *data)
{
	bool match[KVMPROF_TRACE_EVENT_COUNT] = { false };
	struct plugin *p;
	char why[128];
	int n = 0;

	p = plugin_find(id);
	if (!p || !p->in_init)
		return -EBUSY;
	if (!cb || !patterns || trace_events_match(patterns, match, why, sizeof(why)))
		return -EINVAL;
	for (unsigned int e = 0; e < KVMPROF_TRACE_EVENT_COUNT; e++)
		if (match[e] && p->cb[e])
			return -EEXIST;
	for (unsigned int e = 0; e < KVMPROF_TRACE_EVENT_COUNT; e++) {
		if (!match[e])
			continue;
		p->cb[e] = cb;
		p->cb_data[e] = data;
		n++;
	}
	return n;
}

/* --- output ----------------------------------------------------------------- */

/* With out_lock held: writes the gathered text to out=FILE, counting what did not make it. */
static void out_flush_locked(struct plugin *p)
{
	size_t done = 0;

	if (p->out_fd < 0)
		return;
	while (done < p->len) {
		ssize_t w = write(p->out_fd, p->buf + done, p->len - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (!p->out_errno)
				p->out_errno = w < 0 ? errno : EIO;
			p->out_lost += p->len - done;
			break;
		}
		done += (size_t)w;
	}
	p->len = 0;
}

static int out_append_locked(struct plugin *p, const char *text, size_t n)
{
	if (p->out_fd >= 0 && p->len + n > p->cap)
		out_flush_locked(p);
	if (p->len + n > p->cap) {
		if (p->out_fd < 0 || n > p->cap) {
			/* The buffer is full (nobody read it), or one text is larger than a file write: lost, counted. */
			p->out_lost += n;
			return -ENOSPC;
		}
	}
	memcpy(p->buf + p->len, text, n);
	p->len += n;
	p->out_bytes += n;
	return p->out_errno == ENOSPC ? -ENOSPC : p->out_errno ? -EIO : 0;
}

static int api_output(kvmprof_plugin_id id, const char *fmt, ...)
{
	struct plugin *p;
	char small[512], *text = small;
	va_list ap;
	int n, rc;

	p = plugin_find(id);
	if (!p || !fmt)
		return -EINVAL;
	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n >= sizeof(small)) {
		text = malloc((size_t)n + 1);
		if (!text) {
			pthread_mutex_lock(&p->out_lock);
			p->out_lost += (size_t)n;
			pthread_mutex_unlock(&p->out_lock);
			return -ENOMEM;
		}
		va_start(ap, fmt);
		vsnprintf(text, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	pthread_mutex_lock(&p->out_lock);
	rc = out_append_locked(p, text, (size_t)n);
	pthread_mutex_unlock(&p->out_lock);
	if (text != small)
		free(text);
	return rc;
}

/* --- loading ---------------------------------------------------------------- */

/*
 * A plugin's init runs on this thread with crash signals caught: a plugin
 * that faults or aborts in init is refused with a message, and the VM goes
 * on. Its library stays mapped (whatever it set up may point into it).
 */
static __thread sigjmp_buf *init_jump;
static __thread volatile sig_atomic_t init_signal;

static void init_crash(int sig)
{
	if (init_jump) {
		init_signal = sig;
		siglongjmp(*init_jump, 1);
	}
	/* Another thread crashed meanwhile: not ours to hide. */
	signal(sig, SIG_DFL);
	raise(sig);
}

static const int crash_signals[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };
#define NCRASH (sizeof(crash_signals) / sizeof(crash_signals[0]))

/* Calls init; 0 with *ret its result, or the signal it crashed with. */
static int call_init(struct plugin *p, int (*init)(const struct kvmprof_plugin_api *, int, char **), int argc,
		     char **argv, int *ret)
{
	struct sigaction sa = { .sa_handler = init_crash, .sa_flags = SA_NODEFER }, old[NCRASH];
	sigset_t crash_set, old_mask;
	sigjmp_buf jb;
	int sig = 0;

	sigemptyset(&sa.sa_mask);
	sigemptyset(&crash_set);
	for (size_t i = 0; i < NCRASH; i++) {
		sigaction(crash_signals[i], &sa, &old[i]);
		sigaddset(&crash_set, crash_signals[i]);
	}
	/* The control thread runs with signals blocked, and a blocked fault signal kills the process. */
	pthread_sigmask(SIG_UNBLOCK, &crash_set, &old_mask);
	init_signal = 0;
	if (sigsetjmp(jb, 1) == 0) {
		init_jump = &jb;
		*ret = init(&p->api, argc, argv);
	} else {
		sig = init_signal;
	}
	init_jump = NULL;
	pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
	for (size_t i = 0; i < NCRASH; i++)
		sigaction(crash_signals[i], &old[i], NULL);
	return sig;
}

static void plugin_free(struct plugin *p)
{
	if (!p)
		return;
	if (p->out_fd >= 0)
		close(p->out_fd);
	pthread_mutex_destroy(&p->out_lock);
	free(p->buf);
	free(p);
}

/* The plugin's name: the file name without its directory and ".so". */
static void plugin_name(const char *path, char *name, size_t size)
{
	const char *base = strrchr(path, '/');
	size_t n;

	base = base ? base + 1 : path;
	n = strlen(base);
	if (n > 3 && !strcmp(base + n - 3, ".so"))
		n -= 3;
	snprintf(name, size, "%.*s", (int)n, base);
}

static int load_fail(struct plugin *p, int slot, int rc, char *err, size_t errsz, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

static int load_fail(struct plugin *p, int slot, int rc, char *err, size_t errsz, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errsz, fmt, ap);
	va_end(ap);
	if (slot >= 0) {
		pthread_mutex_lock(&registry_lock);
		__atomic_store_n(&plugins[slot], NULL, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&registry_lock);
	}
	if (p && p->dl)
		dlclose(p->dl);
	plugin_free(p);
	return rc;
}

/* Opens out=FILE for p. */
static int open_output(struct plugin *p, const char *file, char *err, size_t errsz)
{
	if (!*file) {
		snprintf(err, errsz, "out= needs a file name");
		return -EINVAL;
	}
	p->out_fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (p->out_fd < 0) {
		int e = errno;

		snprintf(err, errsz, "out=%s: %s", file, strerror(e));
		return -e;
	}
	snprintf(p->out_file, sizeof(p->out_file), "%s", file);
	return 0;
}

/* Opens p's library and finds its symbols: 0, or a negative errno with p freed and err saying why. */
static int plugin_open(struct plugin *p, const char *path, int (**initp)(const struct kvmprof_plugin_api *, int, char **),
		       char *err, size_t errsz)
{
	char dlpath[PATH_MAX + 2];
	int (*init)(const struct kvmprof_plugin_api *, int, char **);
	const unsigned int *version;
	char msg[PLUGIN_ERR_MAX];
	const char *sanitizer_init = NULL;
	int rc;

	/* A bare name would be searched for in the library path: a plugin is a file. */
	snprintf(dlpath, sizeof(dlpath), "%s%s", strchr(path, '/') ? "" : "./", path);
	if (access(dlpath, R_OK))
		return load_fail(p, -1, -errno, err, errsz, "%s: %s", path, strerror(errno));
	/* A sanitizer runtime that must come first would end this process inside dlopen. */
	if (plugin_elf_sanitizer_runtime(dlpath, msg, sizeof(msg), &sanitizer_init) &&
	    !dlsym(RTLD_DEFAULT, sanitizer_init))
		return load_fail(p, -1, -ENOEXEC, err, errsz,
				 "%s: built with a sanitizer (it needs %s): it loads only into a VMM built with it "
				 "(build/asan/kvmprof-vmm for AddressSanitizer)",
				 path, msg);
	dlerror();
	p->dl = dlopen(dlpath, RTLD_NOW | RTLD_LOCAL);
	if (!p->dl)
		return load_fail(p, -1, -ENOEXEC, err, errsz, "%s: not a loadable library: %s", path, dlerror());
	/* dlopen gives the same handle for a library it has open. */
	for (unsigned int i = 0; i < PLUGIN_MAX; i++) {
		if (plugins[i] && plugins[i]->dl == p->dl) {
			rc = (int)plugins[i]->id;
			return load_fail(p, -1, -EEXIST, err, errsz, "%s: already loaded as plugin %d (%s)", path,
					 rc, plugins[i]->name);
		}
	}
	version = dlsym(p->dl, "kvmprof_plugin_version");
	init = (int (*)(const struct kvmprof_plugin_api *, int, char **))dlsym(p->dl, "kvmprof_plugin_init");
	if (!version || !init)
		return load_fail(p, -1, -ENOEXEC, err, errsz,
				 "%s: not a kvmprof plugin (no %s symbol; see include/kvmprof/plugin.h)", path,
				 !version ? "kvmprof_plugin_version" : "kvmprof_plugin_init");
	if (*version != KVMPROF_PLUGIN_VERSION)
		return load_fail(p, -1, -EPROTO, err, errsz,
				 "%s: built for plugin API version %u, this VMM has version %u: rebuild it", path,
				 *version, KVMPROF_PLUGIN_VERSION);
	p->fini = (void (*)(void))dlsym(p->dl, "kvmprof_plugin_fini");
	for (unsigned int e = 0; e < KVMPROF_TRACE_EVENT_COUNT; e++) {
		char sym[96];

		snprintf(sym, sizeof(sym), "kvmprof_plugin_on_%s", trace_event_info(e)->name);
		p->on[e] = (kvmprof_plugin_handler)dlsym(p->dl, sym);
	}
	*initp = init;
	return 0;
}

/* Loads the library at path, or starts builtin (path is then its name). */
static int plugin_load_from(const char *path, const struct plugin_builtin *builtin, int argc, char *const *argv,
			    char *err, size_t errsz)
{
	char *pargv[PLUGIN_ARGS_MAX + 2];
	int (*init)(const struct kvmprof_plugin_api *, int, char **) = NULL;
	struct plugin *p;
	int pargc = 0, slot = -1, ret = 0, sig, rc;
	char msg[PLUGIN_ERR_MAX];

	if (!path || !*path) {
		snprintf(err, errsz, "no plugin file given");
		return -EINVAL;
	}
	if (!TRACE_COMPILED_IN) {
		snprintf(err, errsz, "%s: " TRACE_COMPILED_OUT_MESSAGE, path);
		return -ENOTSUP;
	}
	if (argc > PLUGIN_ARGS_MAX) {
		snprintf(err, errsz, "%s: more than %d arguments", path, PLUGIN_ARGS_MAX);
		return -E2BIG;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		snprintf(err, errsz, "%s: out of memory", path);
		return -ENOMEM;
	}
	p->out_fd = -1;
	pthread_mutex_init(&p->out_lock, NULL);
	plugin_name(path, p->name, sizeof(p->name));
	snprintf(p->path, sizeof(p->path), "%s", builtin ? "(built in)" : path);
	pargv[pargc++] = p->name;
	for (int i = 0; i < argc; i++) {
		if (!strchr(argv[i], '='))
			return load_fail(p, -1, -EINVAL, err, errsz, "%s: argument '%s' is not key=value", path,
					 argv[i]);
		if (!strncmp(argv[i], "out=", 4)) {
			if (p->out_fd >= 0)
				return load_fail(p, -1, -EINVAL, err, errsz, "%s: out= given twice", path);
			rc = open_output(p, argv[i] + 4, msg, sizeof(msg));
			if (rc)
				return load_fail(p, -1, rc, err, errsz, "%s: %s", path, msg);
			continue;
		}
		pargv[pargc++] = argv[i];
	}
	pargv[pargc] = NULL;
	p->cap = p->out_fd >= 0 ? PLUGIN_FILE_BUFFER : PLUGIN_BUFFER_MAX;
	p->buf = malloc(p->cap + 1); /* + 1: the unload result's NUL */
	if (!p->buf)
		return load_fail(p, -1, -ENOMEM, err, errsz, "%s: out of memory", path);

	if (builtin) {
		init = builtin->init;
		p->fini = builtin->fini;
		p->builtin = builtin;
	} else {
		rc = plugin_open(p, path, &init, err, errsz);
		if (rc)
			return rc;
	}

	pthread_mutex_lock(&registry_lock);
	for (unsigned int i = 0; i < PLUGIN_MAX && slot < 0; i++)
		if (!plugins[i])
			slot = (int)i;
	if (slot >= 0) {
		p->id = next_id++;
		__atomic_store_n(&plugins[slot], p, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&registry_lock);
	if (slot < 0)
		return load_fail(p, -1, -ENOSPC, err, errsz, "%s: %d plugins are loaded already, the most there can be",
				 path, PLUGIN_MAX);

	plugin_api_fill(&p->api);
	p->api.id = p->id;
	p->api.name = p->name;
	p->api.subscribe = api_subscribe;
	p->api.output = api_output;
	p->in_init = true;
	sig = call_init(p, init, pargc, pargv, &ret);
	p->in_init = false;
	if (sig) {
		/* Keep the library: a crashed init may have left threads or handlers pointing into it. */
		p->dl = NULL;
		return load_fail(p, slot, -EFAULT, err, errsz, "%s: kvmprof_plugin_init crashed (%s); not loaded",
				 path, strsignal(sig));
	}
	if (ret) {
		/* What init wrote says why (a bad argument, say): the output itself goes away with the plugin. */
		char why[PLUGIN_ERR_MAX / 2];
		size_t n;

		pthread_mutex_lock(&p->out_lock);
		n = p->len < sizeof(why) - 1 ? p->len : sizeof(why) - 1;
		memcpy(why, p->buf, n);
		pthread_mutex_unlock(&p->out_lock);
		why[n] = '\0';
		why[strcspn(why, "\n")] = '\0';
		return load_fail(p, slot, -ECANCELED, err, errsz, "%s: kvmprof_plugin_init refused (returned %d)%s%s",
				 path, ret, why[0] ? ": " : "", why);
	}

	p->sub.cb = plugin_event;
	p->sub.opaque = p;
	for (unsigned int e = 0; e < KVMPROF_TRACE_EVENT_COUNT; e++)
		p->sub.events[e] = p->on[e] || p->cb[e];
	rc = trace_subscribe(&p->sub);
	if (rc) {
		if (p->fini)
			p->fini();
		return load_fail(p, slot, rc, err, errsz, "%s: an event it wants has %d subscribers already", path,
				 TRACE_MAX_SUBSCRIBERS);
	}
	for (unsigned int e = 0; builtin && e < KVMPROF_TRACE_EVENT_COUNT; e++)
		if (builtin->handles[e])
			trace_static_set(e, true);
	return (int)p->id;
}

int plugin_load(const char *path, int argc, char *const *argv, char *err, size_t errsz)
{
	if (path && !strcmp(path, PLUGIN_BUILTIN_SPEC))
		return plugin_static_load(argc, argv, err, errsz);
	return plugin_load_from(path, NULL, argc, argv, err, errsz);
}

int plugin_load_spec(const char *spec, char *err, size_t errsz)
{
	char *copy = strdup(spec), *save = NULL, *path, *tok;
	char *argv[PLUGIN_ARGS_MAX + 1];
	int argc = 0, rc;

	if (!copy) {
		snprintf(err, errsz, "out of memory");
		return -ENOMEM;
	}
	path = strtok_r(copy, ",", &save);
	while ((tok = strtok_r(NULL, ",", &save))) {
		if (argc == PLUGIN_ARGS_MAX + 1) {
			free(copy);
			snprintf(err, errsz, "%s: more than %d arguments", path, PLUGIN_ARGS_MAX);
			return -E2BIG;
		}
		argv[argc++] = tok;
	}
	rc = plugin_load(path, argc, argv, err, errsz);
	free(copy);
	return rc;
}

/* --- unloading -------------------------------------------------------------- */

/* Unloads p, built-in or not. */
static void plugin_unload_any(struct plugin *p, struct plugin_unload_result *res)
{
	/* Once this returns no callback of p runs, on any vCPU: fini and dlclose are safe. */
	trace_unsubscribe(&p->sub);
	/* A built-in plugin goes at the VMM's end only, when the vCPUs have stopped. */
	for (unsigned int e = 0; p->builtin && e < KVMPROF_TRACE_EVENT_COUNT; e++)
		if (p->builtin->handles[e])
			trace_static_set(e, false);
	if (p->fini)
		p->fini();
	pthread_mutex_lock(&registry_lock);
	for (unsigned int i = 0; i < PLUGIN_MAX; i++)
		if (plugins[i] == p)
			__atomic_store_n(&plugins[i], NULL, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&registry_lock);

	pthread_mutex_lock(&p->out_lock);
	out_flush_locked(p);
	snprintf(res->name, sizeof(res->name), "%s", p->name);
	snprintf(res->output_file, sizeof(res->output_file), "%s", p->out_file);
	res->output_bytes = p->out_bytes;
	res->output_lost = p->out_lost;
	res->output_errno = p->out_errno;
	if (p->out_fd < 0 && p->len) {
		res->output = p->buf;
		res->output_len = p->len;
		res->output[res->output_len] = '\0';
		p->buf = NULL;
	}
	pthread_mutex_unlock(&p->out_lock);
	if (p->dl)
		dlclose(p->dl);
	p->dl = NULL;
	plugin_free(p);
}

int plugin_unload(unsigned int id, struct plugin_unload_result *res, char *err, size_t errsz)
{
	struct plugin *p = plugin_by_id(id);

	memset(res, 0, sizeof(*res));
	if (!p) {
		snprintf(err, errsz, "no plugin has id %u", id);
		return -ENOENT;
	}
	if (p->builtin) {
		snprintf(err, errsz,
			 "plugin %u (%s) is built into this kvmprof-vmm (a static build) and cannot be unloaded; "
			 "event-set can turn its events off",
			 id, p->name);
		return -EPERM;
	}
	plugin_unload_any(p, res);
	return 0;
}

void plugin_unload_result_free(struct plugin_unload_result *res)
{
	free(res->output);
	res->output = NULL;
}

int plugin_output_keep(unsigned int id, const char *name, const char *text, size_t len)
{
	int rc = -ENOSPC;

	pthread_mutex_lock(&registry_lock);
	for (unsigned int i = 0; i < PLUGIN_MAX; i++) {
		if (kept[i].text)
			continue;
		kept[i] = (struct kept_output){ .id = id, .text = malloc(len ? len : 1), .len = len };
		if (!kept[i].text) {
			rc = -ENOMEM;
			break;
		}
		memcpy(kept[i].text, text, len);
		snprintf(kept[i].name, sizeof(kept[i].name), "%s", name);
		rc = 0;
		break;
	}
	pthread_mutex_unlock(&registry_lock);
	if (rc) {
		fprintf(stderr, "kvmprof-vmm: plugin %u (%s) output (no room to keep it for plugin-output):\n", id, name);
		fwrite(text, 1, len, stderr);
	}
	return rc;
}

/* With registry_lock held. */
static struct kept_output *kept_find(unsigned int id)
{
	for (unsigned int i = 0; i < PLUGIN_MAX; i++)
		if (kept[i].text && kept[i].id == id)
			return &kept[i];
	return NULL;
}

static void kept_free(struct kept_output *k)
{
	free(k->text);
	*k = (struct kept_output){ 0 };
}

void plugin_unload_all(void)
{
	for (unsigned int i = 0; i < PLUGIN_MAX; i++) {
		struct kept_output *k = &kept[i];

		if (!k->text)
			continue;
		if (k->len > k->off) {
			fprintf(stderr, "kvmprof-vmm: plugin %u (%s) output, not read by plugin-output:\n", k->id, k->name);
			fwrite(k->text + k->off, 1, k->len - k->off, stderr);
		}
		kept_free(k);
	}
	for (unsigned int i = 0; i < PLUGIN_MAX; i++) {
		struct plugin_unload_result r;
		unsigned int id;

		if (!plugins[i])
			continue;
		id = plugins[i]->id;
		memset(&r, 0, sizeof(r));
		plugin_unload_any(plugins[i], &r);
		if (r.output_len) {
			fprintf(stderr, "kvmprof-vmm: plugin %u (%s) output:\n", id, r.name);
			fwrite(r.output, 1, r.output_len, stderr);
			if (r.output[r.output_len - 1] != '\n')
				fputc('\n', stderr);
		}
		if (r.output_lost)
			fprintf(stderr, "kvmprof-vmm: plugin %u (%s): %llu bytes of output lost%s%s%s%s\n", id, r.name,
				(unsigned long long)r.output_lost, r.output_file[0] ? " writing " : "", r.output_file,
				r.output_errno ? ": " : " (the buffer was full)",
				r.output_errno ? strerror(r.output_errno) : "");
		plugin_unload_result_free(&r);
	}
}

/* --- the registry ----------------------------------------------------------- */

unsigned int plugin_list(struct plugin_info *out, unsigned int max)
{
	unsigned int n = 0;

	pthread_mutex_lock(&registry_lock);
	for (unsigned int i = 0; i < PLUGIN_MAX; i++) {
		struct plugin *p = plugins[i];
		struct plugin_info *o;

		if (!p || p->in_init)
			continue;
		if (n < max) {
			o = &out[n];
			memset(o, 0, sizeof(*o));
			o->id = p->id;
			snprintf(o->name, sizeof(o->name), "%s", p->name);
			snprintf(o->path, sizeof(o->path), "%s", p->path);
			for (unsigned int e = 0; e < KVMPROF_TRACE_EVENT_COUNT; e++) {
				o->events[e] = plugin_event_enabled(p, e);
				o->handles[e] = plugin_handles(p, e);
			}
			pthread_mutex_lock(&p->out_lock);
			snprintf(o->output_file, sizeof(o->output_file), "%s", p->out_file);
			o->output_bytes = p->out_bytes;
			o->output_lost = p->out_lost;
			o->output_buffered = p->out_fd < 0 ? p->len : 0;
			o->output_errno = p->out_errno;
			pthread_mutex_unlock(&p->out_lock);
		}
		n++;
	}
	pthread_mutex_unlock(&registry_lock);
	/* Load order is id order: slots are reused, ids are not. */
	for (unsigned int i = 1; i < n && i < max; i++)
		for (unsigned int j = i; j > 0 && out[j - 1].id > out[j].id; j--) {
			struct plugin_info t = out[j];

			out[j] = out[j - 1];
			out[j - 1] = t;
		}
	return n;
}

int plugin_set_events(unsigned int id, const char *patterns, bool on, unsigned int *changed, char *err,
		      size_t errsz)
{
	bool match[KVMPROF_TRACE_EVENT_COUNT] = { false };
	struct plugin *p = plugin_by_id(id);
	unsigned int handled = 0;
	char why[128];

	*changed = 0;
	if (!p) {
		snprintf(err, errsz, "no plugin has id %u", id);
		return -ENOENT;
	}
	if (trace_events_match(patterns, match, why, sizeof(why))) {
		snprintf(err, errsz, "%s", why);
		return -EINVAL;
	}
	for (unsigned int e = 0; e < KVMPROF_TRACE_EVENT_COUNT; e++)
		handled += match[e] && plugin_handles(p, e);
	if (!handled) {
		snprintf(err, errsz, "plugin %u (%s) has no callback for '%s'", id, p->name, patterns);
		return -EINVAL;
	}
	for (unsigned int e = 0; e < KVMPROF_TRACE_EVENT_COUNT; e++) {
		int rc;

		if (!match[e] || !plugin_handles(p, e) || plugin_event_enabled(p, e) == on)
			continue;
		/* A built-in plugin's handler is switched at its TRACE sites; subscribe's callbacks through dispatch. */
		if (p->builtin && p->builtin->handles[e])
			trace_static_set(e, on);
		rc = p->on[e] || p->cb[e] ? trace_subscribe_event(&p->sub, e, on) : 0;
		if (rc) {
			snprintf(err, errsz, "%s: %d subscribers already", trace_event_info(e)->name,
				 TRACE_MAX_SUBSCRIBERS);
			return rc;
		}
		(*changed)++;
	}
	return 0;
}

long plugin_output_take(unsigned int id, char *buf, size_t max, bool *more, uint64_t *lost)
{
	struct plugin *p;
	size_t n = 0;

	pthread_mutex_lock(&registry_lock);
	p = plugin_by_id(id);
	if (!p) {
		struct kept_output *k = kept_find(id);

		if (!k) {
			pthread_mutex_unlock(&registry_lock);
			return -ENOENT;
		}
		n = k->len - k->off < max ? k->len - k->off : max;
		memcpy(buf, k->text + k->off, n);
		k->off += n;
		*more = k->off < k->len;
		*lost = 0;
		if (!*more)
			kept_free(k);
		pthread_mutex_unlock(&registry_lock);
		return (long)n;
	}
	if (p->in_init) {
		pthread_mutex_unlock(&registry_lock);
		return -ENOENT;
	}
	pthread_mutex_lock(&p->out_lock);
	if (p->out_fd >= 0) {
		out_flush_locked(p);
	} else {
		n = p->len < max ? p->len : max;
		memcpy(buf, p->buf, n);
		memmove(p->buf, p->buf + n, p->len - n);
		p->len -= n;
	}
	*more = p->len > 0;
	*lost = p->out_lost;
	pthread_mutex_unlock(&p->out_lock);
	pthread_mutex_unlock(&registry_lock);
	return (long)n;
}

/* --- built-in plugins (static builds: plugin_static.c) ---------------------- */

int plugin_load_builtin(const struct plugin_builtin *b, int argc, char *const *argv, char *err, size_t errsz)
{
	for (unsigned int i = 0; i < PLUGIN_MAX; i++) {
		if (plugins[i] && plugins[i]->builtin == b) {
			snprintf(err, errsz, "%s: the built-in plugin is loaded already, as plugin %u", PLUGIN_BUILTIN_SPEC,
				 plugins[i]->id);
			return -EEXIST;
		}
	}
	return plugin_load_from(b->name, b, argc, argv, err, errsz);
}
