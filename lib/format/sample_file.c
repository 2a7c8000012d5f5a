// SPDX-License-Identifier: MIT
/*
 * Sample-file reader and writer. The reader is the gate between untrusted
 * bytes (a file, or whatever a guest sent down a serial line) and the
 * report code: everything it returns has been checked against the record
 * that carries it, so the consumers only need to handle absurd values, not
 * out-of-bounds ones.
 */
#include "format/sample_file.h"
#include "kvmprof/sample_block.h"

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <libdeflate.h>
#include <zlib.h>

#define WRITER_BUF (256 * 1024)

struct kp_writer {
	int fd;
	size_t used;
	uint64_t records, samples, bytes;
	unsigned ksyms_seq;
	bool waiting;        /* kp_writer_flush_aged saw records not yet written, at waiting_since */
	uint64_t waiting_since;
	struct kp_sample_block block; /* samples since the last other record, flush or full block */
	unsigned char buf[WRITER_BUF];
};

uint32_t kp_crc32(uint32_t crc, const void *buf, size_t len)
{
	/*
	 * libdeflate's CRC-32 is zlib's value, computed with carry-less
	 * multiplication (PCLMULQDQ) where the CPU has it: several times
	 * zlib's speed, and every record of a file is checked on read.
	 */
	return libdeflate_crc32(crc, buf, len);
}

static int write_all(int fd, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Writes out the buffer: the records added so far, except the open block. */
static int write_buf(struct kp_writer *w)
{
	int ret = write_all(w->fd, w->buf, w->used);

	w->used = 0;
	return ret;
}

static int close_block(struct kp_writer *w);

int kp_writer_flush(struct kp_writer *w)
{
	int ret = close_block(w);

	w->waiting = false;
	return ret ? ret : write_buf(w);
}

int kp_writer_flush_aged(struct kp_writer *w, uint64_t now_ns, uint64_t max_age_ns, uint64_t *wait_ns)
{
	if (wait_ns)
		*wait_ns = UINT64_MAX;
	if (!w->used && !kp_sample_block_count(&w->block)) {
		w->waiting = false; /* what waited went out as the buffer filled */
		return 0;
	}
	if (!w->waiting) {
		w->waiting = true;
		w->waiting_since = now_ns;
	}
	if (now_ns - w->waiting_since >= max_age_ns)
		return kp_writer_flush(w);
	if (wait_ns)
		*wait_ns = max_age_ns - (now_ns - w->waiting_since);
	return 0;
}

int kp_writer_open(struct kp_writer **out, int fd, enum kp_source source)
{
	struct kp_writer *w = calloc(1, sizeof(*w));
	struct kp_file_header h = {
		.version_major = KP_FILE_VERSION_MAJOR,
		.version_minor = KP_FILE_VERSION_MINOR,
		.header_size = sizeof(h),
		.source = source,
	};
	int ret;

	if (!w)
		return -ENOMEM;
	memcpy(h.magic, KP_FILE_MAGIC, sizeof(h.magic));
	w->fd = fd;
	kp_sample_block_init(&w->block);
	ret = write_all(fd, &h, sizeof(h));
	if (ret) {
		free(w);
		return ret;
	}
	w->bytes = sizeof(h);
	*out = w;
	return 0;
}

/* One record as it is given, after whatever the buffer holds. */
static int write_record(struct kp_writer *w, uint32_t type, const void *payload, size_t len)
{
	static const unsigned char zeros[8];
	size_t padded = (len + 7) & ~(size_t)7;
	struct kp_rec_header h;
	uint32_t crc;
	int ret;

	if (len > KP_REC_MAX_SIZE - sizeof(h))
		return -E2BIG;
	h = (struct kp_rec_header){ .type = type, .size = (uint32_t)(sizeof(h) + padded) };
	crc = kp_crc32(0, &h, 8); /* type and size */
	crc = kp_crc32(crc, payload, len);
	h.crc = kp_crc32(crc, zeros, padded - len);
	if (w->used + h.size > sizeof(w->buf)) {
		ret = write_buf(w);
		if (ret)
			return ret;
	}
	if (h.size > sizeof(w->buf)) {
		/* Bigger than the buffer (a large KSYMS chunk): straight through. */
		ret = write_all(w->fd, &h, sizeof(h));
		if (!ret)
			ret = write_all(w->fd, payload, len);
		if (!ret)
			ret = write_all(w->fd, zeros, padded - len);
		if (ret)
			return ret;
	} else {
		memcpy(w->buf + w->used, &h, sizeof(h));
		memcpy(w->buf + w->used + sizeof(h), payload, len);
		memset(w->buf + w->used + sizeof(h) + len, 0, padded - len);
		w->used += h.size;
	}
	w->records++;
	w->bytes += h.size;
	return 0;
}

/* The open block of samples becomes a SAMPLES record: before any other record, and when it is full. */
static int close_block(struct kp_writer *w)
{
	int ret;

	if (!kp_sample_block_count(&w->block))
		return 0;
	ret = write_record(w, KP_REC_SAMPLES, &w->block.payload, kp_sample_block_len(&w->block));
	/* END counts the records a reader hands out: each sample of the block. */
	if (!ret)
		w->records += kp_sample_block_count(&w->block) - 1;
	kp_sample_block_clear(&w->block);
	return ret;
}

/*
 * Samples go into the open block, coded against the one before; the rare
 * sample the compact form cannot hold exactly stays a SAMPLE record.
 */
int kp_writer_add(struct kp_writer *w, uint32_t type, const void *payload, size_t len)
{
	int ret;

	if (len > KP_REC_MAX_SIZE - sizeof(struct kp_rec_header))
		return -E2BIG;
	if (type == KP_REC_SAMPLE && kp_sample_encodable(payload, len)) {
		w->samples++;
		return kp_sample_block_add(&w->block, payload) ? close_block(w) : 0;
	}
	/* A VM exit comes with every guest sample of a recording of a VM: one record each was a third of a report's reading. */
	if (type == KP_REC_VM_EXIT && kp_exit_encodable(payload, len))
		return kp_sample_block_add_exit(&w->block, payload) ? close_block(w) : 0;
	ret = close_block(w);
	if (!ret)
		ret = write_record(w, type, payload, len);
	if (!ret && type == KP_REC_SAMPLE)
		w->samples++;
	return ret;
}

int kp_writer_add_raw(struct kp_writer *w, const void *rec)
{
	struct kp_rec_header h;
	int ret;

	memcpy(&h, rec, sizeof(h));
	if (h.size < sizeof(h) || h.size > KP_REC_MAX_SIZE || h.size % 8)
		return -EINVAL;
	/* The VMM's guest samples and exits: compacted as any other (their CRC was checked by kp_record_check). */
	if (h.type == KP_REC_SAMPLE || h.type == KP_REC_VM_EXIT)
		return kp_writer_add(w, h.type, (const unsigned char *)rec + sizeof(h), h.size - sizeof(h));
	ret = close_block(w);
	if (ret)
		return ret;
	if (w->used + h.size > sizeof(w->buf)) {
		ret = write_buf(w);
		if (ret)
			return ret;
	}
	if (h.size > sizeof(w->buf)) {
		ret = write_all(w->fd, rec, h.size);
		if (ret)
			return ret;
	} else {
		memcpy(w->buf + w->used, rec, h.size);
		w->used += h.size;
	}
	w->records++;
	w->bytes += h.size;
	return 0;
}

int kp_writer_meta(struct kp_writer *w, const char *key, const char *value)
{
	char text[KP_META_MAX];
	int n = snprintf(text, sizeof(text), "%s=%s", key, value);

	if (n < 0 || (size_t)n >= sizeof(text))
		return -E2BIG;
	return kp_writer_add(w, KP_REC_META, text, (size_t)n + 1);
}

int kp_writer_meta_u64(struct kp_writer *w, const char *key, uint64_t value)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%" PRIu64, value);
	return kp_writer_meta(w, key, buf);
}

int kp_writer_ksyms(struct kp_writer *w, const char *text, size_t len)
{
	uLongf bound = compressBound(KP_KSYMS_CHUNK_MAX);
	unsigned char *rec = malloc(sizeof(struct kp_rec_ksyms_z) + bound);
	int ret = 0;

	if (!rec)
		return -ENOMEM;
	while (len && !ret) {
		size_t n = len < KP_KSYMS_CHUNK_MAX ? len : KP_KSYMS_CHUNK_MAX;
		struct kp_rec_ksyms_z hdr;
		uLongf zlen = bound;

		/* Cut at a line end so every chunk parses on its own. */
		if (n < len) {
			const char *nl = memrchr(text, '\n', n);
			if (nl)
				n = (size_t)(nl - text) + 1;
		}
		if (compress2(rec + sizeof(hdr), &zlen, (const Bytef *)text, (uLong)n, 6) != Z_OK) {
			ret = -ENOMEM;
			break;
		}
		hdr = (struct kp_rec_ksyms_z){ .seq = w->ksyms_seq++, .len = (uint32_t)zlen, .raw_len = (uint32_t)n };
		memcpy(rec, &hdr, sizeof(hdr));
		ret = kp_writer_add(w, KP_REC_KSYMS_Z, rec, sizeof(hdr) + zlen);
		text += n;
		len -= n;
	}
	free(rec);
	return ret;
}

uint64_t kp_writer_samples(const struct kp_writer *w)
{
	return w->samples;
}

uint64_t kp_writer_bytes(const struct kp_writer *w)
{
	return w->bytes;
}

int kp_writer_close(struct kp_writer *w, uint64_t lost, uint64_t duration_ns)
{
	int ret = close_block(w); /* first: END counts its samples */
	struct kp_rec_end end = {
		.samples = w->samples,
		.lost = lost,
		.records = w->records,
		.duration_ns = duration_ns,
	};

	if (!ret)
		ret = kp_writer_add(w, KP_REC_END, &end, sizeof(end));

	if (!ret)
		ret = kp_writer_flush(w);
	free(w);
	return ret;
}

void kp_writer_abort(struct kp_writer *w)
{
	free(w);
}

/* ---- reader ------------------------------------------------------------ */

struct kp_reader {
	FILE *f;
	bool own;
	char *path;
	uint64_t offset;
	uint64_t records, samples;
	uint32_t ksyms_seq;
	bool ended;
	bool recover;
	uint64_t pos; /* bytes consumed from the stream */
	struct kp_reader_damage damage;
	struct kp_file_header header;
	unsigned char *payload;
	unsigned char *inflated; /* a KSYMS_Z chunk, handed out as KSYMS */
	struct libdeflate_decompressor *inflater;
	/* A SAMPLES block, decoded whole (so that damage anywhere in it stops the stream before it), handed out one by one. */
	unsigned char *expanded; /* its SAMPLE and VM_EXIT payloads back to back, each after a struct expanded_entry */
	size_t expanded_at;      /* the next one */
	uint32_t expanded_left;  /* entries not handed out yet */
	uint64_t block_end;      /* the stream offset after the block: r->offset once all are out */
	struct kp_sample_coder *coder; /* the last coded sample of the blocks read so far */
};

/* What an entry of r->expanded is; its payload follows (8-byte aligned). */
struct expanded_entry {
	uint32_t type; /* KP_REC_SAMPLE or KP_REC_VM_EXIT */
	uint32_t len;
};

/* Room for a whole block: KP_SAMPLES_MAX exits (the larger) with the longest chains. */
#define EXPANDED_MAX                                                                                       \
	(KP_SAMPLES_MAX * (sizeof(struct expanded_entry) + sizeof(struct kp_rec_vm_exit) +                 \
			   KP_CALLCHAIN_MAX * sizeof(uint64_t)))

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (err && errlen)
		vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Reads exactly len bytes: 1, 0 at a clean end of file before any byte, -1 on a short read or error. */
static int read_exact(FILE *f, void *buf, size_t len)
{
	size_t n = fread(buf, 1, len, f);

	if (n == len)
		return 1;
	return n == 0 && !ferror(f) ? 0 : -1;
}

int kp_reader_open(struct kp_reader **out, const char *path, char *err, size_t errlen)
{
	struct kp_reader *r = calloc(1, sizeof(*r));
	int rc;

	if (!r)
		return -ENOMEM;
	r->path = strdup(path);
	r->payload = malloc(KP_REC_MAX_SIZE);
	r->inflated = malloc(sizeof(struct kp_rec_ksyms) + KP_KSYMS_CHUNK_MAX);
	r->inflater = libdeflate_alloc_decompressor();
	if (!r->path || !r->payload || !r->inflated || !r->inflater) {
		kp_reader_close(r);
		return -ENOMEM;
	}
	if (strcmp(path, "-") == 0) {
		r->f = stdin;
	} else {
		r->f = fopen(path, "rb");
		if (!r->f) {
			int e = errno;
			snprintf(err, errlen, "%s: %s", path, strerror(e));
			kp_reader_close(r);
			return -e;
		}
		r->own = true;
		/* Fewer, larger read(2)s than stdio's 4 KiB for files of tens of MB. */
		setvbuf(r->f, NULL, _IOFBF, 1 << 20);
	}
	rc = read_exact(r->f, &r->header, sizeof(r->header));
	if (rc <= 0) {
		rc = fail(err, errlen, "%s: %s", path, rc == 0 ? "empty file, not a kvmprof sample file" :
				"too short for a kvmprof sample file header");
		goto out_fail;
	}
	if (memcmp(r->header.magic, KP_FILE_MAGIC, sizeof(r->header.magic)) != 0) {
		rc = fail(err, errlen, "%s: not a kvmprof sample file (bad magic)", path);
		goto out_fail;
	}
	if (r->header.version_major != KP_FILE_VERSION_MAJOR) {
		rc = fail(err, errlen, "%s: sample file version %u.%u, this build reads version %u.x", path,
			  r->header.version_major, r->header.version_minor, KP_FILE_VERSION_MAJOR);
		goto out_fail;
	}
	if (r->header.header_size < sizeof(r->header) || r->header.header_size > 4096 ||
	    r->header.header_size % 8) {
		rc = fail(err, errlen, "%s: corrupt file header (header size %u)", path, r->header.header_size);
		goto out_fail;
	}
	/* A newer minor version may have a longer header: skip what we don't know. */
	for (uint32_t skip = r->header.header_size - (uint32_t)sizeof(r->header); skip; skip--) {
		if (fgetc(r->f) == EOF) {
			rc = fail(err, errlen, "%s: truncated file header", path);
			goto out_fail;
		}
	}
	r->offset = r->pos = r->header.header_size;
	*out = r;
	return 0;
out_fail:
	kp_reader_close(r);
	return rc;
}

const struct kp_file_header *kp_reader_header(const struct kp_reader *r)
{
	return &r->header;
}

uint64_t kp_reader_offset(const struct kp_reader *r)
{
	return r->offset;
}

/* A string field of `cap` bytes (or up to the payload end) must hold its NUL. */
static bool has_nul(const char *s, size_t cap)
{
	return memchr(s, '\0', cap) != NULL;
}

/* Checks the contents of a record that needs no stream state against its own size. */
static const char *check_payload(uint32_t type, const unsigned char *p, uint32_t len)
{
	switch (type) {
	case KP_REC_META:
		if (len == 0 || !has_nul((const char *)p, len) || !strchr((const char *)p, '='))
			return "META record is not a NUL-terminated key=value";
		return NULL;
	case KP_REC_EVENT: {
		const struct kp_rec_event *e = (const void *)p;
		if (len < sizeof(*e))
			return "EVENT record too short";
		if (!has_nul(e->name, sizeof(e->name)))
			return "EVENT name not terminated";
		return NULL;
	}
	case KP_REC_COMM: {
		const struct kp_rec_comm *c = (const void *)p;
		if (len < sizeof(*c))
			return "COMM record too short";
		if (!has_nul(c->comm, sizeof(c->comm)))
			return "COMM name not terminated";
		return NULL;
	}
	case KP_REC_MMAP: {
		const struct kp_rec_mmap *m = (const void *)p;
		size_t cap = len - sizeof(*m);
		if (len <= sizeof(*m))
			return "MMAP record too short";
		if (!has_nul(m->filename, cap < KP_PATH_MAX ? cap : KP_PATH_MAX))
			return "MMAP file name not terminated";
		if (m->build_id_size > KP_BUILD_ID_MAX)
			return "MMAP build-id longer than 20 bytes";
		if (m->domain > KP_DOMAIN_GUEST)
			return "MMAP domain is neither native (0) nor guest (1)";
		return NULL;
	}
	case KP_REC_FORK:
	case KP_REC_EXIT:
		return len < sizeof(struct kp_rec_task) ? "FORK/EXIT record too short" : NULL;
	case KP_REC_SAMPLE: {
		const struct kp_rec_sample *s = (const void *)p;
		if (len < sizeof(*s))
			return "SAMPLE record too short";
		if (s->nr_callchain > KP_CALLCHAIN_MAX)
			return "SAMPLE callchain longer than the format allows";
		if (len < sizeof(*s) + (size_t)s->nr_callchain * sizeof(uint64_t))
			return "SAMPLE callchain runs past its record";
		if (s->cpl != KP_CPL_KERNEL && s->cpl != KP_CPL_USER)
			return "SAMPLE privilege level is neither kernel (0) nor user (3)";
		if (s->domain > KP_DOMAIN_GUEST)
			return "SAMPLE domain is neither native (0) nor guest (1)";
		return NULL;
	}
	case KP_REC_LOST:
		return len < sizeof(struct kp_rec_lost) ? "LOST record too short" : NULL;
	case KP_REC_USER_STACK: {
		const struct kp_rec_user_stack *u = (const void *)p;
		if (len < sizeof(*u))
			return "USER_STACK record too short";
		if (u->size > KP_USER_STACK_MAX)
			return "USER_STACK copy larger than the format allows";
		if (len < sizeof(*u) + u->size)
			return "USER_STACK copy runs past its record";
		if (u->reserved)
			return "USER_STACK reserved word set";
		return NULL;
	}
	case KP_REC_VM_EXIT: {
		const struct kp_rec_vm_exit *x = (const void *)p;
		if (len < sizeof(*x))
			return "VM_EXIT record too short";
		if (x->nr_callchain > KP_CALLCHAIN_MAX)
			return "VM_EXIT callchain longer than the format allows";
		if (len < sizeof(*x) + (size_t)x->nr_callchain * sizeof(uint64_t))
			return "VM_EXIT callchain runs past its record";
		if (x->kind > KP_EXIT_KIND_MAX)
			return "VM_EXIT kind unknown";
		if (x->cpl != KP_CPL_KERNEL && x->cpl != KP_CPL_USER)
			return "VM_EXIT privilege level is neither kernel (0) nor user (3)";
		if (x->end < x->time)
			return "VM_EXIT interval ends before it starts";
		if (x->reserved || x->reserved2)
			return "VM_EXIT reserved field set";
		return NULL;
	}
	case KP_REC_TASK_LAYOUT: {
		const struct kp_rec_task_layout *l = (const void *)p;
		if (len < sizeof(*l))
			return "TASK_LAYOUT record too short";
		if (l->reserved)
			return "TASK_LAYOUT reserved word set";
		/* Another kind is a newer writer's: its consumer checks it. The fields must fit the structure. */
		if (l->task_comm_size < 1 || l->task_comm_size > KP_LAYOUT_COMM_MAX ||
		    l->task_pid > l->task_size || l->task_size - l->task_pid < 4 ||
		    l->task_tgid > l->task_size || l->task_size - l->task_tgid < 4 ||
		    l->task_comm > l->task_size || l->task_size - l->task_comm < l->task_comm_size)
			return "TASK_LAYOUT fields lie outside the task structure";
		return NULL;
	}
	}
	return NULL;
}

/* Decodes a SAMPLES block into r->expanded, checking every sample and exit as its own record is checked. */
static const char *expand_block(struct kp_reader *r, const unsigned char *p, uint32_t len)
{
	const struct kp_rec_samples *b = (const void *)p;
	const unsigned char *data = b->data;
	size_t at = 0, out = 0;
	uint32_t samples = 0;

	if (len < sizeof(*b) || b->len > len - sizeof(*b))
		return "SAMPLES block runs past its record";
	if (len - sizeof(*b) - b->len >= 8)
		return "SAMPLES block has bytes after its data beyond the padding";
	for (uint32_t i = sizeof(*b) + b->len; i < len; i++)
		if (p[i])
			return "SAMPLES block padding not zero";
	if (b->count < 1 || b->count > KP_SAMPLES_MAX)
		return "SAMPLES block count out of range";
	if (!r->expanded) {
		r->expanded = malloc(EXPANDED_MAX);
		r->coder = malloc(sizeof(*r->coder));
		if (!r->expanded || !r->coder)
			return "out of memory for a SAMPLES block";
		kp_sample_coder_reset(r->coder); /* the stream's first block: blocks go on from each other */
	}
	for (uint32_t i = 0; i < b->count; i++) {
		struct expanded_entry *e = (void *)(r->expanded + out);
		size_t n;

		if (at < b->len && data[at] & KP_XC_EXIT) {
			struct kp_rec_vm_exit *x = (void *)(e + 1);

			if (r->header.version_minor < 7)
				return "SAMPLES block holds a VM exit, which a version 1.6 file cannot";
			if (!(n = kp_exit_decode(r->coder, data + at, b->len - at, x)))
				return "SAMPLES block holds a VM exit that does not decode";
			*e = (struct expanded_entry){ KP_REC_VM_EXIT, (uint32_t)(sizeof(*x) + x->nr_callchain * sizeof(uint64_t)) };
		} else {
			struct kp_rec_sample *s = (void *)(e + 1);

			if (!(n = kp_sample_decode(r->coder, data + at, b->len - at, s)))
				return "SAMPLES block holds a sample that does not decode";
			*e = (struct expanded_entry){ KP_REC_SAMPLE, (uint32_t)(sizeof(*s) + s->nr_callchain * sizeof(uint64_t)) };
			samples++;
		}
		at += n;
		out += sizeof(*e) + e->len;
	}
	if (at != b->len)
		return "SAMPLES block has bytes after its last entry";
	r->expanded_at = 0;
	r->expanded_left = b->count;
	r->samples += samples;
	return NULL;
}

/* Checks one record's contents against its own size. NULL if fine, else what is wrong. */
static const char *check_record(struct kp_reader *r, uint32_t type, const unsigned char *p, uint32_t len)
{
	const char *bad;

	switch (type) {
	case KP_REC_KSYMS: {
		const struct kp_rec_ksyms *k = (const void *)p;
		if (len < sizeof(*k) || k->len > len - sizeof(*k))
			return "KSYMS chunk runs past its record";
		if (k->seq != r->ksyms_seq)
			return "KSYMS chunks out of order";
		r->ksyms_seq++;
		return NULL;
	}
	case KP_REC_KSYMS_Z: {
		const struct kp_rec_ksyms_z *k = (const void *)p;
		struct kp_rec_ksyms out;
		size_t raw;
		if (len < sizeof(*k) || k->len > len - sizeof(*k))
			return "KSYMS_Z chunk runs past its record";
		if (k->raw_len > KP_KSYMS_CHUNK_MAX)
			return "KSYMS_Z chunk inflates beyond the format's chunk size";
		if (k->seq != r->ksyms_seq)
			return "KSYMS chunks out of order";
		/*
		 * The writer's zlib streams, inflated by libdeflate (its
		 * Adler-32 checked too): the whole kallsyms is read on every
		 * report, and zlib's inflate was a tenth of a report's time.
		 */
		if (libdeflate_zlib_decompress(r->inflater, k->data, k->len, r->inflated + sizeof(out), k->raw_len,
					       &raw) != LIBDEFLATE_SUCCESS ||
		    raw != k->raw_len)
			return "KSYMS_Z chunk does not inflate to its stated size";
		out = (struct kp_rec_ksyms){ .seq = k->seq, .len = k->raw_len };
		memcpy(r->inflated, &out, sizeof(out));
		r->ksyms_seq++;
		return NULL;
	}
	case KP_REC_SAMPLES:
		return expand_block(r, p, len);
	case KP_REC_END: {
		const struct kp_rec_end *e = (const void *)p;
		if (len < sizeof(*e))
			return "END record too short";
		if (e->records != r->records || e->samples != r->samples)
			return "END record's counts disagree with the records read (records lost in transit)";
		return NULL;
	}
	}
	bad = check_payload(type, p, len);
	if (!bad && type == KP_REC_SAMPLE)
		r->samples++;
	return bad;
}

const char *kp_record_check(const void *rec, size_t avail)
{
	struct kp_rec_header h;

	if (avail < sizeof(h))
		return "record header cut short";
	memcpy(&h, rec, sizeof(h));
	if (h.size < sizeof(h) || h.size > KP_REC_MAX_SIZE || h.size % 8)
		return "corrupt record size";
	if (h.size > avail)
		return "record runs past the bytes available";
	if (h.reserved != 0)
		return "corrupt record header (reserved word set)";
	switch (h.type) {
	case KP_REC_META: case KP_REC_EVENT: case KP_REC_COMM: case KP_REC_MMAP:
	case KP_REC_FORK: case KP_REC_EXIT: case KP_REC_SAMPLE: case KP_REC_LOST: case KP_REC_VM_EXIT:
		break;
	default:
		return "record type not allowed in a copied stream";
	}
	if (kp_crc32(kp_crc32(0, &h, 8), (const unsigned char *)rec + sizeof(h), h.size - sizeof(h)) != h.crc)
		return "corrupt record (CRC mismatch)";
	return check_payload(h.type, (const unsigned char *)rec + sizeof(h), h.size - (uint32_t)sizeof(h));
}

/* Reads exactly len bytes of the stream, counting them: as read_exact. */
static int read_stream(struct kp_reader *r, void *buf, size_t len)
{
	/* Two reads a record, a million records a report: no stdio lock each time (one reader per FILE). */
	size_t n = fread_unlocked(buf, 1, len, r->f);

	r->pos += n;
	if (n == len)
		return 1;
	return n == 0 && !ferror(r->f) ? 0 : -1;
}

/* Bytes left in the stream from where the reader stands, read to the end. */
static uint64_t drain(struct kp_reader *r)
{
	unsigned char buf[65536];
	uint64_t n = 0;
	size_t got;

	while ((got = fread(buf, 1, sizeof(buf), r->f)) > 0)
		n += got;
	return n;
}

/*
 * Damage at r->offset: fails the stream (-EBADMSG, message in err), or in
 * recovery mode ends it there and records what was lost (returns 0).
 */
static int damaged(struct kp_reader *r, struct kp_record *rec, bool end_missing, char *err, size_t errlen,
		   const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static int damaged(struct kp_reader *r, struct kp_record *rec, bool end_missing, char *err, size_t errlen,
		   const char *fmt, ...)
{
	struct kp_reader_damage *d = &r->damage;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(d->what, sizeof(d->what), fmt, ap);
	va_end(ap);
	if (!r->recover) {
		if (err && errlen)
			snprintf(err, errlen, "%s: offset %llu: %s", r->path, (unsigned long long)r->offset, d->what);
		return -EBADMSG;
	}
	d->damaged = true;
	d->end_missing = end_missing;
	d->offset = r->offset;
	d->records = r->records;
	d->samples = r->samples;
	d->skipped = r->pos - r->offset + drain(r);
	r->ended = true;
	if (end_missing)
		rec->type = 0;
	return 0;
}

void kp_reader_recover(struct kp_reader *r)
{
	r->recover = true;
}

const struct kp_reader_damage *kp_reader_damage(const struct kp_reader *r)
{
	return r->damage.damaged ? &r->damage : NULL;
}

void kp_reader_damage_describe(const struct kp_reader_damage *d, const char *path, char *buf, size_t len)
{
	snprintf(buf, len, "%s: read %llu intact records (%llu samples); at offset %llu: %s; %llu bytes from there "
		 "on not used%s", path, (unsigned long long)d->records, (unsigned long long)d->samples,
		 (unsigned long long)d->offset, d->what, (unsigned long long)d->skipped,
		 d->end_missing ? "; no valid END record, so the recording's lost count and duration are unknown" : "");
}

/* The next sample or exit of the block being handed out. */
static int next_expanded(struct kp_reader *r, struct kp_record *rec)
{
	const struct expanded_entry *e = (const void *)(r->expanded + r->expanded_at);

	rec->type = e->type;
	rec->payload_len = e->len;
	rec->offset = r->offset;
	rec->payload = (const void *)(e + 1);
	r->expanded_at += sizeof(*e) + e->len;
	if (--r->expanded_left == 0)
		r->offset = r->block_end;
	return 1;
}

int kp_reader_next(struct kp_reader *r, struct kp_record *rec, char *err, size_t errlen)
{
	if (r->expanded_left)
		return next_expanded(r, rec);
	for (;;) {
		struct kp_rec_header h;
		uint32_t len;
		const char *bad;
		int rc;

		if (r->ended)
			return 0;
		rc = read_stream(r, &h, sizeof(h));
		if (rc == 0)
			return damaged(r, rec, true, err, errlen, "truncated: the stream ends without an END "
				       "record (the recording was cut short)");
		if (rc < 0)
			return damaged(r, rec, true, err, errlen, "truncated record header");
		if (h.size < sizeof(h) || h.size > KP_REC_MAX_SIZE || h.size % 8)
			return damaged(r, rec, true, err, errlen, "corrupt record (size %u)", h.size);
		len = h.size - (uint32_t)sizeof(h);
		if (read_stream(r, r->payload, len) != 1)
			return damaged(r, rec, true, err, errlen, "truncated record (%u bytes announced)", h.size);
		if (h.reserved != 0)
			return damaged(r, rec, true, err, errlen, "corrupt record header (reserved word set)");
		if (kp_crc32(kp_crc32(0, &h, 8), r->payload, len) != h.crc)
			return damaged(r, rec, true, err, errlen, "corrupt record (CRC mismatch, type %u)", h.type);
		bad = check_record(r, h.type, r->payload, len);
		if (bad)
			return damaged(r, rec, true, err, errlen, "%s", bad);
		if (h.type == KP_REC_SAMPLES) {
			/* The block's samples carry its offset, and kp_reader_offset stays there until the last is out. */
			r->records += r->expanded_left;
			r->block_end = r->offset + h.size;
			return next_expanded(r, rec);
		}
		rec->type = h.type;
		rec->payload_len = len;
		rec->offset = r->offset;
		rec->payload = r->payload;
		if (h.type == KP_REC_KSYMS_Z) {
			rec->type = KP_REC_KSYMS;
			rec->payload = r->inflated;
			rec->payload_len = (uint32_t)sizeof(struct kp_rec_ksyms) + rec->ksyms->len;
		}
		r->offset += h.size;
		if (h.type == KP_REC_END) {
			int c = fgetc(r->f);

			r->ended = true;
			if (c == EOF)
				return 0;
			/* One file, one recording: `cat a.data b.data` is not a longer recording. */
			r->pos++;
			r->ended = false;
			rc = damaged(r, rec, false, err, errlen, "data after the END record (a second recording "
				     "appended?)");
			if (rc == 0)
				rec->type = KP_REC_END;
			return rc;
		}
		r->records++;
		if (h.type < KP_REC_META || h.type > KP_REC_SAMPLES)
			continue; /* a newer minor version's record: skip it */
		return 1;
	}
}

void kp_reader_close(struct kp_reader *r)
{
	if (!r)
		return;
	if (r->own && r->f)
		fclose(r->f);
	free(r->path);
	free(r->payload);
	free(r->inflated);
	free(r->expanded);
	free(r->coder);
	libdeflate_free_decompressor(r->inflater);
	free(r);
}
