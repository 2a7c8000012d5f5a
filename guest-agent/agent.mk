# kvmprof-agent: the in-guest sampling agent for Linux (record, report,
# export). Static, so it can be dropped into any guest's initramfs; an
# ASan + UBSan build (dynamic) runs in the tests.

AGENT_SRCS := $(wildcard guest-agent/*.c)
AGENT_OBJS := $(AGENT_SRCS:%.c=$(BUILD)/%.o)
AGENT_ASAN_OBJS := $(AGENT_SRCS:%.c=$(BUILD)/asan/%.o)

$(eval $(call plain_and_asan,$(BUILD)/guest-agent/%.o,guest-agent/%.c,$$(LIB_CFLAGS) -Iguest-agent -c $$< -o $$@))

$(AGENT_OBJS) $(AGENT_ASAN_OBJS): | $(BUILD)/gen/profile.pb-c.h

# libbpf reads the kernel's BTF for the export's task layout (kernel_layout.c); its
# static archive needs libelf and zlib, which LIB_LIBS brings after it.
AGENT_LIBS := -lbpf $(LIB_LIBS)

# The link warns that libdw's debuginfod client calls dlopen: in the static
# agent it loads the system's shared libdebuginfod, libcurl and libc beside
# the static libc, so lib/symbols/symtab.c lets libdwfl's standard search (the only
# caller) run only when DEBUGINFOD_URLS names a server; otherwise symbols come
# from the files on disk (or under --guest-root) only. The plain agent is
# static and the ASan one dynamic, so the two links are written out.
$(BUILD)/kvmprof-agent: $(AGENT_OBJS) $(LIB_A)
	$(CC) $(HOST_CFLAGS) -static -o $@ $^ $(AGENT_LIBS) -lpthread

$(BUILD)/asan/kvmprof-agent: $(AGENT_ASAN_OBJS) $(LIB_ASAN_A)
	$(CC) $(HOST_CFLAGS) $(SAN_FLAGS) -o $@ $^ $(AGENT_LIBS) -lpthread

-include $(AGENT_OBJS:.o=.d) $(AGENT_ASAN_OBJS:.o=.d)
