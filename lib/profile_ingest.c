/* SPDX-License-Identifier: MIT */
/*
 * Records into the profile: what each one adds. Process-state records are
 * kept as ops for profile_replay.c; samples keep their raw addresses for
 * profile_symbolize.c. Nothing is interpreted before profile_finish.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "grow.h"
#include "profile_state.h"

static int add_op(struct profile *p, const struct op *op)
{
	struct profile_state *ps = p->state;

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

static int add_sample(struct profile *p, const struct kp_rec_sample *s, uint8_t domain)
{
	struct profile_state *ps = p->state;
	size_t n = s->nr_callchain <= KP_CALLCHAIN_MAX ? s->nr_callchain : KP_CALLCHAIN_MAX;
	struct profile_sample *out;

	if (grow_array(&p->samples, &ps->samples_cap, p->nr_samples + 1, sizeof(*p->samples)) ||
	    profile_raw_room(p, n + 1))
		return -ENOMEM;
	out = &p->samples[p->nr_samples];
	*out = (struct profile_sample){
		.event = s->event_id, /* the recorded id until profile_finish maps it */
		.pid = s->pid, .tid = s->tid, .cpu = s->cpu, .cpl = s->cpl, .domain = domain,
		.time = s->time, .period = s->period,
		.nr_frames = (uint16_t)(n + 1), .first_frame = (uint32_t)ps->nr_raw,
		.comm = PROFILE_NONE, .exit = PROFILE_NONE,
	};
	ps->raw[ps->nr_raw++] = s->ip;
	if (n)
		memcpy(&ps->raw[ps->nr_raw], s->callchain, n * sizeof(uint64_t));
	ps->nr_raw += n;
	if (domain == KP_DOMAIN_NATIVE && ps->opt.cross_layer && profile_exit_index_sample(p, (uint32_t)p->nr_samples))
		return -ENOMEM;
	p->nr_samples++;
	return 0;
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
	/* Room for a newline and the NUL kallsyms_parse_owned puts at the end. */
	if (grow_array(&ps->ksyms, &ps->ksyms_cap, ps->ksyms_len + len + 2, 1))
		return -ENOMEM;
	memcpy(ps->ksyms + ps->ksyms_len, k->text, len);
	ps->ksyms_len += len;
	/* Chunks end at line ends, but a hostile one might not: keep lines apart. */
	if (len && k->text[len - 1] != '\n')
		ps->ksyms[ps->ksyms_len++] = '\n';
	return 0;
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
		ps->has_guest = true;
		return profile_add_vm_exit(p, rec->vm_exit);
	case KP_REC_USER_STACK:
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
