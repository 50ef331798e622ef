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
	/* why kmsgrctl cannot place objects in it (osdc_pool()), or NULL */
	const char *unsupported;
};

struct osdc_osd {
	int id;
	bool up;
	char addr_str[64];	/* IP:PORT of its v2 public address */
	__u32 nonce;
	struct ctl_conn conn;	/* the session, once opened */
	int failed;		/* its open failed on this map: -errno */
};

/* An object's place in the cluster at map epoch @epoch. */
struct osdc_loc {
	long long pool;		/* its id */
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

struct osdc_req;

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
	/* requests in flight, each with a slot of the tx area (osdc_start) */
	unsigned int n_slots;
	__u64 slot_data;	/* the most data one slot carries */
	struct osdc_req *reqs;	/* in flight, newest first */
	struct osdc_req *done;	/* finished, not yet reaped */
	__u64 retry_at;		/* next round of resends (0: none due) */
	__u64 resends;		/* requests sent again, all rounds */
};

/* The tx area osdc_init() wants for @slots requests of @data bytes. */
__u64 osdc_tx_size(unsigned int slots, __u64 data);

/* One operation on an object. */
/* strerror() of a request's result, with what ENOSPC and EDQUOT mean here */
const char *osdc_strerror(int err);

/*
 * Whether the comma-separated flag names of `osd dump` (a pool's
 * "flags_names") hold @flag exactly: "nearfull" and "backfillfull" are
 * not "full".
 */
bool osdc_flag_named(const char *names, const char *flag);

struct osdc_op {
	__u16 op;		/* OSD_OP_* */
	__u64 offset, length;	/* READ, WRITE, WRITEFULL */
	/* WRITE, WRITEFULL: the bytes (copied unless at osdc_slot_data()) */
	const void *in;
	/* READ: copy the bytes here (@length at most), not to a new @out */
	void *dst;
	/* out */
	int rval;
	__u8 *out;		/* malloc'd: READ's bytes, STAT's reply */
	__u32 out_len;
};

/*
 * A request: ops on one object, in flight from osdc_start() until
 * osdc_reap() returns it.  Sent to the primary of its PG, and again on a
 * fresh map when no answer comes, the session ends or the OSD says
 * EAGAIN, under one request id, until @o's timeout.
 */
struct osdc_req {
	/* set by the caller */
	const char *oid;
	struct osdc_op *ops;
	unsigned int n;
	bool write;
	unsigned int slot;	/* its tx slot (< n_slots), its own */
	void *priv;
	/* out */
	int result;		/* the OSD's result, or -ETIMEDOUT etc. */
	struct osdc_loc loc;	/* where it went last */
	/* osdc's own */
	long long pool_id;
	__u64 tid, deadline, round_end;
	__u32 attempt;
	__u32 session;		/* the session it was last sent on */
	bool sending;		/* its SEND has not completed: slot busy */
	bool answered;		/* MOSDOpReply in (result set) */
	bool retry;		/* to be sent again in the next round */
	const char *why;	/* why the last round failed */
	struct osdc_req *next;
};

__u32 ceph_str_hash_rjenkins(const char *s, size_t len);
__u32 ceph_stable_mod(__u32 x, __u32 b, __u32 bmask);

/*
 * Start on the monitor session @mon (open): the fsid and the map.  OSD
 * sessions are opened like @mon, with @timeout_ns per operation; @slots
 * requests of up to @slot_data bytes each may be in flight, in a tx area
 * of osdc_tx_size(@slots, @slot_data) bytes.
 */
int osdc_init(struct osdc *o, struct ctl_conn *mon, __u64 timeout_ns,
	      unsigned int slots, __u64 slot_data);
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

/*
 * The pool called @name, copied to @p (the map's own copy goes with the
 * next refresh, which any operation may do): 0, or -ENOENT.
 */
int osdc_pool(struct osdc *o, const char *name, struct osdc_pool *p);

/* Where @oid of @pool is now. */
int osdc_locate(struct osdc *o, const struct osdc_pool *pool,
		const char *oid, struct osdc_loc *loc);

/* Where slot @slot's data goes in the buffer area (osdc_op.in). */
void *osdc_slot_data(const struct osdc *o, unsigned int slot);

/*
 * Send @rq on its way (ops on @rq->oid of @pool).  0: in flight until
 * osdc_reap() returns it; or -errno when it cannot start (printed unless
 * the pool is full: -ENOSPC).
 */
int osdc_start(struct osdc *o, const struct osdc_pool *pool,
	       struct osdc_req *rq);
/*
 * Wait until @deadline_ns (0: none) for a request to finish: 0 with it in
 * *@rqp (its result in ->result, failures printed), -ETIME, -EINTR (a
 * signal to stop), or another -errno that ends every request (a map
 * that cannot be read).  -ENOENT when nothing is in flight.
 */
int osdc_reap(struct osdc *o, __u64 deadline_ns, struct osdc_req **rqp);

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
