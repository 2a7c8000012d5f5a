# kvmprof-vmm: the VMM. Built three ways: dynamic (build/kvmprof-vmm), static
# for the nested harness (build/kvmprof-vmm-static), and with ASan + UBSan
# (build/asan/kvmprof-vmm) for the tests.

# vmm/ is the machine (VM, vCPUs, loaders, devices, the vPMU's VMM side);
# vmm/profiling/ is what profiles the guest from the VMM (control socket,
# guest sampler, PMI tracer), over vmi/'s introspection.
VMM_SRCS := $(wildcard vmm/*.c vmm/engine/*.c vmm/profiling/*.c)
# The Linux task-layout check is shared with the agent, which sends the layout (lib/common/task_layout.h).
# The trace events' table and --trace-events patterns are shared with kvmprof trace (lib/common/trace_event_table.h).
# KVM's exit reasons by name are shared with the reports (lib/common/kvm_exit_name.h).
VMM_LIB_SRCS := lib/common/task_layout.c lib/common/trace_event_table.c lib/common/kvm_exit_name.c
VMM_OBJS := $(VMM_SRCS:%.c=$(BUILD)/%.o) $(VMM_LIB_SRCS:%.c=$(BUILD)/%.o) $(BUILD)/vmm/embedded_guest.o $(VPMU_OBJS)
VMM_ASAN_OBJS := $(VMM_SRCS:%.c=$(BUILD)/asan/%.o) $(VMM_LIB_SRCS:%.c=$(BUILD)/asan/%.o) $(BUILD)/vmm/embedded_guest.o \
                 $(VPMU_ASAN_OBJS)
# json-c parses and writes the control socket's JSON (vmm/profiling/control.c); Debian ships its .a for the static build.
VMM_CFLAGS := -Ivmm -Ivmm/profiling $(VPMU_CFLAGS) $(shell pkg-config --cflags json-c 2>/dev/null || echo -I/usr/include/json-c) $(VMI_CFLAGS)
# Unicorn and Capstone: the emulation engine (vmm/engine/emu.c); both ship .a files for the static build.
EMU_LIBS := -lunicorn -lcapstone -lm
VMM_LIBS := $(VPMU_LIBS) $(shell pkg-config --libs json-c 2>/dev/null || echo -ljson-c) -lz $(EMU_LIBS) -lpthread -lrt

# The parts of the VMM that need no KVM: unit tests link these (and vmi/'s archive).
VMM_PURE_SRCS := vmm/boot.c vmm/boot_pvh.c vmm/boot_bzimage.c vmm/memmap.c vmm/mptable.c vmm/acpi.c \
                 vmm/guest_mem.c vmm/serial.c vmm/options.c vmm/ioport.c vmm/engine/emu.c vmm/engine/emu_decode.c vmm/engine/emu_flags.c vmm/engine/emu_locked.c vmm/engine/emu_sysinsn.c vmm/engine/emu_fpu.c vmm/engine/step_frame.c \
                 $(VMM_LIB_SRCS)

GUEST_KERNEL := $(BUILD)/guest/kernel.elf
GUEST_INITRD := $(BUILD)/guest/initrd.cpio

# options.c takes the vPMU's names from their one table (vpmu/vpmu_names.c).
VMM_PURE_SRCS += vpmu/vpmu_names.c

$(eval $(call plain_and_asan,$(BUILD)/vmm/%.o,vmm/%.c,$$(VMM_CFLAGS) -c $$< -o $$@))

$(BUILD)/vmm/embedded_guest.o: vmm/embedded_guest.S $(GUEST_KERNEL) $(GUEST_INITRD)
	@mkdir -p $(@D)
	$(CC) -c $< -o $@ -DGUEST_KERNEL='"$(GUEST_KERNEL)"' -DGUEST_INITRD='"$(GUEST_INITRD)"'

# Guest introspection (vmi/: page and stack walks, process attribution) comes as its archive.
$(BUILD)/kvmprof-vmm: $(VMM_OBJS) $(VMI_A)
	$(CC) $(HOST_CFLAGS) -o $@ $^ $(VMM_LIBS)

# libunicorn.a carries its own crc32(), the same IEEE CRC-32 as zlib's (same table,
# same pre- and post-inversion), so a static link may keep either one.
$(BUILD)/kvmprof-vmm-static: $(VMM_OBJS) $(VMI_A)
	$(CC) $(HOST_CFLAGS) -static -Wl,--allow-multiple-definition -o $@ $^ $(VMM_LIBS)

$(BUILD)/asan/kvmprof-vmm: $(VMM_ASAN_OBJS) $(VMI_ASAN_A)
	$(CC) $(HOST_CFLAGS) $(SAN_FLAGS) -o $@ $^ $(VMM_LIBS)

-include $(VMM_OBJS:.o=.d) $(VMM_ASAN_OBJS:.o=.d)
include vmm/variants.mk
