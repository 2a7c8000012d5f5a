/* SPDX-License-Identifier: MIT */
/* Small json-c helpers the control commands share (control_cmds.c, control_plugins.c). */
#ifndef KVMPROF_CONTROL_JSON_H
#define KVMPROF_CONTROL_JSON_H

#include <json.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

static inline void control_put(struct json_object *o, const char *key, struct json_object *v)
{
	json_object_object_add(o, key, v);
}

static inline void control_put_u64(struct json_object *o, const char *key, uint64_t v)
{
	json_object_object_add(o, key, json_object_new_uint64(v));
}

static inline void control_put_str(struct json_object *o, const char *key, const char *s)
{
	json_object_object_add(o, key, s ? json_object_new_string(s) : NULL);
}

/* An optional positive integer: false (with the reason in buf) when given but not one. */
static inline bool control_get_u64(struct json_object *req, const char *key, uint64_t *v, bool *given, char *buf,
				   size_t bufsz)
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

#endif
