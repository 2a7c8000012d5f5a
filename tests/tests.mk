# Unit tests (cmocka), the end-to-end tests, and the `make test` runner.

VMM_TEST_NAMES := test_boot_pvh test_bzimage test_platform test_vmi_mem test_vmi_walk test_vmi_desc test_vmi_procs test_vmi_kernel_fit \
                  test_emu test_emu_cuts test_emu_locked test_emu_sysinsn test_emu_fpu test_emu_vs_cpu test_step_frame
UNIT_TESTS += $(VMM_TEST_NAMES:%=$(BUILD)/tests/%)
ASAN_UNIT_TESTS += $(VMM_TEST_NAMES:%=$(BUILD)/asan/tests/%)

# vPMU tests: every tests/unit/test_vpmu_*.c, linked with the whole vpmu library.
VPMU_TEST_NAMES := $(notdir $(basename $(wildcard tests/unit/test_vpmu_*.c)))
UNIT_TESTS += $(VPMU_TEST_NAMES:%=$(BUILD)/tests/%)
ASAN_UNIT_TESTS += $(VPMU_TEST_NAMES:%=$(BUILD)/asan/tests/%)

$(eval $(call plain_and_asan,$(VPMU_TEST_NAMES:%=$(BUILD)/tests/%): $(BUILD)/tests/%,tests/unit/%.c $(VPMU_OBJS),\
	-Ivpmu -o $$@ $$^ $$(CMOCKA_LIBS) $$(VPMU_LIBS)))

# libkvmprof tests: every tests/unit/test_lib_*.c, linked with the library.
LIB_TEST_NAMES := $(notdir $(basename $(wildcard tests/unit/test_lib_*.c)))
UNIT_TESTS += $(LIB_TEST_NAMES:%=$(BUILD)/tests/%)
ASAN_UNIT_TESTS += $(LIB_TEST_NAMES:%=$(BUILD)/asan/tests/%)

$(eval $(call plain_and_asan,$(LIB_TEST_NAMES:%=$(BUILD)/tests/%): $(BUILD)/tests/%,tests/unit/%.c $(LIB_A),\
	$$(LIB_CFLAGS) -o $$@ $$^ $$(CMOCKA_LIBS) $$(LIB_LIBS)))

# Agent tests: every tests/unit/test_agent_*.c, linked with the agent's
# objects except its main() and with the library.
AGENT_TEST_NAMES := $(notdir $(basename $(wildcard tests/unit/test_agent_*.c)))
UNIT_TESTS += $(AGENT_TEST_NAMES:%=$(BUILD)/tests/%)
ASAN_UNIT_TESTS += $(AGENT_TEST_NAMES:%=$(BUILD)/asan/tests/%)

$(eval $(call plain_and_asan,$(AGENT_TEST_NAMES:%=$(BUILD)/tests/%): $(BUILD)/tests/%,\
	tests/unit/%.c $(filter-out %/main.o,$(AGENT_OBJS)) $(LIB_A),\
	$$(LIB_CFLAGS) -Iguest-agent -o $$@ $$^ $$(CMOCKA_LIBS) $$(AGENT_LIBS)))

# Host profiler tests (tests/unit/test_report_*.c, test_qemu_*.c, test_domain_*.c, test_host_*.c): kvmprof's objects
# except its main(), with vmi/ and the library.
HOSTPROF_TEST_NAMES := $(notdir $(basename $(wildcard tests/unit/test_report_*.c tests/unit/test_qemu_*.c \
                                                       tests/unit/test_domain_*.c tests/unit/test_host_*.c)))
UNIT_TESTS += $(HOSTPROF_TEST_NAMES:%=$(BUILD)/tests/%)
ASAN_UNIT_TESTS += $(HOSTPROF_TEST_NAMES:%=$(BUILD)/asan/tests/%)

$(eval $(call plain_and_asan,$(HOSTPROF_TEST_NAMES:%=$(BUILD)/tests/%): $(BUILD)/tests/%,\
	tests/unit/%.c $(filter-out %/main.o,$(HOSTPROF_OBJS)) $(VMI_A) $(LIB_A),\
	$$(HOSTPROF_CFLAGS) -o $$@ $$^ $$(CMOCKA_LIBS) $$(HOSTPROF_LIBS)))

VMM_PURE_OBJS := $(VMM_PURE_SRCS:%.c=$(BUILD)/%.o)
VMM_PURE_ASAN_OBJS := $(VMM_PURE_SRCS:%.c=$(BUILD)/asan/%.o)

$(VMM_TEST_NAMES:%=$(BUILD)/tests/%): $(BUILD)/tests/%: tests/unit/%.c $(VMM_PURE_OBJS) $(VMI_A)
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) $(VMM_CFLAGS) -o $@ $^ $(CMOCKA_LIBS) $(EMU_LIBS) -lpthread

$(VMM_TEST_NAMES:%=$(BUILD)/asan/tests/%): $(BUILD)/asan/tests/%: tests/unit/%.c $(VMM_PURE_ASAN_OBJS) $(VMI_ASAN_A)
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) $(SAN_FLAGS) $(VMM_CFLAGS) -o $@ $^ $(CMOCKA_LIBS) $(EMU_LIBS) -lpthread

# The vCPU exit dispatch with the port devices that stop a guest; the test
# registers stand-in features for the vPMU's MSR and the debug-exit hooks,
# which need a live vCPU, and a dummy one that logs every hook.
VCPU_EXIT_TEST_SRCS := vmm/vcpu_exit.c vmm/vcpu_hooks.c vmm/ioport.c vmm/exit_port.c vmm/reset.c vmm/acpi_pm.c vmm/trace.c
UNIT_TESTS += $(BUILD)/tests/test_vcpu_exit
ASAN_UNIT_TESTS += $(BUILD)/asan/tests/test_vcpu_exit

$(BUILD)/tests/test_vcpu_exit: tests/unit/test_vcpu_exit.c $(VCPU_EXIT_TEST_SRCS:%.c=$(BUILD)/%.o)
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) $(VMM_CFLAGS) -o $@ $^ $(CMOCKA_LIBS)

$(BUILD)/asan/tests/test_vcpu_exit: tests/unit/test_vcpu_exit.c $(VCPU_EXIT_TEST_SRCS:%.c=$(BUILD)/asan/%.o)
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) $(SAN_FLAGS) $(VMM_CFLAGS) -o $@ $^ $(CMOCKA_LIBS)

# The test plugins (tests/unit/plugins/*.c) for the plugin host's tests and
# tests/e2e/plugin-host.sh, built plain into build/tests/plugins/*.so (an ASan
# program loads them as any program would), and good.c once more with ASan:
# the plain host must refuse that one (its runtime would end the process
# inside dlopen), the ASan host loads it. Defined before the rules below use it.
TEST_PLUGINS := $(patsubst tests/unit/plugins/%.c,$(BUILD)/tests/plugins/%.so,$(wildcard tests/unit/plugins/*.c)) \
                $(BUILD)/tests/plugins/sanitized/good.so

$(BUILD)/tests/plugins/%.so: tests/unit/plugins/%.c include/kvmprof/plugin.h
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) -fPIC -shared -o $@ $<

$(BUILD)/tests/plugins/sanitized/good.so: tests/unit/plugins/good.c include/kvmprof/plugin.h
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) $(SAN_FLAGS) -fPIC -shared -o $@ $<

# The plugin host: the loader and registry, what it reads of a file before
# dlopen, and the built-in plugin of a static build (none in these).
PLUGIN_HOST_SRCS := vmm/plugin_host.c vmm/plugin_elf.c vmm/plugin_static.c

# The guest debug owner with made-up clients; the test stands in for its one KVM call.
GUEST_DEBUG_TEST_SRCS := vmm/guest_debug.c vmm/vcpu_hooks.c
UNIT_TESTS += $(BUILD)/tests/test_guest_debug
ASAN_UNIT_TESTS += $(BUILD)/asan/tests/test_guest_debug

$(BUILD)/tests/test_guest_debug: tests/unit/test_guest_debug.c $(GUEST_DEBUG_TEST_SRCS:%.c=$(BUILD)/%.o)
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) $(VMM_CFLAGS) -o $@ $^ $(CMOCKA_LIBS)

$(BUILD)/asan/tests/test_guest_debug: tests/unit/test_guest_debug.c $(GUEST_DEBUG_TEST_SRCS:%.c=$(BUILD)/asan/%.o)
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) $(SAN_FLAGS) $(VMM_CFLAGS) -o $@ $^ $(CMOCKA_LIBS)

# The control socket's requests and commands, without its connections; the
# test stands in for the guest sampler. The plugin commands use the real
# plugin host, with the test plugins.
CONTROL_TEST_SRCS := vmm/vcpu_hooks.c vmm/profiling/control_request.c vmm/profiling/control_cmds.c vmm/profiling/guest_sampler_events.c vmm/profiling/control_plugins.c \
                     vmm/profiling/control_exit_stats.c vmm/profiling/exit_stats.c lib/common/kvm_exit_name.c \
                     $(PLUGIN_HOST_SRCS) vmm/plugin_api.c vmm/vcpu_regs.c vmm/trace.c lib/common/trace_event_table.c
UNIT_TESTS += $(BUILD)/tests/test_control_cmds
ASAN_UNIT_TESTS += $(BUILD)/asan/tests/test_control_cmds

$(BUILD)/tests/test_control_cmds: tests/unit/test_control_cmds.c $(CONTROL_TEST_SRCS:%.c=$(BUILD)/%.o) $(VPMU_OBJS) \
		$(VMI_A) | $(TEST_PLUGINS)
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) $(VMM_CFLAGS) -o $@ $^ $(CMOCKA_LIBS) $(VMM_LIBS)

$(BUILD)/asan/tests/test_control_cmds: tests/unit/test_control_cmds.c $(CONTROL_TEST_SRCS:%.c=$(BUILD)/asan/%.o) \
		$(VPMU_ASAN_OBJS) $(VMI_ASAN_A) | $(TEST_PLUGINS)
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) $(SAN_FLAGS) $(VMM_CFLAGS) -o $@ $^ $(CMOCKA_LIBS) $(VMM_LIBS)

# The plugin host (vmm/plugin_host.c): loading, refusing, unloading while
# another thread dispatches, output.
PLUGIN_HOST_TEST_SRCS := $(PLUGIN_HOST_SRCS) vmm/plugin_api.c vmm/vcpu_hooks.c vmm/vcpu_regs.c vmm/trace.c lib/common/trace_event_table.c
UNIT_TESTS += $(BUILD)/tests/test_plugin_host
ASAN_UNIT_TESTS += $(BUILD)/asan/tests/test_plugin_host

$(BUILD)/tests/test_plugin_host: tests/unit/test_plugin_host.c $(PLUGIN_HOST_TEST_SRCS:%.c=$(BUILD)/%.o) $(VMI_A) \
		| $(TEST_PLUGINS)
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) $(VMM_CFLAGS) -o $@ $^ $(CMOCKA_LIBS) -lpthread

$(BUILD)/asan/tests/test_plugin_host: tests/unit/test_plugin_host.c $(PLUGIN_HOST_TEST_SRCS:%.c=$(BUILD)/asan/%.o) \
		$(VMI_ASAN_A) | $(TEST_PLUGINS)
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) $(SAN_FLAGS) $(VMM_CFLAGS) -o $@ $^ $(CMOCKA_LIBS) -lpthread

# Trace event dispatch (vmm/trace.c): subscribing, and unsubscribing while another thread dispatches.
UNIT_TESTS += $(BUILD)/tests/test_trace_dispatch
ASAN_UNIT_TESTS += $(BUILD)/asan/tests/test_trace_dispatch

$(eval $(call plain_and_asan,$(BUILD)/tests/test_trace_dispatch,tests/unit/test_trace_dispatch.c $(BUILD)/vmm/trace.o,\
	$$(VMM_CFLAGS) -o $$@ $$^ $$(CMOCKA_LIBS) -lpthread))

# VM exits by reason (vmm/profiling/exit_stats.c) through the real dispatch, with a clock the test sets.
UNIT_TESTS += $(BUILD)/tests/test_exit_stats
ASAN_UNIT_TESTS += $(BUILD)/asan/tests/test_exit_stats

$(eval $(call plain_and_asan,$(BUILD)/tests/test_exit_stats,\
	tests/unit/test_exit_stats.c $(BUILD)/vmm/profiling/exit_stats.o $(BUILD)/lib/common/kvm_exit_name.o $(BUILD)/vmm/trace.o,\
	$$(VMM_CFLAGS) -o $$@ $$^ $$(CMOCKA_LIBS) -lpthread))

# The --trace file: the VMM's writer (vmm/trace_file.c) against kvmprof's reader (lib/format/trace_read.c).
UNIT_TESTS += $(BUILD)/tests/test_trace_file
ASAN_UNIT_TESTS += $(BUILD)/asan/tests/test_trace_file

$(eval $(call plain_and_asan,$(BUILD)/tests/test_trace_file,\
	tests/unit/test_trace_file.c $(BUILD)/vmm/trace.o $(BUILD)/vmm/trace_file.o $(LIB_A),\
	$$(VMM_CFLAGS) $$(LIB_CFLAGS) -o $$@ $$^ $$(CMOCKA_LIBS) $$(LIB_LIBS) -lpthread))

# TRACE()'s build options (vmm/trace.h): a static plugin's handler called at the
# site (the test is its plugin; the fixture header stands for make's generated
# one), and a site compiled out (trace_compiled_out_site.c).
UNIT_TESTS += $(BUILD)/tests/test_trace_static
ASAN_UNIT_TESTS += $(BUILD)/asan/tests/test_trace_static

$(eval $(call plain_and_asan,$(BUILD)/tests/trace_compiled_out_site.o,tests/unit/trace_compiled_out_site.c,\
	$$(VMM_CFLAGS) -DKVMPROF_TRACE_COMPILED_OUT -c $$< -o $$@))
$(eval $(call plain_and_asan,$(BUILD)/tests/test_trace_static,\
	tests/unit/test_trace_static.c $(BUILD)/tests/trace_compiled_out_site.o $(BUILD)/vmm/trace.o,\
	$$(VMM_CFLAGS) -DKVMPROF_STATIC_PLUGIN='"fixture"' -Itests/unit/static_plugin_fixture \
	-o $$@ $$^ $$(CMOCKA_LIBS) -lpthread))

# A static build's built-in plugin in the plugin registry (vmm/plugin_host.c, vmm/plugin_static.c).
UNIT_TESTS += $(BUILD)/tests/test_plugin_builtin
ASAN_UNIT_TESTS += $(BUILD)/asan/tests/test_plugin_builtin
PLUGIN_BUILTIN_TEST_OBJS := $(PLUGIN_HOST_SRCS:%.c=$(BUILD)/%.o) $(BUILD)/vmm/trace.o $(BUILD)/lib/common/trace_event_table.o

$(eval $(call plain_and_asan,$(BUILD)/tests/test_plugin_builtin,tests/unit/test_plugin_builtin.c $(PLUGIN_BUILTIN_TEST_OBJS),\
	$$(VMM_CFLAGS) -o $$@ $$^ $$(CMOCKA_LIBS) -ldl -lpthread))

include tests/agent/agent-tests.mk

# Test kernels for the end-to-end tests (tests/fixtures/pvh_tiny.S).
FIXTURE_LDFLAGS := -nostdlib -static -no-pie -Wl,-n -Wl,-Ttext=0x100000 -Wl,--build-id=none \
                   -Wl,--no-warn-rwx-segments
FIXTURES := $(BUILD)/fixtures/pvh-exit0.elf $(BUILD)/fixtures/pvh-exit42.elf \
            $(BUILD)/fixtures/pvh-triple-fault.elf $(BUILD)/fixtures/pvh-spin.elf \
            $(BUILD)/fixtures/pvh-high.elf
$(BUILD)/fixtures/pvh-exit%.elf: tests/fixtures/pvh_tiny.S
	@mkdir -p $(@D)
	$(CC) $(FIXTURE_LDFLAGS) -DEXIT_STATUS=$* $< -o $@
$(BUILD)/fixtures/pvh-triple-fault.elf: tests/fixtures/pvh_tiny.S
	@mkdir -p $(@D)
	$(CC) $(FIXTURE_LDFLAGS) -DTRIPLE_FAULT $< -o $@
$(BUILD)/fixtures/pvh-spin.elf: tests/fixtures/pvh_tiny.S
	@mkdir -p $(@D)
	$(CC) $(FIXTURE_LDFLAGS) -DSPIN $< -o $@
# Linked at 256 MiB: outside a small guest's memory, which the loader must refuse.
$(BUILD)/fixtures/pvh-high.elf: tests/fixtures/pvh_tiny.S
	@mkdir -p $(@D)
	$(CC) $(subst -Ttext=0x100000,-Ttext=0x10000000,$(FIXTURE_LDFLAGS)) $< -o $@

# The end-to-end tests' helper programs: a control-socket client, the
# bundled agent's sample-file checker, and a guest-sample ring client that
# drains through kvmprof's own ring reader (host-profiler/guest_ring_reader.c).
E2E_HELPERS := $(BUILD)/tests/e2e/control_client $(BUILD)/tests/e2e/sample_check $(BUILD)/tests/e2e/ring_client \
               $(BUILD)/tests/e2e/exit_check

$(BUILD)/tests/e2e/control_client: tests/e2e/control_client.c
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) -o $@ $(filter-out %.h,$^)

$(BUILD)/tests/e2e/sample_check $(BUILD)/tests/e2e/exit_check: $(BUILD)/tests/e2e/%: tests/e2e/%.c $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) $(LIB_CFLAGS) -o $@ $(filter-out %.h,$^) $(LIB_LIBS)

$(BUILD)/tests/e2e/ring_client: tests/e2e/ring_client.c $(BUILD)/host-profiler/guest_ring_reader.o $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) $(LIB_CFLAGS) -Ihost-profiler -o $@ $(filter-out %.h,$^) $(LIB_LIBS)

-include $(E2E_HELPERS:=.d)

# tests/run-all.sh runs exactly the unit-test binaries make builds.
export KVMPROF_UNIT_TESTS = $(UNIT_TESTS)
export KVMPROF_ASAN_UNIT_TESTS = $(ASAN_UNIT_TESTS)

.PHONY: test-unit test-e2e test-agent test-host test-libvirt test-docs test-kvmhost
# tests/kvmhost (the emulated KVM host for machines without /dev/kvm): its own cases, about two minutes.
test-kvmhost:
	@bash tests/kvmhost/test.sh
test-host: $(BUILD)/kvmprof $(BUILD)/asan/kvmprof $(BUILD)/kvmprof-vmm $(BUILD)/tests/e2e/control_client guest
	@KVMPROF_SUITES=host bash tests/run-all.sh

test-docs: $(BUILD)/kvmprof-vmm $(BUILD)/kvmprof-agent $(BUILD)/kvmprof guest
	@KVMPROF_SUITES=docs bash tests/run-all.sh

test-libvirt: $(BUILD)/kvmprof $(BUILD)/asan/kvmprof $(BUILD)/kvmprof-agent $(BUILD)/nested/hotloop guest debian-kernel
	@KVMPROF_SUITES=libvirt bash tests/run-all.sh

test-agent: $(BUILD)/kvmprof-agent $(BUILD)/asan/kvmprof-agent $(AGENT_FIXTURES) $(BUILD)/kvmprof
	@KVMPROF_SUITES=agent bash tests/run-all.sh

test-unit: $(UNIT_TESTS) $(ASAN_UNIT_TESTS) debian-kernel
	@KVMPROF_SUITES=unit bash tests/run-all.sh

test-e2e: $(BUILD)/kvmprof-vmm $(BUILD)/asan/kvmprof-vmm $(FIXTURES) $(E2E_HELPERS) guest $(BUILD)/kvmprof-agent \
          $(BUILD)/asan/kvmprof-agent $(BUILD)/kvmprof $(BUILD)/asan/kvmprof $(TEST_PLUGINS)
	@tests/kvmhost/kvmhost run -- bash tests/e2e/run.sh

test: deps
	@$(MAKE) --no-print-directory test-all

.PHONY: test-all
test-all: all $(UNIT_TESTS) $(ASAN_UNIT_TESTS) $(BUILD)/asan/kvmprof-vmm $(BUILD)/asan/kvmprof-agent \
          $(BUILD)/asan/kvmprof $(FIXTURES) $(E2E_HELPERS) \
          $(AGENT_FIXTURES) fuzz-build
	@bash tests/run-all.sh
