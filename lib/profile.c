/* SPDX-License-Identifier: MIT */
#include "profile.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "file_open.h"
#include "grow.h"
#include "kallsyms.h"
#include "keymap.h"
#include "symtab.h"
#include "utf8.h"

/* Bounds against hostile input: beyond these, maps are dropped with a warning. */
#define MAPS_PER_MM_MAX 65536
#define MAPS_TOTAL_MAX (1u << 22)
#define KSYMS_TEXT_MAX (256u << 20)

/* perf's callchain context markers (PERF_CONTEXT_*): not addresses. */
#define CONTEXT_MARKER_MIN ((uint64_t)-4095)
#define CONTEXT_KERNEL ((uint64_t)-128)
#define CONTEXT_USER ((uint64_t)-512)
#define CONTEXT_GUEST_KERNEL ((uint64_t)-2176)
#define CONTEXT_GUEST_USER ((uint64_t)-2560)
/* x86-64 kernel addresses live in the upper canonical half. */
#define KERNEL_HALF 0xffff800000000000ull

struct map {
	uint64_t start, end, pgoff;
	uint32_t image;
};

struct mm {
	uint32_t pid, comm, prev; /* prev: the pid's earlier address space, or PROFILE_NONE */
	uint8_t domain;
	bool exited, built;
	struct map *maps; /* as recorded, oldest first */
	size_t nr, cap;
	struct map *ivs;  /* non-overlapping, sorted, newer maps winning; built on first lookup */
	size_t nr_ivs;
};

enum op_kind { OP_COMM, OP_MMAP, OP_FORK, OP_EXIT };

/* A process-state record, kept until profile_finish replays them in order. */
struct op {
	uint64_t time, seq;
	uint32_t kind, pid, tid, ppid, flags, comm;
	uint8_t domain;
	struct map map;
};

struct image_state {
	struct symtab *st;
	int tried;
	bool host_path; /* a file on this machine (--guest-kernel): no root prefix */
};

/* What each namespace (enum kp_domain) has of its own kernel. */
struct domain_state {
	char *ksyms;
	size_t ksyms_len, ksyms_cap;
	bool ksyms_warned;
	struct kallsyms *ks;
	uint32_t kernel_image, unknown_image, kernel_mm;
};

#define NR_DOMAINS 2

struct profile_state {
	struct profile_options opt;
	size_t events_cap, images_cap, funcs_cap, locs_cap, samples_cap, comms_cap, meta_cap;
	struct keymap event_by_id, image_by_key, func_by_key, loc_by_key, comm_by_str, strs;
	char **str_list;
	size_t nr_strs, strs_cap;
	struct image_state *istate;
	size_t istate_cap;

	struct op *ops;
	size_t nr_ops, ops_cap;
	uint64_t seq;
	uint64_t *raw; /* callchains as recorded, indexed like frames */
	size_t nr_raw, raw_cap;
	uint64_t *sample_seq;
	size_t sample_seq_cap;
	uint64_t lost_sum, end_lost;

	struct domain_state dom[NR_DOMAINS];
	bool has_guest; /* a guest record came: the guest's pseudo images are made */

	/* Descriptors of opt.root and opt.guest_root (by domain): -1 none, -2 not opened yet. */
	int root_fd[NR_DOMAINS];
	bool guest_files_warned;

	struct mm *mms;
	size_t nr_mms, mms_cap, total_maps;
	struct keymap mm_by_pid; /* the current address space of each (pid, domain) */
	bool maps_warned, finished;
};

static void warn(struct profile *p, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!p->state->opt.warn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* File and symbol names in it are the recorded system's (a guest's): nothing for the terminal. */
	utf8_sanitize(msg, '?', NULL);
	p->state->opt.warn(p->state->opt.warn_ctx, msg);
}

/* One stored copy of each string: names compare by pointer afterwards. */
static const char *intern(struct profile *p, const char *s)
{
	struct profile_state *ps = p->state;
	uint64_t h = keymap_hash(s, strlen(s), 1);
	uint64_t k;

	/* Hash collisions chain through the second key. */
	for (k = 0;; k++) {
		int64_t v = keymap_get(&ps->strs, h, k);
		char *copy;

		if (v >= 0) {
			if (!strcmp(ps->str_list[v], s))
				return ps->str_list[v];
			continue;
		}
		if (grow_array(&ps->str_list, &ps->strs_cap, ps->nr_strs + 1, sizeof(char *)))
			return NULL;
		copy = strdup(s);
		if (!copy || keymap_put(&ps->strs, h, k, (uint32_t)ps->nr_strs)) {
			free(copy);
			return NULL;
		}
		ps->str_list[ps->nr_strs++] = copy;
		return copy;
	}
}

static uint32_t comm_id(struct profile *p, const char *name)
{
	struct profile_state *ps = p->state;
	const char *s = intern(p, name);
	int64_t v;

	if (!s)
		return PROFILE_NONE;
	v = keymap_get(&ps->comm_by_str, (uintptr_t)s, 0);
	if (v >= 0)
		return (uint32_t)v;
	if (grow_array(&p->comms, &ps->comms_cap, p->nr_comms + 1, sizeof(*p->comms)) ||
	    keymap_put(&ps->comm_by_str, (uintptr_t)s, 0, (uint32_t)p->nr_comms))
		return PROFILE_NONE;
	p->comms[p->nr_comms] = s;
	return (uint32_t)p->nr_comms++;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash && slash[1] ? slash + 1 : path;
}

/*
 * The image for a recorded path and build-id, or a pseudo image (path NULL)
 * called `name`. Images are shared by every process that maps the file.
 */
static uint32_t image_id(struct profile *p, const char *path, const char *name, const uint8_t *bid,
			 uint8_t bid_size, bool kernel, uint8_t domain)
{
	struct profile_state *ps = p->state;
	const char *key = path ? path : name;
	uint64_t h = keymap_hash(key, strlen(key), path ? 2 : 3) ^ keymap_hash(bid, bid_size, 4) ^ domain;
	struct profile_image *im;
	uint64_t k;

	for (k = 0;; k++) {
		int64_t v = keymap_get(&ps->image_by_key, h, k);

		if (v < 0)
			break;
		im = &p->images[v];
		if ((path ? im->path && !strcmp(im->path, path) : !im->path && !strcmp(im->name, name)) &&
		    im->build_id_size == bid_size && (!bid_size || !memcmp(im->build_id, bid, bid_size)) &&
		    im->domain == domain)
			return (uint32_t)v;
	}
	if (grow_array(&p->images, &ps->images_cap, p->nr_images + 1, sizeof(*p->images)) ||
	    grow_array(&ps->istate, &ps->istate_cap, p->nr_images + 1, sizeof(*ps->istate)) ||
	    keymap_put(&ps->image_by_key, h, k, (uint32_t)p->nr_images))
		return PROFILE_NONE;
	im = &p->images[p->nr_images];
	*im = (struct profile_image){ .kernel = kernel, .build_id_size = bid_size, .domain = domain };
	if (bid_size)
		memcpy(im->build_id, bid, bid_size);
	im->path = path ? intern(p, path) : NULL;
	im->name = intern(p, path ? base_name(path) : name);
	if ((path && !im->path) || !im->name)
		return PROFILE_NONE;
	ps->istate[p->nr_images] = (struct image_state){ 0 };
	return (uint32_t)p->nr_images++;
}

static uint32_t event_index(struct profile *p, uint32_t id)
{
	struct profile_state *ps = p->state;
	int64_t v = keymap_get(&ps->event_by_id, id, 0);
	struct profile_event *e;

	if (v >= 0)
		return (uint32_t)v;
	if (grow_array(&p->events, &ps->events_cap, p->nr_events + 1, sizeof(*p->events)) ||
	    keymap_put(&ps->event_by_id, id, 0, (uint32_t)p->nr_events))
		return PROFILE_NONE;
	e = &p->events[p->nr_events];
	*e = (struct profile_event){ .id = id };
	/* Samples of an event no EVENT record describes still count, under a made-up name. */
	snprintf(e->name, sizeof(e->name), "event%u", id);
	return (uint32_t)p->nr_events++;
}

int profile_new(struct profile **out, const struct profile_options *opt)
{
	struct profile *p = calloc(1, sizeof(*p));

	if (!p || !(p->state = calloc(1, sizeof(*p->state)))) {
		free(p);
		return -ENOMEM;
	}
	if (opt)
		p->state->opt = *opt;
	for (int d = 0; d < NR_DOMAINS; d++) {
		p->state->dom[d].kernel_mm = PROFILE_NONE;
		p->state->root_fd[d] = -2;
	}
	*out = p;
	return 0;
}

static int add_op(struct profile *p, const struct op *op)
{
	struct profile_state *ps = p->state;

	if (grow_array(&ps->ops, &ps->ops_cap, ps->nr_ops + 1, sizeof(*ps->ops)))
		return -ENOMEM;
	ps->ops[ps->nr_ops] = *op;
	ps->ops[ps->nr_ops++].seq = ps->seq;
	return 0;
}

static int add_mmap(struct profile *p, const struct kp_rec_mmap *m, uint8_t domain)
{
	uint8_t bid_size = m->build_id_size <= KP_BUILD_ID_MAX ? m->build_id_size : 0;
	struct op op = { .kind = OP_MMAP, .time = m->time, .pid = m->pid, .tid = m->tid, .domain = domain };
	uint32_t img;

	if (!m->len)
		return 0;
	img = image_id(p, m->filename, NULL, m->build_id, bid_size, m->pid == KP_PID_KERNEL, domain);
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
	    grow_array(&ps->sample_seq, &ps->sample_seq_cap, p->nr_samples + 1, sizeof(uint64_t)) ||
	    grow_array(&ps->raw, &ps->raw_cap, ps->nr_raw + n + 1, sizeof(uint64_t)))
		return -ENOMEM;
	out = &p->samples[p->nr_samples];
	*out = (struct profile_sample){
		.event = s->event_id, /* the recorded id until profile_finish maps it */
		.pid = s->pid, .tid = s->tid, .cpu = s->cpu, .cpl = s->cpl, .domain = domain,
		.time = s->time, .period = s->period,
		.nr_frames = (uint32_t)n + 1, .first_frame = ps->nr_raw,
		.comm = PROFILE_NONE,
	};
	ps->raw[ps->nr_raw++] = s->ip;
	memcpy(&ps->raw[ps->nr_raw], s->callchain, n * sizeof(uint64_t));
	ps->nr_raw += n;
	ps->sample_seq[p->nr_samples++] = ps->seq;
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
			warn(p, "%skernel symbols beyond %u MiB ignored", domain ? "guest " : "", KSYMS_TEXT_MAX >> 20);
		ps->ksyms_warned = true;
		return 0;
	}
	if (grow_array(&ps->ksyms, &ps->ksyms_cap, ps->ksyms_len + len + 1, 1))
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
	p->meta[p->nr_meta].key = intern(p, key);
	p->meta[p->nr_meta].value = intern(p, eq + 1);
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

		ev = event_index(p, e->id);
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
		comm = comm_id(p, rec->comm->comm);
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
	case KP_REC_KSYMS:
		return add_ksyms(p, rec->ksyms, rec->payload_len, domain);
	case KP_REC_LOST:
		ev = event_index(p, rec->lost->event_id);
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

/* ---- replaying process state ---- */

static uint32_t new_mm(struct profile *p, uint32_t pid, uint8_t domain)
{
	struct profile_state *ps = p->state;
	int64_t prev = keymap_get(&ps->mm_by_pid, pid, domain);
	struct mm *mm;

	if (grow_array(&ps->mms, &ps->mms_cap, ps->nr_mms + 1, sizeof(*ps->mms)))
		return PROFILE_NONE;
	mm = &ps->mms[ps->nr_mms];
	*mm = (struct mm){ .pid = pid, .comm = PROFILE_NONE, .prev = prev >= 0 ? (uint32_t)prev : PROFILE_NONE,
			   .domain = domain };
	if (keymap_put(&ps->mm_by_pid, pid, domain, (uint32_t)ps->nr_mms))
		return PROFILE_NONE;
	return (uint32_t)ps->nr_mms++;
}

static int copy_maps(struct profile *p, uint32_t dst, uint32_t src)
{
	struct profile_state *ps = p->state;
	struct mm *d = &ps->mms[dst], *s = &ps->mms[src];

	d->comm = s->comm;
	if (!s->nr)
		return 0;
	if (ps->total_maps + s->nr > MAPS_TOTAL_MAX) {
		if (!ps->maps_warned)
			warn(p, "more than %u mappings in all: later ones ignored", MAPS_TOTAL_MAX);
		ps->maps_warned = true;
		return 0;
	}
	if (grow_array(&d->maps, &d->cap, s->nr, sizeof(*d->maps)))
		return -ENOMEM;
	memcpy(d->maps, s->maps, s->nr * sizeof(*s->maps));
	d->nr = s->nr;
	ps->total_maps += s->nr;
	return 0;
}

/* The pid's address space now; a fresh one if it has none or it exited. */
static uint32_t current_mm(struct profile *p, uint32_t pid, uint8_t domain)
{
	int64_t v = keymap_get(&p->state->mm_by_pid, pid, domain);

	if (v >= 0 && !p->state->mms[v].exited)
		return (uint32_t)v;
	return new_mm(p, pid, domain);
}

static int apply_mmap(struct profile *p, const struct op *op)
{
	struct profile_state *ps = p->state;
	uint32_t idx;
	struct mm *mm;

	if (op->pid == KP_PID_KERNEL) {
		struct domain_state *d = &ps->dom[op->domain];

		if (d->kernel_mm == PROFILE_NONE) {
			/* The kernel's maps live outside the pid table: no process can replace them. */
			if (grow_array(&ps->mms, &ps->mms_cap, ps->nr_mms + 1, sizeof(*ps->mms)))
				return -ENOMEM;
			ps->mms[ps->nr_mms] = (struct mm){ .pid = KP_PID_KERNEL, .comm = PROFILE_NONE,
							   .prev = PROFILE_NONE, .domain = op->domain };
			d->kernel_mm = (uint32_t)ps->nr_mms++;
		}
		idx = d->kernel_mm;
	} else {
		idx = current_mm(p, op->pid, op->domain);
		if (idx == PROFILE_NONE)
			return -ENOMEM;
	}
	mm = &ps->mms[idx];
	if (mm->nr >= MAPS_PER_MM_MAX || ps->total_maps >= MAPS_TOTAL_MAX) {
		if (!ps->maps_warned)
			warn(p, "pid %u: too many mappings: later ones ignored", op->pid);
		ps->maps_warned = true;
		return 0;
	}
	if (grow_array(&mm->maps, &mm->cap, mm->nr + 1, sizeof(*mm->maps)))
		return -ENOMEM;
	mm->maps[mm->nr++] = op->map;
	ps->total_maps++;
	return 0;
}

static int apply_op(struct profile *p, const struct op *op)
{
	struct profile_state *ps = p->state;
	uint32_t idx;
	int64_t parent;

	switch (op->kind) {
	case OP_MMAP:
		return apply_mmap(p, op);
	case OP_COMM:
		if (op->flags & KP_COMM_EXEC) {
			/* exec: a new program, none of the old mappings. */
			idx = new_mm(p, op->pid, op->domain);
		} else {
			idx = current_mm(p, op->pid, op->domain);
			/* A thread's own name doesn't rename its process. */
			if (idx != PROFILE_NONE && op->tid != op->pid && ps->mms[idx].comm != PROFILE_NONE)
				return 0;
		}
		if (idx == PROFILE_NONE)
			return -ENOMEM;
		ps->mms[idx].comm = op->comm;
		return 0;
	case OP_FORK:
		/* A new thread shares its process's address space: nothing to do. */
		if (op->tid != op->pid)
			return 0;
		parent = keymap_get(&ps->mm_by_pid, op->ppid, op->domain);
		idx = new_mm(p, op->pid, op->domain);
		if (idx == PROFILE_NONE)
			return -ENOMEM;
		return parent >= 0 && (uint32_t)parent != idx ? copy_maps(p, idx, (uint32_t)parent) : 0;
	case OP_EXIT: {
		int64_t v = keymap_get(&ps->mm_by_pid, op->pid, op->domain);

		/* Keep the maps: samples recorded before EXIT still resolve against them. */
		if (v >= 0 && op->tid == op->pid)
			ps->mms[v].exited = true;
		return 0;
	}
	}
	return 0;
}

static int cmp_op(const void *a, const void *b)
{
	const struct op *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* ---- address spaces as sorted intervals ---- */

static size_t first_ending_after(const struct map *iv, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (iv[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Lays one map over the intervals: what it covers now belongs to it. */
static int overlay(struct map **ivs, size_t *n, size_t *cap, const struct map *m)
{
	size_t i = first_ending_after(*ivs, *n, m->start), j = i, add = 1;
	struct map left = { 0 }, right = { 0 };
	bool has_left = false, has_right = false;

	while (j < *n && (*ivs)[j].start < m->end)
		j++;
	/* Intervals i..j-1 overlap m; keep their parts outside it. */
	if (i < j && (*ivs)[i].start < m->start) {
		left = (*ivs)[i];
		left.end = m->start;
		has_left = true;
		add++;
	}
	if (i < j && (*ivs)[j - 1].end > m->end) {
		right = (*ivs)[j - 1];
		right.pgoff += m->end - right.start;
		right.start = m->end;
		has_right = true;
		add++;
	}
	if (grow_array(ivs, cap, *n - (j - i) + add, sizeof(**ivs)))
		return -ENOMEM;
	memmove(&(*ivs)[i + add], &(*ivs)[j], (*n - j) * sizeof(**ivs));
	*n = *n - (j - i) + add;
	if (has_left)
		(*ivs)[i++] = left;
	(*ivs)[i++] = *m;
	if (has_right)
		(*ivs)[i] = right;
	return 0;
}

static int build_intervals(struct mm *mm)
{
	size_t cap = 0, i;

	mm->built = true;
	for (i = 0; i < mm->nr; i++)
		if (overlay(&mm->ivs, &mm->nr_ivs, &cap, &mm->maps[i]))
			return -ENOMEM;
	return 0;
}

static const struct map *find_map(struct mm *mm, uint64_t addr)
{
	size_t i;

	if (!mm->built && build_intervals(mm))
		return NULL;
	i = first_ending_after(mm->ivs, mm->nr_ivs, addr);
	return i < mm->nr_ivs && mm->ivs[i].start <= addr ? &mm->ivs[i] : NULL;
}

/* ---- symbolization ---- */

/* The root directory a domain's files are looked up in: a descriptor, or -1 for none (host paths). */
static int domain_root(struct profile *p, uint8_t domain)
{
	struct profile_state *ps = p->state;
	const char *dir = domain == KP_DOMAIN_GUEST ? ps->opt.guest_root : ps->opt.root;
	int d = domain == KP_DOMAIN_GUEST;

	if (ps->root_fd[d] != -2)
		return ps->root_fd[d];
	ps->root_fd[d] = -1;
	if (dir) {
		ps->root_fd[d] = file_open_root(dir);
		if (ps->root_fd[d] < 0)
			warn(p, "%s: %s; no symbols for files under it", dir, strerror(-ps->root_fd[d]));
	}
	return ps->root_fd[d];
}

static struct symtab *image_symtab(struct profile *p, uint32_t img)
{
	struct profile_state *ps = p->state;
	struct image_state *is = &ps->istate[img];
	struct profile_image *im = &p->images[img];
	char shown[KP_PATH_MAX + 4096];
	const char *dir;
	int root = -1, fd, rc;

	if (is->tried)
		return is->st;
	is->tried = 1;
	/* "[vdso]", "//anon" (a JIT's code: the exact backend's emulator), "[heap]": names, not files. */
	if (!im->path || im->path[0] != '/' || im->path[1] == '/')
		return NULL;
	if (!is->host_path) {
		dir = im->domain == KP_DOMAIN_GUEST ? ps->opt.guest_root : ps->opt.root;
		root = domain_root(p, im->domain);
		if (dir && root < 0)
			return NULL;
		/* A guest's file names mean nothing on the host: only its root is searched. */
		if (!dir && im->domain == KP_DOMAIN_GUEST) {
			if (!ps->guest_files_warned)
				warn(p, "guest files are looked up only under --guest-root DIR; none given, so guest "
				     "programs and libraries have no symbols");
			ps->guest_files_warned = true;
			return NULL;
		}
	}
	/* Inside a root, every "..", absolute or relative symlink stays in it (openat2 RESOLVE_IN_ROOT). */
	fd = root >= 0 ? file_open_in_root(root, im->path) : file_open_regular(im->path);
	snprintf(shown, sizeof(shown), "%s%s", root >= 0 ? (im->domain == KP_DOMAIN_GUEST ? ps->opt.guest_root :
							     ps->opt.root) : "", im->path);
	rc = fd < 0 ? fd : symtab_open_fd(&is->st, fd, im->path, root, im->build_id, im->build_id_size);
	if (rc == -ESTALE)
		warn(p, "%s: build-id differs from the recorded one; not using it for symbols", shown);
	else if (rc == -ENOEXEC)
		warn(p, "%s: not an ELF executable or shared object; no symbols", shown);
	else if (rc)
		warn(p, "%s: %s; no symbols", shown, file_open_strerror(rc));
	if (rc)
		is->st = NULL;
	else
		im->has_symbols = true;
	return is->st;
}

static uint32_t func_id(struct profile *p, uint32_t img, const void *sym, const char *name, uint64_t addr)
{
	struct profile_state *ps = p->state;
	int64_t v = keymap_get(&ps->func_by_key, img, (uintptr_t)sym);

	if (v >= 0)
		return (uint32_t)v;
	if (grow_array(&p->funcs, &ps->funcs_cap, p->nr_funcs + 1, sizeof(*p->funcs)) ||
	    keymap_put(&ps->func_by_key, img, (uintptr_t)sym, (uint32_t)p->nr_funcs))
		return PROFILE_NONE;
	p->funcs[p->nr_funcs] = (struct profile_func){ .image = img, .name = name, .addr = addr };
	return (uint32_t)p->nr_funcs++;
}

static uint32_t add_loc(struct profile *p, uint32_t img, uint64_t addr, uint64_t rel, uint32_t func)
{
	struct profile_state *ps = p->state;

	if (func == PROFILE_NONE ||
	    grow_array(&p->locs, &ps->locs_cap, p->nr_locs + 1, sizeof(*p->locs)) ||
	    keymap_put(&ps->loc_by_key, img, rel, (uint32_t)p->nr_locs))
		return PROFILE_NONE;
	p->locs[p->nr_locs] = (struct profile_loc){ .addr = addr, .rel = rel, .func = func, .image = img };
	return (uint32_t)p->nr_locs++;
}

/* A location in a mapped file. */
static uint32_t resolve_in_map(struct profile *p, const struct map *m, uint64_t addr)
{
	struct symtab *st = image_symtab(p, m->image);
	const struct symtab_sym *sym = NULL;
	uint64_t rel;
	int64_t v;

	rel = st ? symtab_map_addr(st, addr, m->start, m->pgoff) : addr - m->start + m->pgoff;
	v = keymap_get(&p->state->loc_by_key, m->image, rel);
	if (v >= 0)
		return (uint32_t)v;
	if (st)
		sym = symtab_lookup(st, rel);
	return add_loc(p, m->image, addr, rel,
		       func_id(p, m->image, sym, sym ? sym->name : NULL, sym ? sym->addr : 0));
}

static uint32_t resolve_unknown(struct profile *p, uint32_t img, uint64_t addr)
{
	int64_t v = keymap_get(&p->state->loc_by_key, img, addr);

	if (v >= 0)
		return (uint32_t)v;
	return add_loc(p, img, addr, addr, func_id(p, img, NULL, NULL, 0));
}

/* A kernel address through kallsyms or the kernel's ELF; PROFILE_NONE if neither knows it. */
static uint32_t resolve_kernel(struct profile *p, uint8_t domain, uint64_t addr)
{
	struct domain_state *ps = &p->state->dom[domain];
	const struct kallsyms_sym *ks;
	const struct map *m;
	uint32_t img;
	int64_t v;

	if (ps->ks) {
		ks = kallsyms_lookup(ps->ks, addr);
		if (!ks)
			return PROFILE_NONE;
		img = ps->kernel_image;
		if (ks->module) {
			char name[256];

			snprintf(name, sizeof(name), "[%s]", ks->module);
			img = image_id(p, NULL, name, NULL, 0, true, domain);
			if (img == PROFILE_NONE)
				return PROFILE_NONE;
		}
		v = keymap_get(&p->state->loc_by_key, img, addr);
		if (v >= 0)
			return (uint32_t)v;
		return add_loc(p, img, addr, addr, func_id(p, img, ks, ks->name, ks->addr));
	}
	if (ps->kernel_mm != PROFILE_NONE && (m = find_map(&p->state->mms[ps->kernel_mm], addr)))
		return resolve_in_map(p, m, addr);
	return PROFILE_NONE;
}

/* A user address: the sample's address space, else a later one of the pid (maps recorded late). */
static uint32_t resolve_user(struct profile *p, uint32_t mm, uint32_t pid, uint8_t domain, uint64_t addr)
{
	struct profile_state *ps = p->state;
	const struct map *m;
	int64_t v;
	uint32_t i, steps;

	if (mm != PROFILE_NONE && (m = find_map(&ps->mms[mm], addr)))
		return resolve_in_map(p, m, addr);
	v = keymap_get(&ps->mm_by_pid, pid, domain);
	/*
	 * Only address spaces that began after the sample's: those hold maps
	 * recorded late, while earlier ones were replaced (exec) before the
	 * sample. Bounded: a pid reused many times mustn't make misses slow.
	 */
	for (i = v >= 0 ? (uint32_t)v : PROFILE_NONE, steps = 0;
	     i != PROFILE_NONE && (mm == PROFILE_NONE || i > mm) && steps < 16; i = ps->mms[i].prev, steps++)
		if ((m = find_map(&ps->mms[i], addr)))
			return resolve_in_map(p, m, addr);
	return PROFILE_NONE;
}

static bool kernel_knows(struct profile *p, uint8_t domain, uint64_t addr)
{
	struct domain_state *ps = &p->state->dom[domain];

	if (ps->ks)
		return kallsyms_lookup(ps->ks, addr) != NULL;
	return ps->kernel_mm != PROFILE_NONE && find_map(&p->state->mms[ps->kernel_mm], addr);
}

static int resolve_sample(struct profile *p, struct profile_sample *s, uint32_t mm)
{
	struct profile_state *ps = p->state;
	struct domain_state *d = &ps->dom[s->domain];
	uint8_t dom = s->domain;
	const uint64_t *raw = &ps->raw[s->first_frame];
	uint32_t n = s->nr_frames, out = 0, i, loc;
	enum { CTX_NONE, CTX_KERNEL, CTX_USER } ctx = CTX_NONE;
	bool prev_kernel = s->cpl == KP_CPL_KERNEL;

	for (i = 0; i < n; i++) {
		uint64_t a = raw[i];
		bool kernel;

		if (i && a >= CONTEXT_MARKER_MIN) {
			if (a == CONTEXT_KERNEL || a == CONTEXT_GUEST_KERNEL)
				ctx = CTX_KERNEL;
			else if (a == CONTEXT_USER || a == CONTEXT_GUEST_USER)
				ctx = CTX_USER;
			continue;
		}
		/* A chain that starts with the sampled ip repeats it: perf's does. */
		if (i && out == 1 && a == raw[0] && i == 1 + (raw[1] >= CONTEXT_MARKER_MIN))
			continue;
		if (i == 0) {
			kernel = s->cpl == KP_CPL_KERNEL;
		} else {
			/* Return addresses: the call is the instruction before. */
			a--;
			kernel = ctx == CTX_KERNEL ||
				 (ctx == CTX_NONE && (a >= KERNEL_HALF || (prev_kernel && kernel_knows(p, dom, a))));
		}
		if (kernel) {
			loc = resolve_kernel(p, dom, a);
			if (loc == PROFILE_NONE && i)
				loc = resolve_user(p, mm, s->pid, dom, a);
			if (loc == PROFILE_NONE)
				loc = resolve_unknown(p, d->kernel_image, a);
		} else {
			loc = resolve_user(p, mm, s->pid, dom, a);
			if (loc == PROFILE_NONE && i && kernel_knows(p, dom, a))
				loc = resolve_kernel(p, dom, a);
			if (loc == PROFILE_NONE)
				loc = resolve_unknown(p, d->unknown_image, a);
		}
		if (loc == PROFILE_NONE)
			return -ENOMEM;
		prev_kernel = p->images[p->locs[loc].image].kernel;
		p->frames[s->first_frame + out++] = loc;
	}
	s->nr_frames = out;
	return 0;
}

static int cmp_sample_order(const void *a, const void *b, void *arg)
{
	const struct profile *p = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	const struct profile_sample *sx = &p->samples[x], *sy = &p->samples[y];

	if (sx->time != sy->time)
		return sx->time < sy->time ? -1 : 1;
	return x < y ? -1 : x > y;
}

static int load_kernel_symbols(struct profile *p, uint8_t domain)
{
	struct domain_state *ps = &p->state->dom[domain];
	const char *path = domain ? p->state->opt.guest_kallsyms_path : p->state->opt.kallsyms_path;
	const char *what = domain ? "guest " : "";
	int rc = 0;

	if (ps->ksyms_len) {
		rc = kallsyms_parse(&ps->ks, ps->ksyms, ps->ksyms_len);
	} else if (path) {
		rc = kallsyms_load(&ps->ks, path);
		if (rc && rc != -ENOMEM) {
			warn(p, "%s: %s; no %skernel symbols", path, file_open_strerror(rc), what);
			rc = 0;
		}
	}
	if (rc)
		return rc;
	if (ps->ks && kallsyms_hidden(ps->ks))
		warn(p, "%skernel symbol addresses are all zero (kptr_restrict); no %skernel symbols", what, what);
	if (ps->ks && kallsyms_malformed(ps->ks))
		warn(p, "%zu malformed %skallsyms lines skipped", kallsyms_malformed(ps->ks), what);
	return 0;
}

/* --guest-kernel: the guest kernel's ELF (a host path) covers every guest kernel address. */
static int add_guest_kernel_elf(struct profile *p)
{
	struct profile_state *ps = p->state;
	struct op op = { .kind = OP_MMAP, .pid = KP_PID_KERNEL, .domain = KP_DOMAIN_GUEST };
	uint32_t img = image_id(p, ps->opt.guest_kernel_path, NULL, NULL, 0, true, KP_DOMAIN_GUEST);

	if (img == PROFILE_NONE)
		return -ENOMEM;
	ps->istate[img].host_path = true;
	/* A fixed-address kernel: runtime addresses are link addresses (symtab_map_addr). */
	op.map = (struct map){ .start = 0, .end = UINT64_MAX, .pgoff = 0, .image = img };
	return apply_mmap(p, &op);
}

int profile_finish(struct profile *p)
{
	struct profile_state *ps = p->state;
	uint32_t *order = NULL, *sample_mm = NULL;
	size_t i, o = 0;
	bool sorted = true;
	int rc = -ENOMEM;

	if (ps->finished)
		return -EINVAL;
	ps->finished = true;
	p->lost = ps->lost_sum > ps->end_lost ? ps->lost_sum : ps->end_lost;
	ps->dom[0].kernel_image = image_id(p, NULL, "[kernel.kallsyms]", NULL, 0, true, KP_DOMAIN_NATIVE);
	ps->dom[0].unknown_image = image_id(p, NULL, "[unknown]", NULL, 0, false, KP_DOMAIN_NATIVE);
	if (ps->dom[0].kernel_image == PROFILE_NONE || ps->dom[0].unknown_image == PROFILE_NONE)
		return -ENOMEM;
	rc = load_kernel_symbols(p, KP_DOMAIN_NATIVE);
	if (rc)
		return rc;
	/* Only a profile with guest records has guest images: a native one reads as it always did. */
	if (ps->has_guest || ps->opt.guest_kallsyms_path || ps->opt.guest_kernel_path) {
		ps->dom[1].kernel_image = image_id(p, NULL, "[guest.kernel]", NULL, 0, true, KP_DOMAIN_GUEST);
		ps->dom[1].unknown_image = image_id(p, NULL, "[unknown]", NULL, 0, false, KP_DOMAIN_GUEST);
		if (ps->dom[1].kernel_image == PROFILE_NONE || ps->dom[1].unknown_image == PROFILE_NONE)
			return -ENOMEM;
		rc = load_kernel_symbols(p, KP_DOMAIN_GUEST);
		if (!rc && ps->opt.guest_kernel_path && !ps->dom[1].ks)
			rc = add_guest_kernel_elf(p);
		if (rc)
			return rc;
	} else {
		/* Never used: no sample is in the guest domain. */
		ps->dom[1].kernel_image = ps->dom[0].kernel_image;
		ps->dom[1].unknown_image = ps->dom[0].unknown_image;
	}
	rc = -ENOMEM;

	/* Events: samples carry recorded ids until here. */
	for (i = 0; i < p->nr_samples; i++) {
		uint32_t ev = event_index(p, p->samples[i].event);

		if (ev == PROFILE_NONE)
			return -ENOMEM;
		p->samples[i].event = ev;
	}

	if (ps->nr_ops > 1)
		qsort(ps->ops, ps->nr_ops, sizeof(*ps->ops), cmp_op);
	order = malloc((p->nr_samples ? p->nr_samples : 1) * sizeof(*order));
	sample_mm = malloc((p->nr_samples ? p->nr_samples : 1) * sizeof(*sample_mm));
	p->frames = malloc((ps->nr_raw ? ps->nr_raw : 1) * sizeof(*p->frames));
	if (!order || !sample_mm || !p->frames)
		goto out;
	for (i = 0; i < p->nr_samples; i++) {
		order[i] = (uint32_t)i;
		if (i && p->samples[i].time < p->samples[i - 1].time)
			sorted = false;
	}
	if (!sorted)
		qsort_r(order, p->nr_samples, sizeof(*order), cmp_sample_order, p);

	/* Walk samples and state changes together in (time, stream order). */
	for (i = 0; i < p->nr_samples; i++) {
		struct profile_sample *s = &p->samples[order[i]];
		uint64_t seq = ps->sample_seq[order[i]];
		int64_t mm;

		while (o < ps->nr_ops && (ps->ops[o].time < s->time ||
					  (ps->ops[o].time == s->time && ps->ops[o].seq < seq))) {
			if (apply_op(p, &ps->ops[o++]))
				goto out;
		}
		mm = keymap_get(&ps->mm_by_pid, s->pid, s->domain);
		sample_mm[order[i]] = mm >= 0 ? (uint32_t)mm : PROFILE_NONE;
		if (mm >= 0)
			s->comm = ps->mms[mm].comm;
	}
	for (; o < ps->nr_ops; o++)
		if (apply_op(p, &ps->ops[o]))
			goto out;

	for (i = 0; i < p->nr_samples; i++) {
		struct profile_sample *s = &p->samples[i];
		struct profile_event *e = &p->events[s->event];
		int64_t mm = sample_mm[i];

		if (resolve_sample(p, s, (uint32_t)mm))
			goto out;
		/* Names recorded after the samples (a process table at the end) still count. */
		if (s->comm == PROFILE_NONE && mm != PROFILE_NONE)
			s->comm = ps->mms[mm].comm;
		if (s->comm == PROFILE_NONE) {
			int64_t last = keymap_get(&ps->mm_by_pid, s->pid, s->domain);

			if (last >= 0 && (mm == PROFILE_NONE || last > mm))
				s->comm = ps->mms[last].comm;
		}
		if (s->comm == PROFILE_NONE) {
			char name[32];

			snprintf(name, sizeof(name), ":%u", s->pid);
			s->comm = comm_id(p, name);
			if (s->comm == PROFILE_NONE)
				goto out;
		}
		e->samples++;
		e->weight += s->period;
		if (!profile_func_known(p, p->locs[p->frames[s->first_frame]].func)) {
			e->unresolved++;
			p->unresolved++;
		}
	}
	rc = 0;
out:
	free(order);
	free(sample_mm);
	free(ps->raw);
	ps->raw = NULL;
	free(ps->sample_seq);
	ps->sample_seq = NULL;
	return rc;
}

void profile_free(struct profile *p)
{
	struct profile_state *ps;
	size_t i;

	if (!p)
		return;
	ps = p->state;
	if (ps) {
		for (i = 0; i < p->nr_images; i++)
			symtab_close(ps->istate[i].st);
		for (i = 0; i < ps->nr_mms; i++) {
			free(ps->mms[i].maps);
			free(ps->mms[i].ivs);
		}
		for (i = 0; i < ps->nr_strs; i++)
			free(ps->str_list[i]);
		free(ps->str_list);
		free(ps->mms);
		free(ps->istate);
		free(ps->ops);
		free(ps->raw);
		free(ps->sample_seq);
		for (int d = 0; d < NR_DOMAINS; d++) {
			if (ps->root_fd[d] >= 0)
				close(ps->root_fd[d]);
			free(ps->dom[d].ksyms);
			kallsyms_free(ps->dom[d].ks);
		}
		keymap_free(&ps->event_by_id);
		keymap_free(&ps->image_by_key);
		keymap_free(&ps->func_by_key);
		keymap_free(&ps->loc_by_key);
		keymap_free(&ps->comm_by_str);
		keymap_free(&ps->strs);
		keymap_free(&ps->mm_by_pid);
		free(ps);
	}
	free(p->events);
	free(p->images);
	free(p->funcs);
	free(p->locs);
	free(p->samples);
	free(p->frames);
	free(p->comms);
	free(p->meta);
	free(p);
}

uint32_t profile_comm(struct profile *p, const char *name)
{
	return comm_id(p, name);
}
