// SPDX-License-Identifier: MIT
/*
 * The kinds of VM kvmprof profiles (vm_target.h), chosen by their options.
 * A new kind (Cloud Hypervisor, say) is a file with its struct
 * vm_target_ops and an open function, and a row here.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
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
	{ .option = "vm", .val = 'v', .arg = "SOCKET", .about = "kvmprof-vmm --control SOCKET",
	  .help = "a kvmprof-vmm by its control socket (kvmprof-vmm --control SOCKET): its host threads and its "
		  "guest sampler",
	  .open = open_vmm },
	{ .option = "domain", .val = 'D', .arg = "NAME", .about = "a libvirt domain", .libvirt = true,
	  .help = "a running libvirt QEMU/KVM domain (kvmprof list shows them): its QEMU's threads and its vCPUs' "
		  "registers; --connect URI names libvirt's connection (default qemu:///system)",
	  .open = open_domain },
	{ 0 },
};

void vm_target_command(struct option *longopts, const struct option *own, size_t nown, char *usage, size_t size,
		       const char *head, const char *tail)
{
	size_t n = 0, used = 0;
	int w;

	for (; n < nown && n < CLI_OWN_LONGOPTS_MAX; n++)
		longopts[n] = own[n];
	for (const struct vm_target_kind *k = vm_target_kinds; k->option && n < CLI_OWN_LONGOPTS_MAX; k++)
		longopts[n++] = (struct option){ k->option, required_argument, NULL, k->val };
	longopts[n] = (struct option){ 0 };
	w = snprintf(usage, size, "%s", head);
	for (const struct vm_target_kind *k = vm_target_kinds; k->option; k++) {
		if (w < 0 || (used += (size_t)w) >= size)
			return;
		w = snprintf(usage + used, size - used, "%s--%s %s", k == vm_target_kinds ? "" : " | ", k->option, k->arg);
	}
	if (w >= 0 && (used += (size_t)w) < size)
		snprintf(usage + used, size - used, "%s", tail);
}

void vm_target_help(FILE *out)
{
	char item[64];

	fprintf(out, "\nThe VM, one of:\n");
	for (const struct vm_target_kind *k = vm_target_kinds; k->option; k++) {
		snprintf(item, sizeof(item), "--%s %s", k->option, k->arg);
		cli_help_item(out, 22, item, k->help);
	}
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
