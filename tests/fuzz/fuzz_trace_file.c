// SPDX-License-Identifier: MIT
/*
 * The trace file reader over raw bytes: what `kvmprof trace` does with a
 * file from anywhere. Every record it hands out is printed through the
 * event table, as the text output does, so that a record the reader lets
 * through with a bad id or argument count would be caught here.
 */
#include <stdint.h>
#include <stdio.h>

#include "fuzz_common.h"
#include "common/trace_event_table.h"
#include "format/trace_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FILE *f = fmemopen((void *)data, size, "rb");
	FILE *out = fuzz_sink();
	struct trace_reader r;
	struct kvmprof_trace_record rec;
	char err[TRACE_READ_ERR_MAX], name[32], type;

	if (!f)
		return 0;
	if (trace_read_open(&r, f, "fuzz", err) == 0) {
		while (trace_read_next(&r, &rec, err) == 1) {
			const struct trace_event_info *e = trace_event_info(rec.event);

			fprintf(out, "%u %s", rec.vcpu, e->name); /* NULL here would be a reader bug */
			for (unsigned int i = 0; trace_event_arg(e, i, name, &type); i++)
				fprintf(out, " %s=%llu", name, (unsigned long long)rec.args[i]);
		}
	}
	fclose(f);
	return 0;
}
