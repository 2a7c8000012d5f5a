// SPDX-License-Identifier: MIT
/*
 * exit-stats: {"start":true} makes this connection hold the exit counting
 * (exit_stats.h) until {"stop":true} or its end; every reply carries the
 * totals so far, per reason and per vCPU. The counting is on while any
 * connection holds it.
 */
#include "exit_stats.h"
#include "control_exit_stats.h"

#include <errno.h>
#include <json.h>

#include "control_json.h"
#include "vm.h"

const char *const control_exit_stats_keys[] = { "start", "stop", NULL };

/* An optional boolean key: false (the message in buf) when given but not a boolean. */
static bool get_flag(struct json_object *req, const char *key, bool *v, char *buf, size_t bufsz)
{
	struct json_object *o;

	*v = false;
	if (!json_object_object_get_ex(req, key, &o))
		return true;
	if (!json_object_is_type(o, json_type_boolean)) {
		snprintf(buf, bufsz, "\"%s\" must be true or false", key);
		return false;
	}
	*v = json_object_get_boolean(o);
	return true;
}

static void put_totals(struct control_session *ses, struct json_object *r)
{
	const struct exit_stats *es = exit_stats_of(ses->vm);
	unsigned int ncpus = ses->vm->cfg->ncpus < KVMPROF_MAX_CPUS ? ses->vm->cfg->ncpus : KVMPROF_MAX_CPUS;
	struct exit_stats_slot all = { 0 }, per_vcpu[KVMPROF_MAX_CPUS] = { { 0 } };
	struct json_object *reasons = json_object_new_array(), *vcpus = json_object_new_array();
	char name[32];

	for (unsigned int slot = 0; slot < EXIT_STATS_SLOTS; slot++) {
		struct exit_stats_slot sum = { 0 };
		struct json_object *e;

		for (unsigned int i = 0; i < ncpus; i++) {
			struct exit_stats_slot s = exit_stats_read(es, i, slot);

			sum.count += s.count;
			sum.host_ns += s.host_ns;
			per_vcpu[i].count += s.count;
			per_vcpu[i].host_ns += s.host_ns;
		}
		all.count += sum.count;
		all.host_ns += sum.host_ns;
		if (!sum.count)
			continue;
		e = json_object_new_object();
		control_put_str(e, "reason", exit_stats_slot_name(slot, name, sizeof(name)));
		control_put_u64(e, "count", sum.count);
		control_put_u64(e, "host_ns", sum.host_ns);
		json_object_array_add(reasons, e);
	}
	for (unsigned int i = 0; i < ncpus; i++) {
		struct json_object *e = json_object_new_object();

		control_put_u64(e, "index", i);
		control_put_u64(e, "exits", per_vcpu[i].count);
		control_put_u64(e, "host_ns", per_vcpu[i].host_ns);
		json_object_array_add(vcpus, e);
	}
	control_put(r, "counting", json_object_new_boolean(exit_stats_counting(es)));
	control_put_u64(r, "holders", es->refs);
	control_put_u64(r, "exits", all.count);
	control_put_u64(r, "host_ns", all.host_ns);
	control_put(r, "reasons", reasons);
	control_put(r, "vcpus", vcpus);
}

const char *control_exit_stats(struct control_session *ses, struct json_object *req, struct json_object *r,
			       char *buf, size_t bufsz)
{
	bool start, stop;
	int rc;

	if (!get_flag(req, "start", &start, buf, bufsz) || !get_flag(req, "stop", &stop, buf, bufsz))
		return buf;
	if (start && stop)
		return "give \"start\" or \"stop\", not both";
	if (start && !ses->exit_stats) {
		rc = exit_stats_get(exit_stats_of(ses->vm));
		if (rc == -ENOTSUP)
			return "exit-stats needs the VMM's trace events: " TRACE_COMPILED_OUT_MESSAGE;
		if (rc)
			return "cannot count exits: vm_entry or vm_run_end has all the subscribers it can hold";
		ses->exit_stats = true;
	}
	if (stop) {
		if (!ses->exit_stats)
			return "this connection did not start exit-stats";
		control_exit_stats_end(ses);
	}
	put_totals(ses, r);
	return NULL;
}

void control_exit_stats_end(struct control_session *ses)
{
	if (ses->exit_stats)
		exit_stats_put(exit_stats_of(ses->vm));
	ses->exit_stats = false;
}
