/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kmsgrctl - a small Ceph object client on kmsgr sessions (osdc.c).
 *
 * Placement: the cluster map comes from the monitor as JSON (`osd dump`:
 * epoch, pools, OSD addresses); the object's hash and placement group are
 * computed here as Ceph computes them (rjenkins string hash, stable_mod
 * over pg_num); the PG's primary comes from the monitor (`pg map`, cached
 * per PG and map epoch): CRUSH is not reimplemented.  Operations are
 * MOSDOp (v8) to the primary over a lossy kmsgr session per OSD, answered
 * by MOSDOpReply; an operation that gets no answer, or whose OSD session
 * ends, is sent again on a fresh map until the deadline.
 * docs/ceph-client.md tells the whole story.
 *
 * Copyright (C) 2026 The kmsgr authors
 */
#ifndef KMSGRCTL_OSDC_H
#define KMSGRCTL_OSDC_H

#include "kmsgrctl.h"

/* OSD op codes (CEPH_OSD_OP_*: mode | type | number) */
#define OSD_OP_READ		0x1201
#define OSD_OP_STAT		0x1202
#define OSD_OP_WRITE		0x2201
#define OSD_OP_WRITEFULL	0x2202
#define OSD_OP_DELETE		0x2205

/* the largest write or read one MOSDOp carries here (rados' op size) */
#define OSDC_OP_MAX		(4U << 20)
#define OSDC_OID_MAX		2048

struct osdc_pool {
	long long id;
	char name[256];
	__u32 pg_num, pg_mask;
	unsigned int size;
	bool full;
};

struct osdc_osd {
	int id;
	bool up;
	char addr_str[64];	/* IP:PORT of its v2 public address */
	__u32 nonce;
	struct ctl_conn conn;	/* the session, once opened */
};

/* An object's place in the cluster at map epoch @epoch. */
struct osdc_loc {
	const struct osdc_pool *pool;
	__u32 hash;		/* rjenkins of the name: the "raw" pg */
	__u32 ps;		/* placement seed: the PG within the pool */
	int primary;		/* OSD id, -1 when none is up */
	__u32 epoch;
};

struct osdc_pg {
	long long pool;
	__u32 ps, epoch;
	int primary;
};

struct osdc {
	struct ctl_conn *mon;	/* open session to a monitor */
	struct ctl_conn osd_proto; /* how to open OSD sessions */
	__u8 fsid[16];
	__u64 tid;
	__u64 client_num;	/* client.N of our request ids */
	__u32 epoch;
	struct osdc_pool *pools;
	unsigned int n_pools;
	struct osdc_osd *osds;
	unsigned int n_osds;
	struct osdc_pg *pgs;
	unsigned int n_pgs;
	__u64 timeout_ns;	/* per operation, retries included */
};

/* One operation on an object. */
struct osdc_op {
	__u16 op;		/* OSD_OP_* */
	__u64 offset, length;	/* READ, WRITE, WRITEFULL */
	const void *in;		/* WRITE, WRITEFULL: the bytes */
	/* out */
	int rval;
	__u8 *out;		/* malloc'd: READ's bytes, STAT's reply */
	__u32 out_len;
};

__u32 ceph_str_hash_rjenkins(const char *s, size_t len);
__u32 ceph_stable_mod(__u32 x, __u32 b, __u32 bmask);

/*
 * Start on the monitor session @mon (open): the fsid and the map.  OSD
 * sessions are opened like @mon, with @timeout_ns per operation.
 */
int osdc_init(struct osdc *o, struct ctl_conn *mon, __u64 timeout_ns);
void osdc_fini(struct osdc *o);

/*
 * A monitor command (JSON, e.g. {"prefix":"osd dump","format":"json"}):
 * returns the command's result (0 or -errno) with its output (data, NUL-
 * terminated, malloc'd) in *@out and status string in @rs; or a
 * transport error (printed).
 */
int osdc_mon_command(struct osdc *o, const char *cmd, char **out, char *rs,
		     size_t rs_size);

/* Read the map again (`osd dump`); forgets cached PG primaries. */
int osdc_refresh(struct osdc *o);

/* The pool called @name: 0, or -ENOENT. */
int osdc_pool(struct osdc *o, const char *name, const struct osdc_pool **p);

/* Where @oid of @pool is now. */
int osdc_locate(struct osdc *o, const struct osdc_pool *pool,
		const char *oid, struct osdc_loc *loc);

/*
 * Run @n ops on @oid of @pool at its primary (@write: they modify it).
 * Returns the OSD's result (0 or -errno, e.g. -ENOENT), with each op's
 * rval and output; or -ETIME / -EHOSTDOWN / -EINTR / another -errno when
 * no answer came before the deadline (printed).  @loc (may be NULL) gets
 * where the ops went.
 */
int osdc_exec(struct osdc *o, const struct osdc_pool *pool, const char *oid,
	      struct osdc_op *ops, unsigned int n, bool write,
	      struct osdc_loc *loc);
void osdc_ops_free(struct osdc_op *ops, unsigned int n);

#endif /* KMSGRCTL_OSDC_H */
