/* SPDX-License-Identifier: MIT */
/*
 * The control socket's plugin and event commands (docs/control-socket.md,
 * docs/plugins.md): plugin-load, plugin-unload, plugin-list, plugin-output,
 * event-list, event-set. Handlers for control_cmds.c's table.
 */
#ifndef KVMPROF_CONTROL_PLUGINS_H
#define KVMPROF_CONTROL_PLUGINS_H

#include "control_session.h"

/* Output text one plugin-output or plugin-unload reply carries at most: the reply must fit CONTROL_OUT_MAX. */
#define CONTROL_PLUGIN_OUTPUT_MAX (32u << 10)

extern const char *const control_plugin_load_keys[];
extern const char *const control_plugin_id_keys[];
extern const char *const control_plugin_output_keys[];
extern const char *const control_event_list_keys[];
extern const char *const control_event_set_keys[];

const char *control_plugin_load(struct control_session *ses, struct json_object *req, struct json_object *r,
				char *buf, size_t bufsz);
const char *control_plugin_unload(struct control_session *ses, struct json_object *req, struct json_object *r,
				  char *buf, size_t bufsz);
const char *control_plugin_list(struct control_session *ses, struct json_object *req, struct json_object *r,
				char *buf, size_t bufsz);
const char *control_plugin_output(struct control_session *ses, struct json_object *req, struct json_object *r,
				  char *buf, size_t bufsz);
const char *control_event_list(struct control_session *ses, struct json_object *req, struct json_object *r,
			       char *buf, size_t bufsz);
const char *control_event_set(struct control_session *ses, struct json_object *req, struct json_object *r,
			      char *buf, size_t bufsz);

#endif
