# libkvmprof: code both profilers share: the sample-file reader and writer,
# perf_event_open sampling (events, perf rings, record conversion, /proc),
# the symbolizer (libelf/libdw, kallsyms), the profile model (profile/), the
# report renderers (text, folded stacks, pprof, SVG, annotate) and the record/report
# command-line layer (cli/). Built plain and with ASan + UBSan. One folder per layer:
# common/ (small pieces the VMM links too), format/, symbols/, collection/,
# profile/, stat/, report/, cli/, each including only folders before it in
# this list; headers are included by path ("report/report.h").

LIB_SRCS := $(wildcard lib/*/*.c)
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/%.o) $(BUILD)/gen/profile.pb-c.o
LIB_ASAN_OBJS := $(LIB_SRCS:%.c=$(BUILD)/asan/%.o) $(BUILD)/asan/gen/profile.pb-c.o
LIB_A := $(BUILD)/lib/libkvmprof.a
LIB_ASAN_A := $(BUILD)/asan/lib/libkvmprof.a
# Order matters for static links: libdw before libelf before the compressors.
# libiberty: the demangler (lib/symbols/symtab_demangle.c), a static archive only.
# Capstone disassembles for annotate (report_annotate.c); the VMM's emulator uses it too.
LIB_LIBS := -lpfm -lcapstone -ldw -lelf -lprotobuf-c -ldeflate -lz -llzma -lbz2 -liberty -lm
LIB_CFLAGS := -Ilib -I$(BUILD)/gen

# pprof's profile.proto (lib/profile/profile.proto, written from the published schema) through protoc-c.
$(BUILD)/gen/profile.pb-c.c $(BUILD)/gen/profile.pb-c.h: lib/profile/profile.proto
	@mkdir -p $(BUILD)/gen
	protoc-c --proto_path=lib/profile --c_out=$(BUILD)/gen lib/profile/profile.proto

$(BUILD)/gen/profile.pb-c.o: $(BUILD)/gen/profile.pb-c.c
	$(CC) $(filter-out -Werror,$(HOST_CFLAGS)) -I$(BUILD)/gen -c $< -o $@

$(BUILD)/asan/gen/profile.pb-c.o: $(BUILD)/gen/profile.pb-c.c
	@mkdir -p $(@D)
	$(CC) $(filter-out -Werror,$(HOST_CFLAGS)) $(SAN_FLAGS) -I$(BUILD)/gen -c $< -o $@

$(LIB_OBJS) $(LIB_ASAN_OBJS): | $(BUILD)/gen/profile.pb-c.h

$(eval $(call plain_and_asan,$(BUILD)/lib/%.o,lib/%.c,$$(LIB_CFLAGS) -c $$< -o $$@))

$(LIB_A): $(LIB_OBJS)
	rm -f $@ && ar rcs $@ $^

$(LIB_ASAN_A): $(LIB_ASAN_OBJS)
	rm -f $@ && ar rcs $@ $^

-include $(LIB_OBJS:.o=.d) $(LIB_ASAN_OBJS:.o=.d)
