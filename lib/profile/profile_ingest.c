/* SPDX-License-Identifier: MIT */
/*
 * Records into the profile: what each one adds. Process-state records are
 * kept as ops for profile_replay.c; samples keep their raw addresses for
 * profile_symbolize.c. Nothing is interpreted before profile_finish.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbols/kallsyms.h"
#include "common/grow.h"
#include "profile/profile_state.h"

/*
 * ---- profile_options.aggregate ----
 *
 * A group is the samples a flat table cannot tell apart that replay puts
 * in one epoch (after the same process-state records in (time, stream)
 * order), so that resolving one of them resolves them all, in the order
 * plain loading would have met the first of them.
 *
 * The recorders drain their per-CPU rings in turn: each ring's records
 * are in time order, but a record of one CPU (an exec, an mmap) may come
 * in the file after samples of another CPU that are later in time, which
 * replay puts after it; records too come out of time order among
 * themselves. So samples wait in a window of AGG_WINDOW, first in, first
 * out, and are grouped as they leave it (when it is full, and at the
 * end): a sample's epoch is then the number of records so far that replay
 * puts before it (agg_key_before), and records still to come must be
 * later than it. That is checked for every record against the latest
 * sample let through; a record earlier than that (it came more than a
 * window of samples late) breaks aggregation, and profile_load reads the
 * file again without it. Records are added as they come, in stream
 * order, as in plain loading: images and commands are made in its order.
 */

/*
 * Whether x comes before y in replay's order: by time, then by place in
 * the stream (seen: the samples before it; a record with seen <= a
 * sample's seq came before that sample).
 */
static inline bool agg_key_before(const struct agg_op_key *x, const struct agg_op_key *y)
{
	return x->time < y->time || (x->time == y->time && x->seen < y->seen);
}

static void agg_break(struct profile *p, const char *why)
{
	struct agg_state *a = &p->state->agg;

	if (!a->broken)
		a->why = why;
	a->broken = true;
}

static uint64_t agg_hash(const struct profile_sample *s, uint64_t ip, uint32_t epoch)
{
	uint64_t h = ((uint64_t)s->pid << 32 | s->tid) * 0x9e3779b97f4a7c15ull;

	h = (h ^ ip) * 0xbf58476d1ce4e5b9ull;
	h = (h ^ ((uint64_t)s->cpu << 32 | s->event)) * 0x94d049bb133111ebull;
	h = (h ^ s->period ^ ((uint64_t)epoch << 40) ^ ((uint64_t)s->cpl << 16) ^ s->domain) * 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 31);
}

static int agg_rehash(struct profile *p, size_t nr_slots)
{
	struct agg_state *a = &p->state->agg;
	uint32_t *slots = calloc(nr_slots, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (uint32_t g = 0; g < p->nr_samples; g++) {
		const struct profile_sample *s = &p->samples[g];
		size_t i = agg_hash(s, p->state->raw[s->first_frame], a->epoch[g]) & (nr_slots - 1);

		while (slots[i])
			i = (i + 1) & (nr_slots - 1);
		slots[i] = g + 1;
	}
	free(a->slots);
	a->slots = slots;
	a->nr_slots = nr_slots;
	return 0;
}

static int store_sample(struct profile *p, const struct profile_sample *in, uint64_t ip, const uint64_t *chain,
			size_t n);

/* A sample let through the window: counted in its group, or stored as a new group. 0 or -ENOMEM. */
static int agg_group(struct profile *p, const struct agg_pending *w)
{
	struct profile_state *ps = p->state;
	struct agg_state *a = &ps->agg;
	struct agg_op_key me = { w->s.time, w->seq };
	uint32_t epoch = (uint32_t)a->nr_op_keys;
	size_t i, g;
	int rc;

	/*
	 * Its epoch: the records so far before it, by time, equal times by
	 * stream order (a record before the seq-th sample came before it);
	 * most samples are later than all.
	 */
	if (epoch && agg_key_before(&me, &a->op_keys[epoch - 1])) {
		uint32_t lo = 0, hi = epoch;

		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;

			if (!agg_key_before(&me, &a->op_keys[mid]))
				lo = mid + 1;
			else
				hi = mid;
		}
		epoch = lo;
	}
	if (w->s.time > a->max_released_time)
		a->max_released_time = w->s.time;
	if ((p->nr_samples + 1) * 2 > a->nr_slots && agg_rehash(p, a->nr_slots ? a->nr_slots * 2 : 1024))
		return -ENOMEM;
	for (i = agg_hash(&w->s, w->ip, epoch) & (a->nr_slots - 1); a->slots[i]; i = (i + 1) & (a->nr_slots - 1)) {
		const struct profile_sample *o = &p->samples[a->slots[i] - 1];

		g = a->slots[i] - 1;
		if (a->epoch[g] == epoch && o->pid == w->s.pid && o->tid == w->s.tid && o->cpu == w->s.cpu &&
		    o->event == w->s.event && o->cpl == w->s.cpl && o->domain == w->s.domain &&
		    o->period == w->s.period && ps->raw[o->first_frame] == w->ip && p->sample_counts[g] < UINT32_MAX) {
			p->sample_counts[g]++;
			return 0;
		}
	}
	g = p->nr_samples;
	if (grow_array(&p->sample_counts, &a->counts_cap, g + 1, sizeof(*p->sample_counts)) ||
	    grow_array(&a->epoch, &a->epoch_cap, g + 1, sizeof(*a->epoch)) ||
	    grow_array(&a->first, &a->first_cap, g + 1, sizeof(*a->first)))
		return -ENOMEM;
	rc = store_sample(p, &w->s, w->ip, NULL, 0);
	if (rc)
		return rc;
	p->sample_counts[g] = 1;
	a->epoch[g] = epoch;
	a->first[g] = w->seq;
	a->slots[i] = (uint32_t)g + 1;
	return 0;
}

/* Lets every waiting sample through, in stream order. 0 or -ENOMEM. */
static int agg_release_all(struct profile *p)
{
	struct agg_state *a = &p->state->agg;
	int rc = 0;

	for (size_t i = 0; i < a->nr_wait && !rc && !a->broken; i++)
		rc = agg_group(p, &a->wait[(a->head + i) & (AGG_WINDOW - 1)]);
	a->nr_wait = 0;
	return rc;
}

/* A sample into the window (the oldest let through if it is full). 0 or -ENOMEM. */
static int agg_wait(struct profile *p, const struct profile_sample *s, uint64_t ip)
{
	struct agg_state *a = &p->state->agg;
	int rc;

	if (a->nr_wait == AGG_WINDOW) {
		rc = agg_group(p, &a->wait[a->head]);
		a->head = (a->head + 1) & (AGG_WINDOW - 1);
		a->nr_wait--;
		if (rc || a->broken)
			return rc;
	}
	if (!a->wait) {
		a->wait = malloc(AGG_WINDOW * sizeof(*a->wait));
		if (!a->wait)
			return -ENOMEM;
	}
	a->wait[(a->head + a->nr_wait++) & (AGG_WINDOW - 1)] = (struct agg_pending){ *s, ip, a->nr_seen++ };
	return 0;
}

/*
 * A process-state record at time t, the samples_before-th of the stream's
 * samples (its op's index: nr_ops), comes: it must not be earlier than a
 * sample already let through.
 */
static int agg_op(struct profile *p, uint64_t t)
{
	struct agg_state *a = &p->state->agg;
	struct agg_op_key k = { t, a->nr_seen };
	size_t i;

	if (t < a->max_released_time)
		agg_break(p, "a process-state record earlier than a sample let through before it");
	/* The records' (time, place), sorted: a sample's epoch is how many are before its own. */
	if (grow_array(&a->op_keys, &a->op_keys_cap, a->nr_op_keys + 1, sizeof(*a->op_keys)) ||
	    grow_array(&a->op_seen, &a->op_seen_cap, p->state->nr_ops + 1, sizeof(*a->op_seen)))
		return -ENOMEM;
	a->op_seen[p->state->nr_ops] = a->nr_seen;
	for (i = a->nr_op_keys; i && agg_key_before(&k, &a->op_keys[i - 1]); i--)
		a->op_keys[i] = a->op_keys[i - 1];
	a->op_keys[i] = k;
	a->nr_op_keys++;
	return 0;
}

int profile_agg_flush(struct profile *p)
{
	struct profile_state *ps = p->state;
	struct agg_state *a = &ps->agg;
	int rc;

	if (!a->on || a->broken)
		return 0;
	rc = agg_release_all(p);
	if (rc || a->broken)
		return rc;
	/*
	 * Each record's samples_before, which replay orders it by against a
	 * sample of the same time, counted in groups: the groups whose first
	 * sample came before it (groups are made in their first samples'
	 * order, the window being first in, first out).
	 */
	for (size_t k = 0; k < ps->nr_ops; k++) {
		size_t lo = 0, hi = p->nr_samples;

		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (a->first[mid] < a->op_seen[k])
				lo = mid + 1;
			else
				hi = mid;
		}
		ps->ops[k].samples_before = (uint32_t)lo;
	}
	return 0;
}

static int cmp_first(const void *x, const void *y, void *ctx)
{
	const uint64_t *first = ctx;
	uint64_t a = first[*(const uint32_t *)x], b = first[*(const uint32_t *)y];

	return a < b ? -1 : a > b;
}

int profile_agg_order(struct profile *p, uint32_t **out)
{
	struct agg_state *a = &p->state->agg;
	uint32_t *order = malloc((p->nr_samples ? p->nr_samples : 1) * sizeof(*order));
	bool sorted = true;

	if (!order)
		return -ENOMEM;
	for (size_t g = 0; g < p->nr_samples; g++) {
		order[g] = (uint32_t)g;
		sorted = sorted && (!g || a->first[g - 1] < a->first[g]);
	}
	if (!sorted)
		qsort_r(order, p->nr_samples, sizeof(*order), cmp_first, a->first);
	*out = order;
	return 0;
}

void profile_agg_free(struct profile *p)
{
	struct agg_state *a = &p->state->agg;

	free(a->slots);
	free(a->epoch);
	free(a->first);
	a->first = NULL;
	a->first_cap = 0;
	free(a->wait);
	free(a->op_keys);
	free(a->op_seen);
	a->slots = a->epoch = NULL;
	a->wait = NULL;
	a->op_keys = NULL;
	a->op_seen = NULL;
	a->nr_slots = a->epoch_cap = a->nr_wait = a->head = a->nr_op_keys = a->op_keys_cap = a->op_seen_cap = 0;
}

static int add_op(struct profile *p, const struct op *op)
{
	struct profile_state *ps = p->state;

	if (ps->agg.on && !ps->agg.broken) {
		int rc = agg_op(p, op->time);

		if (rc)
			return rc;
	}
	if (grow_array(&ps->ops, &ps->ops_cap, ps->nr_ops + 1, sizeof(*ps->ops)))
		return -ENOMEM;
	ps->ops[ps->nr_ops] = *op;
	ps->ops[ps->nr_ops].seq = ps->seq;
	ps->ops[ps->nr_ops].samples_before = (uint32_t)p->nr_samples;
	ps->ops[ps->nr_ops++].exits_before = (uint32_t)p->exits_recorded;
	return 0;
}

static int add_mmap(struct profile *p, const struct kp_rec_mmap *m, uint8_t domain)
{
	uint8_t bid_size = m->build_id_size <= KP_BUILD_ID_MAX ? m->build_id_size : 0;
	struct op op = { .kind = OP_MMAP, .time = m->time, .pid = m->pid, .tid = m->tid, .domain = domain };
	uint32_t img;

	if (!m->len)
		return 0;
	img = profile_image_id(p, m->filename, NULL, m->build_id, bid_size, m->pid == KP_PID_KERNEL, domain);
	if (img == PROFILE_NONE)
		return -ENOMEM;
	/* A length reaching past 2^64 ends at the top of the address space. */
	op.map = (struct map){
		.start = m->start,
		.end = m->len > UINT64_MAX - m->start ? UINT64_MAX : m->start + m->len,
		.pgoff = m->pgoff, .image = img,
	};
	if (!p->images[img].limit) {
		p->images[img].start = op.map.start;
		p->images[img].limit = op.map.end;
		p->images[img].pgoff = op.map.pgoff;
	}
	return add_op(p, &op);
}

/* A sample stored whole: its fields (event: the recorded id), ip and n frames of call chain. 0 or -ENOMEM. */
static int store_sample(struct profile *p, const struct profile_sample *in, uint64_t ip, const uint64_t *chain,
			size_t n)
{
	struct profile_state *ps = p->state;
	struct profile_sample *out;

	if (grow_array(&p->samples, &ps->samples_cap, p->nr_samples + 1, sizeof(*p->samples)) ||
	    profile_raw_room(p, n + 1))
		return -ENOMEM;
	out = &p->samples[p->nr_samples];
	*out = *in;
	out->nr_frames = (uint16_t)(n + 1);
	out->first_frame = (uint32_t)ps->nr_raw;
	out->comm = out->exit = PROFILE_NONE;
	ps->raw[ps->nr_raw++] = ip;
	if (n)
		memcpy(&ps->raw[ps->nr_raw], chain, n * sizeof(uint64_t));
	ps->nr_raw += n;
	if (in->domain == KP_DOMAIN_NATIVE && ps->opt.cross_layer && profile_exit_index_sample(p, (uint32_t)p->nr_samples))
		return -ENOMEM;
	p->nr_samples++;
	return 0;
}

static int add_sample(struct profile *p, const struct kp_rec_sample *s, uint8_t domain)
{
	struct profile_state *ps = p->state;
	size_t n = s->nr_callchain <= KP_CALLCHAIN_MAX ? s->nr_callchain : KP_CALLCHAIN_MAX;
	struct profile_sample in = {
		.event = s->event_id, /* the recorded id until profile_finish maps it */
		.pid = s->pid, .tid = s->tid, .cpu = s->cpu, .cpl = s->cpl, .domain = domain,
		.time = s->time, .period = s->period,
	};

	if (ps->agg.on && s->nr_callchain)
		agg_break(p, "a sample with a call chain");
	if (ps->agg.on && !ps->agg.broken)
		return agg_wait(p, &in, s->ip);
	return store_sample(p, &in, s->ip, s->callchain, n);
}

static int add_ksyms(struct profile *p, const struct kp_rec_ksyms *k, size_t payload_len, uint8_t domain)
{
	struct domain_state *ps = &p->state->dom[domain];
	size_t len = k->len;

	if (len > payload_len - sizeof(*k))
		len = payload_len - sizeof(*k);
	if (ps->ksyms_len + len > KSYMS_TEXT_MAX) {
		if (!ps->ksyms_warned)
			profile_warn(p, "%skernel symbols beyond %u MiB ignored", domain ? "guest " : "", KSYMS_TEXT_MAX >> 20);
		ps->ksyms_warned = true;
		return 0;
	}
	/* Symbols come before samples; any after the kernel's symbols were set up (profile_update) are not used. */
	if (!len || (domain ? p->state->guest_ready : p->state->native_ready))
		return 0;
	/* Parsed as they come: only the names are kept, not the text. */
	if (!ps->ks && !(ps->ks = kallsyms_new()))
		return -ENOMEM;
	ps->ksyms_len += len;
	return kallsyms_add(ps->ks, k->text, len);
}

static int add_meta(struct profile *p, const char *text)
{
	struct profile_state *ps = p->state;
	const char *eq = strchr(text, '=');
	char key[64];
	size_t klen;

	if (!eq)
		return 0;
	klen = (size_t)(eq - text) < sizeof(key) - 1 ? (size_t)(eq - text) : sizeof(key) - 1;
	memcpy(key, text, klen);
	key[klen] = '\0';
	if (grow_array(&p->meta, &ps->meta_cap, p->nr_meta + 1, sizeof(*p->meta)))
		return -ENOMEM;
	p->meta[p->nr_meta].key = profile_intern(p, key);
	p->meta[p->nr_meta].value = profile_intern(p, eq + 1);
	if (!p->meta[p->nr_meta].key || !p->meta[p->nr_meta].value)
		return -ENOMEM;
	p->nr_meta++;
	return 0;
}

/* guest: the record describes the guest whatever its fields say (profile_add_guest_record). */
static int add_record(struct profile *p, const struct kp_record *rec, bool guest)
{
	struct profile_state *ps = p->state;
	uint32_t ev, comm;
	uint8_t domain = guest ? KP_DOMAIN_GUEST : KP_DOMAIN_NATIVE;

	if (ps->finished)
		return -EINVAL;
	ps->seq++;
	/* The reader refuses other domain values; a record built in memory might not have been read. */
	if (rec->type == KP_REC_SAMPLE && rec->sample->domain == KP_DOMAIN_GUEST)
		domain = KP_DOMAIN_GUEST;
	else if (rec->type == KP_REC_MMAP && rec->mmap->domain == KP_DOMAIN_GUEST)
		domain = KP_DOMAIN_GUEST;
	else if (rec->type == KP_REC_COMM && (rec->comm->flags & KP_COMM_GUEST))
		domain = KP_DOMAIN_GUEST;
	if (domain == KP_DOMAIN_GUEST)
		ps->has_guest = true;
	switch (rec->type) {
	case KP_REC_META:
		return add_meta(p, rec->meta->text);
	case KP_REC_EVENT: {
		const struct kp_rec_event *e = rec->event;

		ev = profile_event_index(p, e->id);
		if (ev == PROFILE_NONE)
			return -ENOMEM;
		p->events[ev].type = e->type;
		p->events[ev].config = e->config;
		p->events[ev].period = e->period;
		p->events[ev].flags = e->flags;
		p->events[ev].declared = true;
		snprintf(p->events[ev].name, sizeof(p->events[ev].name), "%s", e->name);
		return 0;
	}
	case KP_REC_COMM:
		comm = profile_comm(p, rec->comm->comm);
		if (comm == PROFILE_NONE)
			return -ENOMEM;
		return add_op(p, &(struct op){ .kind = OP_COMM, .time = rec->comm->time, .pid = rec->comm->pid,
					       .tid = rec->comm->tid, .flags = rec->comm->flags, .comm = comm,
					       .domain = domain });
	case KP_REC_MMAP:
		return add_mmap(p, rec->mmap, domain);
	case KP_REC_FORK:
	case KP_REC_EXIT:
		return add_op(p, &(struct op){ .kind = rec->type == KP_REC_FORK ? OP_FORK : OP_EXIT,
					       .time = rec->task->time, .pid = rec->task->pid,
					       .tid = rec->task->tid, .ppid = rec->task->ppid, .domain = domain });
	case KP_REC_SAMPLE:
		return add_sample(p, rec->sample, domain);
	case KP_REC_VM_EXIT:
		if (ps->agg.on)
			agg_break(p, "a VM exit");
		ps->has_guest = true;
		return profile_add_vm_exit(p, rec->vm_exit);
	case KP_REC_USER_STACK:
		if (ps->agg.on)
			agg_break(p, "a stack copy");
		return profile_add_user_stack(p, rec->user_stack);
	case KP_REC_KSYMS:
		return add_ksyms(p, rec->ksyms, rec->payload_len, domain);
	case KP_REC_LOST:
		ev = profile_event_index(p, rec->lost->event_id);
		if (ev == PROFILE_NONE)
			return -ENOMEM;
		p->events[ev].lost += rec->lost->lost;
		ps->lost_sum += rec->lost->lost;
		return 0;
	case KP_REC_END:
		p->has_end = true;
		ps->end_lost = rec->end->lost;
		p->duration_ns = rec->end->duration_ns;
		return 0;
	default:
		return 0;
	}
}

int profile_add_record(struct profile *p, const struct kp_record *rec)
{
	return add_record(p, rec, false);
}

int profile_add_guest_record(struct profile *p, const struct kp_record *rec)
{
	return add_record(p, rec, true);
}
