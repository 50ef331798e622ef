/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kmsgrctl rados bench (rados_bench.c), called by kmsgrctl rados (rados.c).
 *
 * Copyright (C) 2026 The kmsgr authors
 */
#ifndef KMSGRCTL_RADOS_H
#define KMSGRCTL_RADOS_H

#include "osdc.h"

#define RADOS_BENCH_RUN_NAME	"kmsgr_bench_last_metadata"
#define RADOS_BENCH_PREFIX	"kmsgr_bench_data"

struct rados_bench_opts {
	const char *mode;	/* "write", "seq" or "rand" */
	__u64 seconds_ns;
	__u64 size;		/* -b: bytes per object */
	unsigned int depth;	/* -t: requests in flight */
	bool cleanup;		/* write: delete the objects afterwards */
	bool verify;		/* seq, rand: check the bytes read */
	const char *run_name;	/* the metadata object's name */
};

/*
 * Run the benchmark on @pool with @o (set up for @b->depth slots of
 * @b->size bytes), printing as the rados tool does (or JSON).
 */
int rados_bench(struct osdc *o, const struct osdc_pool *pool,
		const struct rados_bench_opts *b);

#endif /* KMSGRCTL_RADOS_H */
