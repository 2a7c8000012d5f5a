# Fixture programs for tests/agent/run.sh (the kvmprof-agent tests on this
# host): -O1 with frame pointers so call chains walk (the hot functions are
# not leaves: gcc gives leaves no frame), noinline functions so the symbols
# the tests look for exist.

AGENT_FIXTURES := $(BUILD)/agent-fixtures/split $(BUILD)/agent-fixtures/forker \
                  $(BUILD)/agent-fixtures/agent-child $(BUILD)/agent-fixtures/badframes \
                  $(BUILD)/agent-fixtures/nofp $(BUILD)/agent-fixtures/cxx_spin \
                  $(BUILD)/agent-fixtures/pagetouch $(BUILD)/agent-fixtures/hotline \
                  $(BUILD)/agent-fixtures/nofp-lld

$(BUILD)/agent-fixtures/%: tests/agent/%.c
	@mkdir -p $(@D)
	$(CC) -O1 -g -fno-omit-frame-pointer $(CSTD) $(WARN) -D_GNU_SOURCE -o $@ $<

# Built as distributions build programs: no frame pointers, CFI in .eh_frame.
$(BUILD)/agent-fixtures/nofp: tests/agent/nofp.c
	@mkdir -p $(@D)
	$(CC) -O2 -g -fomit-frame-pointer $(CSTD) $(WARN) -D_GNU_SOURCE -o $@ $<

# The same program linked by lld (Rust's default linker, clang's often): lld packs
# segments without padding, so the code's first page also holds read-only data, and
# the code is linked a page above its file offset (issue 31: dwarf found no callers).
$(BUILD)/agent-fixtures/nofp-lld: tests/agent/nofp.c
	@mkdir -p $(@D)
	$(CC) -O2 -g -fomit-frame-pointer -fuse-ld=lld $(CSTD) $(WARN) -D_GNU_SOURCE -o $@ $<

# C++: a mangled symbol for the demangling test.
$(BUILD)/agent-fixtures/cxx_spin: tests/agent/cxx_spin.cc
	@mkdir -p $(@D)
	$(CXX) -O1 -g -fno-omit-frame-pointer -std=c++17 $(WARN) -o $@ $<

.PHONY: agent-fixtures
agent-fixtures: $(AGENT_FIXTURES)
