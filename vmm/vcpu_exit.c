// SPDX-License-Identifier: MIT
/* The exit dispatch of the vCPU run loop: one exit in, one outcome out, no KVM call. */
#include <string.h>

#include "reset.h"
#include "trace.h"
#include "vcpu_exit.h"
#include "vcpu_hooks.h"
#include "vm.h"

/* An access's value, from the 1, 2 or 4 little-endian bytes KVM passes. */
static uint64_t io_value(const uint8_t *data, uint32_t size)
{
	uint64_t v = 0;

	memcpy(&v, data, size < sizeof(v) ? size : sizeof(v));
	return v;
}

/* String I/O (INS/OUTS with REP) comes as count accesses back to back; a stop ends it. */
static struct vcpu_outcome vcpu_handle_io(struct vcpu *vcpu)
{
	struct kvm_run *run = vcpu->run;
	uint8_t *data = (uint8_t *)run + run->io.data_offset;

	for (uint32_t i = 0; i < run->io.count; i++, data += run->io.size) {
		struct vcpu_outcome o = ioport_dispatch(&vcpu->vm->io, run->io.port, data, run->io.size,
							run->io.direction == KVM_EXIT_IO_OUT);
		/* After the device: an IN's value is what the guest reads. */
		TRACE(pio, run->io.port, run->io.size, run->io.direction == KVM_EXIT_IO_OUT, io_value(data, run->io.size));
		if (o.action != VCPU_CONTINUE)
			return o;
	}
	return vcpu_continue();
}

static struct vcpu_outcome vcpu_handle_system_event(const struct kvm_run *run)
{
	switch (run->system_event.type) {
	case KVM_SYSTEM_EVENT_SHUTDOWN:
		return vcpu_stop(0, "guest powered off");
	case KVM_SYSTEM_EVENT_RESET:
		return vcpu_stop(0, RESET_MESSAGE);
	default:
		return vcpu_crash("guest reported a crash");
	}
}

struct vcpu_outcome vcpu_handle_exit(struct vcpu *vcpu)
{
	struct kvm_run *run = vcpu->run;

	switch (run->exit_reason) {
	case KVM_EXIT_IO:
		return vcpu_handle_io(vcpu);
	case KVM_EXIT_MMIO:
		/* No MMIO devices: an open bus, as on a PC with nothing there. */
		if (!run->mmio.is_write)
			memset(run->mmio.data, 0xff, sizeof(run->mmio.data));
		TRACE(mmio, run->mmio.phys_addr, run->mmio.len, run->mmio.is_write,
		      io_value(run->mmio.data, run->mmio.len));
		return vcpu_continue();
	case KVM_EXIT_INTR:
		return vcpu_continue(); /* a kick or a timer signal: the run loop looks at why */
	case KVM_EXIT_DEBUG:
		if (vcpu_hooks_debug_exit(vcpu))
			return vcpu_continue();
		return vcpu_crash("unexpected debug exit");
	case KVM_EXIT_X86_RDMSR:
	case KVM_EXIT_X86_WRMSR:
		if (vcpu_hooks_msr_exit(vcpu))
			return vcpu_continue();
		return vcpu_crash("unexpected MSR exit");
	case KVM_EXIT_SYSTEM_EVENT:
		return vcpu_handle_system_event(run);
	case KVM_EXIT_SHUTDOWN:
		return vcpu_crash("guest triple fault");
	case KVM_EXIT_INTERNAL_ERROR:
		return vcpu_crash("KVM internal error");
	case KVM_EXIT_FAIL_ENTRY:
		return vcpu_crash("VM entry failed");
	default:
		return vcpu_crash("unhandled VM exit");
	}
}
