# make bench: benchmarks that print ratios measured side by side in one run.
.PHONY: bench
$(BUILD)/bench/boot-time: bench/boot_time.c
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) -o $@ $<

bench: deps
	@$(MAKE) --no-print-directory $(BUILD)/kvmprof-vmm $(BUILD)/bench/boot-time guest
	@bash bench/boot.sh

$(BUILD)/bench/exit-cost.elf: bench/exit_cost.S
	@mkdir -p $(@D)
	$(CC) -nostdlib -static -no-pie -Wl,-n -Wl,-Ttext=0x100000 -Wl,--build-id=none \
		-Wl,--no-warn-rwx-segments $< -o $@

bench: bench-vpmu
.PHONY: bench-vpmu
bench-vpmu: deps
	@$(MAKE) --no-print-directory $(BUILD)/kvmprof-vmm $(BUILD)/bench/exit-cost.elf
	@bash bench/vpmu.sh

$(BUILD)/bench/agent-work: bench/agent_work.c
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) -fno-omit-frame-pointer -o $@ $<

# The sample-format figures (docs/benchmarks.md, "Sample records"): a reader loop, and bytes per sample.
$(BUILD)/bench/read-samples: bench/read_samples.c $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) $(LIB_CFLAGS) -o $@ $< $(LIB_A) $(LIB_LIBS)

.PHONY: bench-sample-size
bench-sample-size: deps
	@$(MAKE) --no-print-directory $(BUILD)/kvmprof-vmm $(BUILD)/kvmprof $(BUILD)/kvmprof-agent $(BUILD)/bench/agent-work
	@bash bench/sample_size.sh

bench: bench-agent
.PHONY: bench-agent
bench-agent: deps
	@$(MAKE) --no-print-directory $(BUILD)/kvmprof-vmm $(BUILD)/kvmprof-agent $(BUILD)/bench/agent-work
	@bash bench/agent.sh

bench: bench-host
.PHONY: bench-host
bench-host: deps
	@$(MAKE) --no-print-directory $(BUILD)/kvmprof-vmm $(BUILD)/kvmprof $(BUILD)/bench/agent-work \
		$(BUILD)/tests/e2e/ring_client guest
	@bash bench/host.sh

bench: bench-exact
.PHONY: bench-exact
bench-exact: deps
	@$(MAKE) --no-print-directory $(BUILD)/kvmprof-vmm guest
	@bash bench/exact.sh

# What trace events and plugins cost (bench/trace.sh): in the VM, the
# ordinary VMM against the compiled-out and static builds and each plugin;
# on the host, bench/trace_cost.c through the VMM's own dispatch and loader.
# Plugins: build/plugins/*.so, console_bytes and the examples of plugins/plugins.mk ($(PLUGINS)).
TRACE_COST_LOOP_FLAGS := $(VMM_CFLAGS) -Ibench
$(BUILD)/bench/trace_cost_loop.o: bench/trace_cost_loop.c
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) $(TRACE_COST_LOOP_FLAGS) -DTRACE_COST_LOOP=trace_cost_loop -c $< -o $@
$(BUILD)/bench/trace_cost_loop_out.o: bench/trace_cost_loop.c
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) $(TRACE_COST_LOOP_FLAGS) -DTRACE_COST_LOOP=trace_cost_loop_out -DKVMPROF_TRACE_COMPILED_OUT \
		-c $< -o $@
$(BUILD)/bench/trace_cost_loop_static.o: bench/trace_cost_loop.c $(BUILD)/static/console_bytes/static_plugin_events.h
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) $(TRACE_COST_LOOP_FLAGS) $(STATIC_LTO) -DTRACE_COST_LOOP=trace_cost_loop_static \
		-DKVMPROF_STATIC_PLUGIN='"console_bytes"' -I$(BUILD)/static/console_bytes -c $< -o $@
$(BUILD)/bench/trace_cost.o: bench/trace_cost.c $(BUILD)/static/console_bytes/static_plugin_events.h
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) $(TRACE_COST_LOOP_FLAGS) -DKVMPROF_STATIC_PLUGIN='"console_bytes"' \
		-I$(BUILD)/static/console_bytes -c $< -o $@
$(BUILD)/bench/trace-cost: $(BUILD)/bench/trace_cost.o $(BUILD)/bench/trace_cost_loop.o \
		$(BUILD)/bench/trace_cost_loop_out.o $(BUILD)/bench/trace_cost_loop_static.o \
		$(BUILD)/static/console_bytes/plugin.o $(filter-out $(BUILD)/vmm/main.o,$(VMM_OBJS)) $(VMI_A)
	$(CC) $(HOST_CFLAGS) $(STATIC_LTO) -o $@ $^ $(VMM_LIBS)
-include $(BUILD)/bench/trace_cost.d $(BUILD)/bench/trace_cost_loop.d $(BUILD)/bench/trace_cost_loop_out.d \
	$(BUILD)/bench/trace_cost_loop_static.d

bench: bench-trace
.PHONY: bench-trace
bench-trace: deps
	@$(MAKE) --no-print-directory $(BUILD)/kvmprof-vmm $(BUILD)/notrace/kvmprof-vmm \
		$(BUILD)/static/console_bytes/kvmprof-vmm $(BUILD)/bench/trace-cost $(BUILD)/kvmprof \
		$(BUILD)/plugins/console_bytes.so $(PLUGINS) guest
	@bash bench/trace.sh

# What exit attribution costs: kvmprof record with and without its VM exit
# records on exitloop's console and PMU-MSR workloads (bench/exits.sh).
bench: bench-exits
.PHONY: bench-exits
bench-exits: deps
	@$(MAKE) --no-print-directory $(BUILD)/kvmprof-vmm $(BUILD)/kvmprof guest
	@bash bench/exits.sh

# What profiling a libvirt domain costs (bench/libvirt.sh): the guest's slowdown, QEMU's, libvirtd's and
# kvmprof's CPU, the monitor's round trip, against kvmprof-vmm with record --vm.
bench: bench-libvirt
.PHONY: bench-libvirt
bench-libvirt: deps
	@$(MAKE) --no-print-directory $(BUILD)/kvmprof-vmm $(BUILD)/kvmprof guest
	@bash bench/libvirt.sh

# Overhead at 1 and 10 kHz next to native perf of the same programs (bench/rates.sh).
$(BUILD)/bench/%-host: guest/user/%.c bench/host_libc/libc.h
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) -mgeneral-regs-only -mno-red-zone -fno-omit-frame-pointer -Ibench/host_libc -o $@ $<

bench: bench-rates
.PHONY: bench-rates
bench-rates: deps
	@$(MAKE) --no-print-directory $(BUILD)/kvmprof-vmm $(BUILD)/kvmprof $(BUILD)/bench/matmul-host \
		$(BUILD)/bench/split-host guest
	@bash bench/rates.sh

# What a forced VM exit costs (bench/kick.sh): bench/kick_cost.c's mechanisms side by side in a ring-3 guest
# loop, and with OLD_VMM=path the guest's slowdown under kvmprof record --vm, an older VMM against this one.
$(BUILD)/bench/kick-cost: bench/kick_cost.c
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) -o $@ $< -lpthread

bench: bench-kick
.PHONY: bench-kick
bench-kick: deps
	@$(MAKE) --no-print-directory $(BUILD)/bench/kick-cost $(BUILD)/kvmprof-vmm $(BUILD)/kvmprof guest
	@bash bench/kick.sh

# tests/kvmhost's emulated KVM host (no /dev/kvm needed): boot, a command's round trip, slowdown.
bench: bench-kvmhost
.PHONY: bench-kvmhost
bench-kvmhost: deps
	@$(MAKE) --no-print-directory $(BUILD)/kvmprof-vmm $(BUILD)/tests/test_lib_profile guest
	@bash bench/kvmhost.sh
