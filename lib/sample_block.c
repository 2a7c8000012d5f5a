// SPDX-License-Identifier: MIT
/*
 * The compact sample coder (format: KP_REC_SAMPLES in sample_format.h).
 * Freestanding: the bundled guest's agent links this file too, so no libc
 * header (the compiler's memcpy and memset builtins only). Decoding takes
 * hostile bytes: every varint and count is bounded before use.
 */
#include "kvmprof/sample_block.h"

#define memcpy __builtin_memcpy
#define memset __builtin_memset

void kp_sample_coder_reset(struct kp_sample_coder *c)
{
	memset(c, 0, sizeof(*c));
}

static unsigned char *put_varint(unsigned char *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	*p++ = (unsigned char)v;
	return p;
}

/* NULL if the varint runs past end, is longer than 10 bytes, overflows 64 bits or is overlong. */
static const unsigned char *get_long_varint(const unsigned char *p, const unsigned char *end, uint64_t *v)
{
	uint64_t x = 0;

	for (unsigned shift = 0; shift < 64 && p < end; shift += 7) {
		unsigned char b = *p++;

		if (shift == 63 && b > 1)
			return NULL;
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			if (!b && shift)
				return NULL;
			*v = x;
			return p;
		}
	}
	return NULL;
}

/* Most varints are one byte (flags that repeat, small deltas): that case inline. */
static inline const unsigned char *get_varint(const unsigned char *p, const unsigned char *end, uint64_t *v)
{
	if (p < end && *p < 0x80) {
		*v = *p;
		return p + 1;
	}
	return get_long_varint(p, end, v);
}

static const unsigned char *get_u32(const unsigned char *p, const unsigned char *end, uint32_t *v)
{
	uint64_t x;

	p = get_varint(p, end, &x);
	if (!p || x > UINT32_MAX)
		return NULL;
	*v = (uint32_t)x;
	return p;
}

static uint64_t zz(uint64_t d)
{
	return d << 1 ^ (0 - (d >> 63));
}

static uint64_t unzz(uint64_t v)
{
	return v >> 1 ^ (0 - (v & 1));
}

static uint32_t zz32(uint32_t d)
{
	return d << 1 ^ (0 - (d >> 31));
}

static uint32_t unzz32(uint32_t v)
{
	return v >> 1 ^ (0 - (v & 1));
}

static unsigned ip_slot(const struct kp_rec_sample *s)
{
	return (s->domain == KP_DOMAIN_GUEST) * 2u + (s->cpl == KP_CPL_USER);
}

bool kp_sample_encodable(const void *sample, size_t len)
{
	struct kp_rec_sample s;

	if (len < sizeof(s))
		return false;
	memcpy(&s, sample, sizeof(s));
	return s.nr_callchain <= KP_CALLCHAIN_MAX && len == sizeof(s) + s.nr_callchain * sizeof(uint64_t) &&
	       !s.reserved && (s.cpl == KP_CPL_KERNEL || s.cpl == KP_CPL_USER) && s.domain <= KP_DOMAIN_GUEST;
}

/* What the next sample is coded against. */
static void remember(struct kp_sample_coder *c, const struct kp_rec_sample *s, const uint64_t *chain)
{
	c->event_id = s->event_id;
	c->pid = s->pid;
	c->tid = s->tid;
	c->cpu = s->cpu;
	c->period = s->period;
	c->time = s->time;
	c->ip[ip_slot(s)] = s->ip;
	c->nr_callchain = s->nr_callchain;
	memcpy(c->chain, chain, s->nr_callchain * sizeof(uint64_t));
}

/* Outermost frames of chain[nr] that equal the coder's previous chain's outermost. */
static unsigned shared_outer(const struct kp_sample_coder *c, const uint64_t *chain, unsigned nr)
{
	unsigned prev = c->nr_callchain, keep = 0;

	while (keep < nr && keep < prev && chain[nr - 1 - keep] == c->chain[prev - 1 - keep])
		keep++;
	return keep;
}

size_t kp_sample_encode(struct kp_sample_coder *c, const void *sample, unsigned char *out)
{
	struct kp_rec_sample s;
	uint64_t chain[KP_CALLCHAIN_MAX];
	unsigned char flags = 0, *p = out + 1;
	unsigned slot, nr;

	memcpy(&s, sample, sizeof(s));
	nr = s.nr_callchain;
	memcpy(chain, (const unsigned char *)sample + sizeof(s), nr * sizeof(uint64_t));
	if (s.event_id != c->event_id) {
		flags |= KP_SC_EVENT;
		p = put_varint(p, s.event_id);
	}
	if (s.pid != c->pid || s.tid != c->tid) {
		flags |= KP_SC_TASK;
		p = put_varint(p, s.pid);
		p = put_varint(p, zz32(s.tid - s.pid));
	}
	if (s.cpu != c->cpu) {
		flags |= KP_SC_CPU;
		p = put_varint(p, s.cpu);
	}
	if (s.period != c->period) {
		flags |= KP_SC_PERIOD;
		p = put_varint(p, s.period);
	}
	flags |= (s.cpl == KP_CPL_USER ? KP_SC_USER : 0) | (s.domain == KP_DOMAIN_GUEST ? KP_SC_GUEST : 0);
	slot = ip_slot(&s);
	p = put_varint(p, zz(s.time - c->time));
	p = put_varint(p, zz(s.ip - c->ip[slot]));
	if (nr) {
		unsigned keep = shared_outer(c, chain, nr);
		uint64_t ref = s.ip;

		flags |= KP_SC_CHAIN;
		p = put_varint(p, nr);
		p = put_varint(p, keep);
		for (unsigned i = 0; i < nr - keep; i++) {
			p = put_varint(p, zz(chain[i] - ref));
			ref = chain[i];
		}
	}
	out[0] = flags;
	remember(c, &s, chain);
	return (size_t)(p - out);
}

size_t kp_sample_decode(struct kp_sample_coder *c, const unsigned char *p, size_t avail, struct kp_rec_sample *s)
{
	const unsigned char *start = p, *end = p + avail;
	uint64_t *chain = s->callchain, v;
	unsigned char flags;
	uint32_t d;
	unsigned slot, nr = 0;

	if (!avail)
		return 0;
	flags = *p++;
	if (flags & 0x80)
		return 0;
	*s = (struct kp_rec_sample){ .event_id = c->event_id, .pid = c->pid, .tid = c->tid, .cpu = c->cpu,
				     .period = c->period, .time = c->time };
	if (flags & KP_SC_EVENT && !(p = get_u32(p, end, &s->event_id)))
		return 0;
	if (flags & KP_SC_TASK) {
		if (!(p = get_u32(p, end, &s->pid)) || !(p = get_u32(p, end, &d)))
			return 0;
		s->tid = s->pid + unzz32(d);
	}
	if (flags & KP_SC_CPU && !(p = get_u32(p, end, &s->cpu)))
		return 0;
	if (flags & KP_SC_PERIOD && !(p = get_varint(p, end, &s->period)))
		return 0;
	s->cpl = flags & KP_SC_USER ? KP_CPL_USER : KP_CPL_KERNEL;
	s->domain = flags & KP_SC_GUEST ? KP_DOMAIN_GUEST : KP_DOMAIN_NATIVE;
	slot = ip_slot(s);
	if (!(p = get_varint(p, end, &v)))
		return 0;
	s->time = c->time + unzz(v);
	if (!(p = get_varint(p, end, &v)))
		return 0;
	s->ip = c->ip[slot] + unzz(v);
	if (flags & KP_SC_CHAIN) {
		uint64_t n, keep, ref = s->ip;

		if (!(p = get_varint(p, end, &n)) || n < 1 || n > KP_CALLCHAIN_MAX ||
		    !(p = get_varint(p, end, &keep)) || keep > n || keep > c->nr_callchain)
			return 0;
		nr = (unsigned)n;
		for (unsigned i = 0; i < nr - keep; i++) {
			if (!(p = get_varint(p, end, &v)))
				return 0;
			chain[i] = ref + unzz(v);
			ref = chain[i];
		}
		memcpy(chain + nr - keep, c->chain + c->nr_callchain - keep, (size_t)keep * sizeof(uint64_t));
	}
	s->nr_callchain = (uint16_t)nr;
	remember(c, s, chain);
	return (size_t)(p - start);
}

void kp_sample_block_init(struct kp_sample_block *b)
{
	kp_sample_coder_reset(&b->coder);
	kp_sample_block_clear(b);
}

void kp_sample_block_clear(struct kp_sample_block *b)
{
	b->payload.head.count = 0;
	b->payload.head.len = 0;
}

bool kp_sample_block_add(struct kp_sample_block *b, const void *sample)
{
	struct kp_rec_samples *h = &b->payload.head;

	h->len += (uint32_t)kp_sample_encode(&b->coder, sample, h->data + h->len);
	h->count++;
	return h->count == KP_SAMPLES_MAX || h->len >= KP_SAMPLES_BLOCK_BYTES;
}
