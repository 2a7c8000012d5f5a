/* SPDX-License-Identifier: MIT */
/*
 * Reading and writing kvmprof sample files (format: include/kvmprof/sample_format.h).
 *
 * The writer buffers records and writes them to a file descriptor, which
 * may be a file, a pipe or a serial line. The reader checks everything it
 * hands out: magic, version, record sizes, CRCs, string termination and
 * every length field against its record, and that the stream ends with an
 * END record. Errors carry a one-line message naming the file and offset.
 */
#ifndef KVMPROF_SAMPLE_FILE_H
#define KVMPROF_SAMPLE_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "kvmprof/sample_format.h"

struct kp_writer;

/* Writes the file header at once. 0 or -errno. */
int kp_writer_open(struct kp_writer **out, int fd, enum kp_source source);
/*
 * Appends one record: payload of `len` bytes (padded to 8 here). SAMPLE
 * records (sample file 1.6) and VM_EXIT records (1.7) go into the open
 * SAMPLES block, which is written before the next record of any other
 * type, at kp_writer_flush, and when it is full; readers hand its entries
 * out as the SAMPLE and VM_EXIT records given here, byte for byte.
 */
int kp_writer_add(struct kp_writer *w, uint32_t type, const void *payload, size_t len);
/* Conveniences over kp_writer_add. */
int kp_writer_meta(struct kp_writer *w, const char *key, const char *value);
int kp_writer_meta_u64(struct kp_writer *w, const char *key, uint64_t value);
/* kallsyms text, in zlib-compressed KSYMS_Z chunks cut at line ends (readers see KSYMS). */
int kp_writer_ksyms(struct kp_writer *w, const char *text, size_t len);
/*
 * Appends a whole record (header and payload, CRC set) unchanged: records
 * that arrive already encoded (the VMM's guest-sample rings). Check it
 * first with kp_record_check; here only its size is checked. A SAMPLE or
 * VM_EXIT record goes into the open block as with kp_writer_add. 0 or -errno.
 */
int kp_writer_add_raw(struct kp_writer *w, const void *rec);
int kp_writer_flush(struct kp_writer *w);
/*
 * Bounds in time what a writer killed with SIGKILL loses (its buffer bounds
 * it in bytes: at 1 kHz the buffer took ~30 s to fill, and a recording cut
 * before that left no sample on disk). Called with the time now (ns of a
 * monotonic clock) after each batch of records: the first call that finds
 * records waiting notes the time, and the first one max_age_ns after that
 * writes out the buffer and the open block, as kp_writer_flush. *wait_ns,
 * when not NULL, is the time until that write is due (UINT64_MAX: nothing
 * waits), for a loop to wake up by then. 0 or -errno.
 */
int kp_writer_flush_aged(struct kp_writer *w, uint64_t now_ns, uint64_t max_age_ns, uint64_t *wait_ns);
/* Counts of what went through the writer, for END and progress lines. */
uint64_t kp_writer_samples(const struct kp_writer *w);
uint64_t kp_writer_bytes(const struct kp_writer *w);
/* Writes END (with `lost` and `duration_ns`), flushes, frees; the fd stays open. */
int kp_writer_close(struct kp_writer *w, uint64_t lost, uint64_t duration_ns);
/* Frees without writing END or the open block (an aborted stream reads as truncated). */
void kp_writer_abort(struct kp_writer *w);

/* One record as the reader hands it out; `payload` is valid until the next call. */
struct kp_record {
	uint32_t type;
	uint32_t payload_len; /* bytes after the record header, padding included */
	uint64_t offset;      /* of the record header in the stream */
	union {
		const void *payload;
		const struct kp_rec_meta *meta;
		const struct kp_rec_event *event;
		const struct kp_rec_comm *comm;
		const struct kp_rec_mmap *mmap;
		const struct kp_rec_task *task;
		const struct kp_rec_sample *sample;
		const struct kp_rec_ksyms *ksyms;
		const struct kp_rec_lost *lost;
		const struct kp_rec_end *end;
		const struct kp_rec_task_layout *layout;
		const struct kp_rec_vm_exit *vm_exit;
		const struct kp_rec_user_stack *user_stack;
	};
};

struct kp_reader;

/*
 * Opens a sample file ("-" is standard input). On error returns -errno or
 * -EINVAL and writes "PATH: what is wrong" into err.
 */
int kp_reader_open(struct kp_reader **out, const char *path, char *err, size_t errlen);
/*
 * The next record: 1 and *rec filled; 0 and *rec holding the END record
 * (whose counts were checked against what was read; every later call
 * returns 0 again with *rec untouched); or a negative value with
 * a one-line message in err ("PATH: offset N: ..."): -EBADMSG for a stream
 * that is cut short or damaged, or has bytes after END. Unknown record types
 * of the same major version are skipped; KSYMS_Z chunks come out inflated,
 * as KSYMS records, and SAMPLES blocks as one SAMPLE or VM_EXIT record per
 * entry (each with the block's offset; kp_reader_offset stays at the block
 * until its last entry is out). A block is decoded and checked whole
 * before its first entry comes out.
 */
int kp_reader_next(struct kp_reader *r, struct kp_record *rec, char *err, size_t errlen);
const struct kp_file_header *kp_reader_header(const struct kp_reader *r);
/*
 * The stream offset of the next record. A reader that follows a stream
 * still being written (kvmprof top, after the writer's flush) reads only
 * while this is below the bytes written: a read at the end would take it
 * for a stream cut short.
 */
uint64_t kp_reader_offset(const struct kp_reader *r);

/*
 * Where a damaged stream went wrong: the first record that is cut short or
 * corrupt (or a missing END, or bytes after END), what was intact before
 * it, and how many bytes from there to the end of the stream were not used.
 */
struct kp_reader_damage {
	bool damaged;
	bool end_missing;  /* the stream has no valid END: its lost count and duration are unknown */
	uint64_t offset;   /* of the first byte not used */
	uint64_t records;  /* intact records before it (END not counted) */
	uint64_t samples;  /* of which SAMPLE records */
	uint64_t skipped;  /* bytes from offset to the end of the stream */
	char what[160];    /* what is wrong there */
};

/*
 * Recovery mode (`report --recover`): from now on, damage ends the stream
 * instead of failing it. kp_reader_next then returns 0 with rec->type 0
 * (no END was read) or the END record (bytes after it were ignored), and
 * kp_reader_damage says where, what, and how much was not used.
 * Without it, kp_reader_next fails on damage with -EBADMSG.
 */
void kp_reader_recover(struct kp_reader *r);
const struct kp_reader_damage *kp_reader_damage(const struct kp_reader *r);
/* One line for the user about the damage: "read N records (M samples) ...". */
void kp_reader_damage_describe(const struct kp_reader_damage *d, const char *path, char *buf, size_t len);
void kp_reader_close(struct kp_reader *r);

/*
 * Checks one encoded record in `avail` bytes as the reader would: size,
 * reserved word, CRC, and its contents against its size. Only the types a
 * stream of samples may carry are accepted (META, EVENT, COMM, MMAP,
 * FORK, EXIT, SAMPLE, LOST): not END or KSYMS, whose meaning depends on
 * the stream around them. NULL if fine, else what is wrong.
 */
const char *kp_record_check(const void *rec, size_t avail);

/* CRC-32 as zlib computes it (through libdeflate: the same value, faster). */
uint32_t kp_crc32(uint32_t crc, const void *buf, size_t len);

#endif
