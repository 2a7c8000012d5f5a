# Unit tests (cmocka), the end-to-end tests, and the `make test` runner.

VMM_TEST_NAMES := test_boot_pvh test_bzimage test_platform test_vmi_mem test_vmi_walk test_vmi_desc test_vmi_procs \
                  test_emu
UNIT_TESTS += $(VMM_TEST_NAMES:%=$(BUILD)/tests/%)
ASAN_UNIT_TESTS += $(VMM_TEST_NAMES:%=$(BUILD)/asan/tests/%)

# vPMU tests: every tests/unit/test_vpmu_*.c, linked with the whole vpmu library.
VPMU_TEST_NAMES := $(notdir $(basename $(wildcard tests/unit/test_vpmu_*.c)))
UNIT_TESTS += $(VPMU_TEST_NAMES:%=$(BUILD)/tests/%)
ASAN_UNIT_TESTS += $(VPMU_TEST_NAMES:%=$(BUILD)/asan/tests/%)

$(VPMU_TEST_NAMES:%=$(BUILD)/tests/%): $(BUILD)/tests/%: tests/unit/%.c $(VPMU_OBJS)
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) -Ivpmu -o $@ $^ $(CMOCKA_LIBS) $(VPMU_LIBS)

$(VPMU_TEST_NAMES:%=$(BUILD)/asan/tests/%): $(BUILD)/asan/tests/%: tests/unit/%.c $(VPMU_ASAN_OBJS)
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) $(SAN_FLAGS) -Ivpmu -o $@ $^ $(CMOCKA_LIBS) $(VPMU_LIBS)

# libkvmprof tests: every tests/unit/test_lib_*.c, linked with the library.
LIB_TEST_NAMES := $(notdir $(basename $(wildcard tests/unit/test_lib_*.c)))
UNIT_TESTS += $(LIB_TEST_NAMES:%=$(BUILD)/tests/%)
ASAN_UNIT_TESTS += $(LIB_TEST_NAMES:%=$(BUILD)/asan/tests/%)

$(LIB_TEST_NAMES:%=$(BUILD)/tests/%): $(BUILD)/tests/%: tests/unit/%.c $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) $(LIB_CFLAGS) -o $@ $^ $(CMOCKA_LIBS) $(LIB_LIBS)

$(LIB_TEST_NAMES:%=$(BUILD)/asan/tests/%): $(BUILD)/asan/tests/%: tests/unit/%.c $(LIB_ASAN_A)
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) $(SAN_FLAGS) $(LIB_CFLAGS) -o $@ $^ $(CMOCKA_LIBS) $(LIB_LIBS)

# Agent tests: every tests/unit/test_agent_*.c, linked with the agent's
# objects except its main() and with the library.
AGENT_TEST_NAMES := $(notdir $(basename $(wildcard tests/unit/test_agent_*.c)))
UNIT_TESTS += $(AGENT_TEST_NAMES:%=$(BUILD)/tests/%)
ASAN_UNIT_TESTS += $(AGENT_TEST_NAMES:%=$(BUILD)/asan/tests/%)

$(AGENT_TEST_NAMES:%=$(BUILD)/tests/%): $(BUILD)/tests/%: tests/unit/%.c $(filter-out %/main.o,$(AGENT_OBJS)) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) $(LIB_CFLAGS) -Iguest-agent -o $@ $^ $(CMOCKA_LIBS) $(AGENT_LIBS)

$(AGENT_TEST_NAMES:%=$(BUILD)/asan/tests/%): $(BUILD)/asan/tests/%: tests/unit/%.c $(filter-out %/main.o,$(AGENT_ASAN_OBJS)) $(LIB_ASAN_A)
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) $(SAN_FLAGS) $(LIB_CFLAGS) -Iguest-agent -o $@ $^ $(CMOCKA_LIBS) $(AGENT_LIBS)

VMM_PURE_OBJS := $(VMM_PURE_SRCS:%.c=$(BUILD)/%.o)
VMM_PURE_ASAN_OBJS := $(VMM_PURE_SRCS:%.c=$(BUILD)/asan/%.o)

$(VMM_TEST_NAMES:%=$(BUILD)/tests/%): $(BUILD)/tests/%: tests/unit/%.c $(VMM_PURE_OBJS) $(VMI_A)
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) -Ivmm $(VMI_CFLAGS) -o $@ $^ $(CMOCKA_LIBS) $(EMU_LIBS) -lpthread

$(VMM_TEST_NAMES:%=$(BUILD)/asan/tests/%): $(BUILD)/asan/tests/%: tests/unit/%.c $(VMM_PURE_ASAN_OBJS) $(VMI_ASAN_A)
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) $(SAN_FLAGS) -Ivmm $(VMI_CFLAGS) -o $@ $^ $(CMOCKA_LIBS) $(EMU_LIBS) -lpthread

include tests/agent/agent-tests.mk

# Test kernels for the end-to-end tests (tests/fixtures/pvh_tiny.S).
FIXTURE_LDFLAGS := -nostdlib -static -no-pie -Wl,-n -Wl,-Ttext=0x100000 -Wl,--build-id=none \
                   -Wl,--no-warn-rwx-segments
FIXTURES := $(BUILD)/fixtures/pvh-exit0.elf $(BUILD)/fixtures/pvh-exit42.elf \
            $(BUILD)/fixtures/pvh-triple-fault.elf $(BUILD)/fixtures/pvh-spin.elf
$(BUILD)/fixtures/pvh-exit%.elf: tests/fixtures/pvh_tiny.S
	@mkdir -p $(@D)
	$(CC) $(FIXTURE_LDFLAGS) -DEXIT_STATUS=$* $< -o $@
$(BUILD)/fixtures/pvh-triple-fault.elf: tests/fixtures/pvh_tiny.S
	@mkdir -p $(@D)
	$(CC) $(FIXTURE_LDFLAGS) -DTRIPLE_FAULT $< -o $@
$(BUILD)/fixtures/pvh-spin.elf: tests/fixtures/pvh_tiny.S
	@mkdir -p $(@D)
	$(CC) $(FIXTURE_LDFLAGS) -DSPIN $< -o $@

.PHONY: test-unit test-e2e test-agent test-host
test-host: $(BUILD)/kvmprof $(BUILD)/asan/kvmprof $(BUILD)/kvmprof-vmm guest
	@KVMPROF_SUITES=host bash tests/run-all.sh

test-agent: $(BUILD)/kvmprof-agent $(BUILD)/asan/kvmprof-agent $(AGENT_FIXTURES)
	@KVMPROF_SUITES=agent bash tests/run-all.sh

test-unit: $(UNIT_TESTS) $(ASAN_UNIT_TESTS) debian-kernel
	@KVMPROF_SUITES=unit bash tests/run-all.sh

test-e2e: $(BUILD)/kvmprof-vmm $(BUILD)/asan/kvmprof-vmm $(FIXTURES) guest $(BUILD)/kvmprof-agent $(BUILD)/asan/kvmprof-agent
	@bash tests/e2e/run.sh

test: deps
	@$(MAKE) --no-print-directory test-all

.PHONY: test-all
test-all: all $(UNIT_TESTS) $(ASAN_UNIT_TESTS) $(BUILD)/asan/kvmprof-vmm $(BUILD)/asan/kvmprof-agent \
          $(BUILD)/asan/kvmprof $(FIXTURES) \
          $(AGENT_FIXTURES) fuzz-build
	@bash tests/run-all.sh
