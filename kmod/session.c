// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr - sessions: CONNECT, server sessions (accepted by listener.c), the
 * msgr2 engine's callbacks, SEND and inline push, timers, reconnects,
 * backpressure, teardown.  Bytes move through conn_io.c; CQEs and the
 * receive pool are mem.c's.
 *
 * Objects.  A listener (listener.c) owns a listening transport and an
 * accept work item.  A session owns a struct msgr2_session (what survives
 * reconnects) and at most one struct kmsgr_conn: a transport connection
 * plus its msgr2_conn.  Both live in inst->objs under an id; CLOSE (or the
 * final close of the file, close.c) takes them out and tears them down.
 *
 * kmsgr_sess_service() drives everything: transport connect completion,
 * receive (kmsgr_conn_rx_round(): straight into receive-pool slices), send
 * (kmsgr_conn_flush(): straight from the SQE's buffer-area slices in crc
 * mode),
 * msgr2_tick(), reconnect backoff.  It runs from the session's work item,
 * or from an ENTER asleep on the instance (kmsgr_sess_rx_run()); the
 * submitting ENTER writes SENDs itself (kmsgr_sess_push()) when the
 * session lock is free, else leaves them on the session's lock-free
 * sendq to whoever holds it and to the send work.  Socket
 * callbacks only queue the work (plain queue_work) or hand the session to
 * an ENTER waiter.  Timed runs (tick, pause re-check, backoff, resume
 * timeout) go through one timer per instance (kmsgr_sess_arm()).  Each run
 * handles at most KMSGR_SESS_BUDGET receive rounds.
 *
 * Events (KMSGR_CQE_EVENT, user_data of the session or of its listener):
 *   client    UP at each READY; lossless: DOWN (reason) once per outage,
 *             then reconnects with backoff (new socket, new msgr2_conn,
 *             same msgr2_session) until UP; lossy: CLOSED (reason), dead.
 *   server    ACCEPTED then UP at the first READY (no event before: a
 *             connection that fails its handshake vanishes); lossless:
 *             DOWN (reason) when the connection is lost, UP when the client
 *             resumes the session on a new connection; lossy: CLOSED.
 *   both      RESET when the peer reset the session; CLOSED (reason NONE)
 *             as the last CQE of a session after CLOSE, unless CLOSED was
 *             posted already.
 * A dead client session keeps its id (SENDs fail with -EPIPE) until CLOSE;
 * a dead server session retires (kmsgr_sess_reap()): its id goes away
 * after its CLOSED.  Server sessions before their first READY are embryos
 * of their listener (see struct kmsgr_listener): no id, no CQE.
 *
 * Locking (see also kmsgr.h): inst->lock is held by main.c around
 * CONNECT/LISTEN, and by CLOSE while it takes the id out of inst->objs
 * (not across the grace period).  kmsgr_sess_send() and
 * kmsgr_sess_resume() need no instance lock (a lock-free list, an RCU
 * walk): ENTER calls the first under submit_lock, the block path's link
 * work and poller without it.
 * sess->lock serialises every engine call of the session; a SEND is put
 * on sess->sendq without it and given to the engine by the next holder
 * (kmsgr_sess_take_sendq(): the push, the work, the send work, teardown).
 * The send work holds its own reference, so teardown need not wait for
 * it.  Whoever unlocks sess->lock holds a reference, is the session's
 * own work (teardown cancels it) or is CONNECT (under inst->lock, which
 * CLOSE needs): mutex_unlock() may still touch the lock after a waiter
 * took it, ran the session to its end and let it go.
 * The only nesting of two session locks is a fresh, never announced
 * server session (its work, or an ENTER that runs it) taking an
 * established one of the same listener while the client resumes it
 * (attach); the reverse never happens.  Work items never
 * take inst->lock.  Objects are found under RCU with a reference
 * (kref_get_unless_zero); teardown removes them from inst->objs, waits for
 * an RCU grace period (socket callbacks and kmsgr_sess_resume() run inside
 * one), takes the session off the instance's timer list, then cancels the
 * work.  inst->timer_lock (any context) guards inst->timed and each
 * session's place and time on it.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/jiffies.h>
#include <linux/kref.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/log2.h>
#include <linux/math64.h>
#include <linux/memcontrol.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/random.h>
#include <linux/rcupdate.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/timer.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include <linux/kmsgr_netlink.h>

#include "kmsgr.h"
#include "log.h"
#include "session.h"
#include "trace/kmsgr_trace.h"

#define KMSGR_SESS_BUDGET		64	/* receive rounds per work run */
#define KMSGR_SESS_TICK_MS		1000	/* msgr2_tick() period */
#define KMSGR_SESS_PAUSED_MS		20	/* re-check while paused */
#define KMSGR_SESS_STALL_S		10	/* paused that long: log it */
#define KMSGR_SESS_KEEPALIVE_MS		10000
#define KMSGR_SESS_BACKOFF_MIN_MS	100
#define KMSGR_SESS_BACKOFF_MAX_MS	15000
/* secure mode: the tx scratch holds one message's sealed tail */
#define KMSGR_SESS_SCRATCH_LEN		(KMSGR_SECURE_MSG_MAX + 4096)
#define KMSGR_SESS_SCRATCH_MIN		(16U << 10)

struct workqueue_struct *kmsgr_wq;
static struct kmem_cache *kmsgr_tx_cache;
/* global_seq values of our connections, and server-assigned global ids */
static atomic64_t kmsgr_global_seq = ATOMIC64_INIT(0);
static atomic64_t kmsgr_global_id = ATOMIC64_INIT(4096);

/*
 * The registry of open instances, in id order (netlink walks it): ids are
 * given out under its mutex, so the list stays sorted.
 */
static DEFINE_MUTEX(kmsgr_insts_lock);
static LIST_HEAD(kmsgr_insts);
static u64 kmsgr_insts_next_id;

/* module-wide counters (struct kmsgr_stats): per CPU, summed when read */
static DEFINE_PER_CPU(struct kmsgr_stats, kmsgr_pcpu_stats);
#define kmsgr_count(field, n)	this_cpu_add(kmsgr_pcpu_stats.field, (n))

/* where events go besides the CQ (netlink's monitor group), or NULL */
static const struct kmsgr_notifier __rcu *kmsgr_notifier;

static const struct msgr2_ops kmsgr_sess_client_ops;
static const struct msgr2_ops kmsgr_sess_server_ops;
static void kmsgr_sess_reap(struct work_struct *work);
static void kmsgr_sess_service(struct kmsgr_sess *s);
static void kmsgr_sess_end(struct kmsgr_sess *s, u16 reason, int res);
static void kmsgr_sess_conn_free(struct kmsgr_conn *kc);

static unsigned long kmsgr_secs(unsigned int secs)
{
	return msecs_to_jiffies(secs * 1000U);
}

/* ---- objects ------------------------------------------------------------ */

static void kmsgr_obj_release(struct kref *ref);

void kmsgr_obj_put(struct kmsgr_obj *obj)
{
	kref_put(&obj->ref, kmsgr_obj_release);
}

static void kmsgr_obj_release(struct kref *ref)
{
	struct kmsgr_obj *obj = container_of(ref, struct kmsgr_obj, ref);

	if (obj->kind == KMSGR_OBJ_SESS) {
		struct kmsgr_sess *s = container_of(obj, struct kmsgr_sess, obj);
		struct kmsgr_instance *inst = obj->inst;

		if (s->listener)
			kmsgr_obj_put(&s->listener->obj);
		kmsgr_xprt_put(s->xtype);	/* its transport is closed */
		mutex_destroy(&s->lock);
		kfree(s);
		/* kmsgr_close_all() waits for this; @inst only as a key */
		if (atomic_dec_and_test(&inst->nr_live))
			wake_up_var(&inst->nr_live);
	} else {
		struct kmsgr_listener *l = container_of(obj,
							struct kmsgr_listener,
							obj);

		/* the secrets: sessions hold a reference while they use them */
		kvfree_sensitive(l->keys, l->n_keys * sizeof(*l->keys));
		kmsgr_xprt_put(l->xtype);
		kfree(l);
	}
}

static struct kmsgr_obj *kmsgr_obj_get(struct kmsgr_instance *inst, u32 id)
{
	struct kmsgr_obj *obj;

	rcu_read_lock();
	obj = xa_load(&inst->objs, id);
	if (obj && !kref_get_unless_zero(&obj->ref))
		obj = NULL;
	rcu_read_unlock();
	return obj;
}

/*
 * A new id (cyclic from 1) into *@id, its slot reserved: a lookup (SEND,
 * CLOSE) finds nothing there until kmsgr_obj_publish(), so an object that
 * fails before then is its creator's alone.  xa_release() gives it back.
 */
int kmsgr_obj_reserve(struct kmsgr_instance *inst, u32 *id)
{
	int ret;

	ret = xa_alloc_cyclic(&inst->objs, id, NULL, xa_limit_31b,
			      &inst->next_id, GFP_KERNEL);
	return ret < 0 ? ret : 0;
}

/*
 * Put @obj into the slot kmsgr_obj_reserve() gave it (@obj->id): from now
 * on whoever takes it out of inst->objs tears it down.  The slot exists
 * and nothing erases a reservation (see CLOSE), so the store allocates
 * nothing: it cannot fail, and any context may call this.  xa_cmpxchg()
 * would not do: it sees the reservation, not NULL, and stores nothing.
 */
int kmsgr_obj_publish(struct kmsgr_instance *inst, struct kmsgr_obj *obj)
{
	return WARN_ON_ONCE(xa_err(xa_store(&inst->objs, obj->id, obj,
					    GFP_ATOMIC)));
}

/* Count a session against kmsgr_max_sessions. */
int kmsgr_sess_charge(struct kmsgr_instance *inst)
{
	/* destroy_all() may skip its grace periods only if never set */
	WRITE_ONCE(inst->objs_used, true);
	if (atomic_inc_return(&inst->nr_sessions) >
	    (int)READ_ONCE(kmsgr_max_sessions)) {
		atomic_dec(&inst->nr_sessions);
		return -ENOSPC;
	}
	return 0;
}

/* ---- CQEs --------------------------------------------------------------- */

/* An event of a session or a listener: its id and user_data. */
static void kmsgr_obj_snap(struct kmsgr_obj *obj, struct kmsgr_obj_info *info);

/*
 * Tell the notifier, if it wants to know.  A session's events under its
 * lock; a listener's with no lock held (its snapshot takes what it needs).
 */
static void kmsgr_obj_notify(struct kmsgr_obj *obj, u8 ev, u16 reason,
			     int res)
{
	const struct kmsgr_notifier *n;
	struct kmsgr_obj_info *info;

	rcu_read_lock();
	n = rcu_dereference(kmsgr_notifier);
	if (!n || !n->want(obj->inst)) {
		rcu_read_unlock();
		return;
	}
	rcu_read_unlock();
	/*
	 * @n stays: netlink.c clears it before its module text can go, and
	 * only after the misc device is gone (no session is left then).
	 */
	info = kmalloc(sizeof(*info), GFP_KERNEL);
	if (!info)
		return;		/* a monitor misses one event: not fatal */
	kmsgr_obj_snap(obj, info);
	n->event(obj->inst, info, ev, reason, res);
	kfree(info);
}

static void kmsgr_obj_post(struct kmsgr_obj *obj, u8 ev, u16 reason, int res,
			   u32 key, bool note)
{
	struct kmsgr_cqe cqe = {
		.user_data = obj->user_data,
		.res = res,
		.kind = KMSGR_CQE_EVENT,
		.event = ev,
		.reason = reason,
		.session = obj->id,
		.tid = key,
	};

	trace_kmsgr_event(obj, ev, reason, res);
	if (note)
		kmsgr_cq_post_note(obj->inst, &cqe);
	else
		kmsgr_cq_post_event(obj->inst, &cqe);
}

/*
 * Server, cephx: 1 + the index of the listener key @s's connection
 * authenticated with (its own engine configuration did the auth); 0 none.
 */
static u32 kmsgr_sess_auth_key(const struct kmsgr_sess *s)
{
	return s->cephx_server ?
	       msgr2_auth_cephx_server_who(s->cephx_server) + 1 : 0;
}

static void kmsgr_sess_event(struct kmsgr_sess *s, u8 ev, u16 reason, int res)
	__must_hold(&s->lock)
{
	/* ACCEPTED and UP say who the peer authenticated as */
	if (!s->no_cq)
		kmsgr_obj_post(&s->obj, ev, reason, res,
			       ev == KMSGR_EV_ACCEPTED || ev == KMSGR_EV_UP ?
			       s->peer_key : 0, false);
	kmsgr_obj_notify(&s->obj, ev, reason, res);
}

/*
 * Post a SEND completion or a RECV (kmsgr_cq_post()).  Inside a batch (a
 * run of the session, a push: kmsgr_sess_batch_begin/end(), under
 * s->lock) the waiters are woken once, at the end of the batch.
 */
static int kmsgr_sess_post(struct kmsgr_sess *s, const struct kmsgr_cqe *cqe,
			   unsigned int flags)
{
	int ret;

	if (s->cq_quiet)
		flags |= KMSGR_CQ_QUIET;
	ret = kmsgr_cq_post(s->obj.inst, cqe, flags);
	if (!ret && s->cq_quiet)
		s->cq_owed = true;
	return ret;
}

static void kmsgr_sess_batch_begin(struct kmsgr_sess *s)
	__must_hold(&s->lock)
{
	s->cq_quiet = true;
}

static void kmsgr_sess_batch_end(struct kmsgr_sess *s)
	__must_hold(&s->lock)
{
	s->cq_quiet = false;
	if (s->cq_owed) {
		s->cq_owed = false;
		kmsgr_cq_wake(s->obj.inst);
	}
}

/* A SEND is finished: its reserved CQ slot gets the result. */
static void kmsgr_sess_tx_complete(struct kmsgr_sess *s, struct msgr2_msg *m,
				   int status)
{
	struct kmsgr_tx *tx = container_of(m, struct kmsgr_tx, m);
	struct kmsgr_cqe cqe = {
		.user_data = tx->user_data,
		.res = status,
		.kind = KMSGR_CQE_SEND,
		.session = s->obj.id,
	};

	s->in_flight--;
	if (!status) {
		u64 bytes = (u64)m->seg[0].len + m->seg[1].len + m->seg[2].len;

		s->msgs_out++;
		s->bytes_out += bytes;
		kmsgr_count(msgs_out, 1);
		kmsgr_count(bytes_out, bytes);
	}
	trace_kmsgr_msg_send_done(s, m, status);
	/* no_cq: the instance is going away */
	if (!s->no_cq && !status && tx->skip_success)
		kmsgr_sess_unreserve(s->obj.inst);
	else if (!s->no_cq)
		kmsgr_sess_post(s, &cqe, KMSGR_CQ_RESERVED);
	kmem_cache_free(kmsgr_tx_cache, tx);
}

static void kmsgr_sess_drain_done(void *priv, struct msgr2_msg *m, int status)
{
	kmsgr_sess_tx_complete(priv, m, status);
}

/*
 * Give the SENDs on @s->sendq to the engine, oldest first.  On a session
 * that has ended they complete at once: -EPIPE when it is DEAD (as a SEND
 * to it is refused), -ECONNRESET when it is torn down (as the SENDs it
 * had queued are drained).
 */
static void kmsgr_sess_take_sendq(struct kmsgr_sess *s)
	__must_hold(&s->lock)
{
	struct kmsgr_tx *tx, *next;
	struct llist_node *list;
	int ret;

	if (llist_empty(&s->sendq))
		return;
	list = llist_reverse_order(llist_del_all(&s->sendq));
	llist_for_each_entry_safe(tx, next, list, sq_node) {
		s->in_flight++;
		if (s->state == KMSGR_SESS_DEAD)
			ret = -EPIPE;
		else if (s->state == KMSGR_SESS_CLOSED)
			ret = -ECONNRESET;
		else
			ret = msgr2_send(&s->ms, &tx->m);
		trace_kmsgr_msg_send(s, &tx->m, ret);
		if (ret)
			kmsgr_sess_tx_complete(s, &tx->m, ret);
		else
			s->active_at = jiffies;
	}
}

/*
 * The take of a lock holder that did not submit the SENDs (a flush, a
 * service run).  In a test build with KMSGR_FAULT_SEND_WORK set they wait
 * on the list for the send work or the session's end instead, so that a
 * CLOSE finds them there for as long as the send work waits.
 */
static void kmsgr_sess_holder_take(struct kmsgr_sess *s)
	__must_hold(&s->lock)
{
	if (!kmsgr_fault_set(KMSGR_FAULT_SEND_WORK))
		kmsgr_sess_take_sendq(s);
}

/*
 * Mark the session as waiting (or no longer waiting) for CQ or pool room.
 * Set it BEFORE the attempt that may fail: a kmsgr_sess_resume() that
 * follows the failure then sees it and kicks the work.
 */
static void kmsgr_sess_set_paused(struct kmsgr_sess *s, bool paused)
{
	if (paused && !s->paused)
		s->paused_at = jiffies;
	WRITE_ONCE(s->paused, paused);
	/* pairs with kmsgr_sess_resume(): room made before it looks */
	smp_mb();
}

/* Give a message's slices back, undelivered (kmsgr_sess_pool_freed()). */
static void kmsgr_sess_free_msg(struct kmsgr_instance *inst,
				const struct kmsgr_slice *seg)
{
	kmsgr_pool_free_msg(inst, seg, MSGR2_NSEG);
	kmsgr_sess_pool_freed(inst);
}

/*
 * Try to post a held RECV; true when none is held any more.  On failure
 * the session stays paused: ENTER or poll() resumes it once the CQ has
 * room again, whatever state it is in.
 */
static bool kmsgr_sess_flush_held(struct kmsgr_sess *s)
{
	const struct kmsgr_slice *seg = s->rx_cqe.seg;
	u32 bytes;

	if (!s->rx_held)
		return true;
	if (s->no_cq || s->state == KMSGR_SESS_CLOSED) {
		kmsgr_sess_free_msg(s->obj.inst, s->rx_cqe.seg);
		s->rx_held = false;
		return true;
	}
	/* before the post: its failure marks the CQ paused */
	kmsgr_sess_set_paused(s, true);
	if (kmsgr_sess_post(s, &s->rx_cqe, 0))
		return false;
	s->rx_held = false;
	kmsgr_sess_set_paused(s, false);
	/* delivered now: a held RECV that teardown drops is not counted */
	bytes = seg[0].len + seg[1].len + seg[2].len;
	s->msgs_in++;
	s->bytes_in += bytes;
	kmsgr_count(msgs_in, 1);
	kmsgr_count(bytes_in, bytes);
	return true;
}

/*
 * @s lost its connection: a pause for that connection's message (no CQ or
 * pool room for it) ends with it; held and spilled messages still wait.
 * Left set, the next connection's silence was never timed
 * (keepalive_timeout) and a stall was reported for it.
 */
static void kmsgr_sess_conn_unpause(struct kmsgr_sess *s)
{
	kmsgr_sess_set_paused(s, s->rx_held || !list_empty(&s->spill));
}

/* ---- engine callbacks (all under the owner's lock) ----------------------- */

/*
 * The session a connection's callbacks belong to: its owner, or the
 * session it is taking over while a client resumes it (attach).
 */
static struct kmsgr_sess *kmsgr_conn_owner(struct kmsgr_conn *kc)
{
	if (kc->adopt && msgr2_conn_session(kc->mc) == &kc->adopt->ms)
		return kc->adopt;
	return kc->sess;
}

static u32 kmsgr_msg_bytes(const u32 *len)
{
	return len[0] + len[1] + len[2];
}

/*
 * A lossless session whose next message finds the pool full takes it into
 * kernel memory (up to rx_spill_max bytes per session) and reads on: the
 * pool may be held by its own sends, waiting for acks that the peer sent
 * behind this very message.  0 when spilled, -EAGAIN to wait.
 */
static int kmsgr_conn_rx_spill(struct kmsgr_conn *kc, struct kmsgr_sess *s,
			       struct msgr2_rx_msg *m)
{
	u32 total = kmsgr_msg_bytes(m->len), off = 0;
	u32 max = READ_ONCE(kmsgr_rx_spill_max);	/* once: root may set it */
	struct kmsgr_spill *sp;
	int i;

	if (s->ms.lossy || s->spill_bytes >= max ||
	    total > max - s->spill_bytes)
		return -EAGAIN;
	sp = kvmalloc(struct_size(sp, data, total),
		      GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!sp)
		return -EAGAIN;
	for (i = 0; i < MSGR2_NSEG; i++) {
		sp->len[i] = m->len[i];
		if (m->len[i])
			m->buf[i] = sp->data + off;
		off += m->len[i];
	}
	kc->rx_spill = sp;
	s->spill_bytes += total;
	return 0;
}

static int kmsgr_conn_rx_alloc(void *priv, struct msgr2_rx_msg *m)
{
	struct kmsgr_conn *kc = priv;
	struct kmsgr_sess *s = kmsgr_conn_owner(kc);
	struct kmsgr_instance *inst = s->obj.inst;
	int i, ret;

	BUILD_BUG_ON(KMSGR_NSEG != MSGR2_NSEG);
	for (i = 0; i < MSGR2_NSEG; i++)
		m->buf[i] = NULL;
	/* larger than the pool takes: it would never fit, nor leave a spill */
	if (kmsgr_pool_too_big(inst, m->len, MSGR2_NSEG)) {
		kmsgr_sess_warn_ratelimited(s, "a %u+%u+%u-byte message cannot fit the %llu-byte receive pool\n",
					    m->len[0], m->len[1], m->len[2],
					    inst->buf_size - inst->pool_off);
		return -EMSGSIZE;
	}
	kmsgr_sess_set_paused(s, true);
	kc->rx_waits = true;	/* until the message has a place */
	if (s->rx_held || !kmsgr_cq_room(inst))
		return -EAGAIN;
	/* behind spilled messages: spill too (order), or wait */
	if (!list_empty(&s->spill)) {
		ret = kmsgr_conn_rx_spill(kc, s, m);
		goto placed;
	}
	/* the whole message at once, or nothing: waits never hold a part */
	ret = kmsgr_pool_alloc_msg(inst, s->obj.id, m->len, kc->rx_off,
				   MSGR2_NSEG);
	if (ret) {
		ret = kmsgr_conn_rx_spill(kc, s, m);
		goto placed;
	}
	for (i = 0; i < MSGR2_NSEG; i++)
		if (m->len[i])
			m->buf[i] = kmsgr_buf_ptr(inst, kc->rx_off[i],
						  m->len[i]);
placed:
	if (ret)
		return -EAGAIN;
	kc->rx_msg_at = jiffies | 1;	/* msg_timeout runs from here */
	kc->rx_waits = false;
	/*
	 * Spilled messages wait for pool room: stay where resume finds us,
	 * reading on (the peer's silence is timed again).
	 */
	kmsgr_sess_set_paused(s, kc->rx_spill || !list_empty(&s->spill));
	return 0;
}

/*
 * Hand a received message to the application: its RECV CQE, or held in
 * @rx_cqe while the CQ has no room (reading stops until it is posted).
 */
static void kmsgr_sess_deliver(struct kmsgr_sess *s,
			       const struct msgr2_msg_hdr *hdr,
			       const u32 *off, const u32 *len)
{
	struct kmsgr_cqe *cqe = &s->rx_cqe;
	int i;

	trace_kmsgr_msg_recv(s, hdr, len);
	memset(cqe, 0, sizeof(*cqe));
	for (i = 0; i < MSGR2_NSEG; i++) {
		if (!len[i])
			continue;
		cqe->seg[i].off = off[i];
		cqe->seg[i].len = len[i];
	}
	if (s->no_cq) {
		kmsgr_sess_free_msg(s->obj.inst, cqe->seg);
		return;
	}
	s->active_at = jiffies;
	cqe->user_data = s->obj.user_data;
	/* the slices take it when the CQE is posted (kmsgr_cq_post()) */
	cqe->res = kmsgr_pool_token(s->obj.inst);
	cqe->kind = KMSGR_CQE_RECV;
	cqe->session = s->obj.id;
	cqe->type = hdr->type;
	cqe->version = hdr->version;
	cqe->seq = hdr->seq;
	cqe->tid = hdr->tid;
	/* room was checked before; if another session took it, hold */
	s->rx_held = true;
	kmsgr_sess_flush_held(s);
}

/*
 * Deliver spilled messages, oldest first, while the CQ and the pool have
 * room: each is copied into the pool.  True when none is left, the last
 * one posted too: another session may take the CQ slot it was checked
 * for before it is posted (then it is held, and a CLOSED paid now would
 * go before it).
 */
static bool kmsgr_sess_drain_spill(struct kmsgr_sess *s)
	__must_hold(&s->lock)
{
	struct kmsgr_instance *inst = s->obj.inst;
	struct kmsgr_spill *sp;
	u32 off[MSGR2_NSEG], pos;
	int i;

	while ((sp = list_first_entry_or_null(&s->spill, struct kmsgr_spill,
					      node))) {
		if (!kmsgr_sess_flush_held(s))
			return false;
		/* again: a held RECV posted just now cleared it */
		kmsgr_sess_set_paused(s, true);
		if (!kmsgr_cq_room(inst) ||
		    kmsgr_pool_alloc_msg(inst, s->obj.id, sp->len, off,
					 MSGR2_NSEG))
			return false;
		for (i = 0, pos = 0; i < MSGR2_NSEG; i++) {
			if (sp->len[i])
				memcpy(kmsgr_buf_ptr(inst, off[i], sp->len[i]),
				       sp->data + pos, sp->len[i]);
			pos += sp->len[i];
		}
		list_del(&sp->node);
		s->spill_bytes -= kmsgr_msg_bytes(sp->len);
		kmsgr_sess_deliver(s, &sp->hdr, off, sp->len);
		kvfree(sp);
	}
	kmsgr_sess_set_paused(s, s->rx_held);
	return !s->rx_held;
}

/* Deliver what waits (a held CQE, spilled messages); true when none does. */
static bool kmsgr_sess_flush_rx(struct kmsgr_sess *s)
	__must_hold(&s->lock)
{
	if (!kmsgr_sess_flush_held(s))
		return false;
	if (list_empty(&s->spill))
		return true;
	if (s->no_cq || s->state == KMSGR_SESS_CLOSED)
		return true;	/* freed with the session */
	return kmsgr_sess_drain_spill(s);
}

static void kmsgr_conn_rx_msg(void *priv, struct msgr2_rx_msg *m, int status)
{
	struct kmsgr_conn *kc = priv;
	struct kmsgr_sess *s = kmsgr_conn_owner(kc);
	struct kmsgr_spill *sp = kc->rx_spill;
	struct kmsgr_slice seg[MSGR2_NSEG] = { };
	/*
	 * Ended by the connection's failure, not received whole (a dropped
	 * duplicate or an aborted frame is): the transport, still open, may
	 * yet write into it (a READ under way), so it is freed after close
	 */
	bool later = status && status != -EALREADY && status != -ECANCELED &&
		     kc->xprt && !kc->doomed_spill && !kc->doomed_inst;
	int i;

	kc->rx_msg_at = 0;
	for (i = 0; i < MSGR2_NSEG; i++)
		m->buf[i] = NULL;
	if (sp) {
		kc->rx_spill = NULL;
		if (status || s->no_cq) {
			s->spill_bytes -= kmsgr_msg_bytes(sp->len);
			if (later)
				kc->doomed_spill = sp;
			else
				kvfree(sp);
			return;
		}
		sp->hdr = m->hdr;
		list_add_tail(&sp->node, &s->spill);
		s->active_at = jiffies;
		kmsgr_sess_drain_spill(s);
		return;
	}
	if (status || s->no_cq) {
		for (i = 0; i < MSGR2_NSEG; i++) {
			seg[i].off = kc->rx_off[i];
			seg[i].len = m->len[i];
		}
		if (later) {
			kc->doomed_inst = s->obj.inst;
			memcpy(kc->doomed, seg, sizeof(seg));
		} else {
			kmsgr_sess_free_msg(s->obj.inst, seg);
		}
		return;
	}
	kmsgr_sess_deliver(s, &m->hdr, kc->rx_off, m->len);
}

/*
 * A client resumed @s on a new connection while the old one was still up:
 * the old one ends (DOWN, once, before the UP that READY posts).
 */
static void kmsgr_sess_down_replaced(struct kmsgr_sess *s)
	__must_hold(&s->lock)
{
	if (s->down_posted)
		return;
	s->down_posted = true;
	kmsgr_sess_event(s, KMSGR_EV_DOWN, KMSGR_REASON_LOCAL, -ECONNRESET);
}

static void kmsgr_conn_tx_done(void *priv, struct msgr2_msg *m, int status)
{
	struct kmsgr_conn *kc = priv;
	struct kmsgr_sess *s = kmsgr_conn_owner(kc);
	struct kmsgr_xprt *x = kc->xprt;
	struct kmsgr_conn *old = s->conn;

	/*
	 * A session being resumed on @kc (kmsgr_conn_attach()) completes
	 * what the peer says it had: its old connection, which
	 * kmsgr_conn_settle() would end only later, may still offer pieces
	 * of it to the peer (RDMA PULLs).  It ends now, before the CQE, and
	 * says so as READY would have (DOWN before the UP).
	 */
	if (old && old != kc) {
		s->conn = NULL;
		kmsgr_sess_conn_free(old);
		kmsgr_sess_down_replaced(s);
	}

	/*
	 * Lossless, written on this connection: nothing of it stays
	 * readable by the peer once its CQE is out.  (A lossy message
	 * completes once written; the transport offers only copies of it.)
	 */
	if (x && x->ops->zc_release && m->tx_end && !s->ms.lossy)
		x->ops->zc_release(x, m->tx_end, !status);
	kmsgr_sess_tx_complete(s, m, status);
}

/*
 * A listener refused a connection or a session: tell its owner (an event
 * on the listener's id) and the log, with the peer's address.
 */
static void kmsgr_listener_refused(struct kmsgr_listener *l,
				   const struct sockaddr_storage *peer,
				   u16 reason, int err)
{
	kmsgr_inst_warn_ratelimited(l->obj.inst, "listener %u: refused %pISpc: %d\n",
				    l->obj.id, peer, err);
	spin_lock(&l->lock);
	l->refused++;
	spin_unlock(&l->lock);
	kmsgr_count(refused, 1);
	/* a peer may connect as fast as it likes: an event that may be left out */
	kmsgr_obj_post(&l->obj, KMSGR_EV_REFUSED, reason, err, 0, true);
	kmsgr_obj_notify(&l->obj, KMSGR_EV_REFUSED, reason, err);
}

/*
 * A listener's transport will accept nothing more (its RDMA device went
 * away, @err -ENODEV): tell its owner once, an event that is never left
 * out, so that it knows to CLOSE it.
 */
void kmsgr_listener_stopped(struct kmsgr_listener *l, int err)
{
	kmsgr_inst_warn(l->obj.inst, "listener %u: its device went away: accepting nothing more (%d)\n",
			l->obj.id, err);
	kmsgr_obj_post(&l->obj, KMSGR_EV_REFUSED, KMSGR_REASON_DEVICE, err, 0,
		       false);
	kmsgr_obj_notify(&l->obj, KMSGR_EV_REFUSED, KMSGR_REASON_DEVICE, err);
}

/*
 * Take an embryo off its listener's list.  Returns true when it was there:
 * the caller owns it from now on (teardown or announce).
 */
static bool kmsgr_embryo_unlink(struct kmsgr_sess *s)
{
	struct kmsgr_listener *l = s->listener;
	bool was;

	spin_lock(&l->lock);
	was = s->embryo_linked;
	if (was) {
		list_del_init(&s->embryo);
		s->embryo_linked = false;
		l->nr_embryos--;
	}
	spin_unlock(&l->lock);
	return was;
}

/*
 * Server: the handshake of an embryo reached READY.  Charge it against
 * max_sessions and publish it in inst->objs under a new id, so that the
 * application can use it from its ACCEPTED on.  Order: charge (so that a
 * refusal at the limit takes no id), reserve the id (may allocate), then
 * unlink from the listener and store into the reserved slot under the
 * listener's lock (no allocation), so that a listener teardown either
 * still finds it on its list or finds it in inst->objs, never neither.
 * Returns 0 or -errno (then the caller fails the connection and the
 * embryo is reaped as usual).
 */
static int kmsgr_sess_announce(struct kmsgr_sess *s, struct kmsgr_conn *kc)
	__must_hold(&s->lock)
{
	struct kmsgr_instance *inst = s->obj.inst;
	struct kmsgr_listener *l = s->listener;
	struct sockaddr_storage peer;
	u32 id;
	int ret;

	/* the application reads no events: see KMSGR_CQ_OVERFLOW_ACCEPT */
	ret = kmsgr_cq_backlogged(inst) ? -EBUSY : 0;
	if (ret)
		goto out_refused;
	ret = kmsgr_sess_charge(inst);
	if (ret)
		goto out_refused;
	ret = kmsgr_obj_reserve(inst, &id);
	if (ret)
		goto out_uncharge;

	spin_lock(&l->lock);
	if (l->closing || !s->embryo_linked) {
		spin_unlock(&l->lock);
		ret = -ESHUTDOWN;
		goto out_release;
	}
	s->obj.id = id;
	ret = kmsgr_obj_publish(inst, &s->obj);
	if (ret) {
		spin_unlock(&l->lock);
		s->obj.id = 0;
		goto out_release;
	}
	list_del_init(&s->embryo);
	s->embryo_linked = false;
	l->nr_embryos--;
	l->accepted++;
	WRITE_ONCE(s->announced, true);
	spin_unlock(&l->lock);
	kmsgr_count(accepts, 1);
	s->peer_key = kmsgr_sess_auth_key(s);
	kmsgr_sess_event(s, KMSGR_EV_ACCEPTED, 0, 0);
	return 0;

out_release:
	xa_release(&inst->objs, id);
out_uncharge:
	atomic_dec(&inst->nr_sessions);
out_refused:
	if (ret != -ESHUTDOWN && kc->xprt &&
	    !kc->xprt->ops->getname(kc->xprt, &peer, true))
		kmsgr_listener_refused(l, &peer,
				       ret == -ENOSPC ? KMSGR_REASON_SESSIONS :
				       ret == -EBUSY ? KMSGR_REASON_BUSY :
				       KMSGR_REASON_NOMEM, ret);
	return ret;
}

static void kmsgr_conn_event(void *priv, enum msgr2_event ev, u64 arg)
{
	struct kmsgr_conn *kc = priv;
	struct kmsgr_sess *s = kmsgr_conn_owner(kc);

	switch (ev) {
	case MSGR2_EV_READY:
		if (s->server && !s->announced &&
		    kmsgr_sess_announce(s, kc)) {
			msgr2_conn_fail(kc->mc, MSGR2_R_LOCAL);
			break;
		}
		/*
		 * A resumed session whose old connection was still up: the
		 * engine ended it just now; DOWN before this UP.
		 */
		if (s->conn && s->conn != kc)
			kmsgr_sess_down_replaced(s);
		kc->rx_at = jiffies;
		s->active_at = jiffies;
		WRITE_ONCE(s->state, KMSGR_SESS_UP);
		s->backoff_ms = 0;
		s->down_posted = false;
		if (s->ups++)
			kmsgr_count(reconnects, 1);
		kmsgr_sess_event(s, KMSGR_EV_UP, 0, 0);
		break;
	case MSGR2_EV_SESSION_RESET:
		if (s->announced || !s->server)
			kmsgr_sess_event(s, KMSGR_EV_RESET, 0, 0);
		break;
	case MSGR2_EV_AUTH_DONE:
		WRITE_ONCE(s->con_mode, (u8)arg);
		break;
	default:
		break;
	}
}

static u64 kmsgr_next_global_seq(void *priv, u64 at_least)
{
	s64 cur = atomic64_read(&kmsgr_global_seq);

	/* raise the counter to @at_least, then take the next value */
	while (cur < (s64)at_least &&
	       !atomic64_try_cmpxchg(&kmsgr_global_seq, &cur, (s64)at_least))
		;
	return (u64)atomic64_inc_return(&kmsgr_global_seq);
}

/*
 * Server: a client resumes a session (SESSION_RECONNECT).  Look for an
 * established session of the same listener with that client cookie and
 * lock it: it stays locked, with a reference, until kmsgr_conn_settle()
 * after this msgr2_rx_done() returns (nesting: see the header comment).
 */
static struct msgr2_session *kmsgr_conn_attach(void *priv,
					       struct msgr2_conn *c,
					       const struct msgr2_addrvec *addrs,
					       u64 client_cookie,
					       u64 server_cookie,
					       bool reconnect)
{
	struct kmsgr_conn *kc = priv;
	struct kmsgr_sess *self = kc->sess, *x = NULL, *cand;
	struct kmsgr_instance *inst = self->obj.inst;
	struct sockaddr_storage peer;
	struct kmsgr_obj *obj;
	unsigned long idx;

	if (!reconnect || !client_cookie)
		return NULL;
	if (kc->adopt)		/* a retry on this connection */
		return &kc->adopt->ms;
	/*
	 * The application reads no events (KMSGR_CQ_OVERFLOW_ACCEPT): a
	 * resume would add DOWN and UP to the list, again and again.  The
	 * connection fails, with no RESET: the client keeps its session
	 * and tries again later.
	 */
	if (kmsgr_cq_backlogged(inst)) {
		msgr2_conn_fail(c, MSGR2_R_BUSY);
		if (kc->xprt && !kc->xprt->ops->getname(kc->xprt, &peer, true))
			kmsgr_listener_refused(self->listener, &peer,
					       KMSGR_REASON_BUSY, -EBUSY);
		return NULL;
	}

	rcu_read_lock();
	xa_for_each(&inst->objs, idx, obj) {
		if (obj->kind != KMSGR_OBJ_SESS || obj == &self->obj)
			continue;
		cand = container_of(obj, struct kmsgr_sess, obj);
		/*
		 * Only announced sessions: they never attach themselves, so
		 * the lock order fresh > announced holds (announced is set
		 * once, under the lock, and never cleared).
		 */
		if (!cand->server || cand->listener_id != self->listener_id ||
		    !READ_ONCE(cand->announced) ||
		    READ_ONCE(cand->ms.client_cookie) != client_cookie ||
		    READ_ONCE(cand->ms.server_cookie) != server_cookie)
			continue;
		if (kref_get_unless_zero(&obj->ref)) {
			x = cand;
			break;
		}
	}
	rcu_read_unlock();
	if (!x)
		return NULL;

	mutex_lock_nested(&x->lock, SINGLE_DEPTH_NESTING);
	/* and only by a peer that authenticated with the same key */
	if ((x->state != KMSGR_SESS_UP && x->state != KMSGR_SESS_WAITING) ||
	    !x->announced || x->ms.lossy || !x->ms.established ||
	    x->ms.client_cookie != client_cookie ||
	    x->ms.server_cookie != server_cookie ||
	    x->peer_key != kmsgr_sess_auth_key(self)) {
		mutex_unlock(&x->lock);
		kmsgr_obj_put(&x->obj);
		return NULL;
	}
	/*
	 * Nothing changes for @x yet: the engine checks the cookies and seqs
	 * first, and a stale or forged reconnect (RETRY, RESET) leaves its
	 * live connection alone.  Only when the engine takes the session
	 * over (READY, kmsgr_conn_settle(); or a message the peer had
	 * completes first, kmsgr_conn_tx_done()) does the old connection
	 * end.
	 */
	kc->adopt = x;
	return &x->ms;
}

/*
 * Secure mode: the scratch a message's encrypted tail is sealed into,
 * grown to the largest message sent so far (a power of two, at least
 * KMSGR_SESS_SCRATCH_MIN), not allocated for the largest one allowed.
 */
static void *kmsgr_conn_tx_scratch(void *priv, size_t len)
{
	struct kmsgr_sess *s = kmsgr_conn_owner(priv);
	size_t want;
	void *p;

	if (len <= s->tx_scratch_len)
		return s->tx_scratch;
	want = clamp_t(size_t, roundup_pow_of_two(len), KMSGR_SESS_SCRATCH_MIN,
		       max_t(size_t, len, KMSGR_SESS_SCRATCH_LEN));
	p = kvmalloc(want, GFP_KERNEL_ACCOUNT);
	if (!p)
		return NULL;
	kvfree(s->tx_scratch);
	s->tx_scratch = p;
	s->tx_scratch_len = want;
	return p;
}

static const struct msgr2_ops kmsgr_sess_client_ops = {
	.rx_alloc	= kmsgr_conn_rx_alloc,
	.rx_msg		= kmsgr_conn_rx_msg,
	.tx_done	= kmsgr_conn_tx_done,
	.event		= kmsgr_conn_event,
	.next_global_seq = kmsgr_next_global_seq,
	.tx_scratch	= kmsgr_conn_tx_scratch,
};

static const struct msgr2_ops kmsgr_sess_server_ops = {
	.rx_alloc	= kmsgr_conn_rx_alloc,
	.rx_msg		= kmsgr_conn_rx_msg,
	.tx_done	= kmsgr_conn_tx_done,
	.event		= kmsgr_conn_event,
	.attach		= kmsgr_conn_attach,
	.tx_scratch	= kmsgr_conn_tx_scratch,
};

/* ---- connections -------------------------------------------------------- */

/*
 * Transport callback context (a socket callback with BH off, or an RDMA
 * completion under the connection's spinlock: an RCU read-side section
 * either way, which teardown waits out; or the one direct call from the
 * transport's start() or connect(), under the session lock the creator
 * holds, which teardown takes too): queue the owner's work, nothing else.
 */
static void kmsgr_conn_kick(void *priv, unsigned int why)
{
	struct kmsgr_conn *kc = priv;
	struct kmsgr_sess *s = READ_ONCE(kc->sess);
	struct kmsgr_instance *inst = s->obj.inst;
	unsigned long flags;
	bool waiter;

	/* an ENTER asleep on this instance runs it: one wake-up, no worker */
	spin_lock_irqsave(&inst->rx_lock, flags);
	waiter = inst->rx_waiters;
	if (waiter && !s->rx_queued) {
		s->rx_queued = true;
		kref_get(&s->obj.ref);
		list_add_tail(&s->rx_node, &inst->rx_list);
	}
	spin_unlock_irqrestore(&inst->rx_lock, flags);
	if (waiter) {
		kmsgr_fault(KMSGR_FAULT_KICK_WAKE, true);
		kmsgr_cq_wake_runners(inst);
	} else {
		queue_work(kmsgr_wq, &s->work);
	}
}

/* Take the sessions queued for ENTER waiters off the list. */
static void kmsgr_rx_take(struct kmsgr_instance *inst, struct list_head *out,
			  bool last)
{
	unsigned long flags;

	spin_lock_irqsave(&inst->rx_lock, flags);
	if (last)
		inst->rx_waiters--;
	if (!last || !inst->rx_waiters)
		list_splice_init(&inst->rx_list, out);
	spin_unlock_irqrestore(&inst->rx_lock, flags);
}

/* Off a taken list: clear its mark (a kick may queue it again). */
static struct kmsgr_sess *kmsgr_rx_next(struct kmsgr_instance *inst,
					struct list_head *list)
{
	struct kmsgr_sess *s;
	unsigned long flags;

	s = list_first_entry_or_null(list, struct kmsgr_sess, rx_node);
	if (!s)
		return NULL;
	spin_lock_irqsave(&inst->rx_lock, flags);
	list_del(&s->rx_node);
	s->rx_queued = false;
	spin_unlock_irqrestore(&inst->rx_lock, flags);
	return s;
}

void kmsgr_sess_rx_wait_begin(struct kmsgr_instance *inst)
{
	unsigned long flags;

	spin_lock_irqsave(&inst->rx_lock, flags);
	inst->rx_waiters++;
	spin_unlock_irqrestore(&inst->rx_lock, flags);
}

bool kmsgr_sess_rx_pending(struct kmsgr_instance *inst)
{
	return !list_empty_careful(&inst->rx_list);
}

bool kmsgr_sess_rx_run(struct kmsgr_instance *inst)
{
	struct kmsgr_sess *s;
	LIST_HEAD(list);
	bool ran = false;

	kmsgr_rx_take(inst, &list, false);
	while ((s = kmsgr_rx_next(inst, &list))) {
		kmsgr_fault(KMSGR_FAULT_RUN_TAKEN, false);
		kmsgr_sess_service(s);
		kmsgr_obj_put(&s->obj);
		ran = true;
	}
	return ran;
}

void kmsgr_sess_rx_wait_end(struct kmsgr_instance *inst)
{
	struct kmsgr_sess *s;
	LIST_HEAD(list);

	/*
	 * The last waiter hands what is left to the workers.  Under the
	 * lock and not CLOSED: a teardown then cancels that work before it
	 * frees the session (our reference may be the last one).
	 */
	kmsgr_rx_take(inst, &list, true);
	if (!list_empty(&list))
		kmsgr_fault(KMSGR_FAULT_HANDOFF, false);
	while ((s = kmsgr_rx_next(inst, &list))) {
		mutex_lock(&s->lock);
		if (s->state != KMSGR_SESS_CLOSED)
			queue_work(kmsgr_wq, &s->work);
		mutex_unlock(&s->lock);
		kmsgr_obj_put(&s->obj);
	}
}

/*
 * Timed runs.  Each instance has one timer, set to the earliest wake-up
 * time of its sessions on inst->timed; when it fires it queues the work of
 * every session whose time has come and sets itself to the next.  A
 * session's time only moves earlier while it waits; a run that finds
 * nothing due simply arms again.  Teardown takes the session off the list
 * (kmsgr_sess_unarm()) before it cancels the work.
 */
static void kmsgr_sess_arm(struct kmsgr_sess *s, unsigned long delay)
{
	struct kmsgr_instance *inst = s->obj.inst;
	unsigned long at = jiffies + delay, flags;

	spin_lock_irqsave(&inst->timer_lock, flags);
	if (list_empty(&s->timed_node)) {
		list_add_tail(&s->timed_node, &inst->timed);
		s->wake_at = at;
	} else if (time_before(at, s->wake_at)) {
		s->wake_at = at;
	} else {
		at = s->wake_at;
	}
	if (!timer_pending(&inst->timer) ||
	    time_before(at, inst->timer.expires))
		mod_timer(&inst->timer, at);
	spin_unlock_irqrestore(&inst->timer_lock, flags);
}

static void kmsgr_sess_unarm(struct kmsgr_sess *s)
{
	struct kmsgr_instance *inst = s->obj.inst;
	unsigned long flags;

	spin_lock_irqsave(&inst->timer_lock, flags);
	list_del_init(&s->timed_node);
	spin_unlock_irqrestore(&inst->timer_lock, flags);
}

static void kmsgr_sess_timer(struct timer_list *t)
{
	struct kmsgr_instance *inst = from_timer(inst, t, timer);
	unsigned long now = jiffies, next = 0, flags;
	struct kmsgr_sess *s, *tmp;
	bool more = false;

	spin_lock_irqsave(&inst->timer_lock, flags);
	list_for_each_entry_safe(s, tmp, &inst->timed, timed_node) {
		if (!time_before(now, s->wake_at)) {
			list_del_init(&s->timed_node);
			queue_work(kmsgr_wq, &s->work);
		} else if (!more || time_before(s->wake_at, next)) {
			next = s->wake_at;
			more = true;
		}
	}
	if (more)
		mod_timer(&inst->timer, next);
	spin_unlock_irqrestore(&inst->timer_lock, flags);
}

/* Run again at @at, or sooner while deliveries wait for room. */
static void kmsgr_sess_arm_until(struct kmsgr_sess *s, unsigned long at)
{
	unsigned long delay = time_after(at, jiffies) ? at - jiffies : 0;

	if (READ_ONCE(s->paused))
		delay = min(delay, msecs_to_jiffies(KMSGR_SESS_PAUSED_MS));
	kmsgr_sess_arm(s, delay);
}

/*
 * Hand a server session that is done to its reaper (kmsgr_sess_reap()),
 * once: the reaper's teardown does not cancel reap_work (it runs in it),
 * so a second queueing while it runs (the session's work seeing DEAD
 * again) would leave reap_work queued on a freed session.
 */
static void kmsgr_sess_retire(struct kmsgr_sess *s)
	__must_hold(&s->lock)
{
	if (!s->reap_queued) {
		s->reap_queued = true;
		queue_work(kmsgr_wq, &s->reap_work);
	}
}

/* Post a DEAD session's owed CLOSED, with its own reason; false if none. */
static bool kmsgr_sess_pay_closed(struct kmsgr_sess *s)
	__must_hold(&s->lock)
{
	if (!s->closed_owed)
		return false;
	s->closed_owed = false;
	kmsgr_sess_event(s, KMSGR_EV_CLOSED, s->closed_reason, s->closed_res);
	return true;
}

/*
 * A DEAD session's owed CLOSED, once nothing it received waits to be
 * delivered (else its runs try again as the CQ and the pool make room);
 * a server session then retires.
 */
static void kmsgr_sess_post_closed(struct kmsgr_sess *s)
	__must_hold(&s->lock)
{
	if (!kmsgr_sess_flush_rx(s)) {
		kmsgr_sess_arm(s, msecs_to_jiffies(KMSGR_SESS_PAUSED_MS));
		return;
	}
	kmsgr_sess_pay_closed(s);
	if (s->server)
		kmsgr_sess_retire(s);
}

static u16 kmsgr_reason(enum msgr2_reason r)
{
	/* the engine's reasons up to BUSY have the uapi's numbers */
	BUILD_BUG_ON(KMSGR_REASON_BUSY != MSGR2_R_BUSY);
	BUILD_BUG_ON(KMSGR_REASON_EOF != MSGR2_R_EOF);
	BUILD_BUG_ON(MSGR2_R_MODE + 1 != MSGR2_R__MAX);
	if (r == MSGR2_R_MODE)
		return KMSGR_REASON_MODE;
	return r <= MSGR2_R_BUSY ? (u16)r : KMSGR_REASON_MALFORMED;
}

/*
 * Whether a connection that ended for @reason would end the same way
 * again: the peer refused our key or our modes, or lacks features we
 * need.  A lossless session does not redial then; it is over.
 */
static bool kmsgr_reason_final(u16 reason)
{
	return reason == KMSGR_REASON_AUTH || reason == KMSGR_REASON_MODE ||
	       reason == KMSGR_REASON_MISSING_FEATURES ||
	       reason == KMSGR_REASON_BANNER_FEATURES;
}

/*
 * Free a connection.  Receive-pool slices that its failure left to it
 * (kmsgr_conn_free() gives them back) may be what a starved session of
 * the instance waits for: resume it now, not at its next timer tick.
 */
static void kmsgr_sess_conn_free(struct kmsgr_conn *kc)
{
	struct kmsgr_instance *doomed = kc->doomed_inst;

	kmsgr_conn_free(kc);
	if (doomed)
		kmsgr_sess_pool_freed(doomed);
}

/*
 * The connection is gone (or could not be made): free it and apply the
 * session's policy.
 */
static void kmsgr_sess_conn_lost(struct kmsgr_sess *s, u16 reason, int res)
	__must_hold(&s->lock)
{
	struct kmsgr_conn *kc = s->conn;

	s->conn = NULL;
	if (kc)
		kmsgr_sess_conn_free(kc);
	kmsgr_sess_conn_unpause(s);
	if (s->state == KMSGR_SESS_CLOSED || s->state == KMSGR_SESS_DEAD)
		return;
	s->last_error = res;
	s->last_reason = reason;
	kmsgr_count(faults, 1);

	if (!s->ms.lossy && (!s->server || s->announced) &&
	    !kmsgr_reason_final(reason)) {
		if (!s->down_posted) {
			s->down_posted = true;
			kmsgr_sess_event(s, KMSGR_EV_DOWN, reason, res);
		}
		if (s->server) {
			/* the client may resume it, for a bounded time */
			WRITE_ONCE(s->state, KMSGR_SESS_WAITING);
			s->retry_at = jiffies +
				      kmsgr_secs(READ_ONCE(kmsgr_resume_timeout));
			kmsgr_sess_arm_until(s, s->retry_at);
			return;
		}
		s->backoff_ms = clamp(s->backoff_ms * 2,
				      (u32)KMSGR_SESS_BACKOFF_MIN_MS,
				      (u32)KMSGR_SESS_BACKOFF_MAX_MS);
		s->retry_at = jiffies + msecs_to_jiffies(s->backoff_ms);
		WRITE_ONCE(s->state, KMSGR_SESS_BACKOFF);
		kmsgr_sess_arm_until(s, s->retry_at);
		return;
	}

	kmsgr_sess_end(s, reason, res);
}

/*
 * The session is over for good (lossy connection lost, lossless server not
 * resumed in time): complete its queued SENDs with -ECONNRESET, post
 * CLOSED.  Messages it received and has not delivered yet (a RECV held
 * for CQ room, spilled ones waiting for pool room: a lossless peer was
 * told they arrived) come first: CLOSED is owed until the DEAD session's
 * runs have delivered them (kmsgr_sess_service()), so that an application
 * that CLOSEs on CLOSED has seen every one.  A client keeps its id until
 * CLOSE; a server session retires by itself once CLOSED is posted, so
 * that ended sessions never hold the instance's session slots.
 */
static void kmsgr_sess_end(struct kmsgr_sess *s, u16 reason, int res)
	__must_hold(&s->lock)
{
	WRITE_ONCE(s->state, KMSGR_SESS_DEAD);
	msgr2_session_drain(&s->ms, kmsgr_sess_drain_done, s, -ECONNRESET);
	if (s->server && !s->announced) {
		kmsgr_sess_retire(s);	/* nobody knows it */
		return;
	}
	s->closed_owed = true;
	s->closed_reason = reason;
	s->closed_res = res;
	kmsgr_sess_post_closed(s);
}

static void kmsgr_sess_fail(struct kmsgr_sess *s, int err)
	__must_hold(&s->lock)
{
	enum msgr2_reason r = msgr2_conn_reason(s->conn->mc);
	u16 reason = r == MSGR2_R_NONE ? KMSGR_REASON_EOF : kmsgr_reason(r);

	/* the transport's device went away, or its link is down */
	if (err == -ENODEV || err == -ENETDOWN)
		reason = KMSGR_REASON_DEVICE;

	if (s->server && !s->announced)	/* an embryo: no id yet */
		kmsgr_inst_info_ratelimited(s->obj.inst, "listener %u: handshake with %pISpc failed: %s (%d)\n",
					    s->listener_id, &s->peer,
					    r == MSGR2_R_EOF && err ? "connection lost" :
					    msgr2_reason_str(r), err);
	else if (r != MSGR2_R_NONE && r != MSGR2_R_EOF && r != MSGR2_R_LOCAL)
		kmsgr_sess_warn_ratelimited(s, "connection failed: %s (%d)\n",
					    msgr2_reason_str(r), err);
	else
		kmsgr_sess_dbg(s, "connection closed (%d)\n", err);
	kmsgr_sess_conn_lost(s, reason, err);
}

/* Client: dial the peer with a new connection on the same msgr2 session. */
static int kmsgr_sess_dial(struct kmsgr_sess *s)
	__must_hold(&s->lock)
{
	struct kmsgr_conn *kc;
	int ret;

	kc = kmsgr_conn_alloc(s);
	if (!kc)
		return -ENOMEM;
	s->cfg.priv = kc;
	s->cfg.global_seq = kmsgr_next_global_seq(NULL, 0);
	ret = msgr2_conn_init(kc->mc, &s->cfg, &s->ms);
	if (ret)
		goto out_free;
	kc->engine = true;
	s->conn = kc;
	WRITE_ONCE(s->state, KMSGR_SESS_CONNECTING);
	/* the kick may run at once: it queues this work, which waits */
	ret = s->xtype->connect(s->obj.inst->net, &s->obj.inst->xacct,
				&s->peer, kmsgr_conn_kick, kc, &kc->xprt);
	if (ret) {
		s->conn = NULL;
		goto out_free;
	}
	return 0;

out_free:
	kmsgr_sess_conn_free(kc);
	return ret;
}

/*
 * Write what the engine queued for @kc (kmsgr_conn_flush()).  Payloads go
 * by page reference only where a SEND completes at the peer's ack (struct
 * kmsgr_xprt_zc): lossless sessions.
 */
static int kmsgr_sess_tx(struct kmsgr_conn *kc)
{
	struct kmsgr_sess *s = kmsgr_conn_owner(kc);
	struct kmsgr_instance *inst = s->obj.inst;
	struct kmsgr_xprt_zc zc = {
		.base = inst->buf,
		.len = inst->buf_size,
		.min = READ_ONCE(kmsgr_tx_zerocopy_min),
	};

	/* SENDs submitted while we held the lock go out with this flush */
	kmsgr_sess_holder_take(s);
	return kmsgr_conn_flush(kc, s->ms.lossy || !zc.min ? NULL : &zc);
}

/*
 * Server: after msgr2_rx_done() with a session being resumed.  When the
 * engine switched to it, move this connection there: the fresh session
 * that accepted it is never announced and goes away.  Returns true when
 * the connection moved (the caller must not touch it any more).
 */
static bool kmsgr_conn_settle(struct kmsgr_sess *self, struct kmsgr_conn *kc)
	__must_hold(&self->lock)
{
	struct kmsgr_sess *x = kc->adopt;
	struct kmsgr_conn *old;

	/* not resumed (RETRY, RESET or a failure): a retry looks again */
	if (msgr2_conn_session(kc->mc) != &x->ms) {
		kc->adopt = NULL;
		mutex_unlock(&x->lock);
		kmsgr_obj_put(&x->obj);
		return false;
	}
	old = x->conn;
	x->conn = NULL;
	if (old)
		kmsgr_sess_conn_free(old);	/* the stale connection */
	kmsgr_sess_conn_unpause(x);
	kc->adopt = NULL;
	WRITE_ONCE(kc->sess, x);
	x->conn = kc;
	x->peer = self->peer;	/* where the client resumed it from */
	/*
	 * the connection's keepalives were timed, and its mode settled, by
	 * the fresh session's configuration: its silence is timed by that
	 */
	x->ka_secs = self->ka_secs;
	WRITE_ONCE(x->con_mode, self->con_mode);
	self->conn = NULL;
	self->state = KMSGR_SESS_DEAD;
	self->handed_over = true;
	queue_work(kmsgr_wq, &x->work);
	mutex_unlock(&x->lock);
	kmsgr_obj_put(&x->obj);
	kmsgr_sess_retire(self);
	return true;
}

/* The log line that says what the transport is waiting for, if it can. */
static void kmsgr_sess_describe_xprt(struct kmsgr_sess *s)
	__must_hold(&s->lock)
{
	struct kmsgr_xprt *x = s->conn ? s->conn->xprt : NULL;
	char line[192];

	if (!x || !x->ops->describe)
		return;
	x->ops->describe(x, line, sizeof(line));
	kmsgr_sess_info_ratelimited(s, "%s\n", line);
}

/*
 * A session that has not read for KMSGR_SESS_STALL_S because the CQ or
 * the receive pool has no room says so, once per pause: the application
 * is not reaping or not releasing (or holds the pool with lossless sends
 * waiting for acks its peer cannot get through).
 */
static void kmsgr_sess_report_stall(struct kmsgr_sess *s)
	__must_hold(&s->lock)
{
	struct kmsgr_instance *inst = s->obj.inst;

	if (s->stall_logged ||
	    time_before(jiffies, s->paused_at + KMSGR_SESS_STALL_S * HZ))
		return;
	s->stall_logged = true;
	kmsgr_sess_info_ratelimited(s, "stalled for %u s: %s (CQ room %u, pool %llu of %llu bytes in use, first waiter session %u; seq in %llu, out %llu, acked %llu; %u bytes spilled)\n",
				    KMSGR_SESS_STALL_S,
				    s->rx_held ? "a message waits for CQ room" :
				    list_empty(&s->spill) ?
						 "no room for the next message" :
						 "spilled messages wait for pool room",
				    kmsgr_cq_room(inst), READ_ONCE(inst->stats.pool_bytes),
				    inst->buf_size - inst->pool_off,
				    READ_ONCE(inst->pool_waiter), s->ms.in_seq,
				    s->ms.out_seq, s->ms.acked_seq, s->spill_bytes);
	kmsgr_sess_describe_xprt(s);
}

/*
 * READY connections: the peer must answer our keepalives (any bytes from
 * it count) within keepalive_timeout, must complete a message whose
 * payload holds receive-pool space within msg_timeout (trickling bytes do
 * not extend it), and a server session must carry a message within
 * idle_timeout.  Returns 0, or -ETIMEDOUT after failing
 * the connection (reason TIMEOUT).
 */
static int kmsgr_sess_check_timeouts(struct kmsgr_sess *s,
				     struct kmsgr_conn *kc)
	__must_hold(&s->lock)
{
	unsigned int ka = s->ka_secs;
	unsigned int idle = READ_ONCE(kmsgr_idle_timeout);
	unsigned int mt = READ_ONCE(kmsgr_msg_timeout);
	const char *what;

	if (s->state != KMSGR_SESS_UP)
		return 0;
	/*
	 * Not reading for want of CQ or pool room is our doing: silence
	 * from the peer means nothing then.  A session that spills reads
	 * on while its messages wait (paused too): silence counts.
	 */
	if (s->rx_held || kc->rx_waits)
		kc->rx_at = jiffies;
	if (READ_ONCE(s->paused))
		kmsgr_sess_report_stall(s);
	else
		s->stall_logged = false;
	if (ka && time_after(jiffies, kc->rx_at + kmsgr_secs(ka)))
		what = "keepalive_timeout: nothing received";
	else if (mt && kc->rx_msg_at &&
		 time_after(jiffies, kc->rx_msg_at + kmsgr_secs(mt)))
		what = "msg_timeout: a message still incomplete";
	else if (idle && s->server &&
		 time_after(jiffies, s->active_at + kmsgr_secs(idle)))
		what = "idle_timeout: no message";
	else
		return 0;
	kmsgr_sess_info_ratelimited(s, "%s\n", what);
	kmsgr_sess_describe_xprt(s);
	msgr2_conn_fail(kc->mc, MSGR2_R_TIMEOUT);
	return -ETIMEDOUT;
}

/* Run the connection: connect completion, receive, send, tick. */
static void kmsgr_sess_run(struct kmsgr_sess *s)
	__must_hold(&s->lock)
{
	struct kmsgr_conn *kc = s->conn;
	bool more = false;
	int budget, ret, st;
	u64 now;

	if (!kc)
		return;
	if (!kc->connected) {
		ret = kc->xprt->ops->state(kc->xprt);
		if (ret == -EINPROGRESS)
			goto tick;
		if (ret) {
			kmsgr_sess_conn_lost(s, KMSGR_REASON_CONNECT, ret);
			return;
		}
		kc->connected = true;
		WRITE_ONCE(s->state, KMSGR_SESS_HANDSHAKE);
	}

	kmsgr_sess_flush_rx(s);	/* if it fails, rx_held stops rx */
	for (budget = KMSGR_SESS_BUDGET; budget; budget--) {
		ret = kmsgr_sess_tx(kc);
		if (ret < 0)
			goto fail;
		if (s->rx_held)
			break;
		st = kmsgr_conn_rx_round(kc, &ret);
		if (st == KMSGR_RX_IDLE)
			break;
		if (st == KMSGR_RX_DONE && kc->adopt &&
		    kmsgr_conn_settle(s, kc))
			return;
		if (st == KMSGR_RX_FAIL || ret < 0)
			goto fail;
	}
	more = !budget;
	ret = kmsgr_sess_tx(kc);
	if (ret < 0)
		goto fail;
	more |= ret == 2;

tick:
	/* ms for the engine's timers: the coarse clock reads no hardware */
	now = div_u64(ktime_get_coarse_ns(), NSEC_PER_MSEC);
	ret = msgr2_tick(kc->mc, now);
	if (ret < 0)
		goto fail;
	ret = kmsgr_sess_check_timeouts(s, kc);
	if (ret < 0)
		goto fail;
	if (kc->connected) {
		ret = kmsgr_sess_tx(kc);	/* a keepalive, maybe */
		if (ret < 0)
			goto fail;
	}
	if (more)
		queue_work(kmsgr_wq, &s->work);
	else if (READ_ONCE(s->paused))
		kmsgr_sess_arm(s, msecs_to_jiffies(KMSGR_SESS_PAUSED_MS));
	else
		kmsgr_sess_arm(s, msecs_to_jiffies(KMSGR_SESS_TICK_MS));
	return;

fail:
	if (kc->adopt) {	/* failed while resuming: let go */
		mutex_unlock(&kc->adopt->lock);
		kmsgr_obj_put(&kc->adopt->obj);
		kc->adopt = NULL;
	}
	kmsgr_sess_fail(s, ret);
}

/* Do what the session is waiting for: its work, or an ENTER waiter. */
static void kmsgr_sess_service(struct kmsgr_sess *s)
{
	struct mem_cgroup *old_memcg;
	int ret;

	old_memcg = set_active_memcg(s->obj.inst->memcg);
	mutex_lock(&s->lock);
	kmsgr_sess_batch_begin(s);
	kmsgr_sess_holder_take(s);
	switch (s->state) {
	case KMSGR_SESS_BACKOFF:
		kmsgr_sess_flush_rx(s);
		if (time_before(jiffies, s->retry_at)) {
			kmsgr_sess_arm_until(s, s->retry_at);
			break;
		}
		ret = kmsgr_sess_dial(s);
		if (ret)
			kmsgr_sess_conn_lost(s, KMSGR_REASON_CONNECT, ret);
		break;
	case KMSGR_SESS_CONNECTING:
	case KMSGR_SESS_HANDSHAKE:
	case KMSGR_SESS_UP:
		kmsgr_sess_run(s);
		break;
	case KMSGR_SESS_WAITING:
		kmsgr_sess_flush_rx(s);
		if (time_before(jiffies, s->retry_at)) {
			kmsgr_sess_arm_until(s, s->retry_at);
			break;
		}
		kmsgr_sess_end(s, KMSGR_REASON_TIMEOUT, -ETIMEDOUT);
		break;
	case KMSGR_SESS_DEAD:
		kmsgr_sess_post_closed(s);
		break;
	default:
		break;
	}
	kmsgr_sess_batch_end(s);
	mutex_unlock(&s->lock);
	set_active_memcg(old_memcg);
}

static void kmsgr_sess_work(struct work_struct *work)
{
	kmsgr_sess_service(container_of(work, struct kmsgr_sess, work));
}

static void kmsgr_sess_send_work(struct work_struct *work);

/* ---- session life cycle ------------------------------------------------- */

static struct kmsgr_sess *kmsgr_sess_alloc(struct kmsgr_instance *inst)
{
	struct kmsgr_sess *s;

	s = kzalloc(sizeof(*s), GFP_KERNEL_ACCOUNT);
	if (!s)
		return NULL;
	kref_init(&s->obj.ref);
	s->obj.kind = KMSGR_OBJ_SESS;
	s->obj.inst = inst;
	atomic_inc(&inst->nr_live);
	INIT_LIST_HEAD(&s->obj.teardown);
	INIT_LIST_HEAD(&s->embryo);
	INIT_LIST_HEAD(&s->spill);
	mutex_init(&s->lock);
	INIT_WORK(&s->work, kmsgr_sess_work);
	init_llist_head(&s->sendq);
	INIT_WORK(&s->send_work, kmsgr_sess_send_work);
	INIT_LIST_HEAD(&s->timed_node);
	INIT_WORK(&s->reap_work, kmsgr_sess_reap);
	return s;
}

/* Free what a never-published (or torn-down) session holds. */
static void kmsgr_sess_free_mem(struct kmsgr_sess *s)
{
	struct kmsgr_spill *sp, *tmp;

	list_for_each_entry_safe(sp, tmp, &s->spill, node)
		kvfree(sp);
	INIT_LIST_HEAD(&s->spill);
	s->spill_bytes = 0;
	/* the key and the tickets: wiped */
	kvfree_sensitive(s->cephx, sizeof(*s->cephx));
	s->cephx = NULL;
	kfree_sensitive(s->cephx_server);
	s->cephx_server = NULL;
	/* the ticket's session key */
	kvfree_sensitive(s->cephx_az, sizeof(*s->cephx_az));
	s->cephx_az = NULL;
	kvfree(s->tx_scratch);
	s->tx_scratch = NULL;
}

/*
 * Tear a session down: already out of inst->objs and past an RCU grace
 * period.  With @post, queued SENDs complete with -ECONNRESET and CLOSED
 * (reason NONE) is the session's last CQE (a DEAD session posted its
 * CLOSED already, or posts the one it still owes, with its own reason);
 * without, nothing is posted (the instance is going
 * away, or an embryo that has no id).  Drops the objs reference.
 */
void kmsgr_sess_teardown(struct kmsgr_sess *s, bool post, bool from_reaper)
{
	bool was_dead, handed_over;
	struct kmsgr_conn *kc;

	mutex_lock(&s->lock);
	handed_over = s->handed_over;
	was_dead = s->state == KMSGR_SESS_DEAD;
	WRITE_ONCE(s->state, KMSGR_SESS_CLOSED);
	if (!post)
		s->no_cq = true;
	kc = s->conn;
	s->conn = NULL;
	if (kc)
		kmsgr_sess_conn_free(kc);
	kmsgr_sess_flush_held(s);
	/*
	 * Before its CLOSED, in the order they were submitted: the engine's
	 * first, then those still on the send list (CLOSED: the take
	 * completes them); a later one completes as it is added.
	 */
	msgr2_session_drain(&s->ms, kmsgr_sess_drain_done, s, -ECONNRESET);
	kmsgr_sess_take_sendq(s);
	/* a DEAD one's CLOSED still owed goes now, with its own reason */
	if (!kmsgr_sess_pay_closed(s) && !was_dead &&
	    (s->announced || !s->server))
		kmsgr_sess_event(s, KMSGR_EV_CLOSED, KMSGR_REASON_NONE, 0);
	mutex_unlock(&s->lock);

	/*
	 * An embryo that handed its connection to the session its client
	 * resumed (kmsgr_conn_settle()) may still be the owner a kick read
	 * just before: wait until no kick can use it (they run inside an
	 * RCU read-side section, see kmsgr_conn_kick()).
	 */
	if (handed_over)
		synchronize_rcu();
	/*
	 * The work sees CLOSED and does nothing: no requeue after this.  The
	 * send work holds a reference of its own and may still come: it
	 * completes what it finds with -ECONNRESET.
	 */
	kmsgr_sess_unarm(s);
	cancel_work_sync(&s->work);
	if (!from_reaper)
		cancel_work_sync(&s->reap_work);
	kmsgr_pool_unwait(s->obj.inst, s->obj.id);
	kmsgr_sess_free_mem(s);
	/* embryos were never charged (kmsgr_sess_announce()) */
	if (!s->server || s->announced)
		atomic_dec(&s->obj.inst->nr_sessions);
	kmsgr_obj_put(&s->obj);
}

/*
 * A server session is done.  An embryo failed its handshake, or handed its
 * connection over to the session its client resumed: it never was in
 * inst->objs (only a kick of the connection it handed over may still
 * see it, which teardown waits out); whoever unlinks it from its
 * listener (this, or the listener's teardown) tears it down.  An announced
 * session ended (DEAD, its CLOSED posted): whoever takes it out of
 * inst->objs (this, CLOSE or the final close of the file) tears it down.
 */
static void kmsgr_sess_reap(struct work_struct *work)
{
	struct kmsgr_sess *s = container_of(work, struct kmsgr_sess,
					    reap_work);
	struct kmsgr_instance *inst = s->obj.inst;

	if (!READ_ONCE(s->announced)) {
		if (kmsgr_embryo_unlink(s))
			kmsgr_sess_teardown(s, false, true);
		return;
	}
	if (xa_cmpxchg(&inst->objs, s->obj.id, &s->obj, NULL,
		       GFP_KERNEL) != &s->obj)
		return;
	/* no kick or resume still looks at it after this */
	synchronize_rcu();
	kmsgr_fault(KMSGR_FAULT_REAP, false);
	/*
	 * Its CLOSED is out (DEAD: teardown posts no second one), but a
	 * SEND that found it UP may still come to its send list: that
	 * one's CQE is due as well.
	 */
	kmsgr_sess_teardown(s, true, true);
}

/* ---- uapi helpers --------------------------------------------------------- */

int kmsgr_addr_to_ss(const struct kmsgr_addr *a, struct sockaddr_storage *ss)
{
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;

	memset(ss, 0, sizeof(*ss));
	if (a->reserved)
		return -EINVAL;
	switch (a->family) {
	case AF_INET:
		if (a->scope_id || memchr_inv(a->addr + 4, 0, 12))
			return -EINVAL;
		sin->sin_family = AF_INET;
		sin->sin_port = a->port;
		memcpy(&sin->sin_addr, a->addr, 4);
		return 0;
	case AF_INET6:
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = a->port;
		sin6->sin6_scope_id = a->scope_id;
		memcpy(&sin6->sin6_addr, a->addr, 16);
		return 0;
	default:
		return -EAFNOSUPPORT;
	}
}

void kmsgr_ss_to_addr(const struct sockaddr_storage *ss, struct kmsgr_addr *a)
{
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)ss;
	const struct sockaddr_in *sin = (const struct sockaddr_in *)ss;

	memset(a, 0, sizeof(*a));
	a->family = ss->ss_family;
	if (ss->ss_family == AF_INET) {
		a->port = sin->sin_port;
		memcpy(a->addr, &sin->sin_addr, 4);
	} else if (ss->ss_family == AF_INET6) {
		a->port = sin6->sin6_port;
		a->scope_id = sin6->sin6_scope_id;
		memcpy(a->addr, &sin6->sin6_addr, 16);
	}
}

/* entity_addr_t as msgr2 sends it (ADDR2 sockaddr: le16 family, be16 port) */
static void kmsgr_ss_to_msgr2(const struct sockaddr_storage *ss, u32 type,
			      u32 nonce, struct msgr2_addr *out)
{
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)ss;
	const struct sockaddr_in *sin = (const struct sockaddr_in *)ss;

	if (ss->ss_family == AF_INET6) {
		memset(out, 0, sizeof(*out));
		out->type = type;
		out->nonce = nonce;
		out->len = 28;
		msgr2_put_le16(out->sa, AF_INET6);
		memcpy(out->sa + 2, &sin6->sin6_port, 2);
		memcpy(out->sa + 8, &sin6->sin6_addr, 16);
		msgr2_put_le32(out->sa + 24, sin6->sin6_scope_id);
		return;
	}
	msgr2_addr_ipv4(out, type, nonce, (const u8 *)&sin->sin_addr,
			ntohs(sin->sin_port));
}

bool kmsgr_entity_type_ok(u8 t)
{
	return t == MSGR2_ENTITY_MON || t == MSGR2_ENTITY_MDS ||
	       t == MSGR2_ENTITY_OSD || t == MSGR2_ENTITY_CLIENT ||
	       t == MSGR2_ENTITY_MGR;
}

static int kmsgr_connect_check(const struct kmsgr_connect *c)
{
	if (memchr_inv(c->reserved, 0, sizeof(c->reserved)))
		return -EINVAL;
	if (c->flags & ~(KMSGR_SESS_F_LOSSLESS | KMSGR_SESS_F_SECURE))
		return -EINVAL;
	if (c->transport != KMSGR_XPRT_TCP && c->transport != KMSGR_XPRT_RDMA)
		return -EOPNOTSUPP;
	if (c->addr.family == AF_INET || c->addr.family == AF_INET6) {
		if (!c->addr.port)
			return -EINVAL;
	}
	if (c->peer_type && !kmsgr_entity_type_ok(c->peer_type))
		return -EINVAL;
	if (c->my_type && !kmsgr_entity_type_ok(c->my_type))
		return -EINVAL;
	if (strnlen(c->name, sizeof(c->name)) >= sizeof(c->name))
		return -EINVAL;
	switch (c->auth) {
	case KMSGR_AUTH_NONE:
		if (c->key_len || c->key || c->key_desc || c->ticket_from ||
		    (c->flags & KMSGR_SESS_F_SECURE))
			return -EINVAL;
		return 0;
	case KMSGR_AUTH_CEPHX:
		/* a mon session's ticket: to a service, nothing else given */
		if (c->ticket_from)
			return c->key || c->key_len || c->key_desc ||
			       c->name[0] || !c->peer_type ||
			       c->peer_type == MSGR2_ENTITY_MON ||
			       c->peer_type == MSGR2_ENTITY_CLIENT ? -EINVAL : 0;
		if (!c->name[0])
			return -EINVAL;
		/* the secret: raw bytes, or a logon key's name */
		if (c->key_desc)
			return c->key || c->key_len ? -EINVAL : 0;
		if (c->key_len != MSGR2_CEPHX_KEY_LEN || !c->key)
			return -EINVAL;
		return 0;
	default:
		return -EINVAL;
	}
}

/* Engine configuration shared by both roles. */
static void kmsgr_sess_cfg_common(struct kmsgr_sess *s)
{
	struct msgr2_config *cfg = &s->cfg;

	unsigned int ka = READ_ONCE(kmsgr_keepalive_timeout);
	unsigned int hs = READ_ONCE(kmsgr_handshake_timeout);

	/*
	 * The session keeps the value its keepalives are timed by: a later
	 * change of the parameter (a shorter timeout than those keepalives
	 * allow for) applies to sessions made after it, and does not drop
	 * idle sessions that are healthy.
	 */
	s->ka_secs = ka;
	cfg->features_supported = MSGR2_FEATURES_DEFAULT;
	/* at least three keepalives per keepalive_timeout */
	cfg->keepalive_ms = KMSGR_SESS_KEEPALIVE_MS;
	if (ka)
		cfg->keepalive_ms = clamp(ka * 1000U / 3, 1000U,
					  (unsigned int)KMSGR_SESS_KEEPALIVE_MS);
	/* 0: the engine's default (10 s) */
	cfg->handshake_timeout_ms = hs * 1000U;
}

/* ---- CONNECT -------------------------------------------------------------- */

/*
 * Copy into @az what session @id of @inst, a cephx client of a mon, holds
 * for talking to a @service: its global id and the mon's ticket.  Under
 * the mon session's lock, which its engine holds while it changes them.
 */
static int kmsgr_sess_take_ticket(struct kmsgr_instance *inst, u32 id,
				  u8 service,
				  struct msgr2_cephx_authorizer *az)
{
	struct kmsgr_obj *obj = kmsgr_obj_get(inst, id);
	struct kmsgr_sess *mon;
	int ret = -EINVAL;

	if (!obj)
		return -ENOENT;
	if (obj->kind != KMSGR_OBJ_SESS) {
		ret = -ENOENT;
		goto out;
	}
	mon = container_of(obj, struct kmsgr_sess, obj);
	mutex_lock(&mon->lock);
	if (mon->state == KMSGR_SESS_CLOSED)
		ret = -ENOENT;
	else if (mon->server || !mon->cephx ||
		 (mon->cfg.peer_type && mon->cfg.peer_type != MSGR2_ENTITY_MON))
		ret = -EINVAL;
	else if (mon->state != KMSGR_SESS_UP)
		/*
		 * Tickets are the mon's once its AUTH_SIGNATURE has proven
		 * the reply fresh (a replayed AUTH_DONE decrypts as well),
		 * and a handshake that failed after AUTH_DONE never did
		 */
		ret = -ENOKEY;
	else
		ret = msgr2_cephx_authorizer_init(az, mon->cephx, service);
	mutex_unlock(&mon->lock);
out:
	kmsgr_obj_put(obj);
	return ret;
}

static int kmsgr_sess_setup_client(struct kmsgr_sess *s,
				   const struct kmsgr_connect *c)
{
	struct sockaddr_storage blank = { .ss_family = AF_INET };
	struct msgr2_config *cfg = &s->cfg;
	u8 my_type = c->my_type ? c->my_type : MSGR2_ENTITY_CLIENT;
	u32 nonce;
	int ret;

	ret = kmsgr_addr_to_ss(&c->addr, &s->peer);
	if (ret)
		return ret;
	/* released with the session (kmsgr_obj_release()) */
	s->xtype = kmsgr_xprt_get(c->transport);
	if (!s->xtype)
		return -EOPNOTSUPP;	/* its module is not loaded */
	s->obj.user_data = c->user_data;
	msgr2_session_init(&s->ms, !(c->flags & KMSGR_SESS_F_LOSSLESS));

	kmsgr_sess_cfg_common(s);
	cfg->role = MSGR2_CLIENT;
	cfg->my_type = my_type;
	cfg->peer_type = c->peer_type;
	do {
		get_random_bytes(&nonce, sizeof(nonce));
	} while (!nonce);
	/*
	 * A blank IP of the peer's family: the engine takes the one the
	 * server's HELLO reports.
	 */
	blank.ss_family = s->peer.ss_family;
	kmsgr_ss_to_msgr2(&blank, MSGR2_ADDR_ANY, nonce, &cfg->my_addrs.a[0]);
	cfg->my_addrs.n = 1;
	kmsgr_ss_to_msgr2(&s->peer, MSGR2_ADDR_MSGR2, c->addr.nonce,
			  &cfg->target);
	cfg->n_modes = 1;
	cfg->modes[0] = (c->flags & KMSGR_SESS_F_SECURE) ? MSGR2_MODE_SECURE :
							   MSGR2_MODE_CRC;
	cfg->ops = &kmsgr_sess_client_ops;
	cfg->n_auth = 1;

	if (c->auth == KMSGR_AUTH_NONE) {
		s->anone.entity_type = my_type;
		s->anone.peer_type = c->peer_type;
		strscpy(s->anone.name, c->name[0] ? c->name : "admin",
			sizeof(s->anone.name));
		cfg->auth[0] = &msgr2_auth_none_ops;
		cfg->auth_priv[0] = &s->anone;
		return 0;
	}

	if (c->flags & KMSGR_SESS_F_SECURE)
		cfg->tx_scratch_len = KMSGR_SESS_SCRATCH_LEN;	/* on demand */
	if (c->ticket_from) {
		s->cephx_az = kvzalloc(sizeof(*s->cephx_az), GFP_KERNEL_ACCOUNT);
		if (!s->cephx_az)
			return -ENOMEM;
		ret = kmsgr_sess_take_ticket(s->obj.inst, c->ticket_from,
					     c->peer_type, s->cephx_az);
		if (ret)
			return ret;
		cfg->auth[0] = &msgr2_auth_cephx_authorizer_ops;
		cfg->auth_priv[0] = s->cephx_az;
		return 0;
	}

	s->cephx = kvzalloc(sizeof(*s->cephx), GFP_KERNEL_ACCOUNT);
	if (!s->cephx)
		return -ENOMEM;
	s->cephx->entity_type = my_type;
	strscpy(s->cephx->name, c->name, sizeof(s->cephx->name));
	if (c->key_desc) {
		char *desc = strndup_user(u64_to_user_ptr(c->key_desc),
					  KMSGR_KEY_DESC_MAX);
		int ret;

		if (IS_ERR(desc))
			return PTR_ERR(desc) == -EINVAL ? -ENAMETOOLONG :
							  PTR_ERR(desc);
		ret = kmsgr_key_logon(desc, s->cephx->key, MSGR2_CEPHX_KEY_LEN);
		kfree(desc);
		if (ret)
			return ret;
	} else if (copy_from_user(s->cephx->key, u64_to_user_ptr(c->key),
				  MSGR2_CEPHX_KEY_LEN)) {
		return -EFAULT;
	}
	cfg->auth[0] = &msgr2_auth_cephx_ops;
	cfg->auth_priv[0] = s->cephx;
	return 0;
}

int kmsgr_sess_connect(struct kmsgr_instance *inst,
		       struct kmsgr_connect __user *uarg)
{
	struct kmsgr_connect c;
	struct kmsgr_sess *s;
	int ret;

	if (copy_from_user(&c, uarg, sizeof(c)))
		return -EFAULT;
	ret = kmsgr_connect_check(&c);
	if (ret)
		return ret;

	s = kmsgr_sess_alloc(inst);
	if (!s)
		return -ENOMEM;
	ret = kmsgr_sess_setup_client(s, &c);
	if (ret)
		goto out_free;
	ret = kmsgr_sess_charge(inst);
	if (ret)
		goto out_free;
	/* a SEND or CLOSE naming the id finds nothing until it is returned */
	ret = kmsgr_obj_reserve(inst, &s->obj.id);
	if (ret)
		goto out_uncharge;
	kmsgr_fault(KMSGR_FAULT_CONNECT_ID, false);
	if (put_user(s->obj.id, &uarg->id)) {
		ret = -EFAULT;
		goto out_release;
	}

	mutex_lock(&s->lock);
	ret = kmsgr_sess_dial(s);
	/*
	 * a kick of the failed dial may have put it on the instance's run
	 * list: CLOSED, the last ENTER waiter drops it there instead of
	 * queueing its work (kmsgr_sess_rx_wait_end()), which this frees
	 */
	if (ret) {
		WRITE_ONCE(s->state, KMSGR_SESS_CLOSED);
	} else {
		/*
		 * Published before the lock goes: every event of the session
		 * (a refused dial's CLOSED, UP) is posted under it, so none
		 * names an id that CLOSE and SEND do not find yet.
		 */
		kmsgr_fault(KMSGR_FAULT_CONNECT_PUBLISH, false);
		kmsgr_obj_publish(inst, &s->obj);
	}
	mutex_unlock(&s->lock);
	if (ret)
		goto out_stop;
	kmsgr_count(connects, 1);
	return 0;

out_stop:
	/* no kick of what the dial started looks at it after this */
	synchronize_rcu();
	kmsgr_sess_unarm(s);
	cancel_work_sync(&s->work);
out_release:
	xa_release(&inst->objs, s->obj.id);
out_uncharge:
	atomic_dec(&inst->nr_sessions);
out_free:
	kmsgr_sess_free_mem(s);
	kmsgr_obj_put(&s->obj);
	return ret;
}

/* ---- server sessions (accepted by listener.c) ---------------------------- */

/*
 * How a fresh server session authenticates its client: auth none in crc
 * mode, or cephx from the listener's keys in crc and secure mode (secure
 * only with KMSGR_SESS_F_SECURE).
 */
static int kmsgr_sess_server_auth(struct kmsgr_listener *l,
				  struct kmsgr_sess *s)
{
	struct msgr2_config *cfg = &s->cfg;
	u64 gid = (u64)atomic64_add_return(1, &kmsgr_global_id);

	cfg->n_auth = 1;
	if (l->auth != KMSGR_AUTH_CEPHX) {
		cfg->n_modes = 1;
		cfg->modes[0] = MSGR2_MODE_CRC;
		s->anone.next_global_id = gid;
		cfg->auth[0] = &msgr2_auth_none_ops;
		cfg->auth_priv[0] = &s->anone;
		return 0;
	}
	s->cephx_server = kzalloc(sizeof(*s->cephx_server), GFP_KERNEL_ACCOUNT);
	if (!s->cephx_server)
		return -ENOMEM;
	s->cephx_server->keys = l->keys;	/* the listener outlives @s */
	s->cephx_server->n_keys = l->n_keys;
	s->cephx_server->give_global_id = gid;
	cfg->auth[0] = &msgr2_auth_cephx_server_ops;
	cfg->auth_priv[0] = s->cephx_server;
	cfg->n_modes = 0;
	cfg->modes[cfg->n_modes++] = MSGR2_MODE_SECURE;
	if (!(l->flags & KMSGR_SESS_F_SECURE))
		cfg->modes[cfg->n_modes++] = MSGR2_MODE_CRC;
	cfg->tx_scratch_len = KMSGR_SESS_SCRATCH_LEN;	/* on demand */
	return 0;
}

int kmsgr_sess_accept(struct kmsgr_listener *l, struct kmsgr_xprt *x)
{
	struct kmsgr_instance *inst = l->obj.inst;
	struct sockaddr_storage peer, local;
	struct msgr2_config *cfg;
	struct kmsgr_conn *kc;
	struct kmsgr_sess *s;
	int ret;

	ret = x->ops->getname(x, &peer, true);
	if (!ret)
		ret = x->ops->getname(x, &local, false);
	if (ret)
		return ret;
	/* cheap early refusal; checked again when it is linked */
	if (READ_ONCE(l->nr_embryos) >= READ_ONCE(kmsgr_max_half_open)) {
		ret = -EBUSY;
		goto out_refused;
	}
	s = kmsgr_sess_alloc(inst);
	if (!s) {
		ret = -ENOMEM;
		goto out_refused;
	}
	s->server = true;
	s->listener_id = l->obj.id;
	kref_get(&l->obj.ref);
	s->listener = l;
	s->peer = peer;		/* for the log */
	s->obj.user_data = l->obj.user_data;
	s->xtype = l->xtype;
	kmsgr_xprt_hold(s->xtype);
	msgr2_session_init(&s->ms, !(l->flags & KMSGR_SESS_F_LOSSLESS));

	cfg = &s->cfg;
	kmsgr_sess_cfg_common(s);
	cfg->role = MSGR2_SERVER;
	cfg->my_type = l->my_type;
	cfg->my_gid = (s64)inst->id;
	/* the address the client dialled: it must find it in SERVER_IDENT */
	kmsgr_ss_to_msgr2(&local, MSGR2_ADDR_MSGR2, l->nonce,
			  &cfg->my_addrs.a[0]);
	cfg->my_addrs.n = 1;
	kmsgr_ss_to_msgr2(&peer, MSGR2_ADDR_MSGR2, 0, &cfg->target);
	cfg->global_seq = kmsgr_next_global_seq(NULL, 0);
	ret = kmsgr_sess_server_auth(l, s);
	if (ret)
		goto out_free;
	cfg->ops = &kmsgr_sess_server_ops;

	kc = kmsgr_conn_alloc(s);
	if (!kc) {
		ret = -ENOMEM;
		goto out_free;
	}
	cfg->priv = kc;
	ret = msgr2_conn_init(kc->mc, cfg, &s->ms);
	if (ret)
		goto out_free_conn;
	kc->engine = true;

	/*
	 * An embryo of the listener: not charged, not visible to the
	 * application until kmsgr_sess_announce().  The listener's teardown
	 * cancels this work before it looks at its embryos.  Once linked,
	 * the list owns @s: the start below may run it at once, and its
	 * failure and the reaper may free it while mutex_unlock() still
	 * touches s->lock (a waiter can take a mutex before its unlock has
	 * returned).  So a reference of our own until then.
	 */
	kref_get(&s->obj.ref);
	spin_lock(&l->lock);
	if (l->closing) {
		ret = -ESHUTDOWN;
	} else if (l->nr_embryos >= READ_ONCE(kmsgr_max_half_open)) {
		ret = -EBUSY;
	} else {
		list_add_tail(&s->embryo, &l->embryos);
		s->embryo_linked = true;
		l->nr_embryos++;
	}
	spin_unlock(&l->lock);
	if (ret) {
		kmsgr_obj_put(&s->obj);	/* never linked: not the last */
		goto out_free_conn;
	}

	mutex_lock(&s->lock);
	kc->xprt = x;
	kc->connected = true;
	s->conn = kc;
	WRITE_ONCE(s->state, KMSGR_SESS_HANDSHAKE);
	x->ops->start(x, kmsgr_conn_kick, kc);
	mutex_unlock(&s->lock);
	kmsgr_obj_put(&s->obj);
	return 0;

out_free_conn:
	kmsgr_sess_conn_free(kc);	/* kc->xprt is NULL: @x is the caller's */
out_free:
	kmsgr_sess_free_mem(s);
	kmsgr_obj_put(&s->obj);
out_refused:
	if (ret != -ESHUTDOWN)
		kmsgr_listener_refused(l, &peer, ret == -EBUSY ?
				       KMSGR_REASON_HALF_OPEN :
				       KMSGR_REASON_NOMEM, ret);
	return ret;
}

/* ---- SEND, push, resume ----------------------------------------------- */

/*
 * Keep @s (and the caller's reference to it) for kmsgr_sess_push(): 1;
 * 0 when @push already has it, -ENOSPC when @push is full (the caller
 * keeps its reference then).
 */
static int kmsgr_push_add(struct kmsgr_push *push, struct kmsgr_sess *s)
{
	unsigned int i;

	for (i = 0; i < push->n; i++)
		if (push->sess[i] == s)
			return 0;
	if (push->n == KMSGR_PUSH_MAX)
		return -ENOSPC;
	push->sess[push->n++] = s;
	return 1;
}

/* Write out what @s has queued, from the submitter's context. */
static void kmsgr_sess_push_one(struct kmsgr_sess *s)
	__must_hold(&s->lock)
{
	struct kmsgr_conn *kc = s->conn;
	int ret;

	kmsgr_sess_take_sendq(s);
	if (!kc)
		return;
	if (s->state != KMSGR_SESS_UP || !kc->connected) {
		queue_work(kmsgr_wq, &s->work);
		return;
	}
	ret = kmsgr_sess_tx(kc);
	if (ret < 0)
		kmsgr_sess_fail(s, ret);
	else if (ret == 2)	/* budget spent: the work goes on */
		queue_work(kmsgr_wq, &s->work);
	/* 1: the transport is full, its write space kicks the work */
}

/* @s->lock is held: take its SENDs and write them out. */
static void kmsgr_sess_push_locked(struct kmsgr_sess *s)
	__must_hold(&s->lock)
{
	struct mem_cgroup *old_memcg;

	old_memcg = set_active_memcg(s->obj.inst->memcg);
	kmsgr_sess_batch_begin(s);
	kmsgr_sess_push_one(s);
	kmsgr_sess_batch_end(s);
	set_active_memcg(old_memcg);
}

/*
 * The submitter did not get the session lock: its SENDs wait on the
 * sendq, and this work makes sure they do not wait for nobody (whoever
 * holds the lock now may take them first).  It holds its own reference:
 * teardown does not wait for it, and what it finds on a torn-down
 * session completes with -ECONNRESET.
 */
static void kmsgr_sess_send_work(struct work_struct *work)
{
	struct kmsgr_sess *s = container_of(work, struct kmsgr_sess,
					    send_work);

	kmsgr_fault(KMSGR_FAULT_SEND_WORK, false);
	mutex_lock(&s->lock);
	kmsgr_sess_push_locked(s);
	mutex_unlock(&s->lock);
	kmsgr_obj_put(&s->obj);
}

/* The caller holds a reference to @s. */
static void kmsgr_sess_defer_send(struct kmsgr_sess *s)
{
	kref_get(&s->obj.ref);
	if (!queue_work(kmsgr_wq, &s->send_work))
		kmsgr_obj_put(&s->obj);		/* queued already */
}

/*
 * Each session of @push: write its SENDs out if its lock is free (the
 * NVMe/TCP host's trylock), else leave them to the holder and the send
 * work; never wait for a lock another task holds.
 */
void kmsgr_sess_push(struct kmsgr_push *push)
{
	struct kmsgr_sess *s;
	unsigned int i;

	for (i = 0; i < push->n; i++) {
		s = push->sess[i];
		if (!kmsgr_fault_set(KMSGR_FAULT_SEND_DEFER) &&
		    mutex_trylock(&s->lock)) {
			kmsgr_sess_push_locked(s);
			mutex_unlock(&s->lock);
		} else {
			kmsgr_sess_defer_send(s);
		}
		kmsgr_obj_put(&s->obj);
	}
	push->n = 0;
}

int kmsgr_sess_send(struct kmsgr_instance *inst, const struct kmsgr_sqe *sqe,
		    struct kmsgr_push *push)
{
	enum kmsgr_sess_state state;
	struct kmsgr_obj *obj;
	struct kmsgr_sess *s;
	struct kmsgr_tx *tx;
	u64 total = 0;
	int i, ret;

	obj = kmsgr_obj_get(inst, sqe->session);
	if (!obj)
		return -ENOENT;
	if (obj->kind != KMSGR_OBJ_SESS) {
		ret = -ENOENT;
		goto out_put;
	}
	s = container_of(obj, struct kmsgr_sess, obj);

	tx = kmem_cache_zalloc(kmsgr_tx_cache, GFP_KERNEL_ACCOUNT);
	if (!tx) {
		ret = -ENOMEM;
		goto out_put;
	}
	tx->user_data = sqe->user_data;
	tx->skip_success = sqe->flags & KMSGR_SQE_F_SKIP_SUCCESS;
	tx->m.hdr.type = sqe->type;
	tx->m.hdr.version = sqe->version;
	tx->m.hdr.compat_version = sqe->compat_version;
	tx->m.hdr.priority = sqe->priority ? sqe->priority : 127;
	tx->m.hdr.tid = sqe->tid;
	for (i = 0; i < MSGR2_NSEG; i++) {
		u32 off = sqe->seg[i].off, len = sqe->seg[i].len;

		if (!len)
			continue;
		tx->m.seg[i].base = kmsgr_buf_ptr(inst, off, len);
		if (!tx->m.seg[i].base) {
			ret = -EINVAL;
			goto out_free;
		}
		tx->m.seg[i].len = len;
		total += len;
	}

	/*
	 * Refused now if it can be seen now; a session that ends meanwhile
	 * completes it from its sendq (kmsgr_sess_take_sendq()).
	 */
	state = READ_ONCE(s->state);
	if (state == KMSGR_SESS_DEAD || state == KMSGR_SESS_CLOSED) {
		ret = -EPIPE;
		goto out_free;
	}
	/* sealed in the scratch buffer: a session that may be secure */
	if (s->cfg.tx_scratch_len && total > KMSGR_SECURE_MSG_MAX &&
	    READ_ONCE(s->con_mode) != MSGR2_MODE_CRC) {
		ret = -EMSGSIZE;
		goto out_free;
	}
	kmsgr_fault(KMSGR_FAULT_SEND_LATE, false);
	llist_add(&tx->sq_node, &s->sendq);
	i = kmsgr_push_add(push, s);
	if (i < 0)		/* @push is full: the send work writes it */
		kmsgr_sess_defer_send(s);
	if (i <= 0)		/* else kmsgr_sess_push() drops it */
		kmsgr_obj_put(obj);
	return 0;

out_free:
	kmem_cache_free(kmsgr_tx_cache, tx);
out_put:
	kmsgr_obj_put(obj);
	return ret;
}

static void kmsgr_sess_resume_walk(struct kmsgr_instance *inst)
{
	struct kmsgr_obj *obj;
	struct kmsgr_sess *s;
	unsigned long idx;

	/* pairs with kmsgr_sess_set_paused(): see the room we were told of */
	smp_mb();
	rcu_read_lock();
	xa_for_each(&inst->objs, idx, obj) {
		if (obj->kind != KMSGR_OBJ_SESS)
			continue;
		s = container_of(obj, struct kmsgr_sess, obj);
		if (READ_ONCE(s->paused))
			queue_work(kmsgr_wq, &s->work);
	}
	rcu_read_unlock();
}

static void kmsgr_sess_resume_work(struct work_struct *work)
{
	kmsgr_sess_resume_walk(container_of(work, struct kmsgr_instance,
					    resume_work));
}

/*
 * Kick every paused session of @inst.  The walk visits every object
 * (up to max_sessions plus the listeners), too long for a block
 * device's completion interrupt (kmsgr_bio_op_end() releasing slices or
 * a CQ reservation): there it is left to a work item, which
 * kmsgr_sess_inst_drain() cancels once no op can queue it.
 */
void kmsgr_sess_resume(struct kmsgr_instance *inst)
{
	if (in_hardirq() || irqs_disabled())
		queue_work(kmsgr_wq, &inst->resume_work);
	else
		kmsgr_sess_resume_walk(inst);
}

void kmsgr_sess_pool_freed(struct kmsgr_instance *inst)
{
	if (kmsgr_pool_take_starved(inst))
		kmsgr_sess_resume(inst);
}

/* Give back a CQ reservation (kmsgr_cq_unreserve()), resuming delivery. */
void kmsgr_sess_unreserve(struct kmsgr_instance *inst)
{
	if (kmsgr_cq_unreserve(inst))
		kmsgr_sess_resume(inst);
}

/* ---- what netlink sees --------------------------------------------------- */

static void kmsgr_sess_snap(struct kmsgr_sess *s, struct kmsgr_obj_info *info)
	__must_hold(&s->lock)
{
	struct kmsgr_xprt *x = s->conn ? s->conn->xprt : NULL;

	BUILD_BUG_ON(KMSGR_SESS_CONNECTING + 1 != KMSGR_STATE_CONNECTING);
	BUILD_BUG_ON(KMSGR_SESS_HANDSHAKE + 1 != KMSGR_STATE_HANDSHAKE);
	BUILD_BUG_ON(KMSGR_SESS_UP + 1 != KMSGR_STATE_UP);
	BUILD_BUG_ON(KMSGR_SESS_BACKOFF + 1 != KMSGR_STATE_BACKOFF);
	BUILD_BUG_ON(KMSGR_SESS_WAITING + 1 != KMSGR_STATE_WAITING);
	BUILD_BUG_ON(KMSGR_SESS_DEAD + 1 != KMSGR_STATE_DEAD);
	BUILD_BUG_ON(KMSGR_SESS_CLOSED + 1 != KMSGR_STATE_CLOSED);
	BUILD_BUG_ON(MSGR2_MODE_CRC != KMSGR_MODE_CRC);
	BUILD_BUG_ON(MSGR2_MODE_SECURE != KMSGR_MODE_SECURE);

	info->transport = s->xtype->id;
	if (x && x->ops->getname(x, &info->local, false))
		info->local.ss_family = 0;
	if (x && x->ops->getname(x, &info->peer, true))
		info->peer.ss_family = 0;
	if (!x && !s->server)
		info->peer = s->peer;
	info->auth = s->cephx || s->cephx_server || s->cephx_az ?
		     KMSGR_AUTH_CEPHX : KMSGR_AUTH_NONE;
	info->server = s->server;
	info->lossless = !s->ms.lossy;
	info->listener_id = s->listener_id;
	info->state = s->state + 1;
	info->mode = s->con_mode;
	info->peer_type = s->ms.peer_type;
	info->peer_gid = s->ms.peer_gid;
	info->msgs_out = s->msgs_out;
	info->bytes_out = s->bytes_out;
	info->msgs_in = s->msgs_in;
	info->bytes_in = s->bytes_in;
	info->in_flight = s->in_flight;
	info->reconnects = s->ups ? s->ups - 1 : 0;
	info->last_error = s->last_error;
	info->last_reason = s->last_reason;
}

static void kmsgr_listener_snap(struct kmsgr_listener *l,
				struct kmsgr_obj_info *info)
{
	info->listener = true;
	info->transport = l->xtype->id;
	info->auth = l->auth;
	info->flags = l->flags;
	info->my_type = l->my_type;
	spin_lock(&l->lock);
	info->local = l->bound;
	info->half_open = l->nr_embryos;
	info->accepted = l->accepted;
	info->refused = l->refused;
	spin_unlock(&l->lock);
}

/* Snapshot of @obj; a session's lock is held by the caller. */
static void kmsgr_obj_snap(struct kmsgr_obj *obj, struct kmsgr_obj_info *info)
{
	memset(info, 0, sizeof(*info));
	info->id = obj->id;
	info->user_data = obj->user_data;
	if (obj->kind == KMSGR_OBJ_SESS)
		kmsgr_sess_snap(container_of(obj, struct kmsgr_sess, obj),
				info);
	else
		kmsgr_listener_snap(container_of(obj, struct kmsgr_listener,
						 obj), info);
}

int kmsgr_obj_info_next(struct kmsgr_instance *inst, u32 *id, bool listener,
			struct kmsgr_obj_info *info)
{
	u32 want = listener ? KMSGR_OBJ_LISTENER : KMSGR_OBJ_SESS;
	unsigned long idx = *id;
	struct kmsgr_obj *obj;

	for (;;) {
		rcu_read_lock();
		obj = xa_find(&inst->objs, &idx, U32_MAX, XA_PRESENT);
		while (obj && (obj->kind != want ||
			       !kref_get_unless_zero(&obj->ref)))
			obj = xa_find_after(&inst->objs, &idx, U32_MAX,
					    XA_PRESENT);
		rcu_read_unlock();
		if (!obj)
			return -ENOENT;
		if (!listener) {
			struct kmsgr_sess *s = container_of(obj,
							    struct kmsgr_sess,
							    obj);

			mutex_lock(&s->lock);
			/* torn down meanwhile: it is no longer there */
			if (s->state == KMSGR_SESS_CLOSED) {
				mutex_unlock(&s->lock);
				kmsgr_obj_put(obj);
				if (idx == U32_MAX)
					return -ENOENT;
				idx++;
				continue;
			}
			kmsgr_obj_snap(obj, info);
			mutex_unlock(&s->lock);
		} else {
			kmsgr_obj_snap(obj, info);
		}
		*id = obj->id;
		kmsgr_obj_put(obj);
		return 0;
	}
}

void kmsgr_stats_read(struct kmsgr_stats *st)
{
	int cpu;

	memset(st, 0, sizeof(*st));
	for_each_possible_cpu(cpu) {
		const struct kmsgr_stats *c = per_cpu_ptr(&kmsgr_pcpu_stats,
							   cpu);

		st->connects += READ_ONCE(c->connects);
		st->accepts += READ_ONCE(c->accepts);
		st->refused += READ_ONCE(c->refused);
		st->reconnects += READ_ONCE(c->reconnects);
		st->faults += READ_ONCE(c->faults);
		st->msgs_out += READ_ONCE(c->msgs_out);
		st->bytes_out += READ_ONCE(c->bytes_out);
		st->msgs_in += READ_ONCE(c->msgs_in);
		st->bytes_in += READ_ONCE(c->bytes_in);
	}
}

void kmsgr_set_notifier(const struct kmsgr_notifier *n)
{
	rcu_assign_pointer(kmsgr_notifier, n);
	if (!n)
		synchronize_rcu();
}

/*
 * The first instance after *@after and up to @last on the registry,
 * counted as walked (inst->walkers) so that its release waits for the
 * walk: from @prev's place if @prev is still listed, else from the start
 * (ids are in order).
 */
static struct kmsgr_instance *kmsgr_inst_walk_next(struct kmsgr_instance *prev,
						   u64 after, u64 last)
{
	struct kmsgr_instance *inst;

	lockdep_assert_held(&kmsgr_insts_lock);
	if (prev && list_empty(&prev->node))
		prev = NULL;
	inst = list_prepare_entry(prev, &kmsgr_insts, node);
	list_for_each_entry_continue(inst, &kmsgr_insts, node) {
		if (inst->id > last)
			break;
		if (inst->id > after) {
			atomic_inc(&inst->walkers);
			return inst;
		}
	}
	return NULL;
}

static void kmsgr_inst_walk_put(struct kmsgr_instance *inst)
{
	if (atomic_dec_and_test(&inst->walkers))
		wake_up_var(&inst->walkers);
}

/*
 * @fn runs with no registry lock held (a dump that waits for a session's
 * lock must not stall every open and close of /dev/kmsgr): each instance
 * is held by its walkers count, which kmsgr_sess_inst_exit() waits for.
 * The walk ends at the instances there when it began: opens that keep
 * coming cannot make it endless.
 */
int kmsgr_inst_walk(u64 *after,
		    int (*fn)(struct kmsgr_instance *inst, void *arg),
		    void *arg)
{
	struct kmsgr_instance *inst = NULL, *prev;
	u64 last = 0;
	int ret = 0;

	for (;;) {
		prev = inst;
		mutex_lock(&kmsgr_insts_lock);
		if (!prev)
			last = kmsgr_insts_next_id;
		inst = kmsgr_inst_walk_next(prev, *after, last);
		mutex_unlock(&kmsgr_insts_lock);
		if (prev)
			kmsgr_inst_walk_put(prev);
		if (!inst)
			break;
		kmsgr_fault(KMSGR_FAULT_NL_WALK, false);
		ret = fn(inst, arg);
		if (ret) {
			kmsgr_inst_walk_put(inst);
			break;
		}
		*after = inst->id;
	}
	return ret;
}

/* Off the registry, once no walk holds it: netlink no longer sees it. */
void kmsgr_sess_inst_exit(struct kmsgr_instance *inst)
{
	mutex_lock(&kmsgr_insts_lock);
	list_del_init(&inst->node);
	mutex_unlock(&kmsgr_insts_lock);
	wait_var_event(&inst->walkers, !atomic_read(&inst->walkers));
}

/*
 * The instance's file is released and its block ops are done
 * (kmsgr_bdev_detach_all()): nothing can queue resume_work any more.
 */
void kmsgr_sess_inst_drain(struct kmsgr_instance *inst)
{
	cancel_work_sync(&inst->resume_work);
}

void kmsgr_sess_inst_init(struct kmsgr_instance *inst)
{
	xa_init_flags(&inst->objs, XA_FLAGS_ALLOC1);
	spin_lock_init(&inst->rx_lock);
	INIT_LIST_HEAD(&inst->rx_list);
	spin_lock_init(&inst->timer_lock);
	INIT_LIST_HEAD(&inst->timed);
	timer_setup(&inst->timer, kmsgr_sess_timer, 0);
	INIT_WORK(&inst->resume_work, kmsgr_sess_resume_work);
	atomic_set(&inst->nr_sessions, 0);
	atomic_set(&inst->nr_live, 0);
	init_waitqueue_head(&inst->objs_wait);
	atomic64_set(&inst->xacct.pinned, 0);
	atomic64_set(&inst->xacct.registered, 0);
	atomic_set(&inst->walkers, 0);

	/* last: netlink may look at it from here on */
	mutex_lock(&kmsgr_insts_lock);
	inst->id = ++kmsgr_insts_next_id;
	list_add_tail(&inst->node, &kmsgr_insts);
	mutex_unlock(&kmsgr_insts_lock);
}

int kmsgr_sess_init(void)
{
	static const u8 probe_key[16];
	struct msgr2_gcm *gcm;

	/*
	 * Instantiate gcm(aes) now: it may load gcm, ctr and ghash modules,
	 * which the first secure handshake should not pay for against its
	 * timeout.  Its absence only matters to secure sessions.
	 */
	if (!msgr2_gcm_alloc(&gcm, probe_key))
		msgr2_gcm_free(gcm);
	else
		pr_warn("gcm(aes) is not available: secure mode will fail\n");

	kmsgr_tx_cache = KMEM_CACHE(kmsgr_tx, SLAB_ACCOUNT);
	if (!kmsgr_tx_cache)
		return -ENOMEM;
	/*
	 * Unbound: a per-CPU queue ran the receiving session on the CPU the
	 * data arrived on, which over loopback is the sender's own CPU, and
	 * made 64 KiB one-way 0.18x TCP instead of 0.46x (make bench,
	 * 2 vCPUs).  The memory reclaim rescuer keeps sessions moving under
	 * memory pressure.
	 */
	kmsgr_wq = alloc_workqueue("kmsgr", WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	if (!kmsgr_wq) {
		kmem_cache_destroy(kmsgr_tx_cache);
		return -ENOMEM;
	}
	return 0;
}

void kmsgr_sess_exit(void)
{
	destroy_workqueue(kmsgr_wq);
	kmem_cache_destroy(kmsgr_tx_cache);
}
