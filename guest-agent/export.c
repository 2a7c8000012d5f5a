/* SPDX-License-Identifier: MIT */
#include "export.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "collection/emit.h"
#include "kernel_layout.h"
#include "format/sample_file.h"

/*
 * A serial line must pass every byte unchanged: no CR/LF translation, no
 * echo, no XON/XOFF eating 0x11/0x13. 115200 8N1 without flow control is
 * what kvmprof-vmm's 8250 expects (it ignores the rate anyway).
 */
static int make_raw(int fd, struct termios *saved, const char *dev)
{
	struct termios t;

	if (tcgetattr(fd, saved)) {
		fprintf(stderr, "kvmprof-agent: tcgetattr %s: %s\n", dev, strerror(errno));
		return -errno;
	}
	t = *saved;
	cfmakeraw(&t);
	cfsetispeed(&t, B115200);
	cfsetospeed(&t, B115200);
	t.c_cflag &= ~(tcflag_t)(CSIZE | PARENB | CSTOPB | CRTSCTS);
	t.c_cflag |= CS8 | CLOCAL | CREAD;
	t.c_iflag &= ~(tcflag_t)(IXON | IXOFF | IXANY);
	if (tcsetattr(fd, TCSANOW, &t)) {
		fprintf(stderr, "kvmprof-agent: tcsetattr %s: %s\n", dev, strerror(errno));
		return -errno;
	}
	return 0;
}

/*
 * The task layout first, so that a reader looking only for it (kvmprof
 * record --guest-export) finds it early. A kernel without BTF or data
 * symbols still gets its maps and symbols exported: the reason goes into
 * META task_layout and onto stderr.
 */
static int write_layout(struct emit_ctx *e)
{
	struct kp_rec_task_layout l;
	char why[LAYOUT_WHY_MAX], buf[LAYOUT_WHY_MAX + 32];

	if (layout_read(&l, why)) {
		fprintf(stderr, "kvmprof-agent: no task layout in the export: %s\n", why);
		snprintf(buf, sizeof(buf), "unavailable: %s", why);
		return kp_writer_meta(e->w, "task_layout", buf);
	}
	fprintf(stderr,
		"kvmprof-agent: task layout: current_task 0x%" PRIx64 "%s, __per_cpu_offset 0x%" PRIx64
		", task_struct pid +%u tgid +%u comm +%u[%u] (%u bytes)\n",
		l.current_task, l.flags & KP_LAYOUT_PCPU_HOT ? " (in pcpu_hot)" : "", l.per_cpu_offset, l.task_pid,
		l.task_tgid, l.task_comm, l.task_comm_size, l.task_size);
	return kp_writer_add(e->w, KP_REC_TASK_LAYOUT, &l, sizeof(l));
}

static int write_stream(struct emit_ctx *e, const struct export_opts *o, uint64_t *nsyms)
{
	bool hidden = false;
	int r = emit_meta_system(e);

	if (!r)
		r = kp_writer_meta(e->w, "command", "export");
	if (!r)
		r = write_layout(e);
	if (!r) {
		r = emit_kallsyms(e, &hidden, nsyms, !o->all_symbols);
		if (r == -ENOENT || r == -EACCES) {
			fprintf(stderr, "kvmprof-agent: /proc/kallsyms: %s; exporting process maps only\n", strerror(-r));
			r = 0;
		} else if (!r && hidden) {
			fprintf(stderr, "kvmprof-agent: /proc/kallsyms shows only zero addresses (kernel.kptr_restrict or "
					"perf_event_paranoid hide them from this user); "
					"exporting process maps only\n");
			*nsyms = 0;
		}
	}
	if (r)
		return r;
	if (!o->pids)
		return emit_all_processes(e, 0);
	for (size_t i = 0; i < o->npids; i++) {
		r = emit_process(e, o->pids[i], 0);
		if (r == -ESRCH) {
			fprintf(stderr, "kvmprof-agent: no process %d\n", (int)o->pids[i]);
			return r;
		}
		if (r)
			return r;
	}
	return 0;
}

int export_run(const struct export_opts *o)
{
	const char *dev = o->output ? o->output : EXPORT_DEFAULT_DEVICE;
	struct termios saved;
	bool tty = false;
	struct kp_writer *w = NULL;
	struct emit_ctx e;
	uint64_t nsyms = 0, start = emit_now_ns(), bytes = 0;
	struct stat st;
	int fd, r;

	/*
	 * -o FILE is created (tests, or to carry the stream by hand); the
	 * default device must exist: creating a regular /dev/ttyS1 would hide
	 * that the guest has no second UART.
	 */
	fd = open(dev, O_WRONLY | O_NOCTTY | O_CLOEXEC | (o->output ? O_CREAT | O_TRUNC : 0), 0644);
	if (fd < 0) {
		fprintf(stderr, "kvmprof-agent: cannot open %s: %s\n", dev, strerror(errno));
		return 1;
	}
	if (isatty(fd)) {
		if (make_raw(fd, &saved, dev)) {
			close(fd);
			return 1;
		}
		tty = true;
	}
	r = kp_writer_open(&w, fd, KP_SOURCE_LINUX_AGENT);
	emit_init(&e, w);
	if (!r)
		r = write_stream(&e, o, &nsyms);
	if (!r) {
		bytes = kp_writer_bytes(w);
		r = kp_writer_close(w, 0, emit_now_ns() - start);
		w = NULL;
	}
	if (w)
		kp_writer_abort(w);
	/* Everything must have left the UART before the line settings go back. */
	if (tty) {
		if (!r && tcdrain(fd)) {
			fprintf(stderr, "kvmprof-agent: tcdrain %s: %s\n", dev, strerror(errno));
			r = -EIO;
		}
		tcsetattr(fd, TCSANOW, &saved);
	}
	if (!r && !fstat(fd, &st) && S_ISREG(st.st_mode))
		bytes = (uint64_t)st.st_size;
	if (close(fd) && !r)
		r = -errno;
	if (r) {
		if (r != -ESRCH)
			fprintf(stderr, "kvmprof-agent: export to %s: %s\n", dev, strerror(-r));
		emit_fini(&e);
		return 1;
	}
	fprintf(stderr,
		"kvmprof-agent: exported %" PRIu64 " kernel symbols, %" PRIu64 " processes (%" PRIu64 " threads, %" PRIu64
		" mappings) to %s (%.1f KB)\n",
		nsyms, e.processes, e.comms, e.mmaps, dev, (double)bytes / 1e3);
	emit_fini(&e);
	return 0;
}
