// SPDX-License-Identifier: MIT
/*
 * The compact sample and VM exit coder (format: KP_REC_SAMPLES in sample_format.h).
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

	/*
	 * Two- and three-byte varints (an exit's time, length and ip deltas)
	 * without the general loop's checks: at least two bytes, the last
	 * non-zero, so never overlong nor past 64 bits.
	 */
	if (end - p >= 2 && p[0] & 0x80 && !(p[1] & 0x80)) {
		if (!p[1])
			return NULL;
		*v = (uint64_t)(p[0] & 0x7f) | (uint64_t)p[1] << 7;
		return p + 2;
	}
	if (end - p >= 3 && p[0] & p[1] & 0x80 && !(p[2] & 0x80)) {
		if (!p[2])
			return NULL;
		*v = (uint64_t)(p[0] & 0x7f) | (uint64_t)(p[1] & 0x7f) << 7 | (uint64_t)p[2] << 14;
		return p + 3;
	}
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
	if (s->nr_callchain) /* most samples of a flat recording: no call to memcpy at all */
		memcpy(c->chain, chain, s->nr_callchain * sizeof(uint64_t));
}

/* Codes chain[nr] (nr >= 1) against the previous chain[prev_nr] and ip: nr, keep, the other frames. */
static unsigned char *put_chain(unsigned char *p, const uint64_t *chain, unsigned nr, uint64_t ip,
				const uint64_t *prev, unsigned prev_nr)
{
	unsigned keep = 0;
	uint64_t ref = ip;

	while (keep < nr && keep < prev_nr && chain[nr - 1 - keep] == prev[prev_nr - 1 - keep])
		keep++;
	p = put_varint(p, nr);
	p = put_varint(p, keep);
	for (unsigned i = 0; i < nr - keep; i++) {
		p = put_varint(p, zz(chain[i] - ref));
		ref = chain[i];
	}
	return p;
}

/* Decodes what put_chain wrote into chain (*nr set); NULL if cut short or out of range. */
static const unsigned char *get_chain(const unsigned char *p, const unsigned char *end, uint64_t *chain,
				      unsigned *nr, uint64_t ip, const uint64_t *prev, unsigned prev_nr)
{
	uint64_t n, keep, v, ref = ip;

	if (!(p = get_varint(p, end, &n)) || n < 1 || n > KP_CALLCHAIN_MAX ||
	    !(p = get_varint(p, end, &keep)) || keep > n || keep > prev_nr)
		return NULL;
	for (unsigned i = 0; i < n - keep; i++) {
		if (!(p = get_varint(p, end, &v)))
			return NULL;
		chain[i] = ref + unzz(v);
		ref = chain[i];
	}
	memcpy(chain + n - keep, prev + prev_nr - keep, (size_t)keep * sizeof(uint64_t));
	*nr = (unsigned)n;
	return p;
}

size_t kp_sample_encode(struct kp_sample_coder *c, const void *sample, unsigned char *out)
{
	struct kp_rec_sample s;
	uint64_t chain[KP_CALLCHAIN_MAX];
	unsigned char flags = 0, *p = out + 1;
	unsigned slot, nr;

	memcpy(&s, sample, sizeof(s));
	nr = s.nr_callchain;
	if (nr)
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
		flags |= KP_SC_CHAIN;
		p = put_chain(p, chain, nr, s.ip, c->chain, c->nr_callchain);
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
	if (flags & KP_XC_EXIT)
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
	if (flags & KP_SC_CHAIN && !(p = get_chain(p, end, chain, &nr, s->ip, c->chain, c->nr_callchain)))
		return 0;
	s->nr_callchain = (uint16_t)nr;
	remember(c, s, chain);
	return (size_t)(p - start);
}

bool kp_exit_encodable(const void *vm_exit, size_t len)
{
	struct kp_rec_vm_exit x;

	if (len < sizeof(x))
		return false;
	memcpy(&x, vm_exit, sizeof(x));
	return x.nr_callchain <= KP_CALLCHAIN_MAX && len == sizeof(x) + x.nr_callchain * sizeof(uint64_t) &&
	       !x.reserved && !x.reserved2 && (x.cpl == KP_CPL_KERNEL || x.cpl == KP_CPL_USER) &&
	       x.kind <= KP_EXIT_KIND_MAX && x.end >= x.time;
}

/* What the next exit is coded against. */
static void remember_exit(struct kp_exit_coder *c, const struct kp_rec_vm_exit *x, const uint64_t *chain)
{
	c->pid = x->pid;
	c->tid = x->tid;
	c->cpu = x->cpu;
	c->host_tid = x->host_tid;
	c->kind = x->kind;
	c->size = x->size;
	c->time = x->time;
	c->ip = x->ip;
	c->detail = x->detail;
	c->nr_callchain = x->nr_callchain;
	if (x->nr_callchain)
		memcpy(c->chain, chain, x->nr_callchain * sizeof(uint64_t));
}

size_t kp_exit_encode(struct kp_sample_coder *sc, const void *vm_exit, unsigned char *out)
{
	struct kp_exit_coder *c = &sc->exit;
	struct kp_rec_vm_exit x;
	uint64_t chain[KP_CALLCHAIN_MAX];
	unsigned char flags = KP_XC_EXIT, *p = out + 1;

	memcpy(&x, vm_exit, sizeof(x));
	if (x.nr_callchain)
		memcpy(chain, (const unsigned char *)vm_exit + sizeof(x), x.nr_callchain * sizeof(uint64_t));
	if (x.pid != c->pid || x.tid != c->tid) {
		flags |= KP_XC_TASK;
		p = put_varint(p, x.pid);
		p = put_varint(p, zz32(x.tid - x.pid));
	}
	if (x.cpu != c->cpu || x.host_tid != c->host_tid) {
		flags |= KP_XC_CPU;
		p = put_varint(p, x.cpu);
		p = put_varint(p, x.host_tid);
	}
	if (x.kind != c->kind || x.size != c->size) {
		flags |= KP_XC_KIND;
		*p++ = x.kind;
		*p++ = x.size;
	}
	if (x.detail != c->detail) {
		flags |= KP_XC_DETAIL;
		p = put_varint(p, zz(x.detail - c->detail));
	}
	flags |= x.cpl == KP_CPL_USER ? KP_XC_USER : 0;
	p = put_varint(p, zz(x.time - c->time));
	p = put_varint(p, x.end - x.time);
	p = put_varint(p, zz(x.ip - c->ip));
	if (x.nr_callchain) {
		flags |= KP_XC_CHAIN;
		p = put_chain(p, chain, x.nr_callchain, x.ip, c->chain, c->nr_callchain);
	}
	out[0] = flags;
	remember_exit(c, &x, chain);
	return (size_t)(p - out);
}

size_t kp_exit_decode(struct kp_sample_coder *sc, const unsigned char *p, size_t avail, struct kp_rec_vm_exit *x)
{
	struct kp_exit_coder *c = &sc->exit;
	const unsigned char *start = p, *end = p + avail;
	unsigned char flags;
	unsigned nr = 0;
	uint64_t v;
	uint32_t d;

	if (!avail)
		return 0;
	flags = *p++;
	if (!(flags & KP_XC_EXIT) || flags & KP_XC_RESERVED)
		return 0;
	*x = (struct kp_rec_vm_exit){ .pid = c->pid, .tid = c->tid, .cpu = c->cpu, .host_tid = c->host_tid,
				      .kind = c->kind, .size = c->size, .detail = c->detail };
	if (flags & KP_XC_TASK) {
		if (!(p = get_u32(p, end, &x->pid)) || !(p = get_u32(p, end, &d)))
			return 0;
		x->tid = x->pid + unzz32(d);
	}
	if (flags & KP_XC_CPU && (!(p = get_u32(p, end, &x->cpu)) || !(p = get_u32(p, end, &x->host_tid))))
		return 0;
	if (flags & KP_XC_KIND) {
		if (end - p < 2 || p[0] > KP_EXIT_KIND_MAX)
			return 0;
		x->kind = p[0];
		x->size = p[1];
		p += 2;
	}
	if (flags & KP_XC_DETAIL) {
		if (!(p = get_varint(p, end, &v)))
			return 0;
		x->detail = c->detail + unzz(v);
	}
	x->cpl = flags & KP_XC_USER ? KP_CPL_USER : KP_CPL_KERNEL;
	if (!(p = get_varint(p, end, &v)))
		return 0;
	x->time = c->time + unzz(v);
	if (!(p = get_varint(p, end, &v)) || v > UINT64_MAX - x->time)
		return 0;
	x->end = x->time + v;
	if (!(p = get_varint(p, end, &v)))
		return 0;
	x->ip = c->ip + unzz(v);
	if (flags & KP_XC_CHAIN && !(p = get_chain(p, end, x->callchain, &nr, x->ip, c->chain, c->nr_callchain)))
		return 0;
	x->nr_callchain = (uint16_t)nr;
	remember_exit(c, x, x->callchain);
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

/* One more entry of n bytes: whether the block is full now. */
static bool block_grew(struct kp_rec_samples *h, size_t n)
{
	h->len += (uint32_t)n;
	h->count++;
	return h->count == KP_SAMPLES_MAX || h->len >= KP_SAMPLES_BLOCK_BYTES;
}

bool kp_sample_block_add(struct kp_sample_block *b, const void *sample)
{
	struct kp_rec_samples *h = &b->payload.head;

	return block_grew(h, kp_sample_encode(&b->coder, sample, h->data + h->len));
}

bool kp_sample_block_add_exit(struct kp_sample_block *b, const void *vm_exit)
{
	struct kp_rec_samples *h = &b->payload.head;

	return block_grew(h, kp_exit_encode(&b->coder, vm_exit, h->data + h->len));
}
