// SPDX-License-Identifier: MIT
/*
 * exit_check FILE: the VM_EXIT records of a `kvmprof record` file, through
 * the one reader (lib/format/sample_file.c), checked beyond what the reader checks:
 * each has its vCPU thread, and one vCPU's exits follow one another (an
 * exit's interval ends before the vCPU's next exit begins). Prints one line
 * per kind and detail, "exit KIND DETAIL N" (KIND as in enum kp_exit_kind,
 * DETAIL in hex), then "check: ok exits=N vcpus=N named=N stacks=N": the
 * vCPUs that had exits, the exits attributed to a guest process (pid not
 * 0) and those with a guest call chain. Exit 0, or 1 with "check: FAIL ..." on stderr.
 *
 * Built by make (tests/tests.mk), linked with libkvmprof.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "format/sample_file.h"

#define MAX_KEYS 4096
#define MAX_VCPUS 64

struct key {
	unsigned int kind;
	uint64_t detail;
	unsigned long n;
};

static struct key keys[MAX_KEYS];
static int nkeys;

#define FAIL(...) (fprintf(stderr, "check: FAIL "), fprintf(stderr, __VA_ARGS__), fputc('\n', stderr), 1)

static int count(unsigned int kind, uint64_t detail)
{
	for (int i = 0; i < nkeys; i++) {
		if (keys[i].kind == kind && keys[i].detail == detail) {
			keys[i].n++;
			return 0;
		}
	}
	if (nkeys == MAX_KEYS)
		return -1;
	keys[nkeys++] = (struct key){ kind, detail, 1 };
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t last_end[MAX_VCPUS] = { 0 };
	unsigned long total = 0, named = 0, stacks = 0;
	unsigned int vcpus = 0;
	struct kp_reader *r;
	struct kp_record rec;
	char err[512];
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: exit_check FILE\n");
		return 2;
	}
	if (kp_reader_open(&r, argv[1], err, sizeof(err))) {
		fprintf(stderr, "check: FAIL %s\n", err);
		return 1;
	}
	while ((rc = kp_reader_next(r, &rec, err, sizeof(err))) == 1) {
		const struct kp_rec_vm_exit *x = rec.vm_exit;

		if (rec.type != KP_REC_VM_EXIT)
			continue;
		if (x->cpu >= MAX_VCPUS)
			return FAIL("offset %llu: vCPU %u", (unsigned long long)rec.offset, x->cpu);
		if (!x->host_tid)
			return FAIL("offset %llu: no vCPU thread", (unsigned long long)rec.offset);
		if (x->time < last_end[x->cpu])
			return FAIL("offset %llu: vCPU %u's exit at %llu begins before its previous one ended (%llu)",
				    (unsigned long long)rec.offset, x->cpu, (unsigned long long)x->time,
				    (unsigned long long)last_end[x->cpu]);
		if (!last_end[x->cpu])
			vcpus++;
		last_end[x->cpu] = x->end;
		if (count(x->kind, x->detail))
			return FAIL("more than %d kinds of exits", MAX_KEYS);
		total++;
		named += x->pid != 0;
		stacks += x->nr_callchain != 0;
	}
	kp_reader_close(r);
	if (rc < 0)
		return FAIL("%s", err);
	for (int i = 0; i < nkeys; i++)
		printf("exit %u %llx %lu\n", keys[i].kind, (unsigned long long)keys[i].detail, keys[i].n);
	printf("check: ok exits=%lu vcpus=%u named=%lu stacks=%lu\n", total, vcpus, named, stacks);
	return 0;
}
