# The virtual PMU, linked into kvmprof-vmm. The register model is pure code;
# backends talk to perf_event (emulated) and KVM (kvm).

VPMU_SRCS := $(wildcard vpmu/*.c)
# The perf backend opens host events through lib's one door to perf_event_open; the sample
# buffer fills its ring with the producer the guest sampler uses too (lib/common/ring_append.c).
VPMU_LIB_SRCS := lib/common/perf_open.c lib/common/ring_append.c
VPMU_ALL_SRCS := $(VPMU_SRCS) $(VPMU_LIB_SRCS)
VPMU_OBJS := $(VPMU_ALL_SRCS:%.c=$(BUILD)/%.o)
VPMU_ASAN_OBJS := $(VPMU_ALL_SRCS:%.c=$(BUILD)/asan/%.o)
VPMU_CFLAGS := -Ivpmu -Ilib
# libpfm4 resolves event names (filter files); linked statically into the static VMM too.
VPMU_LIBS := -lpfm -lz

$(eval $(call plain_and_asan,$(BUILD)/vpmu/%.o,vpmu/%.c,$$(VPMU_CFLAGS) -c $$< -o $$@))

-include $(VPMU_OBJS:.o=.d) $(VPMU_ASAN_OBJS:.o=.d)
