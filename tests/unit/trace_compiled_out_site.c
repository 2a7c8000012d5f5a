// SPDX-License-Identifier: MIT
/* A TRACE site built with KVMPROF_TRACE_COMPILED_OUT, for test_trace_static. */
#include "trace.h"

uint64_t compiled_out_arg(unsigned int *evaluated);
void compiled_out_site(unsigned int *evaluated);
int compiled_out_on(void);

void compiled_out_site(unsigned int *evaluated)
{
	TRACE(pio, 0x3f8, 1, 1, compiled_out_arg(evaluated));
}

int compiled_out_on(void)
{
	return TRACE_ON(pio);
}
