/* SPDX-License-Identifier: MIT */
/*
 * The static kvmprof (build/kvmprof-static, for the nested harness's L1
 * initramfs) is linked without libvirt, which Debian ships as a shared
 * library only: what needs it says so.
 */
#include <stdio.h>
#include <string.h>

#include "host_list.h"
#include "vm_target.h"

#define NO_LIBVIRT "this kvmprof is built without libvirt (the static build): use build/kvmprof"

int vm_target_open_domain(struct vm_target *t, const char *uri, const char *name, const struct host_record_opts *o)
{
	(void)uri, (void)name, (void)o;
	memset(t, 0, sizeof(*t));
	t->poll_fd = -1;
	fprintf(stderr, "kvmprof: --domain: %s\n", NO_LIBVIRT);
	return 1;
}

int host_list_domains_main(int argc, char **argv)
{
	(void)argc, (void)argv;
	fprintf(stderr, "kvmprof: list domains: %s\n", NO_LIBVIRT);
	return 1;
}

int host_record_all_domains(const struct host_record_opts *o)
{
	(void)o;
	fprintf(stderr, "kvmprof: --all-domains: %s\n", NO_LIBVIRT);
	return 1;
}
