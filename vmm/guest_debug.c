/* SPDX-License-Identifier: MIT */
#include "guest_debug.h"

#include <errno.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <string.h>

#include "vm.h"

#define MAX_CLIENTS 8
#define DR7_L(i) (1ULL << (2 * (i))) /* local enable; R/W and LEN 0: execute, one byte */

struct client_state {
	uint64_t addr[GUEST_DEBUG_SLOTS];
	unsigned int n;
	bool step;
	uint32_t extra;
};

/* The VM's: which clients it took and their first slot. */
struct guest_debug_vm {
	bool taken[MAX_CLIENTS];
	unsigned int base[MAX_CLIENTS];
};

struct guest_debug_vcpu {
	struct client_state c[MAX_CLIENTS];
};

static int client_index(const struct guest_debug_client *c)
{
	for (int i = 0; i < MAX_CLIENTS && guest_debug_clients[i]; i++)
		if (guest_debug_clients[i] == c)
			return i;
	return -1;
}

/* What messages call a client in this VM, and what it says instead. */
struct client_words {
	const char *name, *instead;
};

static struct client_words words_of(const struct vm *vm, const struct guest_debug_client *c)
{
	struct client_words w = { c->name, c->instead };

	if (c->name_in)
		w.name = c->name_in(vm, &w.instead);
	return w;
}

/* "; INSTEAD" of whichever of the two has something to say. */
static const char *instead(struct client_words a, struct client_words b)
{
	return a.instead ? a.instead : b.instead ? b.instead : NULL;
}

static int guest_debug_setup(struct vm *vm)
{
	struct guest_debug_vm *g = vm_feature(vm, &guest_debug_hooks);
	struct client_words stepper = { 0 }, first = { 0 };
	char taken[256] = "";
	unsigned int slots = 0;

	for (int i = 0; i < MAX_CLIENTS && guest_debug_clients[i]; i++) {
		const struct guest_debug_client *c = guest_debug_clients[i];
		struct client_words w;

		if (c->wanted && !c->wanted(vm))
			continue;
		w = words_of(vm, c);
		if (slots + c->slots > GUEST_DEBUG_SLOTS) {
			fprintf(stderr, "kvmprof-vmm: %s and %s need %u hardware breakpoints together, a vCPU has %d: use "
					"one at a time%s%s\n",
				taken, w.name, slots + c->slots, GUEST_DEBUG_SLOTS, instead(first, w) ? "; " : "",
				instead(first, w) ? instead(first, w) : "");
			return -EBUSY;
		}
		if (c->steps && stepper.name) {
			fprintf(stderr, "kvmprof-vmm: %s and %s both single-step the guest: use one at a time%s%s\n",
				stepper.name, w.name, instead(stepper, w) ? "; " : "", instead(stepper, w) ? instead(stepper, w) : "");
			return -EBUSY;
		}
		if (c->steps)
			stepper = w;
		if (!first.name)
			first = w;
		snprintf(taken + strlen(taken), sizeof(taken) - strlen(taken), "%s%s", *taken ? ", " : "", w.name);
		g->taken[i] = true;
		g->base[i] = slots;
		slots += c->slots;
	}
	return 0;
}

int guest_debug_set(struct vcpu *vcpu, const struct guest_debug_client *c, const uint64_t *addr, unsigned int n,
		    bool step, uint32_t extra)
{
	const struct guest_debug_vm *g = vm_feature(vcpu->vm, &guest_debug_hooks);
	struct guest_debug_vcpu *s = vcpu_feature(vcpu, &guest_debug_hooks);
	struct kvm_guest_debug dbg = { 0 };
	int i = client_index(c);

	if (i < 0 || !g || !s || !g->taken[i] || n > c->slots)
		return -EINVAL;
	s->c[i] = (struct client_state){ .n = n, .step = step, .extra = extra };
	if (n)
		memcpy(s->c[i].addr, addr, n * sizeof(*addr));
	for (int k = 0; k < MAX_CLIENTS && guest_debug_clients[k]; k++) {
		const struct client_state *cs = &s->c[k];

		if (!g->taken[k])
			continue;
		for (unsigned int j = 0; j < cs->n; j++) {
			dbg.arch.debugreg[g->base[k] + j] = cs->addr[j];
			dbg.arch.debugreg[7] |= DR7_L(g->base[k] + j);
		}
		if (cs->n)
			dbg.control |= KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_USE_HW_BP;
		if (cs->step)
			dbg.control |= KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_SINGLESTEP;
		if (cs->n || cs->step)
			dbg.control |= cs->extra;
	}
	return guest_debug_apply(vcpu, &dbg);
}

/* A debug exit goes to the clients that have something set, in table order. */
static bool guest_debug_exit(struct vcpu *vcpu)
{
	const struct guest_debug_vm *g = vm_feature(vcpu->vm, &guest_debug_hooks);
	const struct guest_debug_vcpu *s = vcpu_feature(vcpu, &guest_debug_hooks);

	for (int i = 0; g && s && i < MAX_CLIENTS && guest_debug_clients[i]; i++) {
		const struct guest_debug_client *c = guest_debug_clients[i];

		if (g->taken[i] && (s->c[i].n || s->c[i].step) && c->debug_exit(vcpu))
			return true;
	}
	return false;
}

const struct vcpu_hooks guest_debug_hooks = {
	.name = "guest debug owner",
	.vm_size = sizeof(struct guest_debug_vm),
	.vcpu_size = sizeof(struct guest_debug_vcpu),
	.vm_setup = guest_debug_setup,
	.debug_exit = guest_debug_exit,
};
