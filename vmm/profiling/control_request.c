// SPDX-License-Identifier: MIT
/*
 * One request line of the control socket: strict JSON, a flat object with a
 * "cmd" from the command table and only the keys that command takes, and
 * exactly one reply line, {"ok":true,...} or {"ok":false,"error":...}.
 */
#include <json.h>
#include <stdio.h>
#include <string.h>

#include "control.h"
#include "control_session.h"
#include "trace.h"

/* At most max bytes of s for an error message, cut on a UTF-8 character boundary. */
int control_clip(const char *s, int max)
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

/* Fills r for one request line; returns the error text (in buf or static), or NULL. */
static const char *control_dispatch(struct control_session *ses, struct json_object *req, struct json_object *r,
				    char *buf, size_t bufsz)
{
	struct json_object *v;
	const struct control_cmd *cmd;
	const char *name;
	char cmds[256];

	if (!json_object_is_type(req, json_type_object))
		return "a request is one JSON object per line, e.g. {\"cmd\":\"status\"}";
	if (json_object_object_get_ex(req, "id", &v)) {
		if (!json_object_is_type(v, json_type_string) && !json_object_is_type(v, json_type_int))
			return "\"id\" must be a string or an integer";
		json_object_object_add(r, "id", json_object_get(v));
	}
	control_cmd_list(cmds, sizeof(cmds));
	if (!json_object_object_get_ex(req, "cmd", &v) || !json_object_is_type(v, json_type_string)) {
		snprintf(buf, bufsz, "missing \"cmd\" (a string): %s", cmds);
		return buf;
	}
	name = json_object_get_string(v);
	cmd = control_cmd_find(name);
	if (!cmd) {
		snprintf(buf, bufsz, "unknown cmd '%.*s': %s", control_clip(name, 64), name, cmds);
		return buf;
	}
	json_object_object_foreach(req, key, val) {
		(void)val;
		if (!control_key_allowed(cmd, key)) {
			snprintf(buf, bufsz, "%s takes no key '%.*s'", cmd->name, control_clip(key, 64), key);
			return buf;
		}
	}
	return cmd->run(ses, req, r, buf, bufsz);
}

/* The request's "cmd", its first 8 bytes packed into a trace argument (type s); 0 when it has none. */
static uint64_t trace_cmd_word(struct json_object *req)
{
	struct json_object *v;
	const char *name;
	uint64_t word = 0;

	if (!req || !json_object_is_type(req, json_type_object) || !json_object_object_get_ex(req, "cmd", &v) ||
	    !json_object_is_type(v, json_type_string))
		return 0;
	name = json_object_get_string(v);
	memcpy(&word, name, strnlen(name, sizeof(word)));
	return word;
}

size_t control_reply(struct control_session *ses, const char *line, size_t len, char *out, size_t outsz)
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
	error = control_dispatch(ses, req, r, buf, sizeof(buf));
reply:
	TRACE(control_request, trace_cmd_word(req), !error, len);
	json_object_object_add(r, "ok", json_object_new_boolean(!error));
	if (error)
		json_object_object_add(r, "error", json_object_new_string(error));
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
