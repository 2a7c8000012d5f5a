/* SPDX-License-Identifier: MIT */
/*
 * libvirt, libvirt-qemu and libxml2, loaded when a command first talks to
 * libvirt (virt_connect) instead of linked: with their ~50 libraries
 * (GLib, GnuTLS, ICU, ...) every kvmprof command, a report too, spent
 * ~15 ms starting up. The calls kvmprof makes go through virt_dl, each
 * typed as its library's header declares it.
 */
#ifndef HOST_LIBVIRT_VIRT_DL_H
#define HOST_LIBVIRT_VIRT_DL_H

#include <libvirt/libvirt-qemu.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <libxml/parser.h>
#include <libxml/xpath.h>
#include <stddef.h>

/* X(library, function): library 0 is libvirt, 1 libvirt-qemu, 2 libxml2 (virt_dl.c's table of names). */
#define VIRT_DL_FUNCS(X)                                                                                          \
	X(0, virConnectClose) X(0, virConnectGetType) X(0, virConnectListAllDomains) X(0, virConnectOpen)         \
	X(0, virDomainFree) X(0, virDomainGetInfo) X(0, virDomainGetName) X(0, virDomainGetState)                \
	X(0, virDomainGetXMLDesc) X(0, virDomainLookupByName) X(0, virGetLastErrorMessage)                       \
	X(0, virSetErrorFunc) X(1, virDomainQemuMonitorCommand) X(2, xmlFreeDoc) X(2, xmlReadMemory)             \
	X(2, xmlXPathEvalExpression) X(2, xmlXPathFreeContext) X(2, xmlXPathFreeObject) X(2, xmlXPathNewContext)

struct virt_dl {
#define VIRT_DL_MEMBER(lib, f) __typeof__(f) *f;
	VIRT_DL_FUNCS(VIRT_DL_MEMBER)
#undef VIRT_DL_MEMBER
};

/* Filled by virt_dl_load. */
extern struct virt_dl virt_dl;

/* Loads the libraries once: 0, or -ENOENT with a one-line message (what is missing, which package has it). */
int virt_dl_load(char *err, size_t errlen);

#endif
