# Nested Linux-guest tests: Linux (L2) under kvmprof-vmm inside a QEMU-TCG
# guest (L1) with its own KVM. See tests/nested/README.md. Included by the
# root Makefile; images and logs go under $(BUILD)/nested.

.PHONY: test-nested test-nested-l1 debian-kernel

# The helpers run.sh puts in the guests' initramfs, static (L1 and L2 have
# no libc): l2-exit powers L2 off through the exit port, kvm-check runs a
# tiny guest on L1's /dev/kvm, hotloop is the agent case's workload (frame
# pointers and symbols, so that the agent in L2 names hotloop_spin and walks
# its callers); countloop and pmuself are the perf case's counted loops (by
# perf stat, and by perf_event_open with read() and RDPMC). agent-check runs
# on the host: it reads the stream exported from L2 through the project's
# checked reader.
NESTED_HELPERS := $(BUILD)/nested/l2-exit $(BUILD)/nested/kvm-check $(BUILD)/nested/hotloop \
                  $(BUILD)/nested/countloop $(BUILD)/nested/pmuself $(BUILD)/nested/agent-check

$(BUILD)/nested/l2-exit $(BUILD)/nested/kvm-check $(BUILD)/nested/hotloop $(BUILD)/nested/countloop $(BUILD)/nested/pmuself: $(BUILD)/nested/%: tests/nested/%.c
	@mkdir -p $(@D)
	$(CC) -static $(HOST_CFLAGS) -fno-omit-frame-pointer -o $@ $<

$(BUILD)/nested/agent-check: tests/nested/agent-check.c $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) $(LIB_CFLAGS) -o $@ $(filter-out %.h,$^) $(LIB_LIBS)

-include $(NESTED_HELPERS:=.d)

test-all: $(NESTED_HELPERS)

# Full run: both L2 boot paths (bzImage, PVH) under the static VMM, and the
# static agent profiling a workload in L2 and exporting over the agent channel.
test-nested: $(BUILD)/kvmprof-vmm-static $(BUILD)/kvmprof-agent $(BUILD)/kvmprof-static $(NESTED_HELPERS)
	BUILD=$(BUILD) VMM=$(BUILD)/kvmprof-vmm-static AGENT=$(BUILD)/kvmprof-agent KVMPROF=$(BUILD)/kvmprof-static tests/nested/run.sh

# Without the VMM: L1 boots, kvm/kvm-amd load, /dev/kvm runs a tiny guest.
test-nested-l1: $(NESTED_HELPERS)
	BUILD=$(BUILD) tests/nested/run.sh --l1-only

# The Debian cloud kernel at $(BUILD)/debian/{vmlinuz,vmlinux,modules/}
# (idempotent, quick once cached). Depend on it from tests that read it.
debian-kernel:
	tests/debian-kernel.sh $(BUILD)
