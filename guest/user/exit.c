/* SPDX-License-Identifier: MIT */
/* exit [status]: exits with the given status (default 0) without output. */
#include "libc.h"

int main(int argc, char **argv)
{
	return (int)atol_def(argc > 1 ? argv[1] : NULL, 0);
}
