# Nested Linux-guest tests: Linux (L2) under kvmprof-vmm inside a QEMU-TCG
# guest (L1) with its own KVM. See tests/nested/README.md. Included by the
# root Makefile; images and logs go under $(BUILD)/nested.

.PHONY: test-nested test-nested-l1 debian-kernel

# Full run: both L2 boot paths (bzImage, PVH) under the static VMM, and the
# static agent profiling a workload in L2 and exporting over the agent channel.
test-nested: $(BUILD)/kvmprof-vmm-static $(BUILD)/kvmprof-agent $(BUILD)/kvmprof-static
	BUILD=$(BUILD) VMM=$(BUILD)/kvmprof-vmm-static AGENT=$(BUILD)/kvmprof-agent KVMPROF=$(BUILD)/kvmprof-static tests/nested/run.sh

# Without the VMM: L1 boots, kvm/kvm-amd load, /dev/kvm runs a tiny guest.
test-nested-l1:
	BUILD=$(BUILD) tests/nested/run.sh --l1-only

# The Debian cloud kernel at $(BUILD)/debian/{vmlinuz,vmlinux,modules/}
# (idempotent, quick once cached). Depend on it from tests that read it.
debian-kernel:
	tests/debian-kernel.sh $(BUILD)
