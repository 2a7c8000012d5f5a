/* SPDX-License-Identifier: MIT */
/*
 * A QEMU human-monitor (HMP) command channel, as the parts of kvmprof that
 * read a QEMU guest need it: libvirt's virDomainQemuMonitorCommand for a
 * domain (host-profiler/libvirt/virt.c), canned replies in the tests.
 */
#ifndef HOST_QEMU_MONITOR_H
#define HOST_QEMU_MONITOR_H

#include <stddef.h>

struct qemu_monitor {
	/* Runs cmd; *reply (malloc'd, the caller frees it) is QEMU's text. 0, or -errno with a message in err. */
	int (*hmp)(void *ctx, const char *cmd, char **reply, char *err, size_t errlen);
	void *ctx;
};

#endif
