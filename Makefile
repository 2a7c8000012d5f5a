# kvmprof: one Makefile for everything; objects go under build/.
# `make` builds, `make run` boots the bundled guest, `make test` runs the tests.

BUILD      ?= build
ifeq ($(origin CC),default)
CC := gcc
endif
CSTD       := -std=c17
WARN       := -Wall -Wextra -Werror
# Every host program and the archives they link keep a frame pointer, even in
# leaf functions (as Fedora and Ubuntu build their distributions for profiling):
# `kvmprof record -g` and `perf record -g` walk user stacks by frame pointer,
# and without one the VMM's own frames (vcpu_thread, its exit handlers) came out
# [unknown] or went missing under ioctl. The bundled guest (guest/guest.mk) and
# the fuzzers (tests/fuzz/fuzz.mk) have flags of their own.
HOST_FRAME_POINTER_FLAGS := -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer
HOST_CFLAGS ?= -O2 -g
HOST_CFLAGS += $(CSTD) $(WARN) $(HOST_FRAME_POINTER_FLAGS) -D_GNU_SOURCE -Iinclude -MMD -MP
SAN_FLAGS  := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
CMOCKA_LIBS = $(shell pkg-config --libs cmocka 2>/dev/null || echo -lcmocka)

# Most objects and programs are built twice, plain and with ASan + UBSan
# under $(BUILD)/asan/ for the tests; one call makes both rules:
#   $(eval $(call plain_and_asan,TARGETS,PREREQUISITES,COMPILER ARGUMENTS))
# TARGETS may be a static pattern: "$(NAMES:%=$(BUILD)/tests/%): $(BUILD)/tests/%".
# The ASan rule moves every $(BUILD)/ path of TARGETS and PREREQUISITES
# under $(BUILD)/asan/ and adds $(SAN_FLAGS) after $(HOST_CFLAGS). The
# arguments are expanded twice: write $$@, $$^, $$< and $(comma).
comma := ,
asan_path = $(patsubst $(BUILD)/%,$(BUILD)/asan/%,$(1))
define plain_and_asan
$(1): $(2)
	@mkdir -p $$(@D)
	$$(CC) $$(HOST_CFLAGS) $(3)

$(call asan_path,$(1)): $(call asan_path,$(2))
	@mkdir -p $$(@D)
	$$(CC) $$(HOST_CFLAGS) $$(SAN_FLAGS) $(3)
endef

# Debian packages the build, the tests and the benchmarks need.
DEB_PACKAGES := gcc make pkg-config libcmocka-dev cpio busybox-static \
                qemu-system-x86 xz-utils zstd binutils libpfm4-dev \
                libelf-dev libdw-dev zlib1g-dev liblzma-dev libbz2-dev \
                libprotobuf-c-dev protobuf-c-compiler libjson-c-dev libbpf-dev
# vmm/emu.c: the exact vPMU backend runs guest code in Unicorn (QEMU's TCG as a library)
# and decodes each block once with Capstone.
DEB_PACKAGES += libunicorn-dev libcapstone-dev
# lib/symbols/symtab_demangle.c: C++ and Rust symbol names demangled by libiberty (binutils' and perf's demangler).
DEB_PACKAGES += libiberty-dev
# lib/format/sample_file.c: every record's CRC-32 through libdeflate (PCLMULQDQ), zlib's value several times faster.
DEB_PACKAGES += libdeflate-dev
# bench/agent.sh, bench/host.sh: the reports' peak RSS next to perf report's (GNU time's %M).
DEB_PACKAGES += time
# host-profiler/libvirt: kvmprof list/record --domain talk to libvirt (its C API, with libvirt-qemu's monitor
# call) and parse domain XML with libxml2, both loaded with dlopen when a command needs them (libvirt0 and
# libxml2 at run time, the -dev packages for their headers); the tests run a real libvirtd (libvirt-daemon-system, which pulls
# in QEMU's system emulator) with virsh (libvirt-clients).
DEB_PACKAGES += libvirt-dev libxml2-dev libvirt-daemon-system libvirt-clients
# tests/fuzz: libFuzzer needs clang and its runtime (libclang_rt.fuzzer).
DEB_PACKAGES += clang libclang-rt-14-dev
# tests/agent: a fixture linked by lld (ld.lld), whose segment layout --call-graph dwarf must unwind.
DEB_PACKAGES += lld
# tests/agent/svg.sh: xmllint checks the SVG flame graph, headless Chromium renders it.
DEB_PACKAGES += libxml2-utils chromium python3
# tests/nested, perf case: Linux's own perf in the L2 guest, copied with the libraries it links.
DEB_PACKAGES += linux-perf

# Everything `make test` runs; fragments below append to these.
UNIT_TESTS :=
ASAN_UNIT_TESTS :=

.PHONY: all deps run test bench clean install
all:

include lib/lib.mk
include vpmu/vpmu.mk
include vmi/vmi.mk
include vmm/vmm.mk
include guest/guest.mk
include guest-agent/agent.mk
include host-profiler/host-profiler.mk
include plugins/plugins.mk
include tests/tests.mk
include tests/nested/nested.mk
include tests/fuzz/fuzz.mk
-include bench/bench.mk

all: $(BUILD)/kvmprof-vmm $(BUILD)/kvmprof-vmm-static guest $(BUILD)/kvmprof-agent $(BUILD)/kvmprof

# The programs, and the plugin API's headers (docs/plugins.md) for plugins built
# outside this tree: `cc -shared -fPIC -O2 -o x.so x.c` then finds <kvmprof/plugin.h>
# under /usr/local/include. DESTDIR for staging, PREFIX for elsewhere.
PREFIX ?= /usr/local
install: $(BUILD)/kvmprof-vmm $(BUILD)/kvmprof-agent $(BUILD)/kvmprof
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/include/kvmprof
	install -m 755 $^ $(DESTDIR)$(PREFIX)/bin/
	install -m 644 include/kvmprof/plugin.h include/kvmprof/trace_events.h $(DESTDIR)$(PREFIX)/include/kvmprof/

# Installs only what is missing, so it is quick on a machine that has it all.
deps:
	@missing=$$(for p in $(DEB_PACKAGES); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; \
	done); \
	if [ -n "$$missing" ]; then \
		echo "deps: installing $$missing"; \
		if [ "$$(id -u)" != 0 ]; then echo "deps: need root to apt-get install: $$missing" >&2; exit 1; fi; \
		DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

# Boots the bundled guest on two vCPUs with the virtual PMU and profiles the
# same run two ways:
# - guest-wide: the guest's agent (/bin/agent) samples the whole guest
#   through its virtual PMU while the demo workloads run; its sample file
#   comes out through the agent channel (COM2) into $(RUN_DIR)/agent.data;
# - system-wide: kvmprof, on the host, samples the VMM's threads and has the
#   VMM sample the guest (through --control), into $(RUN_DIR)/system.data.
# Then both reports, read on the host against the guest's own ELF files.
# Hosts without hardware counters get the exact backend: the vCPUs run in an
# emulator while the demos count their instructions (exact counts), and
# cycles come from run time.
RUN_DIR := $(BUILD)/run
# The demos' counted regions in the exact backend's emulator, sampled from
# inside and outside at once, sized to keep make run well under a minute.
# The exit-heavy demo of the cross-layer profile: 300 lines to the console,
# each byte one OUT to port 0x3f8 that the VMM handles.
RUN_EXIT_WORK := :/bin/exitloop+console+300
RUN_EXACT_WORK := :/bin/matmul+96+20:/bin/hash+150$(RUN_EXIT_WORK)
# In the emulated KVM host (tests/kvmhost sets KVMHOST_L1) the emulator runs
# ~20 times slower: the same demos, smaller.
RUN_L1_WORK := :/bin/matmul+64+10:/bin/hash+50$(RUN_EXIT_WORK)
# Without /dev/kvm the demo runs as it is inside an emulated KVM host
# (tests/kvmhost: an L1 under QEMU's TCG with nested SVM), its files landing
# in $(RUN_DIR) as here.
run: deps
	@$(MAKE) --no-print-directory $(BUILD)/kvmprof-vmm $(BUILD)/kvmprof-agent $(BUILD)/kvmprof guest
	@if tests/kvmhost/kvmhost check >/dev/null; then \
		$(MAKE) --no-print-directory run-demo; \
	else \
		echo "no /dev/kvm here: running the demo inside an emulated KVM host, which is slower"; \
		tests/kvmhost/kvmhost run -- $(MAKE) --no-print-directory run-demo; \
	fi

.PHONY: run-demo
run-demo:
	@mkdir -p $(RUN_DIR)
	@if $(BUILD)/kvmprof-vmm --vpmu-backend=emulated --cmdline "quiet start=/bin/exit" >/dev/null 2>&1; then \
		backend=auto; \
	else \
		echo "run: this host has no hardware performance counters; the vPMU counts instructions exactly in an emulator and cycles from time (--vpmu-backend=exact)"; \
		backend=exact; \
	fi; \
	sock=$(RUN_DIR)/vmm.sock; rm -f $$sock $(RUN_DIR)/system.data; \
	if [ $$backend = exact ]; then work=$(RUN_EXACT_WORK); else work=:/bin/matmul:/bin/hash$(RUN_EXIT_WORK); fi; \
	if [ "$${KVMHOST_L1:-0}" = 1 ]; then work=$(RUN_L1_WORK); fi; \
	echo "run: $(BUILD)/kvmprof-vmm --cpus 2 --vpmu-backend=$$backend --vpmu-stats --control $$sock" \
		"--agent-channel $(RUN_DIR)/agent.data --cmdline start=/bin/agent$$work &"; \
	$(BUILD)/kvmprof-vmm --cpus 2 --vpmu-backend=$$backend --vpmu-stats --control $$sock \
		--kernel $(GUEST_KERNEL) --initrd $(GUEST_INITRD) \
		--agent-channel $(RUN_DIR)/agent.data --cmdline "start=/bin/agent$$work" & vmm=$$!; \
	for i in $$(seq 200); do [ -S $$sock ] && break; sleep 0.01; done; \
	echo "run: $(BUILD)/kvmprof record --vm $$sock -g -q -o $(RUN_DIR)/system.data &"; \
	$(BUILD)/kvmprof record --vm $$sock -g -q $(RUN_RECORD_EXTRA) -o $(RUN_DIR)/system.data & rec=$$!; \
	wait $$vmm; status=$$?; wait $$rec; \
	if [ $$status != 0 ]; then echo "run: kvmprof-vmm exited $$status"; exit $$status; fi
	@echo
	@echo "== guest-wide profile, sampled inside the guest through its virtual PMU (top 25 rows)"
	@$(BUILD)/kvmprof-agent report -i $(RUN_DIR)/agent.data --guest-root $(BUILD)/guest \
		--sort pid,image,symbol -o $(RUN_DIR)/guest-wide.txt
	@head -n 27 $(RUN_DIR)/guest-wide.txt
	@echo "(whole report: $(RUN_DIR)/guest-wide.txt)"
	@echo
	@echo "== system-wide profile of the same run, sampled from the host (top rows)"
	@$(BUILD)/kvmprof report -i $(RUN_DIR)/system.data --guest-root $(BUILD)/guest \
		--sort domain,process,symbol -o $(RUN_DIR)/system-wide.txt
	@$(BUILD)/kvmprof report -i $(RUN_DIR)/system.data --guest-root $(BUILD)/guest \
		--format svg -o $(RUN_DIR)/system-wide.svg
	@head -n 30 $(RUN_DIR)/system-wide.txt
	@echo "(whole report: $(RUN_DIR)/system-wide.txt; flame graph: $(RUN_DIR)/system-wide.svg)"
	@echo
	@echo "== cross-layer: the exit-heavy demo (exitloop: every console byte is an OUT to port 0x3f8)"
	@echo "-- its own time, from the process down (kvmprof report --drill exitloop)"
	@$(BUILD)/kvmprof report -i $(RUN_DIR)/system.data --guest-root $(BUILD)/guest --drill exitloop \
		-o $(RUN_DIR)/drill-exitloop.txt
	@sed -n '/^ step/,$$p' $(RUN_DIR)/drill-exitloop.txt
	@echo "-- the host time of its console exits, from the exit down (--drill '[exit: io out 0x3f8]')"
	@$(BUILD)/kvmprof report -i $(RUN_DIR)/system.data --guest-root $(BUILD)/guest \
		--drill '[exit: io out 0x3f8]' -o $(RUN_DIR)/drill-exit.txt
	@sed -n '1p;/^ step/,$$p' $(RUN_DIR)/drill-exit.txt
	@echo "(the flame graph shows both: exit frames are yellow, between the guest's frames and the VMM's;"
	@echo " how to read it: docs/host-profiler.md, \"Cross-layer stacks\")"

clean:
	rm -rf $(BUILD)
