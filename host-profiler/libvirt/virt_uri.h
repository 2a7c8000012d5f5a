/* SPDX-License-Identifier: MIT */
/*
 * Whether a libvirt connection URI reaches this host. kvmprof reads a
 * domain's guest memory (/proc/PID/mem of its QEMU), samples its vCPU
 * threads with perf_event_open and joins both with QEMU's own threads: all
 * of it on the host it runs on. A URI that names another host or a remote
 * transport (qemu+ssh://host/system, qemu://host/system, +tcp, +tls,
 * +libssh, +libssh2, +ext) is refused before libvirt is asked, where
 * libvirt would try to connect first (an ssh login, a TLS handshake) and
 * kvmprof would then fail on the threads.
 */
#ifndef HOST_LIBVIRT_VIRT_URI_H
#define HOST_LIBVIRT_VIRT_URI_H

#include <stddef.h>

/*
 * 0 for a URI of this host (qemu:///system, qemu:///session,
 * qemu+unix:///system?socket=PATH); -EPROTONOSUPPORT for a remote one,
 * with err saying why in one line ("qemu+ssh://h/system is a remote
 * connection (ssh): ...").
 */
int virt_uri_check_local(const char *uri, char *err, size_t errlen);

#endif
