// SPDX-License-Identifier: MIT
/*
 * A Linux guest's current task, through the kernel's own per-CPU
 * current-task pointer and task_struct offsets (the agent's export, checked
 * by task_layout_check). Everything read is guest data: pids are bounded,
 * pointers must lie in the kernel half, and every read goes through
 * guest_walk.
 */
#include "linux_task.h"

#include <errno.h>
#include <string.h>

static int read_u64(const struct vmi_mem *mem, const struct guest_paging *pg, uint64_t gva, uint64_t *v)
{
	return guest_read_virt(mem, pg, gva, v, sizeof(*v));
}

int guest_linux_current(const struct kp_rec_task_layout *l, const struct vmi_mem *mem,
			const struct guest_paging *pg, unsigned int cpu, uint64_t *task, uint32_t *tgid,
			uint32_t *pid)
{
	uint64_t base, slot, t;
	int32_t ids[2];

	*task = 0;
	*tgid = *pid = 0;
	if (cpu >= TASK_LAYOUT_MAX_CPUS)
		return -EFAULT;
	/* __per_cpu_offset[cpu]: this CPU's base, added with wrap-around as the kernel does. */
	if (read_u64(mem, pg, l->per_cpu_offset + 8ULL * cpu, &base))
		return -EFAULT;
	slot = base + l->current_task;
	if (!task_layout_kernel_half(slot) || slot > UINT64_MAX - 8 || read_u64(mem, pg, slot, &t))
		return -EFAULT;
	/* Linux always has a current task (the idle one, too): 0 or a user address is a lie or a torn read. */
	if (!task_layout_kernel_half(t) || t > UINT64_MAX - TASK_LAYOUT_TASK_MAX)
		return -EFAULT;
	if (l->task_tgid == l->task_pid + 4) {
		/* pid_t pid; pid_t tgid; side by side, as in every Linux so far: one read. */
		if (guest_read_virt(mem, pg, t + l->task_pid, ids, sizeof(ids)))
			return -EFAULT;
	} else if (guest_read_virt(mem, pg, t + l->task_pid, &ids[0], 4) ||
		   guest_read_virt(mem, pg, t + l->task_tgid, &ids[1], 4)) {
		return -EFAULT;
	}
	/* pid_t is signed; PID_MAX_LIMIT is 2^22. A task whose tgid is 0 but pid is not is made up. */
	if (ids[0] < 0 || ids[1] < 0 || (ids[1] == 0) != (ids[0] == 0))
		return -EFAULT;
	*task = t;
	*pid = (uint32_t)ids[0];
	*tgid = (uint32_t)ids[1];
	return 0;
}

bool guest_linux_comm(const struct kp_rec_task_layout *l, const struct vmi_mem *mem,
		      const struct guest_paging *pg, uint64_t task, char comm[KP_COMM_MAX + 1])
{
	char buf[KP_LAYOUT_COMM_MAX];
	size_t n;

	if (!task || task > UINT64_MAX - TASK_LAYOUT_TASK_MAX || l->task_comm_size > sizeof(buf) ||
	    guest_read_virt(mem, pg, task + l->task_comm, buf, l->task_comm_size))
		goto unknown;
	/* The kernel keeps comm NUL-terminated; a name filling the field is accepted, cut to the record's size. */
	n = strnlen(buf, l->task_comm_size);
	if (n == 0)
		goto unknown;
	if (n > KP_COMM_MAX - 1)
		n = KP_COMM_MAX - 1;
	memcpy(comm, buf, n);
	comm[n] = '\0';
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)comm[i] < 0x20 || comm[i] == 0x7f)
			comm[i] = '?';
	return true;
unknown:
	strcpy(comm, "[unknown]");
	return false;
}
