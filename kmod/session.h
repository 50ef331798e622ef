/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kmsgr - the session layer's own header: the objects of inst->objs
 * (sessions and listeners), connections, and what session.c, listener.c,
 * conn_io.c and main.c (CLOSE, teardown) share.  Not for mem.c, bdev.c
 * or enter.c, which see only kmsgr.h.
 *
 * Layers, each calling only those below it:
 *
 *   main.c      module, /dev/kmsgr, ioctl dispatch, CLOSE, instance teardown
 *   enter.c     ENTER and poll: SQE dispatch, CQ waits
 *   bdev.c      block devices: ATTACH/DETACH_BDEV, bios over the area
 *   listener.c  LISTEN, accept, listener teardown
 *   session.c   sessions: CONNECT, server sessions, the state machine and
 *               the engine's callbacks, SEND, timers, teardown
 *   conn_io.c   bytes between a msgr2 connection and its transport
 *   mem.c       rings, CQ, buffer area, receive pool
 *   xprt_tcp.c, msgr2/   transports and the msgr2 engine
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#ifndef KMSGR_SESSION_H
#define KMSGR_SESSION_H

#include <linux/kref.h>
#include <linux/list.h>
#include <linux/llist.h>
#include <linux/mutex.h>
#include <linux/socket.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/workqueue.h>

#include "kmsgr.h"
#include "xprt.h"
#include "msgr2/msgr2.h"
#include "msgr2/auth_cephx.h"

/* bytes a connection reads ahead of the engine's want (kmsgr_conn_recv()) */
#define KMSGR_CONN_STAGE		8192

enum kmsgr_obj_kind {
	KMSGR_OBJ_SESS = 1,
	KMSGR_OBJ_LISTENER,
};

/* What inst->objs holds: the head of a session or a listener. */
struct kmsgr_obj {
	struct kref ref;
	u32 kind;			/* KMSGR_OBJ_* */
	u32 id;
	struct kmsgr_instance *inst;
	u64 user_data;
	struct list_head teardown;	/* kmsgr_close_all() */
};

enum kmsgr_sess_state {
	KMSGR_SESS_CONNECTING,		/* transport connect in progress */
	KMSGR_SESS_HANDSHAKE,		/* msgr2 banner .. READY */
	KMSGR_SESS_UP,
	KMSGR_SESS_BACKOFF,		/* lossless client: waits to redial */
	KMSGR_SESS_WAITING,		/* lossless server: client may resume
					 * until retry_at (resume_timeout)
					 */
	KMSGR_SESS_DEAD,		/* over: CLOSED posted, or owed until
					 * the received messages are out; a
					 * client waits for CLOSE, a server
					 * retires itself
					 */
	KMSGR_SESS_CLOSED,		/* torn down */
};

/* One SEND: the engine's message and the SQE's user_data. */
struct kmsgr_tx {
	struct msgr2_msg m;
	u64 user_data;
	struct llist_node sq_node;	/* on its session's sendq */
	bool skip_success;	/* KMSGR_SQE_F_SKIP_SUCCESS */
};

struct kmsgr_sess;

/* One transport connection and its engine state (conn_io.c). */
struct kmsgr_conn {
	struct kmsgr_sess *sess;	/* owner; read by the kick (RCU) */
	struct kmsgr_sess *adopt;	/* server: session being resumed */
	struct kmsgr_xprt *xprt;
	struct msgr2_conn *mc;		/* kvzalloc(msgr2_conn_size()) */
	u32 rx_off[MSGR2_NSEG];		/* pool slices of the inbound message */
	bool engine;			/* msgr2_conn_init() succeeded */
	bool connected;			/* transport connect finished */
	unsigned long rx_at;		/* jiffies: last bytes received */
	unsigned long rx_msg_at;	/* jiffies: payload allocated for the
					 * message being received, 0: none
					 */
	struct kmsgr_spill *rx_spill;	/* it is received into this */
	bool rx_waits;			/* rx_alloc found no room: nothing is
					 * read until the session resumes
					 */
	/*
	 * The destination of a message the connection's failure ended
	 * while the transport may still write into it (an RDMA READ under
	 * way): freed after the transport closed (kmsgr_conn_free()).
	 */
	struct kmsgr_instance *doomed_inst;
	struct kmsgr_slice doomed[MSGR2_NSEG];
	struct kmsgr_spill *doomed_spill;
	u8 *stage;			/* KMSGR_CONN_STAGE bytes read ahead
					 * (transports without ops->read(),
					 * from their first read)
					 */
	u32 stage_pos, stage_len;	/* [pos, len) not yet given out */
};

/*
 * An inbound message of a lossless session held in kernel memory because
 * the receive pool had no room for it (see kmsgr_conn_rx_alloc()).  It is
 * the session's (the engine counted and acknowledged it) and is copied
 * into the pool and delivered, in order, as soon as there is room.
 */
struct kmsgr_spill {
	struct list_head node;		/* on sess->spill */
	struct msgr2_msg_hdr hdr;
	u32 len[MSGR2_NSEG];
	u8 data[];
};

/*
 * A listener.  Its accepted connections start as embryos: server sessions
 * on @embryos, owned by the listener, invisible to the application (not in
 * inst->objs, no id) until their handshake reaches READY.  Then
 * kmsgr_sess_announce() moves them into inst->objs under a new id and
 * posts ACCEPTED; from there on CLOSE (or the final close of the file)
 * owns them.  An embryo that fails is torn down by its reaper, or by the
 * listener's teardown, whichever unlinks it first (under @lock).
 */
struct kmsgr_listener {
	struct kmsgr_obj obj;
	const struct kmsgr_xprt_type *xtype;	/* held (kmsgr_xprt_get()) */
	struct kmsgr_xprt *xprt;	/* set once the transport listens;
					 * the accept work reads it acquired
					 */
	u32 flags;			/* KMSGR_SESS_F_* of accepted sessions */
	u32 nonce;			/* of our entity_addr_t */
	u8 my_type;			/* entity type we present */
	u16 auth;			/* KMSGR_AUTH_* clients use */
	struct msgr2_cephx_entity *keys; /* cephx: accepted entities, wiped
					  * and freed with the listener
					  */
	u32 n_keys;
	spinlock_t lock;		/* closing, embryos, nr_embryos */
	bool closing;
	struct list_head embryos;	/* kmsgr_sess.embryo */
	u32 nr_embryos;
	u64 accepted;			/* sessions announced (lock) */
	u64 refused;			/* connections refused (lock) */
	struct sockaddr_storage bound;	/* local address (lock) */
	struct delayed_work accept_work;
};

struct kmsgr_sess {
	struct kmsgr_obj obj;
	struct mutex lock;		/* everything below */
	enum kmsgr_sess_state state;
	bool server;
	bool announced;			/* server: ACCEPTED posted */
	bool down_posted;		/* DOWN posted since the last UP */
	bool no_cq;			/* teardown of the instance: no CQEs */
	bool cq_quiet;			/* a batch: post quietly, wake after */
	bool cq_owed;			/* posted quietly, nobody woken yet */
	bool paused;			/* rx waits for CQ/pool room (R/W once) */
	struct list_head spill;		/* struct kmsgr_spill, oldest first */
	u32 spill_bytes;		/* on it, and being received into one */
	bool stall_logged;		/* this pause was reported */
	unsigned long paused_at;	/* jiffies: since when */
	bool rx_held;			/* @rx_cqe found the CQ full */
	struct kmsgr_cqe rx_cqe;
	/*
	 * DEAD with a held RECV or spilled messages: its CLOSED waits for
	 * them (kmsgr_sess_end()), with this reason and result
	 */
	bool closed_owed;
	u16 closed_reason;
	int closed_res;
	u32 listener_id;		/* server */
	struct kmsgr_listener *listener; /* server: holds a reference */
	struct list_head embryo;	/* on listener->embryos (its lock) */
	bool embryo_linked;		/* on it (listener->lock) */
	bool handed_over;		/* embryo: its connection went to the
					 * session its client resumed
					 */
	u32 peer_key;			/* server, cephx: 1 + the index of the
					 * listener key the peer authenticated
					 * with (set once, when announced);
					 * 0: none
					 */
	u32 backoff_ms;
	unsigned long retry_at;		/* jiffies: BACKOFF redial, WAITING end */
	unsigned long active_at;	/* jiffies: last message in or out */
	const struct kmsgr_xprt_type *xtype;
	struct sockaddr_storage peer;	/* client: where to dial; server:
					 * where the connection came from
					 */
	struct kmsgr_conn *conn;
	struct msgr2_session ms;
	struct msgr2_config cfg;
	struct msgr2_auth_none anone;
	struct msgr2_auth_cephx *cephx;	/* holds the key: kfree_sensitive */
	struct msgr2_auth_cephx_server *cephx_server;	/* server, cephx */
	struct msgr2_cephx_authorizer *cephx_az; /* client, a mon's ticket */
	void *tx_scratch;		/* secure: sealed message tails */
	size_t tx_scratch_len;
	struct work_struct work;	/* runs kmsgr_sess_service() */
	/*
	 * SENDs not yet given to the engine: any submitter adds (no lock),
	 * whoever holds @lock takes them all (kmsgr_sess_take_sendq()).  A
	 * submitter that does not get @lock at once queues @send_work with
	 * a reference of its own, so that no SEND waits on the list for
	 * nobody (kmsgr_sess_push()).
	 */
	struct llist_head sendq;
	struct work_struct send_work;
	struct list_head timed_node;	/* on inst->timed (inst->timer_lock) */
	unsigned long wake_at;		/* jiffies: queue @work then */
	struct work_struct reap_work;	/* failed fresh server sessions */
	bool reap_queued;		/* reap_work queued, once only (lock) */
	struct list_head rx_node;	/* on inst->rx_list (inst->rx_lock) */
	bool rx_queued;			/* on it, with a reference */
	/* what netlink reports (under @lock) */
	u8 con_mode;			/* MSGR2_CON_MODE_* of the last auth */
	/*
	 * keepalive_timeout when the session was made (s, 0: off): its
	 * keepalives were timed by it, so its silence is too
	 */
	unsigned int ka_secs;
	u32 ups;			/* UP events (reconnects: ups - 1) */
	u32 in_flight;			/* SENDs queued, not completed */
	u64 msgs_out, bytes_out;	/* SENDs completed successfully */
	u64 msgs_in, bytes_in;		/* messages delivered */
	int last_error;			/* of the last connection lost */
	u16 last_reason;
};

/* ---- session.c ------------------------------------------------------------ */

void kmsgr_obj_put(struct kmsgr_obj *obj);
/*
 * A new id (cyclic from 1) into *@id, its slot in inst->objs reserved:
 * lookups find nothing there until kmsgr_obj_publish() puts the object
 * with that id in it (cannot fail: 0, or a WARN), or xa_release() gives
 * it back.
 */
int kmsgr_obj_reserve(struct kmsgr_instance *inst, u32 *id);
int kmsgr_obj_publish(struct kmsgr_instance *inst, struct kmsgr_obj *obj);
/* Count a session or listener against max_sessions: 0 or -ENOSPC. */
int kmsgr_sess_charge(struct kmsgr_instance *inst);
/*
 * Listener: a fresh server session (an embryo of @l) on the accepted
 * transport @x, started.  On failure @x is still the caller's (and the
 * refusal was reported).
 */
int kmsgr_sess_accept(struct kmsgr_listener *l, struct kmsgr_xprt *x);
/* Listener: its transport accepts nothing more (@err): KMSGR_EV_REFUSED. */
void kmsgr_listener_stopped(struct kmsgr_listener *l, int err);
/*
 * Tear a session down (out of inst->objs, past a grace period; or an
 * embryo its listener unlinked): with @post its last CQE is CLOSED.
 * Drops the objs reference.
 */
void kmsgr_sess_teardown(struct kmsgr_sess *s, bool post, bool from_reaper);

/* uapi addresses and transports */
int kmsgr_addr_to_ss(const struct kmsgr_addr *a, struct sockaddr_storage *ss);
void kmsgr_ss_to_addr(const struct sockaddr_storage *ss, struct kmsgr_addr *a);
bool kmsgr_entity_type_ok(u8 t);

/* ---- listener.c ----------------------------------------------------------- */

/* Stop accepting, tear down the embryos, drop the objs reference. */
void kmsgr_listener_teardown(struct kmsgr_listener *l);

/* ---- conn_io.c ------------------------------------------------------------ */

/* A connection of @s (its engine memory), no transport yet. */
struct kmsgr_conn *kmsgr_conn_alloc(struct kmsgr_sess *s);
/* Close the transport (no kick after this), release the engine, free. */
void kmsgr_conn_free(struct kmsgr_conn *kc);
int kmsgr_conn_flush(struct kmsgr_conn *kc, const struct kmsgr_xprt_zc *zc);
/* kmsgr_conn_rx_round() results */
enum {
	KMSGR_RX_IDLE,
	KMSGR_RX_DONE,
	KMSGR_RX_FAIL,
};

int kmsgr_conn_rx_round(struct kmsgr_conn *kc, int *err);

#endif /* KMSGR_SESSION_H */
