# kvmprof: the host-side system-wide profiler (record, report, stat, list).
# Dynamic, linked with libkvmprof, vmi/'s guest introspection (a libvirt
# domain's guest is read from outside) and json-c (the control socket, QMP);
# libvirt with libxml2 (host-profiler/libvirt/: domains, their XML and
# QEMU's monitor) is loaded when a command needs it; an ASan + UBSan build
# runs in the tests.

HOSTPROF_SRCS := $(wildcard host-profiler/*.c) $(wildcard host-profiler/libvirt/*.c)
# The vPMU's model tables and names (pure data: `kvmprof list` shows what a guest can count).
HOSTPROF_VPMU_SRCS := vpmu/vpmu_model_events.c vpmu/vpmu_names.c
HOSTPROF_OBJS := $(HOSTPROF_SRCS:%.c=$(BUILD)/%.o) $(HOSTPROF_VPMU_SRCS:%.c=$(BUILD)/%.o)
HOSTPROF_ASAN_OBJS := $(HOSTPROF_SRCS:%.c=$(BUILD)/asan/%.o) $(HOSTPROF_VPMU_SRCS:%.c=$(BUILD)/asan/%.o)
HOSTPROF_CFLAGS := $(LIB_CFLAGS) $(VMI_CFLAGS) -Ihost-profiler -Ivpmu \
                   $(shell pkg-config --cflags json-c 2>/dev/null || echo -I/usr/include/json-c) \
                   $(shell pkg-config --cflags libvirt libxml-2.0 2>/dev/null || echo -I/usr/include/libxml2)
HOSTPROF_CORE_LIBS := $(LIB_LIBS) $(shell pkg-config --libs json-c 2>/dev/null || echo -ljson-c) -lpthread
# libvirt, libvirt-qemu and libxml2 are loaded at run time (host-profiler/libvirt/virt_dl.c): linked, their
# ~50 libraries cost every command ~15 ms of start-up. Their headers are still the build's.
HOSTPROF_LIBS := $(HOSTPROF_CORE_LIBS) -ldl
# The sanitizer build links them: ASan's XDR interceptors find libtirpc's functions when the program starts,
# and libvirt's RPC, loaded later, would call through a null pointer.
$(BUILD)/asan/kvmprof: HOSTPROF_LIBS += $(shell pkg-config --libs libvirt-qemu libvirt libxml-2.0 2>/dev/null || \
                                               echo -lvirt-qemu -lvirt -lxml2)

$(eval $(call plain_and_asan,$(BUILD)/host-profiler/%.o,host-profiler/%.c,$$(HOSTPROF_CFLAGS) -c $$< -o $$@))

$(HOSTPROF_OBJS) $(HOSTPROF_ASAN_OBJS) $(BUILD)/host-profiler/no-libvirt/unavailable.o: | $(BUILD)/gen/profile.pb-c.h

$(eval $(call plain_and_asan,$(BUILD)/kvmprof,$(HOSTPROF_OBJS) $(VMI_A) $(LIB_A),-o $$@ $$^ $$(HOSTPROF_LIBS)))

-include $(HOSTPROF_OBJS:.o=.d) $(HOSTPROF_ASAN_OBJS:.o=.d)

# A static kvmprof for the nested Linux-guest test: it runs in L1's
# initramfs, which has no libc (tests/nested/run.sh, the sysprof checks).
# Debian ships libvirt as a shared library only: this one has no libvirt
# (host-profiler/no-libvirt/ says so for list and --domain).
all: $(BUILD)/kvmprof-static

HOSTPROF_STATIC_OBJS := $(filter-out $(BUILD)/host-profiler/libvirt/%,$(HOSTPROF_OBJS)) \
                        $(BUILD)/host-profiler/no-libvirt/unavailable.o

$(BUILD)/kvmprof-static: $(HOSTPROF_STATIC_OBJS) $(VMI_A) $(LIB_A)
	$(CC) $(HOST_CFLAGS) -static -o $@ $^ $(HOSTPROF_CORE_LIBS)
