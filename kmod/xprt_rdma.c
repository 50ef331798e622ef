// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr_rdma - the RDMA transport: msgr2 connections on reliable-connected
 * queue pairs, set up with rdma_cm.  docs/rdma-wire.md is the wire format.
 *
 * The msgr2 byte stream travels in SENDs into receive buffers the peer
 * posted in advance, under credit-based flow control: a SEND is posted
 * only when the peer has a buffer for it, so nothing relies on RNR retry
 * (rnr_retry is 0 by default and a missing buffer fails the connection).
 * Every SEND's header returns the credits of the buffers its sender has
 * consumed and posted again since its last SEND; a receiver with many
 * credits to return and nothing to send sends a CREDIT message, and the
 * last credit is kept for that, so the two sides can never both wait.
 *
 * Objects, and who touches what:
 *
 *  kmsgr_rdma_dev   one per RDMA device (the ib_client's add): its PD, its
 *                   listed connections.  Its remove detaches every
 *                   connection and device-bound listener on it, waits for
 *                   the connections being set up, then frees it.
 *  kmsgr_rdma_conn  a connection: cm_id, QP, a CQ from the shared pool,
 *                   receive and send buffers.  Its owner (a session, or
 *                   its listener until accept()) calls the operations, one
 *                   at a time.  CM handlers (process context, under the
 *                   cm_id's handler mutex) and completion handlers
 *                   (softirq) run concurrently with them and take only
 *                   @lock.  Work requests are posted only under @lock and
 *                   only while !@detached.  @mutex serialises the teardown
 *                   of the verbs objects (kmsgr_rdma_detach()), which
 *                   close() and device removal both do; @ref keeps the
 *                   structure for both.
 *  kmsgr_rdma_lsn   a listener: its cm_id and the connections it accepted
 *                   at the CM level that accept() has not handed out yet.
 *
 * kmsgr_rdma_lock (a mutex) guards the device list, each device's
 * connection list, users and dying flag, and the listener list.  Lock
 * order: conn->mutex or lsn->mutex > kmsgr_rdma_lock > lsn->lock >
 * conn->lock; the two spinlocks are taken with bottom halves off
 * (completions run in softirq).  No CM handler takes a conn or lsn mutex: teardown holds
 * them while rdma_destroy_id() waits for the handlers.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <net/net_namespace.h>
#include <rdma/ib_cm.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include <linux/kmsgr.h>

#include "kmsgr.h"
#include "xprt.h"

/* ---- wire (docs/rdma-wire.md) ---- */

#define KMSGR_RDMA_MAGIC	0x4b4d5352	/* "KMSR" */
#define KMSGR_RDMA_VERSION	1

/* rdma_cm private data of the connect request and of the accept */
struct kmsgr_rdma_cm_priv {
	__be32 magic;
	u8 version;
	u8 flags;			/* 0 */
	__be16 credits;			/* receive buffers posted for the peer */
	__be32 buf_size;		/* bytes each holds, header included */
	__be32 reserved;		/* 0 */
};

/* private data of a reject */
struct kmsgr_rdma_cm_rej {
	__be32 magic;
	u8 version;			/* the highest one the rejecter speaks */
	u8 reason;			/* KMSGR_RDMA_REJ_* */
	__be16 reserved;
};

#define KMSGR_RDMA_REJ_VERSION	1	/* unknown wire version */
#define KMSGR_RDMA_REJ_PARAMS	2	/* bad credits or buffer size */
#define KMSGR_RDMA_REJ_BUSY	3	/* listener backlog full, or closing */
#define KMSGR_RDMA_REJ_NOMEM	4	/* no resources */

/* the header of every SEND */
struct kmsgr_rdma_hdr {
	u8 type;			/* KMSGR_RDMA_MSG_* */
	u8 flags;			/* 0 */
	__be16 credits;			/* buffers posted again for the peer */
};

#define KMSGR_RDMA_MSG_DATA	1	/* the next bytes of the msgr2 stream */
#define KMSGR_RDMA_MSG_CREDIT	2	/* credits only, no payload */

#define KMSGR_RDMA_HDR		sizeof(struct kmsgr_rdma_hdr)
#define KMSGR_RDMA_TIMEOUT_MS	3000
#define KMSGR_RDMA_BACKLOG	128	/* not yet accepted, per listener */
#define KMSGR_RDMA_CREDITS_MIN	4
#define KMSGR_RDMA_CREDITS_MAX	1024
#define KMSGR_RDMA_BUF_MIN	1024
#define KMSGR_RDMA_BUF_MAX	SZ_1M

/* ---- parameters ---- */

static unsigned int credits = 16;
module_param(credits, uint, 0644);
MODULE_PARM_DESC(credits,
		 "Receive buffers per connection, the credits granted to the peer (4-1024, default 16)");

static unsigned int buf_size = 16384;
module_param(buf_size, uint, 0644);
MODULE_PARM_DESC(buf_size,
		 "Bytes per receive and send buffer, header included (1024-1048576, default 16384)");

static unsigned int rnr_retry;
module_param(rnr_retry, uint, 0644);
MODULE_PARM_DESC(rnr_retry,
		 "RNR retry count asked of rdma_cm (0-7, default 0: credits make RNR impossible, so one is an error)");

static atomic64_t kmsgr_rdma_pinned = ATOMIC64_INIT(0);

static int kmsgr_rdma_pinned_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%lld\n", atomic64_read(&kmsgr_rdma_pinned));
}

static const struct kernel_param_ops kmsgr_rdma_pinned_ops = {
	.get = kmsgr_rdma_pinned_get,
};

module_param_cb(pinned_bytes, &kmsgr_rdma_pinned_ops, NULL, 0444);
MODULE_PARM_DESC(pinned_bytes,
		 "Bytes of DMA-mapped connection buffers now (read only)");

/* ---- objects ---- */

struct kmsgr_rdma_dev {
	struct list_head node;		/* on kmsgr_rdma_devs */
	struct ib_device *ibdev;
	struct ib_pd *pd;
	struct list_head conns;		/* kmsgr_rdma_conn.dev_node */
	unsigned int users;		/* connections holding the PD */
	bool dying;
	wait_queue_head_t wq;		/* users reached 0 */
};

struct kmsgr_rdma_buf {
	struct ib_cqe cqe;
	void *data;
	u64 dma;
	u32 len;			/* receive: bytes that arrived */
};

enum kmsgr_rdma_state {
	KMSGR_RDMA_CONNECTING,
	KMSGR_RDMA_CONNECTED,
	KMSGR_RDMA_EOF,			/* the peer disconnected */
};

struct kmsgr_rdma_lsn;

struct kmsgr_rdma_conn {
	struct kmsgr_xprt x;
	struct kref ref;
	struct mutex mutex;		/* the teardown */
	bool torn;			/* verbs objects gone (under mutex) */
	struct rdma_cm_id *id;		/* ours to destroy, or NULL */
	struct kmsgr_rdma_dev *dev;	/* counted in dev->users */
	struct list_head dev_node;	/* on dev->conns while listed */
	struct kmsgr_rdma_lsn *lsn;	/* accepted at CM level, not handed out */
	struct list_head lsn_node;	/* on lsn->pending */
	bool server;			/* accepted by a listener */
	struct ib_device *ibdev;	/* the buffers are mapped for it */
	bool mapped;
	struct ib_qp *qp;
	struct ib_cq *cq;
	u32 cq_size;
	struct sockaddr_storage local, peer;

	spinlock_t lock;		/* everything below */
	kmsgr_xprt_kick_t kick;
	void *priv;
	enum kmsgr_rdma_state state;
	int err;
	bool detached;			/* no more posting */
	/* receive */
	struct kmsgr_rdma_buf *rx;
	u32 nr_rx, rx_size;
	u32 *ready;			/* DATA buffers in arrival order */
	u32 ready_head, ready_tail;	/* counters, index % nr_rx */
	u32 rx_off;			/* payload bytes taken from the head */
	u32 owed;			/* credits to return to the peer */
	/* send */
	struct kmsgr_rdma_buf *tx;
	u32 nr_tx, tx_size;
	u32 tx_posted, tx_done;		/* counters, slot % nr_tx */
	u32 credits;			/* the peer's buffers we may fill */
	u32 peer_credits, peer_size;	/* what the peer announced */
	bool tx_wait;			/* no room: kick when there is */
};

struct kmsgr_rdma_lsn {
	struct kmsgr_xprt x;
	struct kref ref;
	struct mutex mutex;		/* @id */
	struct rdma_cm_id *id;		/* NULL once its device went away */
	struct ib_device *ibdev;	/* bound to, or NULL (any) */
	bool gone;			/* device removal claimed it */
	struct list_head node;		/* on kmsgr_rdma_lsns */
	struct sockaddr_storage local;

	spinlock_t lock;		/* everything below */
	kmsgr_xprt_kick_t kick;
	void *priv;
	bool closing;
	int err;
	struct list_head pending;	/* kmsgr_rdma_conn.lsn_node */
	unsigned int nr_pending;
};

static DEFINE_MUTEX(kmsgr_rdma_lock);
static LIST_HEAD(kmsgr_rdma_devs);
static LIST_HEAD(kmsgr_rdma_lsns);
static struct ib_client kmsgr_rdma_client;

static const struct kmsgr_xprt_ops kmsgr_rdma_ops;
static const struct kmsgr_xprt_ops kmsgr_rdma_lsn_ops;

static struct kmsgr_rdma_conn *to_conn(struct kmsgr_xprt *x)
{
	return container_of(x, struct kmsgr_rdma_conn, x);
}

static struct kmsgr_rdma_lsn *to_lsn(struct kmsgr_xprt *x)
{
	return container_of(x, struct kmsgr_rdma_lsn, x);
}

/* ---- devices ---- */

/* Count @c as a user of @ibdev's PD; list it if @list. */
static int kmsgr_rdma_dev_attach(struct kmsgr_rdma_conn *c,
				 struct ib_device *ibdev, bool list)
{
	struct kmsgr_rdma_dev *d;
	int ret = -ENODEV;

	mutex_lock(&kmsgr_rdma_lock);
	list_for_each_entry(d, &kmsgr_rdma_devs, node) {
		if (d->ibdev != ibdev)
			continue;
		if (!d->dying) {
			d->users++;
			c->dev = d;
			if (list)
				list_add_tail(&c->dev_node, &d->conns);
			ret = 0;
		}
		break;
	}
	mutex_unlock(&kmsgr_rdma_lock);
	return ret;
}

/* List @c on its device (it was attached unlisted); -ENODEV if dying. */
static int kmsgr_rdma_dev_list(struct kmsgr_rdma_conn *c)
{
	int ret = 0;

	mutex_lock(&kmsgr_rdma_lock);
	if (c->dev->dying)
		ret = -ENODEV;
	else
		list_add_tail(&c->dev_node, &c->dev->conns);
	mutex_unlock(&kmsgr_rdma_lock);
	return ret;
}

static void kmsgr_rdma_dev_detach(struct kmsgr_rdma_conn *c)
{
	struct kmsgr_rdma_dev *d = c->dev;

	if (!d)
		return;
	mutex_lock(&kmsgr_rdma_lock);
	list_del_init(&c->dev_node);
	if (!--d->users)
		wake_up(&d->wq);
	mutex_unlock(&kmsgr_rdma_lock);
	c->dev = NULL;
}

/* ---- buffers ---- */

static void kmsgr_rdma_recv_done(struct ib_cq *cq, struct ib_wc *wc);
static void kmsgr_rdma_send_done(struct ib_cq *cq, struct ib_wc *wc);

static int kmsgr_rdma_bufs_map(struct ib_device *ibdev,
			       struct kmsgr_rdma_buf *b, u32 n, u32 size,
			       enum dma_data_direction dir,
			       void (*done)(struct ib_cq *, struct ib_wc *))
{
	u32 i;

	for (i = 0; i < n; i++) {
		b[i].cqe.done = done;
		b[i].dma = ib_dma_map_single(ibdev, b[i].data, size, dir);
		if (ib_dma_mapping_error(ibdev, b[i].dma))
			goto out_unmap;
	}
	atomic64_add((u64)n * size, &kmsgr_rdma_pinned);
	return 0;

out_unmap:
	while (i--)
		ib_dma_unmap_single(ibdev, b[i].dma, size, dir);
	return -ENOMEM;
}

static void kmsgr_rdma_bufs_unmap(struct ib_device *ibdev,
				  struct kmsgr_rdma_buf *b, u32 n, u32 size,
				  enum dma_data_direction dir)
{
	u32 i;

	for (i = 0; i < n; i++)
		ib_dma_unmap_single(ibdev, b[i].dma, size, dir);
	atomic64_sub((u64)n * size, &kmsgr_rdma_pinned);
}

static struct kmsgr_rdma_buf *kmsgr_rdma_bufs_alloc(u32 n, u32 size)
{
	struct kmsgr_rdma_buf *b;
	u32 i;

	b = kcalloc(n, sizeof(*b), GFP_KERNEL);
	if (!b)
		return NULL;
	for (i = 0; i < n; i++) {
		b[i].data = kmalloc(size, GFP_KERNEL);
		if (!b[i].data)
			goto out_free;
	}
	return b;

out_free:
	while (i--)
		kfree(b[i].data);
	kfree(b);
	return NULL;
}

static void kmsgr_rdma_bufs_free(struct kmsgr_rdma_buf *b, u32 n)
{
	u32 i;

	if (!b)
		return;
	for (i = 0; i < n; i++)
		kfree(b[i].data);
	kfree(b);
}

/* ---- connections: kicks, errors, posting ---- */

static void kmsgr_rdma_kick(struct kmsgr_rdma_conn *c, unsigned int why)
	__must_hold(&c->lock)
{
	if (c->kick)
		c->kick(c->priv, why);
}

/* The connection failed with @err (the first error wins). */
static void kmsgr_rdma_fail(struct kmsgr_rdma_conn *c, int err)
	__must_hold(&c->lock)
{
	if (!c->err)
		c->err = err;
	kmsgr_rdma_kick(c, KMSGR_XPRT_KICK_STATE | KMSGR_XPRT_KICK_RX |
			   KMSGR_XPRT_KICK_TX);
}

static int kmsgr_rdma_post_recv(struct kmsgr_rdma_conn *c,
				struct kmsgr_rdma_buf *b)
	__must_hold(&c->lock)
{
	struct ib_sge sge = {
		.addr = b->dma,
		.length = c->rx_size,
	};
	struct ib_recv_wr wr = {
		.wr_cqe = &b->cqe,
		.sg_list = &sge,
		.num_sge = 1,
	};

	if (c->detached)
		return -ENOTCONN;
	sge.lkey = c->dev->pd->local_dma_lkey;
	return ib_post_recv(c->qp, &wr, NULL);
}

/*
 * Post tx slot tx_posted with @len payload bytes (already in place) as a
 * message of @type, returning the credits owed.  Room and credits were
 * checked by the caller.
 */
static int kmsgr_rdma_post_send(struct kmsgr_rdma_conn *c, u8 type, u32 len)
	__must_hold(&c->lock)
{
	struct kmsgr_rdma_buf *b = &c->tx[c->tx_posted % c->nr_tx];
	struct kmsgr_rdma_hdr *h = b->data;
	struct ib_sge sge = {
		.addr = b->dma,
		.length = KMSGR_RDMA_HDR + len,
	};
	struct ib_send_wr wr = {
		.wr_cqe = &b->cqe,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IB_WR_SEND,
		.send_flags = IB_SEND_SIGNALED,
	};
	u32 owed = min_t(u32, c->owed, U16_MAX);
	int ret;

	if (c->detached)
		return c->err ? c->err : -ENOTCONN;
	sge.lkey = c->dev->pd->local_dma_lkey;
	h->type = type;
	h->flags = 0;
	h->credits = cpu_to_be16(owed);
	ib_dma_sync_single_for_device(c->ibdev, b->dma, sge.length,
				      DMA_TO_DEVICE);
	ret = ib_post_send(c->qp, &wr, NULL);
	if (ret)
		return ret;
	c->owed -= owed;
	c->credits--;
	c->tx_posted++;
	return 0;
}

static bool kmsgr_rdma_tx_room(struct kmsgr_rdma_conn *c)
	__must_hold(&c->lock)
{
	return c->tx_posted - c->tx_done < c->nr_tx;
}

/*
 * Return credits in a CREDIT message when enough are owed: half of our
 * buffers.  It may take the last credit, which DATA never does.
 */
static void kmsgr_rdma_send_credits(struct kmsgr_rdma_conn *c)
	__must_hold(&c->lock)
{
	int ret;

	if (c->owed < c->nr_rx / 2 || c->state != KMSGR_RDMA_CONNECTED)
		return;
	if (!c->credits || !kmsgr_rdma_tx_room(c)) {
		c->tx_wait = true;	/* a completion kicks the owner */
		return;
	}
	ret = kmsgr_rdma_post_send(c, KMSGR_RDMA_MSG_CREDIT, 0);
	if (ret && ret != -ENOTCONN)
		kmsgr_rdma_fail(c, ret);
}

/* ---- completions (softirq) ---- */

static int kmsgr_rdma_wc_err(const struct ib_wc *wc)
{
	switch (wc->status) {
	case IB_WC_LOC_LEN_ERR:		/* a SEND larger than our buffer */
	case IB_WC_REM_INV_REQ_ERR:	/* ours larger than the peer's */
		return -EPROTO;
	case IB_WC_RNR_RETRY_EXC_ERR:	/* the peer had no buffer posted */
		return -EPROTO;
	default:
		return -ECONNRESET;
	}
}

static void kmsgr_rdma_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kmsgr_rdma_conn *c = wc->qp->qp_context;
	struct kmsgr_rdma_buf *b = container_of(wc->wr_cqe,
						struct kmsgr_rdma_buf, cqe);
	const struct kmsgr_rdma_hdr *h = b->data;
	u32 granted;

	spin_lock_bh(&c->lock);
	if (wc->status != IB_WC_SUCCESS) {
		if (wc->status != IB_WC_WR_FLUSH_ERR) {
			pr_warn_ratelimited("connection %pISpc: receive failed: %s\n",
					    &c->peer,
					    ib_wc_status_msg(wc->status));
			kmsgr_rdma_fail(c, kmsgr_rdma_wc_err(wc));
		}
		goto out;
	}
	ib_dma_sync_single_for_cpu(cq->device, b->dma, wc->byte_len,
				   DMA_FROM_DEVICE);
	if (wc->byte_len < KMSGR_RDMA_HDR || h->flags) {
		pr_warn_ratelimited("connection %pISpc: malformed message (%u bytes)\n",
				    &c->peer, wc->byte_len);
		kmsgr_rdma_fail(c, -EPROTO);
		goto out;
	}
	granted = be16_to_cpu(h->credits);
	if (granted > c->peer_credits - c->credits) {
		pr_warn_ratelimited("connection %pISpc: credit overrun (%u granted, %u outstanding)\n",
				    &c->peer, granted,
				    c->peer_credits - c->credits);
		kmsgr_rdma_fail(c, -EPROTO);
		goto out;
	}
	c->credits += granted;
	b->len = wc->byte_len;
	switch (h->type) {
	case KMSGR_RDMA_MSG_DATA:
		if (b->len > KMSGR_RDMA_HDR) {
			c->ready[c->ready_tail++ % c->nr_rx] = b - c->rx;
			kmsgr_rdma_kick(c, KMSGR_XPRT_KICK_RX);
			break;
		}
		fallthrough;
	case KMSGR_RDMA_MSG_CREDIT:
		if (!kmsgr_rdma_post_recv(c, b))
			c->owed++;
		if (c->owed >= c->nr_rx / 2)	/* the owner returns them */
			kmsgr_rdma_kick(c, KMSGR_XPRT_KICK_RX);
		break;
	default:
		pr_warn_ratelimited("connection %pISpc: unknown message type %u\n",
				    &c->peer, h->type);
		kmsgr_rdma_fail(c, -EPROTO);
		goto out;
	}
	if (granted && c->tx_wait) {
		c->tx_wait = false;
		kmsgr_rdma_kick(c, KMSGR_XPRT_KICK_TX | KMSGR_XPRT_KICK_RX);
	}
out:
	spin_unlock_bh(&c->lock);
}

static void kmsgr_rdma_send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kmsgr_rdma_conn *c = wc->qp->qp_context;

	spin_lock_bh(&c->lock);
	c->tx_done++;
	if (wc->status != IB_WC_SUCCESS) {
		if (wc->status != IB_WC_WR_FLUSH_ERR) {
			pr_warn_ratelimited("connection %pISpc: send failed: %s\n",
					    &c->peer,
					    ib_wc_status_msg(wc->status));
			kmsgr_rdma_fail(c, kmsgr_rdma_wc_err(wc));
		}
	} else if (c->tx_wait) {
		c->tx_wait = false;
		kmsgr_rdma_kick(c, KMSGR_XPRT_KICK_TX | KMSGR_XPRT_KICK_RX);
	}
	spin_unlock_bh(&c->lock);
}

/* ---- connections: set-up and teardown ---- */

static struct kmsgr_rdma_conn *kmsgr_rdma_conn_alloc(void)
{
	struct kmsgr_rdma_conn *c;

	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return NULL;
	c->x.ops = &kmsgr_rdma_ops;
	c->x.caps = KMSGR_XPRT_CAP_STREAM;
	kref_init(&c->ref);
	mutex_init(&c->mutex);
	spin_lock_init(&c->lock);
	INIT_LIST_HEAD(&c->dev_node);
	INIT_LIST_HEAD(&c->lsn_node);
	c->state = KMSGR_RDMA_CONNECTING;
	c->nr_rx = clamp_t(u32, READ_ONCE(credits), KMSGR_RDMA_CREDITS_MIN,
			   KMSGR_RDMA_CREDITS_MAX);
	c->nr_tx = c->nr_rx;
	c->rx_size = clamp_t(u32, READ_ONCE(buf_size), KMSGR_RDMA_BUF_MIN,
			     KMSGR_RDMA_BUF_MAX);
	c->tx_size = c->rx_size;
	return c;
}

static void kmsgr_rdma_conn_release(struct kref *ref)
{
	struct kmsgr_rdma_conn *c = container_of(ref, struct kmsgr_rdma_conn,
						 ref);

	kmsgr_rdma_bufs_free(c->rx, c->nr_rx);
	kmsgr_rdma_bufs_free(c->tx, c->nr_tx);
	kfree(c->ready);
	mutex_destroy(&c->mutex);
	kfree(c);
}

static void kmsgr_rdma_conn_put(struct kmsgr_rdma_conn *c)
{
	kref_put(&c->ref, kmsgr_rdma_conn_release);
}

static void kmsgr_rdma_qp_event(struct ib_event *ev, void *ctx)
{
	struct kmsgr_rdma_conn *c = ctx;

	pr_debug("connection %pISpc: QP event %s\n", &c->peer,
		 ib_event_msg(ev->event));
}

/*
 * The buffers, the CQ and the QP of @c on @id's device; posts the
 * receives.  On failure kmsgr_rdma_conn_unsetup() frees what was made.
 */
static int kmsgr_rdma_conn_setup(struct kmsgr_rdma_conn *c,
				 struct rdma_cm_id *id)
{
	struct ib_device *ibdev = id->device;
	struct ib_qp_init_attr attr = { };
	u32 i;
	int ret;

	c->rx = kmsgr_rdma_bufs_alloc(c->nr_rx, c->rx_size);
	c->tx = kmsgr_rdma_bufs_alloc(c->nr_tx, c->tx_size);
	c->ready = kcalloc(c->nr_rx, sizeof(*c->ready), GFP_KERNEL);
	if (!c->rx || !c->tx || !c->ready)
		return -ENOMEM;
	ret = kmsgr_rdma_bufs_map(ibdev, c->rx, c->nr_rx, c->rx_size,
				  DMA_FROM_DEVICE, kmsgr_rdma_recv_done);
	if (ret)
		return ret;
	ret = kmsgr_rdma_bufs_map(ibdev, c->tx, c->nr_tx, c->tx_size,
				  DMA_TO_DEVICE, kmsgr_rdma_send_done);
	if (ret) {
		kmsgr_rdma_bufs_unmap(ibdev, c->rx, c->nr_rx, c->rx_size,
				      DMA_FROM_DEVICE);
		return ret;
	}
	c->ibdev = ibdev;
	c->mapped = true;

	c->cq_size = c->nr_rx + c->nr_tx + 2;	/* + the drain markers */
	c->cq = ib_cq_pool_get(ibdev, c->cq_size, -1, IB_POLL_SOFTIRQ);
	if (IS_ERR(c->cq)) {
		ret = PTR_ERR(c->cq);
		c->cq = NULL;
		return ret;
	}

	attr.event_handler = kmsgr_rdma_qp_event;
	attr.qp_context = c;
	attr.send_cq = c->cq;
	attr.recv_cq = c->cq;
	attr.cap.max_send_wr = c->nr_tx + 1;
	attr.cap.max_recv_wr = c->nr_rx + 1;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	attr.sq_sig_type = IB_SIGNAL_REQ_WR;
	attr.qp_type = IB_QPT_RC;
	ret = rdma_create_qp(id, c->dev->pd, &attr);
	if (ret)
		return ret;
	c->qp = id->qp;

	spin_lock_bh(&c->lock);
	for (i = 0; i < c->nr_rx; i++) {
		ret = kmsgr_rdma_post_recv(c, &c->rx[i]);
		if (ret)
			break;
	}
	spin_unlock_bh(&c->lock);
	return ret;
}

/*
 * Free the verbs objects of @c: after its cm_id was destroyed (@id NULL),
 * or from inside the handler of @id, which the CM destroys after.
 */
static void kmsgr_rdma_conn_unsetup(struct kmsgr_rdma_conn *c,
				    struct rdma_cm_id *id)
{
	if (c->qp) {
		ib_drain_qp(c->qp);	/* every completion has run */
		if (id)
			rdma_destroy_qp(id);
		else
			ib_destroy_qp(c->qp);
		c->qp = NULL;
	}
	if (c->mapped) {
		kmsgr_rdma_bufs_unmap(c->ibdev, c->rx, c->nr_rx, c->rx_size,
				      DMA_FROM_DEVICE);
		kmsgr_rdma_bufs_unmap(c->ibdev, c->tx, c->nr_tx, c->tx_size,
				      DMA_TO_DEVICE);
		c->mapped = false;
	}
	if (c->cq) {
		ib_cq_pool_put(c->cq, c->cq_size);
		c->cq = NULL;
	}
	kmsgr_rdma_dev_detach(c);
}

/*
 * Tear down the verbs objects of @c once (close() and device removal):
 * stop posting, disconnect, destroy the cm_id (no CM handler runs after
 * that), drain and destroy the QP.  @err is what the owner sees from now
 * on, unless an error came first.
 */
static void kmsgr_rdma_detach(struct kmsgr_rdma_conn *c, int err)
{
	mutex_lock(&c->mutex);
	if (c->torn)
		goto out;
	spin_lock_bh(&c->lock);
	c->detached = true;
	kmsgr_rdma_fail(c, err);
	spin_unlock_bh(&c->lock);
	if (c->id) {
		rdma_disconnect(c->id);
		rdma_destroy_id(c->id);
		c->id = NULL;
	}
	kmsgr_rdma_conn_unsetup(c, NULL);
	c->torn = true;
out:
	mutex_unlock(&c->mutex);
}

static void kmsgr_rdma_conn_param(struct kmsgr_rdma_conn *c,
				  struct kmsgr_rdma_cm_priv *priv,
				  struct rdma_conn_param *p)
{
	priv->magic = cpu_to_be32(KMSGR_RDMA_MAGIC);
	priv->version = KMSGR_RDMA_VERSION;
	priv->flags = 0;
	priv->credits = cpu_to_be16(c->nr_rx);
	priv->buf_size = cpu_to_be32(c->rx_size);
	priv->reserved = 0;
	memset(p, 0, sizeof(*p));
	p->private_data = priv;
	p->private_data_len = sizeof(*priv);
	p->retry_count = 7;
	p->rnr_retry_count = min(READ_ONCE(rnr_retry), 7U);
}

/* Check the peer's private data; 0 or a KMSGR_RDMA_REJ_* reason. */
static int kmsgr_rdma_peer_param(struct kmsgr_rdma_conn *c,
				 const void *data, u8 len)
{
	const struct kmsgr_rdma_cm_priv *p = data;
	u32 n, size;

	if (!p || len < sizeof(*p) ||
	    be32_to_cpu(p->magic) != KMSGR_RDMA_MAGIC)
		return KMSGR_RDMA_REJ_PARAMS;
	if (p->version != KMSGR_RDMA_VERSION)
		return KMSGR_RDMA_REJ_VERSION;
	n = be16_to_cpu(p->credits);
	size = be32_to_cpu(p->buf_size);
	if (p->flags || p->reserved || n < 2 || size <= KMSGR_RDMA_HDR)
		return KMSGR_RDMA_REJ_PARAMS;
	c->peer_credits = n;
	c->credits = n;
	c->peer_size = size;
	return 0;
}

static void kmsgr_rdma_save_addrs(struct kmsgr_rdma_conn *c,
				  struct rdma_cm_id *id)
{
	memcpy(&c->local, &id->route.addr.src_addr, sizeof(c->local));
	memcpy(&c->peer, &id->route.addr.dst_addr, sizeof(c->peer));
}

/* ---- CM events of connections (process context, handler mutex) ---- */

static int kmsgr_rdma_cm_err(const struct rdma_cm_event *ev)
{
	switch (ev->event) {
	case RDMA_CM_EVENT_REJECTED:
		return -ECONNREFUSED;
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
		return ev->status < 0 ? ev->status : -EHOSTUNREACH;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		return -ENODEV;
	default:
		return -ECONNRESET;
	}
}

/* Client side: route resolved, set up and send the connect request. */
static int kmsgr_rdma_client_connect(struct kmsgr_rdma_conn *c,
				     struct rdma_cm_id *id)
{
	struct kmsgr_rdma_cm_priv priv;
	struct rdma_conn_param p;
	int ret;

	ret = kmsgr_rdma_conn_setup(c, id);
	if (ret)
		return ret;
	kmsgr_rdma_conn_param(c, &priv, &p);
	p.responder_resources = 0;
	p.initiator_depth = 0;
	return rdma_connect_locked(id, &p);
}

static void kmsgr_rdma_rejected(struct kmsgr_rdma_conn *c,
				struct rdma_cm_id *id,
				struct rdma_cm_event *ev)
{
	const struct kmsgr_rdma_cm_rej *rej;
	u8 len = 0;

	rej = rdma_consumer_reject_data(id, ev, &len);
	if (rej && len >= sizeof(*rej) &&
	    be32_to_cpu(rej->magic) == KMSGR_RDMA_MAGIC)
		pr_info_ratelimited("connection %pISpc: refused by the peer (reason %u, its version %u)\n",
				    &id->route.addr.dst_addr, rej->reason,
				    rej->version);
	else
		pr_debug("connection %pISpc: rejected: %s\n",
			 &id->route.addr.dst_addr,
			 rdma_reject_msg(id, ev->status));
}

static int kmsgr_rdma_conn_event(struct kmsgr_rdma_conn *c,
				 struct rdma_cm_id *id,
				 struct rdma_cm_event *ev)
{
	int ret = 0;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		ret = kmsgr_rdma_dev_attach(c, id->device, true);
		if (!ret)
			ret = rdma_resolve_route(id, KMSGR_RDMA_TIMEOUT_MS);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		ret = kmsgr_rdma_client_connect(c, id);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		spin_lock_bh(&c->lock);
		if (!c->server && c->state == KMSGR_RDMA_CONNECTING) {
			/* client: the accept's private data */
			if (kmsgr_rdma_peer_param(c, ev->param.conn.private_data,
						  ev->param.conn.private_data_len)) {
				kmsgr_rdma_fail(c, -EPROTO);
				spin_unlock_bh(&c->lock);
				break;
			}
			kmsgr_rdma_save_addrs(c, id);
		}
		c->state = KMSGR_RDMA_CONNECTED;
		kmsgr_rdma_kick(c, KMSGR_XPRT_KICK_STATE | KMSGR_XPRT_KICK_RX |
				   KMSGR_XPRT_KICK_TX);
		spin_unlock_bh(&c->lock);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		spin_lock_bh(&c->lock);
		if (c->state == KMSGR_RDMA_CONNECTED)
			c->state = KMSGR_RDMA_EOF;	/* rx then says 0 */
		else if (!c->err)
			c->err = -ECONNRESET;
		kmsgr_rdma_kick(c, KMSGR_XPRT_KICK_STATE | KMSGR_XPRT_KICK_RX);
		spin_unlock_bh(&c->lock);
		break;
	case RDMA_CM_EVENT_REJECTED:
		kmsgr_rdma_rejected(c, id, ev);
		fallthrough;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
	case RDMA_CM_EVENT_ADDR_CHANGE:
		ret = kmsgr_rdma_cm_err(ev);
		break;
	default:
		break;
	}
	if (ret) {
		spin_lock_bh(&c->lock);
		kmsgr_rdma_fail(c, ret);
		spin_unlock_bh(&c->lock);
	}
	return 0;	/* the owner destroys the id (close()) */
}

/* ---- listeners: connect requests ---- */

static void kmsgr_rdma_reject(struct rdma_cm_id *id, u8 reason)
{
	struct kmsgr_rdma_cm_rej rej = {
		.magic = cpu_to_be32(KMSGR_RDMA_MAGIC),
		.version = KMSGR_RDMA_VERSION,
		.reason = reason,
	};

	rdma_reject(id, &rej, sizeof(rej), IB_CM_REJ_CONSUMER_DEFINED);
}

/*
 * A connect request on @id, a new cm_id of @l's: set up, accept at the CM
 * level and queue for accept().  Non-zero: rejected, the CM destroys @id.
 */
static int kmsgr_rdma_lsn_request(struct kmsgr_rdma_lsn *l,
				  struct rdma_cm_id *id,
				  struct rdma_cm_event *ev)
{
	struct kmsgr_rdma_cm_priv priv;
	struct kmsgr_rdma_conn *c;
	struct rdma_conn_param p;
	u8 reason;
	int ret;

	spin_lock_bh(&l->lock);
	ret = l->closing || l->nr_pending >= KMSGR_RDMA_BACKLOG;
	spin_unlock_bh(&l->lock);
	if (ret) {
		kmsgr_rdma_reject(id, KMSGR_RDMA_REJ_BUSY);
		return -ECONNREFUSED;
	}
	c = kmsgr_rdma_conn_alloc();
	if (!c) {
		kmsgr_rdma_reject(id, KMSGR_RDMA_REJ_NOMEM);
		return -ENOMEM;
	}
	reason = kmsgr_rdma_peer_param(c, ev->param.conn.private_data,
				       ev->param.conn.private_data_len);
	if (reason) {
		pr_info_ratelimited("listener %pISpc: connect request from %pISpc refused: bad private data (reason %u)\n",
				    &l->local, &id->route.addr.dst_addr,
				    reason);
		ret = -EPROTO;
		goto out_reject;
	}
	kmsgr_rdma_save_addrs(c, id);
	reason = KMSGR_RDMA_REJ_NOMEM;
	ret = kmsgr_rdma_dev_attach(c, id->device, false);
	if (ret)
		goto out_reject;
	c->server = true;
	id->context = &c->x;
	ret = kmsgr_rdma_conn_setup(c, id);
	if (ret)
		goto out_unsetup;
	kmsgr_rdma_conn_param(c, &priv, &p);
	ret = rdma_accept(id, &p);
	if (ret)
		goto out_unsetup;

	/* ours from here: the listener reaps it if it fails */
	c->id = id;
	c->kick = l->kick;
	c->priv = l->priv;
	if (kmsgr_rdma_dev_list(c)) {
		spin_lock_bh(&c->lock);
		c->err = -ENODEV;
		spin_unlock_bh(&c->lock);
	}
	spin_lock_bh(&l->lock);
	c->lsn = l;
	list_add_tail(&c->lsn_node, &l->pending);
	l->nr_pending++;
	spin_unlock_bh(&l->lock);
	return 0;

out_unsetup:
	id->context = &l->x;
	spin_lock_bh(&c->lock);
	c->detached = true;
	spin_unlock_bh(&c->lock);
	kmsgr_rdma_conn_unsetup(c, id);	/* the CM destroys @id */
out_reject:
	kmsgr_rdma_reject(id, reason);
	kmsgr_rdma_conn_put(c);
	return ret ? ret : -ECONNREFUSED;
}

static int kmsgr_rdma_cm_handler(struct rdma_cm_id *id,
				 struct rdma_cm_event *ev)
{
	struct kmsgr_xprt *x = id->context;

	if (x->ops == &kmsgr_rdma_lsn_ops) {
		/* device removal of a bound listener is handled by our
		 * ib_client, before the CM's
		 */
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
			return kmsgr_rdma_lsn_request(to_lsn(x), id, ev);
		return 0;
	}
	return kmsgr_rdma_conn_event(to_conn(x), id, ev);
}

/* ---- connection operations ---- */

static void kmsgr_rdma_start(struct kmsgr_xprt *x, kmsgr_xprt_kick_t kick,
			     void *priv)
{
	struct kmsgr_rdma_conn *c = to_conn(x);

	spin_lock_bh(&c->lock);
	c->kick = kick;
	c->priv = priv;
	spin_unlock_bh(&c->lock);
	/* bytes may have arrived before: look once */
	kick(priv, KMSGR_XPRT_KICK_RX | KMSGR_XPRT_KICK_TX);
}

static int kmsgr_rdma_state(struct kmsgr_xprt *x)
{
	struct kmsgr_rdma_conn *c = to_conn(x);
	int ret;

	spin_lock_bh(&c->lock);
	if (c->err)
		ret = c->err;
	else if (c->state == KMSGR_RDMA_CONNECTING)
		ret = -EINPROGRESS;
	else
		ret = 0;
	spin_unlock_bh(&c->lock);
	return ret;
}

/*
 * Copy received payload into @iov.  Only the owner consumes, so the head
 * buffer's bytes are read outside the lock; completions only append.
 */
static ssize_t kmsgr_rdma_recv(struct kmsgr_xprt *x,
			       const struct msgr2_iov *iov, int n)
{
	struct kmsgr_rdma_conn *c = to_conn(x);
	size_t done = 0, off = 0, k, avail;
	struct kmsgr_rdma_buf *b;
	ssize_t ret;
	int i = 0;

	if (n <= 0 || n > 2)
		return -EINVAL;
	spin_lock_bh(&c->lock);
	while (i < n) {
		if (c->err || c->ready_head == c->ready_tail)
			break;
		b = &c->rx[c->ready[c->ready_head % c->nr_rx]];
		spin_unlock_bh(&c->lock);

		avail = b->len - KMSGR_RDMA_HDR - c->rx_off;
		k = min(avail, iov[i].len - off);
		memcpy((u8 *)iov[i].base + off,
		       (u8 *)b->data + KMSGR_RDMA_HDR + c->rx_off, k);
		done += k;
		off += k;
		if (off == iov[i].len) {
			i++;
			off = 0;
		}

		spin_lock_bh(&c->lock);
		c->rx_off += k;
		if (c->rx_off == b->len - KMSGR_RDMA_HDR) {
			c->rx_off = 0;
			c->ready_head++;
			if (!kmsgr_rdma_post_recv(c, b))
				c->owed++;
		}
	}
	if (done)
		ret = done;
	else if (c->err)
		ret = c->err;
	else if (c->state == KMSGR_RDMA_EOF)
		ret = 0;
	else
		ret = -EAGAIN;
	kmsgr_rdma_send_credits(c);
	spin_unlock_bh(&c->lock);
	return ret;
}

/*
 * Copy @iov into DATA messages, as many as the peer has credits for
 * (keeping the last one for a CREDIT message) and send slots allow.
 */
static ssize_t kmsgr_rdma_send(struct kmsgr_xprt *x,
			       const struct msgr2_iov *iov, int n,
			       const struct kmsgr_xprt_zc *zc)
{
	struct kmsgr_rdma_conn *c = to_conn(x);
	size_t done = 0, off = 0, room, k;
	struct kmsgr_rdma_buf *b;
	int i = 0, ret = 0;
	u32 len;

	if (n <= 0 || n > KMSGR_XPRT_MAX_IOV)
		return -EINVAL;
	while (i < n && !iov[i].len)
		i++;
	spin_lock_bh(&c->lock);
	while (i < n) {
		if (c->err) {
			ret = c->err;
			break;
		}
		if (c->state != KMSGR_RDMA_CONNECTED) {
			ret = c->state == KMSGR_RDMA_EOF ? -EPIPE : -ENOTCONN;
			break;
		}
		if (c->credits < 2 || !kmsgr_rdma_tx_room(c)) {
			c->tx_wait = true;
			ret = -EAGAIN;
			break;
		}
		b = &c->tx[c->tx_posted % c->nr_tx];
		room = min(c->tx_size, c->peer_size) - KMSGR_RDMA_HDR;
		spin_unlock_bh(&c->lock);

		/* the slot is free and only the owner fills slots */
		len = 0;
		while (i < n && len < room) {
			k = min(iov[i].len - off, room - len);
			memcpy((u8 *)b->data + KMSGR_RDMA_HDR + len,
			       (const u8 *)iov[i].base + off, k);
			len += k;
			off += k;
			if (off == iov[i].len) {
				i++;
				off = 0;
			}
		}

		spin_lock_bh(&c->lock);
		ret = kmsgr_rdma_post_send(c, KMSGR_RDMA_MSG_DATA, len);
		if (ret) {
			kmsgr_rdma_fail(c, ret);
			break;
		}
		done += len;
	}
	spin_unlock_bh(&c->lock);
	if (done)
		return done;
	return ret;
}

static int kmsgr_rdma_getname(struct kmsgr_xprt *x,
			      struct sockaddr_storage *ss, bool peer)
{
	struct kmsgr_rdma_conn *c = to_conn(x);

	memcpy(ss, peer ? &c->peer : &c->local, sizeof(*ss));
	return ss->ss_family ? 0 : -ENOTCONN;
}

static void kmsgr_rdma_close(struct kmsgr_xprt *x)
{
	struct kmsgr_rdma_conn *c = to_conn(x);

	spin_lock_bh(&c->lock);
	c->kick = NULL;			/* no kick after this */
	spin_unlock_bh(&c->lock);
	kmsgr_rdma_detach(c, -ENOTCONN);
	kmsgr_rdma_conn_put(c);
}

static const struct kmsgr_xprt_ops kmsgr_rdma_ops = {
	.start		= kmsgr_rdma_start,
	.state		= kmsgr_rdma_state,
	.recv		= kmsgr_rdma_recv,
	.send		= kmsgr_rdma_send,
	.getname	= kmsgr_rdma_getname,
	.close		= kmsgr_rdma_close,
};

static int kmsgr_rdma_sa_check(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET || ss->ss_family == AF_INET6 ?
	       0 : -EAFNOSUPPORT;
}

static int kmsgr_rdma_connect(struct net *net,
			      const struct sockaddr_storage *ss,
			      kmsgr_xprt_kick_t kick, void *priv,
			      struct kmsgr_xprt **out)
{
	struct kmsgr_rdma_conn *c;
	struct rdma_cm_id *id;
	int ret;

	ret = kmsgr_rdma_sa_check(ss);
	if (ret)
		return ret;
	c = kmsgr_rdma_conn_alloc();
	if (!c)
		return -ENOMEM;
	c->kick = kick;
	c->priv = priv;
	memcpy(&c->peer, ss, sizeof(c->peer));
	id = rdma_create_id(net, kmsgr_rdma_cm_handler, &c->x, RDMA_PS_TCP,
			    IB_QPT_RC);
	if (IS_ERR(id)) {
		ret = PTR_ERR(id);
		goto out_put;
	}
	c->id = id;
	ret = rdma_resolve_addr(id, NULL, (struct sockaddr *)ss,
				KMSGR_RDMA_TIMEOUT_MS);
	if (ret)
		goto out_detach;
	*out = &c->x;
	return 0;

out_detach:
	c->kick = NULL;
	kmsgr_rdma_detach(c, ret);
out_put:
	kmsgr_rdma_conn_put(c);
	return ret;
}

/* ---- listener operations ---- */

static void kmsgr_rdma_lsn_release(struct kref *ref)
{
	struct kmsgr_rdma_lsn *l = container_of(ref, struct kmsgr_rdma_lsn,
						ref);

	mutex_destroy(&l->mutex);
	kfree(l);
}

/* Hand out one connection that is up; close the ones that failed. */
static int kmsgr_rdma_accept(struct kmsgr_xprt *lx, struct kmsgr_xprt **out)
{
	struct kmsgr_rdma_lsn *l = to_lsn(lx);
	struct kmsgr_rdma_conn *c, *tmp, *found = NULL;
	LIST_HEAD(failed);
	int ret = -EAGAIN;

	spin_lock_bh(&l->lock);
	list_for_each_entry_safe(c, tmp, &l->pending, lsn_node) {
		spin_lock(&c->lock);
		if (c->err) {
			c->kick = NULL;
			list_move_tail(&c->lsn_node, &failed);
			l->nr_pending--;
		} else if (c->state != KMSGR_RDMA_CONNECTING && !found) {
			c->kick = NULL;		/* until start() */
			c->lsn = NULL;
			list_del_init(&c->lsn_node);
			l->nr_pending--;
			found = c;
		}
		spin_unlock(&c->lock);
	}
	if (!found && l->err && list_empty(&l->pending)) {
		ret = l->err;
		l->err = 0;		/* said once */
	}
	spin_unlock_bh(&l->lock);

	list_for_each_entry_safe(c, tmp, &failed, lsn_node) {
		list_del_init(&c->lsn_node);
		c->lsn = NULL;
		kmsgr_rdma_detach(c, -ECONNRESET);
		kmsgr_rdma_conn_put(c);
	}
	if (!found)
		return ret;
	*out = &found->x;
	return 0;
}

static int kmsgr_rdma_lsn_getname(struct kmsgr_xprt *x,
				  struct sockaddr_storage *ss, bool peer)
{
	if (peer)
		return -ENOTCONN;
	memcpy(ss, &to_lsn(x)->local, sizeof(*ss));
	return 0;
}

/* Destroy @l's cm_id (close, or its device going away). */
static void kmsgr_rdma_lsn_stop(struct kmsgr_rdma_lsn *l, int err)
{
	mutex_lock(&l->mutex);
	if (l->id) {
		rdma_destroy_id(l->id);	/* no request handler after this */
		l->id = NULL;
		spin_lock_bh(&l->lock);
		l->err = err;
		if (l->kick)
			l->kick(l->priv, KMSGR_XPRT_KICK_RX);
		spin_unlock_bh(&l->lock);
	}
	mutex_unlock(&l->mutex);
}

static void kmsgr_rdma_lsn_close(struct kmsgr_xprt *x)
{
	struct kmsgr_rdma_lsn *l = to_lsn(x);
	struct kmsgr_rdma_conn *c, *tmp;
	LIST_HEAD(pending);

	spin_lock_bh(&l->lock);
	l->kick = NULL;
	l->closing = true;
	spin_unlock_bh(&l->lock);
	mutex_lock(&kmsgr_rdma_lock);
	list_del_init(&l->node);
	mutex_unlock(&kmsgr_rdma_lock);
	kmsgr_rdma_lsn_stop(l, 0);

	/* no request handler runs now: the pending ones are ours */
	spin_lock_bh(&l->lock);
	list_splice_init(&l->pending, &pending);
	l->nr_pending = 0;
	spin_unlock_bh(&l->lock);
	list_for_each_entry_safe(c, tmp, &pending, lsn_node) {
		spin_lock_bh(&c->lock);
		c->kick = NULL;
		c->lsn = NULL;
		spin_unlock_bh(&c->lock);
		list_del_init(&c->lsn_node);
		kmsgr_rdma_detach(c, -ECONNRESET);
		kmsgr_rdma_conn_put(c);
	}
	kref_put(&l->ref, kmsgr_rdma_lsn_release);
}

static const struct kmsgr_xprt_ops kmsgr_rdma_lsn_ops = {
	.accept		= kmsgr_rdma_accept,
	.getname	= kmsgr_rdma_lsn_getname,
	.close		= kmsgr_rdma_lsn_close,
};

static int kmsgr_rdma_listen(struct net *net,
			     const struct sockaddr_storage *ss,
			     kmsgr_xprt_kick_t kick, void *priv,
			     struct kmsgr_xprt **out)
{
	struct kmsgr_rdma_lsn *l;
	struct rdma_cm_id *id;
	int ret;

	ret = kmsgr_rdma_sa_check(ss);
	if (ret)
		return ret;
	l = kzalloc(sizeof(*l), GFP_KERNEL);
	if (!l)
		return -ENOMEM;
	l->x.ops = &kmsgr_rdma_lsn_ops;
	l->x.caps = KMSGR_XPRT_CAP_STREAM;
	kref_init(&l->ref);
	mutex_init(&l->mutex);
	spin_lock_init(&l->lock);
	INIT_LIST_HEAD(&l->pending);
	INIT_LIST_HEAD(&l->node);
	l->kick = kick;
	l->priv = priv;

	id = rdma_create_id(net, kmsgr_rdma_cm_handler, &l->x, RDMA_PS_TCP,
			    IB_QPT_RC);
	if (IS_ERR(id)) {
		ret = PTR_ERR(id);
		goto out_free;
	}
	l->id = id;
	if (ss->ss_family == AF_INET6) {
		ret = rdma_set_afonly(id, 1);
		if (ret)
			goto out_destroy;
	}
	ret = rdma_bind_addr(id, (struct sockaddr *)ss);
	if (ret)
		goto out_destroy;
	memcpy(&l->local, &id->route.addr.src_addr, sizeof(l->local));
	l->ibdev = id->device;		/* NULL: any address */

	mutex_lock(&kmsgr_rdma_lock);
	list_add_tail(&l->node, &kmsgr_rdma_lsns);
	mutex_unlock(&kmsgr_rdma_lock);
	ret = rdma_listen(id, KMSGR_RDMA_BACKLOG);
	if (ret)
		goto out_unlist;
	*out = &l->x;
	return 0;

out_unlist:
	mutex_lock(&kmsgr_rdma_lock);
	list_del_init(&l->node);
	mutex_unlock(&kmsgr_rdma_lock);
out_destroy:
	kmsgr_rdma_lsn_stop(l, ret);
out_free:
	kref_put(&l->ref, kmsgr_rdma_lsn_release);
	return ret;
}

/* ---- RDMA devices (ib_client) ---- */

static int kmsgr_rdma_add_one(struct ib_device *ibdev)
{
	struct kmsgr_rdma_dev *d;

	d = kzalloc(sizeof(*d), GFP_KERNEL);
	if (!d)
		return -ENOMEM;
	d->pd = ib_alloc_pd(ibdev, 0);
	if (IS_ERR(d->pd)) {
		int ret = PTR_ERR(d->pd);

		kfree(d);
		return ret;
	}
	d->ibdev = ibdev;
	INIT_LIST_HEAD(&d->conns);
	init_waitqueue_head(&d->wq);
	mutex_lock(&kmsgr_rdma_lock);
	list_add_tail(&d->node, &kmsgr_rdma_devs);
	mutex_unlock(&kmsgr_rdma_lock);
	ib_set_client_data(ibdev, &kmsgr_rdma_client, d);
	pr_info("device %s added\n", dev_name(&ibdev->dev));
	return 0;
}

/*
 * A device goes away: every connection on it fails with -ENODEV now (its
 * owner sees it at the next look and closes it), listeners bound to one of
 * its addresses stop; then wait for the connections being set up.  Runs
 * before the CM's own removal (clients go in reverse order of
 * registration), so the CM finds none of our cm_ids left on the device.
 */
static void kmsgr_rdma_remove_one(struct ib_device *ibdev, void *data)
{
	struct kmsgr_rdma_dev *d = data;
	struct kmsgr_rdma_conn *c;
	struct kmsgr_rdma_lsn *l;
	unsigned int n = 0;

	/*
	 * Fail them all before tearing any down: over loopback both ends
	 * are here, and each must say why, not hear the other hang up.
	 */
	mutex_lock(&kmsgr_rdma_lock);
	d->dying = true;
	list_for_each_entry(c, &d->conns, dev_node) {
		spin_lock_bh(&c->lock);
		kmsgr_rdma_fail(c, -ENODEV);
		spin_unlock_bh(&c->lock);
	}
	mutex_unlock(&kmsgr_rdma_lock);

	for (;;) {
		mutex_lock(&kmsgr_rdma_lock);
		c = list_first_entry_or_null(&d->conns, struct kmsgr_rdma_conn,
					     dev_node);
		if (c)
			kref_get(&c->ref);
		mutex_unlock(&kmsgr_rdma_lock);
		if (!c)
			break;
		kmsgr_rdma_detach(c, -ENODEV);	/* unlists it */
		kmsgr_rdma_conn_put(c);
		n++;
	}
	for (;;) {
		mutex_lock(&kmsgr_rdma_lock);
		list_for_each_entry(l, &kmsgr_rdma_lsns, node) {
			if (l->ibdev == ibdev && !l->gone) {
				l->gone = true;
				kref_get(&l->ref);
				goto found;
			}
		}
		mutex_unlock(&kmsgr_rdma_lock);
		break;
found:
		mutex_unlock(&kmsgr_rdma_lock);
		pr_warn("listener %pISpc: device %s removed, no longer accepting\n",
			&l->local, dev_name(&ibdev->dev));
		kmsgr_rdma_lsn_stop(l, -ENODEV);
		kref_put(&l->ref, kmsgr_rdma_lsn_release);
	}

	/* connections set up or reaped right now drop their use soon */
	wait_event(d->wq, !READ_ONCE(d->users));
	mutex_lock(&kmsgr_rdma_lock);
	list_del(&d->node);
	mutex_unlock(&kmsgr_rdma_lock);
	ib_dealloc_pd(d->pd);
	kfree(d);
	pr_info("device %s removed (%u connections failed)\n",
		dev_name(&ibdev->dev), n);
}

static struct ib_client kmsgr_rdma_client = {
	.name	= "kmsgr_rdma",
	.add	= kmsgr_rdma_add_one,
	.remove	= kmsgr_rdma_remove_one,
};

static const struct kmsgr_xprt_type kmsgr_xprt_rdma = {
	.id		= KMSGR_XPRT_RDMA,
	.name		= "rdma",
	.owner		= THIS_MODULE,
	.connect	= kmsgr_rdma_connect,
	.listen		= kmsgr_rdma_listen,
};

static int __init kmsgr_rdma_init(void)
{
	int ret;

	BUILD_BUG_ON(sizeof(struct kmsgr_rdma_cm_priv) != 16);
	BUILD_BUG_ON(sizeof(struct kmsgr_rdma_cm_rej) != 8);
	BUILD_BUG_ON(sizeof(struct kmsgr_rdma_hdr) != 4);

	ret = ib_register_client(&kmsgr_rdma_client);
	if (ret)
		return ret;
	ret = kmsgr_xprt_register(&kmsgr_xprt_rdma);
	if (ret)
		ib_unregister_client(&kmsgr_rdma_client);
	return ret;
}

static void __exit kmsgr_rdma_exit(void)
{
	/* our module reference count is 0: no session or listener is left */
	kmsgr_xprt_unregister(&kmsgr_xprt_rdma);
	ib_unregister_client(&kmsgr_rdma_client);
}

module_init(kmsgr_rdma_init);
module_exit(kmsgr_rdma_exit);

MODULE_DESCRIPTION("kmsgr RDMA transport: Ceph msgr2 sessions over kernel verbs (rdma_cm, RC QPs), credit flow control");
MODULE_AUTHOR("The kmsgr authors");
MODULE_LICENSE("GPL");
MODULE_ALIAS("kmsgr-xprt-2");
MODULE_SOFTDEP("pre: rdma_cm");
