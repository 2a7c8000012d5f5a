/* SPDX-License-Identifier: MIT */
/*
 * The VMM's side of plugins (include/kvmprof/plugin.h, docs/plugins.md):
 * loading, the registry, unloading while vCPUs run, and each plugin's
 * output. A plugin is one trace subscriber (trace.h) whose callback hands
 * each event to the plugin's handler for it.
 *
 * Loading and unloading happen on one thread at a time (main at start and
 * exit, the control socket's thread while the VM runs); the registry's lock
 * only keeps plugin-list and output readers consistent with them.
 */
#ifndef KVMPROF_PLUGIN_HOST_H
#define KVMPROF_PLUGIN_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kvmprof/plugin.h"

struct vm;

#define PLUGIN_MAX 8               /* loaded at once */
#define PLUGIN_ARGS_MAX 32         /* key=value arguments of one plugin */
#define PLUGIN_ERR_MAX 512
#define PLUGIN_BUFFER_MAX (1u << 20) /* output kept for plugin-output when there is no out=FILE */
#define PLUGIN_FILE_BUFFER (64u << 10) /* output gathered before a write to out=FILE */

/* The VM plugins see (guest memory, vCPUs): before the first load. */
void plugin_host_init(struct vm *vm);

/*
 * Loads path with arguments argv[0..argc) ("key=value"; out=FILE is the
 * loader's: the plugin's output file). Returns the plugin's id (> 0), or a
 * negative errno with a one-line reason in err.
 */
int plugin_load(const char *path, int argc, char *const *argv, char *err, size_t errsz);
/* plugin_load of "FILE.so[,key=value...]" (--plugin). */
int plugin_load_spec(const char *spec, char *err, size_t errsz);

/* What an unload leaves: what became of the plugin's output. */
struct plugin_unload_result {
	char name[64];
	char *output;          /* the buffered output not read yet (malloc'd, NUL-ended), or NULL */
	size_t output_len;
	uint64_t output_bytes; /* written or buffered in all */
	uint64_t output_lost;  /* bytes lost: buffer or disk full, write errors */
	int output_errno;      /* the first write error, or 0 */
	char output_file[256]; /* out=FILE, or "" */
};

/*
 * Stops the plugin's callbacks, runs its fini, flushes its output and
 * closes it. 0, or -ENOENT (no such id; err says so).
 */
int plugin_unload(unsigned int id, struct plugin_unload_result *res, char *err, size_t errsz);
void plugin_unload_result_free(struct plugin_unload_result *res);
/*
 * Keeps the part of an unloaded plugin's output a reply could not carry
 * (text[0..len), copied), for plugin_output_take under the same id. 0, or
 * -ENOMEM / -ENOSPC (PLUGIN_MAX kept already): then it goes to stderr.
 */
int plugin_output_keep(unsigned int id, const char *name, const char *text, size_t len);
/* At the VMM's end: unloads every plugin; buffered and kept output to stderr, write losses said there. */
void plugin_unload_all(void);

/* One loaded plugin, as plugin-list shows it. */
struct plugin_info {
	unsigned int id;
	char name[64];
	char path[256];
	bool events[KVMPROF_TRACE_EVENT_COUNT];  /* events it is subscribed to now */
	bool handles[KVMPROF_TRACE_EVENT_COUNT]; /* events it has a callback for (event-set may enable) */
	char output_file[256];                   /* "" : the buffer */
	uint64_t output_bytes, output_lost, output_buffered;
	int output_errno;
};

/* Fills up to max entries, in load order; returns how many plugins there are. */
unsigned int plugin_list(struct plugin_info *out, unsigned int max);

/*
 * Turns the events of plugin id that match patterns on or off. Only events
 * it has a callback for count; -ENOENT for an unknown id, -EINVAL when the
 * patterns match none of them. *changed: how many changed.
 */
int plugin_set_events(unsigned int id, const char *patterns, bool on, unsigned int *changed, char *err,
		      size_t errsz);

/*
 * Takes up to max bytes of plugin id's buffered output into buf (not
 * NUL-ended): the count, or -ENOENT. *more: more is buffered; *lost: bytes
 * lost so far. A plugin with out=FILE flushes its file instead and takes 0.
 * An unloaded plugin's kept output (plugin_output_keep) is taken the same
 * way, until it is all read.
 */
long plugin_output_take(unsigned int id, char *buf, size_t max, bool *more, uint64_t *lost);

/* --- a plugin compiled into the VMM (static builds: docs/plugins.md, plugin_static.c) --- */

/* The name --plugin and plugin-load give the built-in plugin: "builtin[,key=value...]". */
#define PLUGIN_BUILTIN_SPEC "builtin"

struct plugin_builtin {
	const char *name;
	int (*init)(const struct kvmprof_plugin_api *api, int argc, char **argv);
	void (*fini)(void); /* or NULL */
	bool handles[KVMPROF_TRACE_EVENT_COUNT]; /* its KVMPROF_PLUGIN_ON handlers, which the TRACE sites call */
};

/*
 * Starts b as plugin_load starts a library (argv the same), except that it
 * can never be unloaded (plugin_unload says -EPERM; plugin_unload_all runs
 * its fini). Its id, or a negative errno: -EEXIST when it runs already.
 */
int plugin_load_builtin(const struct plugin_builtin *b, int argc, char *const *argv, char *err, size_t errsz);

/* plugin_static.c: plugin_load_builtin of this build's plugin; -ENOENT in a build without one. */
int plugin_static_load(int argc, char *const *argv, char *err, size_t errsz);
/*
 * At start: plugin_load_spec of each of specs, then the built-in plugin
 * without arguments unless a "builtin" spec loaded it. 0, or the first
 * failure's negative errno with err saying which.
 */
int plugin_load_start(const char *const *specs, unsigned int n, char *err, size_t errsz);

#endif
