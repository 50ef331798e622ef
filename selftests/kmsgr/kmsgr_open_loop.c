// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr_open_loop - open, query and close N kmsgr instances in turn, through
 * libkmsgr.so.  run_guest.sh runs it in every load/unload cycle so that a
 * per-instance leak grows the slab counters it compares.
 *
 *   kmsgr_open_loop [COUNT]    (default 100; exit 0 on success)
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <stdio.h>
#include <stdlib.h>

#include "libkmsgr.h"

int main(int argc, char **argv)
{
	struct kmsgr_info info;
	struct kmsgr *k;
	long i, count = 100;
	int ret;

	if (argc == 2)
		count = atol(argv[1]);
	if (argc > 2 || count <= 0) {
		fprintf(stderr, "usage: %s [COUNT]\n", argv[0]);
		return 2;
	}

	for (i = 0; i < count; i++) {
		ret = kmsgr_open(NULL, &k);
		if (ret) {
			fprintf(stderr, "kmsgr_open #%ld: %s\n", i,
				kmsgr_strerror(ret));
			return 1;
		}
		ret = kmsgr_info(k, &info);
		kmsgr_close(k);
		if (ret) {
			fprintf(stderr, "kmsgr_info #%ld: %s\n", i,
				kmsgr_strerror(ret));
			return 1;
		}
	}
	return 0;
}
