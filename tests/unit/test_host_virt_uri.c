// SPDX-License-Identifier: MIT
/*
 * A libvirt URI that leaves this host is refused up front, in one line,
 * before libvirt is loaded or asked (host-profiler/libvirt/virt_uri.c,
 * through virt_connect): kvmprof reads a domain's memory and threads on
 * the host it runs on, and libvirt would first try an ssh login or a TLS
 * handshake. Local URIs (the system and session daemons, a unix socket
 * named in the query) pass. The agent-free copy of tests/host-profiler's
 * 'a libvirt that cannot be reached' check for remote URIs, which needs
 * no VM and no libvirtd.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "libvirt/virt.h"
#include "libvirt/virt_uri.h"

static void test_local_uris_pass(void **state)
{
	static const char *const local[] = {
		"qemu:///system",
		"qemu:///session",
		"qemu+unix:///system",
		"qemu+unix:///system?socket=/tmp/no-such-socket",
		"qemu+unix:///session?socket=/run/user/1000/libvirt/virtqemud-sock",
		"test:///default",
		"myalias", /* a libvirt.conf alias: libvirt resolves it; virt_domain_open checks the threads are ours */
	};
	char err[512];

	(void)state;
	for (size_t i = 0; i < sizeof(local) / sizeof(local[0]); i++) {
		err[0] = 0;
		assert_int_equal(virt_uri_check_local(local[i], err, sizeof(err)), 0);
		assert_string_equal(err, "");
	}
}

static void test_remote_uris_refused(void **state)
{
	static const struct {
		const char *uri, *why;
	} remote[] = {
		{ "qemu+ssh://root@host.example/system", "ssh" },
		{ "qemu+ssh://host.example/system?keyfile=/k", "ssh" },
		{ "qemu+libssh2://host/system", "libssh2" },
		{ "qemu+libssh://host/system", "libssh" },
		{ "qemu+tcp://10.0.0.2:16509/system", "tcp" },
		{ "qemu+tls://host.example/system", "tls" },
		{ "qemu+ext:///system?command=/opt/connect", "ext" },
		{ "qemu+SSH://host/system", "SSH" },
		/* no transport but a host: libvirt's default there is TLS */
		{ "qemu://host.example/system", "host host.example" },
		{ "qemu://user@10.0.0.2:16514/system", "host 10.0.0.2:16514" },
	};
	char err[512], want[512];

	(void)state;
	for (size_t i = 0; i < sizeof(remote) / sizeof(remote[0]); i++) {
		assert_int_equal(virt_uri_check_local(remote[i].uri, err, sizeof(err)), -EPROTONOSUPPORT);
		snprintf(want, sizeof(want), "%s is a remote connection (%s): kvmprof reads a domain's memory and threads "
					     "on the host it runs on; run it there, with qemu:///system",
			 remote[i].uri, remote[i].why);
		assert_string_equal(err, want);
		assert_null(strchr(err, '\n'));
	}
}

/* Every command connects through virt_connect: it refuses before loading libvirt (none is needed here). */
static void test_connect_refuses_before_libvirt(void **state)
{
	struct virt_conn c;
	char err[512];

	(void)state;
	assert_int_equal(virt_connect(&c, "qemu+ssh://nohost.invalid/system", err, sizeof(err)), -EPROTONOSUPPORT);
	assert_null(c.conn);
	assert_non_null(strstr(err, "qemu+ssh://nohost.invalid/system is a remote connection (ssh): "));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_local_uris_pass),
		cmocka_unit_test(test_remote_uris_refused),
		cmocka_unit_test(test_connect_refuses_before_libvirt),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
