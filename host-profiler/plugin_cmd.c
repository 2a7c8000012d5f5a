// SPDX-License-Identifier: MIT
/*
 * kvmprof plugin: loads, lists, reads and unloads plugins of a running
 * kvmprof-vmm over its control socket (docs/plugins.md), and lists or
 * switches the trace events they get.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin_cmd.h"
#include "vm_client.h"

static const char plugin_usage[] =
	"usage: kvmprof plugin --vm SOCKET load FILE.so [KEY=VALUE...]\n"
	"       kvmprof plugin --vm SOCKET unload ID\n"
	"       kvmprof plugin --vm SOCKET list\n"
	"       kvmprof plugin --vm SOCKET output ID\n"
	"       kvmprof plugin --vm SOCKET events [PATTERN]\n"
	"       kvmprof plugin --vm SOCKET enable|disable ID PATTERN\n";
static const char plugin_help[] =
	"\n"
	"Plugins of a running kvmprof-vmm (kvmprof-vmm --control SOCKET; docs/plugins.md).\n"
	"  load      loads FILE.so with its arguments (out=FILE: its output goes to\n"
	"            FILE, else the VMM keeps it for `output` and `unload`); prints\n"
	"            the plugin's id\n"
	"  unload    stops its callbacks, runs its fini and prints its output\n"
	"  list      the loaded plugins: id, name, events, output\n"
	"  output    prints what the plugin wrote since the last read\n"
	"  events    the VMM's trace events matching PATTERN (comma-separated globs)\n"
	"  enable, disable  switches a plugin's events matching PATTERN on or off\n"
	"Exit code: 0 done, 1 the VMM refused or cannot be reached, 2 bad usage.\n";

__attribute__((format(printf, 1, 2)))
static int plugin_usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("kvmprof plugin: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (see kvmprof plugin --help)\n", stderr);
	return 2;
}

/* A plugin id argument: > 0. */
static int parse_id(const char *s, long long *id)
{
	char *end;

	errno = 0;
	*id = strtoll(s, &end, 10);
	if (errno || end == s || *end || *id <= 0 || *id > 0xffffffffLL)
		return plugin_usage_error("'%s' is not a plugin id (kvmprof plugin list shows them)", s);
	return 0;
}

/* One request; 0 with *reply, or 1 after printing the error. */
static int call(struct vm_client *c, json_object *req, json_object **reply)
{
	char err[512];
	int rc = vm_client_call(c, req, reply, NULL, VM_CLIENT_TIMEOUT_MS, err, sizeof(err));

	json_object_put(req);
	if (rc) {
		fprintf(stderr, "kvmprof plugin: %s\n", err);
		return 1;
	}
	return 0;
}

static json_object *request(const char *cmd)
{
	json_object *req = json_object_new_object();

	json_object_object_add(req, "cmd", json_object_new_string(cmd));
	return req;
}

static const char *str_of(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string) ?
		       json_object_get_string(v) :
		       NULL;
}

/* The names in an array of strings, comma-separated ("-" for none), into buf. */
static const char *names_of(json_object *o, const char *key, char *buf, size_t size)
{
	json_object *a;
	size_t n = 0, used = 0;

	if (json_object_object_get_ex(o, key, &a) && json_object_is_type(a, json_type_array))
		n = json_object_array_length(a);
	snprintf(buf, size, "-");
	for (size_t i = 0; i < n && used < size; i++) {
		const char *s = json_object_get_string(json_object_array_get_idx(a, i));
		int w = snprintf(buf + used, size - used, "%s%s", i ? "," : "", s ? s : "?");

		if (w < 0)
			break;
		used += (size_t)w;
	}
	return buf;
}

/* Prints a reply's "output"; whether it says the VMM keeps more. */
static bool print_output(json_object *reply)
{
	const char *text = str_of(reply, "output");
	json_object *more;

	if (text)
		fputs(text, stdout);
	return json_object_object_get_ex(reply, "more", &more) && json_object_get_boolean(more);
}

/* Prints the plugin's buffered output until the VMM has no more. */
static int drain_output(struct vm_client *c, long long id)
{
	for (;;) {
		json_object *req = request("plugin-output"), *reply;
		bool more;

		json_object_object_add(req, "plugin", json_object_new_int64(id));
		if (call(c, req, &reply))
			return 1;
		more = print_output(reply);
		json_object_put(reply);
		if (!more)
			return 0;
	}
}

static int do_load(struct vm_client *c, int argc, char **argv)
{
	char path[PATH_MAX], names[512];
	json_object *req, *reply, *args;
	long long id;

	if (argc < 1)
		return plugin_usage_error("load: which FILE.so?");
	/* The VMM runs elsewhere: it gets the absolute path. */
	if (!realpath(argv[0], path)) {
		fprintf(stderr, "kvmprof plugin: %s: %s\n", argv[0], strerror(errno));
		return 1;
	}
	req = request("plugin-load");
	args = json_object_new_array();
	json_object_object_add(req, "path", json_object_new_string(path));
	for (int i = 1; i < argc; i++) {
		if (!strchr(argv[i], '=')) {
			json_object_put(req);
			json_object_put(args);
			return plugin_usage_error("load: argument '%s' is not KEY=VALUE", argv[i]);
		}
		json_object_array_add(args, json_object_new_string(argv[i]));
	}
	json_object_object_add(req, "args", args);
	if (call(c, req, &reply))
		return 1;
	if (vm_client_int(reply, "plugin", 1, 0xffffffffLL, &id)) {
		json_object_put(reply);
		fprintf(stderr, "kvmprof plugin: the VMM's reply has no plugin id\n");
		return 1;
	}
	printf("%lld\n", id);
	fprintf(stderr, "kvmprof plugin: loaded %s as plugin %lld, events %s\n", str_of(reply, "name"), id,
		names_of(reply, "events", names, sizeof(names)));
	json_object_put(reply);
	return 0;
}

static int do_unload(struct vm_client *c, int argc, char **argv)
{
	json_object *req, *reply;
	long long id, lost = 0, bytes = 0;
	const char *file, *why;
	int rc = 0;

	if (argc != 1)
		return plugin_usage_error("unload: give one plugin ID");
	if (parse_id(argv[0], &id))
		return 2;
	req = request("plugin-unload");
	json_object_object_add(req, "plugin", json_object_new_int64(id));
	if (call(c, req, &reply))
		return 1;
	if (print_output(reply))
		rc = drain_output(c, id);
	vm_client_int(reply, "output_lost", 0, LLONG_MAX, &lost);
	vm_client_int(reply, "output_bytes", 0, LLONG_MAX, &bytes);
	file = str_of(reply, "output_file");
	why = str_of(reply, "output_error");
	if (file)
		fprintf(stderr, "kvmprof plugin: plugin %lld unloaded; its output (%lld bytes) is in %s\n", id, bytes, file);
	if (lost) {
		fprintf(stderr, "kvmprof plugin: plugin %lld: %lld bytes of its output were lost (%s)\n", id, lost,
			why ? why : "its buffer was full: read it with `kvmprof plugin output` more often, or give out=FILE");
		rc = 1;
	}
	json_object_put(reply);
	return rc;
}

static int do_list(struct vm_client *c, int argc)
{
	json_object *reply, *list;
	size_t n = 0;

	if (argc)
		return plugin_usage_error("list takes no arguments");
	if (call(c, request("plugin-list"), &reply))
		return 1;
	if (json_object_object_get_ex(reply, "plugins", &list) && json_object_is_type(list, json_type_array))
		n = json_object_array_length(list);
	printf("%-4s %-20s %-40s %s\n", "ID", "NAME", "EVENTS", "OUTPUT");
	for (size_t i = 0; i < n; i++) {
		json_object *p = json_object_array_get_idx(list, i);
		long long id = 0, bytes = 0, buffered = 0, lost = 0;
		char names[512];
		const char *file = str_of(p, "output_file");

		vm_client_int(p, "plugin", 0, LLONG_MAX, &id);
		vm_client_int(p, "output_bytes", 0, LLONG_MAX, &bytes);
		vm_client_int(p, "output_buffered", 0, LLONG_MAX, &buffered);
		vm_client_int(p, "output_lost", 0, LLONG_MAX, &lost);
		printf("%-4lld %-20s %-40s ", id, str_of(p, "name") ? str_of(p, "name") : "?",
		       names_of(p, "events", names, sizeof(names)));
		if (file)
			printf("%s (%lld bytes", file, bytes);
		else
			printf("buffer (%lld bytes unread", buffered);
		printf("%s", lost ? ", " : ")\n");
		if (lost)
			printf("%lld lost)\n", lost);
	}
	json_object_put(reply);
	return 0;
}

static int do_events(struct vm_client *c, int argc, char **argv)
{
	json_object *req, *reply, *list;
	size_t n = 0;

	if (argc > 1)
		return plugin_usage_error("events takes one PATTERN at most");
	req = request("event-list");
	if (argc)
		json_object_object_add(req, "pattern", json_object_new_string(argv[0]));
	if (call(c, req, &reply))
		return 1;
	if (json_object_object_get_ex(reply, "events", &list) && json_object_is_type(list, json_type_array))
		n = json_object_array_length(list);
	printf("%-3s %-21s %-5s %-40s %s\n", "ID", "EVENT", "SUBS", "ARGUMENTS", "DESCRIPTION");
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(list, i);
		long long id = 0, subs = 0;

		vm_client_int(e, "id", 0, LLONG_MAX, &id);
		vm_client_int(e, "subscribers", 0, LLONG_MAX, &subs);
		printf("%-3lld %-21s %-5lld %-40s %s\n", id, str_of(e, "name") ? str_of(e, "name") : "?", subs,
		       str_of(e, "args") && *str_of(e, "args") ? str_of(e, "args") : "-",
		       str_of(e, "description") ? str_of(e, "description") : "");
	}
	json_object_put(reply);
	return 0;
}

static int do_set(struct vm_client *c, int argc, char **argv, bool on)
{
	json_object *req, *reply;
	long long id, changed = 0;
	char names[512];

	if (argc != 2)
		return plugin_usage_error("%s: give a plugin ID and a PATTERN", on ? "enable" : "disable");
	if (parse_id(argv[0], &id))
		return 2;
	req = request("event-set");
	json_object_object_add(req, "plugin", json_object_new_int64(id));
	json_object_object_add(req, "events", json_object_new_string(argv[1]));
	json_object_object_add(req, "enable", json_object_new_boolean(on));
	if (call(c, req, &reply))
		return 1;
	vm_client_int(reply, "changed", 0, LLONG_MAX, &changed);
	printf("plugin %lld: %lld event%s switched %s; now getting %s\n", id, changed, changed == 1 ? "" : "s",
	       on ? "on" : "off", names_of(reply, "events", names, sizeof(names)));
	json_object_put(reply);
	return 0;
}

int host_plugin_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "vm", required_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *vm = NULL, *what;
	struct vm_client *c;
	char err[512];
	int opt, rc;

	optind = 1;
	opterr = 0;
	/* "+": options end at the action, so that a plugin's KEY=VALUE arguments are never taken for options. */
	while ((opt = getopt_long(argc, argv, "+:v:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'v':
			vm = optarg;
			break;
		case 'h':
			printf("%s%s", plugin_usage, plugin_help);
			return 0;
		case ':':
			return plugin_usage_error("option %s needs an argument", argv[optind - 1]);
		default:
			return plugin_usage_error("unknown option %s", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return plugin_usage_error("what? load, unload, list, output, events, enable or disable");
	what = argv[optind++];
	if (strcmp(what, "load") && strcmp(what, "unload") && strcmp(what, "list") && strcmp(what, "output") &&
	    strcmp(what, "events") && strcmp(what, "enable") && strcmp(what, "disable"))
		return plugin_usage_error("unknown action '%s': load, unload, list, output, events, enable or disable",
					  what);
	if (!vm)
		return plugin_usage_error("--vm SOCKET is required (kvmprof-vmm --control SOCKET)");
	c = malloc(sizeof(*c));
	if (!c)
		return 1;
	if (vm_client_connect(c, vm, err, sizeof(err))) {
		fprintf(stderr, "kvmprof plugin: %s\n", err);
		free(c);
		return 1;
	}
	argc -= optind;
	argv += optind;
	if (!strcmp(what, "load")) {
		rc = do_load(c, argc, argv);
	} else if (!strcmp(what, "unload")) {
		rc = do_unload(c, argc, argv);
	} else if (!strcmp(what, "list")) {
		rc = do_list(c, argc);
	} else if (!strcmp(what, "output")) {
		long long id = 0;

		if (argc != 1)
			rc = plugin_usage_error("output: give one plugin ID");
		else
			rc = parse_id(argv[0], &id) ? 2 : drain_output(c, id);
	} else if (!strcmp(what, "events")) {
		rc = do_events(c, argc, argv);
	} else {
		rc = do_set(c, argc, argv, !strcmp(what, "enable"));
	}
	vm_client_close(c);
	free(c);
	return rc;
}
