/* SPDX-License-Identifier: MIT */
#include "vm_target.h"

void vm_target_close(struct vm_target *t)
{
	if (t->ops && t->priv)
		t->ops->close(t);
	t->ops = NULL;
}
