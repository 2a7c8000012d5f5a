// SPDX-License-Identifier: MIT
/*
 * ring_client: drains kvmprof-vmm's guest-sample rings for the end-to-end
 * tests (tests/e2e/guest-sampler.sh) and bench/host.sh through the host
 * profiler's own ring reader (host-profiler/guest_ring_reader.c), so that
 * the tests exercise the code `kvmprof record` runs: sample-start on the
 * control socket, the memfd from the reply (SCM_RIGHTS) mapped and checked
 * by guest_rings_map, the rings drained into a sample file for D seconds,
 * sample-stop, the rest drained, END. The file is then read back through
 * the project's checked reader (lib/format/sample_file.c) and every record is held
 * to what the VMM may send (guest domain, CPL 0 or 3, only SAMPLE, COMM and
 * MMAP); a record the ring reader refused or a bad one fails the run.
 *
 *   ring_client [-p NS] [-g] [-e] [-d SECONDS] [-o FILE] [-x] [-a] [-l JSON] SOCKET
 *     -p NS   period in ns of vCPU thread time (default 1000000)
 *     -g      callgraph
 *     -e      a VM_EXIT record per exit too (sample-start "exits")
 *     -d S    seconds to drain before sample-stop (default 2)
 *     -o FILE keep the sample file there (default: in memory only)
 *     -x      vanish after -d seconds without sample-stop (exit 0)
 *     -a      print every RIP, not the ten most frequent
 *     -l JSON sample-start's "linux" object (a Linux task layout)
 *
 * Prints the two replies, "read: samples=N records=N lost=N bad=N", "match"
 * or "MISMATCH" against sample-stop's counts, then "pid P COMM: N" per guest
 * process, "mmap pid P FILE 0xSTART+0xLEN" per mapping, "callchains: N
 * samples with frames, deepest D", with -e "exits: records=N signal=N"
 * (the VM_EXIT records read, and those of a signal: forced exits), and "rip 0xADDR pid P cpl C: N" for the
 * ten most frequent RIPs; with -g every "chain" of a user sample: "chain
 * pid P: IP CALLER..." for the first 200. Exit 0, or 1 on any bad record or
 * mismatch, 2 when the VMM cannot be talked to.
 */
#include <errno.h>
#include <fcntl.h>
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

#include "guest_ring_reader.h"
#include "kvmprof/sample_format.h"
#include "format/sample_file.h"

#define MAX_PIDS 256
#define MAX_RIPS 4096

static struct { uint32_t pid; char comm[KP_COMM_MAX + 4]; uint64_t n; } pids[MAX_PIDS];
static unsigned int npids;
static struct { uint64_t ip; uint32_t pid; uint8_t cpl; uint64_t n; } rips[MAX_RIPS];
static unsigned int nrips;
static uint64_t samples, records, bad, chained, deepest, chains_shown;
static bool exits_asked;
static uint64_t exit_records, signal_exits; /* with -e: VM_EXIT records read, and those of a signal */

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

/*
 * What the VMM may put in its rings, beyond what the reader checks (sizes,
 * CRC, string termination, callchain length): guest records of three types.
 * NULL if the record is one, else what is wrong.
 */
static const char *take_vmm_record(const struct kp_record *rec)
{
	switch (rec->type) {
	case KP_REC_SAMPLE:
		if ((rec->sample->cpl != KP_CPL_KERNEL && rec->sample->cpl != KP_CPL_USER) ||
		    rec->sample->domain != KP_DOMAIN_GUEST)
			return "SAMPLE of another CPL or domain";
		count_sample(rec->sample);
		return NULL;
	case KP_REC_COMM:
		if (!(rec->comm->flags & KP_COMM_GUEST))
			return "COMM without the guest flag";
		name_pid(rec->comm);
		return NULL;
	case KP_REC_VM_EXIT:
		if (!exits_asked)
			return "VM_EXIT without sample-start's \"exits\"";
		exit_records++;
		signal_exits += rec->vm_exit->kind == KP_EXIT_SIGNAL;
		return NULL;
	case KP_REC_MMAP:
		if (rec->mmap->domain != KP_DOMAIN_GUEST)
			return "MMAP of another domain";
		printf("mmap pid %d %s 0x%llx+0x%llx\n", (int)rec->mmap->pid, rec->mmap->filename,
		       (unsigned long long)rec->mmap->start, (unsigned long long)rec->mmap->len);
		return NULL;
	default:
		return "a record type the VMM does not send";
	}
}

/* Reads the drained file back through the checked reader: every record, then END. */
static void read_back(const char *path)
{
	struct kp_reader *r;
	struct kp_record rec;
	char err[512];
	int n;

	if (kp_reader_open(&r, path, err, sizeof(err))) {
		fprintf(stderr, "BAD %s\n", err);
		bad++;
		return;
	}
	while ((n = kp_reader_next(r, &rec, err, sizeof(err))) > 0) {
		const char *why = take_vmm_record(&rec);

		if (why) {
			fprintf(stderr, "BAD offset %llu: %s (type %u)\n", (unsigned long long)rec.offset, why, rec.type);
			bad++;
		} else {
			records++;
		}
	}
	if (n < 0) {
		fprintf(stderr, "BAD %s\n", err);
		bad++;
	}
	kp_reader_close(r);
}

/* Drains the rings every 20 ms for `secs` seconds. */
static void drain_for(struct guest_rings *g, struct kp_writer *w, double secs)
{
	uint64_t t0 = now_ns();

	while (now_ns() - t0 < (uint64_t)(secs * 1e9)) {
		if (guest_rings_drain(g, w))
			die("writing the drained records");
		usleep(20000);
	}
}

int main(int argc, char **argv)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct guest_rings g;
	struct kp_writer *w;
	uint64_t period = 1000000, t0, lost, rsamples, rlost;
	double secs = 2;
	bool callgraph = false, vanish = false, all = false;
	const char *outpath = NULL, *linux_layout = NULL, *file;
	char req[1024], line[4096], err[512], memfd_path[64];
	int opt, s, fd = -1, out;

	while ((opt = getopt(argc, argv, "p:ged:o:xal:")) != -1) {
		switch (opt) {
		case 'p': period = strtoull(optarg, NULL, 10); break;
		case 'g': callgraph = true; break;
		case 'e': exits_asked = true; break;
		case 'd': secs = atof(optarg); break;
		case 'o': outpath = optarg; break;
		case 'x': vanish = true; break;
		case 'a': all = true; break;
		case 'l': linux_layout = optarg; break;
		default: return 2;
		}
	}
	if (optind != argc - 1 || strlen(argv[optind]) >= sizeof(addr.sun_path))
		return 2;
	strcpy(addr.sun_path, argv[optind]);
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&addr, sizeof(addr)) < 0)
		die("connect");
	snprintf(req, sizeof(req),
		 "{\"cmd\":\"sample-start\",\"event\":\"cpu-clock\",\"period\":%llu,\"callgraph\":%s,\"exits\":%s%s%.700s}\n",
		 (unsigned long long)period, callgraph ? "true" : "false", exits_asked ? "true" : "false",
		 linux_layout ? ",\"linux\":" : "",
		 linux_layout ? linux_layout : "");
	if (write(s, req, strlen(req)) != (ssize_t)strlen(req))
		die("write");
	read_line(s, line, sizeof(line), &fd);
	printf("start: %s\n", line);
	if (strncmp(line, "{\"ok\":true", 10) || fd < 0) {
		fprintf(stderr, "ring_client: sample-start failed or came without a descriptor\n");
		return 1;
	}
	if (guest_rings_map(&g, fd, err, sizeof(err))) {
		fprintf(stderr, "ring_client: %s\n", err);
		return 1;
	}
	close(fd);
	out = outpath ? open(outpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)
		      : memfd_create("ring_client", MFD_CLOEXEC);
	if (out < 0)
		die(outpath ? outpath : "memfd_create");
	snprintf(memfd_path, sizeof(memfd_path), "/proc/self/fd/%d", out);
	file = outpath ? outpath : memfd_path;
	if (kp_writer_open(&w, out, KP_SOURCE_VMM))
		die("kp_writer_open");
	t0 = now_ns();
	drain_for(&g, w, secs);
	if (vanish) {
		printf("vanishing after %llu samples\n", (unsigned long long)g.samples);
		return 0;
	}
	if (write(s, "{\"cmd\":\"sample-stop\"}\n", 22) != 22)
		die("write");
	read_line(s, line, sizeof(line), NULL);
	printf("stop: %s\n", line);
	if (guest_rings_drain(&g, w))
		die("writing the drained records");
	lost = guest_rings_lost(&g);
	if (kp_writer_close(w, lost, now_ns() - t0))
		die("writing END");
	if (g.bad)
		fprintf(stderr, "BAD the ring reader refused %llu records\n", (unsigned long long)g.bad);
	bad += g.bad;
	read_back(file);
	guest_rings_unmap(&g);
	close(out);

	rsamples = json_u64(line, "samples");
	rlost = json_u64(line, "lost");
	printf("read: samples=%llu records=%llu lost=%llu bad=%llu\n", (unsigned long long)samples,
	       (unsigned long long)records, (unsigned long long)lost, (unsigned long long)bad);
	printf("%s\n", rsamples == samples && rlost == lost ? "match" : "MISMATCH");
	for (unsigned int i = 0; i < npids; i++)
		printf("pid %u %s: %llu\n", pids[i].pid, pids[i].comm, (unsigned long long)pids[i].n);
	printf("callchains: %llu samples with frames, deepest %llu\n", (unsigned long long)chained,
	       (unsigned long long)deepest);
	if (exits_asked)
		printf("exits: records=%llu signal=%llu\n", (unsigned long long)exit_records,
		       (unsigned long long)signal_exits);
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
	return bad || rsamples != samples || rlost != lost ? 1 : 0;
}
