# libFuzzer harnesses for every parser of outside input (tests/fuzz/README
# in docs/fuzzing.md). Built with clang: the project's sources are compiled
# again with -fsanitize=fuzzer-no-link,address,undefined into their own
# objects under $(BUILD)/fuzz/obj, never mixed with gcc's.
#   make fuzz                 each target for FUZZ_SECONDS (default 180) from its corpus
#   make fuzz-smoke           each target for a few seconds (make test runs this)

FUZZ_CC ?= clang
FUZZ_SECONDS ?= 180
FUZZ_CFLAGS := -std=c17 -g -O1 -Wall -Wextra -Werror -Wno-gnu-variable-sized-type-not-at-end -D_GNU_SOURCE -Iinclude -MMD -MP \
               -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_LDFLAGS := -fsanitize=fuzzer,address,undefined
FUZZ_OBJ := $(BUILD)/fuzz/obj

FUZZ_TARGETS := sample_file sample_records kallsyms procfs guest_mem boot cpio vpmu_filter control task_layout trace_file \
                plugin_elf qemu_hmp demangle
# make test's fuzz smoke (tests/run-all.sh) runs these.
export KVMPROF_FUZZ_TARGETS = $(FUZZ_TARGETS)
FUZZ_BINS := $(FUZZ_TARGETS:%=$(BUILD)/fuzz/fuzz_%)

FUZZ_LIB_OBJS := $(LIB_SRCS:%.c=$(FUZZ_OBJ)/%.o) $(FUZZ_OBJ)/gen/profile.pb-c.o
FUZZ_VMM_OBJS := $(addprefix $(FUZZ_OBJ)/,$(VMM_PURE_SRCS:.c=.o))
FUZZ_VMI_OBJS := $(VMI_SRCS:%.c=$(FUZZ_OBJ)/%.o)

$(FUZZ_OBJ)/lib/%.o: lib/%.c | $(BUILD)/gen/profile.pb-c.h
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(LIB_CFLAGS) -c $< -o $@

$(FUZZ_OBJ)/gen/profile.pb-c.o: $(BUILD)/gen/profile.pb-c.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(filter-out -Werror,$(FUZZ_CFLAGS)) -I$(BUILD)/gen -c $< -o $@

$(FUZZ_OBJ)/vmm/%.o: vmm/%.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(VMM_CFLAGS) -c $< -o $@

$(FUZZ_OBJ)/vmi/%.o: vmi/%.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(VMI_CFLAGS) -c $< -o $@

$(FUZZ_OBJ)/vpmu/%.o: vpmu/%.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(VPMU_CFLAGS) -c $< -o $@

$(FUZZ_OBJ)/guest-agent/%.o: guest-agent/%.c | $(BUILD)/gen/profile.pb-c.h
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(LIB_CFLAGS) -c $< -o $@

$(FUZZ_OBJ)/guest/cpio.o: guest/kernel/cpio.c guest/kernel/cpio.h
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Iguest/kernel -c $< -o $@

$(BUILD)/fuzz/fuzz_sample_file $(BUILD)/fuzz/fuzz_sample_records $(BUILD)/fuzz/fuzz_kallsyms \
$(BUILD)/fuzz/fuzz_procfs $(BUILD)/fuzz/fuzz_trace_file: $(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_common.h $(FUZZ_LIB_OBJS)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(LIB_CFLAGS) $(FUZZ_LDFLAGS) -o $@ $< $(FUZZ_LIB_OBJS) $(LIB_LIBS)

$(BUILD)/fuzz/fuzz_guest_mem $(BUILD)/fuzz/fuzz_boot: $(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_VMM_OBJS) $(FUZZ_VMI_OBJS)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(VMM_CFLAGS) $(FUZZ_LDFLAGS) -o $@ $< $(FUZZ_VMM_OBJS) $(FUZZ_VMI_OBJS) $(EMU_LIBS) -lpthread

# What the plugin loader reads of a file before dlopen.
$(BUILD)/fuzz/fuzz_plugin_elf: tests/fuzz/fuzz_plugin_elf.c $(FUZZ_OBJ)/vmm/plugin_elf.o
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Ivmm $(FUZZ_LDFLAGS) -o $@ $^

# The host profiler's parsers of QEMU's monitor replies (kvmprof record --domain).
$(FUZZ_OBJ)/host-profiler/%.o: host-profiler/%.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Ihost-profiler -c $< -o $@

$(BUILD)/fuzz/fuzz_qemu_hmp: tests/fuzz/fuzz_qemu_hmp.c $(FUZZ_OBJ)/host-profiler/qemu_hmp.o
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Ihost-profiler $(FUZZ_LDFLAGS) -o $@ $^

$(BUILD)/fuzz/fuzz_cpio: tests/fuzz/fuzz_cpio.c $(FUZZ_OBJ)/guest/cpio.o
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Iguest/kernel $(FUZZ_LDFLAGS) -o $@ $^

$(BUILD)/fuzz/fuzz_vpmu_filter: tests/fuzz/fuzz_vpmu_filter.c $(VPMU_ALL_SRCS:%.c=$(FUZZ_OBJ)/%.o)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Ivpmu $(FUZZ_LDFLAGS) -o $@ $^ $(VPMU_LIBS)

# The control socket's requests and commands, without its connections; the
# harness stands in for the VM calls the commands make.
FUZZ_CONTROL_OBJS := $(FUZZ_OBJ)/vmm/vcpu_hooks.o $(FUZZ_OBJ)/vmm/profiling/control_request.o $(FUZZ_OBJ)/vmm/profiling/control_cmds.o \
                     $(FUZZ_OBJ)/vmm/profiling/guest_sampler_events.o \
                     $(FUZZ_OBJ)/vmm/profiling/control_plugins.o $(FUZZ_OBJ)/lib/common/trace_event_table.o \
                     $(FUZZ_OBJ)/vmm/profiling/control_exit_stats.o $(FUZZ_OBJ)/vmm/profiling/exit_stats.o \
                     $(FUZZ_OBJ)/lib/common/kvm_exit_name.o $(FUZZ_OBJ)/vmm/trace.o $(VPMU_ALL_SRCS:%.c=$(FUZZ_OBJ)/%.o)
$(FUZZ_OBJ)/vmm/vcpu_hooks.o $(FUZZ_OBJ)/vmm/profiling/control_request.o $(FUZZ_OBJ)/vmm/profiling/control_cmds.o \
$(FUZZ_OBJ)/vmm/profiling/control_plugins.o $(FUZZ_OBJ)/vmm/profiling/control_exit_stats.o \
$(FUZZ_OBJ)/vmm/profiling/exit_stats.o $(FUZZ_OBJ)/vmm/profiling/guest_sampler_events.o: FUZZ_CFLAGS += $(VMM_CFLAGS)
$(BUILD)/fuzz/fuzz_control: tests/fuzz/fuzz_control.c $(FUZZ_CONTROL_OBJS)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(VMM_CFLAGS) $(FUZZ_LDFLAGS) -o $@ $^ $(VMM_LIBS)

# The agent's task-layout reader (libbpf parses the BTF).
$(BUILD)/fuzz/fuzz_task_layout: tests/fuzz/fuzz_task_layout.c tests/fuzz/fuzz_common.h $(FUZZ_OBJ)/guest-agent/kernel_layout.o \
		$(FUZZ_LIB_OBJS)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(LIB_CFLAGS) -Iguest-agent $(FUZZ_LDFLAGS) -o $@ $< $(FUZZ_OBJ)/guest-agent/kernel_layout.o \
		$(FUZZ_LIB_OBJS) -lbpf $(LIB_LIBS)

# Symbol names through the demangler: its one object and libiberty.
$(BUILD)/fuzz/fuzz_demangle: tests/fuzz/fuzz_demangle.c $(FUZZ_OBJ)/lib/symbols/symtab_demangle.o
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(LIB_CFLAGS) $(FUZZ_LDFLAGS) -o $@ $^ -liberty

# The seed corpora: small files in tests/fuzz/corpus/<target>/, plus seeds the
# build makes from its own outputs (the fixtures, the bundled guest's kernel
# and initrd, a real recording).
$(BUILD)/fuzz/seeds.stamp: tests/fuzz/seeds.sh $(FIXTURES) $(GUEST_KERNEL) $(GUEST_INITRD) $(BUILD)/kvmprof-agent \
		$(TEST_PLUGINS)
	@mkdir -p $(@D)
	BUILD=$(BUILD) bash tests/fuzz/seeds.sh
	@touch $@

.PHONY: fuzz fuzz-build fuzz-smoke
fuzz-build: $(FUZZ_BINS) $(BUILD)/fuzz/seeds.stamp

fuzz: fuzz-build
	@BUILD=$(BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) bash tests/fuzz/run.sh $(FUZZ_TARGETS)

fuzz-smoke: fuzz-build
	@BUILD=$(BUILD) FUZZ_SECONDS=$${FUZZ_SECONDS:-4} bash tests/fuzz/run.sh --smoke $(FUZZ_TARGETS)

-include $(FUZZ_LIB_OBJS:.o=.d) $(FUZZ_VMM_OBJS:.o=.d) $(FUZZ_VMI_OBJS:.o=.d) $(FUZZ_OBJ)/guest-agent/kernel_layout.d \
         $(FUZZ_CONTROL_OBJS:.o=.d) $(VPMU_ALL_SRCS:%.c=$(FUZZ_OBJ)/%.d)
