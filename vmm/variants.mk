# Two more builds of the VMM, for the static plugins and the benchmark of
# what trace events cost (docs/plugins.md, docs/benchmarks.md); neither is
# part of `make all`.
#
# build/static/NAME/kvmprof-vmm: plugins/NAME.c compiled in. Its handlers
# (KVMPROF_PLUGIN_ON) are called directly at the TRACE sites, inlined across
# files by LTO; static_plugin_events.h, generated from the plugin's symbols,
# tells vmm/trace.h which events it handles.
# build/notrace/kvmprof-vmm: KVMPROF_TRACE_COMPILED_OUT, TRACE() is nothing.

VMM_VARIANT_SRCS := $(VMM_SRCS) $(VMM_LIB_SRCS)
STATIC_LTO := -flto=auto

define static_plugin_vmm
$(BUILD)/static/$(1)/plugin.o: plugins/$(1).c
	@mkdir -p $$(@D)
	$$(CC) $$(HOST_CFLAGS) $(STATIC_LTO) -DKVMPROF_STATIC_PLUGIN='"$(1)"' -c $$< -o $$@

# nm reads the LTO object's symbol table: one line per KVMPROF_PLUGIN_ON handler.
$(BUILD)/static/$(1)/static_plugin_events.h: $(BUILD)/static/$(1)/plugin.o
	nm --defined-only $$< | sed -n 's/.* T kvmprof_plugin_on_\([a-z0-9_]*\)/#define KVMPROF_STATIC_ON_\1 1/p' >$$@.tmp
	mv $$@.tmp $$@

$(BUILD)/static/$(1)/%.o: %.c $(BUILD)/static/$(1)/static_plugin_events.h
	@mkdir -p $$(@D)
	$$(CC) $$(HOST_CFLAGS) $$(VMM_CFLAGS) $(STATIC_LTO) -DKVMPROF_STATIC_PLUGIN='"$(1)"' -I$(BUILD)/static/$(1) \
		-c $$< -o $$@

$(BUILD)/static/$(1)/kvmprof-vmm: $(VMM_VARIANT_SRCS:%.c=$(BUILD)/static/$(1)/%.o) $(BUILD)/static/$(1)/plugin.o \
		$(BUILD)/vmm/embedded_guest.o $(VPMU_OBJS) $(VMI_A)
	$$(CC) $$(HOST_CFLAGS) $(STATIC_LTO) -o $$@ $$^ $$(VMM_LIBS)

-include $(VMM_VARIANT_SRCS:%.c=$(BUILD)/static/$(1)/%.d) $(BUILD)/static/$(1)/plugin.d
endef
$(foreach p,$(patsubst plugins/%.c,%,$(wildcard plugins/*.c)),$(eval $(call static_plugin_vmm,$(p))))

$(BUILD)/notrace/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) $(VMM_CFLAGS) -DKVMPROF_TRACE_COMPILED_OUT -c $< -o $@

$(BUILD)/notrace/kvmprof-vmm: $(VMM_VARIANT_SRCS:%.c=$(BUILD)/notrace/%.o) $(BUILD)/vmm/embedded_guest.o $(VPMU_OBJS) \
		$(VMI_A)
	$(CC) $(HOST_CFLAGS) -o $@ $^ $(VMM_LIBS)

-include $(VMM_VARIANT_SRCS:%.c=$(BUILD)/notrace/%.d)

# The example plugin of docs/plugins.md, built with its one documented line.
$(BUILD)/plugins/console_bytes.so: plugins/console_bytes.c include/kvmprof/plugin.h include/kvmprof/trace_events.h
	@mkdir -p $(@D)
	$(CC) -shared -fPIC -O2 -Iinclude -o $@ $<

# tests/e2e/static-plugin.sh runs these.
VMM_VARIANT_TEST_DEPS := $(BUILD)/static/console_bytes/kvmprof-vmm $(BUILD)/notrace/kvmprof-vmm \
                         $(BUILD)/plugins/console_bytes.so
test-e2e test-all: $(VMM_VARIANT_TEST_DEPS)
