/* SPDX-License-Identifier: MIT */
/*
 * The compact sample encoding of KP_REC_SAMPLES blocks (sample_format.h):
 * one coder for every writer and the reader. lib/format/sample_block.c is
 * freestanding (no libc beyond memcpy and memset) so that the bundled guest's agent
 * compiles the same file and writes the same blocks down its serial line.
 */
#ifndef KVMPROF_SAMPLE_BLOCK_H
#define KVMPROF_SAMPLE_BLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kvmprof/sample_format.h"

/*
 * Most bytes one entry takes: an exit's flags, 4 32-bit and 4 64-bit
 * varints, kind and size, nr, keep and the frames (a sample has one 64-bit
 * varint and the two bytes of kind and size fewer).
 */
#define KP_SAMPLE_CODE_MAX (1 + 4 * 5 + 4 * 10 + 2 + 2 + 2 + KP_CALLCHAIN_MAX * 10)
/* A writer closes a block once its data reach this many bytes (or KP_SAMPLES_MAX samples). */
#define KP_SAMPLES_BLOCK_BYTES 8192u

/* What the next VM exit is coded against: the stream's last coded exit. */
struct kp_exit_coder {
	uint32_t pid, tid, cpu, host_tid;
	uint8_t kind, size;
	uint64_t time, ip, detail;
	uint32_t nr_callchain;
	uint64_t chain[KP_CALLCHAIN_MAX];
};

/* What the next sample is coded against: the stream's last coded sample; reset at the stream's start. */
struct kp_sample_coder {
	uint32_t event_id, pid, tid, cpu; /* the previous sample's */
	uint64_t period, time;
	uint64_t ip[4]; /* the last ip per domain and CPL: [domain * 2 + (cpl == user)] */
	uint32_t nr_callchain;
	uint64_t chain[KP_CALLCHAIN_MAX]; /* the previous sample's call chain */
	struct kp_exit_coder exit;        /* VM exits (since 1.7) go on from each other, apart from samples */
};

void kp_sample_coder_reset(struct kp_sample_coder *c);

/*
 * Whether the SAMPLE record payload `sample` of `len` bytes (its call chain
 * after it) has an exact compact form: len is exactly its header and
 * chain, reserved is 0, cpl and domain are ones the format knows.
 */
bool kp_sample_encodable(const void *sample, size_t len);
/* Codes an encodable sample into out (KP_SAMPLE_CODE_MAX bytes of room); the bytes written. */
size_t kp_sample_encode(struct kp_sample_coder *c, const void *sample, unsigned char *out);
/*
 * Decodes one sample from [p, p + avail) into *s and the KP_CALLCHAIN_MAX
 * frames of room after it: the bytes used, or 0 if they are not a valid
 * coded sample (cut short, a varint too long or out of range, a reserved
 * flag, a chain too long or keeping more frames than the previous had).
 */
size_t kp_sample_decode(struct kp_sample_coder *c, const unsigned char *p, size_t avail, struct kp_rec_sample *s);

/*
 * The same for a VM_EXIT record payload (since 1.7): len exactly its header
 * and chain, reserved fields 0, a known kind and CPL, end >= time.
 */
bool kp_exit_encodable(const void *vm_exit, size_t len);
/* Codes an encodable exit into out (KP_SAMPLE_CODE_MAX bytes of room); the bytes written. */
size_t kp_exit_encode(struct kp_sample_coder *c, const void *vm_exit, unsigned char *out);
/*
 * Decodes one exit into *x and the KP_CALLCHAIN_MAX frames after it: the
 * bytes used, or 0 if they are not a valid coded exit (as for samples, and
 * a kind out of range or an end before the time). The first byte tells
 * an exit (KP_XC_EXIT set) from a sample.
 */
size_t kp_exit_decode(struct kp_sample_coder *c, const unsigned char *p, size_t avail, struct kp_rec_vm_exit *x);

/* A block being filled: the payload of a KP_REC_SAMPLES record. */
struct kp_sample_block {
	struct kp_sample_coder coder;
	union {
		struct kp_rec_samples head;
		unsigned char bytes[sizeof(struct kp_rec_samples) + KP_SAMPLES_BLOCK_BYTES + KP_SAMPLE_CODE_MAX];
	} payload;
};

/* An empty block at the start of a stream. */
void kp_sample_block_init(struct kp_sample_block *b);
/* Empties the block once written; the next block's samples are coded against its last. */
void kp_sample_block_clear(struct kp_sample_block *b);
/* Adds an encodable sample; true when the block is full and must be written (then cleared) now. */
bool kp_sample_block_add(struct kp_sample_block *b, const void *sample);
/* Adds an encodable VM exit (1.7 files only): as kp_sample_block_add. */
bool kp_sample_block_add_exit(struct kp_sample_block *b, const void *vm_exit);
/* Entries (samples and exits) in the block; the record payload (len: its bytes, without padding). */
static inline uint32_t kp_sample_block_count(const struct kp_sample_block *b)
{
	return b->payload.head.count;
}
static inline size_t kp_sample_block_len(const struct kp_sample_block *b)
{
	return sizeof(struct kp_rec_samples) + b->payload.head.len;
}

#endif
