// SPDX-License-Identifier: MIT
/* The `kvm` vPMU backend: the KVM_SET_PMU_EVENT_FILTER encoding, the probe, the VM setup. */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <cmocka.h>

#include "backend_kvm.h"
#include "vpmu.h"

static void test_build_filter_amd(void **state)
{
	struct vpmu_filter f = { .action = VPMU_FILTER_DENY, .nevents = 3, .fixed_bitmap = 0x5 };
	struct kvm_pmu_event_filter *k = NULL;

	(void)state;
	f.events[0].select = 0xc0, f.events[0].umask = 0;
	f.events[1].select = 0x1c0, f.events[1].umask = 0x12;
	f.events[2].select = 0xfff, f.events[2].umask = 0xff;
	assert_int_equal(vpmu_kvm_build_filter(&f, VPMU_HOST_AMD, &k), 0);
	assert_non_null(k);
	assert_int_equal(k->action, KVM_PMU_EVENT_DENY);
	assert_int_equal(k->nevents, 3);
	assert_int_equal(k->fixed_counter_bitmap, 0x5);
	assert_int_equal(k->flags, 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(k->pad[i], 0);
	assert_int_equal(k->events[0], 0xc0);
	assert_int_equal(k->events[1], 0x1000012c0ULL); /* select 11:8 at 35:32 */
	assert_int_equal(k->events[2], 0xf0000ffffULL);
	free(k);
}

static void test_build_filter_intel(void **state)
{
	struct vpmu_filter f = { .action = VPMU_FILTER_ALLOW, .nevents = 2, .fixed_bitmap = 0x2 };
	struct kvm_pmu_event_filter *k = NULL;

	(void)state;
	f.events[0].select = 0xc0, f.events[0].umask = 0x00;
	f.events[1].select = 0x2e, f.events[1].umask = 0x4f;
	assert_int_equal(vpmu_kvm_build_filter(&f, VPMU_HOST_INTEL, &k), 0);
	assert_int_equal(k->action, KVM_PMU_EVENT_ALLOW);
	assert_int_equal(k->nevents, 2);
	assert_int_equal(k->fixed_counter_bitmap, 0x2);
	assert_int_equal(k->events[0], 0xc0);
	assert_int_equal(k->events[1], 0x4f2e);
	free(k);

	/* Intel has no event select bits 11:8: such a filter cannot be encoded. */
	f.events[1].select = 0x1c0;
	k = NULL;
	assert_int_equal(vpmu_kvm_build_filter(&f, VPMU_HOST_INTEL, &k), -EINVAL);
	assert_null(k);

	/* An empty ALLOW list is valid (it denies every GP event). */
	f.nevents = 0;
	assert_int_equal(vpmu_kvm_build_filter(&f, VPMU_HOST_INTEL, &k), 0);
	assert_int_equal(k->nevents, 0);
	free(k);

	/* Bad arguments. */
	assert_int_equal(vpmu_kvm_build_filter(NULL, VPMU_HOST_AMD, &k), -EINVAL);
	assert_int_equal(vpmu_kvm_build_filter(&f, VPMU_HOST_AMD, NULL), -EINVAL);
	f.nevents = VPMU_FILTER_MAX_EVENTS + 1;
	assert_int_equal(vpmu_kvm_build_filter(&f, VPMU_HOST_AMD, &k), -EINVAL);
}

static void test_build_filter_limit(void **state)
{
	static struct vpmu_filter f = { .action = VPMU_FILTER_DENY, .nevents = VPMU_FILTER_MAX_EVENTS };
	struct kvm_pmu_event_filter *k = NULL;

	(void)state;
	for (unsigned int i = 0; i < VPMU_FILTER_MAX_EVENTS; i++)
		f.events[i].select = (uint16_t)i, f.events[i].umask = (uint8_t)(i * 7);
	assert_int_equal(vpmu_kvm_build_filter(&f, VPMU_HOST_AMD, &k), 0);
	assert_int_equal(k->nevents, VPMU_FILTER_MAX_EVENTS);
	for (unsigned int i = 0; i < VPMU_FILTER_MAX_EVENTS; i++)
		assert_int_equal(k->events[i], (uint64_t)(i & 0xff) | (uint64_t)(uint8_t)(i * 7) << 8 |
						       (uint64_t)(i >> 8) << 32);
	free(k);
}

/* The probe answers either way; on the PVM host it must say why it is unusable. */
static void test_probe(void **state)
{
	char reason[VPMU_ERR_MAX];
	int rc;

	(void)state;
	memset(reason, 0, sizeof reason);
	rc = vpmu_kvm_probe(reason);
	print_message("vpmu_kvm_probe: %d: %s\n", rc, reason);
	assert_true(rc == 0 || rc == -ENODEV);
	assert_true(reason[0] != '\0');
	assert_true(strlen(reason) < VPMU_ERR_MAX);
	if (rc == -ENODEV)
		assert_non_null(strcasestr(reason, "kvm"));
	else
		assert_non_null(strstr(reason, "works"));
	/* Nothing is left behind: a second probe says the same. */
	char again[VPMU_ERR_MAX];
	assert_int_equal(vpmu_kvm_probe(again), rc);
	assert_string_equal(again, reason);
}

static enum vpmu_host_vendor host_vendor(void)
{
	unsigned int a, b, c, d;

	__asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0), "c"(0));
	if (b == 0x68747541) /* "Auth" */
		return VPMU_HOST_AMD;
	if (b == 0x756e6547) /* "Genu" */
		return VPMU_HOST_INTEL;
	return VPMU_HOST_OTHER;
}

static bool kvm_enable_pmu_off(void)
{
	char c = '?';
	int fd = open("/sys/module/kvm/parameters/enable_pmu", O_RDONLY);

	if (fd >= 0) {
		if (read(fd, &c, 1) != 1)
			c = '?';
		close(fd);
	}
	return c == 'N';
}

static void test_setup_bad_vm(void **state)
{
	struct vpmu_config cfg = { .model = VPMU_MODEL_OFF, .host = host_vendor() };
	char err[VPMU_ERR_MAX];

	(void)state;
	err[0] = '\0';
	assert_int_equal(vpmu_kvm_setup(-1, &cfg, NULL, err), -EINVAL);
	assert_true(err[0] != '\0');
}

/*
 * The tests against the real KVM skip where there is none: the message
 * printed just before skip() is the reason tests/run-all.sh reports.
 */
static int open_kvm_or_skip(void)
{
	int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);

	if (kvm < 0) {
		print_message("/dev/kvm: %s\n", strerror(errno));
		skip();
	}
	return kvm;
}

/* KVM_CAP_PMU_CAPABILITY: model off disables KVM's vPMU, before any vCPU exists only. */
static void test_setup_model_off(void **state)
{
	struct vpmu_config cfg = { .model = VPMU_MODEL_OFF, .host = host_vendor() };
	struct vpmu_filter f = { .action = VPMU_FILTER_DENY, .nevents = 1, .fixed_bitmap = 1 };
	char err[VPMU_ERR_MAX];
	int kvm, vm, vcpu, rc;

	(void)state;
	f.events[0].select = 0xc0;
	kvm = open_kvm_or_skip();
	bool can_disable = ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_PMU_CAPABILITY) & KVM_PMU_CAP_DISABLE;

	/* Model off: the vPMU is disabled before vCPUs exist. */
	vm = ioctl(kvm, KVM_CREATE_VM, 0);
	assert_true(vm >= 0);
	rc = vpmu_kvm_setup(vm, &cfg, &f, err);
	print_message("setup(off): %d %s\n", rc, rc ? err : "");
	assert_int_equal(rc, can_disable || kvm_enable_pmu_off() ? 0 : -EOPNOTSUPP);
	close(vm);

	/* ... and too late once a vCPU exists. */
	vm = ioctl(kvm, KVM_CREATE_VM, 0);
	assert_true(vm >= 0);
	vcpu = ioctl(vm, KVM_CREATE_VCPU, 0);
	assert_true(vcpu >= 0);
	rc = vpmu_kvm_setup(vm, &cfg, NULL, err);
	print_message("setup(off) after a vCPU: %d %s\n", rc, err);
	if (can_disable) {
		assert_int_equal(rc, -EINVAL);
		assert_non_null(strstr(err, "before any vCPU"));
	} else {
		assert_int_equal(rc, kvm_enable_pmu_off() ? 0 : -EOPNOTSUPP);
	}
	close(vcpu);
	close(vm);
	close(kvm);
}

/* KVM_SET_PMU_EVENT_FILTER with the host's own model; the other vendor's is refused. */
static void test_setup_host_model_filter(void **state)
{
	enum vpmu_host_vendor host = host_vendor();
	struct vpmu_config cfg = { .host = host };
	struct vpmu_filter f = { .action = VPMU_FILTER_DENY, .nevents = 1, .fixed_bitmap = 1 };
	char err[VPMU_ERR_MAX];
	int kvm, vm, rc;

	(void)state;
	f.events[0].select = 0xc0;
	if (host == VPMU_HOST_OTHER) {
		print_message("the host CPU is neither AMD nor Intel: KVM offers no vPMU model to test\n");
		skip();
	}
	kvm = open_kvm_or_skip();
	bool has_filter = ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_PMU_EVENT_FILTER) > 0;

	/* The host's own model with a filter: KVM accepts the encoding. */
	cfg.model = host == VPMU_HOST_AMD ? VPMU_MODEL_AMD : VPMU_MODEL_INTEL;
	vm = ioctl(kvm, KVM_CREATE_VM, 0);
	assert_true(vm >= 0);
	rc = vpmu_kvm_setup(vm, &cfg, &f, err);
	print_message("setup(%s, deny filter): %d %s\n", host == VPMU_HOST_AMD ? "amd" : "intel", rc,
		      rc ? err : "");
	assert_int_equal(rc, has_filter ? 0 : -EOPNOTSUPP);
	/* An allow filter from the config, with an AMD-only event select where it is valid. */
	f.action = VPMU_FILTER_ALLOW;
	f.events[0].select = host == VPMU_HOST_AMD ? 0x1c0 : 0xc0;
	cfg.filter = &f;
	assert_int_equal(vpmu_kvm_setup(vm, &cfg, NULL, err), has_filter ? 0 : -EOPNOTSUPP);
	/* No filter at all: nothing to do. */
	cfg.filter = NULL;
	assert_int_equal(vpmu_kvm_setup(vm, &cfg, NULL, err), 0);

	/* The other vendor's model is not what KVM's vPMU offers. */
	cfg.model = host == VPMU_HOST_AMD ? VPMU_MODEL_INTEL : VPMU_MODEL_AMD;
	assert_int_equal(vpmu_kvm_setup(vm, &cfg, &f, err), -EINVAL);
	assert_non_null(strstr(err, "host"));
	close(vm);
	close(kvm);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_build_filter_amd),   cmocka_unit_test(test_build_filter_intel),
		cmocka_unit_test(test_build_filter_limit), cmocka_unit_test(test_probe),
		cmocka_unit_test(test_setup_bad_vm),       cmocka_unit_test(test_setup_model_off),
		cmocka_unit_test(test_setup_host_model_filter),
	};

	return cmocka_run_group_tests_name("vpmu_kvm", tests, NULL, NULL);
}
