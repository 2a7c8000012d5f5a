// SPDX-License-Identifier: MIT
/*
 * Structure-aware: the input is a list of records, each written through the
 * library's own writer, so that header, padding, CRCs and END's counts are
 * right and the fuzzer reaches the record checks, profile building and the
 * renderers behind them. Input: one flag byte (bit 0: --recover, bit 1: no
 * END, bit 2: a stray byte after END), then records as
 * [type: 1 byte][length: 2 bytes, little-endian][payload].
 * Types past the known ones (a newer minor version's) need no case: the
 * reader's skip of unknown types is fuzzed by sample_file.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "profile/profile.h"
#include "report/report.h"
#include "format/sample_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct report_options ropt = { .callgraph = true };
	struct profile_options opt = { 0 };
	struct profile *p = NULL;
	struct kp_writer *w;
	char path[64], err[512];
	size_t at = 1;

	report_keys_parse("pid,image,symbol", REPORT_KEYS_COMMON, &ropt.table.keys, err, sizeof(err));
	uint8_t flags;
	int fd;

	if (size < 1)
		return 0;
	flags = data[0];
	opt.recover = flags & 1;
	fd = fuzz_memfd(NULL, 0, path);
	if (fd < 0)
		return 0;
	if (kp_writer_open(&w, fd, KP_SOURCE_HOST_PROFILER)) {
		close(fd);
		return 0;
	}
	while (at + 3 <= size) {
		/*
		 * Types 1-15: every known record, END (10) included. SAMPLE and
		 * VM_EXIT payloads the compact form holds go into the writer's
		 * SAMPLES blocks; type 15 writes a block payload as it is, for the
		 * reader's block decoder (samples, and exits: first byte 0x80).
		 */
		uint32_t type = 1 + data[at] % 15;
		size_t len = (size_t)data[at + 1] | (size_t)data[at + 2] << 8;

		at += 3;
		if (len > size - at)
			len = size - at;
		kp_writer_add(w, type, data + at, len);
		at += len;
	}
	if (flags & 2) {
		kp_writer_flush(w);
		kp_writer_abort(w);
	} else {
		kp_writer_close(w, 0, 0);
	}
	if (flags & 4 && write(fd, "x", 1) != 1) {
		close(fd);
		return 0;
	}
	if (!profile_load(&p, path, &opt, err, sizeof(err))) {
		FILE *out = fuzz_sink();
		uint32_t ev;

		report_text(out, p, &ropt);
		if (p->nr_events) {
			ev = report_folded_event(p);
			report_folded(out, p, ev);
			report_svg(out, p, ev, NULL);
		}
		report_pprof(out, p, NULL);
		report_script(out, p, NULL);
		report_script(out, p, &(const struct report_script_options){ .hide_callchain = true });
		profile_free(p);
	}
	close(fd);
	return 0;
}
