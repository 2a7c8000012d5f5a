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
