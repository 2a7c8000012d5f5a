/* SPDX-License-Identifier: MIT */
#include "common/suggest.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

int suggest_distance(const char *a, const char *b)
{
	enum { MAXLEN = 128 };
	int la = (int)strlen(a), lb = (int)strlen(b);
	int rows[3][MAXLEN + 1], *prev2 = rows[0], *prev = rows[1], *cur = rows[2];

	if (la > MAXLEN || lb > MAXLEN)
		return MAXLEN;
	for (int j = 0; j <= lb; j++)
		prev[j] = j;
	for (int i = 1; i <= la; i++) {
		cur[0] = i;
		for (int j = 1; j <= lb; j++) {
			int cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
			int d = prev[j] + 1;

			if (cur[j - 1] + 1 < d)
				d = cur[j - 1] + 1;
			if (prev[j - 1] + cost < d)
				d = prev[j - 1] + cost;
			if (i > 1 && j > 1 && tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 2]) &&
			    tolower((unsigned char)a[i - 2]) == tolower((unsigned char)b[j - 1]) &&
			    prev2[j - 2] + 1 < d)
				d = prev2[j - 2] + 1;
			cur[j] = d;
		}
		int *t = prev2;

		prev2 = prev;
		prev = cur;
		cur = t;
	}
	return prev[lb];
}

void suggest_init(struct suggest *s, const char *name, int max)
{
	size_t len = strlen(name);

	memset(s, 0, sizeof(*s));
	s->name = name;
	s->max = max < SUGGEST_MAX ? max : SUGGEST_MAX;
	/* Typos cost one or two edits in short names, more in long ones. */
	s->threshold = len / 3 > 2 ? (int)(len / 3) : 2;
}

void suggest_consider(struct suggest *s, const char *candidate)
{
	int d = suggest_distance(s->name, candidate), at;

	if (d > s->threshold)
		return;
	for (int i = 0; i < s->n; i++)
		if (!strcasecmp(s->names[i], candidate))
			return;
	/* Keep the list sorted by distance, first found first among equals. */
	for (at = s->n; at > 0 && s->dist[at - 1] > d; at--)
		;
	if (at >= s->max)
		return;
	if (s->n < s->max)
		s->n++;
	for (int i = s->n - 1; i > at; i--) {
		s->dist[i] = s->dist[i - 1];
		memcpy(s->names[i], s->names[i - 1], SUGGEST_NAME_MAX);
	}
	s->dist[at] = d;
	snprintf(s->names[at], SUGGEST_NAME_MAX, "%s", candidate);
}

int suggest_format(const struct suggest *s, char *out, size_t outlen)
{
	size_t n = 0;

	if (outlen)
		out[0] = 0;
	for (int i = 0; i < s->n && n < outlen; i++)
		n += (size_t)snprintf(out + n, outlen - n, "%s%s", i ? ", " : "", s->names[i]);
	return s->n;
}
