# libkvmprof-vmi: guest introspection, reading a guest from outside through
# one memory interface (vmi/vmi_mem.h): the page walker, the frame-pointer
# stack walker, the bundled guest's descriptor reader, the Linux task-layout
# reader and process attribution. No KVM: the VMM links it (over its own
# guest RAM), so do the unit tests and the fuzz harness, and so can the host
# profiler. Built plain and with ASan + UBSan. It uses lib/common/task_layout.h but
# leaves task_layout.o out of the archive: the host profiler has it in
# libkvmprof.a, and the VMM links its own copy.

VMI_SRCS := $(wildcard vmi/*.c)
VMI_OBJS := $(VMI_SRCS:%.c=$(BUILD)/%.o)
VMI_ASAN_OBJS := $(VMI_SRCS:%.c=$(BUILD)/asan/%.o)
VMI_A := $(BUILD)/vmi/libkvmprof-vmi.a
VMI_ASAN_A := $(BUILD)/asan/vmi/libkvmprof-vmi.a
# What a user of vmi/ compiles with: its headers, and lib/'s task_layout.h that they include.
VMI_CFLAGS := -Ivmi -Ilib

$(eval $(call plain_and_asan,$(BUILD)/vmi/%.o,vmi/%.c,$$(VMI_CFLAGS) -c $$< -o $$@))

$(VMI_A): $(VMI_OBJS)
	rm -f $@ && ar rcs $@ $^

$(VMI_ASAN_A): $(VMI_ASAN_OBJS)
	rm -f $@ && ar rcs $@ $^

-include $(VMI_OBJS:.o=.d) $(VMI_ASAN_OBJS:.o=.d)
