// SPDX-License-Identifier: MIT
/*
 * The kinds of VM kvmprof profiles (vm_target.h), chosen by their options.
 * A new kind (Cloud Hypervisor, say) is a file with its struct
 * vm_target_ops and an open function, and a row here.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "vm_target.h"

static int open_vmm(struct vm_target *t, const char *arg, const char *connect, const struct host_record_opts *o)
{
	(void)connect;
	return vm_target_open_vmm(t, arg, o != NULL);
}

static int open_domain(struct vm_target *t, const char *arg, const char *connect, const struct host_record_opts *o)
{
	return vm_target_open_domain(t, connect, arg, o);
}

const struct vm_target_kind vm_target_kinds[] = {
	{ .option = "vm", .val = 'v', .arg = "SOCKET", .about = "kvmprof-vmm --control SOCKET", .open = open_vmm },
	{ .option = "domain", .val = 'D', .arg = "NAME", .about = "a libvirt domain", .libvirt = true,
	  .open = open_domain },
	{ 0 },
};

size_t vm_target_longopts(struct option *opts, size_t n, size_t max)
{
	for (const struct vm_target_kind *k = vm_target_kinds; k->option && n < max; k++)
		opts[n++] = (struct option){ k->option, required_argument, NULL, k->val };
	return n;
}

bool vm_target_option(struct vm_target_choice *c, int opt, const char *arg)
{
	for (const struct vm_target_kind *k = vm_target_kinds; k->option; k++) {
		if (k->val == opt) {
			c->kind = k;
			c->arg = arg;
			c->given++;
			return true;
		}
	}
	return false;
}

void vm_target_choices(char *buf, size_t size, const char *last)
{
	size_t n = 0, used = 0;

	while (vm_target_kinds[n].option)
		n++;
	if (size)
		buf[0] = '\0';
	for (size_t i = 0; i < n && used < size; i++) {
		const struct vm_target_kind *k = &vm_target_kinds[i];
		const char *sep = i == 0 ? "" : i + 1 == n && !last ? " or " : ", ";
		int w = snprintf(buf + used, size - used, "%s--%s %s (%s)", sep, k->option, k->arg, k->about);

		if (w < 0)
			return;
		used += (size_t)w;
	}
	if (last && used < size)
		snprintf(buf + used, size - used, " or %s", last);
}

const struct vm_target_kind *vm_target_kind_of(const char *name)
{
	for (const struct vm_target_kind *k = vm_target_kinds; k->option; k++)
		if (!strcmp(k->option, name))
			return k;
	return NULL;
}

int vm_target_open(struct vm_target *t, const struct vm_target_choice *c, const char *connect,
		   const struct host_record_opts *o)
{
	return c->kind->open(t, c->arg, connect, o);
}
