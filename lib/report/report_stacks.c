/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "report/report.h"
#include "common/utf8.h"

int report_stacks_add(struct report_stacks *rs, uint32_t group, const uint32_t *ids, uint32_t nr,
		      uint64_t weight)
{
	uint64_t h = keymap_hash(ids, nr * sizeof(*ids), group);
	struct report_stack *s;
	uint64_t k;

	/* Equal hashes of different stacks chain through the second key. */
	for (k = 0;; k++) {
		int64_t v = keymap_get(&rs->index, h, k);

		if (v < 0)
			break;
		s = &rs->stacks[v];
		if (s->group == group && s->nr == nr && !memcmp(&rs->ids[s->first], ids, nr * sizeof(*ids))) {
			s->count++;
			s->weight += weight;
			return 0;
		}
	}
	if (grow_array(&rs->stacks, &rs->cap, rs->nr + 1, sizeof(*rs->stacks)) ||
	    grow_array(&rs->ids, &rs->ids_cap, rs->nr_ids + nr + 1, sizeof(*rs->ids)) ||
	    keymap_put(&rs->index, h, k, (uint32_t)rs->nr))
		return -ENOMEM;
	memcpy(&rs->ids[rs->nr_ids], ids, nr * sizeof(*ids));
	rs->stacks[rs->nr++] = (struct report_stack){
		.group = group, .nr = nr, .first = rs->nr_ids, .count = 1, .weight = weight,
	};
	rs->nr_ids += nr;
	return 0;
}

void report_stacks_free(struct report_stacks *rs)
{
	free(rs->stacks);
	free(rs->ids);
	keymap_free(&rs->index);
	memset(rs, 0, sizeof(*rs));
}

const char *report_func_name(const struct profile *p, uint32_t func)
{
	return p->funcs[func].name ? p->funcs[func].name : "[unknown]";
}

void report_frame(char *buf, size_t len, const struct profile *p, uint32_t func)
{
	const struct profile_func *f = &p->funcs[func];

	/* A VM exit's frame names itself: "[exit: io out 0x3f8]". */
	if (p->images[f->image].vm_exit)
		snprintf(buf, len, "%s", report_func_name(p, func));
	else
		snprintf(buf, len, "%s`%s", p->images[f->image].name, report_func_name(p, func));
	/* snprintf may have cut a UTF-8 sequence: the sanitizer replaces its remains. */
	utf8_sanitize(buf, '_', "; ");
}
