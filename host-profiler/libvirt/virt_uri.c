/* SPDX-License-Identifier: MIT */
#include "virt_uri.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* libvirt's transports that leave this host (libvirt.org/uri.html); "unix" is the local socket. */
static const char *const remote_transports[] = { "ssh", "libssh", "libssh2", "tcp", "tls", "ext" };

static int refuse(const char *uri, const char *why, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s is a remote connection (%s): kvmprof reads a domain's memory and threads on the host "
			      "it runs on; run it there, with qemu:///system",
		 uri, why);
	return -EPROTONOSUPPORT;
}

int virt_uri_check_local(const char *uri, char *err, size_t errlen)
{
	const char *colon = strchr(uri, ':'), *plus, *host, *end;
	char why[96];
	size_t hl;

	if (!colon) /* not a URI: an alias from libvirt.conf, which libvirt resolves (and virt.c checks the threads) */
		return 0;
	plus = memchr(uri, '+', (size_t)(colon - uri));
	if (plus) {
		size_t tl = (size_t)(colon - plus - 1);
		char transport[16];

		snprintf(transport, sizeof(transport), "%.*s", (int)(tl < sizeof(transport) ? tl : sizeof(transport) - 1),
			 plus + 1);
		for (size_t i = 0; i < sizeof(remote_transports) / sizeof(remote_transports[0]); i++)
			if (!strcasecmp(transport, remote_transports[i]))
				return refuse(uri, transport, err, errlen);
	}
	if (strncmp(colon, "://", 3))
		return 0;
	/* The authority: [user@]host[:port], up to the path or the query. */
	host = colon + 3;
	end = host + strcspn(host, "/?");
	if (memchr(host, '@', (size_t)(end - host)))
		host = (const char *)memchr(host, '@', (size_t)(end - host)) + 1;
	hl = (size_t)(end - host);
	if (!hl || (plus && !strncasecmp(plus + 1, "unix", 4) && colon - plus - 1 == 4))
		return 0; /* no host, or the local socket (which takes no host) */
	/* A host and no transport: libvirt goes over TLS to it, even to this host's own name. */
	snprintf(why, sizeof(why), "host %.*s", (int)(hl < 64 ? hl : 64), host);
	return refuse(uri, why, err, errlen);
}
