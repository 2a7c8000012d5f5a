/* SPDX-License-Identifier: MIT */
/*
 * libvirt-managed QEMU/KVM domains as kvmprof sees them, through the
 * libvirt C API: the connection, a domain by name (with the closest names
 * when there is none), and what profiling it needs: QEMU's pid and vCPU
 * thread ids (QMP query-cpus-fast: libvirt has no public call for them),
 * the domain XML's facts (type, machine, direct-boot kernel, guest PMU,
 * memory backing, parsed with libxml2), and an HMP channel to QEMU's
 * monitor (virDomainQemuMonitorCommand; libvirt marks the domain
 * "tainted: custom-monitor" in its log the first time).
 */
#ifndef HOST_LIBVIRT_VIRT_H
#define HOST_LIBVIRT_VIRT_H

#include <libvirt/libvirt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "qemu_monitor.h"

#define VIRT_MAX_VCPUS 64
#define VIRT_DEFAULT_URI "qemu:///system"

struct virt_conn {
	virConnectPtr conn;
	char uri[256];
};

struct virt_domain {
	virDomainPtr dom;
	char name[256];
	char type[16];     /* "kvm", or "qemu" (TCG) */
	char machine[64];  /* "pc-i440fx-7.2" */
	char kernel[4096]; /* <os><kernel>: a direct-boot kernel's host path, "" when the guest boots from a disk */
	char memory_backing[32]; /* <memoryBacking><source type>: "memfd", "file", "anonymous", "" (QEMU's default) */
	int pmu;           /* <features><pmu state>: 1 on, 0 off, -1 not said (QEMU's CPU models: off) */
	uint64_t memory_kib;
	pid_t qemu_pid;
	unsigned int nvcpus;
	pid_t vcpu_tid[VIRT_MAX_VCPUS]; /* by vCPU index */
	struct qemu_monitor monitor;    /* its HMP channel */
};

/* Connects to uri (NULL: VIRT_DEFAULT_URI). 0, or -errno with a one-line message naming the URI in err. */
int virt_connect(struct virt_conn *c, const char *uri, char *err, size_t errlen);
void virt_disconnect(struct virt_conn *c);

/*
 * The running domain called name, with its facts. 0, or -ENOENT (no such
 * domain: err names the closest ones), -ESRCH (not running), -errno with
 * a message in err.
 */
int virt_domain_open(struct virt_conn *c, const char *name, struct virt_domain *d, char *err, size_t errlen);
void virt_domain_close(struct virt_domain *d);

/* The names of the running domains, sorted (*names malloc'd, each too). 0 or -errno with a message. */
int virt_running_names(struct virt_conn *c, char ***names, int *n, char *err, size_t errlen);
void virt_free_names(char **names, int n);

#endif
