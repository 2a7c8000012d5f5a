// SPDX-License-Identifier: MIT
/*
 * read-samples FILE [COPY]: reads a sample file through kp_reader_next, as
 * the reports do, and prints its records and samples; with COPY, writes
 * every record again through kp_writer_add (so samples and VM exits into
 * today's SAMPLES blocks; kallsyms through kp_writer_ksyms, compressed as
 * the recorders write it). For the sample-format figures of docs/benchmarks.md:
 * the reading alone, under callgrind or timed, of one recording in the
 * format before and after. Only the public reader and writer API, so it
 * also builds against an older tree's lib/format/sample_file.c (in a tree
 * from before lib/ had folders, lib/sample_file.c: put its sample_file.h in a
 * folder format/ on the include path).
 */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "format/sample_file.h"

int main(int argc, char **argv)
{
	struct kp_writer *w = NULL;
	struct kp_reader *r;
	struct kp_record rec;
	unsigned long long records = 0, samples = 0, frames = 0;
	char err[512];
	int rc, fd = -1;

	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: read-samples FILE [COPY]\n");
		return 2;
	}
	if (kp_reader_open(&r, argv[1], err, sizeof(err))) {
		fprintf(stderr, "read-samples: %s\n", err);
		return 1;
	}
	if (argc == 3) {
		fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || kp_writer_open(&w, fd, kp_reader_header(r)->source)) {
			perror(argv[2]);
			return 1;
		}
	}
	while ((rc = kp_reader_next(r, &rec, err, sizeof(err))) == 1) {
		records++;
		if (rec.type == KP_REC_SAMPLE) {
			samples++;
			frames += rec.sample->nr_callchain;
		}
		/* kallsyms compressed again, as the recorders write it (the reader hands it out inflated). */
		if (w && (rec.type == KP_REC_KSYMS ? kp_writer_ksyms(w, rec.ksyms->text, rec.ksyms->len)
						   : kp_writer_add(w, rec.type, rec.payload, rec.payload_len))) {
			fprintf(stderr, "read-samples: %s: write error\n", argv[2]);
			return 1;
		}
	}
	if (rc < 0) {
		fprintf(stderr, "read-samples: %s\n", err);
		return 1;
	}
	if (w && (kp_writer_close(w, rec.end->lost, rec.end->duration_ns) || close(fd))) {
		fprintf(stderr, "read-samples: %s: write error\n", argv[2]);
		return 1;
	}
	printf("%llu records, %llu samples, %llu caller frames\n", records, samples, frames);
	kp_reader_close(r);
	return 0;
}
