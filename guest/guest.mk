# The bundled guest: a PVH-bootable x86-64 kernel, user programs, an initrd.
# Included by the root Makefile (BUILD, CC, HOST_CFLAGS, CMOCKA_LIBS, SAN_FLAGS).

GUEST_OUT      := $(BUILD)/guest
GUEST_PROGRAMS := matmul hash exit hello fault pmutest vpmubench agent spam split badstack exitloop

# Ring 0 is emulated instruction by instruction on the target host: no SSE,
# no red zone, no CET/endbr, nothing clever.
GUEST_CFLAGS_COMMON := -std=c17 -Wall -Wextra -Werror -ffreestanding -fno-pic -fno-pie \
	-fno-stack-protector -fcf-protection=none -mgeneral-regs-only -mno-red-zone \
	-fno-asynchronous-unwind-tables -fno-unwind-tables -Iguest/include -Iinclude -MMD -MP
GUEST_KERNEL_CFLAGS := $(GUEST_CFLAGS_COMMON) -O2 -g -mcmodel=small -fno-omit-frame-pointer --param=min-pagesize=0
GUEST_USER_CFLAGS   := $(GUEST_CFLAGS_COMMON) -O2 -g -fno-omit-frame-pointer -Iguest/user/lib
GUEST_LDFLAGS := -nostdlib -static -no-pie -Wl,--build-id=none -Wl,-z,max-page-size=0x1000 \
	-Wl,-z,noexecstack

# guest/lib: code shared by kernel and user space, compiled once with each's flags.
GUEST_LIB_SRCS    := guest/lib/format.c guest/lib/string.c guest/lib/crc32.c
GUEST_KERNEL_SRCS := $(wildcard guest/kernel/*.c guest/kernel/*.S)
GUEST_KERNEL_OBJS := $(patsubst guest/kernel/%,$(GUEST_OUT)/kernel/%.o,$(GUEST_KERNEL_SRCS)) \
	$(patsubst guest/lib/%,$(GUEST_OUT)/lib/kernel/%.o,$(GUEST_LIB_SRCS))
GUEST_ULIB_OBJS   := $(GUEST_OUT)/user/lib/crt0.S.o $(GUEST_OUT)/user/lib/libc.c.o \
	$(patsubst guest/lib/%,$(GUEST_OUT)/lib/user/%.o,$(GUEST_LIB_SRCS))
GUEST_USER_ELFS   := $(addprefix $(GUEST_OUT)/user/,$(GUEST_PROGRAMS))
GUEST_INITRD_FILES := $(shell find guest/initrd -type f 2>/dev/null)

.PHONY: guest
guest: $(GUEST_OUT)/kernel.elf $(GUEST_OUT)/initrd.cpio $(GUEST_USER_ELFS)

$(GUEST_OUT)/kernel/%.o: guest/kernel/% guest/guest.mk
	@mkdir -p $(@D)
	$(CC) $(GUEST_KERNEL_CFLAGS) -c $< -o $@

$(GUEST_OUT)/lib/kernel/%.o: guest/lib/% guest/guest.mk
	@mkdir -p $(@D)
	$(CC) $(GUEST_KERNEL_CFLAGS) -c $< -o $@

$(GUEST_OUT)/kernel.elf: $(GUEST_KERNEL_OBJS) guest/kernel/kernel.ld
	$(CC) $(GUEST_LDFLAGS) -Wl,-T,guest/kernel/kernel.ld -Wl,--no-warn-rwx-segments -o $@ $(GUEST_KERNEL_OBJS)

$(GUEST_OUT)/user/%.o: guest/user/% guest/guest.mk
	@mkdir -p $(@D)
	$(CC) $(GUEST_USER_CFLAGS) -c $< -o $@

$(GUEST_OUT)/lib/user/%.o: guest/lib/% guest/guest.mk
	@mkdir -p $(@D)
	$(CC) $(GUEST_USER_CFLAGS) -c $< -o $@

# Kept: make would otherwise delete them as intermediates of the pattern rule below.
.SECONDARY: $(GUEST_ULIB_OBJS) $(GUEST_USER_ELFS:%=%.c.o)

# Static, linked at 0x40000000 (the user region), symbols kept.
$(GUEST_OUT)/user/%: $(GUEST_OUT)/user/%.c.o $(GUEST_ULIB_OBJS)
	$(CC) $(GUEST_LDFLAGS) -Wl,-Ttext-segment=0x40000000 -o $@ $(GUEST_ULIB_OBJS) $<

# The agent writes its samples in compact blocks with the host's own coder
# (lib/format/sample_block.c, freestanding), compiled here with the guest's flags.
GUEST_AGENT_OBJS := $(GUEST_OUT)/lib/user/sample_block.o
$(GUEST_OUT)/lib/user/sample_block.o: lib/format/sample_block.c guest/guest.mk
	@mkdir -p $(@D)
	$(CC) $(GUEST_USER_CFLAGS) -c $< -o $@

$(GUEST_OUT)/user/agent: $(GUEST_OUT)/user/agent.c.o $(GUEST_ULIB_OBJS) $(GUEST_AGENT_OBJS)
	$(CC) $(GUEST_LDFLAGS) -Wl,-Ttext-segment=0x40000000 -o $@ $(GUEST_ULIB_OBJS) $(GUEST_AGENT_OBJS) $<

# Deterministic archive: sorted names, no directories, fixed owner and times.
# $(GUEST_OUT)/bin points into the initrd tree, so that a sample file's guest
# paths resolve under --guest-root $(GUEST_OUT): /bin/matmul, /kernel.elf.
$(GUEST_OUT)/initrd.cpio: $(GUEST_USER_ELFS) $(GUEST_INITRD_FILES)
	rm -rf $(GUEST_OUT)/initrd $@.tmp
	mkdir -p $(GUEST_OUT)/initrd/bin
	cp -r guest/initrd/. $(GUEST_OUT)/initrd/
	cp $(GUEST_USER_ELFS) $(GUEST_OUT)/initrd/bin/
	find $(GUEST_OUT)/initrd -type f -exec touch -d @0 {} +
	cd $(GUEST_OUT)/initrd && find . -type f | sed 's|^\./||' | LC_ALL=C sort | \
		cpio -o -H newc --quiet --reproducible --owner=0:0 > ../initrd.cpio.tmp
	ln -sfn initrd/bin $(GUEST_OUT)/bin
	mv $@.tmp $@

# cpio parser unit tests (host build, and an ASan + UBSan build).
UNIT_TESTS += $(BUILD)/tests/test_cpio
ASAN_UNIT_TESTS += $(BUILD)/asan/tests/test_cpio

$(BUILD)/tests/test_cpio: tests/unit/test_cpio.c guest/kernel/cpio.c guest/kernel/cpio.h
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) -Iguest/kernel -o $@ tests/unit/test_cpio.c guest/kernel/cpio.c $(CMOCKA_LIBS)

$(BUILD)/asan/tests/test_cpio: tests/unit/test_cpio.c guest/kernel/cpio.c guest/kernel/cpio.h
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) $(SAN_FLAGS) -Iguest/kernel -o $@ tests/unit/test_cpio.c guest/kernel/cpio.c $(CMOCKA_LIBS)

# The ACPI power-off lookup, on kvmprof-vmm's own tables (vmm/acpi.c) and on hand-made ones.
UNIT_TESTS += $(BUILD)/tests/test_acpi_tables
ASAN_UNIT_TESTS += $(BUILD)/asan/tests/test_acpi_tables

$(eval $(call plain_and_asan,$(BUILD)/tests/test_acpi_tables,\
	tests/unit/test_acpi_tables.c guest/kernel/acpi_tables.c vmm/acpi.c vmm/guest_mem.c $(VMI_A),\
	-Iguest/kernel $$(VMM_CFLAGS) -o $$@ $$(filter %.c %.a,$$^) $$(CMOCKA_LIBS)))

-include $(GUEST_KERNEL_OBJS:.o=.d) $(GUEST_OUT)/user/*.d $(GUEST_OUT)/user/lib/*.d \
	$(GUEST_OUT)/lib/*/*.d
