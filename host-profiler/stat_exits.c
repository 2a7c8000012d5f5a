// SPDX-License-Identifier: MIT
/*
 * kvmprof stat's table of VM exits by reason (stat_exits.h). The VMM's
 * replies are untrusted: names are bounded and printable, numbers
 * non-negative integers, totals that went backwards make the table void.
 */
#include "stat_exits.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The reply's reasons into t; false (why in s->why) when it is not what docs/control-socket.md gives. */
static bool parse_totals(struct stat_exits *s, json_object *reply, struct stat_exit_totals *t, unsigned int *vcpus)
{
	json_object *reasons, *v;
	size_t n;

	t->n = 0;
	if (!json_object_object_get_ex(reply, "reasons", &reasons) || !json_object_is_type(reasons, json_type_array) ||
	    !json_object_object_get_ex(reply, "vcpus", &v) || !json_object_is_type(v, json_type_array))
		goto bad;
	*vcpus = (unsigned int)json_object_array_length(v);
	n = json_object_array_length(reasons);
	if (n > STAT_EXITS_MAX_REASONS)
		goto bad;
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(reasons, i), *name;
		struct stat_exit_reason *r = &t->reason[t->n];
		long long count, host_ns;
		const char *str;

		if (!json_object_is_type(e, json_type_object) || !json_object_object_get_ex(e, "reason", &name) ||
		    !json_object_is_type(name, json_type_string) || vm_client_int(e, "count", 0, INT64_MAX, &count) ||
		    vm_client_int(e, "host_ns", 0, INT64_MAX, &host_ns))
			goto bad;
		str = json_object_get_string(name);
		if (!*str || strlen(str) >= sizeof(r->name))
			goto bad;
		for (const char *c = str; *c; c++)
			if (!isprint((unsigned char)*c))
				goto bad;
		snprintf(r->name, sizeof(r->name), "%s", str);
		r->count = (uint64_t)count;
		r->host_ns = (uint64_t)host_ns;
		t->n++;
	}
	return true;
bad:
	snprintf(s->why, sizeof(s->why), "the VMM's exit-stats reply is malformed");
	return false;
}

void stat_exits_start(struct stat_exits *s, struct vm_client *vm)
{
	json_object *req = json_object_new_object(), *reply = NULL;
	char err[256];
	int rc;

	s->on = false;
	json_object_object_add(req, "cmd", json_object_new_string("exit-stats"));
	json_object_object_add(req, "start", json_object_new_boolean(1));
	rc = vm_client_call(vm, req, &reply, NULL, VM_CLIENT_TIMEOUT_MS, err, sizeof(err));
	json_object_put(req);
	if (rc == -EREMOTEIO && !strncmp(err, "unknown cmd", 11))
		snprintf(s->why, sizeof(s->why), "this kvmprof-vmm is older than exit-stats (it does not count them)");
	else if (rc)
		snprintf(s->why, sizeof(s->why), "%s", err);
	else
		s->on = parse_totals(s, reply, &s->start, &s->vcpus);
	json_object_put(reply);
}

static const struct stat_exit_reason *find(const struct stat_exit_totals *t, const char *name)
{
	for (unsigned int i = 0; i < t->n; i++)
		if (!strcmp(t->reason[i].name, name))
			return &t->reason[i];
	return NULL;
}

static int by_host_time(const void *a, const void *b)
{
	const struct stat_exit_reason *x = a, *y = b;

	if (x->host_ns != y->host_ns)
		return x->host_ns < y->host_ns ? 1 : -1;
	return (x->count < y->count) - (x->count > y->count);
}

static void print_row(FILE *f, const char *name, uint64_t count, uint64_t host_ns, double vcpu_ns)
{
	fprintf(f, "  %-16s %12" PRIu64 " %12.2f %10.2f %8.2f%%\n", name, count, (double)host_ns / 1e6,
	       count ? (double)host_ns / 1e3 / (double)count : 0.0, vcpu_ns > 0 ? 100.0 * (double)host_ns / vcpu_ns : 0.0);
}

void stat_exits_print(FILE *f, struct stat_exits *s, struct vm_client *vm, bool vm_gone, uint64_t interval_ns)
{
	static struct stat_exit_totals end;
	json_object *reply = NULL;
	char err[256];
	unsigned int vcpus = s->vcpus;
	uint64_t count = 0, host_ns = 0;
	double vcpu_ns;

	if (s->on && vm_gone) {
		snprintf(s->why, sizeof(s->why), "the VM went away before the end");
		s->on = false;
	}
	if (s->on) {
		if (vm_client_simple(vm, "exit-stats", &reply, err, sizeof(err))) {
			snprintf(s->why, sizeof(s->why), "%s", err);
			s->on = false;
		} else {
			s->on = parse_totals(s, reply, &end, &vcpus);
		}
		json_object_put(reply);
	}
	/* The difference, in place; totals only grow, so one that shrank is not this VMM's counting. */
	for (unsigned int i = 0; s->on && i < end.n; i++) {
		const struct stat_exit_reason *was = find(&s->start, end.reason[i].name);

		if (was && (was->count > end.reason[i].count || was->host_ns > end.reason[i].host_ns)) {
			snprintf(s->why, sizeof(s->why), "the VMM's exit totals went backwards");
			s->on = false;
		} else if (was) {
			end.reason[i].count -= was->count;
			end.reason[i].host_ns -= was->host_ns;
		}
	}
	if (!s->on) {
		fprintf(f, "VM exits by reason: not available: %s\n", s->why);
		return;
	}
	qsort(end.reason, end.n, sizeof(end.reason[0]), by_host_time);
	vcpu_ns = (double)interval_ns * (vcpus ? vcpus : 1);
	fprintf(f, "VM exits by reason (host time: from each exit to the vCPU's next entry; share: of %u vCPU%s x %.2f s):\n",
		vcpus, vcpus == 1 ? "" : "s", (double)interval_ns / 1e9);
	fprintf(f, "  %-16s %12s %12s %10s %9s\n", "reason", "count", "host ms", "mean us", "share");
	for (unsigned int i = 0; i < end.n; i++) {
		if (!end.reason[i].count)
			continue;
		print_row(f, end.reason[i].name, end.reason[i].count, end.reason[i].host_ns, vcpu_ns);
		count += end.reason[i].count;
		host_ns += end.reason[i].host_ns;
	}
	print_row(f, "all", count, host_ns, vcpu_ns);
}
