// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgrctl blk - the example remote block service on msgr2
 * (docs/block-service.md, messages in blk.h).
 *
 *   blk serve DEVICE ADDR   a block target: each request becomes a
 *                           block-device SQE on an attached DEVICE linked to
 *                           the SEND of its reply (KMSGR_SQE_F_LINK).  A
 *                           WRITE's data goes from the receive pool to the
 *                           device (KMSGR_SQE_F_RELEASE), a READ's from the
 *                           device into the reply: the bytes never enter
 *                           this process.
 *   blk check ADDR          a client that proves the target: it reads the
 *                           whole device through it, then runs random WRITEs,
 *                           READs, FLUSHes and bad requests, DEPTH in flight
 *                           on disjoint ranges, and checks every READ and
 *                           every status against its own image
 *   blk bench ADDR          a client that measures: IOPS, MB/s, latency
 *                           percentiles, client CPU per operation
 *
 * Server: each request in service owns a context (struct srv_ctx) and,
 * for a READ, that context's slot of the buffer area (max_io bytes) plus
 * its reply front (64 bytes after the slots).  A slot is rewritten only
 * after the SEND that carried it completed.  Requests beyond DEPTH wait,
 * with their receive-pool slices, in arrival order; so do those of a
 * session that holds --session-depth contexts already, and the others
 * pass them: a client that stops reading its replies (its contexts wait
 * for SENDs that do not complete) leaves the rest of DEPTH to the other
 * clients.  Two such clients could still hold all of DEPTH: a session
 * with a request in service for longer than --reply-timeout is closed
 * (srv_reply_deadlines()).  user_data of every SQE:
 * the context's index and the stage (SRV_UD_*).
 *
 * Client: the same shape: DEPTH contexts, each with a slot for a WRITE's
 * data and its request front; the tid of a request names its context
 * (low bits) and is unique (high bits: a sequence number).
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <endian.h>

#include "kmsgrctl.h"
#include "blk.h"

#define BLK_DEF_DEPTH		32
#define BLK_MAX_DEPTH		256
#define BLK_DEF_MAX_IO		(1U << 20)
#define BLK_FRONT		64	/* bytes per context for its front */
#define BLK_TID_BITS		8	/* context index in a tid */
#define BLK_DEF_REPLY_TIMEOUT	300	/* seconds */

enum {
	OPT_TRANSPORT = 256, OPT_LOSSLESS, OPT_DEPTH, OPT_MAX_IO, OPT_POOL,
	OPT_RDONLY, OPT_EXCL, OPT_POLL, OPT_COUNT, OPT_TIME, OPT_OPS, OPT_SEED,
	OPT_IMAGE, OPT_RW, OPT_BS, OPT_FUA, OPT_TIMEOUT, OPT_SESSION_DEPTH,
	OPT_REPLY_TIMEOUT, OPT_HELP,
};

static void blk_usage(FILE *f)
{
	fprintf(f,
		"Usage: %s blk serve [--transport tcp|rdma] [--lossless] [--depth N]\n"
		"                    [--session-depth N] [--reply-timeout S]\n"
		"                    [--max-io BYTES] [--pool-size BYTES] [--rdonly]\n"
		"                    [--excl] [--poll] [--count N] [--time S]\n"
		"                    DEVICE ADDR:PORT\n"
		"       %s blk check [--transport tcp|rdma] [--lossless] [--depth N]\n"
		"                    [--ops N] [--seed N] [--image FILE] [--timeout S]\n"
		"                    ADDR:PORT\n"
		"       %s blk bench [--transport tcp|rdma] [--lossless] [--depth N]\n"
		"                    [--rw randread|randwrite|read|write] [--bs BYTES]\n"
		"                    [--fua] [--time S] [--timeout S] ADDR:PORT\n"
		"\n"
		"serve: a remote block target for DEVICE (a block device, opened\n"
		"read-write, or read-only with --rdonly; --excl claims it; --poll\n"
		"reaps its I/O by polling, from the device's poll queues) on a msgr2\n"
		"listener.  Up to DEPTH requests (default %d) are in service at once,\n"
		"at most --session-depth of one session (default 3/4 of DEPTH, at\n"
		"least 1), each at most --max-io bytes (default 1M); the rest wait.\n"
		"A session with a request in service for --reply-timeout seconds\n"
		"(default %d; 0: no limit; keep it well above the device's worst\n"
		"case and the clients' resume_timeout) is closed: clients that stop\n"
		"reading their replies cannot hold every context.\n"
		"WRITEs go from the receive pool to the device, READs from the device\n"
		"into the reply, with no copy in this process.  Ends after --count\n"
		"requests (later ones are given back), --time seconds, or\n"
		"SIGINT/SIGTERM, with a summary.\n"
		"check: read the whole device through the target, then --ops random\n"
		"requests (default 10000: WRITE, READ, FLUSH and bad ones), DEPTH in\n"
		"flight (default 16) on disjoint ranges; every READ and status is\n"
		"checked.  --image FILE writes what the device must hold at the end.\n"
		"bench: DEPTH requests (default 1) of --bs bytes (default 4K) for\n"
		"--time seconds (default 5): IOPS, MB/s, latency, client CPU per op;\n"
		"--fua: writes with forced unit access.\n"
		"Exit status: 0 on success, 1 on a failure or mismatch, 2 on usage.\n",
		progname, progname, progname, BLK_DEF_DEPTH,
		BLK_DEF_REPLY_TIMEOUT);
}

/* ---- shared ------------------------------------------------------------- */

static __u8 *area(__u64 off)
{
	return (__u8 *)kmsgr_buf(ctl_k) + off;
}

static struct kmsgr_slice slice(__u32 off, __u32 len)
{
	struct kmsgr_slice s = { .off = off, .len = len };

	return s;
}

static const struct kmsgr_slice no_slice;

static const char *op_name(unsigned int op)
{
	static const char *const names[] = {
		[BLK_OP_READ] = "read", [BLK_OP_WRITE] = "write",
		[BLK_OP_FLUSH] = "flush", [BLK_OP_INFO] = "info",
	};

	return op < ARRAY_SIZE(names) && names[op] ? names[op] : "unknown";
}

/* What the verbs share, and the options that set it. */
struct blk_opts {
	__u32 transport, flags;
	__u64 depth;
	__u64 timeout_ns;	/* check, bench: the longest wait */
	__u64 time_ns;		/* serve, bench: how long to run */
};

/*
 * Take getopt's option @c of a verb's shared ones: 1 when it was one, 0
 * when not, BLK_OPT_HELP when the usage was printed, -1 on a bad value
 * (said).
 */
#define BLK_OPT_HELP	2

static int blk_common_opt(struct blk_opts *o, int c, const char *arg)
{
	switch (c) {
	case OPT_TRANSPORT:
		if (ctl_parse_transport(arg, &o->transport)) {
			error("unknown transport \"%s\" (tcp or rdma)", arg);
			return -1;
		}
		return 1;
	case OPT_LOSSLESS:
		o->flags |= KMSGR_SESS_F_LOSSLESS;
		return 1;
	case OPT_DEPTH:
		if (ctl_parse_size(arg, 1, BLK_MAX_DEPTH, &o->depth)) {
			error("bad --depth \"%s\" (1 to %d)", arg,
			      BLK_MAX_DEPTH);
			return -1;
		}
		return 1;
	case OPT_TIMEOUT:
		if (ctl_parse_secs(arg, &o->timeout_ns) || !o->timeout_ns) {
			error("bad --timeout \"%s\" (seconds)", arg);
			return -1;
		}
		return 1;
	case OPT_TIME:
		if (ctl_parse_secs(arg, &o->time_ns) || !o->time_ns) {
			error("bad --time \"%s\" (seconds)", arg);
			return -1;
		}
		return 1;
	case OPT_HELP:
	case 'h':
		blk_usage(stdout);
		return BLK_OPT_HELP;
	}
	return 0;
}

#define BLK_COMMON_LONGOPTS						\
	{ "transport", required_argument, NULL, OPT_TRANSPORT },	\
	{ "lossless", no_argument, NULL, OPT_LOSSLESS },		\
	{ "depth", required_argument, NULL, OPT_DEPTH },		\
	{ "help", no_argument, NULL, OPT_HELP }

/* ---- serve -------------------------------------------------------------- */

/* user_data stages of the server's SQEs */
#define SRV_UD_IO	1	/* the BDEV op (completes only if it failed) */
#define SRV_UD_REPLY	2	/* the reply's SEND */
#define SRV_UD_RELEASE	3	/* a RELEASE (completes only if refused) */
#define SRV_UD_RECLAIM	4	/* a failed WRITE's data: EINVAL is fine */
#define SRV_UD(i, stage) (((__u64)(i) << 8) | (stage))

/*
 * RELEASE of what @recv holds, marked as a RELEASE: the CQE of one the
 * module refuses names no context (with the RECV's user_data, the
 * listener's 0, it read as context 0's reply and freed that context).
 */
static int srv_queue_release(const struct kmsgr_cqe *recv)
{
	struct kmsgr_sqe sqe;

	kmsgr_prep_release(&sqe, recv);
	sqe.user_data = SRV_UD(0, SRV_UD_RELEASE);
	return ctl_queue(&sqe);
}

struct srv_ctx {
	__u32 idx;
	__u32 session;
	__u64 tid;
	struct kmsgr_cqe recv;	/* a WRITE's message, for its data slice */
	struct blk_req req;	/* as received, in host order */
	int io_res;		/* a failed READ's errno, for its reply */
	bool busy;		/* in service (@session's), else free */
	__u64 t0;		/* when it went in service (--reply-timeout) */
	bool closed;		/* its session was closed here */
	struct srv_ctx *next;	/* on the free list */
};

/*
 * A session with requests waiting for a context: what they hold of the
 * receive pool, kept by srv_wait_add() and srv_wait_del() alone, so that
 * an arriving request is held against wait_max without a walk of the wait
 * list (a flood could make it pool_size / 512 long).  In s->sess, chained
 * by id modulo SRV_SESS_HASH (the module hands ids out in turn).
 */
struct srv_sess {
	__u32 id;
	unsigned int n;		/* its waiting requests */
	__u64 bytes;		/* their receive-pool bytes */
	struct srv_sess *next;	/* in its chain */
};

#define SRV_SESS_HASH	256	/* the module's default max_sessions */

/* A request waiting for a context. */
struct srv_wait {
	struct kmsgr_cqe recv;
	__u64 bytes;		/* of the receive pool */
	struct srv_sess *sess;
	struct srv_wait *next;
};

struct srv {
	__u32 bdev;
	__u32 lbs, max_io;
	__u64 capacity;
	unsigned int depth;
	unsigned int session_depth;	/* contexts one session may hold */
	__u64 wait_max;			/* pool bytes one session's waiting
					 * requests may hold
					 */
	struct srv_ctx *ctx, *free;
	struct srv_wait *wait_head, **wait_tail;
	struct srv_sess *sess[SRV_SESS_HASH];	/* with requests waiting */
	__u64 requests, count;
	__u64 reads, writes, flushes, infos, errors, bytes_in, bytes_out;
	__u64 dropped;		/* replies whose session was gone */
	__u64 abandoned;	/* waiting requests of a closed session */
	__u64 past_count;	/* requests not run: --count was reached */
	__u64 capped;		/* waited at their session's cap */
	__u64 flooded;		/* sessions closed past wait_max */
	__u64 timed_out;	/* sessions closed past reply_timeout */
	__u64 refused;		/* SQEs the module refused (a bug here) */
	unsigned int busy;
	__u32 *closing;		/* sessions closed here, CLOSED not seen */
	unsigned int n_closing, max_closing;
	__u64 reply_timeout;	/* ns a request may be in service; 0: ever */
	__u64 now;		/* srv_clock() at the last wake-up */
	__u64 next_scan;	/* of the reply deadlines */
};

static __u32 srv_slot(const struct srv *s, const struct srv_ctx *c)
{
	return c->idx * s->max_io;
}

static __u32 srv_front(const struct srv *s, const struct srv_ctx *c)
{
	return s->depth * s->max_io + c->idx * BLK_FRONT;
}

static void srv_put(struct srv *s, struct srv_ctx *c)
{
	c->busy = false;
	c->next = s->free;
	s->free = c;
	s->busy--;
}

/* Whether session @id holds fewer contexts than its cap. */
static bool srv_may_take(const struct srv *s, __u32 id)
{
	unsigned int i, held = 0;

	for (i = 0; i < s->depth; i++)
		if (s->ctx[i].busy && s->ctx[i].session == id &&
		    ++held >= s->session_depth)
			return false;
	return true;
}

/* Take a free context for session @id. */
static struct srv_ctx *srv_take(struct srv *s, __u32 id)
{
	struct srv_ctx *c = s->free;

	s->free = c->next;
	s->busy++;
	c->busy = true;
	c->closed = false;
	c->t0 = s->now;
	c->session = id;
	return c;
}

/*
 * Fill @c's reply front and return the SEND (data @data_len bytes of @c's
 * slot) in @sqe.
 */
static void srv_reply_sqe(struct srv *s, struct srv_ctx *c, int status,
			  __u32 data_len, struct kmsgr_sqe *sqe)
{
	struct blk_reply *r = (void *)area(srv_front(s, c));

	memset(r, 0, sizeof(*r));
	r->op = htole16(c->req.op);
	r->len = htole32(data_len);
	r->off = htole64(c->req.off);
	r->status = htole32((__u32)status);
	if (c->req.op == BLK_OP_INFO && !status) {
		r->lbs = htole32(s->lbs);
		r->capacity = htole64(s->capacity);
		r->max_io = htole32(s->max_io);
	}
	kmsgr_prep_send(sqe, c->session, BLK_MSG_REPLY, c->tid,
			slice(srv_front(s, c), sizeof(*r)), no_slice,
			data_len ? slice(srv_slot(s, c), data_len) : no_slice,
			SRV_UD(c->idx, SRV_UD_REPLY));
	if (status)
		s->errors++;
}

static int srv_reply(struct srv *s, struct srv_ctx *c, int status)
{
	struct kmsgr_sqe sqe;

	srv_reply_sqe(s, c, status, 0, &sqe);
	return ctl_queue(&sqe);
}

/* Check a request's fields: 0 or the errno of its reply. */
static int srv_check(const struct srv *s, const struct blk_req *q,
		     const struct kmsgr_cqe *recv)
{
	__u32 data = recv->seg[2].len;

	if (q->reserved[0] || q->reserved[1] || recv->seg[1].len)
		return -EINVAL;
	switch (q->op) {
	case BLK_OP_WRITE:
		if (q->flags & ~BLK_F_FUA || data != q->len || !data)
			return -EINVAL;
		/* what INFO advertised; the module checks the rest */
		return q->len > s->max_io ? -EMSGSIZE : 0;
	case BLK_OP_READ:
		if (q->flags || data || !q->len)
			return -EINVAL;
		/* the slot's size; the module checks the rest */
		return q->len > s->max_io ? -EMSGSIZE : 0;
	case BLK_OP_FLUSH:
	case BLK_OP_INFO:
		return q->flags || data || q->len || q->off ? -EINVAL : 0;
	default:
		return -EOPNOTSUPP;
	}
}

/* Start request @recv in context @c. */
static int srv_start(struct srv *s, struct srv_ctx *c,
		     const struct kmsgr_cqe *recv)
{
	const struct blk_req *w = (const void *)area(recv->seg[0].off);
	struct kmsgr_sqe sqe[2];
	struct blk_req *q = &c->req;
	int ret;

	c->tid = recv->tid;
	c->recv = *recv;
	c->io_res = 0;
	memset(q, 0, sizeof(*q));
	q->op = BLK_OP_INFO + 1;	/* unknown, unless the front has one */
	if (recv->seg[0].len >= sizeof(w->op))
		q->op = le16toh(w->op);		/* the reply echoes it */
	if (recv->seg[0].len == sizeof(*w)) {
		q->flags = le16toh(w->flags);
		q->len = le32toh(w->len);
		q->off = le64toh(w->off);
		q->reserved[0] = w->reserved[0];
		q->reserved[1] = w->reserved[1];
	}
	s->requests++;
	/* a front of another size is malformed, whatever its op says */
	ret = recv->seg[0].len != sizeof(*w) ? -EINVAL : srv_check(s, q, recv);
	if (ret || q->op != BLK_OP_WRITE) {
		/* nothing of the message is needed any more */
		if (srv_queue_release(recv))
			return -ENOMEM;
	}
	if (ret)
		return srv_reply(s, c, ret);

	switch (q->op) {
	case BLK_OP_WRITE:
		s->writes++;
		s->bytes_in += q->len;
		/* the front now, the data when the write is done */
		kmsgr_prep_release(&sqe[0], recv);
		sqe[0].seg[2] = no_slice;
		sqe[0].user_data = SRV_UD(c->idx, SRV_UD_RELEASE);
		if (ctl_queue(&sqe[0]))
			return -ENOMEM;
		kmsgr_prep_bdev_write_recv(&sqe[0], s->bdev, q->off, recv,
					   SRV_UD(c->idx, SRV_UD_IO));
		if (q->flags & BLK_F_FUA)
			sqe[0].flags |= KMSGR_SQE_F_FUA;
		break;
	case BLK_OP_READ:
		s->reads++;
		s->bytes_out += q->len;
		kmsgr_prep_bdev(&sqe[0], KMSGR_OP_BDEV_READ, s->bdev, q->off,
				srv_slot(s, c), q->len,
				SRV_UD(c->idx, SRV_UD_IO));
		break;
	case BLK_OP_FLUSH:
		s->flushes++;
		kmsgr_prep_bdev(&sqe[0], KMSGR_OP_BDEV_FLUSH, s->bdev, 0, 0, 0,
				SRV_UD(c->idx, SRV_UD_IO));
		break;
	default:
		s->infos++;
		return srv_reply(s, c, 0);
	}
	/*
	 * The op, then (linked) its reply: the kernel sends the reply when
	 * the op is done (a READ's carries the slot it filled), so this
	 * process hears of the request again only at the reply's completion
	 */
	sqe[0].flags |= KMSGR_SQE_F_LINK | KMSGR_SQE_F_SKIP_SUCCESS;
	srv_reply_sqe(s, c, 0, q->op == BLK_OP_READ ? q->len : 0, &sqe[1]);
	return ctl_queue_link(sqe);
}

/*
 * Receive-pool bytes a message holds: the module hands out the pool in
 * grains of 512 bytes (kmod/kmsgr.h), so a 32-byte front takes one.
 */
static __u64 srv_pool_bytes(const struct kmsgr_cqe *recv)
{
	__u64 n = 0;
	int i;

	for (i = 0; i < 3; i++)		/* front, middle, data */
		n += (recv->seg[i].len + 511ULL) & ~511ULL;
	return n;
}

/* Where session @id's entry is, or would be, in s->sess. */
static struct srv_sess **srv_sess_slot(struct srv *s, __u32 id)
{
	struct srv_sess **p = &s->sess[id % SRV_SESS_HASH];

	while (*p && (*p)->id != id)
		p = &(*p)->next;
	return p;
}

/* Receive-pool bytes of session @id's waiting requests. */
static __u64 srv_waiting_bytes(struct srv *s, __u32 id)
{
	struct srv_sess *e = *srv_sess_slot(s, id);

	return e ? e->bytes : 0;
}

/* Let request @recv wait for a context, after the others. */
static int srv_wait_add(struct srv *s, const struct kmsgr_cqe *recv)
{
	struct srv_sess **p = srv_sess_slot(s, recv->session);
	struct srv_wait *w = malloc(sizeof(*w));

	if (w && !*p) {
		*p = calloc(1, sizeof(**p));
		if (*p)
			(*p)->id = recv->session;
	}
	if (!w || !*p) {
		free(w);
		error("out of memory");
		return -ENOMEM;
	}
	w->recv = *recv;
	w->bytes = srv_pool_bytes(recv);
	w->sess = *p;
	w->sess->n++;
	w->sess->bytes += w->bytes;
	w->next = NULL;
	*s->wait_tail = w;
	s->wait_tail = &w->next;
	return 0;
}

/* Take the waiting request *@p off the list (started, or given back). */
static void srv_wait_del(struct srv *s, struct srv_wait **p)
{
	struct srv_wait *w = *p;
	struct srv_sess *e = w->sess;

	*p = w->next;
	if (!*p)
		s->wait_tail = p;
	e->bytes -= w->bytes;
	if (!--e->n) {
		*srv_sess_slot(s, e->id) = e->next;
		free(e);
	}
	free(w);
}

/* What blk serve needs of the module. */
#define SRV_FEATURES	(KMSGR_FEAT_BDEV | KMSGR_FEAT_BDEV_LINK |	\
			 KMSGR_FEAT_SKIP_SUCCESS | KMSGR_FEAT_RELEASE_TOKEN)

/* --count requests were started: no more are. */
static bool srv_counted(const struct srv *s)
{
	return s->count && s->requests >= s->count;
}

static unsigned int srv_closing(const struct srv *s, __u32 id);
static int srv_close(struct srv *s, __u32 id, bool closed);

/* A request arrived: start it, or let it wait for a context. */
static int srv_recv(struct srv *s, const struct kmsgr_cqe *recv)
{
	int ret;

	if (recv->type != BLK_MSG_REQUEST) {
		error("session %u: message type %#x is not a request: dropped",
		      recv->session, recv->type);
		return srv_queue_release(recv);
	}
	/*
	 * nothing is started past --count, or a client that keeps requests
	 * in flight would keep the target from ever stopping
	 */
	if (srv_counted(s)) {
		s->past_count++;
		return srv_queue_release(recv);
	}
	/* it was closed here: its requests already in the CQ are not run */
	if (srv_closing(s, recv->session) < s->n_closing) {
		s->abandoned++;
		return srv_queue_release(recv);
	}
	/*
	 * The waiting requests are all at their session's cap while a
	 * context is free (srv_done() starts the first one that is not): a
	 * request under its own starts ahead of them
	 */
	if (s->free && srv_may_take(s, recv->session))
		return srv_start(s, srv_take(s, recv->session), recv);
	if (s->free)
		s->capped++;
	/*
	 * The receive pool is every session's: one that keeps sending while
	 * its replies do not go (it stopped reading them) would fill it with
	 * waiting requests, and then nobody's request could arrive.  Past its
	 * share it is closed, and what it has waiting is given back.
	 */
	if (srv_waiting_bytes(s, recv->session) + srv_pool_bytes(recv) >
	    s->wait_max) {
		error("session %u: its waiting requests would hold over %llu bytes of the receive pool: closed",
		      recv->session, (unsigned long long)s->wait_max);
		s->flooded++;
		ret = srv_queue_release(recv);
		return srv_close(s, recv->session, false) ?: ret;
	}
	return srv_wait_add(s, recv);
}

/*
 * Session @id is over (CLOSED: no RECV of it follows).  Its requests still
 * waiting for a context would be run for nobody, ahead of other clients':
 * give their slices back instead.
 */
static int srv_forget(struct srv *s, __u32 id)
{
	struct srv_wait **p = &s->wait_head, *w;
	int ret = 0;

	while ((w = *p)) {
		if (w->recv.session != id) {
			p = &w->next;
			continue;
		}
		if (!ret)
			ret = srv_queue_release(&w->recv);
		srv_wait_del(s, p);
		s->abandoned++;
	}
	return ret;
}

/* Where @id is in s->closing; s->n_closing when it is not. */
static unsigned int srv_closing(const struct srv *s, __u32 id)
{
	unsigned int i;

	for (i = 0; i < s->n_closing && s->closing[i] != id; i++)
		;
	return i;
}

/*
 * Session @id is closed (@closed: its CLOSED event came) or to be closed
 * here: its SENDs fail, so that its contexts come back through srv_done(),
 * and what it has waiting is given back.  Until its CLOSED event, the
 * RECVs of a session closed here that were already in the CQ are given
 * back unrun (srv_recv()), and no check closes it again.  A closer that
 * decided it says why.
 */
static int srv_close(struct srv *s, __u32 id, bool closed)
{
	unsigned int i = srv_closing(s, id);
	__u32 *more;

	if (closed) {
		if (i < s->n_closing)
			s->closing[i] = s->closing[--s->n_closing];
	} else {
		kmsgr_close_id(ctl_k, id);
		if (i == s->n_closing && i == s->max_closing) {
			more = realloc(s->closing, (i + 8) * sizeof(*more));
			if (!more) {
				error("out of memory");
				return -ENOMEM;
			}
			s->closing = more;
			s->max_closing = i + 8;
		}
		if (i == s->n_closing)
			s->closing[s->n_closing++] = id;
	}
	/* no deadline closes it again while its SENDs fail */
	for (i = 0; i < s->depth; i++)
		if (s->ctx[i].busy && s->ctx[i].session == id)
			s->ctx[i].closed = true;
	return srv_forget(s, id);
}

/*
 * Context @c is done: give it to the oldest waiting request whose session
 * is under its cap (with @c back, @c's session may be).
 */
static int srv_done(struct srv *s, struct srv_ctx *c)
{
	struct srv_wait **p = &s->wait_head, *w;
	struct kmsgr_cqe recv;

	srv_put(s, c);
	if (srv_counted(s))
		return 0;	/* the waiting ones are given back at the end */
	while ((w = *p) && !srv_may_take(s, w->recv.session))
		p = &w->next;
	if (!w)
		return 0;
	recv = w->recv;
	srv_wait_del(s, p);
	return srv_start(s, srv_take(s, recv.session), &recv);
}

static int srv_cqe(struct srv *s, const struct kmsgr_cqe *cqe)
{
	unsigned int idx = (unsigned int)(cqe->user_data >> 8);
	unsigned int stage = cqe->user_data & 0xff;
	struct kmsgr_sqe sqe;
	struct srv_ctx *c;
	int status;

	switch (cqe->kind) {
	case KMSGR_CQE_EVENT:
		if (!opt.json && (cqe->event == KMSGR_EV_UP ||
				  cqe->event == KMSGR_EV_CLOSED))
			printf("session %u %s\n", cqe->session,
			       kmsgr_event_str(cqe->event));
		if (cqe->event != KMSGR_EV_CLOSED)
			return 0;
		return srv_close(s, cqe->session, true);
	case KMSGR_CQE_RECV:
		return srv_recv(s, cqe);
	}
	if (idx >= s->depth) {
		error("a completion with unknown user_data %#llx",
		      (unsigned long long)cqe->user_data);
		return -EIO;
	}
	c = &s->ctx[idx];
	if (stage == SRV_UD_RECLAIM)
		return 0;	/* the write had the slice: freed with its CQE */
	if (stage == SRV_UD_RELEASE) {
		s->refused++;
		error("the module refused a RELEASE: %s", kmsgr_strerror(cqe->res));
		return 0;
	}
	if (stage == SRV_UD_IO) {
		/* an op's CQE comes only when it failed: its reply follows */
		c->io_res = cqe->res;
		return 0;
	}
	if (stage != SRV_UD_REPLY) {
		error("a completion with unknown user_data %#llx",
		      (unsigned long long)cqe->user_data);
		return -EIO;
	}
	/* the reply's SEND */
	if (c->io_res) {
		/*
		 * Its op failed (this SEND was cancelled), or the module
		 * refused the pair for this SEND (the op was cancelled): say
		 * why instead, in a reply of its own, once.
		 */
		status = c->io_res;
		c->io_res = 0;
		if (cqe->res != -ECANCELED) {
			s->refused++;
			error("the module refused a reply: %s",
			      kmsgr_strerror(cqe->res));
			status = cqe->res;
		}
		if (c->req.op == BLK_OP_READ)
			s->bytes_out -= c->req.len;
		if (c->req.op == BLK_OP_WRITE) {
			s->bytes_in -= c->req.len;
			/*
			 * refused before it started, the data slice is still
			 * ours (docs/block.md): give it back; EINVAL if not
			 */
			kmsgr_prep_release(&sqe, &c->recv);
			sqe.seg[0] = no_slice;
			sqe.user_data = SRV_UD(c->idx, SRV_UD_RECLAIM);
			if (ctl_queue(&sqe))
				return -ENOMEM;
		}
		return srv_reply(s, c, status);
	}
	if (cqe->res == -EINVAL || cqe->res == -EMSGSIZE) {
		s->refused++;
		error("the module refused a reply: %s", kmsgr_strerror(cqe->res));
	} else if (cqe->res) {
		s->dropped++;	/* the client went away */
	}
	return srv_done(s, c);
}

/*
 * The clock of the reply deadlines, read once per wake-up:
 * CLOCK_MONOTONIC_COARSE (a tick's resolution, plenty for seconds) is read
 * in the vDSO whatever the clocksource, where CLOCK_MONOTONIC can be a
 * system call (an emulated guest's HPET).
 */
static __u64 srv_clock(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (__u64)ts.tv_sec * NSEC_PER_SEC + (__u64)ts.tv_nsec;
}

#define SRV_SCAN_NS	(NSEC_PER_SEC / 4)	/* deadlines checked at most */

/*
 * --reply-timeout, checked after a wake-up, at most every SRV_SCAN_NS: a
 * session with a request in service (a context) for longer than the
 * timeout is closed; its SENDs fail, and its contexts come back for the
 * other clients.  The time counts from when the request got its context,
 * op and reply included: the reply linked to an op is made when the op
 * ends, and no CQE says when (SKIP_SUCCESS).  So the timeout must be well
 * above the longest a device may take (NVMe: nvme_core.io_timeout, 30 s,
 * for each of up to max_retries 5 retries), and above resume_timeout for
 * lossless clients, whose replies complete at their ack: the default is
 * 300 s.
 */
static int srv_reply_deadlines(struct srv *s)
{
	struct srv_ctx *c;
	unsigned int i;
	int ret;

	if (!s->reply_timeout || s->now < s->next_scan)
		return 0;
	s->next_scan = s->now + SRV_SCAN_NS;
	for (i = 0; i < s->depth; i++) {
		c = &s->ctx[i];
		if (!c->busy || c->closed || s->now - c->t0 < s->reply_timeout)
			continue;
		error("session %u: a request in service past the reply timeout (%g s): closed",
		      c->session, (double)s->reply_timeout / NSEC_PER_SEC);
		s->timed_out++;
		ret = srv_close(s, c->session, false);
		if (ret)
			return ret;
	}
	return 0;
}

static int srv_loop(struct srv *s, __u64 deadline)
{
	struct kmsgr_cqe cqe;
	int ret, err;

	for (;;) {
		if (ctl_stopped())
			return 0;
		if (srv_counted(s) && !s->busy)
			return 0;
		if (deadline && ctl_now_ns() >= deadline)
			return 0;
		/* at most a second: the deadlines are checked without CQEs */
		ret = ctl_wait_for(&cqe, NSEC_PER_SEC);
		if (ret && ret != -ETIME && ret != -EINTR)
			return ret;
		s->now = srv_clock();
		while (!ret) {
			ret = srv_cqe(s, &cqe);
			if (ret)
				return ret;
			ret = ctl_poll(&cqe) ? 0 : -EAGAIN;
		}
		/*
		 * after what completed meanwhile: a target that was stopped
		 * finds its replies done, not late
		 */
		err = srv_reply_deadlines(s);
		if (err)
			return err;
	}
}

static void srv_summary(const struct srv *s)
{
	if (opt.json) {
		jw_open(NULL, '{');
		jw_string("event", "summary");
		jw_u64("requests", s->requests);
		jw_u64("reads", s->reads);
		jw_u64("writes", s->writes);
		jw_u64("flushes", s->flushes);
		jw_u64("infos", s->infos);
		jw_u64("errors", s->errors);
		jw_u64("bytes_read", s->bytes_out);
		jw_u64("bytes_written", s->bytes_in);
		jw_u64("replies_dropped", s->dropped);
		jw_u64("requests_abandoned", s->abandoned);
		jw_u64("requests_past_count", s->past_count);
		jw_u64("requests_capped", s->capped);
		jw_u64("sessions_flooding", s->flooded);
		jw_u64("sessions_reply_timeout", s->timed_out);
		jw_close('}');
		return;
	}
	printf("served %llu requests: %llu reads (%llu bytes), %llu writes (%llu bytes), %llu flushes, %llu info, %llu answered with an error, %llu replies dropped (client gone), %llu waiting requests of closed sessions not run, %llu requests past --count not run, %llu waited at their session's cap, %llu sessions closed for holding too much of the receive pool, %llu sessions closed for a request in service past the reply timeout\n",
	       (unsigned long long)s->requests, (unsigned long long)s->reads,
	       (unsigned long long)s->bytes_out,
	       (unsigned long long)s->writes, (unsigned long long)s->bytes_in,
	       (unsigned long long)s->flushes, (unsigned long long)s->infos,
	       (unsigned long long)s->errors, (unsigned long long)s->dropped,
	       (unsigned long long)s->abandoned,
	       (unsigned long long)s->past_count,
	       (unsigned long long)s->capped,
	       (unsigned long long)s->flooded,
	       (unsigned long long)s->timed_out);
}

static int blk_serve(int argc, char **argv)
{
	static const struct option lopts[] = {
		BLK_COMMON_LONGOPTS,
		{ "max-io", required_argument, NULL, OPT_MAX_IO },
		{ "pool-size", required_argument, NULL, OPT_POOL },
		{ "rdonly", no_argument, NULL, OPT_RDONLY },
		{ "excl", no_argument, NULL, OPT_EXCL },
		{ "poll", no_argument, NULL, OPT_POLL },
		{ "count", required_argument, NULL, OPT_COUNT },
		{ "time", required_argument, NULL, OPT_TIME },
		{ "session-depth", required_argument, NULL, OPT_SESSION_DEPTH },
		{ "reply-timeout", required_argument, NULL, OPT_REPLY_TIMEOUT },
		{ NULL, 0, NULL, 0 },
	};
	struct blk_opts o = { .transport = KMSGR_XPRT_TCP,
			      .depth = BLK_DEF_DEPTH };
	__u64 max_io = BLK_DEF_MAX_IO, pool = 64ULL << 20, sdepth = 0;
	__u64 reply_timeout = BLK_DEF_REPLY_TIMEOUT * NSEC_PER_SEC;
	struct srv s = { .count = 0 };
	struct kmsgr_info info = { 0 };
	struct kmsgr_bdev b;
	struct kmsgr_listen l;
	bool rdonly = false, excl = false, poll = false;
	char bound[80];
	unsigned int i;
	int c, fd, ret;

	optind = 0;
	while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		ret = blk_common_opt(&o, c, optarg);
		if (ret < 0)
			return EXIT_USAGE;
		if (ret == BLK_OPT_HELP)
			return EXIT_SUCCESS;
		if (ret)
			continue;
		switch (c) {
		case OPT_MAX_IO:
			if (ctl_parse_size(optarg, 4096, 8 << 20, &max_io) ||
			    max_io % 4096) {
				error("bad --max-io \"%s\" (4K to 8M, a multiple of 4K)",
				      optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_POOL:
			if (ctl_parse_size(optarg, KMSGR_POOL_MIN, 1ULL << 40,
					   &pool)) {
				error("bad --pool-size \"%s\"", optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_RDONLY:
			rdonly = true;
			break;
		case OPT_EXCL:
			excl = true;
			break;
		case OPT_POLL:
			poll = true;
			break;
		case OPT_COUNT:
			if (ctl_parse_size(optarg, 1, UINT64_MAX, &s.count)) {
				error("bad --count \"%s\"", optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_SESSION_DEPTH:
			if (ctl_parse_size(optarg, 1, BLK_MAX_DEPTH, &sdepth)) {
				error("bad --session-depth \"%s\" (1 to --depth)",
				      optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_REPLY_TIMEOUT:
			/* under a second it would be checked too coarsely */
			if (!strcmp(optarg, "0")) {
				reply_timeout = 0;
			} else if (ctl_parse_secs(optarg, &reply_timeout) ||
				   reply_timeout < NSEC_PER_SEC) {
				error("bad --reply-timeout \"%s\" (0 for none, or 1 s to a year)",
				      optarg);
				return EXIT_USAGE;
			}
			break;
		default:
			ctl_bad_option("blk serve", argv);
			return EXIT_USAGE;
		}
	}
	if (optind != argc - 2) {
		error("blk serve wants a DEVICE and an ADDR:PORT");
		return EXIT_USAGE;
	}
	if (sdepth > o.depth) {
		error("--session-depth %llu is over --depth %llu",
		      (unsigned long long)sdepth, (unsigned long long)o.depth);
		return EXIT_USAGE;
	}
	/* 3/4 of DEPTH by default: a quarter is always left to others */
	s.session_depth = (unsigned int)(sdepth ? sdepth :
					 o.depth * 3 / 4 ? o.depth * 3 / 4 : 1);
	memset(&l, 0, sizeof(l));
	if (kmsgr_addr_parse(argv[optind + 1], &l.addr)) {
		error("bad address \"%s\" (want IPv4:PORT or [IPv6]:PORT)",
		      argv[optind + 1]);
		return EXIT_USAGE;
	}
	l.transport = o.transport;
	l.flags = o.flags;
	s.reply_timeout = reply_timeout;

	fd = open(argv[optind], (rdonly ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	if (fd < 0) {
		error("cannot open %s: %s", argv[optind], strerror(errno));
		return EXIT_FAILURE;
	}
	ctl_catch_signals();
	s.depth = (unsigned int)o.depth;
	/* 2 SQEs per request at most, and the RELEASEs */
	if (ctl_setup(4 * s.depth, s.depth * (max_io + BLK_FRONT), pool)) {
		close(fd);
		return EXIT_FAILURE;
	}
	/*
	 * A module without the linked reply would refuse the op's flags
	 * alone and still send the reply after it: every request answered
	 * 0, none done
	 */
	if (kmsgr_info(ctl_k, &info) ||
	    (info.features & SRV_FEATURES) != SRV_FEATURES) {
		error("the loaded kmsgr module (version %.*s) lacks block ops with linked replies (features %#llx, blk serve needs %#llx)",
		      KMSGR_VERSION_LEN, info.version,
		      (unsigned long long)info.features,
		      (unsigned long long)SRV_FEATURES);
		close(fd);
		ctl_teardown();
		return EXIT_FAILURE;
	}
	memset(&b, 0, sizeof(b));
	b.fd = fd;
	b.flags = (rdonly ? KMSGR_BDEV_F_RDONLY : 0) |
		  (excl ? KMSGR_BDEV_F_EXCL : 0) |
		  (poll ? KMSGR_BDEV_F_POLL : 0);
	ret = kmsgr_bdev_attach(ctl_k, &b);
	close(fd);
	if (ret) {
		error("cannot attach %s: %s", argv[optind],
		      ret == -ENOTBLK ? "not a block device" :
		      ret == -EBUSY ? "in use (mounted, or claimed exclusively)" :
		      ret == -EOPNOTSUPP && poll &&
		      !(info.features & KMSGR_FEAT_BDEV_POLL) ?
		      "the loaded kmsgr module does not poll (built for a kernel older than 6.1.78): drop --poll" :
		      ret == -EOPNOTSUPP && poll ?
		      "no poll queues for --poll (NVMe: the nvme module's poll_queues parameter)" :
		      kmsgr_strerror(ret));
		ctl_teardown();
		return EXIT_FAILURE;
	}
	s.bdev = b.id;
	s.lbs = b.lbs;
	s.capacity = b.capacity;
	/*
	 * the slots are max_io apart; the device may take less, and each
	 * slot must start on one of its blocks
	 */
	s.max_io = (__u32)(max_io < b.max_io ? max_io : b.max_io);
	s.max_io -= s.max_io % s.lbs;
	if (!s.max_io) {
		error("--max-io %llu is under %s's block size (%u bytes)",
		      (unsigned long long)max_io, argv[optind], s.lbs);
		kmsgr_bdev_detach(ctl_k, s.bdev);
		ctl_teardown();
		return EXIT_FAILURE;
	}
	/* half the pool: a session that floods it leaves the rest to others */
	s.wait_max = pool / 2;
	s.ctx = calloc(s.depth, sizeof(*s.ctx));
	if (!s.ctx) {
		error("out of memory");
		ctl_teardown();
		return EXIT_FAILURE;
	}
	for (i = s.depth; i-- > 0;) {
		s.ctx[i].idx = i;
		s.ctx[i].next = s.free;
		s.free = &s.ctx[i];
	}
	s.wait_tail = &s.wait_head;

	ret = kmsgr_listen(ctl_k, &l);
	if (ret) {
		error("cannot listen on %s (%s): %s", argv[optind + 1],
		      ctl_transport_name(o.transport), ctl_sess_strerror(ret));
		goto out;
	}
	kmsgr_addr_format(&l.bound, bound, sizeof(bound));
	if (opt.json) {
		jw_open(NULL, '{');
		jw_string("event", "serving");
		jw_string("device", argv[optind]);
		jw_u64("capacity", s.capacity);
		jw_u64("lbs", s.lbs);
		jw_u64("max_io", s.max_io);
		jw_bool("polled", b.attrs & KMSGR_BDEV_A_POLL);
		jw_string("addr", bound);
		jw_string("transport", ctl_transport_name(o.transport));
		jw_u64("depth", s.depth);
		jw_u64("session_depth", s.session_depth);
		jw_double("reply_timeout", (double)s.reply_timeout /
			  NSEC_PER_SEC);
		jw_close('}');
	} else {
		char rt[40] = "no reply timeout";

		if (s.reply_timeout)
			snprintf(rt, sizeof(rt), "reply timeout %g s",
				 (double)s.reply_timeout / NSEC_PER_SEC);
		printf("serving %s (%llu bytes, %u-byte blocks%s%s) on %s transport %s, depth %u (%u per session), %s\n",
		       argv[optind], (unsigned long long)s.capacity, s.lbs,
		       b.attrs & KMSGR_BDEV_A_RDONLY ? ", read-only" : "",
		       b.attrs & KMSGR_BDEV_A_POLL ? ", polled" : "",
		       bound, ctl_transport_name(o.transport), s.depth,
		       s.session_depth, rt);
	}
	fflush(stdout);
	ret = srv_loop(&s, o.time_ns ? ctl_now_ns() + o.time_ns : 0);
	kmsgr_close_id(ctl_k, l.id);
	if (srv_counted(&s)) {
		struct srv_wait *w;

		for (w = s.wait_head; w; w = w->next)
			s.past_count++;
	}
	srv_summary(&s);
out:
	kmsgr_bdev_detach(ctl_k, s.bdev);
	ctl_teardown();
	while (s.wait_head)
		srv_wait_del(&s, &s.wait_head);
	free(s.ctx);
	free(s.closing);
	return ret || s.refused ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* ---- the client side ---------------------------------------------------- */

/* One request of the client in flight. */
struct cli_req {
	bool busy;
	__u16 op;
	__u64 off;
	__u32 len;
	__u64 tid;
	__u64 t0;		/* submitted, ns */
	int expect;		/* check: the status it must get */
	bool replied, sent;	/* both: the context is free */
};

struct cli {
	struct ctl_conn conn;
	unsigned int depth;
	__u32 slot;		/* bytes per context for WRITE data */
	struct cli_req *req;
	unsigned int busy;
	__u64 seq;
	/* from INFO */
	__u32 lbs, max_io;
	__u64 capacity;
	/* called with each reply: 0, or -1 to stop (already reported) */
	int (*reply)(struct cli *c, struct cli_req *q,
		     const struct blk_reply *r, const struct kmsgr_cqe *recv);
	void *priv;
	__u64 failures;
};

static __u32 cli_slot(const struct cli *c, unsigned int i)
{
	return i * c->slot;
}

static __u32 cli_front(const struct cli *c, unsigned int i)
{
	return c->depth * c->slot + i * BLK_FRONT;
}

/* A free context, or NULL. */
static struct cli_req *cli_get(struct cli *c)
{
	unsigned int i;

	for (i = 0; i < c->depth; i++)
		if (!c->req[i].busy)
			return &c->req[i];
	return NULL;
}

/*
 * Send request @q (op, off, len, expect set; a WRITE's data in its slot)
 * with @flags (BLK_F_*).
 */
static int cli_send(struct cli *c, struct cli_req *q, __u16 flags)
{
	unsigned int i = (unsigned int)(q - c->req);
	struct blk_req *w = (void *)area(cli_front(c, i));
	struct kmsgr_sqe sqe;

	memset(w, 0, sizeof(*w));
	w->op = htole16(q->op);
	w->flags = htole16(flags);
	w->len = htole32(q->len);
	w->off = htole64(q->off);
	q->busy = true;
	q->replied = false;
	q->sent = false;
	q->tid = (++c->seq << BLK_TID_BITS) | i;
	q->t0 = ctl_now_ns();
	c->busy++;
	kmsgr_prep_send(&sqe, c->conn.id, BLK_MSG_REQUEST, q->tid,
			slice(cli_front(c, i), sizeof(*w)), no_slice,
			q->op == BLK_OP_WRITE ? slice(cli_slot(c, i), q->len) :
			no_slice, i);
	return ctl_queue(&sqe);
}

static void cli_put(struct cli *c, struct cli_req *q)
{
	if (q->replied && q->sent) {
		q->busy = false;
		c->busy--;
	}
}

/* One completion: 0, or -errno to stop (reported). */
static int cli_cqe(struct cli *c, const struct kmsgr_cqe *cqe)
{
	const struct blk_reply *r;
	struct cli_req *q;
	unsigned int i;
	int ret;

	switch (cqe->kind) {
	case KMSGR_CQE_EVENT:
		if (cqe->event == KMSGR_EV_DOWN || cqe->event == KMSGR_EV_UP)
			return 0;
		ctl_report_event("the block target", cqe);
		return -ECONNABORTED;
	case KMSGR_CQE_SEND:
		if (cqe->user_data >= c->depth)
			break;
		q = &c->req[cqe->user_data];
		if (cqe->res) {
			error("a request was not sent: %s",
			      kmsgr_strerror(cqe->res));
			return cqe->res;
		}
		q->sent = true;
		cli_put(c, q);
		return 0;
	case KMSGR_CQE_RECV:
		i = cqe->tid & ((1U << BLK_TID_BITS) - 1);
		q = i < c->depth ? &c->req[i] : NULL;
		if (cqe->type != BLK_MSG_REPLY || !q || !q->busy ||
		    q->replied || q->tid != cqe->tid ||
		    cqe->seg[0].len != sizeof(*r)) {
			error("an unexpected message (type %#x, tid %llu, front %u bytes)",
			      cqe->type, (unsigned long long)cqe->tid,
			      cqe->seg[0].len);
			c->failures++;
			ctl_queue_release(cqe);
			return -EPROTO;
		}
		r = (const void *)area(cqe->seg[0].off);
		q->replied = true;
		ret = c->reply(c, q, r, cqe);
		if (ctl_queue_release(cqe))
			return -ENOMEM;
		cli_put(c, q);
		return ret;
	}
	error("an unexpected completion (kind %u, res %d)", cqe->kind,
	      cqe->res);
	return -EPROTO;
}

/* Wait for completions and handle them (at least one): 0 or -errno. */
static int cli_reap(struct cli *c)
{
	struct kmsgr_cqe cqe;
	int ret;

	ret = ctl_wait_for(&cqe, c->conn.timeout_ns);
	/* a stop and continue, a tracer: no handler of ours ran */
	if (ret == -EINTR && !ctl_stopped())
		return 0;
	if (ret == -EINTR)
		error("interrupted");
	if (ret == -ETIME) {
		error("no answer from the block target for %.1f s (%u requests in flight)",
		      (double)c->conn.timeout_ns / NSEC_PER_SEC, c->busy);
		return ret;
	}
	if (ret)
		return ret;
	do {
		ret = cli_cqe(c, &cqe);
	} while (!ret && ctl_poll(&cqe));
	return ret;
}

static int cli_drain(struct cli *c)
{
	int ret = 0;

	while (c->busy && !ret)
		ret = cli_reap(c);
	return ret;
}

static int info_reply(struct cli *c, struct cli_req *q,
		      const struct blk_reply *r, const struct kmsgr_cqe *recv)
{
	(void)q;
	(void)recv;
	if ((int)le32toh(r->status)) {
		error("INFO failed: %s", strerror(-(int)le32toh(r->status)));
		return -EIO;
	}
	c->lbs = le32toh(r->lbs);
	c->capacity = le64toh(r->capacity);
	c->max_io = le32toh(r->max_io);
	if (!c->lbs || c->lbs & (c->lbs - 1) || c->max_io < c->lbs ||
	    c->capacity < c->lbs) {
		error("INFO: a block size of %u, max_io %u, capacity %llu: nonsense",
		      c->lbs, c->max_io, (unsigned long long)c->capacity);
		return -EPROTO;
	}
	return 0;
}

/*
 * Set up the instance for @depth requests of up to @slot bytes, connect,
 * ask INFO.  0, or an exit status (reported).
 */
static int cli_open(struct cli *c, const struct blk_opts *o, const char *addr,
		    __u32 slot, __u64 pool)
{
	struct cli_req *q;

	c->depth = (unsigned int)o->depth;
	c->slot = slot;
	c->conn.addr_str = addr;
	c->conn.transport = o->transport;
	c->conn.flags = o->flags;
	c->conn.name = "client.admin";
	c->conn.timeout_ns = o->timeout_ns;
	if (ctl_conn_check(&c->conn))
		return EXIT_USAGE;
	c->req = calloc(c->depth, sizeof(*c->req));
	if (!c->req) {
		error("out of memory");
		return EXIT_FAILURE;
	}
	ctl_catch_signals();
	if (ctl_setup(2 * c->depth + 8, (__u64)c->depth * (slot + BLK_FRONT),
		      pool))
		return EXIT_FAILURE;
	if (ctl_conn_open(&c->conn))
		return EXIT_FAILURE;
	c->reply = info_reply;
	q = cli_get(c);
	q->op = BLK_OP_INFO;
	q->off = 0;
	q->len = 0;
	if (cli_send(c, q, 0) || cli_drain(c))
		return EXIT_FAILURE;
	return 0;
}

static void cli_close(struct cli *c)
{
	if (c->conn.open)
		ctl_conn_close(&c->conn);
	ctl_teardown();
	free(c->req);
}

/* xorshift64* */
static __u64 rnd(__u64 *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}

/* ---- check -------------------------------------------------------------- */

struct check {
	__u8 *img;		/* what the device holds */
	__u64 rng;
	__u64 reads, writes, flushes, bad, bytes, mismatches, wrong_status;
};

static int check_reply(struct cli *c, struct cli_req *q,
		       const struct blk_reply *r, const struct kmsgr_cqe *recv)
{
	struct check *k = c->priv;
	int status = (int)le32toh(r->status);
	const __u8 *got;
	__u64 i;

	if (status != q->expect || le16toh(r->op) != q->op ||
	    le64toh(r->off) != q->off) {
		error("%s of %u bytes at %llu: status %d (%s), expected %d (%s)",
		      op_name(q->op), q->len, (unsigned long long)q->off,
		      status, strerror(-status), q->expect,
		      strerror(-q->expect));
		k->wrong_status++;
		return -EIO;
	}
	if (q->op != BLK_OP_READ || status)
		return 0;
	if (recv->seg[2].len != q->len || le32toh(r->len) != q->len) {
		error("read of %u bytes at %llu: %u bytes came", q->len,
		      (unsigned long long)q->off, recv->seg[2].len);
		k->mismatches++;
		return -EIO;
	}
	got = area(recv->seg[2].off);
	if (!memcmp(got, k->img + q->off, q->len))
		return 0;
	for (i = 0; got[i] == k->img[q->off + i]; i++)
		;
	error("read of %u bytes at %llu: byte %llu differs from what was written",
	      q->len, (unsigned long long)q->off, (unsigned long long)i);
	k->mismatches++;
	return -EIO;
}

/* A range for a READ or WRITE that overlaps no request in flight. */
static bool check_range(struct cli *c, struct check *k, __u32 *len,
			__u64 *off)
{
	__u64 blocks = c->capacity / c->lbs, maxb = c->max_io / c->lbs;
	unsigned int i, tries;
	struct cli_req *o;

	if (maxb > c->slot / c->lbs)
		maxb = c->slot / c->lbs;
	/* a device smaller than the largest request: no range past its end */
	if (maxb > blocks)
		maxb = blocks;
	if (!maxb)
		return false;
	for (tries = 0; tries < 64; tries++) {
		/* mostly small: 1 block, 4K, 8K, ... up to max */
		*len = c->lbs * (1 + (__u32)(rnd(&k->rng) %
					     (rnd(&k->rng) % 4 ? 16 : maxb)));
		if (*len > maxb * c->lbs)
			*len = (__u32)(maxb * c->lbs);
		*off = c->lbs * (rnd(&k->rng) % (blocks - *len / c->lbs + 1));
		for (i = 0; i < c->depth; i++) {
			o = &c->req[i];
			if (o->busy && (o->op == BLK_OP_READ ||
					o->op == BLK_OP_WRITE) &&
			    *off < o->off + o->len && o->off < *off + *len)
				break;
		}
		if (i == c->depth)
			return true;
	}
	return false;
}

/* Make and send the next random request. */
static int check_next(struct cli *c, struct check *k, struct cli_req *q)
{
	unsigned int i = (unsigned int)(q - c->req);
	__u16 flags = 0;
	__u32 pick = (__u32)(rnd(&k->rng) % 100);
	__u64 j;

	q->expect = 0;
	if (pick < 4) {
		/* a bad one: misaligned, beyond the end, too big, unknown */
		k->bad++;
		q->op = BLK_OP_READ;
		q->len = c->lbs;
		q->off = 0;
		switch (pick) {
		case 0:
			q->off = 1;
			q->expect = -EINVAL;
			break;
		case 1:
			q->off = c->capacity;
			q->expect = -ENOSPC;
			break;
		case 2:
			q->len = c->max_io + c->lbs;
			q->expect = -EMSGSIZE;
			break;
		default:
			q->op = 77;
			q->len = 0;
			q->expect = -EOPNOTSUPP;
			break;
		}
		return cli_send(c, q, 0);
	}
	if (pick < 8) {
		k->flushes++;
		q->op = BLK_OP_FLUSH;
		q->off = 0;
		q->len = 0;
		return cli_send(c, q, 0);
	}
	if (!check_range(c, k, &q->len, &q->off)) {
		/* everything is taken: a FLUSH instead */
		q->op = BLK_OP_FLUSH;
		q->off = 0;
		q->len = 0;
		k->flushes++;
		return cli_send(c, q, 0);
	}
	k->bytes += q->len;
	if (pick < 54) {
		k->reads++;
		q->op = BLK_OP_READ;
		return cli_send(c, q, 0);
	}
	k->writes++;
	q->op = BLK_OP_WRITE;
	for (j = 0; j < q->len; j += 8) {
		__u64 v = rnd(&k->rng);

		memcpy(area(cli_slot(c, i)) + j, &v, 8);
	}
	/* the image changes now: no request in flight overlaps it */
	memcpy(k->img + q->off, area(cli_slot(c, i)), q->len);
	if (pick % 8 == 0)
		flags = BLK_F_FUA;
	return cli_send(c, q, flags);
}

/* Read the whole device into the image (replies land in img directly). */
static int image_reply(struct cli *c, struct cli_req *q,
		       const struct blk_reply *r, const struct kmsgr_cqe *recv)
{
	struct check *k = c->priv;
	int status = (int)le32toh(r->status);

	if (status || recv->seg[2].len != q->len) {
		error("reading the device at %llu: %s",
		      (unsigned long long)q->off,
		      status ? strerror(-status) : "short reply");
		return -EIO;
	}
	memcpy(k->img + q->off, area(recv->seg[2].off), q->len);
	return 0;
}

static int check_image(struct cli *c, __u64 *reqs)
{
	__u64 off = 0;
	struct cli_req *q;
	__u32 chunk = c->max_io < c->slot ? c->max_io : c->slot;
	int ret = 0;

	chunk -= chunk % c->lbs;
	c->reply = image_reply;
	while ((off < c->capacity || c->busy) && !ret) {
		while (off < c->capacity && (q = cli_get(c))) {
			q->op = BLK_OP_READ;
			q->off = off;
			q->len = c->capacity - off < chunk ?
				 (__u32)(c->capacity - off) : chunk;
			q->expect = 0;
			off += q->len;
			ret = cli_send(c, q, 0);
			if (ret)
				return ret;
			(*reqs)++;
		}
		ret = cli_reap(c);
	}
	return ret;
}

static int blk_check(int argc, char **argv)
{
	static const struct option lopts[] = {
		BLK_COMMON_LONGOPTS,
		{ "ops", required_argument, NULL, OPT_OPS },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "image", required_argument, NULL, OPT_IMAGE },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ NULL, 0, NULL, 0 },
	};
	struct blk_opts o = { .transport = KMSGR_XPRT_TCP, .depth = 16,
			      .timeout_ns = 30 * NSEC_PER_SEC };
	__u64 ops = 10000, seed = 0, sent = 0, image_reqs = 0, t0;
	const char *image = NULL;
	struct check k = { .img = NULL };
	struct cli c = { .depth = 0 };
	struct cli_req *q;
	double secs;
	FILE *f;
	int ch, ret;

	optind = 0;
	while ((ch = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		ret = blk_common_opt(&o, ch, optarg);
		if (ret < 0)
			return EXIT_USAGE;
		if (ret == BLK_OPT_HELP)
			return EXIT_SUCCESS;
		if (ret)
			continue;
		switch (ch) {
		case OPT_OPS:
			if (ctl_parse_size(optarg, 1, 1ULL << 40, &ops)) {
				error("bad --ops \"%s\"", optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_SEED:
			if (ctl_parse_size(optarg, 1, UINT64_MAX, &seed)) {
				error("bad --seed \"%s\"", optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_IMAGE:
			image = optarg;
			break;
		default:
			ctl_bad_option("blk check", argv);
			return EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		error("blk check wants one ADDR:PORT");
		return EXIT_USAGE;
	}
	if (!seed)
		seed = ctl_now_ns() | 1;
	k.rng = seed;
	c.priv = &k;
	ret = cli_open(&c, &o, argv[optind], 256 << 10, 8ULL << 20);
	if (ret)
		goto out;
	ret = EXIT_FAILURE;
	if (c.capacity > 1ULL << 32) {
		error("the device has %llu bytes: check keeps an image of it in memory, at most 4 GiB",
		      (unsigned long long)c.capacity);
		goto out;
	}
	k.img = malloc(c.capacity);
	if (!k.img) {
		error("out of memory for a %llu-byte image",
		      (unsigned long long)c.capacity);
		goto out;
	}
	if (!opt.json)
		printf("checking %s: %llu bytes, %u-byte blocks, max_io %u, depth %u, seed %llu\n",
		       argv[optind], (unsigned long long)c.capacity, c.lbs,
		       c.max_io, c.depth, (unsigned long long)seed);
	fflush(stdout);
	t0 = ctl_now_ns();
	if (check_image(&c, &image_reqs))
		goto out;
	c.reply = check_reply;
	while ((sent < ops || c.busy) && !ctl_stopped()) {
		while (sent < ops && (q = cli_get(&c))) {
			if (check_next(&c, &k, q))
				goto out;
			sent++;
		}
		if (cli_reap(&c))
			goto out;
	}
	if (ctl_stopped())
		goto out;
	secs = (double)(ctl_now_ns() - t0) / NSEC_PER_SEC;
	if (image) {
		bool bad;

		f = fopen(image, "w");
		bad = !f || fwrite(k.img, 1, c.capacity, f) != c.capacity;
		/* fclose() also reports a write buffered until now */
		if ((f && fclose(f)) || bad) {
			error("cannot write the image to %s: %s", image,
			      strerror(errno));
			goto out;
		}
	}
	if (opt.json) {
		jw_open(NULL, '{');
		jw_u64("ops", sent);
		jw_u64("reads", k.reads);
		jw_u64("writes", k.writes);
		jw_u64("flushes", k.flushes);
		jw_u64("bad_requests", k.bad);
		jw_u64("bytes", k.bytes);
		jw_u64("mismatches", k.mismatches);
		jw_u64("image_requests", image_reqs);
		jw_double("seconds", secs);
		jw_close('}');
	} else {
		printf("%llu requests in %.1f s: %llu reads and %llu writes (%llu bytes), %llu flushes, %llu bad requests answered as expected; %llu mismatches; the image read first in %llu requests\n",
		       (unsigned long long)sent, secs,
		       (unsigned long long)k.reads,
		       (unsigned long long)k.writes,
		       (unsigned long long)k.bytes,
		       (unsigned long long)k.flushes,
		       (unsigned long long)k.bad,
		       (unsigned long long)k.mismatches,
		       (unsigned long long)image_reqs);
	}
	ret = k.mismatches || k.wrong_status ? EXIT_FAILURE : EXIT_SUCCESS;
out:
	cli_close(&c);
	free(k.img);
	return ret;
}

/* ---- bench -------------------------------------------------------------- */

struct bench {
	__u64 *lat;		/* ns, one per completed request */
	__u64 n, cap;
	__u64 errors;
};

static int bench_reply(struct cli *c, struct cli_req *q,
		       const struct blk_reply *r, const struct kmsgr_cqe *recv)
{
	struct bench *b = c->priv;
	__u64 *p;

	(void)recv;
	if (le32toh(r->status)) {
		error("%s at %llu: %s", op_name(q->op),
		      (unsigned long long)q->off,
		      strerror(-(int)le32toh(r->status)));
		b->errors++;
		return -EIO;
	}
	if (b->n == b->cap) {
		b->cap = b->cap ? 2 * b->cap : 1 << 16;
		p = realloc(b->lat, b->cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		b->lat = p;
	}
	b->lat[b->n++] = ctl_now_ns() - q->t0;
	return 0;
}

static double cpu_secs(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static int blk_bench(int argc, char **argv)
{
	static const struct option lopts[] = {
		BLK_COMMON_LONGOPTS,
		{ "rw", required_argument, NULL, OPT_RW },
		{ "bs", required_argument, NULL, OPT_BS },
		{ "fua", no_argument, NULL, OPT_FUA },
		{ "time", required_argument, NULL, OPT_TIME },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ NULL, 0, NULL, 0 },
	};
	struct blk_opts o = { .transport = KMSGR_XPRT_TCP, .depth = 1,
			      .timeout_ns = 30 * NSEC_PER_SEC,
			      .time_ns = 5 * NSEC_PER_SEC };
	__u64 bs = 4096, t0, end, next = 0;
	__u64 blocks, rng = 0x9e3779b97f4a7c15ULL;
	bool rand = true, write = false, fua = false;
	struct bench b = { .lat = NULL };
	struct cli c = { .depth = 0 };
	double secs, cpu0, cpu, avg;
	struct cli_req *q;
	const char *rw = "randread";
	__u64 i;
	int ch, ret;

	optind = 0;
	while ((ch = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		ret = blk_common_opt(&o, ch, optarg);
		if (ret < 0)
			return EXIT_USAGE;
		if (ret == BLK_OPT_HELP)
			return EXIT_SUCCESS;
		if (ret)
			continue;
		switch (ch) {
		case OPT_RW:
			rw = optarg;
			rand = !strncmp(optarg, "rand", 4);
			write = !strcmp(optarg + (rand ? 4 : 0), "write");
			if (!write && strcmp(optarg + (rand ? 4 : 0), "read")) {
				error("bad --rw \"%s\" (randread, randwrite, read, write)",
				      optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_BS:
			if (ctl_parse_size(optarg, 512, 8 << 20, &bs)) {
				error("bad --bs \"%s\" (512 to 8M)", optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_FUA:
			fua = true;
			break;
		default:
			ctl_bad_option("blk bench", argv);
			return EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		error("blk bench wants one ADDR:PORT");
		return EXIT_USAGE;
	}
	if (fua && !write) {
		error("--fua is for writes (--rw write or randwrite)");
		return EXIT_USAGE;
	}
	c.priv = &b;
	ret = cli_open(&c, &o, argv[optind], (__u32)bs,
		       write ? 1ULL << 20 : 2 * o.depth * bs + (1 << 20));
	if (ret)
		goto out;
	ret = EXIT_FAILURE;
	if (bs % c.lbs || bs > c.max_io || bs > c.capacity) {
		error("--bs %llu: the device wants a multiple of %u up to %u bytes",
		      (unsigned long long)bs, c.lbs, c.max_io);
		goto out;
	}
	blocks = c.capacity / bs;
	c.reply = bench_reply;
	cpu0 = cpu_secs();
	t0 = ctl_now_ns();
	end = t0 + o.time_ns;
	while ((ctl_now_ns() < end || c.busy) && !ctl_stopped()) {
		while (ctl_now_ns() < end && (q = cli_get(&c))) {
			q->op = write ? BLK_OP_WRITE : BLK_OP_READ;
			q->len = (__u32)bs;
			q->off = bs * (rand ? rnd(&rng) % blocks :
				       next++ % blocks);
			q->expect = 0;
			if (cli_send(&c, q, fua ? BLK_F_FUA : 0))
				goto out;
		}
		if (cli_reap(&c))
			goto out;
	}
	secs = (double)(ctl_now_ns() - t0) / NSEC_PER_SEC;
	cpu = cpu_secs() - cpu0;
	if (!b.n) {
		error("no request completed");
		goto out;
	}
	qsort(b.lat, b.n, sizeof(*b.lat), ctl_cmp_u64);
	for (i = 0, avg = 0; i < b.n; i++)
		avg += (double)b.lat[i];
	avg /= (double)b.n;
	if (opt.json) {
		jw_open(NULL, '{');
		jw_string("rw", rw);
		jw_u64("bs", bs);
		jw_u64("depth", c.depth);
		jw_string("transport", ctl_transport_name(o.transport));
		jw_u64("ops", b.n);
		jw_double("seconds", secs);
		jw_double("iops", (double)b.n / secs);
		jw_double("mb_per_s", (double)b.n * bs / secs / 1e6);
		jw_double("lat_avg_us", avg / 1e3);
		jw_double("lat_p50_us", ctl_pct_us(b.lat, b.n, 0.50));
		jw_double("lat_p99_us", ctl_pct_us(b.lat, b.n, 0.99));
		jw_double("cpu_us_per_op", cpu * 1e6 / (double)b.n);
		jw_close('}');
	} else {
		printf("%s bs=%llu depth=%u %s: %llu ops in %.2f s, %.0f IOPS, %.2f MB/s, latency avg %.0f us p50 %.0f us p99 %.0f us, client CPU %.1f us/op\n",
		       rw, (unsigned long long)bs, c.depth,
		       ctl_transport_name(o.transport),
		       (unsigned long long)b.n, secs, (double)b.n / secs,
		       (double)b.n * bs / secs / 1e6, avg / 1e3,
		       ctl_pct_us(b.lat, b.n, 0.50),
		       ctl_pct_us(b.lat, b.n, 0.99),
		       cpu * 1e6 / (double)b.n);
	}
	ret = b.errors ? EXIT_FAILURE : EXIT_SUCCESS;
out:
	cli_close(&c);
	free(b.lat);
	return ret;
}

int cmd_blk(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int argc, char **argv);
	} verbs[] = {
		{ "serve", blk_serve },
		{ "check", blk_check },
		{ "bench", blk_bench },
	};
	size_t i;

	if (argc < 1 || !strcmp(argv[0], "help") || !strcmp(argv[0], "-h") ||
	    !strcmp(argv[0], "--help")) {
		blk_usage(argc < 1 ? stderr : stdout);
		return argc < 1 ? EXIT_USAGE : EXIT_SUCCESS;
	}
	/* a verb may be abbreviated, as the other objects' */
	for (i = 0; i < ARRAY_SIZE(verbs); i++)
		if (*argv[0] && !strncmp(verbs[i].name, argv[0],
					 strlen(argv[0])))
			return verbs[i].fn(argc, argv);
	error("unknown verb \"%s\" for object \"blk\"; try \"%s blk help\"",
	      argv[0], progname);
	return EXIT_USAGE;
}
