// SPDX-License-Identifier: MIT
/* The trace file reader: nothing it hands out is unchecked. */
#include <stdarg.h>
#include <string.h>

#include "common/trace_event_table.h"
#include "format/trace_read.h"

/* The most vCPUs a header may claim: far above any VMM's, low enough to catch garbage. */
#define TRACE_READ_MAX_CPUS 4096

__attribute__((format(printf, 4, 5)))
static int fail(const struct trace_reader *r, uint64_t offset, char err[TRACE_READ_ERR_MAX], const char *fmt, ...)
{
	char what[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(err, TRACE_READ_ERR_MAX, "%s: offset %llu: %s", r->path, (unsigned long long)offset, what);
	return -1;
}

int trace_read_open(struct trace_reader *r, FILE *f, const char *path, char err[TRACE_READ_ERR_MAX])
{
	struct kvmprof_trace_header *h = &r->header;
	size_t n;

	*r = (struct trace_reader){ .f = f, .path = path };
	n = fread(h, 1, sizeof(*h), f);
	if (n != sizeof(*h))
		return fail(r, n, err, "truncated header (%zu of %zu bytes)", n, sizeof(*h));
	if (memcmp(h->magic, KVMPROF_TRACE_MAGIC, sizeof(h->magic)))
		return fail(r, 0, err, "not a kvmprof trace file (bad magic)");
	if (h->version != KVMPROF_TRACE_VERSION)
		return fail(r, 8, err, "trace format version %u, this kvmprof reads version %u", h->version,
			    KVMPROF_TRACE_VERSION);
	if (h->record_size != sizeof(struct kvmprof_trace_record))
		return fail(r, 12, err, "record size %u, expected %zu", h->record_size,
			    sizeof(struct kvmprof_trace_record));
	if (h->event_count == 0 || h->event_count > UINT16_MAX)
		return fail(r, 16, err, "event count %u out of range", h->event_count);
	if (h->ncpus == 0 || h->ncpus > TRACE_READ_MAX_CPUS)
		return fail(r, 20, err, "vCPU count %u out of range", h->ncpus);
	r->offset = sizeof(*h);
	return 0;
}

static int read_trailer(struct trace_reader *r, const uint8_t *first, size_t have, char err[TRACE_READ_ERR_MAX])
{
	struct kvmprof_trace_trailer *t = &r->trailer;
	uint8_t buf[sizeof(*t)];
	size_t n, extra = have > sizeof(buf) ? have - sizeof(buf) : 0;

	/* The record-sized read may hold the trailer and more: anything past it is damage. */
	n = have - extra;
	memcpy(buf, first, n);
	n += fread(buf + n, 1, sizeof(buf) - n, r->f);
	if (n != sizeof(buf))
		return fail(r, r->offset, err, "truncated trailer (%zu of %zu bytes)", n, sizeof(buf));
	memcpy(t, buf, sizeof(*t));
	if (t->reserved)
		return fail(r, r->offset, err, "trailer: reserved field not zero");
	if (t->records != r->records)
		return fail(r, r->offset, err, "trailer counts %llu records, the file holds %llu",
			    (unsigned long long)t->records, (unsigned long long)r->records);
	if (extra || fgetc(r->f) != EOF)
		return fail(r, r->offset + sizeof(*t), err, "data after the trailer");
	return 0;
}

int trace_read_next(struct trace_reader *r, struct kvmprof_trace_record *rec, char err[TRACE_READ_ERR_MAX])
{
	uint8_t buf[sizeof(*rec)];
	const struct trace_event_info *e;
	uint32_t first;
	size_t n = fread(buf, 1, sizeof(buf), r->f);

	if (n == 0)
		return fail(r, r->offset, err, "no trailer: the file was not finished (VMM killed, or disk full)");
	if (n >= sizeof(first)) {
		memcpy(&first, buf, sizeof(first));
		if (first == KVMPROF_TRACE_END_MAGIC)
			return read_trailer(r, buf, n, err) ? -1 : 0;
	}
	if (n != sizeof(buf))
		return fail(r, r->offset, err, "truncated record (%zu of %zu bytes)", n, sizeof(buf));
	memcpy(rec, buf, sizeof(*rec));
	e = rec->event < r->header.event_count ? trace_event_info(rec->event) : NULL;
	if (!e)
		return fail(r, r->offset, err, "unknown event id %u", rec->event);
	if (rec->nargs != e->nargs)
		return fail(r, r->offset, err, "%s record with %u arguments, the event has %u", e->name, rec->nargs,
			    e->nargs);
	if (rec->vcpu != KVMPROF_TRACE_NO_VCPU && rec->vcpu >= r->header.ncpus)
		return fail(r, r->offset, err, "vCPU %u, the header says %u vCPUs", rec->vcpu, r->header.ncpus);
	r->offset += sizeof(buf);
	r->records++;
	return 1;
}
