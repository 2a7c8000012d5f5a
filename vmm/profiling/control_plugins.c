// SPDX-License-Identifier: MIT
/* The control socket's plugin and event commands (control_plugins.h), over plugin_host.h. */
#include <errno.h>
#include <json.h>
#include <stdlib.h>
#include <string.h>

#include "control_json.h"
#include "control_plugins.h"
#include "plugin_host.h"
#include "trace.h"
#include "common/trace_event_table.h"

const char *const control_plugin_load_keys[] = { "path", "args", NULL };
/* "plugin", not "id": "id" is every request's own, echoed in its reply (docs/control-socket.md). */
const char *const control_plugin_id_keys[] = { "plugin", NULL };
const char *const control_plugin_output_keys[] = { "plugin", "max", NULL };
const char *const control_event_list_keys[] = { "pattern", NULL };
const char *const control_event_set_keys[] = { "plugin", "events", "enable", NULL };

/* A required string member; NULL (reason in buf) when absent or not a non-empty string. */
static const char *get_str(struct json_object *req, const char *key, char *buf, size_t bufsz)
{
	struct json_object *o;

	if (!json_object_object_get_ex(req, key, &o) || !json_object_is_type(o, json_type_string) ||
	    !*json_object_get_string(o)) {
		snprintf(buf, bufsz, "\"%s\" must be given, a non-empty string", key);
		return NULL;
	}
	return json_object_get_string(o);
}

/* The required "plugin" (its id); false with the reason in buf. */
static bool get_id(struct json_object *req, unsigned int *id, char *buf, size_t bufsz)
{
	uint64_t v = 0;
	bool given;

	if (!control_get_u64(req, "plugin", &v, &given, buf, bufsz))
		return false;
	if (!given || v > 0xffffffffu) {
		snprintf(buf, bufsz, "\"plugin\" must be given, a plugin's id (plugin-list shows them)");
		return false;
	}
	*id = (unsigned int)v;
	return true;
}

/* The names of the events set in on[], as a JSON array. */
static struct json_object *event_names(const bool on[KVMPROF_TRACE_EVENT_COUNT])
{
	struct json_object *a = json_object_new_array();

	for (unsigned int e = 0; e < KVMPROF_TRACE_EVENT_COUNT; e++)
		if (on[e])
			json_object_array_add(a, json_object_new_string(trace_event_info(e)->name));
	return a;
}

/*
 * Plugin output is whatever the plugin printed: JSON strings must be UTF-8,
 * so bytes that are not part of a valid UTF-8 sequence become '?'.
 */
static void utf8_clean(char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned char c = (unsigned char)s[i];
		size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
		bool ok = len != 0 && i + len <= n && !(len == 2 && c < 0xc2) && !(len == 4 && c > 0xf4);

		for (size_t k = 1; ok && k < len; k++)
			ok = ((unsigned char)s[i + k] & 0xc0) == 0x80;
		if (ok && c == 0) /* a NUL would end the JSON string early in some readers */
			ok = false;
		if (!ok) {
			s[i++] = '?';
			continue;
		}
		i += len;
	}
}

static struct json_object *text_value(char *text, size_t n)
{
	utf8_clean(text, n);
	return json_object_new_string_len(text, (int)n);
}

const char *control_plugin_load(struct control_session *ses, struct json_object *req, struct json_object *r,
				char *buf, size_t bufsz)
{
	char *argv[PLUGIN_ARGS_MAX];
	struct plugin_info info[PLUGIN_MAX];
	struct json_object *args;
	const char *path = get_str(req, "path", buf, bufsz);
	int argc = 0, id;
	unsigned int n;

	(void)ses;
	if (!path)
		return buf;
	if (json_object_object_get_ex(req, "args", &args)) {
		size_t len;

		if (!json_object_is_type(args, json_type_array))
			return "\"args\" must be an array of \"key=value\" strings";
		len = json_object_array_length(args);
		if (len > PLUGIN_ARGS_MAX) {
			snprintf(buf, bufsz, "\"args\": at most %d arguments", PLUGIN_ARGS_MAX);
			return buf;
		}
		for (size_t i = 0; i < len; i++) {
			struct json_object *a = json_object_array_get_idx(args, i);

			if (!json_object_is_type(a, json_type_string))
				return "\"args\" must be an array of \"key=value\" strings";
			argv[argc++] = (char *)json_object_get_string(a);
		}
	}
	id = plugin_load(path, argc, argv, buf, bufsz);
	if (id < 0)
		return buf;
	control_put_u64(r, "plugin", (uint64_t)id);
	n = plugin_list(info, PLUGIN_MAX);
	for (unsigned int i = 0; i < n && i < PLUGIN_MAX; i++) {
		if (info[i].id != (unsigned int)id)
			continue;
		control_put_str(r, "name", info[i].name);
		control_put(r, "events", event_names(info[i].events));
	}
	return NULL;
}

const char *control_plugin_unload(struct control_session *ses, struct json_object *req, struct json_object *r,
				  char *buf, size_t bufsz)
{
	struct plugin_unload_result res;
	unsigned int id;
	size_t carried;

	(void)ses;
	if (!get_id(req, &id, buf, bufsz))
		return buf;
	if (plugin_unload(id, &res, buf, bufsz))
		return buf;
	control_put_u64(r, "plugin", id);
	control_put_str(r, "name", res.name);
	control_put_str(r, "output_file", res.output_file[0] ? res.output_file : NULL);
	control_put_u64(r, "output_bytes", res.output_bytes);
	control_put_u64(r, "output_lost", res.output_lost);
	control_put_str(r, "output_error", res.output_errno ? strerror(res.output_errno) : NULL);
	/* What fini printed comes with the reply; what does not fit stays for plugin-output. */
	carried = res.output_len < CONTROL_PLUGIN_OUTPUT_MAX ? res.output_len : CONTROL_PLUGIN_OUTPUT_MAX;
	if (res.output_len > carried)
		plugin_output_keep(id, res.name, res.output + carried, res.output_len - carried);
	control_put(r, "output", text_value(res.output ? res.output : (char *)"", carried));
	control_put(r, "more", json_object_new_boolean(res.output_len > carried));
	plugin_unload_result_free(&res);
	return NULL;
}

const char *control_plugin_list(struct control_session *ses, struct json_object *req, struct json_object *r,
				char *buf, size_t bufsz)
{
	struct plugin_info info[PLUGIN_MAX];
	struct json_object *list = json_object_new_array();
	unsigned int n = plugin_list(info, PLUGIN_MAX);

	(void)ses;
	(void)req;
	(void)buf;
	(void)bufsz;
	for (unsigned int i = 0; i < n && i < PLUGIN_MAX; i++) {
		struct json_object *o = json_object_new_object();

		control_put_u64(o, "plugin", info[i].id);
		control_put_str(o, "name", info[i].name);
		control_put_str(o, "path", info[i].path);
		control_put(o, "events", event_names(info[i].events));
		control_put(o, "handles", event_names(info[i].handles));
		control_put_str(o, "output_file", info[i].output_file[0] ? info[i].output_file : NULL);
		control_put_u64(o, "output_bytes", info[i].output_bytes);
		control_put_u64(o, "output_buffered", info[i].output_buffered);
		control_put_u64(o, "output_lost", info[i].output_lost);
		control_put_str(o, "output_error", info[i].output_errno ? strerror(info[i].output_errno) : NULL);
		json_object_array_add(list, o);
	}
	control_put(r, "plugins", list);
	return NULL;
}

const char *control_plugin_output(struct control_session *ses, struct json_object *req, struct json_object *r,
				  char *buf, size_t bufsz)
{
	uint64_t max = CONTROL_PLUGIN_OUTPUT_MAX, lost = 0;
	bool given, more = false;
	unsigned int id;
	char *text;
	long n;

	(void)ses;
	if (!get_id(req, &id, buf, bufsz) || !control_get_u64(req, "max", &max, &given, buf, bufsz))
		return buf;
	if (max > CONTROL_PLUGIN_OUTPUT_MAX)
		max = CONTROL_PLUGIN_OUTPUT_MAX;
	text = malloc(max);
	if (!text)
		return "out of memory";
	n = plugin_output_take(id, text, max, &more, &lost);
	if (n < 0) {
		free(text);
		snprintf(buf, bufsz, "no plugin has id %u", id);
		return buf;
	}
	control_put_u64(r, "plugin", id);
	control_put(r, "output", text_value(text, (size_t)n));
	control_put(r, "more", json_object_new_boolean(more));
	control_put_u64(r, "lost", lost);
	free(text);
	return NULL;
}

const char *control_event_list(struct control_session *ses, struct json_object *req, struct json_object *r,
			       char *buf, size_t bufsz)
{
	bool match[KVMPROF_TRACE_EVENT_COUNT] = { false };
	struct json_object *o, *list;
	const char *pattern = NULL;

	(void)ses;
	if (json_object_object_get_ex(req, "pattern", &o)) {
		pattern = get_str(req, "pattern", buf, bufsz);
		if (!pattern)
			return buf;
	}
	if (trace_events_match(pattern, match, buf, bufsz))
		return buf;
	list = json_object_new_array();
	for (unsigned int e = 0; e < KVMPROF_TRACE_EVENT_COUNT; e++) {
		const struct trace_event_info *ev = trace_event_info(e);
		struct json_object *eo;

		if (!match[e])
			continue;
		eo = json_object_new_object();
		control_put_u64(eo, "id", ev->id);
		control_put_str(eo, "name", ev->name);
		control_put_str(eo, "args", ev->args);
		control_put_str(eo, "description", ev->desc);
		control_put_u64(eo, "subscribers", __atomic_load_n(&trace_listeners[e], __ATOMIC_RELAXED));
		json_object_array_add(list, eo);
	}
	control_put(r, "events", list);
	return NULL;
}

const char *control_event_set(struct control_session *ses, struct json_object *req, struct json_object *r,
			      char *buf, size_t bufsz)
{
	struct plugin_info info[PLUGIN_MAX];
	struct json_object *o;
	const char *events;
	unsigned int id, changed, n;

	(void)ses;
	if (!get_id(req, &id, buf, bufsz))
		return buf;
	events = get_str(req, "events", buf, bufsz);
	if (!events)
		return buf;
	if (!json_object_object_get_ex(req, "enable", &o) || !json_object_is_type(o, json_type_boolean))
		return "\"enable\" must be given, true or false";
	if (plugin_set_events(id, events, json_object_get_boolean(o), &changed, buf, bufsz))
		return buf;
	control_put_u64(r, "plugin", id);
	control_put_u64(r, "changed", changed);
	n = plugin_list(info, PLUGIN_MAX);
	for (unsigned int i = 0; i < n && i < PLUGIN_MAX; i++)
		if (info[i].id == id)
			control_put(r, "events", event_names(info[i].events));
	return NULL;
}
