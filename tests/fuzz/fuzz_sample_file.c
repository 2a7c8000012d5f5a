// SPDX-License-Identifier: MIT
/*
 * The sample-file reader, profile building and every report format, over
 * raw bytes: what `kvmprof report` and `kvmprof-agent report` do with a
 * file from anywhere (a guest's agent channel included). The first byte
 * picks plain or --recover reading and whether the stream is read as a
 * guest's export (profile_add_guest_record); the rest is the file.
 */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "profile/profile.h"
#include "report/report.h"
#include "format/sample_file.h"

static void render_all(const struct profile *p)
{
	struct report_options ropt = { .callgraph = true, .table.percent_limit = 1 };
	char err[200];
	FILE *out = fuzz_sink();
	uint32_t ev;

	report_keys_parse("pid,dso,sym", REPORT_KEYS_COMMON, &ropt.table.keys, err, sizeof(err));
	report_text(out, p, &ropt);
	/* Rows without a symbol key: the call graph's chains hold each sample's own function. */
	report_keys_parse("domain,comm,dso", REPORT_KEYS_COMMON, &ropt.table.keys, err, sizeof(err));
	report_filter_set(&ropt.table.filter, REPORT_FILTER_SYMBOLS, "[unknown],main", err, sizeof(err));
	report_text(out, p, &ropt);
	if (p->nr_events) {
		ev = report_folded_event(p);
		report_folded(out, p, ev);
		report_svg(out, p, ev, NULL);
	}
	report_pprof(out, p, NULL);
	report_script(out, p, NULL);
	report_script(out, p, &(const struct report_script_options){ .hide_callchain = true });
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct profile_options opt = { 0 };
	struct profile *p = NULL;
	struct kp_reader *r;
	struct kp_record rec;
	char path[64], err[512];
	int fd, rc;

	if (size < 1)
		return 0;
	opt.recover = data[0] & 1;
	fd = fuzz_memfd(data + 1, size - 1, path);
	if (fd < 0)
		return 0;
	if (!(data[0] & 2)) {
		if (!profile_load(&p, path, &opt, err, sizeof(err))) {
			render_all(p);
			profile_free(p);
		}
	} else if (!profile_new(&p, &opt)) {
		/* An export stream, read as a guest's records. */
		if (!kp_reader_open(&r, path, err, sizeof(err))) {
			if (opt.recover)
				kp_reader_recover(r);
			rc = 0;
			while (!rc && kp_reader_next(r, &rec, err, sizeof(err)) > 0)
				rc = profile_add_guest_record(p, &rec);
			kp_reader_close(r);
			if (!rc && !profile_finish(p))
				render_all(p);
		}
		profile_free(p);
	}
	close(fd);
	return 0;
}
