// SPDX-License-Identifier: MIT
/* A shared library that is not a plugin at all. */
int not_a_plugin(int x);

int not_a_plugin(int x)
{
	return x + 1;
}
