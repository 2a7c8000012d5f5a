# The example plugins (plugins/README.md): one shared library per plugins/NAME.c,
# build/plugins/NAME.so, and build/asan/plugins/NAME.so with ASan + UBSan for
# the ASan VMM's tests (an ASan executable loads either; a plain one only the plain).
PLUGIN_NAMES := exit_histogram msr_log io_latency pmu_reprogram
PLUGINS := $(PLUGIN_NAMES:%=$(BUILD)/plugins/%.so)
ASAN_PLUGINS := $(call asan_path,$(PLUGINS))

$(eval $(call plain_and_asan,$(PLUGINS): $(BUILD)/plugins/%.so,plugins/%.c,-fPIC -shared -o $$@ $$<))

.PHONY: plugins
plugins: $(PLUGINS) $(ASAN_PLUGINS)
all: $(PLUGINS)
test-all test-e2e: $(PLUGINS) $(ASAN_PLUGINS)

-include $(PLUGINS:.so=.d) $(ASAN_PLUGINS:.so=.d)
