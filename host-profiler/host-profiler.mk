# kvmprof: the host-side system-wide profiler (record, report, stat).
# Dynamic, linked with libkvmprof and json-c (the control socket); an
# ASan + UBSan build runs in the tests.

HOSTPROF_SRCS := $(wildcard host-profiler/*.c)
HOSTPROF_OBJS := $(HOSTPROF_SRCS:%.c=$(BUILD)/%.o)
HOSTPROF_ASAN_OBJS := $(HOSTPROF_SRCS:%.c=$(BUILD)/asan/%.o)
HOSTPROF_CFLAGS := $(LIB_CFLAGS) -Ihost-profiler $(shell pkg-config --cflags json-c 2>/dev/null || echo -I/usr/include/json-c)
HOSTPROF_LIBS := $(LIB_LIBS) $(shell pkg-config --libs json-c 2>/dev/null || echo -ljson-c) -lpthread

$(eval $(call plain_and_asan,$(BUILD)/host-profiler/%.o,host-profiler/%.c,$$(HOSTPROF_CFLAGS) -c $$< -o $$@))

$(HOSTPROF_OBJS) $(HOSTPROF_ASAN_OBJS): | $(BUILD)/gen/profile.pb-c.h

$(eval $(call plain_and_asan,$(BUILD)/kvmprof,$(HOSTPROF_OBJS) $(LIB_A),-o $$@ $$^ $$(HOSTPROF_LIBS)))

-include $(HOSTPROF_OBJS:.o=.d) $(HOSTPROF_ASAN_OBJS:.o=.d)

# A static kvmprof for the nested Linux-guest test: it runs in L1's
# initramfs, which has no libc (tests/nested/run.sh, the sysprof checks).
all: $(BUILD)/kvmprof-static

$(BUILD)/kvmprof-static: $(HOSTPROF_OBJS) $(LIB_A)
	$(CC) $(HOST_CFLAGS) -static -o $@ $^ $(HOSTPROF_LIBS)
