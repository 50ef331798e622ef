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
 *  kmsgr_rdma_dev   one per RDMA device (the ib_client's add): its
 *                   listed connections.  Its remove detaches every
 *                   connection and device-bound listener on it, waits for
 *                   the connections being set up, then frees it.
 *  kmsgr_rdma_conn  a connection: cm_id, a protection domain of its own
 *                   (a key offered to one peer is worth nothing on another
 *                   connection), QP, a CQ from the shared pool, receive
 *                   and send buffers.  Its owner (a session, or
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
 * Memory: the module's counters (pinned_bytes, registered_bytes) and the
 * owner's (struct kmsgr_xprt_acct, the instance's, for netlink) move
 * together, by kmsgr_rdma_charge() under conn->lock; a connection also
 * keeps what it has charged, so that when its owner lets it go
 * (kmsgr_rdma_detach(): close(), a listener's close or accept() reaping
 * it) the rest is taken off the owner's counters at once and the owner's
 * pointer is dropped.  A parked connection's buffers, unmapped later,
 * then count module-wide only.
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
#include <linux/delay.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/log2.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <net/net_namespace.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_cm.h>
#include <rdma/ib_verbs.h>
#include <rdma/mr_pool.h>
#include <rdma/rdma_cm.h>
#include <rdma/rw.h>

#include <linux/kmsgr.h>

#include "kmsgr.h"
#include "trace/kmsgr_rdma_trace.h"
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
#define KMSGR_RDMA_MSG_PULL	3	/* the next bytes of the stream are in
					 * the sender's memory: READ them
					 */
#define KMSGR_RDMA_MSG_DONE	4	/* a PULL's bytes were read */

/* kmsgr_rdma_cm_priv.flags */
#define KMSGR_RDMA_F_PULL	0x01	/* I READ what PULL messages offer */

/* payload of a PULL: @len stream bytes at @addr under @rkey */
struct kmsgr_rdma_pull {
	__be64 addr;
	__be32 rkey;
	__be32 len;
};

/* payload of a DONE: the rkey of the PULL that was read */
struct kmsgr_rdma_done {
	__be32 rkey;
	__be32 reserved;		/* 0 */
};

#define KMSGR_RDMA_HDR		sizeof(struct kmsgr_rdma_hdr)
#define KMSGR_RDMA_TIMEOUT_MS	3000
#define KMSGR_RDMA_LINGER_MS	2000	/* close: wait for SENDs that long */
#define KMSGR_RDMA_BACKLOG	128	/* not yet accepted, per listener */
#define KMSGR_RDMA_CREDITS_MIN	4
#define KMSGR_RDMA_CREDITS_MAX	1024
#define KMSGR_RDMA_BUF_MIN	1024
#define KMSGR_RDMA_BUF_MAX	SZ_1M
#define KMSGR_RDMA_PULL_MAX	SZ_16M	/* bytes one PULL may stand for */
#define KMSGR_RDMA_MR_PAGES	256	/* pages one registration covers */
#define KMSGR_RDMA_READ_MAX	SZ_1M	/* largest read_size */
#define KMSGR_RDMA_READ_SGE	16	/* pages per READ work request */
#define KMSGR_RDMA_DONES	16	/* DONEs waiting for a credit */
/*
 * The address a PULL offers: this base plus the first byte's offset in its
 * page, never the DMA address (a kernel address on software devices).
 */
#define KMSGR_RDMA_IOVA		BIT_ULL(32)

/* ---- parameters ---- */

static unsigned int credits = 16;
module_param(credits, uint, 0644);
MODULE_PARM_DESC(credits,
		 "Receive buffers per connection, the credits granted to the peer (4-1024, rounded down to a power of two; default 16)");

static unsigned int buf_size = 16384;
module_param(buf_size, uint, 0644);
MODULE_PARM_DESC(buf_size,
		 "Bytes per receive and send buffer, header included (1024-1048576, default 16384)");

static unsigned int rnr_retry;
module_param(rnr_retry, uint, 0644);
MODULE_PARM_DESC(rnr_retry,
		 "RNR retry count asked of rdma_cm (0-7, default 0: credits make RNR impossible, so one is an error)");

static unsigned int pull_min = 32768;
module_param(pull_min, uint, 0644);
MODULE_PARM_DESC(pull_min,
		 "Smallest payload piece the peer pulls with RDMA READ, bytes: in place for lossless sessions (at least kmsgr.tx_zerocopy_min, and never when that is 0), else from a staging copy (see stages); 0: no RDMA READ either way; default 32768)");

static unsigned int read_size = SZ_64K;
module_param(read_size, uint, 0644);
MODULE_PARM_DESC(read_size,
		 "Largest RDMA READ, bytes (a page to 1048576, default 65536): a READ's response comes as one burst of packets, and a link that drops one makes the whole rest go again");

static unsigned int read_timeout = 5000;
module_param(read_timeout, uint, 0644);
MODULE_PARM_DESC(read_timeout,
		 "An RDMA READ not completed after this many ms ends its connection (0: never; default 5000): the device lost it");

static unsigned int pulls = 8;
module_param(pulls, uint, 0644);
MODULE_PARM_DESC(pulls,
		 "Memory registrations per connection, the PULLs it may have outstanding (0-16, default 8; 0: no RDMA READ either way)");

static unsigned int stages = 4;
module_param(stages, uint, 0644);
MODULE_PARM_DESC(stages,
		 "Registrations per connection (of pulls) that may offer a copy of a payload piece the session cannot leave in place until the peer's ack (secure mode, lossy sessions), each with a staging buffer of one registration (1 MiB) allocated on first use and kept while the connection lives (0-16, default 4; 0: such pieces travel in SENDs)");

#ifdef KMSGR_FAULT
/* test builds (KMSGR_FAULT=y) only: play a peer that breaks the wire */
static bool fault_no_done;
module_param(fault_no_done, bool, 0644);
MODULE_PARM_DESC(fault_no_done,
		 "Test builds only: never send DONE for a PULL read (a broken peer; its msgr2 acks still go)");

static bool kmsgr_rdma_fault_no_done(void)
{
	return READ_ONCE(fault_no_done);
}

static unsigned int fault_bind_ms;
module_param(fault_bind_ms, uint, 0644);
MODULE_PARM_DESC(fault_bind_ms,
		 "Test builds only: a LISTEN sleeps this many ms (at most 5000) once bound to a device, before its listener is listed: a device removal meets it there");

static unsigned int fault_listen_ms;
module_param(fault_listen_ms, uint, 0644);
MODULE_PARM_DESC(fault_listen_ms,
		 "Test builds only: a LISTEN sleeps this many ms (at most 5000) once its listener is listed, before it listens: a device removal meets it there");

/* sleep *@ms_param milliseconds, at most 5 s */
static void kmsgr_rdma_fault_sleep(const unsigned int *ms_param)
{
	unsigned int ms = min(READ_ONCE(*ms_param), 5000U);

	if (ms)
		msleep(ms);
}

static unsigned int fault_est_ms;
module_param(fault_est_ms, uint, 0644);
MODULE_PARM_DESC(fault_est_ms,
		 "Test builds only: a listener's connection sleeps this many ms (at most 5000) on RDMA_CM_EVENT_ESTABLISHED before it counts as connected: what the peer sends first meets it still connecting");

static unsigned int fault_port_err_ms;
module_param(fault_port_err_ms, uint, 0644);
MODULE_PARM_DESC(fault_port_err_ms,
		 "Test builds only: an IB_EVENT_PORT_ERR waits this many ms (at most 5000) before kmsgr_rdma takes note of it, as a busy ib_wq makes it (a later IB_EVENT_PORT_ACTIVE may overtake it)");

#define kmsgr_rdma_fault_bind()		kmsgr_rdma_fault_sleep(&fault_bind_ms)
#define kmsgr_rdma_fault_listen()	kmsgr_rdma_fault_sleep(&fault_listen_ms)
#define kmsgr_rdma_fault_est()		kmsgr_rdma_fault_sleep(&fault_est_ms)
#define kmsgr_rdma_fault_port_err()	kmsgr_rdma_fault_sleep(&fault_port_err_ms)

static bool fault_comm_est;
module_param(fault_comm_est, bool, 0644);
MODULE_PARM_DESC(fault_comm_est,
		 "Test builds only: a listener's QP reports IB_EVENT_COMM_EST right after the accept, before the RTU can come (as a device does when a packet overtakes the RTU; rxe never reports it)");

static bool kmsgr_rdma_fault_comm_est(void)
{
	return READ_ONCE(fault_comm_est);
}
#else
static bool kmsgr_rdma_fault_no_done(void)
{
	return false;
}

static bool kmsgr_rdma_fault_comm_est(void)
{
	return false;
}

static void kmsgr_rdma_fault_bind(void)
{
}

static void kmsgr_rdma_fault_listen(void)
{
}

static void kmsgr_rdma_fault_est(void)
{
}

static void kmsgr_rdma_fault_port_err(void)
{
}
#endif

/* counters, read only through parameters of the same name */
static atomic64_t kmsgr_rdma_pinned = ATOMIC64_INIT(0);
static atomic64_t kmsgr_rdma_stat_offered = ATOMIC64_INIT(0);
static atomic64_t kmsgr_rdma_stat_pulled = ATOMIC64_INIT(0);
static atomic64_t kmsgr_rdma_registered = ATOMIC64_INIT(0);
static atomic64_t kmsgr_rdma_staged = ATOMIC64_INIT(0);
static atomic64_t kmsgr_rdma_stat_read_timeouts = ATOMIC64_INIT(0);

static int kmsgr_rdma_counter_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%lld\n", atomic64_read(kp->arg));
}

/*
 * A value given at load (modprobe, the kernel command line) is refused: the
 * kernel calls ->set whatever the mode, and has none to call otherwise.
 */
static int kmsgr_rdma_counter_set(const char *val,
				  const struct kernel_param *kp)
{
	return -EPERM;
}

static const struct kernel_param_ops kmsgr_rdma_counter_ops = {
	.set = kmsgr_rdma_counter_set,
	.get = kmsgr_rdma_counter_get,
};

module_param_cb(pinned_bytes, &kmsgr_rdma_counter_ops, &kmsgr_rdma_pinned,
		0444);
MODULE_PARM_DESC(pinned_bytes,
		 "Bytes of DMA-mapped connection buffers now (read only)");
module_param_cb(registered_bytes, &kmsgr_rdma_counter_ops,
		&kmsgr_rdma_registered, 0444);
MODULE_PARM_DESC(registered_bytes,
		 "Bytes registered for peers to READ now: offered, not yet invalidated (read only)");
module_param_cb(offered_bytes, &kmsgr_rdma_counter_ops, &kmsgr_rdma_stat_offered,
		0444);
MODULE_PARM_DESC(offered_bytes,
		 "Payload bytes offered to peers in PULLs since load (read only)");
module_param_cb(pulled_bytes, &kmsgr_rdma_counter_ops, &kmsgr_rdma_stat_pulled,
		0444);
MODULE_PARM_DESC(pulled_bytes,
		 "Payload bytes read from peers with RDMA READ since load (read only)");
module_param_cb(staged_bytes, &kmsgr_rdma_counter_ops, &kmsgr_rdma_staged,
		0444);
MODULE_PARM_DESC(staged_bytes,
		 "Bytes of staging buffers now allocated for PULLs of copies (read only)");
module_param_cb(read_timeouts, &kmsgr_rdma_counter_ops,
		&kmsgr_rdma_stat_read_timeouts, 0444);
MODULE_PARM_DESC(read_timeouts,
		 "RDMA READs that did not complete within read_timeout, each ending its connection, since load (read only)");

/* ---- objects ---- */

struct kmsgr_rdma_dev {
	struct list_head node;		/* on kmsgr_rdma_devs */
	struct ib_device *ibdev;
	struct list_head conns;		/* kmsgr_rdma_conn.dev_node */
	struct list_head parked;	/* closed while their port was down */
	unsigned int users;		/* connections with verbs objects on it */
	bool dying;
	wait_queue_head_t wq;		/* users reached 0 */
	unsigned long ports_down;	/* bit N: port N is down (atomic) */
	struct ib_event_handler eh;	/* port events */
	struct work_struct unpark;	/* a port came up: tear the parked down */
};

struct kmsgr_rdma_buf {
	struct ib_cqe cqe;
	void *data;
	u64 dma;
	u32 len;			/* receive: bytes that arrived */
};

/* one registration of payload memory, offered to the peer by a PULL */
struct kmsgr_rdma_mr {
	struct ib_mr *mr;
	struct sg_table sgt;
	int nents;			/* mapped entries of @sgt */
	struct ib_cqe reg_cqe, inv_cqe;
	void *stage;			/* staging buffer (mrs[i < nr_stages]) */
	u64 end;			/* stream bytes up to its piece's end */
	bool busy;			/* being offered; until invalidated */
	bool staged;			/* while @busy: offers a staged copy */
	bool offered;			/* its PULL was posted */
	u32 len;			/* bytes it covers, once offered */
	bool inv;			/* LOCAL_INV posted */
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
	u64 tx_stream;			/* bytes send() took (owner) */
	bool parked;			/* teardown waits for the port (mutex) */
	struct rdma_cm_id *id;		/* ours to destroy, or NULL */
	/*
	 * The cm_id the QP's event handler tells of IB_EVENT_COMM_EST: set
	 * once the QP exists, cleared before the cm_id or the QP goes.  The
	 * handler may run in any context, so its own lock, irqs off.
	 */
	spinlock_t est_lock;
	struct rdma_cm_id *est_id;
	struct kmsgr_rdma_dev *dev;	/* counted in dev->users */
	struct list_head dev_node;	/* on dev->conns while listed */
	u64 net_cookie;			/* its namespace's (set before listed) */
	struct kmsgr_rdma_lsn *lsn;	/* accepted at CM level, not handed out */
	struct list_head lsn_node;	/* on lsn->pending */
	bool server;			/* accepted by a listener */
	struct ib_device *ibdev;	/* the buffers are mapped for it */
	bool mapped;
	struct ib_pd *pd;		/* this connection's alone */
	struct ib_qp *qp;
	struct ib_cq *cq;
	u32 cq_size;
	u32 port;
	struct sockaddr_storage local, peer;
	bool can_pull;			/* this side READs (KMSGR_RDMA_F_PULL) */
	/* registrations offered by PULLs (send side) */
	struct kmsgr_rdma_mr *mrs;
	u32 nr_mrs, mr_pages;
	u32 nr_stages;			/* mrs[0..nr_stages) may offer copies */
	struct list_head mr_pool;
	/*
	 * The READ of a PULL (receive side), one at a time: set up and
	 * consumed by the owner under @mutex; @rd_done is the completion's.
	 */
	bool rd_busy;
	struct rdma_rw_ctx rw;
	struct sg_table rd_sgt;
	void *rd_dest;
	u32 rd_len;
	unsigned long rd_at;		/* jiffies when posted */
	struct ib_cqe rd_cqe;

	spinlock_t lock;		/* everything below */
	kmsgr_xprt_kick_t kick;
	void *priv;
	/*
	 * The owner's memory counters, NULL once it let go of the
	 * connection (kmsgr_rdma_detach()); the bytes charged to them and
	 * to the module's (kmsgr_rdma_charge() only).
	 */
	struct kmsgr_xprt_acct *acct;
	u64 pinned, registered;
	enum kmsgr_rdma_state state;
	int err;
	bool detached;			/* no more posting */
	bool closing;			/* close() waits for the SENDs */
	wait_queue_head_t wq;		/* the last SEND completed */
	/* receive */
	struct kmsgr_rdma_buf *rx;
	u32 nr_rx, rx_size;
	u32 *ready;			/* DATA buffers in arrival order */
	u32 ready_head, ready_tail;	/* counters, index % nr_rx (a power
					 * of two: they wrap cleanly)
					 */
	u32 rx_off;			/* payload bytes taken from the head */
	u32 rx_out;			/* receives posted, not completed */
	u32 owed;			/* credits to return to the peer */
	/* send */
	struct kmsgr_rdma_buf *tx;
	u32 nr_tx, tx_size;
	u32 tx_posted, tx_done;		/* counters, slot % nr_tx (= nr_rx) */
	u32 credits;			/* the peer's buffers we may fill */
	u32 peer_credits, peer_size;	/* what the peer announced */
	bool peer_pull;			/* it READs: we may send PULLs */
	bool tx_wait;			/* no room: kick when there is */
	/* pulls */
	u32 pull_off;			/* bytes of the head PULL read */
	bool rd_posted;			/* a READ is on the send queue */
	struct timer_list rd_timer;	/* for a late READ */
	/* a QP in error with no disconnect (kmsgr_rdma_flushed()) */
	struct timer_list err_timer;
	bool rd_done;
	enum ib_wc_status rd_status;
	u32 dones[KMSGR_RDMA_DONES];	/* rkeys to send DONE for */
	u32 done_head, done_tail;
};

struct kmsgr_rdma_lsn {
	struct kmsgr_xprt x;
	struct kref ref;
	struct mutex mutex;		/* @id, @listening */
	struct rdma_cm_id *id;		/* NULL once its device went away */
	bool listening;			/* rdma_listen() succeeded */
	struct ib_device *ibdev;	/* bound to, or NULL (any) */
	bool gone;			/* device removal claimed it */
	struct list_head node;		/* on kmsgr_rdma_lsns */
	struct sockaddr_storage local;
	struct kmsgr_xprt_acct *acct;	/* its connections charge it */

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

/*
 * Our entry of @ibdev, under kmsgr_rdma_lock: NULL while it is not added
 * yet, or once its removal has begun (dying).
 */
static struct kmsgr_rdma_dev *kmsgr_rdma_dev_live(struct ib_device *ibdev)
{
	struct kmsgr_rdma_dev *d;

	lockdep_assert_held(&kmsgr_rdma_lock);
	list_for_each_entry(d, &kmsgr_rdma_devs, node)
		if (d->ibdev == ibdev)
			return d->dying ? NULL : d;
	return NULL;
}

/* Count @c as a user of @ibdev; list it if @list. */
static int kmsgr_rdma_dev_attach(struct kmsgr_rdma_conn *c,
				 struct ib_device *ibdev, bool list)
{
	struct kmsgr_rdma_dev *d;

	mutex_lock(&kmsgr_rdma_lock);
	d = kmsgr_rdma_dev_live(ibdev);
	if (d) {
		d->users++;
		c->dev = d;
		if (list)
			list_add_tail(&c->dev_node, &d->conns);
	}
	mutex_unlock(&kmsgr_rdma_lock);
	return d ? 0 : -ENODEV;
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

/*
 * Whether port @port of @d is down (the port events of the device say
 * so); @d stays while a connection of it has completions or CM events.
 */
static bool kmsgr_rdma_port_down(const struct kmsgr_rdma_dev *d, u32 port)
{
	return d && port < BITS_PER_LONG && test_bit(port, &d->ports_down);
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

/* ---- memory counters ---- */

/*
 * @c now holds @pinned more bytes DMA-mapped and @registered more bytes
 * registered for the peer (negative: fewer): the module's counters, and
 * its owner's while it has one.  Under @c->lock.
 */
static void kmsgr_rdma_charge(struct kmsgr_rdma_conn *c, s64 pinned,
			      s64 registered)
{
	lockdep_assert_held(&c->lock);
	c->pinned += pinned;
	c->registered += registered;
	atomic64_add(pinned, &kmsgr_rdma_pinned);
	atomic64_add(registered, &kmsgr_rdma_registered);
	if (c->acct) {
		atomic64_add(pinned, &c->acct->pinned);
		atomic64_add(registered, &c->acct->registered);
	}
}

/*
 * The owner lets go of @c: what @c still holds leaves the owner's
 * counters, which it never touches again.  Under @c->lock.
 */
static void kmsgr_rdma_disown(struct kmsgr_rdma_conn *c)
{
	lockdep_assert_held(&c->lock);
	if (!c->acct)
		return;
	atomic64_sub(c->pinned, &c->acct->pinned);
	atomic64_sub(c->registered, &c->acct->registered);
	c->acct = NULL;
}

/* ---- buffers ---- */

/* Bytes of the receive and send buffers of @c (fixed at its allocation). */
static u64 kmsgr_rdma_bufs_bytes(const struct kmsgr_rdma_conn *c)
{
	return (u64)c->nr_rx * c->rx_size + (u64)c->nr_tx * c->tx_size;
}

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
	wake_up(&c->wq);	/* close() lingers no longer */
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

	int ret;

	if (c->detached)
		return -ENOTCONN;
	sge.lkey = c->pd->local_dma_lkey;
	/* the device's again (recv_done() synced it for the CPU) */
	ib_dma_sync_single_for_device(c->ibdev, b->dma, c->rx_size,
				      DMA_FROM_DEVICE);
	ret = ib_post_recv(c->qp, &wr, NULL);
	if (!ret)
		c->rx_out++;
	return ret;
}

/*
 * Post tx slot tx_posted with @len payload bytes (already in place) as a
 * message of @type, returning the credits owed; @first (or NULL) is a work
 * request posted just before it (a registration).  Room and credits were
 * checked by the caller.  On failure, *@bad (if not NULL) is the first work
 * request not posted: @first, or the message when @first went out alone.
 */
static int kmsgr_rdma_post_send(struct kmsgr_rdma_conn *c, u8 type, u32 len,
				struct ib_send_wr *first,
				const struct ib_send_wr **bad)
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
	/* stream bytes never pass a waiting DONE (kmsgr_rdma_may_stream()) */
	if (WARN_ON_ONCE((type == KMSGR_RDMA_MSG_DATA ||
			  type == KMSGR_RDMA_MSG_PULL) &&
			 c->done_head != c->done_tail))
		return -EPROTO;
	sge.lkey = c->pd->local_dma_lkey;
	h->type = type;
	h->flags = 0;
	h->credits = cpu_to_be16(owed);
	ib_dma_sync_single_for_device(c->ibdev, b->dma, sge.length,
				      DMA_TO_DEVICE);
	if (first)
		first->next = &wr;
	ret = ib_post_send(c->qp, first ? first : &wr, bad);
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
 * Whether a DATA, PULL or DONE may be posted now: a send slot is free and
 * the peer has a buffer besides the last one, which only CREDIT takes.
 * If not, the owner is kicked when that changes (kmsgr_rdma_tx_wake()).
 */
static bool kmsgr_rdma_may_send(struct kmsgr_rdma_conn *c)
	__must_hold(&c->lock)
{
	if (c->credits >= 2 && kmsgr_rdma_tx_room(c))
		return true;
	c->tx_wait = true;
	return false;
}

/* A slot, a credit or a registration came back: kick an owner waiting. */
static void kmsgr_rdma_tx_wake(struct kmsgr_rdma_conn *c)
	__must_hold(&c->lock)
{
	if (c->tx_wait) {
		c->tx_wait = false;
		kmsgr_rdma_kick(c, KMSGR_XPRT_KICK_TX | KMSGR_XPRT_KICK_RX);
	}
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
	ret = kmsgr_rdma_post_send(c, KMSGR_RDMA_MSG_CREDIT, 0, NULL, NULL);
	if (ret && ret != -ENOTCONN)
		kmsgr_rdma_fail(c, ret);
}

/* Send the DONEs of finished pulls, as credits allow (like DATA). */
static void kmsgr_rdma_send_dones(struct kmsgr_rdma_conn *c)
	__must_hold(&c->lock)
{
	struct kmsgr_rdma_done *d;
	int ret;

	while (c->done_head != c->done_tail) {
		if (c->state != KMSGR_RDMA_CONNECTED)
			return;
		if (!kmsgr_rdma_may_send(c))
			return;
		d = c->tx[c->tx_posted % c->nr_tx].data + KMSGR_RDMA_HDR;
		d->rkey = cpu_to_be32(c->dones[c->done_head %
					       KMSGR_RDMA_DONES]);
		d->reserved = 0;
		ret = kmsgr_rdma_post_send(c, KMSGR_RDMA_MSG_DONE, sizeof(*d),
					   NULL, NULL);
		if (ret) {
			if (ret != -ENOTCONN)
				kmsgr_rdma_fail(c, ret);
			return;
		}
		c->done_head++;
	}
}

/*
 * May stream bytes (DATA, a PULL) go out now?  Not while DONEs wait: a
 * DONE goes before the msgr2 ack of the bytes it read, and any DATA may
 * carry that ack (docs/rdma-wire.md).  Credits that came back since the
 * last look go to the DONEs first.
 */
static bool kmsgr_rdma_may_stream(struct kmsgr_rdma_conn *c)
	__must_hold(&c->lock)
{
	kmsgr_rdma_send_dones(c);
	return c->done_head == c->done_tail && kmsgr_rdma_may_send(c);
}

/* ---- completions (softirq) ---- */

/*
 * The QP went to error while the CM told of no disconnect: a peer's access
 * violation (an RDMA READ or WRITE under a key it was not given: rxe moves
 * the responder's QP to error with neither an event nor an error
 * completion; other devices raise IB_EVENT_QP_ACCESS_ERR), or a fatal QP
 * event.  Only flushed completions come then, and the stream would just
 * stop.  A peer's close brings DISCONNECTED at once (iWARP devices may
 * flush first): if none has come KMSGR_RDMA_ERR_GRACE later, the
 * connection fails.
 */
#define KMSGR_RDMA_ERR_GRACE	HZ

/*
 * Nothing has ended @c yet.  It may still be connecting: a passive side's
 * QP takes the peer's first packets before its CM has the RTU, so the QP
 * can go to error (and flush) before RDMA_CM_EVENT_ESTABLISHED.
 */
static bool kmsgr_rdma_live(const struct kmsgr_rdma_conn *c)
	__must_hold(&c->lock)
{
	return c->state != KMSGR_RDMA_EOF && !c->closing && !c->detached &&
	       !c->err;
}

static void kmsgr_rdma_err_timeout(struct timer_list *t)
{
	struct kmsgr_rdma_conn *c = from_timer(c, t, err_timer);

	spin_lock_bh(&c->lock);
	if (kmsgr_rdma_live(c)) {
		pr_warn_ratelimited("connection %pISpc: queue pair in error without a disconnect\n",
				    &c->peer);
		kmsgr_rdma_fail(c, -ECONNRESET);
	}
	spin_unlock_bh(&c->lock);
}

/* A flushed completion: the QP is in error (kmsgr_rdma_err_timeout()). */
static void kmsgr_rdma_flushed(struct kmsgr_rdma_conn *c)
	__must_hold(&c->lock)
{
	if (kmsgr_rdma_live(c) && !timer_pending(&c->err_timer))
		mod_timer(&c->err_timer, jiffies + KMSGR_RDMA_ERR_GRACE);
}

static int kmsgr_rdma_wc_err(struct kmsgr_rdma_conn *c,
			     const struct ib_wc *wc)
{
	if (kmsgr_rdma_port_down(c->dev, c->port))
		return -ENETDOWN;	/* rxe fails the work requests */
	switch (wc->status) {
	case IB_WC_LOC_LEN_ERR:		/* a SEND larger than our buffer */
	case IB_WC_LOC_QP_OP_ERR:	/* the same, as rxe says it */
	case IB_WC_REM_INV_REQ_ERR:	/* ours larger than the peer's */
	case IB_WC_REM_OP_ERR:
		return -EPROTO;
	case IB_WC_RNR_RETRY_EXC_ERR:	/* the peer had no buffer posted */
		return -EPROTO;
	default:
		return -ECONNRESET;
	}
}

/* A registration failed (they are unsignaled: only errors come here). */
static void kmsgr_rdma_reg_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kmsgr_rdma_conn *c = wc->qp->qp_context;

	if (wc->status == IB_WC_SUCCESS || wc->status == IB_WC_WR_FLUSH_ERR)
		return;
	spin_lock_bh(&c->lock);
	pr_warn_ratelimited("connection %pISpc: registration failed: %s\n",
			    &c->peer, ib_wc_status_msg(wc->status));
	kmsgr_rdma_fail(c, -EIO);
	spin_unlock_bh(&c->lock);
}

/* A PULL's registration is invalidated: the memory is ours again. */
static void kmsgr_rdma_inv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kmsgr_rdma_conn *c = wc->qp->qp_context;
	struct kmsgr_rdma_mr *m = container_of(wc->wr_cqe,
					       struct kmsgr_rdma_mr, inv_cqe);

	spin_lock_bh(&c->lock);
	if (wc->status == IB_WC_WR_FLUSH_ERR) {
		/*
		 * Flushed: the QP is in error (the peer disconnected after
		 * its DONE, or the connection failed), and a QP in error
		 * serves no READ: the memory is ours again, as after the
		 * invalidation.  The MR stays busy, mapped: teardown unmaps
		 * it.  Left offered, a clean close after the peer's DONE
		 * waited 1 s and ended as a protocol error.
		 */
		kmsgr_rdma_charge(c, 0, -(s64)m->len);
		m->offered = false;
		m->inv = false;
		wake_up(&c->wq);
		kmsgr_rdma_flushed(c);
		goto out;
	}
	if (wc->status != IB_WC_SUCCESS) {
		kmsgr_rdma_fail(c, -EIO);	/* teardown frees the MR */
		goto out;
	}
	ib_dma_unmap_sg(c->ibdev, m->sgt.sgl, m->sgt.orig_nents,
			DMA_TO_DEVICE);
	sg_free_table(&m->sgt);
	kmsgr_rdma_charge(c, 0, -(s64)m->len);
	m->busy = false;
	m->offered = false;
	m->inv = false;
	wake_up(&c->wq);	/* close() and zc_release() wait for it */
	kmsgr_rdma_tx_wake(c);
out:
	spin_unlock_bh(&c->lock);
}

/* The READ of a PULL finished: the owner takes it from here. */
static void kmsgr_rdma_read_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kmsgr_rdma_conn *c = wc->qp->qp_context;

	spin_lock_bh(&c->lock);
	c->rd_posted = false;
	del_timer(&c->rd_timer);
	c->rd_done = true;
	c->rd_status = wc->status;
	trace_kmsgr_rdma_read_done(wc->qp, &c->peer, c->rd_len, wc->status);
	if (wc->status == IB_WC_WR_FLUSH_ERR)
		kmsgr_rdma_flushed(c);
	else if (wc->status != IB_WC_SUCCESS)
		pr_warn_ratelimited("connection %pISpc: RDMA READ failed: %s\n",
				    &c->peer, ib_wc_status_msg(wc->status));
	kmsgr_rdma_kick(c, KMSGR_XPRT_KICK_RX);
	kmsgr_rdma_tx_wake(c);	/* an offer may wait for it */
	spin_unlock_bh(&c->lock);
}

/*
 * A READ still not completed after read_timeout ms: the device lost it.
 * Soft-RoCE (rxe) of Linux 6.1 does, now and then, on a link that drops
 * packets (see docs/rdma-wire.md): the READ neither completes nor fails,
 * and the QP stays silent both ways.  End the connection (a lossless
 * session redials) instead of waiting for msgr2's keepalive timeout.
 */
static void kmsgr_rdma_read_timeout(struct timer_list *t)
{
	struct kmsgr_rdma_conn *c = from_timer(c, t, rd_timer);

	spin_lock_bh(&c->lock);
	/*
	 * A READ that completed as the timer fired may already have been
	 * followed by the next one (del_timer() does not wait for a running
	 * callback): that one re-armed the timer, or has no timeout.
	 */
	if (c->rd_posted && !c->detached && READ_ONCE(read_timeout) &&
	    !timer_pending(&c->rd_timer)) {
		pr_warn_ratelimited("connection %pISpc: RDMA READ of %u bytes not completed in %u ms\n",
				    &c->peer, c->rd_len,
				    jiffies_to_msecs(jiffies - c->rd_at));
		atomic64_inc(&kmsgr_rdma_stat_read_timeouts);
		kmsgr_rdma_fail(c, -ETIMEDOUT);
	}
	spin_unlock_bh(&c->lock);
}

/* The peer read a PULL: invalidate its registration (@rkey). */
static int kmsgr_rdma_pulled(struct kmsgr_rdma_conn *c, u32 rkey)
	__must_hold(&c->lock)
{
	struct ib_send_wr wr = {
		.opcode = IB_WR_LOCAL_INV,
		.send_flags = IB_SEND_SIGNALED,
		.ex.invalidate_rkey = rkey,
	};
	struct kmsgr_rdma_mr *m;
	u32 i;

	for (i = 0; i < c->nr_mrs; i++) {
		m = &c->mrs[i];
		if (m->offered && !m->inv && m->mr->rkey == rkey)
			break;
	}
	if (i == c->nr_mrs)
		return -EPROTO;		/* not offered, or DONE twice */
	if (c->detached)
		return 0;		/* teardown frees it */
	wr.wr_cqe = &m->inv_cqe;
	m->inv = true;
	return ib_post_send(c->qp, &wr, NULL);
}

/* Check a DONE and invalidate what it names: 0 or -errno. */
static int kmsgr_rdma_done_check(struct kmsgr_rdma_conn *c,
				 const struct kmsgr_rdma_buf *b)
	__must_hold(&c->lock)
{
	const struct kmsgr_rdma_done *d = b->data + KMSGR_RDMA_HDR;

	if (b->len != KMSGR_RDMA_HDR + sizeof(*d) || d->reserved)
		return -EPROTO;
	return kmsgr_rdma_pulled(c, be32_to_cpu(d->rkey));
}

/* Check a PULL's descriptor: 0 or -EPROTO. */
static int kmsgr_rdma_pull_check(struct kmsgr_rdma_conn *c,
				 const struct kmsgr_rdma_buf *b)
{
	const struct kmsgr_rdma_pull *d = b->data + KMSGR_RDMA_HDR;
	u32 len;

	if (!c->can_pull || b->len != KMSGR_RDMA_HDR + sizeof(*d))
		return -EPROTO;
	len = be32_to_cpu(d->len);
	return len && len <= KMSGR_RDMA_PULL_MAX ? 0 : -EPROTO;
}

static void kmsgr_rdma_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kmsgr_rdma_conn *c = wc->qp->qp_context;
	struct kmsgr_rdma_buf *b = container_of(wc->wr_cqe,
						struct kmsgr_rdma_buf, cqe);
	const struct kmsgr_rdma_hdr *h = b->data;
	u32 granted;
	int ret;

	spin_lock_bh(&c->lock);
	c->rx_out--;
	if (wc->status != IB_WC_SUCCESS) {
		/* the last flushed receive: end of stream may be told now */
		if (!c->rx_out && c->state == KMSGR_RDMA_EOF)
			kmsgr_rdma_kick(c, KMSGR_XPRT_KICK_RX);
		if (wc->status == IB_WC_WR_FLUSH_ERR) {
			kmsgr_rdma_flushed(c);
		} else {
			pr_warn_ratelimited("connection %pISpc: receive failed: %s\n",
					    &c->peer,
					    ib_wc_status_msg(wc->status));
			kmsgr_rdma_fail(c, kmsgr_rdma_wc_err(c, wc));
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
	case KMSGR_RDMA_MSG_PULL:
		if (kmsgr_rdma_pull_check(c, b)) {
			pr_warn_ratelimited("connection %pISpc: bad PULL descriptor\n",
					    &c->peer);
			kmsgr_rdma_fail(c, -EPROTO);
			goto out;
		}
		fallthrough;
	case KMSGR_RDMA_MSG_DATA:
		if (b->len > KMSGR_RDMA_HDR) {
			c->ready[c->ready_tail++ % c->nr_rx] = b - c->rx;
			kmsgr_rdma_kick(c, KMSGR_XPRT_KICK_RX);
			break;
		}
		fallthrough;
	case KMSGR_RDMA_MSG_DONE:
		ret = h->type == KMSGR_RDMA_MSG_DONE ?
		      kmsgr_rdma_done_check(c, b) : 0;
		if (ret) {
			/* the peer's fault, or our invalidation's post */
			pr_warn_ratelimited("connection %pISpc: %s: %d\n",
					    &c->peer, ret == -EPROTO ?
					    "bad DONE" :
					    "cannot post an invalidation", ret);
			kmsgr_rdma_fail(c, ret);
			goto out;
		}
		fallthrough;
	case KMSGR_RDMA_MSG_CREDIT:
		ret = kmsgr_rdma_post_recv(c, b);
		if (!ret)
			c->owed++;
		else if (ret != -ENOTCONN)	/* a credit lost for good */
			kmsgr_rdma_fail(c, ret);
		if (c->owed >= c->nr_rx / 2)	/* the owner returns them */
			kmsgr_rdma_kick(c, KMSGR_XPRT_KICK_RX);
		break;
	default:
		pr_warn_ratelimited("connection %pISpc: unknown message type %u\n",
				    &c->peer, h->type);
		kmsgr_rdma_fail(c, -EPROTO);
		goto out;
	}
	if (granted)
		kmsgr_rdma_tx_wake(c);
out:
	spin_unlock_bh(&c->lock);
}

static void kmsgr_rdma_send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kmsgr_rdma_conn *c = wc->qp->qp_context;

	spin_lock_bh(&c->lock);
	c->tx_done++;
	if (c->closing && c->tx_done == c->tx_posted)
		wake_up(&c->wq);
	if (wc->status != IB_WC_SUCCESS) {
		/* flushed: told even when no receive is posted to say it */
		if (wc->status == IB_WC_WR_FLUSH_ERR) {
			kmsgr_rdma_flushed(c);
		} else {
			pr_warn_ratelimited("connection %pISpc: send failed: %s\n",
					    &c->peer,
					    ib_wc_status_msg(wc->status));
			kmsgr_rdma_fail(c, kmsgr_rdma_wc_err(c, wc));
		}
	} else {
		kmsgr_rdma_tx_wake(c);
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
	spin_lock_init(&c->est_lock);
	spin_lock_init(&c->lock);
	timer_setup(&c->rd_timer, kmsgr_rdma_read_timeout, 0);
	timer_setup(&c->err_timer, kmsgr_rdma_err_timeout, 0);
	init_waitqueue_head(&c->wq);
	INIT_LIST_HEAD(&c->dev_node);
	INIT_LIST_HEAD(&c->lsn_node);
	c->state = KMSGR_RDMA_CONNECTING;
	/* a power of two: the ring counters below wrap around cleanly */
	c->nr_rx = rounddown_pow_of_two(clamp_t(u32, READ_ONCE(credits),
						KMSGR_RDMA_CREDITS_MIN,
						KMSGR_RDMA_CREDITS_MAX));
	c->nr_tx = c->nr_rx;
	c->rx_size = clamp_t(u32, READ_ONCE(buf_size), KMSGR_RDMA_BUF_MIN,
			     KMSGR_RDMA_BUF_MAX);
	c->tx_size = c->rx_size;
	c->can_pull = READ_ONCE(pull_min) && READ_ONCE(pulls);
	INIT_LIST_HEAD(&c->mr_pool);
	return c;
}

static void kmsgr_rdma_conn_release(struct kref *ref)
{
	struct kmsgr_rdma_conn *c = container_of(ref, struct kmsgr_rdma_conn,
						 ref);

	del_timer_sync(&c->rd_timer);
	del_timer_sync(&c->err_timer);
	kmsgr_rdma_bufs_free(c->rx, c->nr_rx);
	kmsgr_rdma_bufs_free(c->tx, c->nr_tx);
	kfree(c->ready);
	kfree(c->mrs);
	mutex_destroy(&c->mutex);
	kfree(c);
}

static void kmsgr_rdma_conn_put(struct kmsgr_rdma_conn *c)
{
	kref_put(&c->ref, kmsgr_rdma_conn_release);
}

/*
 * A QP event.  COMM_EST: the passive side's QP received a packet before
 * its CM saw the RTU (lost, or still on its way); the CM must hear of it,
 * or it waits for an RTU that may never come and drops the connection
 * when its REP's retries run out.  rdma_notify() takes spinlocks only.
 * A fatal or access error: the connection fails unless the CM tells of a
 * disconnect first (kmsgr_rdma_err_timeout()).
 */
static void kmsgr_rdma_qp_event(struct ib_event *ev, void *ctx)
{
	struct kmsgr_rdma_conn *c = ctx;
	unsigned long flags;
	int ret = 0;

	switch (ev->event) {
	case IB_EVENT_COMM_EST:
		spin_lock_irqsave(&c->est_lock, flags);
		if (c->est_id)
			ret = rdma_notify(c->est_id, IB_EVENT_COMM_EST);
		spin_unlock_irqrestore(&c->est_lock, flags);
		break;
	case IB_EVENT_QP_FATAL:
	case IB_EVENT_QP_REQ_ERR:
	case IB_EVENT_QP_ACCESS_ERR:
		/* any context: the timer looks at the state */
		mod_timer(&c->err_timer, jiffies + KMSGR_RDMA_ERR_GRACE);
		break;
	default:
		break;
	}
	pr_debug("connection %pISpc: QP event %s (%d)\n", &c->peer,
		 ib_event_msg(ev->event), ret);
}

/* Who the QP event handler tells of COMM_EST: @id, or NULL for no one. */
static void kmsgr_rdma_set_est_id(struct kmsgr_rdma_conn *c,
				  struct rdma_cm_id *id)
{
	unsigned long flags;

	spin_lock_irqsave(&c->est_lock, flags);
	c->est_id = id;
	spin_unlock_irqrestore(&c->est_lock, flags);
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
	u32 i, sge, rd_wrs, send_wr;
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
	spin_lock_bh(&c->lock);
	kmsgr_rdma_charge(c, kmsgr_rdma_bufs_bytes(c), 0);
	spin_unlock_bh(&c->lock);

	if (c->can_pull &&
	    !(ibdev->attrs.device_cap_flags & IB_DEVICE_MEM_MGT_EXTENSIONS))
		c->can_pull = false;	/* no fast registration */
	if (c->can_pull) {
		/* a receiver keeps at most KMSGR_RDMA_DONES DONEs waiting */
		u32 nr = min_t(u32, READ_ONCE(pulls), KMSGR_RDMA_DONES);
		struct kmsgr_rdma_mr *mrs;

		c->mr_pages = min_t(u32, ibdev->attrs.max_fast_reg_page_list_len,
				    KMSGR_RDMA_MR_PAGES);
		c->nr_stages = min_t(u32, READ_ONCE(stages), nr);
		mrs = kcalloc(nr, sizeof(*mrs), GFP_KERNEL);
		if (!mrs)
			return -ENOMEM;
		/*
		 * Published together, under the lock its readers (close(),
		 * describe()) take: never a count without its array.
		 */
		spin_lock_bh(&c->lock);
		c->mrs = mrs;
		c->nr_mrs = nr;
		spin_unlock_bh(&c->lock);
	}
	/*
	 * Send queue: the SENDs, a registration and an invalidation per MR,
	 * the work requests of one READ, the drain marker.
	 */
	sge = 1;
	rd_wrs = 0;
	if (c->can_pull) {
		sge = min3(ibdev->attrs.max_send_sge, ibdev->attrs.max_sge_rd,
			   KMSGR_RDMA_READ_SGE);
		if (!sge)
			sge = 1;
		rd_wrs = DIV_ROUND_UP(KMSGR_RDMA_READ_MAX / PAGE_SIZE + 1, sge);
	}
	send_wr = c->nr_tx + 2 * c->nr_mrs + rd_wrs + 1;
	c->cq_size = send_wr + c->nr_rx + 1;
	/*
	 * ib_cq_pool_get() makes CQs of at most max_cqe entries and, for a
	 * request that none of them can take, makes more for ever.
	 */
	if (c->cq_size > (u32)ibdev->attrs.max_cqe ||
	    max(send_wr, c->nr_rx + 1) > (u32)ibdev->attrs.max_qp_wr) {
		pr_warn_ratelimited("device %s: a connection needs %u CQ entries and %u send work requests, the device has %d and %d (lower credits or mrs)\n",
				    dev_name(&ibdev->dev), c->cq_size, send_wr,
				    ibdev->attrs.max_cqe,
				    ibdev->attrs.max_qp_wr);
		return -EINVAL;
	}
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
	attr.cap.max_send_wr = send_wr;
	attr.cap.max_recv_wr = c->nr_rx + 1;
	attr.cap.max_send_sge = sge;
	attr.cap.max_recv_sge = 1;
	attr.cap.max_rdma_ctxs = c->can_pull;	/* one READ at a time */
	attr.sq_sig_type = IB_SIGNAL_REQ_WR;
	attr.qp_type = IB_QPT_RC;
	c->pd = ib_alloc_pd(ibdev, 0);
	if (IS_ERR(c->pd)) {
		ret = PTR_ERR(c->pd);
		c->pd = NULL;
		return ret;
	}
	ret = rdma_create_qp(id, c->pd, &attr);
	if (ret)
		return ret;
	c->qp = id->qp;
	kmsgr_rdma_set_est_id(c, id);
	c->port = id->port_num;
	c->rd_cqe.done = kmsgr_rdma_read_done;

	if (c->nr_mrs) {
		/*
		 * One page more than a PULL ever maps, where the device
		 * allows: 6.1's soft-RoCE serves a READ that ends on the
		 * last page of a registration of 256 pages (one page-list
		 * block) by reading one block pointer past its array
		 * (rxe_mr_copy(); KASAN: slab-out-of-bounds).
		 */
		ret = ib_mr_pool_init(c->qp, &c->mr_pool, c->nr_mrs,
				      IB_MR_TYPE_MEM_REG,
				      min(c->mr_pages + 1,
					  ibdev->attrs.max_fast_reg_page_list_len),
				      0);
		if (ret) {
			spin_lock_bh(&c->lock);
			c->nr_mrs = 0;
			spin_unlock_bh(&c->lock);
			return ret;
		}
		for (i = 0; i < c->nr_mrs; i++) {
			c->mrs[i].mr = ib_mr_pool_get(c->qp, &c->mr_pool);
			c->mrs[i].reg_cqe.done = kmsgr_rdma_reg_done;
			c->mrs[i].inv_cqe.done = kmsgr_rdma_inv_done;
		}
	}

	spin_lock_bh(&c->lock);
	for (i = 0; i < c->nr_rx; i++) {
		ret = kmsgr_rdma_post_recv(c, &c->rx[i]);
		if (ret)
			break;
	}
	spin_unlock_bh(&c->lock);
	return ret;
}

/* After the drain: the READ in flight and every registration. */
/* Bytes of one staging buffer: what one registration covers. */
static size_t kmsgr_rdma_stage_size(const struct kmsgr_rdma_conn *c)
{
	return (size_t)c->mr_pages * PAGE_SIZE;
}

static void kmsgr_rdma_pulls_free(struct kmsgr_rdma_conn *c)
{
	struct kmsgr_rdma_mr *m;
	u64 freed = 0;
	u32 i, n;

	/*
	 * The count goes first, under the lock its readers (close(),
	 * describe()) take: they look at none of the array from here on.
	 */
	spin_lock_bh(&c->lock);
	n = c->nr_mrs;
	c->nr_mrs = 0;
	spin_unlock_bh(&c->lock);
	if (c->rd_busy) {
		rdma_rw_ctx_destroy(&c->rw, c->qp, c->port, c->rd_sgt.sgl,
				    c->rd_sgt.orig_nents, DMA_FROM_DEVICE);
		sg_free_table(&c->rd_sgt);
		c->rd_busy = false;
	}
	for (i = 0; i < n; i++) {
		m = &c->mrs[i];
		if (m->busy) {
			ib_dma_unmap_sg(c->ibdev, m->sgt.sgl,
					m->sgt.orig_nents, DMA_TO_DEVICE);
			sg_free_table(&m->sgt);
			if (m->offered)
				freed += m->len;
			m->busy = false;
			m->offered = false;
		}
		if (m->mr)
			ib_mr_pool_put(c->qp, &c->mr_pool, m->mr);
		m->mr = NULL;
		if (m->stage) {
			kvfree(m->stage);
			atomic64_sub(kmsgr_rdma_stage_size(c), &kmsgr_rdma_staged);
			m->stage = NULL;
		}
	}
	if (n)
		ib_mr_pool_destroy(c->qp, &c->mr_pool);
	spin_lock_bh(&c->lock);
	kmsgr_rdma_charge(c, 0, -(s64)freed);
	spin_unlock_bh(&c->lock);
}

/*
 * Free the verbs objects of @c: after its cm_id was destroyed (@id NULL),
 * or from inside the handler of @id, which the CM destroys after.
 */
static void kmsgr_rdma_conn_unsetup(struct kmsgr_rdma_conn *c,
				    struct rdma_cm_id *id)
{
	if (c->qp) {
		kmsgr_rdma_set_est_id(c, NULL);	/* the CM may destroy @id */
		ib_drain_qp(c->qp);	/* every completion has run */
		kmsgr_rdma_pulls_free(c);
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
		spin_lock_bh(&c->lock);
		kmsgr_rdma_charge(c, -(s64)kmsgr_rdma_bufs_bytes(c), 0);
		spin_unlock_bh(&c->lock);
	}
	if (c->cq) {
		ib_cq_pool_put(c->cq, c->cq_size);
		c->cq = NULL;
	}
	if (c->pd) {		/* after the QP and its registrations */
		ib_dealloc_pd(c->pd);
		c->pd = NULL;
	}
	kmsgr_rdma_dev_detach(c);
}

/*
 * Disconnect, destroy the cm_id (no CM handler runs after that), drain
 * and destroy the QP, under @c->mutex.  A connection still connecting is
 * not disconnected: rdma_disconnect() does not wait for the CM handler,
 * and a client's handler whose rdma_connect_locked() fails frees the IB
 * CM id that rdma_disconnect() would send the DREQ on.  rdma_destroy_id()
 * waits for the handler, then rejects or disconnects by itself.
 */
static void kmsgr_rdma_teardown(struct kmsgr_rdma_conn *c)
{
	bool connecting;

	if (c->id) {
		kmsgr_rdma_set_est_id(c, NULL);	/* the QP outlives c->id */
		spin_lock_bh(&c->lock);
		connecting = c->state == KMSGR_RDMA_CONNECTING;
		spin_unlock_bh(&c->lock);
		if (!connecting)
			rdma_disconnect(c->id);
		rdma_destroy_id(c->id);
		c->id = NULL;
	}
	kmsgr_rdma_conn_unsetup(c, NULL);
	c->torn = true;
	c->parked = false;
}

/*
 * Flush the QP of @c (to the error state, drained) and destroy its
 * registrations now, before its teardown: the peer can read nothing of
 * ours any more (its registrations are in this connection's PD only).
 * Under @c->mutex.
 */
static void kmsgr_rdma_quiesce(struct kmsgr_rdma_conn *c)
{
	struct ib_qp_attr qa = { .qp_state = IB_QPS_ERR };

	if (!c->qp)
		return;
	ib_modify_qp(c->qp, &qa, IB_QP_STATE);
	ib_drain_qp(c->qp);
	kmsgr_rdma_pulls_free(c);
}

/*
 * While the port of @c is down, keep its cm_id and QP (the QP in error,
 * drained, its registrations gone) until the port is up again or the
 * device goes: destroying a connected
 * cm_id sends a DREQ, and soft-RoCE (Debian 6.1) fails a send through a
 * port that is down with a local error, which puts its GSI QP (QP1, the
 * CM's) in error for good: no connect request is received on that device
 * again.  The parked connection holds a reference; kmsgr_rdma_unpark() and
 * device removal tear it down.  A server connection that its CM handler
 * has not put on the device's list yet (lsn_request() makes it pending
 * first) is not parked: the handler would then list it a second time, and
 * only rdma_destroy_id(), in the teardown, waits for the handler.  Under
 * @c->mutex; true if parked.
 */
static bool kmsgr_rdma_park(struct kmsgr_rdma_conn *c)
{
	struct kmsgr_rdma_dev *d = c->dev;
	bool parked = false, connecting;

	if (!c->id || !kmsgr_rdma_port_down(d, c->port))
		return false;
	mutex_lock(&kmsgr_rdma_lock);
	if (!d->dying && !list_empty(&c->dev_node) &&
	    kmsgr_rdma_port_down(d, c->port)) {
		list_move_tail(&c->dev_node, &d->parked);
		kref_get(&c->ref);
		c->parked = true;
		parked = true;
	}
	mutex_unlock(&kmsgr_rdma_lock);
	/*
	 * A client still connecting may be in its CM handler's set-up of
	 * the QP and its registrations, which nothing but rdma_destroy_id()
	 * waits for: leave them to the teardown, after it.  Nothing was
	 * offered yet.
	 */
	spin_lock_bh(&c->lock);
	connecting = c->state == KMSGR_RDMA_CONNECTING;
	spin_unlock_bh(&c->lock);
	if (parked && !connecting)
		kmsgr_rdma_quiesce(c);
	return parked;
}

/*
 * zc_release() of the first @end stream bytes: 0 when no registration of
 * @c offers any of them, 1 while one is being invalidated (the peer said
 * DONE), 2 while one is still offered (no DONE yet).
 */
static int kmsgr_rdma_zc_state(struct kmsgr_rdma_conn *c, u64 end)
{
	const struct kmsgr_rdma_mr *m;
	int ret = 0;
	u32 i;

	spin_lock_bh(&c->lock);
	for (i = 0; i < c->nr_mrs; i++) {
		m = &c->mrs[i];
		if (m->offered && m->end <= end)
			ret = max(ret, m->inv ? 1 : 2);
	}
	spin_unlock_bh(&c->lock);
	return ret;
}

/*
 * A message of the owner that ended at stream byte @end is complete: wait
 * until no registration offers any of the first @end bytes (PULLs offer
 * in stream order).  A peer sends DONE for a PULL before any stream byte
 * that follows the message (its msgr2 ack included), so when @acked, a
 * registration still offered means that the peer acknowledged bytes it
 * had not said it had read.  Then, and when what a given-up message
 * offered is not given back within 1 s, fail the connection and make
 * every registration unusable now (kmsgr_rdma_quiesce()), before the
 * application can reuse the bytes.
 */
static int kmsgr_rdma_zc_release(struct kmsgr_xprt *x, u64 end, bool acked)
{
	struct kmsgr_rdma_conn *c = to_conn(x);
	int st, err = acked ? -EPROTO : -ECONNRESET;

	st = kmsgr_rdma_zc_state(c, end);
	if (st == 1 || (st == 2 && !acked)) {
		/* a LOCAL_INV posted is usually done at once */
		wait_event_timeout(c->wq, kmsgr_rdma_zc_state(c, end) == 0 ||
				   (acked && kmsgr_rdma_zc_state(c, end) == 2),
				   HZ);
		st = kmsgr_rdma_zc_state(c, end);
	}
	if (!st)
		return 0;
	if (st == 2 && acked)
		pr_warn_ratelimited("connection %pISpc: the peer acknowledged a message it had not finished reading (no DONE)\n",
				    &c->peer);
	else
		pr_warn_ratelimited("connection %pISpc: a registration was not given back within 1 s\n",
				    &c->peer);
	spin_lock_bh(&c->lock);
	c->detached = true;	/* nothing more is posted */
	kmsgr_rdma_fail(c, err);
	spin_unlock_bh(&c->lock);
	mutex_lock(&c->mutex);
	if (!c->torn && !c->parked)
		kmsgr_rdma_quiesce(c);
	mutex_unlock(&c->mutex);
	return err;
}

/*
 * Tear down the verbs objects of @c once (close() and device removal):
 * stop posting, then kmsgr_rdma_teardown() now or, while the port is
 * down, once it is up (kmsgr_rdma_park()).  @err is what the owner sees
 * from now on, unless an error came first.
 */
static void kmsgr_rdma_detach(struct kmsgr_rdma_conn *c, int err)
{
	mutex_lock(&c->mutex);
	if (c->torn || c->parked)
		goto out;
	spin_lock_bh(&c->lock);
	c->detached = true;
	kmsgr_rdma_fail(c, err);
	spin_unlock_bh(&c->lock);
	if (!kmsgr_rdma_park(c))
		kmsgr_rdma_teardown(c);
out:
	/* whoever detaches: the owner's counters go (see the head) */
	spin_lock_bh(&c->lock);
	kmsgr_rdma_disown(c);
	spin_unlock_bh(&c->lock);
	mutex_unlock(&c->mutex);
}

/* Take the first parked connection of @d (its port up, if @up); NULL if none. */
static struct kmsgr_rdma_conn *kmsgr_rdma_unpark_one(struct kmsgr_rdma_dev *d,
						     bool up)
{
	struct kmsgr_rdma_conn *c;

	mutex_lock(&kmsgr_rdma_lock);
	list_for_each_entry(c, &d->parked, dev_node) {
		if (up && kmsgr_rdma_port_down(d, c->port))
			continue;
		list_del_init(&c->dev_node);
		mutex_unlock(&kmsgr_rdma_lock);
		return c;
	}
	mutex_unlock(&kmsgr_rdma_lock);
	return NULL;
}

/* Tear down the parked connections of @d (whose port is up, if @up). */
static void kmsgr_rdma_unpark_all(struct kmsgr_rdma_dev *d, bool up)
{
	struct kmsgr_rdma_conn *c;

	while ((c = kmsgr_rdma_unpark_one(d, up))) {
		mutex_lock(&c->mutex);
		kmsgr_rdma_teardown(c);
		mutex_unlock(&c->mutex);
		kmsgr_rdma_conn_put(c);
	}
}

static void kmsgr_rdma_unpark(struct work_struct *work)
{
	kmsgr_rdma_unpark_all(container_of(work, struct kmsgr_rdma_dev,
					   unpark), true);
}

static void kmsgr_rdma_conn_param(struct kmsgr_rdma_conn *c,
				  struct kmsgr_rdma_cm_priv *priv,
				  struct rdma_conn_param *p)
{
	priv->magic = cpu_to_be32(KMSGR_RDMA_MAGIC);
	priv->version = KMSGR_RDMA_VERSION;
	priv->flags = c->can_pull ? KMSGR_RDMA_F_PULL : 0;
	priv->credits = cpu_to_be16(c->nr_rx);
	priv->buf_size = cpu_to_be32(c->rx_size);
	priv->reserved = 0;
	memset(p, 0, sizeof(*p));
	p->private_data = priv;
	p->private_data_len = sizeof(*priv);
	/*
	 * Transport retries before the QP gives up on a silent peer; not 7,
	 * which rxe takes as "retry forever" (a dead peer would then only
	 * be noticed by msgr2's keepalive).
	 */
	p->retry_count = 6;
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
	/* flags we do not know are capabilities we do not use */
	if (p->reserved || n < KMSGR_RDMA_CREDITS_MIN ||
	    size < KMSGR_RDMA_BUF_MIN)
		return KMSGR_RDMA_REJ_PARAMS;
	c->peer_pull = p->flags & KMSGR_RDMA_F_PULL;
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
	u8 init = 0, resp = 0;
	int ret;

	/* no connect request through a port that is down (see park()) */
	if (kmsgr_rdma_port_down(c->dev, id->port_num))
		return -ENETDOWN;
	ret = kmsgr_rdma_conn_setup(c, id);
	if (ret)
		return ret;
	if (c->can_pull) {	/* READs in flight, each way */
		init = min_t(u32, 4, id->device->attrs.max_qp_init_rd_atom);
		resp = min_t(u32, 4, id->device->attrs.max_qp_rd_atom);
	}
	if (!init)		/* we could not READ what PULLs offer */
		c->can_pull = false;
	kmsgr_rdma_conn_param(c, &priv, &p);
	p.initiator_depth = init;
	p.responder_resources = resp;
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
		if (c->server)
			kmsgr_rdma_fault_est();
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
		/*
		 * The CM tells this before the receive completions that came
		 * first may have been polled: with the QP in error, the
		 * posted receives complete (flushed) after them, and the
		 * stream ends when the last one did (kmsgr_rdma_recv()).
		 */
		if (c->qp) {
			struct ib_qp_attr qa = { .qp_state = IB_QPS_ERR };

			ib_modify_qp(c->qp, &qa, IB_QP_STATE);
		}
		spin_lock_bh(&c->lock);
		if (c->state == KMSGR_RDMA_CONNECTED)
			c->state = KMSGR_RDMA_EOF;	/* rx then says 0 */
		else if (!c->err)
			c->err = -ECONNRESET;
		kmsgr_rdma_kick(c, KMSGR_XPRT_KICK_STATE | KMSGR_XPRT_KICK_RX);
		wake_up(&c->wq);	/* close() lingers no longer */
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
	u8 reason, init;
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
	c->acct = l->acct;	/* the listener is open while this runs */
	/* a request's id is made in its listener's namespace */
	c->net_cookie = id->route.addr.dev_addr.net->net_cookie;
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
	/*
	 * The CM gives the request's READ resources from our side already:
	 * its initiator_depth is what the client serves us (the request's
	 * responder_resources), and the other way round.
	 */
	init = min_t(u32, ev->param.conn.initiator_depth,
		     id->device->attrs.max_qp_init_rd_atom);
	if (!init)		/* we could not READ what PULLs offer */
		c->can_pull = false;
	kmsgr_rdma_conn_param(c, &priv, &p);
	p.initiator_depth = init;
	p.responder_resources = min_t(u32, ev->param.conn.responder_resources,
				      id->device->attrs.max_qp_rd_atom);
	ret = rdma_accept(id, &p);
	if (ret)
		goto out_unsetup;
	if (kmsgr_rdma_fault_comm_est()) {
		struct ib_event est = {
			.device = id->device,
			.element.qp = c->qp,
			.event = IB_EVENT_COMM_EST,
		};

		kmsgr_rdma_qp_event(&est, c);
	}

	/*
	 * Ours from here: the listener reaps it if it fails.  Its completions
	 * may run already, and read the kick under c->lock: the pair is set
	 * as one, as the listener's close clears l->kick (lsn > conn).
	 */
	c->id = id;
	spin_lock_bh(&l->lock);
	spin_lock(&c->lock);
	c->kick = l->kick;
	c->priv = l->priv;
	spin_unlock(&c->lock);
	c->lsn = l;
	list_add_tail(&c->lsn_node, &l->pending);
	l->nr_pending++;
	spin_unlock_bh(&l->lock);
	/* pending first: the kick of the failure finds it to reap */
	if (kmsgr_rdma_dev_list(c)) {
		spin_lock_bh(&c->lock);
		kmsgr_rdma_fail(c, -ENODEV);
		spin_unlock_bh(&c->lock);
	}
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

/* An sg table over @len bytes of kernel memory at @p (vmalloc or not). */
static int kmsgr_rdma_sgt(struct sg_table *sgt, const void *p, size_t len)
{
	unsigned int n, i, off, k;
	struct scatterlist *sg;
	struct page *page;
	int ret;

	if (!is_vmalloc_addr(p) && !virt_addr_valid(p))
		return -EFAULT;
	off = offset_in_page(p);
	n = DIV_ROUND_UP(off + len, PAGE_SIZE);
	ret = sg_alloc_table(sgt, n, GFP_KERNEL);
	if (ret)
		return ret;
	for_each_sg(sgt->sgl, sg, n, i) {
		page = is_vmalloc_addr(p) ? vmalloc_to_page(p) : virt_to_page(p);
		k = min_t(size_t, len, PAGE_SIZE - off);
		sg_set_page(sg, page, k, off);
		p += k;
		len -= k;
		off = 0;
	}
	return 0;
}

/* Consume the head receive buffer: post it again, a credit is owed. */
static void kmsgr_rdma_rx_pop(struct kmsgr_rdma_conn *c,
			      struct kmsgr_rdma_buf *b)
	__must_hold(&c->lock)
{
	int ret;

	c->rx_off = 0;
	c->ready_head++;
	ret = kmsgr_rdma_post_recv(c, b);
	if (!ret)
		c->owed++;
	else if (ret != -ENOTCONN)
		kmsgr_rdma_fail(c, ret);
}

/*
 * The head of the stream is a PULL: READ its next bytes straight into
 * @iov (the engine's destination: for a data segment, its receive-pool
 * slice).  The first call posts the READ and says -EAGAIN; its completion
 * kicks, and the call after that (same destination: the engine still
 * wants it) returns the bytes.  Under @mutex, so that a device removal
 * (kmsgr_rdma_detach()) never meets a READ half set up.
 *
 * A READ that has not completed after read_timeout ms fails the
 * connection (kmsgr_rdma_read_timeout()).
 */
static ssize_t kmsgr_rdma_pull(struct kmsgr_rdma_conn *c,
			       struct kmsgr_rdma_buf *b,
			       const struct msgr2_iov *iov)
{
	const struct kmsgr_rdma_pull *d = b->data + KMSGR_RDMA_HDR;
	u32 len = be32_to_cpu(d->len), rkey = be32_to_cpu(d->rkey);
	enum ib_wc_status st;
	ssize_t ret;
	u64 addr;
	u32 k;

	mutex_lock(&c->mutex);
	if (c->torn) {
		ret = c->err ? c->err : -ENOTCONN;
		goto out;
	}
	if (!c->rd_busy) {
		addr = get_unaligned_be64(&d->addr) + c->pull_off;
		k = min_t(size_t, iov->len, len - c->pull_off);
		/* at least a page: the offset in it must not underflow */
		k = min_t(u32, k, clamp_t(u32, READ_ONCE(read_size),
					  PAGE_SIZE, KMSGR_RDMA_READ_MAX) -
				  offset_in_page(iov->base));
		ret = kmsgr_rdma_sgt(&c->rd_sgt, iov->base, k);
		if (ret)
			goto out;
		ret = rdma_rw_ctx_init(&c->rw, c->qp, c->port, c->rd_sgt.sgl,
				       c->rd_sgt.orig_nents, 0,
				       addr, rkey, DMA_FROM_DEVICE);
		if (ret < 0) {
			sg_free_table(&c->rd_sgt);
			/*
			 * -EAGAIN: no MR in rdma_rw's pool (devices that
			 * register READ buffers).  With one READ at a time
			 * that pool never frees up: an error, not "later".
			 */
			if (ret == -EAGAIN)
				ret = -EIO;
			goto out;
		}
		c->rd_at = jiffies;
		c->rd_busy = true;
		c->rd_dest = iov->base;
		c->rd_len = k;
		spin_lock_bh(&c->lock);
		c->rd_done = false;
		ret = c->detached ? -ENOTCONN :
		      rdma_rw_ctx_post(&c->rw, c->qp, c->port, &c->rd_cqe,
				       NULL);
		if (ret) {
			kmsgr_rdma_fail(c, ret);
		} else {
			c->rd_posted = true;
			if (READ_ONCE(read_timeout))
				mod_timer(&c->rd_timer, c->rd_at +
					  msecs_to_jiffies(READ_ONCE(read_timeout)));
		}
		trace_kmsgr_rdma_read_post(c->qp, &c->peer, addr, k, rkey,
					   ret);
		spin_unlock_bh(&c->lock);
		ret = ret ? ret : -EAGAIN;
		goto out;
	}

	spin_lock_bh(&c->lock);
	if (!c->rd_done) {
		spin_unlock_bh(&c->lock);
		ret = -EAGAIN;
		goto out;
	}
	st = c->rd_status;
	spin_unlock_bh(&c->lock);
	rdma_rw_ctx_destroy(&c->rw, c->qp, c->port, c->rd_sgt.sgl,
			    c->rd_sgt.orig_nents, DMA_FROM_DEVICE);
	sg_free_table(&c->rd_sgt);
	c->rd_busy = false;
	if (st != IB_WC_SUCCESS || c->rd_dest != iov->base ||
	    c->rd_len > iov->len) {
		/* a key the peer took back, or our caller changed its mind */
		ret = st == IB_WC_SUCCESS ? -EINVAL : -EPROTO;
		spin_lock_bh(&c->lock);
		kmsgr_rdma_fail(c, ret);
		spin_unlock_bh(&c->lock);
		goto out;
	}
	ret = c->rd_len;
	atomic64_add(ret, &kmsgr_rdma_stat_pulled);
	spin_lock_bh(&c->lock);
	c->pull_off += c->rd_len;
	if (c->pull_off == len) {
		c->pull_off = 0;
		/* room: at most KMSGR_RDMA_DONES are owed (kmsgr_rdma_recv()) */
		if (!kmsgr_rdma_fault_no_done())
			c->dones[c->done_tail++ % KMSGR_RDMA_DONES] = rkey;
		kmsgr_rdma_rx_pop(c, b);
		kmsgr_rdma_send_dones(c);
	}
	spin_unlock_bh(&c->lock);
out:
	mutex_unlock(&c->mutex);
	return ret;
}

/*
 * Copy received payload into @iov, or pull it (a PULL at the head).  Only
 * the owner consumes, so the head buffer's bytes are read outside the
 * lock; completions only append.
 */
static ssize_t kmsgr_rdma_recv(struct kmsgr_xprt *x,
			       const struct msgr2_iov *iov, int n)
{
	struct kmsgr_rdma_conn *c = to_conn(x);
	size_t done = 0, off = 0, k, avail;
	struct kmsgr_rdma_buf *b;
	const struct kmsgr_rdma_hdr *h;
	ssize_t ret;
	int i = 0;

	if (n <= 0 || n > 2)
		return -EINVAL;
	spin_lock_bh(&c->lock);
	kmsgr_rdma_send_dones(c);
	while (i < n) {
		if (c->err || c->ready_head == c->ready_tail)
			break;
		b = &c->rx[c->ready[c->ready_head % c->nr_rx]];
		h = b->data;
		if (h->type == KMSGR_RDMA_MSG_PULL) {
			/* never mixed with copied bytes in one call */
			if (done || off ||
			    c->done_tail - c->done_head == KMSGR_RDMA_DONES)
				break;
			spin_unlock_bh(&c->lock);
			ret = kmsgr_rdma_pull(c, b, &iov[i]);
			spin_lock_bh(&c->lock);
			kmsgr_rdma_send_credits(c);
			spin_unlock_bh(&c->lock);
			return ret;
		}
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
		if (c->rx_off == b->len - KMSGR_RDMA_HDR)
			kmsgr_rdma_rx_pop(c, b);
	}
	if (done)
		ret = done;
	else if (c->err)
		ret = c->err;
	else if (c->state == KMSGR_RDMA_EOF && !c->rx_out)
		/*
		 * every receive completed; a PULL still at the head (16
		 * DONEs waited for credits) can never be read now
		 */
		ret = c->ready_head != c->ready_tail ? -EPROTO : 0;
	else
		ret = -EAGAIN;
	kmsgr_rdma_send_credits(c);
	spin_unlock_bh(&c->lock);
	return ret;
}

/* how a piece of the stream travels */
enum kmsgr_rdma_tx {
	KMSGR_RDMA_TX_SEND,		/* copied into DATA messages */
	KMSGR_RDMA_TX_PULL,		/* offered in place */
	KMSGR_RDMA_TX_STAGE,		/* copied to a staging buffer, offered */
};

/*
 * How @iov travels: a PULL of the memory itself where it stays untouched
 * until the peer's ack (buffer-area pages of a lossless session, struct
 * kmsgr_xprt_zc), a PULL of a staged copy for other large pieces (secure
 * mode's sealed tails, lossy sessions), else DATA.
 */
static enum kmsgr_rdma_tx kmsgr_rdma_tx_how(struct kmsgr_rdma_conn *c,
					    const struct kmsgr_xprt_zc *zc,
					    const struct msgr2_iov *iov)
{
	const u8 *p = iov->base, *base = zc ? zc->base : NULL;
	u32 min = READ_ONCE(pull_min);

	if (!c->peer_pull || !c->nr_mrs || !min || iov->len < min)
		return KMSGR_RDMA_TX_SEND;
	if (zc && iov->len >= zc->min && p >= base && iov->len <= zc->len &&
	    p - base <= zc->len - iov->len)
		return KMSGR_RDMA_TX_PULL;
	return c->nr_stages ? KMSGR_RDMA_TX_STAGE : KMSGR_RDMA_TX_SEND;
}

/* Work requests of @c outstanding on its send queue. */
static u32 kmsgr_rdma_sq_ahead(struct kmsgr_rdma_conn *c)
	__must_hold(&c->lock)
{
	u32 i, n = c->tx_posted - c->tx_done + c->rd_posted;

	for (i = 0; i < c->nr_mrs; i++)
		n += c->mrs[i].inv;
	return n;
}

/*
 * Whether a registration may be posted now.  Soft-RoCE (rxe) of Linux 6.1
 * executes a fast registration again when its QP goes back to retransmit
 * (a lost packet) while the registration is executed but not completed,
 * that is, behind work requests still in flight.  The second execution
 * fails ("rxe_reg_fast_mr: ... not free"), and that stops the send queue
 * for good without completing what is ahead of it: a READ there stays
 * outstanding for ever, the QP silent (kmsgr_rdma_read_timeout() ends
 * such a connection).  On rxe, kmsgr therefore registers only on an empty
 * send queue: no SEND, READ or invalidation outstanding.
 */
static bool kmsgr_rdma_may_register(struct kmsgr_rdma_conn *c)
	__must_hold(&c->lock)
{
	return c->ibdev->ops.driver_id != RDMA_DRIVER_RXE ||
	       !kmsgr_rdma_sq_ahead(c);
}

#ifdef KMSGR_FAULT
static unsigned int fault_offer_ms;
module_param(fault_offer_ms, uint, 0644);
MODULE_PARM_DESC(fault_offer_ms,
		 "Test builds only: an offer waits up to this many ms (at most 5000), between its check of the send queue and its post, for an invalidation to be posted (a DONE that came meanwhile)");

static void kmsgr_rdma_fault_offer(struct kmsgr_rdma_conn *c)
{
	unsigned int ms = min(READ_ONCE(fault_offer_ms), 5000U);
	unsigned long end = jiffies + msecs_to_jiffies(ms);
	bool inv = false;
	u32 i;

	while (ms && !inv && time_before(jiffies, end)) {
		usleep_range(20, 50);
		spin_lock_bh(&c->lock);
		for (i = 0; i < c->nr_mrs; i++)
			inv |= c->mrs[i].inv;
		spin_unlock_bh(&c->lock);
	}
}
#else
static void kmsgr_rdma_fault_offer(struct kmsgr_rdma_conn *c)
{
}
#endif

/*
 * Offer up to one registration's worth of @p (@len bytes of kernel
 * memory, the stream's bytes from @at on) in a PULL: register it, or
 * with @stage a copy of it in the registration's staging buffer (fast
 * registration, remote read only, exactly these bytes), post the
 * registration and the PULL.  Returns the
 * bytes offered, -EAGAIN without a free registration, send slot or
 * credit, -ENOBUFS when no staging buffer can be had (the connection
 * stages no more: send as DATA), or -errno.  Under @mutex (see
 * kmsgr_rdma_pull()).
 */
static ssize_t kmsgr_rdma_offer(struct kmsgr_rdma_conn *c, const void *p,
				size_t len, bool stage, u64 at)
{
	struct kmsgr_rdma_pull *d;
	struct kmsgr_rdma_mr *m = NULL;
	struct ib_reg_wr reg = { };
	const struct ib_send_wr *bad;
	bool again = false;
	size_t k;
	int ret;
	u32 i;

	spin_lock_bh(&c->lock);
	if (!kmsgr_rdma_may_stream(c) || !kmsgr_rdma_may_register(c))
		goto busy;
	for (i = 0; i < (stage ? c->nr_stages : c->nr_mrs) && !m; i++)
		if (!c->mrs[i].busy)
			m = &c->mrs[i];
	if (!m)
		goto busy;
	m->busy = true;
	m->staged = stage;
	spin_unlock_bh(&c->lock);

	if (stage) {
		k = min(len, kmsgr_rdma_stage_size(c));
		if (!m->stage) {
			m->stage = kvmalloc(kmsgr_rdma_stage_size(c),
					    GFP_KERNEL);
			if (!m->stage) {
				spin_lock_bh(&c->lock);
				m->busy = false;
				c->nr_stages = 0;
				spin_unlock_bh(&c->lock);
				return -ENOBUFS;
			}
			atomic64_add(kmsgr_rdma_stage_size(c),
				     &kmsgr_rdma_staged);
		}
		memcpy(m->stage, p, k);
		p = m->stage;
	} else {
		/* whole pages: the first one is partial */
		k = min_t(size_t, len, kmsgr_rdma_stage_size(c) -
				       offset_in_page(p));
	}
	ret = kmsgr_rdma_sgt(&m->sgt, p, k);
	if (ret)
		goto out_free;
	m->nents = ib_dma_map_sg(c->ibdev, m->sgt.sgl, m->sgt.orig_nents,
				 DMA_TO_DEVICE);
	if (m->nents <= 0) {
		ret = -ENOMEM;
		goto out_table;
	}
	ret = ib_map_mr_sg(m->mr, m->sgt.sgl, m->nents, NULL, PAGE_SIZE);
	if (ret != m->nents) {
		ret = ret < 0 ? ret : -EINVAL;
		goto out_unmap;
	}
	/* the peer reads [iova, iova + k) whatever addresses back it */
	m->mr->iova = KMSGR_RDMA_IOVA | (m->mr->iova & ~PAGE_MASK);
	ib_update_fast_reg_key(m->mr, ib_inc_rkey(m->mr->rkey));
	reg.wr.opcode = IB_WR_REG_MR;
	reg.wr.wr_cqe = &m->reg_cqe;
	reg.mr = m->mr;
	reg.key = m->mr->rkey;
	reg.access = IB_ACCESS_REMOTE_READ;

	d = c->tx[c->tx_posted % c->nr_tx].data + KMSGR_RDMA_HDR;
	put_unaligned_be64(m->mr->iova, &d->addr);
	d->rkey = cpu_to_be32(m->mr->rkey);
	d->len = cpu_to_be32(k);
	kmsgr_rdma_fault_offer(c);
	spin_lock_bh(&c->lock);
	/*
	 * Again: a DONE that came while the lock was dropped posted an
	 * invalidation (kmsgr_rdma_pulled(), from the receive completion).
	 * Its completion kicks the owner (tx_wait), which offers again.
	 */
	if (!kmsgr_rdma_may_register(c)) {
		c->tx_wait = true;
		spin_unlock_bh(&c->lock);
		again = true;
		ret = -EAGAIN;
		goto out_unmap;
	}
	trace_kmsgr_rdma_offer(c->qp, &c->peer, k, m->mr->rkey, stage,
			       kmsgr_rdma_sq_ahead(c));
	bad = &reg.wr;
	ret = kmsgr_rdma_post_send(c, KMSGR_RDMA_MSG_PULL, sizeof(*d),
				   &reg.wr, &bad);
	m->offered = !ret;	/* from now on a DONE may name it */
	if (!ret) {
		m->len = k;
		m->end = at + k;
		/* before its invalidation can give it back */
		kmsgr_rdma_charge(c, 0, k);
	} else if (bad != &reg.wr) {
		/*
		 * The registration went out without its PULL: it may be live
		 * over these pages until the QP is destroyed.  The MR stays
		 * busy and mapped (teardown unmaps it) and is never
		 * registered again; the connection ends.
		 */
		kmsgr_rdma_fail(c, ret);
		spin_unlock_bh(&c->lock);
		return ret;
	}
	spin_unlock_bh(&c->lock);
	if (ret)
		goto out_unmap;
	atomic64_add(k, &kmsgr_rdma_stat_offered);
	return k;

out_unmap:
	ib_dma_unmap_sg(c->ibdev, m->sgt.sgl, m->sgt.orig_nents,
			DMA_TO_DEVICE);
out_table:
	sg_free_table(&m->sgt);
out_free:
	spin_lock_bh(&c->lock);
	m->busy = false;
	if (!again)
		kmsgr_rdma_fail(c, ret);
	spin_unlock_bh(&c->lock);
	return ret;

busy:
	c->tx_wait = true;
	spin_unlock_bh(&c->lock);
	return -EAGAIN;
}

/*
 * Send @iov: large pieces as PULLs (kmsgr_rdma_tx_how()), everything else
 * copied into DATA messages, as many as the peer has credits for (DATA
 * keeps the last one for a CREDIT message) and send slots allow.
 */
static ssize_t kmsgr_rdma_send(struct kmsgr_xprt *x,
			       const struct msgr2_iov *iov, int n,
			       const struct kmsgr_xprt_zc *zc, bool more)
{
	struct kmsgr_rdma_conn *c = to_conn(x);
	size_t done = 0, off = 0, room, k;
	enum kmsgr_rdma_tx how;
	struct kmsgr_rdma_buf *b;
	ssize_t got;
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
		how = off ? KMSGR_RDMA_TX_SEND :
			    kmsgr_rdma_tx_how(c, zc, &iov[i]);
		if (how != KMSGR_RDMA_TX_SEND) {
			spin_unlock_bh(&c->lock);
			mutex_lock(&c->mutex);
			got = c->torn ? -ENOTCONN :
			      kmsgr_rdma_offer(c, iov[i].base, iov[i].len,
					       how == KMSGR_RDMA_TX_STAGE,
					       c->tx_stream + done);
			mutex_unlock(&c->mutex);
			spin_lock_bh(&c->lock);
			if (got == -ENOBUFS)
				continue;	/* as DATA after all */
			if (got < 0) {
				ret = got;
				break;
			}
			done += got;
			if (got < iov[i].len) {
				/* the rest next time: it is a new piece then */
				break;
			}
			i++;
			continue;
		}
		if (!kmsgr_rdma_may_stream(c)) {
			ret = -EAGAIN;
			break;
		}
		b = &c->tx[c->tx_posted % c->nr_tx];
		room = min(c->tx_size, c->peer_size) - KMSGR_RDMA_HDR;
		spin_unlock_bh(&c->lock);

		/* the slot is free and only the owner fills slots */
		len = 0;
		while (i < n && len < room &&
		       (off || kmsgr_rdma_tx_how(c, zc, &iov[i]) ==
			       KMSGR_RDMA_TX_SEND)) {
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
		if (!len)
			continue;	/* only empty pieces were left */
		ret = kmsgr_rdma_post_send(c, KMSGR_RDMA_MSG_DATA, len, NULL,
					   NULL);
		if (ret) {
			kmsgr_rdma_fail(c, ret);
			break;
		}
		done += len;
	}
	spin_unlock_bh(&c->lock);
	c->tx_stream += done;
	if (done)
		return done;
	return ret;
}

static int kmsgr_rdma_getname(struct kmsgr_xprt *x,
			      struct sockaddr_storage *ss, bool peer)
{
	struct kmsgr_rdma_conn *c = to_conn(x);

	/* a client's are saved by its CM handler, under the lock */
	spin_lock_bh(&c->lock);
	memcpy(ss, peer ? &c->peer : &c->local, sizeof(*ss));
	spin_unlock_bh(&c->lock);
	return ss->ss_family ? 0 : -ENOTCONN;
}

/*
 * Nothing posted is in flight and the peer read every PULL of a staged
 * copy (all that is left of a lossy payload), or it never will.
 */
static bool kmsgr_rdma_tx_idle(struct kmsgr_rdma_conn *c)
{
	bool idle;
	u32 i;

	spin_lock_bh(&c->lock);
	idle = c->tx_done == c->tx_posted;
	/*
	 * And staged copies not read yet: a lossy message counts as sent.
	 * Not in-place PULLs: their (lossless) messages are resent after a
	 * reconnect, or failed with the session, whatever close() waits for.
	 */
	for (i = 0; i < c->nr_mrs && idle; i++)
		idle = !(c->mrs[i].busy && c->mrs[i].staged);
	idle = idle || c->err || c->detached ||
	       c->state != KMSGR_RDMA_CONNECTED;
	spin_unlock_bh(&c->lock);
	return idle;
}

static void kmsgr_rdma_close(struct kmsgr_xprt *x)
{
	struct kmsgr_rdma_conn *c = to_conn(x);

	spin_lock_bh(&c->lock);
	c->kick = NULL;			/* no kick after this */
	c->closing = true;
	spin_unlock_bh(&c->lock);
	/*
	 * What was handed over goes out, as a TCP close sends what is
	 * queued: a lossy SEND completed when the transport took it.
	 * Disconnecting first would flush the SENDs not yet acknowledged.
	 */
	wait_event_timeout(c->wq, kmsgr_rdma_tx_idle(c),
			   msecs_to_jiffies(KMSGR_RDMA_LINGER_MS));
	kmsgr_rdma_detach(c, -ENOTCONN);
	kmsgr_rdma_conn_put(c);
}

/*
 * For the log of a session that timed out: the connection's credits, work
 * requests in flight and the READ of a PULL, if one is outstanding.
 */
static void kmsgr_rdma_describe(struct kmsgr_xprt *x, char *buf, size_t len)
{
	struct kmsgr_rdma_conn *c = to_conn(x);
	u32 offered = 0, inv = 0, i;
	int n;

	spin_lock_bh(&c->lock);
	for (i = 0; i < c->nr_mrs; i++) {
		offered += c->mrs[i].offered;
		inv += c->mrs[i].inv;
	}
	n = scnprintf(buf, len,
		      "rdma: credits %u, SENDs in flight %u, unread %u, owed %u, PULLs offered %u (%u invalidating), DONEs queued %u",
		      c->credits, c->tx_posted - c->tx_done,
		      c->ready_tail - c->ready_head, c->owed, offered, inv,
		      c->done_tail - c->done_head);
	if (c->rd_posted)
		scnprintf(buf + n, len - n,
			  ", a READ of %u bytes outstanding for %u ms",
			  c->rd_len, jiffies_to_msecs(jiffies - c->rd_at));
	spin_unlock_bh(&c->lock);
}

static const struct kmsgr_xprt_ops kmsgr_rdma_ops = {
	.start		= kmsgr_rdma_start,
	.state		= kmsgr_rdma_state,
	.recv		= kmsgr_rdma_recv,
	.send		= kmsgr_rdma_send,
	.getname	= kmsgr_rdma_getname,
	.close		= kmsgr_rdma_close,
	.describe	= kmsgr_rdma_describe,
	.zc_release	= kmsgr_rdma_zc_release,
};

static int kmsgr_rdma_sa_check(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET || ss->ss_family == AF_INET6 ?
	       0 : -EAFNOSUPPORT;
}

static int kmsgr_rdma_connect(struct net *net, struct kmsgr_xprt_acct *acct,
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
	c->acct = acct;
	c->net_cookie = net->net_cookie;
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

/*
 * Destroy @l's cm_id (close, or its device going away).  The owner hears
 * of it only if the listen had succeeded: a LISTEN that fails (its device
 * removed while it was being set up, too) frees what the kick would
 * reach.
 */
static void kmsgr_rdma_lsn_stop(struct kmsgr_rdma_lsn *l, int err)
{
	mutex_lock(&l->mutex);
	if (l->id) {
		rdma_destroy_id(l->id);	/* no request handler after this */
		l->id = NULL;
		spin_lock_bh(&l->lock);
		l->err = err;
		if (l->kick && l->listening)
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

static int kmsgr_rdma_listen(struct net *net, struct kmsgr_xprt_acct *acct,
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
	l->acct = acct;

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
	kmsgr_rdma_fault_bind();

	/*
	 * Bound to a device whose removal has begun (rdma_cm still has it
	 * until its own removal, after ours), the removal may have scanned
	 * the listeners already: it would then wait forever for this cm_id
	 * (we drop the CM's DEVICE_REMOVAL).  Listed under the lock it sets
	 * dying under, the listener is seen by that scan or sees dying.
	 */
	mutex_lock(&kmsgr_rdma_lock);
	if (l->ibdev && !kmsgr_rdma_dev_live(l->ibdev)) {
		mutex_unlock(&kmsgr_rdma_lock);
		ret = -ENODEV;
		goto out_destroy;
	}
	list_add_tail(&l->node, &kmsgr_rdma_lsns);
	mutex_unlock(&kmsgr_rdma_lock);
	kmsgr_rdma_fault_listen();
	/*
	 * Listed, its device's removal may destroy the cm_id now
	 * (kmsgr_rdma_lsn_stop(), under @l->mutex): listen on it only if it
	 * is still there
	 */
	mutex_lock(&l->mutex);
	ret = l->id ? rdma_listen(l->id, KMSGR_RDMA_BACKLOG) : -ENODEV;
	l->listening = !ret;
	mutex_unlock(&l->mutex);
	if (ret)
		goto out_unlist;
	*out = &l->x;
	return 0;

out_unlist:
	mutex_lock(&kmsgr_rdma_lock);
	list_del_init(&l->node);
	mutex_unlock(&kmsgr_rdma_lock);
out_destroy:
	/* a listen that fails never kicks: its owner frees what it kicks */
	spin_lock_bh(&l->lock);
	l->kick = NULL;
	spin_unlock_bh(&l->lock);
	kmsgr_rdma_lsn_stop(l, ret);
out_free:
	kref_put(&l->ref, kmsgr_rdma_lsn_release);
	return ret;
}

/* ---- RDMA devices (ib_client) ---- */

/*
 * Port @port of @d is down or up, as @why says.  Up, the connections
 * parked while it was down are torn down now (kmsgr_rdma_unpark()).
 */
static void kmsgr_rdma_port_set(struct kmsgr_rdma_dev *d, u32 port,
				bool down, const char *why)
{
	if (down) {
		if (!test_and_set_bit(port, &d->ports_down))
			pr_info("device %s port %u down (%s)\n",
				dev_name(&d->ibdev->dev), port, why);
		return;
	}
	if (test_and_clear_bit(port, &d->ports_down))
		pr_info("device %s port %u up (%s)\n",
			dev_name(&d->ibdev->dev), port, why);
	schedule_work(&d->unpark);
}

/*
 * Whether port @port of @ibdev is down now (@fallback when it cannot be
 * asked), as the core's cache has it: refreshed from the device right
 * before each port event goes to the clients (ib_cache_event_task()), so
 * as fresh as asking the device, which the port event handler must not
 * do: it runs under the device's event_handler_rwsem, and a driver's
 * query_port() may take locks ordered before it (soft-RoCE's usdev_lock,
 * then rtnl through ib_get_eth_speed(); lockdep reports the cycle).
 */
static bool kmsgr_rdma_port_is_down(struct ib_device *ibdev, u32 port,
				    bool fallback)
{
	enum ib_port_state st;

	if (ib_get_cached_port_state(ibdev, port, &st))
		return fallback;
	return st != IB_PORT_ACTIVE && st != IB_PORT_ACTIVE_DEFER;
}

/*
 * Port events (process context): which ports are down.  They come from
 * ib_wq, which may run two of them at once, and late: an IB_EVENT_PORT_ERR
 * handled after the port (and its netdev) came back up again must not mark
 * it down.  The port's state now decides; the event only says to look.
 */
static void kmsgr_rdma_port_event(struct ib_event_handler *eh,
				  struct ib_event *ev)
{
	struct kmsgr_rdma_dev *d = container_of(eh, struct kmsgr_rdma_dev, eh);
	u32 port = ev->element.port_num;

	if (port >= BITS_PER_LONG ||
	    (ev->event != IB_EVENT_PORT_ERR &&
	     ev->event != IB_EVENT_PORT_ACTIVE))
		return;
	if (ev->event == IB_EVENT_PORT_ERR)
		kmsgr_rdma_fault_port_err();
	kmsgr_rdma_port_set(d, port,
			    kmsgr_rdma_port_is_down(d->ibdev, port,
						    ev->event == IB_EVENT_PORT_ERR),
			    ib_event_msg(ev->event));
}

/*
 * The netdev of a device's port goes down or up.  rxe marks its port down
 * at NETDEV_DOWN, once the netdev has stopped, and fails work requests
 * from then on; its port event comes to kmsgr_rdma_port_event() later,
 * from a work item, and a work request failed in between would be taken
 * for the peer's doing (EPROTO, ECONNRESET) rather than the port's: a
 * lossless session would end for good.  GOING_DOWN comes before the
 * netdev stops.  So a device with one port whose netdev this is has that
 * port down from GOING_DOWN (or a carrier lost) and up from UP (or a
 * carrier found), as rxe itself decides; its port events say the same
 * again later.  With more ports, which one is not known here: the port
 * events tell.
 */
static int kmsgr_rdma_netdev_event(struct notifier_block *nb,
				   unsigned long event, void *ptr)
{
	struct net_device *ndev = netdev_notifier_info_to_dev(ptr);
	struct kmsgr_rdma_dev *d;
	struct ib_device *ibdev;
	bool down;
	u32 port;

	switch (event) {
	case NETDEV_GOING_DOWN:
		down = true;
		break;
	case NETDEV_UP:
		down = false;
		break;
	case NETDEV_CHANGE:
		down = !netif_running(ndev) || !netif_carrier_ok(ndev);
		break;
	default:
		return NOTIFY_DONE;
	}
	ibdev = ib_device_get_by_netdev(ndev, RDMA_DRIVER_UNKNOWN);
	if (!ibdev)
		return NOTIFY_DONE;
	port = rdma_start_port(ibdev);
	/* under rtnl: nothing takes rtnl under kmsgr_rdma_lock */
	mutex_lock(&kmsgr_rdma_lock);
	d = kmsgr_rdma_dev_live(ibdev);
	if (d && port == rdma_end_port(ibdev) && port < BITS_PER_LONG)
		kmsgr_rdma_port_set(d, port, down, netdev_name(ndev));
	mutex_unlock(&kmsgr_rdma_lock);
	ib_device_put(ibdev);
	return NOTIFY_DONE;
}

static struct notifier_block kmsgr_rdma_netdev_nb = {
	.notifier_call = kmsgr_rdma_netdev_event,
};

static int kmsgr_rdma_add_one(struct ib_device *ibdev)
{
	struct kmsgr_rdma_dev *d;
	u32 port;

	d = kzalloc(sizeof(*d), GFP_KERNEL);
	if (!d)
		return -ENOMEM;
	d->ibdev = ibdev;
	INIT_LIST_HEAD(&d->conns);
	INIT_LIST_HEAD(&d->parked);
	init_waitqueue_head(&d->wq);
	INIT_WORK(&d->unpark, kmsgr_rdma_unpark);
	INIT_IB_EVENT_HANDLER(&d->eh, ibdev, kmsgr_rdma_port_event);
	ib_register_event_handler(&d->eh);
	rdma_for_each_port(ibdev, port) {
		if (port < BITS_PER_LONG &&
		    kmsgr_rdma_port_is_down(ibdev, port, false))
			set_bit(port, &d->ports_down);
	}
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

	ib_unregister_event_handler(&d->eh);
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
	/* dying, no event handler: nothing queues it again */
	cancel_work_sync(&d->unpark);

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
	kmsgr_rdma_unpark_all(d, false);	/* nobody parks now: dying */
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
	kfree(d);
	pr_info("device %s removed (%u connections failed)\n",
		dev_name(&ibdev->dev), n);
}

static struct ib_client kmsgr_rdma_client = {
	.name	= "kmsgr_rdma",
	.add	= kmsgr_rdma_add_one,
	.remove	= kmsgr_rdma_remove_one,
};

static void kmsgr_rdma_mem(u64 *pinned, u64 *registered)
{
	*pinned = atomic64_read(&kmsgr_rdma_pinned);
	*registered = atomic64_read(&kmsgr_rdma_registered);
}

static int kmsgr_rdma_devices(struct net *net, kmsgr_xprt_dev_fn fn,
			      void *arg)
{
	struct kmsgr_xprt_dev *x;
	struct kmsgr_rdma_conn *c;
	struct kmsgr_rdma_dev *d;
	int ret = 0;

	x = kmalloc(sizeof(*x), GFP_KERNEL);
	if (!x)
		return -ENOMEM;
	mutex_lock(&kmsgr_rdma_lock);
	list_for_each_entry(d, &kmsgr_rdma_devs, node) {
		/* one that only another namespace may use (netns exclusive) */
		if (!rdma_dev_access_netns(d->ibdev, net))
			continue;
		memset(x, 0, sizeof(*x));
		strscpy(x->name, dev_name(&d->ibdev->dev), sizeof(x->name));
		x->index = d->ibdev->index;
		x->ports = rdma_end_port(d->ibdev);
		x->ports_down = READ_ONCE(d->ports_down);
		/*
		 * A device may serve every namespace (netns mode shared): each
		 * sees the connections made in it, not the others'.
		 */
		list_for_each_entry(c, &d->conns, dev_node)
			x->conns += c->net_cookie == net->net_cookie;
		list_for_each_entry(c, &d->parked, dev_node)
			x->parked += c->net_cookie == net->net_cookie;
		x->dying = d->dying;
		ret = fn(x, arg);
		if (ret)
			break;
	}
	mutex_unlock(&kmsgr_rdma_lock);
	kfree(x);
	return ret;
}

static const struct kmsgr_xprt_type kmsgr_xprt_rdma = {
	.id		= KMSGR_XPRT_RDMA,
	.name		= "rdma",
	.owner		= THIS_MODULE,
	.connect	= kmsgr_rdma_connect,
	.listen		= kmsgr_rdma_listen,
	.mem		= kmsgr_rdma_mem,
	.devices	= kmsgr_rdma_devices,
};

static int __init kmsgr_rdma_init(void)
{
	int ret;

	BUILD_BUG_ON(sizeof(struct kmsgr_rdma_cm_priv) != 16);
	BUILD_BUG_ON(sizeof(struct kmsgr_rdma_cm_rej) != 8);
	BUILD_BUG_ON(sizeof(struct kmsgr_rdma_hdr) != 4);
	BUILD_BUG_ON(sizeof(struct kmsgr_rdma_pull) != 16);
	BUILD_BUG_ON(sizeof(struct kmsgr_rdma_done) != 8);

	/*
	 * The notifier before the client, and gone after it: its
	 * unregistration tells it of every netdev that is up as going down,
	 * and it must find no device of ours then.
	 */
	ret = register_netdevice_notifier(&kmsgr_rdma_netdev_nb);
	if (ret)
		return ret;
	ret = ib_register_client(&kmsgr_rdma_client);
	if (ret)
		goto out_notifier;
	ret = kmsgr_xprt_register(&kmsgr_xprt_rdma);
	if (ret)
		goto out_client;
	return 0;

out_client:
	ib_unregister_client(&kmsgr_rdma_client);
out_notifier:
	unregister_netdevice_notifier(&kmsgr_rdma_netdev_nb);
	return ret;
}

static void __exit kmsgr_rdma_exit(void)
{
	/* our module reference count is 0: no session or listener is left */
	kmsgr_xprt_unregister(&kmsgr_xprt_rdma);
	ib_unregister_client(&kmsgr_rdma_client);
	unregister_netdevice_notifier(&kmsgr_rdma_netdev_nb);
}

module_init(kmsgr_rdma_init);
module_exit(kmsgr_rdma_exit);

MODULE_DESCRIPTION("kmsgr RDMA transport: Ceph msgr2 sessions over kernel verbs (rdma_cm, RC QPs), credit flow control");
MODULE_AUTHOR("The kmsgr authors");
MODULE_LICENSE("GPL");
MODULE_VERSION(KMSGR_VERSION);
MODULE_ALIAS("kmsgr-xprt-2");
