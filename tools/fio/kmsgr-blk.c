// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr-blk - an fio external ioengine that is a client of kmsgr's example
 * remote block service (docs/block-service.md, tools/kmsgrctl/blk.h), so
 * that one fio job runs against `kmsgrctl blk serve` and against a local
 * or NVMe-oF block device alike.
 *
 *   fio --ioengine=external:.build/fio/kmsgr-blk.so --addr=IP:PORT \
 *       [--transport=tcp|rdma] [--lossless=1] [--connect_timeout=S] \
 *       [--busy_poll=USEC] --rw=randread --bs=4k --iodepth=32 ...
 *
 * Each fio job (process or thread) has a kmsgr instance of its own and one
 * session to the target.  The instance's buffer area holds, per io_u slot
 * (iodepth of them), room for the largest block size (a WRITE's data) and
 * a 64-byte request front; the receive pool after them takes the replies.
 * Requests are one SEND each (front: struct blk_req, data: a WRITE's
 * bytes); the reply (front: struct blk_reply, data: a READ's bytes) names
 * the request by its tid, whose low bits are the slot.  An io_u completes
 * when its SEND has completed and its reply has come, so that a slot is
 * never rewritten while the kernel may still read it.
 *
 * The data path has one copy in user space per request: a WRITE's buffer
 * into its slot of the buffer area, a READ's reply from the receive pool
 * into the io_u's buffer (then the pool slices go back with a RELEASE).
 * fio owns its io_u buffers, so that copy is the price of an external
 * engine; the kernel side sends and receives without further copies.
 *
 * The device's size comes from the target (INFO), so size= may be left
 * out.  fio asks for it before the job starts (in the parent process with
 * the default create_serialize=1), which costs a short session of its own.
 *
 * Build: make -C tools/fio (tools/fio/README.md).
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fio.h"
#include "optgroup.h"

#include "libkmsgr.h"
#include "blk.h"

#define KBLK_FRONT		64	/* request front bytes per slot */
#define KBLK_SLOT_BITS		16	/* slot index in a tid */
#define KBLK_MAX_DEPTH		(1U << KBLK_SLOT_BITS)
/* the deepest queue whose SQ (2 * depth + 16) fits max_sq_entries' 4096 */
#define KBLK_DEPTH_LIMIT	2040
#define KBLK_SESSION_UD		(~0ULL)	/* session user_data */
#define KBLK_DEF_TIMEOUT	10	/* seconds to connect and get INFO */
#define KBLK_PAGE		4096ULL
#define NSEC_PER_SEC		1000000000ULL

#define KBLK_ROUND(x, a)	(((x) + (a) - 1) / (a) * (a))

/* Engine options; fio stores its thread_data pointer in the first field. */
struct kblk_opts {
	void *pad;
	char *addr;
	unsigned int transport;
	unsigned int lossless;
	unsigned int timeout;
	unsigned int busy_poll;
};

static struct fio_option options[] = {
	{
		.name	= "addr",
		.lname	= "kmsgr-blk target address",
		.type	= FIO_OPT_STR_STORE,
		.off1	= offsetof(struct kblk_opts, addr),
		.help	= "IP:PORT of the target (kmsgrctl blk serve)",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "transport",
		.lname	= "kmsgr-blk transport",
		.type	= FIO_OPT_STR,
		.off1	= offsetof(struct kblk_opts, transport),
		.help	= "msgr2 transport of the session",
		.def	= "tcp",
		.posval	= {
			{ .ival = "tcp", .oval = KMSGR_XPRT_TCP,
			  .help = "TCP" },
			{ .ival = "rdma", .oval = KMSGR_XPRT_RDMA,
			  .help = "RDMA (kmsgr_rdma.ko)" },
		},
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "lossless",
		.lname	= "kmsgr-blk lossless session",
		.type	= FIO_OPT_BOOL,
		.off1	= offsetof(struct kblk_opts, lossless),
		.help	= "Reconnect and resend after a lost connection",
		.def	= "0",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		/* not "timeout": fio's own alias of runtime takes that name */
		.name	= "connect_timeout",
		.lname	= "kmsgr-blk connect timeout",
		.type	= FIO_OPT_INT,
		.off1	= offsetof(struct kblk_opts, timeout),
		.help	= "Seconds to wait for the session and INFO",
		.def	= "10",
		.minval	= 1,
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "busy_poll",
		.lname	= "kmsgr-blk busy poll",
		.type	= FIO_OPT_INT,
		.off1	= offsetof(struct kblk_opts, busy_poll),
		.help	= "Microseconds to spin before sleeping",
		.def	= "0",
		.maxval	= KMSGR_BUSY_POLL_MAX_US,
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= NULL,
	},
};

/* One request in flight: a slot of the buffer area. */
struct kblk_req {
	struct io_u *io_u;
	__u64 tid;
	__u16 op;
	bool busy;
	bool sent;		/* its SEND completed */
	bool replied;		/* its reply came, or never will */
};

struct kblk {
	struct kmsgr *k;
	__u32 session;
	bool open;		/* the session exists (CLOSE it at the end) */
	bool up;		/* requests may be sent */
	int err;		/* why not, once the session is gone */
	bool lossless;
	unsigned int depth;
	__u32 slot;		/* bytes per slot for a WRITE's data */
	__u64 seq;
	/* from INFO */
	__u32 lbs, max_io;
	__u64 capacity;

	struct kblk_req *req;
	unsigned int *free;	/* stack of free slots */
	unsigned int nfree;
	struct io_u **done;	/* ring of completed io_us, depth entries */
	unsigned int done_head, ndone;
	struct io_u **events;	/* what the last getevents returned */
	unsigned int queued;	/* requests since the last commit */
	struct kmsgr_cqe *rel;	/* RELEASEs that found the SQ full */
	unsigned int nrel;
};

static __u8 *kblk_area(const struct kblk *d, __u64 off)
{
	return (__u8 *)kmsgr_buf(d->k) + off;
}

static __u32 kblk_slot_off(const struct kblk *d, unsigned int i)
{
	return i * d->slot;
}

static __u32 kblk_front_off(const struct kblk *d, unsigned int i)
{
	return d->depth * d->slot + i * KBLK_FRONT;
}

static struct kmsgr_slice kblk_slice(__u32 off, __u32 len)
{
	struct kmsgr_slice s = { .off = off, .len = len };

	return s;
}

static void kblk_free(struct kblk *d)
{
	if (!d)
		return;
	if (d->k) {
		if (d->open)
			kmsgr_close_id(d->k, d->session);
		kmsgr_close(d->k);
	}
	free(d->req);
	free(d->free);
	free(d->done);
	free(d->events);
	free(d->rel);
	free(d);
}

static void kblk_fail_all(struct kblk *d, int err);

/* Give a RECV's pool slices back, now or at the next submission. */
static void kblk_release(struct kblk *d, const struct kmsgr_cqe *recv)
{
	struct kmsgr_sqe *sqe = kmsgr_get_sqe(d->k);

	if (!sqe) {
		/* room for one per slot: a reply each, and stray messages */
		if (d->nrel < 2 * d->depth) {
			d->rel[d->nrel++] = *recv;
			return;
		}
		/*
		 * more stray messages than that: the target misbehaves.  A
		 * slice kept would shrink the pool until no reply fits and
		 * every I/O stalled: end the session with an error instead.
		 */
		log_err("kmsgr-blk: no room to release a receive-pool slice: closing the session\n");
		if (d->open) {
			kmsgr_close_id(d->k, d->session);
			d->open = false;
		}
		kblk_fail_all(d, ENOSPC);
		return;
	}
	kmsgr_prep_release(sqe, recv);
}

static void kblk_flush_releases(struct kblk *d)
{
	struct kmsgr_sqe *sqe;
	unsigned int i;

	for (i = 0; i < d->nrel; i++) {
		sqe = kmsgr_get_sqe(d->k);
		if (!sqe)
			break;
		kmsgr_prep_release(sqe, &d->rel[i]);
	}
	memmove(d->rel, d->rel + i, (d->nrel - i) * sizeof(*d->rel));
	d->nrel -= i;
}

/* A request whose SEND completed and whose reply came: hand it to fio. */
static void kblk_put(struct kblk *d, struct kblk_req *q)
{
	if (!q->busy || !q->sent || !q->replied)
		return;
	q->busy = false;
	if (q->io_u)
		d->done[(d->done_head + d->ndone++) % d->depth] = q->io_u;
	q->io_u = NULL;
	d->free[d->nfree++] = (unsigned int)(q - d->req);
}

/* The session is gone: every request in flight fails with @err. */
static void kblk_fail_all(struct kblk *d, int err)
{
	unsigned int i;

	d->up = false;
	if (!d->err)
		d->err = err;
	for (i = 0; i < d->depth; i++) {
		struct kblk_req *q = &d->req[i];

		if (!q->busy)
			continue;
		if (!q->replied && q->io_u && !q->io_u->error)
			q->io_u->error = d->err;
		q->replied = true;
		q->sent = true;
		kblk_put(d, q);
	}
}

/* A reply to request @q: its status, a READ's data into the io_u. */
static void kblk_reply(struct kblk *d, struct kblk_req *q,
		       const struct blk_reply *r, const struct kmsgr_cqe *recv)
{
	const struct kmsgr_slice *data = &recv->seg[2];
	struct io_u *io_u = q->io_u;
	int status = (int)le32toh(r->status);

	if (q->op == BLK_OP_INFO) {
		if (status) {	/* an errno, or garbage: never success */
			d->err = status < 0 ? -status : EPROTO;
			return;
		}
		d->lbs = le32toh(r->lbs);
		d->capacity = le64toh(r->capacity);
		d->max_io = le32toh(r->max_io);
		return;
	}
	if (!io_u)
		return;
	if (status) {
		io_u->error = status < 0 ? -status : EPROTO;
		return;
	}
	if (q->op != BLK_OP_READ)
		return;
	if (data->len != io_u->xfer_buflen ||
	    (__u64)data->off + data->len > kmsgr_buf_size(d->k)) {
		log_err("kmsgr-blk: a READ of %llu bytes got %u\n",
			io_u->xfer_buflen, data->len);
		io_u->error = EIO;
		return;
	}
	/* the one copy of a READ: receive pool -> fio's buffer */
	memcpy(io_u->xfer_buf, kblk_area(d, data->off), data->len);
}

static void kblk_recv(struct kblk *d, const struct kmsgr_cqe *cqe)
{
	unsigned int i = cqe->tid & (KBLK_MAX_DEPTH - 1);
	struct kblk_req *q = i < d->depth ? &d->req[i] : NULL;
	const struct kmsgr_slice *front = &cqe->seg[0];

	if (cqe->session != d->session || !q || !q->busy || q->replied ||
	    q->tid != cqe->tid) {
		log_err("kmsgr-blk: an unexpected message (type %#x, tid %llu, front %u bytes)\n",
			cqe->type, (unsigned long long)cqe->tid, front->len);
		kblk_release(d, cqe);
		return;
	}
	/* the answer to a request in flight, malformed: it fails (EPROTO) */
	if (cqe->type != BLK_MSG_REPLY ||
	    front->len != sizeof(struct blk_reply) ||
	    (__u64)front->off + front->len > kmsgr_buf_size(d->k)) {
		log_err("kmsgr-blk: a malformed reply (type %#x, tid %llu, front %u bytes)\n",
			cqe->type, (unsigned long long)cqe->tid, front->len);
		kblk_release(d, cqe);
		if (q->io_u)
			q->io_u->error = EPROTO;
		else if (q->op == BLK_OP_INFO)
			d->err = EPROTO;
		q->replied = true;
		kblk_put(d, q);
		return;
	}
	kblk_reply(d, q, (const void *)kblk_area(d, front->off), cqe);
	kblk_release(d, cqe);
	q->replied = true;
	kblk_put(d, q);
}

/* A SEND that completed (kind SEND) or was refused (kind OP, res < 0). */
static void kblk_sent(struct kblk *d, const struct kmsgr_cqe *cqe)
{
	struct kblk_req *q;

	if (cqe->user_data >= d->depth)
		return;
	q = &d->req[cqe->user_data];
	if (!q->busy || q->sent)
		return;
	q->sent = true;
	if (cqe->res < 0) {
		/* not sent: no reply will come */
		if (q->io_u && !q->io_u->error)
			q->io_u->error = -cqe->res;
		if (q->op == BLK_OP_INFO && !d->err)
			d->err = -cqe->res;
		q->replied = true;
	}
	kblk_put(d, q);
}

static void kblk_event(struct kblk *d, const struct kmsgr_cqe *cqe)
{
	int err = cqe->res < 0 ? -cqe->res : ECONNRESET;

	if (cqe->session != d->session)
		return;
	switch (cqe->event) {
	case KMSGR_EV_UP:
		if (d->open && !d->err)
			d->up = true;
		return;
	case KMSGR_EV_DOWN:
		/* lossless: the kernel reconnects and resends, mostly */
		if (!kmsgr_down_is_final(cqe, d->lossless, d->up))
			return;
		break;
	case KMSGR_EV_CLOSED:
		/* a dead session keeps its id (and its slot) until CLOSE */
		if (d->open)
			kmsgr_close_id(d->k, d->session);
		d->open = false;
		break;
	default:		/* RESET: the peer lost what was in flight */
		break;
	}
	if (d->up || !d->err)
		log_err("kmsgr-blk: session to the target %s: %s%s%s\n",
			kmsgr_event_str(cqe->event),
			kmsgr_reason_str(cqe->reason), cqe->res ? ": " : "",
			cqe->res ? strerror(-cqe->res) : "");
	kblk_fail_all(d, err);
}

static void kblk_cqe(struct kblk *d, const struct kmsgr_cqe *cqe)
{
	switch (cqe->kind) {
	case KMSGR_CQE_SEND:
		kblk_sent(d, cqe);
		return;
	case KMSGR_CQE_RECV:
		kblk_recv(d, cqe);
		return;
	case KMSGR_CQE_EVENT:
		kblk_event(d, cqe);
		return;
	case KMSGR_CQE_OP:
		if (cqe->res < 0 && cqe->user_data < d->depth) {
			kblk_sent(d, cqe);
			return;
		}
		if (cqe->res < 0)
			log_err("kmsgr-blk: a submission failed: %s\n",
				kmsgr_strerror(cqe->res));
		return;
	}
}

/* Handle the completions that are ready; no system call. */
static void kblk_reap(struct kblk *d)
{
	struct kmsgr_cqe *cqe;

	while ((cqe = kmsgr_peek_cqe(d->k)) != NULL) {
		kblk_cqe(d, cqe);
		kmsgr_cqe_seen(d->k);
	}
}

/*
 * Wait up to @timeout_ns (0: no bound) for a completion and handle it,
 * with the ones ready after it.  Return: 0, -ETIME, -EINTR, or another
 * negative errno (then the session is marked failed).
 */
static int kblk_wait(struct kblk *d, __u64 timeout_ns)
{
	struct kmsgr_cqe *cqe;
	int ret;

	kblk_flush_releases(d);
	ret = kmsgr_wait_cqe(d->k, &cqe, timeout_ns);
	if (ret == -ETIME || ret == -EINTR)
		return ret;
	if (ret) {
		log_err("kmsgr-blk: waiting for completions: %s\n",
			kmsgr_strerror(ret));
		kblk_fail_all(d, -ret);
		return ret;
	}
	kblk_cqe(d, cqe);
	kmsgr_cqe_seen(d->k);
	kblk_reap(d);
	return 0;
}

static __u64 kblk_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * NSEC_PER_SEC + (__u64)ts.tv_nsec;
}

/* Prepare the SEND of a request of slot @i; the caller filled q->op. */
static int kblk_send(struct kblk *d, unsigned int i, __u64 off, __u32 len)
{
	struct blk_req *w = (void *)kblk_area(d, kblk_front_off(d, i));
	struct kblk_req *q = &d->req[i];
	struct kmsgr_slice data = { 0 }, none = { 0 };
	struct kmsgr_sqe *sqe;

	sqe = kmsgr_get_sqe(d->k);
	if (!sqe)
		return -EBUSY;
	memset(w, 0, sizeof(*w));
	w->op = htole16(q->op);
	w->len = htole32(len);
	w->off = htole64(off);
	if (q->op == BLK_OP_WRITE)
		data = kblk_slice(kblk_slot_off(d, i), len);
	q->tid = (++d->seq << KBLK_SLOT_BITS) | i;
	q->busy = true;
	q->sent = false;
	q->replied = false;
	kmsgr_prep_send(sqe, d->session, BLK_MSG_REQUEST, q->tid,
			kblk_slice(kblk_front_off(d, i), sizeof(*w)), none,
			data, i);
	return 0;
}

/*
 * Open a kmsgr instance for @depth requests of up to @slot bytes, connect
 * to the target and ask INFO.  Return: 0 with *@out set, or a negative
 * errno (reported).
 */
static int kblk_open(struct kblk_opts *o, unsigned int depth, __u32 slot,
		     struct kblk **out)
{
	struct kmsgr_setup setup;
	struct kmsgr_connect kc;
	struct kmsgr_info info;
	struct kblk *d;
	__u64 tx, pool, deadline, now;
	int ret, err;

	if (!o->addr || !o->addr[0]) {
		log_err("kmsgr-blk: addr=IP:PORT is required (the block target)\n");
		return -EINVAL;
	}
	memset(&kc, 0, sizeof(kc));
	if (kmsgr_addr_parse(o->addr, &kc.addr)) {
		log_err("kmsgr-blk: bad addr=%s (want IPv4:PORT or [IPv6]:PORT)\n",
			o->addr);
		return -EINVAL;
	}
	if (depth > KBLK_DEPTH_LIMIT) {
		log_err("kmsgr-blk: iodepth %u is above %u (its SQ would not fit the module's default max_sq_entries, 4096)\n",
			depth, KBLK_DEPTH_LIMIT);
		return -EINVAL;
	}

	d = calloc(1, sizeof(*d));
	if (!d)
		goto nomem;
	d->depth = depth;
	d->slot = (__u32)KBLK_ROUND(slot, KBLK_PAGE);
	d->lossless = o->lossless;
	d->req = calloc(depth, sizeof(*d->req));
	d->free = calloc(depth, sizeof(*d->free));
	d->done = calloc(depth, sizeof(*d->done));
	d->events = calloc(depth, sizeof(*d->events));
	d->rel = calloc(2 * depth, sizeof(*d->rel));
	if (!d->req || !d->free || !d->done || !d->events || !d->rel)
		goto nomem;
	for (d->nfree = 0; d->nfree < depth; d->nfree++)
		d->free[d->nfree] = depth - 1 - d->nfree;

	ret = kmsgr_open(NULL, &d->k);
	if (ret) {
		log_err("kmsgr-blk: cannot open /dev/kmsgr: %s%s\n",
			kmsgr_strerror(ret),
			ret == -ENOENT ? " (is the kmsgr module loaded?)" : "");
		err = ret;
		goto fail;
	}
	ret = kmsgr_info(d->k, &info);
	if (!ret && o->transport == KMSGR_XPRT_RDMA &&
	    !(info.features & KMSGR_FEAT_RDMA)) {
		log_err("kmsgr-blk: transport=rdma: kmsgr_rdma.ko is not loaded\n");
		err = -EPROTONOSUPPORT;
		goto fail;
	}

	/*
	 * tx part: the slots, then the fronts.  Receive pool: every reply
	 * in flight at once, twice over for fragmentation, plus 1 MiB.
	 * SQ: a SEND and a RELEASE per slot, with room to spare (within
	 * the module's max_sq_entries, 4096 by default).
	 */
	tx = KBLK_ROUND((__u64)depth * (d->slot + KBLK_FRONT), KBLK_PAGE);
	pool = KBLK_ROUND(2ULL * depth * (d->slot + KBLK_FRONT) + (1 << 20),
			  KBLK_PAGE);
	memset(&setup, 0, sizeof(setup));
	setup.sq_entries = depth < 1020 ? 4 * depth + 16 : 2 * depth + 16;
	setup.buf_size = tx + pool;
	setup.rx_pool_size = pool;
	ret = kmsgr_setup(d->k, &setup);
	if (ret) {
		log_err("kmsgr-blk: setting up rings and a %llu-byte buffer area: %s%s\n",
			(unsigned long long)(tx + pool), kmsgr_strerror(ret),
			ret == -ENOMEM || ret == -EAGAIN ?
			" (RLIMIT_MEMLOCK? see ulimit -l)" : "");
		err = ret;
		goto fail;
	}
	if (o->busy_poll)
		kmsgr_set_busy_poll(d->k, o->busy_poll);

	kc.transport = o->transport;
	kc.flags = o->lossless ? KMSGR_SESS_F_LOSSLESS : 0;
	kc.my_type = 8;			/* CEPH_ENTITY_TYPE_CLIENT */
	kc.auth = KMSGR_AUTH_NONE;
	kc.user_data = KBLK_SESSION_UD;
	strcpy(kc.name, "fio");
	ret = kmsgr_connect(d->k, &kc);
	if (ret) {
		log_err("kmsgr-blk: connecting to %s: %s\n", o->addr,
			kmsgr_strerror(ret));
		err = ret;
		goto fail;
	}
	d->session = kc.id;
	d->open = true;

	/* the session, then INFO on slot 0, within the timeout */
	deadline = kblk_now_ns() + (__u64)o->timeout * NSEC_PER_SEC;
	while (!d->up && !d->err) {
		now = kblk_now_ns();
		ret = now < deadline ? kblk_wait(d, deadline - now) : -ETIME;
		if (ret && ret != -EINTR)
			break;
	}
	if (!d->up) {
		if (!d->err)
			log_err("kmsgr-blk: no session to %s (%s) after %u s\n",
				o->addr, o->transport == KMSGR_XPRT_RDMA ?
				"rdma" : "tcp", o->timeout);
		err = d->err ? -d->err : -ETIMEDOUT;
		goto fail;
	}
	d->nfree--;			/* slot 0 */
	d->req[0].op = BLK_OP_INFO;
	ret = kblk_send(d, 0, 0, 0);
	while (!ret && d->req[0].busy) {
		now = kblk_now_ns();
		ret = now < deadline ? kblk_wait(d, deadline - now) : -ETIME;
		if (ret == -EINTR)
			ret = 0;
	}
	if (ret || d->err) {
		log_err("kmsgr-blk: INFO from %s: %s\n", o->addr,
			strerror(d->err ? d->err : -ret));
		err = d->err ? -d->err : ret;
		goto fail;
	}
	if (!d->lbs || d->lbs & (d->lbs - 1) || d->max_io < d->lbs ||
	    d->capacity < d->lbs) {
		log_err("kmsgr-blk: INFO: block size %u, max_io %u, capacity %llu: nonsense\n",
			d->lbs, d->max_io, (unsigned long long)d->capacity);
		err = -EPROTO;
		goto fail;
	}
	*out = d;
	return 0;

nomem:
	log_err("kmsgr-blk: out of memory\n");
	err = -ENOMEM;
fail:
	kblk_free(d);
	return err;
}

/* ---- fio's hooks -------------------------------------------------------- */

static int fio_kblk_init(struct thread_data *td)
{
	struct kblk *d;
	unsigned long long bs = td_max_bs(td);
	int err;

	if (bs > (1U << 30)) {
		log_err("kmsgr-blk: bs %llu is too large\n", bs);
		return 1;
	}
	err = kblk_open(td->eo, td->o.iodepth, (__u32)bs, &d);
	if (err) {
		td_verror(td, -err, "kmsgr-blk init");
		return 1;
	}
	if (bs > d->max_io) {
		log_err("kmsgr-blk: bs %llu is above the target's max_io %u\n",
			bs, d->max_io);
		kblk_free(d);
		return 1;
	}
	if (td_min_bs(td) % d->lbs) {
		log_err("kmsgr-blk: bs %llu is not a multiple of the target's block size %u\n",
			td_min_bs(td), d->lbs);
		kblk_free(d);
		return 1;
	}
	/* else every request would fail EINVAL at the target */
	if (td->o.start_offset % d->lbs || td->o.offset_increment % d->lbs) {
		log_err("kmsgr-blk: offset %llu or offset_increment %llu is not a multiple of the target's block size %u\n",
			td->o.start_offset, td->o.offset_increment, d->lbs);
		kblk_free(d);
		return 1;
	}
	td->io_ops_data = d;
	return 0;
}

static void fio_kblk_cleanup(struct thread_data *td)
{
	kblk_free(td->io_ops_data);
	td->io_ops_data = NULL;
}

static enum fio_q_status fio_kblk_queue(struct thread_data *td,
					struct io_u *io_u)
{
	struct kblk *d = td->io_ops_data;
	struct kblk_req *q;
	unsigned int i;
	__u16 op;

	fio_ro_check(td, io_u);
	switch (io_u->ddir) {
	case DDIR_READ:
		op = BLK_OP_READ;
		break;
	case DDIR_WRITE:
		op = BLK_OP_WRITE;
		break;
	case DDIR_SYNC:
	case DDIR_DATASYNC:
	case DDIR_SYNC_FILE_RANGE:
		op = BLK_OP_FLUSH;
		break;
	default:		/* TRIM: the service has no such request */
		io_u->error = EOPNOTSUPP;
		return FIO_Q_COMPLETED;
	}
	if (!d->up) {
		io_u->error = d->err ? d->err : ENOTCONN;
		return FIO_Q_COMPLETED;
	}
	if (op != BLK_OP_FLUSH && (io_u->xfer_buflen > d->slot ||
				   io_u->xfer_buflen > d->max_io)) {
		io_u->error = EINVAL;
		return FIO_Q_COMPLETED;
	}
	if (!d->nfree || !kmsgr_sq_space(d->k))
		return FIO_Q_BUSY;

	i = d->free[--d->nfree];
	q = &d->req[i];
	q->op = op;
	q->io_u = io_u;
	/* the one copy of a WRITE: fio's buffer -> its slot */
	if (op == BLK_OP_WRITE)
		memcpy(kblk_area(d, kblk_slot_off(d, i)), io_u->xfer_buf,
		       io_u->xfer_buflen);
	if (kblk_send(d, i, op == BLK_OP_FLUSH ? 0 : io_u->offset,
		      op == BLK_OP_FLUSH ? 0 : (__u32)io_u->xfer_buflen)) {
		q->io_u = NULL;
		d->free[d->nfree++] = i;
		return FIO_Q_BUSY;
	}
	d->queued++;
	return FIO_Q_QUEUED;
}

static int fio_kblk_commit(struct thread_data *td)
{
	struct kblk *d = td->io_ops_data;
	int ret;

	kblk_flush_releases(d);
	/*
	 * fio counts what it queued as submitted now; SQEs the kernel could
	 * not take yet (no CQ room, or pushed already by a wait's ENTER)
	 * stay pending and go with the next wait
	 */
	if (d->queued)
		io_u_mark_submit(td, d->queued);
	d->queued = 0;
	if (!kmsgr_sq_pending(d->k))
		return 0;
	do {
		ret = kmsgr_submit(d->k, 0, 0);
	} while (ret == -EINTR && !td->terminate);
	if (ret < 0 && ret != -EINTR) {
		log_err("kmsgr-blk: submitting: %s\n", kmsgr_strerror(ret));
		return ret;
	}
	return 0;
}

static unsigned int kblk_busy(const struct kblk *d)
{
	return d->depth - d->nfree;
}

/* As fio's runtime_exceeded(): the job's runtime has run out. */
static bool kblk_runtime_over(struct thread_data *td)
{
	return td->o.timeout && !in_ramp_time(td) &&
	       utime_since_now(&td->epoch) >= td->o.timeout;
}

static int fio_kblk_getevents(struct thread_data *td, unsigned int min,
			      unsigned int max, const struct timespec *t)
{
	struct kblk *d = td->io_ops_data;
	const struct kblk_opts *o = td->eo;
	__u64 timeout_ns = 0, deadline = 0, grace = 0, now;
	unsigned int n;
	int ret;

	if (t) {
		timeout_ns = (__u64)t->tv_sec * NSEC_PER_SEC +
			     (__u64)t->tv_nsec;
		deadline = kblk_now_ns() + timeout_ns;
	}
	kblk_reap(d);
	while (d->ndone < min && kblk_busy(d)) {
		/*
		 * A second at a time, up to fio's bound if it gave one.  With
		 * none, fio wants @min: its last reaps (the end of do_io()
		 * and do_verify(), fio_io_sync()) call once, and take a
		 * short count as all done, losing the errors of what was
		 * still out.  Back to fio short only once its runtime is
		 * over, which fio notices between calls (runtime_exceeded()).
		 */
		now = kblk_now_ns();
		timeout_ns = NSEC_PER_SEC;
		if (t) {
			if (now >= deadline)
				break;
			if (deadline - now < timeout_ns)
				timeout_ns = deadline - now;
		}
		/*
		 * Told to stop (its runtime is over, a signal): this is fio's
		 * last reap, one call for all that is out, which gets
		 * connect_timeout seconds to come back, then is failed (a
		 * target that stopped answering, a lossless session that
		 * redials it for ever); a target that is only slow is waited
		 * for, not failed after a second
		 */
		if (td->terminate && !grace)
			grace = now + (__u64)o->timeout * NSEC_PER_SEC;
		if (grace && now >= grace) {
			kblk_fail_all(d, ECANCELED);
			break;
		}
		/* an error but -ETIME or -EINTR failed every request */
		ret = kblk_wait(d, timeout_ns);
		if (ret == -ETIME && !t && !grace && kblk_runtime_over(td))
			break;
	}

	n = d->ndone < max ? d->ndone : max;
	for (ret = 0; ret < (int)n; ret++) {
		d->events[ret] = d->done[d->done_head];
		d->done_head = (d->done_head + 1) % d->depth;
	}
	d->ndone -= n;
	return (int)n;
}

static struct io_u *fio_kblk_event(struct thread_data *td, int event)
{
	struct kblk *d = td->io_ops_data;

	return d->events[event];
}

/*
 * The device's size, from INFO on a short session of its own: fio asks
 * before ->init() (in the parent with create_serialize=1), and the
 * answer goes to the job's process with the rest of its thread_data.
 */
static int fio_kblk_get_file_size(struct thread_data *td, struct fio_file *f)
{
	struct kblk *d = td->io_ops_data;
	bool own = !d;
	int err;

	if (fio_file_size_known(f))
		return 0;
	if (own) {
		err = kblk_open(td->eo, 1, KBLK_PAGE, &d);
		if (err) {
			td_verror(td, -err, "kmsgr-blk get_file_size");
			return 1;
		}
	}
	f->real_file_size = d->capacity;
	fio_file_set_size_known(f);
	if (own)
		kblk_free(d);
	return 0;
}

/* There is no local file: the session is the device. */
static int fio_kblk_open_file(struct thread_data *td, struct fio_file *f)
{
	(void)td;
	(void)f;
	return 0;
}

static int fio_kblk_close_file(struct thread_data *td, struct fio_file *f)
{
	(void)td;
	(void)f;
	return 0;
}

/* The symbol fio looks up in an external engine. */
__attribute__((visibility("default")))
struct ioengine_ops ioengine = {
	.name			= "kmsgr-blk",
	.version		= FIO_IOOPS_VERSION,
	.flags			= FIO_DISKLESSIO | FIO_NOEXTEND |
				  FIO_NODISKUTIL,
	.init			= fio_kblk_init,
	.cleanup		= fio_kblk_cleanup,
	.queue			= fio_kblk_queue,
	.commit			= fio_kblk_commit,
	.getevents		= fio_kblk_getevents,
	.event			= fio_kblk_event,
	.get_file_size		= fio_kblk_get_file_size,
	.open_file		= fio_kblk_open_file,
	.close_file		= fio_kblk_close_file,
	.options		= options,
	.option_struct_size	= sizeof(struct kblk_opts),
};
