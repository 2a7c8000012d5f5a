// SPDX-License-Identifier: MIT
/*
 * The guest debug owner (vmm/guest_debug.c) with four made-up clients: it
 * gives each its slots, refuses clients that need more than four
 * breakpoints or that both single-step, merges every client's breakpoints
 * and step into one KVM_SET_GUEST_DEBUG (captured here, no KVM), and offers
 * a debug exit to the clients that have something set, in order.
 */
#include <errno.h>
#include <linux/kvm.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "guest_debug.h"
#include "vm.h"

static struct kvm_guest_debug applied;
static unsigned int applies;

int guest_debug_apply(struct vcpu *vcpu, const struct kvm_guest_debug *dbg)
{
	(void)vcpu;
	applied = *dbg;
	applies++;
	return 0;
}

static bool want_c, want_d;
static char exits[64];

static bool wanted_c(const struct vm *vm)
{
	(void)vm;
	return want_c;
}

static bool wanted_d(const struct vm *vm)
{
	(void)vm;
	return want_d;
}

#define CLIENT_EXIT(tag, takes)                                   \
	static bool exit_##tag(struct vcpu *vcpu)                 \
	{                                                         \
		(void)vcpu;                                       \
		strncat(exits, #tag, sizeof(exits) - strlen(exits) - 1); \
		return takes;                                     \
	}
CLIENT_EXIT(a, false)
CLIENT_EXIT(b, true)
CLIENT_EXIT(c, true)
CLIENT_EXIT(d, true)

static const struct guest_debug_client a = { .name = "a", .slots = 2, .debug_exit = exit_a };
static const struct guest_debug_client b = { .name = "b", .slots = 2, .steps = true, .debug_exit = exit_b };
static const struct guest_debug_client c = { .name = "c", .slots = 1, .wanted = wanted_c, .debug_exit = exit_c };
/* d serves others, as the engine does: its words depend on the VM. */
static const char *d_name_in(const struct vm *vm, const char **instead)
{
	(void)vm;
	*instead = "do without d";
	return "d for this VM";
}

static const struct guest_debug_client d = { .name = "d", .name_in = d_name_in, .steps = true, .wanted = wanted_d,
					     .debug_exit = exit_d };
const struct guest_debug_client *const guest_debug_clients[] = { &a, &b, &c, &d, NULL };

static const struct vcpu_hooks *const features[] = { &guest_debug_hooks, NULL };
static struct vm vm;
static struct vcpu vcpu;

static int setup_vm(void)
{
	memset(&vm, 0, sizeof(vm));
	vm.hooks = features;
	vcpu = (struct vcpu){ .vm = &vm };
	applies = 0;
	exits[0] = '\0';
	assert_int_equal(vm_hooks_alloc(&vm), 0);
	assert_int_equal(vcpu_hooks_alloc(&vcpu), 0);
	return vm_hooks_setup(&vm);
}

static int teardown(void **state)
{
	(void)state;
	vcpu_hooks_free(&vcpu);
	vm_hooks_free(&vm);
	return 0;
}

static void test_two_clients_share_the_registers(void **state)
{
	const uint64_t abp[2] = { 0x1000, 0x2000 }, bbp[1] = { 0x3000 };

	(void)state;
	want_c = want_d = false;
	assert_int_equal(setup_vm(), 0);
	/* a's two breakpoints in DR0 and DR1, enabled locally, execute, one byte. */
	assert_int_equal(guest_debug_set(&vcpu, &a, abp, 2, false, 0), 0);
	assert_int_equal(applied.control, KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_USE_HW_BP);
	assert_int_equal(applied.arch.debugreg[0], 0x1000);
	assert_int_equal(applied.arch.debugreg[1], 0x2000);
	assert_int_equal(applied.arch.debugreg[7], 0x5);
	/* b's in DR2 beside them, with its step and its extra bit. */
	assert_int_equal(guest_debug_set(&vcpu, &b, bbp, 1, true, KVM_GUESTDBG_BLOCKIRQ), 0);
	assert_int_equal(applied.control, KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_USE_HW_BP | KVM_GUESTDBG_SINGLESTEP |
						  KVM_GUESTDBG_BLOCKIRQ);
	assert_int_equal(applied.arch.debugreg[0], 0x1000);
	assert_int_equal(applied.arch.debugreg[2], 0x3000);
	assert_int_equal(applied.arch.debugreg[7], 0x15);
	/* A debug exit: a has something set but does not take it, b does. */
	assert_true(guest_debug_hooks.debug_exit(&vcpu));
	assert_string_equal(exits, "ab");
	/* a clears: b's alone remain, in its own slot. */
	assert_int_equal(guest_debug_clear(&vcpu, &a), 0);
	assert_int_equal(applied.arch.debugreg[0], 0);
	assert_int_equal(applied.arch.debugreg[2], 0x3000);
	assert_int_equal(applied.arch.debugreg[7], 0x10);
	exits[0] = '\0';
	assert_true(guest_debug_hooks.debug_exit(&vcpu));
	assert_string_equal(exits, "b"); /* a has nothing set: not asked */
	/* Everything cleared: debugging off; a debug exit nobody has set anything for is nobody's. */
	assert_int_equal(guest_debug_clear(&vcpu, &b), 0);
	assert_int_equal(applied.control, 0);
	assert_int_equal(applied.arch.debugreg[7], 0);
	exits[0] = '\0';
	assert_false(guest_debug_hooks.debug_exit(&vcpu));
	assert_string_equal(exits, "");
	/* More than its slots, or a client this VM did not take: refused, nothing applied. */
	applies = 0;
	assert_int_equal(guest_debug_set(&vcpu, &b, abp, 3, false, 0), -EINVAL);
	assert_int_equal(guest_debug_set(&vcpu, &c, abp, 1, false, 0), -EINVAL);
	assert_int_equal(applies, 0);
}

static void test_too_many_breakpoints_refused(void **state)
{
	(void)state;
	want_c = true;
	want_d = false;
	assert_int_equal(setup_vm(), -EBUSY); /* a 2 + b 2 + c 1 */
}

/* What setup_vm() said on stderr, in said. */
static char said[256];

static int setup_vm_saying(void)
{
	FILE *f = tmpfile();
	int saved = dup(2), rc;
	size_t n;

	assert_non_null(f);
	fflush(stderr);
	assert_int_equal(dup2(fileno(f), 2), 2);
	rc = setup_vm();
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(f);
	n = fread(said, 1, sizeof(said) - 1, f);
	said[n] = '\0';
	fclose(f);
	return rc;
}

static void test_two_steppers_refused(void **state)
{
	(void)state;
	want_c = false;
	want_d = true;
	assert_int_equal(setup_vm_saying(), -EBUSY); /* b and d both step */
	/* d named and its alternative given in its words for this VM */
	assert_string_equal(said, "kvmprof-vmm: b and d for this VM both single-step the guest: use one at a time; "
				  "do without d\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_two_clients_share_the_registers, teardown),
		cmocka_unit_test_teardown(test_too_many_breakpoints_refused, teardown),
		cmocka_unit_test_teardown(test_two_steppers_refused, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
