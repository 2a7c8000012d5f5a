/* SPDX-License-Identifier: MIT */
/*
 * The one owner of each vCPU's guest debug state (KVM_SET_GUEST_DEBUG): the
 * four execution breakpoints (DR0-DR3) and single-stepping, as
 * Firecracker's gdb module owns them. Its clients (the exact engine's KVM
 * steps, the PMI tracer, later guest probes) say once what they need:
 * breakpoint slots and whether they step. At VM setup the owner gives each
 * client the VM uses its own slots, or refuses clients that cannot run
 * together, saying why. At run time a client sets or clears its own
 * breakpoints and step; the owner merges every client's into one
 * KVM_SET_GUEST_DEBUG, and hands each KVM_EXIT_DEBUG to the clients that
 * have something set, in table order, until one takes it.
 */
#ifndef KVMPROF_GUEST_DEBUG_H
#define KVMPROF_GUEST_DEBUG_H

#include <stdbool.h>
#include <stdint.h>

#include "vcpu_hooks.h"

#define GUEST_DEBUG_SLOTS 4 /* DR0-DR3 */

struct vcpu;
struct vm;

struct guest_debug_client {
	const char *name;     /* for messages: the option that asks for it */
	const char *instead;  /* for a refusal: what leaves the registers free (NULL: nothing to say) */
	/*
	 * For a client that serves others (the engine): its name in this VM,
	 * with *instead set, in place of the two above (NULL: those).
	 */
	const char *(*name_in)(const struct vm *vm, const char **instead);
	unsigned int slots;   /* breakpoints it sets at most at once */
	bool steps;           /* it single-steps */
	bool (*wanted)(const struct vm *vm); /* whether this VM uses it */
	/* A debug exit while the client had something set: true if it is the client's. */
	bool (*debug_exit)(struct vcpu *vcpu);
};

/* The clients, in the order debug exits are offered (vm_features.c). NULL-terminated. */
extern const struct guest_debug_client *const guest_debug_clients[];

/* KVM_GUESTDBG_* control bits beyond ENABLE, USE_HW_BP and SINGLESTEP a client may add (BLOCKIRQ). */
#define GUEST_DEBUG_EXTRA_MAX 4

/*
 * Sets client c's breakpoints (execute, one byte, at addr[0..n), n at most
 * its slots) and single-step, with extra KVM_GUESTDBG_* bits (BLOCKIRQ);
 * n == 0 and !step clears what it had. One KVM_SET_GUEST_DEBUG with every
 * client's: 0 or -errno (-EINVAL: more than its slots, or a client the VM
 * did not take).
 */
int guest_debug_set(struct vcpu *vcpu, const struct guest_debug_client *c, const uint64_t *addr, unsigned int n,
		    bool step, uint32_t extra);
static inline int guest_debug_clear(struct vcpu *vcpu, const struct guest_debug_client *c)
{
	return guest_debug_set(vcpu, c, 0, 0, false, 0);
}

struct kvm_guest_debug;
/* The one KVM_SET_GUEST_DEBUG (guest_debug_kvm.c): 0 or -errno. */
int guest_debug_apply(struct vcpu *vcpu, const struct kvm_guest_debug *dbg);

/* The owner's place in the VM (vcpu_hooks.h): setup refuses clients that cannot run together; it takes debug exits. */
extern const struct vcpu_hooks guest_debug_hooks;

#endif
