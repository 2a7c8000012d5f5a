# make bench: benchmarks that print ratios measured side by side in one run.
.PHONY: bench
$(BUILD)/bench/boot-time: bench/boot_time.c
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) -o $@ $<

bench: deps
	@$(MAKE) --no-print-directory $(BUILD)/kvmprof-vmm $(BUILD)/bench/boot-time guest
	@bash bench/boot.sh
