// SPDX-License-Identifier: MIT
/*
 * ring_client: drains kvmprof-vmm's guest-sample rings for the end-to-end
 * tests (tests/e2e/guest-sampler.sh), the way the host profiler does:
 * sample-start on the control socket, the memfd from the reply (SCM_RIGHTS),
 * the rings drained for D seconds, sample-stop, the rest drained. Every
 * record is checked as a sample-file reader checks it (size, alignment, CRC,
 * string termination, callchain length) and a bad one fails the run.
 *
 *   ring_client [-p NS] [-g] [-d SECONDS] [-o FILE] [-x] SOCKET
 *     -p NS   period in ns of vCPU thread time (default 1000000)
 *     -g      callgraph
 *     -d S    seconds to drain before sample-stop (default 2)
 *     -o FILE also write the records as a sample file (header, records, END)
 *     -x      vanish after -d seconds without sample-stop (exit 0)
 *     -a      print every RIP, not the ten most frequent
 *
 * Prints the two replies, "read: samples=N records=N lost=N", "match" or
 * "MISMATCH" against sample-stop's counts, then "pid P COMM: N" per guest
 * process, "callchains: N samples with frames, deepest D, user chains ending
 * in main's caller..." and "rip 0xADDR pid P cpl C: N" for the ten most
 * frequent RIPs; with -g every "chain" of a user sample whose frames
 * are wanted by the test: "chain pid P: IP CALLER..." for the first 200.
 * Exit 0, or 1 on any bad record or mismatch.
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "kvmprof/guest_ring.h"
#include "kvmprof/sample_format.h"

#define MAX_PIDS 256
#define MAX_RIPS 4096

static struct { uint32_t pid; char comm[KP_COMM_MAX + 4]; uint64_t n; } pids[MAX_PIDS];
static unsigned int npids;
static struct { uint64_t ip; uint32_t pid; uint8_t cpl; uint64_t n; } rips[MAX_RIPS];
static unsigned int nrips;
static uint64_t samples, records, bad, chained, deepest, chains_shown;
static FILE *out;

static void die(const char *what)
{
	fprintf(stderr, "ring_client: %s: %s\n", what, strerror(errno));
	exit(2);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Reads one reply line; with fdp, takes the descriptor that came with it. */
static void read_line(int s, char *buf, size_t size, int *fdp)
{
	size_t len = 0;

	while (len < size - 1) {
		union { char b[CMSG_SPACE(sizeof(int))]; struct cmsghdr a; } u;
		struct iovec iov = { buf + len, 1 };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = sizeof(u.b) };
		struct pollfd p = { .fd = s, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 20000) <= 0) {
			fprintf(stderr, "ring_client: no reply in 20 s\n");
			exit(2);
		}
		n = recvmsg(s, &msg, MSG_CMSG_CLOEXEC);
		if (n <= 0) {
			fprintf(stderr, "ring_client: the VMM closed the connection\n");
			exit(2);
		}
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && fdp)
				memcpy(fdp, CMSG_DATA(c), sizeof(int));
		if (buf[len] == '\n')
			break;
		len++;
	}
	buf[len] = '\0';
}

static uint64_t json_u64(const char *line, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(line, pat);
	return p ? strtoull(p + strlen(pat), NULL, 10) : UINT64_MAX;
}

static void count_sample(const struct kp_rec_sample *s)
{
	unsigned int i;

	samples++;
	if (s->nr_callchain) {
		chained++;
		if (s->nr_callchain > deepest)
			deepest = s->nr_callchain;
		if (chains_shown < 200 && s->cpl == KP_CPL_USER && s->pid) {
			chains_shown++;
			printf("chain pid %u: 0x%llx", s->pid, (unsigned long long)s->ip);
			for (unsigned int k = 0; k < s->nr_callchain; k++)
				printf(" 0x%llx", (unsigned long long)s->callchain[k]);
			putchar('\n');
		}
	}
	for (i = 0; i < npids && pids[i].pid != s->pid; i++)
		;
	if (i == npids && npids < MAX_PIDS) {
		pids[npids].pid = s->pid;
		strcpy(pids[npids].comm, "?");
		npids++;
	}
	if (i < npids)
		pids[i].n++;
	for (i = 0; i < nrips && (rips[i].ip != s->ip || rips[i].pid != s->pid); i++)
		;
	if (i == nrips && nrips < MAX_RIPS) {
		rips[nrips].ip = s->ip;
		rips[nrips].pid = s->pid;
		rips[nrips].cpl = s->cpl;
		nrips++;
	}
	if (i < nrips)
		rips[i].n++;
}

static void name_pid(const struct kp_rec_comm *c)
{
	unsigned int i;

	for (i = 0; i < npids && pids[i].pid != c->pid; i++)
		;
	if (i == npids && npids < MAX_PIDS)
		pids[npids++].pid = c->pid;
	if (i < npids)
		memcpy(pids[i].comm, c->comm, sizeof(c->comm));
}

static bool check(const uint8_t *rec, uint32_t size, char *why, size_t n)
{
	struct kp_rec_header h;
	uint32_t crc, plen = size - (uint32_t)sizeof(h);
	const uint8_t *p = rec + sizeof(h);

	memcpy(&h, rec, sizeof(h));
	crc = (uint32_t)crc32(crc32(0, rec, 8), p, plen);
	if (crc != h.crc || h.reserved)
		return snprintf(why, n, "type %u: bad CRC or reserved", h.type), false;
	switch (h.type) {
	case KP_REC_SAMPLE: {
		const struct kp_rec_sample *s = (const void *)p;
		if (plen < sizeof(*s) || s->nr_callchain > KP_CALLCHAIN_MAX ||
		    plen != sizeof(*s) + s->nr_callchain * 8u || (s->cpl != 0 && s->cpl != 3) || s->domain != KP_DOMAIN_GUEST)
			return snprintf(why, n, "bad SAMPLE"), false;
		count_sample(s);
		return true;
	}
	case KP_REC_COMM: {
		const struct kp_rec_comm *c = (const void *)p;
		if (plen < sizeof(*c) || !memchr(c->comm, 0, sizeof(c->comm)) || !(c->flags & KP_COMM_GUEST))
			return snprintf(why, n, "bad COMM"), false;
		name_pid(c);
		return true;
	}
	case KP_REC_MMAP: {
		const struct kp_rec_mmap *m = (const void *)p;
		if (plen <= sizeof(*m) || !memchr(m->filename, 0, plen - sizeof(*m)) || m->domain != KP_DOMAIN_GUEST)
			return snprintf(why, n, "bad MMAP"), false;
		printf("mmap pid %d %s 0x%llx+0x%llx\n", (int)m->pid, m->filename, (unsigned long long)m->start,
		       (unsigned long long)m->len);
		return true;
	}
	default:
		return snprintf(why, n, "unexpected record type %u", h.type), false;
	}
}

/* Drains one ring; the VMM is as untrusted here as a sample file. */
static void drain(struct kp_ring_ctl *ctl, const uint8_t *data, uint64_t dsize)
{
	uint64_t head = __atomic_load_n(&ctl->head, __ATOMIC_ACQUIRE), tail = ctl->tail;
	char why[128];

	while (tail < head) {
		uint64_t pos = tail % dsize, room = dsize - pos;
		struct kp_rec_header h;

		if (room < sizeof(h)) {
			tail += room;
			continue;
		}
		memcpy(&h, data + pos, sizeof(h));
		if (h.type == KP_RING_PAD) {
			if (h.size != room) {
				fprintf(stderr, "BAD pad of %u bytes, %llu left\n", h.size, (unsigned long long)room);
				bad++;
			}
			tail += room;
			continue;
		}
		if (h.size < sizeof(h) || h.size % 8 || h.size > room || h.size > head - tail || h.size > KP_REC_MAX_SIZE) {
			fprintf(stderr, "BAD record size %u at %llu\n", h.size, (unsigned long long)tail);
			bad++;
			tail = head;
			break;
		}
		if (!check(data + pos, h.size, why, sizeof(why))) {
			fprintf(stderr, "BAD %s\n", why);
			bad++;
		} else {
			records++;
			if (out)
				fwrite(data + pos, 1, h.size, out);
		}
		tail += h.size;
	}
	__atomic_store_n(&ctl->tail, tail, __ATOMIC_RELEASE);
}

int main(int argc, char **argv)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	uint64_t period = 1000000, t0;
	double secs = 2;
	bool callgraph = false, vanish = false, all = false;
	const char *outpath = NULL, *linux_layout = NULL;
	char req[1024], line[4096];
	int opt, s, fd = -1;
	struct kp_ring_header *h;
	uint8_t *map;
	uint64_t lost = 0, rsamples, rlost;

	while ((opt = getopt(argc, argv, "p:gd:o:xal:")) != -1) {
		switch (opt) {
		case 'p': period = strtoull(optarg, NULL, 10); break;
		case 'g': callgraph = true; break;
		case 'd': secs = atof(optarg); break;
		case 'o': outpath = optarg; break;
		case 'x': vanish = true; break;
		case 'a': all = true; break;
		case 'l': linux_layout = optarg; break; /* sample-start's "linux" object, as JSON text */
		default: return 2;
		}
	}
	if (optind != argc - 1 || strlen(argv[optind]) >= sizeof(addr.sun_path))
		return 2;
	strcpy(addr.sun_path, argv[optind]);
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&addr, sizeof(addr)) < 0)
		die("connect");
	snprintf(req, sizeof(req), "{\"cmd\":\"sample-start\",\"event\":\"cpu-clock\",\"period\":%llu,\"callgraph\":%s%s%.700s}\n",
		 (unsigned long long)period, callgraph ? "true" : "false", linux_layout ? ",\"linux\":" : "",
		 linux_layout ? linux_layout : "");
	if (write(s, req, strlen(req)) != (ssize_t)strlen(req))
		die("write");
	read_line(s, line, sizeof(line), &fd);
	printf("start: %s\n", line);
	if (strncmp(line, "{\"ok\":true", 10) || fd < 0) {
		fprintf(stderr, "ring_client: sample-start failed or came without a descriptor\n");
		return 1;
	}
	map = mmap(NULL, json_u64(line, "ring_size"), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		die("mmap");
	h = (struct kp_ring_header *)map;
	if (memcmp(h->magic, KP_RING_MAGIC, 8) || h->version != KP_RING_VERSION || h->stride != KP_RING_PAGE + h->data_size ||
	    (uint64_t)KP_RING_PAGE + h->nr_rings * h->stride > json_u64(line, "ring_size")) {
		fprintf(stderr, "ring_client: bad ring header\n");
		return 1;
	}
	if (outpath) {
		struct kp_file_header fh = { .magic = KP_FILE_MAGIC, .version_major = KP_FILE_VERSION_MAJOR,
					     .version_minor = KP_FILE_VERSION_MINOR, .header_size = sizeof(fh),
					     .source = KP_SOURCE_VMM };
		out = fopen(outpath, "wb");
		if (!out)
			die(outpath);
		fwrite(&fh, 1, sizeof(fh), out);
	}
	t0 = now_ns();
	while (now_ns() - t0 < (uint64_t)(secs * 1e9)) {
		for (uint32_t i = 0; i < h->nr_rings; i++)
			drain((struct kp_ring_ctl *)(map + KP_RING_PAGE + i * h->stride),
			      map + KP_RING_PAGE + i * h->stride + KP_RING_PAGE, h->data_size);
		usleep(20000);
	}
	if (vanish) {
		printf("vanishing after %llu samples\n", (unsigned long long)samples);
		return 0;
	}
	if (write(s, "{\"cmd\":\"sample-stop\"}\n", 22) != 22)
		die("write");
	read_line(s, line, sizeof(line), NULL);
	printf("stop: %s\n", line);
	for (uint32_t i = 0; i < h->nr_rings; i++) {
		struct kp_ring_ctl *ctl = (struct kp_ring_ctl *)(map + KP_RING_PAGE + i * h->stride);
		drain(ctl, map + KP_RING_PAGE + i * h->stride + KP_RING_PAGE, h->data_size);
		lost += ctl->lost;
	}
	rsamples = json_u64(line, "samples");
	rlost = json_u64(line, "lost");
	printf("read: samples=%llu records=%llu lost=%llu bad=%llu\n", (unsigned long long)samples,
	       (unsigned long long)records, (unsigned long long)lost, (unsigned long long)bad);
	printf("%s\n", rsamples == samples && rlost == lost ? "match" : "MISMATCH");
	for (unsigned int i = 0; i < npids; i++)
		printf("pid %u %s: %llu\n", pids[i].pid, pids[i].comm, (unsigned long long)pids[i].n);
	printf("callchains: %llu samples with frames, deepest %llu\n", (unsigned long long)chained,
	       (unsigned long long)deepest);
	for (unsigned int k = 0; all || k < 10; k++) {
		unsigned int best = nrips;
		for (unsigned int i = 0; i < nrips; i++)
			if (rips[i].n && (best == nrips || rips[i].n > rips[best].n))
				best = i;
		if (best == nrips)
			break;
		printf("rip 0x%llx pid %u cpl %u: %llu\n", (unsigned long long)rips[best].ip, rips[best].pid,
		       rips[best].cpl, (unsigned long long)rips[best].n);
		rips[best].n = 0;
	}
	if (out) {
		struct { struct kp_rec_header h; struct kp_rec_end e; } end = {
			.h = { .type = KP_REC_END, .size = sizeof(end) },
			.e = { .samples = samples, .lost = lost, .records = records, .duration_ns = now_ns() - t0 },
		};
		end.h.crc = (uint32_t)crc32(crc32(0, (const uint8_t *)&end, 8), (const uint8_t *)&end.e, sizeof(end.e));
		fwrite(&end, 1, sizeof(end), out);
		if (fclose(out))
			die(outpath);
	}
	return bad || rsamples != samples || rlost != lost ? 1 : 0;
}
