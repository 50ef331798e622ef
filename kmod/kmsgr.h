/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kmsgr - private definitions shared by the files of kmsgr.ko.
 *
 *   main.c       module init/exit, the misc device, fops, ioctl dispatch
 *   netlink.c    the generic netlink family: show, stats, monitor
 *   params.c     module parameters
 *   enter.c      ENTER and poll
 *   close.c      CLOSE, closing all at the end of the instance
 *   listener.c   LISTEN, accept, listener teardown
 *   session.c    sessions: CONNECT, server sessions, the engine's
 *                callbacks, SEND, timers, reconnects
 *   conn_io.c    bytes between a msgr2_conn and its transport
 *   bdev.c       ATTACH_BDEV, DETACH_BDEV, the BDEV SQEs (bios over the
 *                buffer area)
 *   keys.c       cephx secrets from the kernel's "logon" keys
 *   mem.c        SETUP, mmap, the SQ and CQ rings, the CQ producer, the
 *                buffer area and its receive pool
 *   xprt.h       the transport interface; xprt_tcp.c: kernel TCP sockets
 * Each calls only the files below it in this list (session.h draws the
 * layers); lower layers reach upper ones only through callbacks they were
 * given (the engine's struct msgr2_ops, the transports' kick functions).
 *
 * Locking, outermost first: the instance registry's mutex (session.c;
 * held only to step a netlink walk from one instance to the next, which
 * then holds that instance by a count its release waits for) >
 * inst->lock (control ioctls: main.c holds it around INFO, SETUP, LISTEN
 * and CONNECT; CLOSE only while it unlinks the id, then tears down
 * without it) or inst->submit_lock (ENTER:
 * SQ consumption, calls kmsgr_sess_send(); never nested with inst->lock) >
 * sess->lock (one session's engine state) > inst->cq_lock (CQ producer,
 * pool).  Nothing sleeps under cq_lock.  Two sess->locks nest only as a
 * fresh, unannounced server session > the established session of the
 * same listener that its client resumes (session.c, attach).
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#ifndef KMSGR_H
#define KMSGR_H

#include <linux/llist.h>
#include <linux/mm_types.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/socket.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/uidgid.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include <linux/kmsgr.h>

#include "xprt.h"

/* Module version; lib/ and tools/ take theirs from this line too. */
#define KMSGR_VERSION		"0.1.0"

/* Polled block I/O, where the kernel's bio_poll() allows it (compat.h). */
#ifdef COMPAT_CANNOT_POLL_FROZEN
#define KMSGR_FEAT_BDEV_POLL_BUILT	0
#else
#define KMSGR_FEAT_BDEV_POLL_BUILT	KMSGR_FEAT_BDEV_POLL
#endif

/* logon keys need the kernel's key retention service (keys.c) */
#if IS_ENABLED(CONFIG_KEYS)
#define KMSGR_FEAT_LOGON_KEYS_BUILT	KMSGR_FEAT_LOGON_KEYS
#else
#define KMSGR_FEAT_LOGON_KEYS_BUILT	0
#endif

/* Every KMSGR_FEAT_* bit this build implements. */
#define KMSGR_FEAT_SUPPORTED	(KMSGR_FEAT_INFO | KMSGR_FEAT_RINGS | \
				 KMSGR_FEAT_TCP | KMSGR_FEAT_CEPHX | \
				 KMSGR_FEAT_SECURE | KMSGR_FEAT_RELEASE_TOKEN | \
				 KMSGR_FEAT_LISTEN_CEPHX | \
				 KMSGR_FEAT_SKIP_SUCCESS | KMSGR_FEAT_INFO_POOL | \
				 KMSGR_FEAT_RING_LINES | \
				 KMSGR_FEAT_LOGON_KEYS_BUILT | \
				 KMSGR_FEAT_CEPHX_TICKETS | KMSGR_FEAT_BDEV | \
				 KMSGR_FEAT_BDEV_LINK | KMSGR_FEAT_BDEV_POLL_BUILT | \
				 KMSGR_FEAT_BUSY_POLL | KMSGR_FEAT_PEER_KEY)

/* Receive-pool allocation unit (bytes). */
#define KMSGR_POOL_GRAIN	512

/*
 * struct kmsgr_inst_stats - counters of one instance (for netlink later).
 * @sqes and the bdev_* counters are written under submit_lock, the rest
 * under cq_lock (@sqe_errors by kmsgr_cq_post() of an SQE's completion,
 * wherever it fails); readers may read them racily.
 */
struct kmsgr_inst_stats {
	u64 sqes;		/* SQEs consumed */
	u64 sqe_errors;		/* of which completed with an error */
	u64 cqes;		/* CQEs posted */
	u64 cq_full;		/* posts refused or deferred: CQ full */
	u64 cq_overflow;	/* events queued on the overflow list */
	u64 cq_lost;		/* events lost: overflow list full, no memory */
	u64 pool_bytes;		/* receive-pool bytes allocated now */
	u64 pool_full;		/* pool allocations refused */
	u64 bdev_ops;		/* BDEV SQEs submitted (submit_lock) */
	u64 bdev_read_bytes;	/* ... bytes of their READs */
	u64 bdev_write_bytes;	/* ... bytes of their WRITEs */
};

/*
 * The smallest CQ: consumed SQEs may reserve all but half of it
 * (rounded down), so from 2 entries up one slot is always left to
 * inbound messages, which carry the acknowledgments lossless SENDs wait
 * for.
 */
#define KMSGR_CQ_MIN_ENTRIES	2U

/* module parameters (params.c) */
extern unsigned int kmsgr_max_sq_entries;
extern unsigned int kmsgr_max_cq_entries;
extern unsigned long kmsgr_max_buf_size;
extern unsigned int kmsgr_max_sessions;
extern unsigned int kmsgr_max_half_open;
extern unsigned int kmsgr_keepalive_timeout;	/* seconds, 0: off */
extern unsigned int kmsgr_idle_timeout;		/* seconds, 0: off */
extern unsigned int kmsgr_resume_timeout;	/* seconds */
extern unsigned int kmsgr_msg_timeout;		/* seconds, 0: off */
extern unsigned int kmsgr_handshake_timeout;	/* seconds, 0: 10 */
extern unsigned int kmsgr_rx_spill_max;		/* bytes per session */
extern bool kmsgr_enter_runs;		/* ENTER waiters run sessions */
extern unsigned int kmsgr_tx_zerocopy_min;	/* bytes; 0: off */
extern bool kmsgr_tcp_zerocopy;		/* TCP: by reference at all */

/*
 * Fault-injection points (params.c; a module built with KMSGR_FAULT=y):
 * kmsgr_fault() waits there when the point's bit is set in the module
 * parameter fault_points, widening a race window for the tests;
 * kmsgr_fault_set() tells the points that change behaviour instead.
 */
enum kmsgr_fault_point {
	KMSGR_FAULT_KICK_WAKE,		/* kick queued a session for ENTER
					 * waiters, before it wakes them
					 */
	KMSGR_FAULT_RUN_TAKEN,		/* an ENTER runner took a session off
					 * the list, before it services it
					 */
	KMSGR_FAULT_HANDOFF,		/* the last ENTER waiter took the list,
					 * before it hands it to the workers
					 */
	KMSGR_FAULT_REAP,		/* the reaper took a retiring server
					 * session out, before its teardown
					 */
	KMSGR_FAULT_BDEV_POLL,		/* a poller took its bio and handle
					 * references, before bio_poll()
					 */
	KMSGR_FAULT_BDEV_LINK,		/* a BDEV op is done, before its
					 * linked SEND is made
					 */
	KMSGR_FAULT_TX_MORE,		/* not a delay: every send() of a
					 * flush announces more, so that each
					 * flush ends by the transport's push()
					 */
	KMSGR_FAULT_RUN_SPIN,		/* not a delay: an ENTER waiter that
					 * runs sessions always finds one
					 * kicked (it must still time out)
					 */
	KMSGR_FAULT_BDEV_LINK_WORK,	/* not a delay: a linked BDEV op
					 * that ends goes to a work item even
					 * when an ENTER runner waits
					 */
	KMSGR_FAULT_SEND_DEFER,		/* not a delay: a push never tries
					 * the session lock; every SEND goes
					 * by the session's send work
					 */
	KMSGR_FAULT_SEND_WORK,		/* the send work, before it takes
					 * the session lock; while set, the
					 * lock's other holders leave the
					 * send list to it
					 */
	KMSGR_FAULT_SEND_LATE,		/* a SEND passed its state check,
					 * before it goes on the send list
					 */
	KMSGR_FAULT_CONNECT_ID,		/* CONNECT has its session's id,
					 * before it tells the caller
					 */
	KMSGR_FAULT_BDEV_ATTACHED,	/* ATTACH_BDEV linked its handle,
					 * before it tells the caller
					 */
	KMSGR_FAULT_ACCEPT_FAIL,	/* not a delay: a listener's accept
					 * fails with -ENOMEM (as when its
					 * memcg is at its limit)
					 */
	KMSGR_FAULT_NL_WALK,		/* a netlink walk holds an instance,
					 * before it looks at it
					 */
	KMSGR_FAULT_LISTEN,		/* a transport listens (and may
					 * kick), before LISTEN has it
					 */
	KMSGR_FAULT_BDEV_SUBMITTED,	/* ENTER submitted a BDEV op's bios,
					 * before it goes on
					 */
	KMSGR_FAULT_BACKLOG,		/* not a delay: kmsgr_cq_backlogged()
					 * says yes, as with 2048 events
					 * waiting on the overflow list
					 */
	KMSGR_FAULT_TX_RESET,		/* not a delay, once (the bit clears
					 * itself): a TCP send() that goes
					 * in several socket calls aborts
					 * the socket after the first, as a
					 * peer's reset would (ECONNRESET)
					 */
	KMSGR_FAULT_CONNECT_PUBLISH,	/* CONNECT dialled, before it
					 * publishes its session's id
					 */
	KMSGR_FAULT_BDEV_POLL_DM,	/* not a delay: ATTACH_BDEV polls
					 * a device-mapper device (not safe:
					 * kmsgr_bdev_open()), for a test of
					 * the poll passes with dm-delay
					 */
};

#ifdef KMSGR_FAULT
void kmsgr_fault(unsigned int point, bool atomic);
/* whether @point's bit is set (the points that change behaviour) */
bool kmsgr_fault_set(unsigned int point);
/* whether @point's bit was set; it is cleared (the one-shot points) */
bool kmsgr_fault_take(unsigned int point);
#else
static inline void kmsgr_fault(unsigned int point, bool atomic)
{
}

static inline bool kmsgr_fault_set(unsigned int point)
{
	return false;
}

static inline bool kmsgr_fault_take(unsigned int point)
{
	return false;
}
#endif

/**
 * struct kmsgr_instance - state of one open file of /dev/kmsgr
 *
 * Allocated by open(), freed by the final release() of the file after every
 * session and listener is gone.
 */
struct kmsgr_instance {
	u64 id;
	struct pid *tgid;		/* the opener's thread group */
	char comm[TASK_COMM_LEN];	/* ... its comm at open() */
	kuid_t uid;			/* ... its euid: netlink visibility */
	struct list_head node;		/* on the registry (session.c) */
	atomic_t walkers;		/* netlink walks holding it: release
					 * waits for them (kmsgr_inst_walk())
					 */
	struct net *net;		/* the opener's; its sockets live there */
	struct mem_cgroup *memcg;	/* the opener's: charged for the kernel
					 * memory of sessions, also from work
					 * items (set_active_memcg())
					 */
	struct mutex lock;		/* serialises control ioctls, SETUP */

	/* ---- instance.c: rings, buffer area, pool (after SETUP) ---- */
	bool setup_done;
	struct kmsgr_ring *sq;		/* vmalloc_user(), mmap'd */
	u32 *sq_khead, *sq_ktail;	/* its counters (kmsgr_ring.*_off) */
	struct kmsgr_sqe *sqes;
	size_t sq_size;
	struct kmsgr_ring *cq;		/* vmalloc_user(), mmap'd */
	u32 *cq_khead, *cq_ktail;
	struct kmsgr_cqe *cqes;
	size_t cq_size;
	u32 sq_head;			/* kernel copy: next SQE to consume */
	bool sq_cancel_next;		/* the SQE at sq_head follows a LINK
					 * that had none after it: it is
					 * completed with -ECANCELED
					 */
	void *buf;			/* vmalloc_user() buffer area */
	u64 buf_size;
	u64 pool_off;			/* receive pool: [pool_off, buf_size) */
	unsigned long *pool_used;	/* bitmap, one bit per grain */
	unsigned long *pool_start;	/* first grain of each allocation */
	u32 *pool_token;		/* per first grain: release token, 0
					 * while being received into
					 */
	u32 pool_grains;
	struct mm_struct *mm;		/* of SETUP: its VmPin shows the area */
	struct user_struct *user;	/* charged for RLIMIT_MEMLOCK, or NULL
					 * (CAP_IPC_LOCK)
					 */
	unsigned long locked_pages;
	spinlock_t cq_lock;		/* CQ tail, reservations, pool */
	u32 cq_tail;			/* kernel copy */
	u32 cq_reserved;		/* slots promised to in-flight SQEs */
	struct list_head cq_overflow;	/* events that found the CQ full */
	wait_queue_head_t cq_wait;	/* ENTER waiters and poll() */
	u32 sq_entries;			/* kernel copies of the ring sizes */
	u32 cq_entries;
	struct mutex submit_lock;	/* ENTER: SQ consumption, sq_head */
	u32 cq_head;			/* last sane CQ head read (cq_lock) */
	u32 cq_overflow_nr;		/* entries on cq_overflow (cq_lock) */
	bool cq_paused;			/* a post found the CQ full (cq_lock) */
	bool pool_starved;		/* an allocation failed (cq_lock) */
	u32 pool_hint;			/* next grain to search (cq_lock) */
	u32 pool_waiter;		/* who waits for room first, or 0 */
	u32 pool_wait_first;		/* ... promised [first, +grains) */
	u32 pool_wait_grains;
	unsigned long pool_wait_at;	/* ... last asked (jiffies) */
	struct kmsgr_inst_stats stats;

	/* ---- session.c: sessions and listeners ---- */
	struct xarray objs;		/* id -> session or listener */
	u32 next_id;
	atomic_t tokens;		/* release tokens handed out */
	atomic_t nr_sessions;		/* charged: max_sessions */
	atomic_t nr_live;		/* session objects not yet freed */
	wait_queue_head_t objs_wait;	/* teardown waits for objs to drain */
	bool objs_used;			/* a session or listener was charged */
	spinlock_t rx_lock;		/* the two below; any context */
	unsigned int rx_waiters;	/* ENTERs asleep that run sessions */
	struct list_head rx_list;	/* sessions kicked for them to run */
	spinlock_t timer_lock;		/* the two below; any context */
	struct list_head timed;		/* sessions with a wake-up time */
	struct timer_list timer;	/* at the earliest of them */
	/* kmsgr_sess_resume() from an interrupt: the walk, on kmsgr_wq */
	struct work_struct resume_work;

	/* ---- bdev.c: attached block devices (submit_lock) ---- */
	struct xarray bdevs;		/* handle -> struct kmsgr_bdev_h */
	u32 nr_bdevs;
	u32 bdev_next;			/* next handle to try */
	/* polled ops (KMSGR_BDEV_F_POLL): bdev_poll_lock, any context */
	spinlock_t bdev_poll_lock;
	struct list_head bdev_polled;	/* ops with a polled bio out */
	struct llist_head bdev_done;	/* linked ops the poller finishes */
	struct task_struct *bdev_poller; /* who polls now, or NULL */
	unsigned int bdev_runners;	/* ENTERs that finish them too */
	/* what a runner has not taken in time goes to bdev_link_work */
	struct delayed_work bdev_done_work;
	struct delayed_work bdev_poll_work; /* polls when no ENTER does */
	/* linked ops no ENTER finishes: bdev_link_work, one at a time */
	struct llist_head bdev_link;
	struct work_struct bdev_link_work;

	/*
	 * ---- the transports: memory of its connections (netlink) ----
	 * Written only by the transports its sessions and listeners
	 * connect() and listen() with, until they close them (see struct
	 * kmsgr_xprt_acct): every one is closed before release() frees the
	 * instance.  Read racily.
	 */
	struct kmsgr_xprt_acct xacct;
};

/* ---- netlink.c: the generic netlink family "kmsgr" (below main.c) ------ */

int kmsgr_nl_init(void);
void kmsgr_nl_exit(void);

/* ---- enter.c: ENTER and poll (above the sessions) ---------------------- */

int kmsgr_inst_enter(struct kmsgr_instance *inst,
		     struct kmsgr_enter __user *uarg);
__poll_t kmsgr_inst_poll(struct kmsgr_instance *inst, struct file *file,
			 poll_table *wait);

/* ---- mem.c: rings, CQ, buffer area, receive pool (the bottom) ----------- */

int kmsgr_inst_setup(struct kmsgr_instance *inst,
		     struct kmsgr_setup __user *uarg);
int kmsgr_inst_mmap(struct kmsgr_instance *inst, struct vm_area_struct *vma);
/* SETUP has happened: the rings and the area exist */
bool kmsgr_inst_ready(struct kmsgr_instance *inst);
/* free rings and buffer area; sessions are already gone */
void kmsgr_inst_teardown(struct kmsgr_instance *inst);
/* receive-pool bytes in use now (0 before SETUP) */
u64 kmsgr_pool_in_use(struct kmsgr_instance *inst);
/* open(): initialise the mem.c fields (locks, lists, wait queue) */
void kmsgr_inst_init(struct kmsgr_instance *inst);

/*
 * Post a completion.  Returns 0, or -ENOSPC when the CQ (excluding slots
 * reserved for in-flight SQEs) is full; with KMSGR_CQ_RESERVED the caller
 * consumes one of the reserved slots (SEND completions), which never
 * fails.  Wakes waiters, unless KMSGR_CQ_QUIET: then the caller posts a
 * batch and calls kmsgr_cq_wake() once after it.  Callable from any
 * context.
 */
#define KMSGR_CQ_RESERVED	BIT(0)
#define KMSGR_CQ_QUIET		BIT(1)
int kmsgr_cq_post(struct kmsgr_instance *inst, const struct kmsgr_cqe *cqe,
		  unsigned int flags);
/* Wake the CQ's waiters whose wait is over (after KMSGR_CQ_QUIET posts). */
void kmsgr_cq_wake(struct kmsgr_instance *inst);
/* Wake key of a slot given back: ENTERs with SQEs left over look again. */
#define KMSGR_WAKE_ROOM		poll_to_key(EPOLLOUT | EPOLLWRNORM)
/* Wake key of a session kicked for the ENTER waiters to run. */
#define KMSGR_WAKE_RUN		poll_to_key(EPOLLPRI)
/* Wake the ENTER waiters to run what a kick queued (KMSGR_WAKE_RUN). */
void kmsgr_cq_wake_runners(struct kmsgr_instance *inst);
/*
 * Resync the head, flush overflowed events; *@resume when paused delivery
 * may go on again (the caller calls kmsgr_sess_resume()).  Returns the
 * CQEs ready.
 */
u32 kmsgr_cq_refresh(struct kmsgr_instance *inst, bool *resume);
/* CQEs ready (syncs the head only). */
u32 kmsgr_cq_ready(struct kmsgr_instance *inst);
/* Whether the application's unread events are so many that listeners refuse */
bool kmsgr_cq_backlogged(struct kmsgr_instance *inst);
/* Reserve a slot for the completion of one SQE; false when none may be. */
bool kmsgr_cq_reserve(struct kmsgr_instance *inst, u32 n);
/* Whether kmsgr_cq_reserve() of @n slots could succeed now. */
bool kmsgr_cq_can_reserve(struct kmsgr_instance *inst, u32 n);
/* A consumed SQE completes without a CQE: give its reserved slot back. */
bool kmsgr_cq_unreserve(struct kmsgr_instance *inst);
/* Post a session event; queued on the overflow list if the CQ is full. */
void kmsgr_cq_post_event(struct kmsgr_instance *inst,
			 const struct kmsgr_cqe *cqe);
/* The same for an event that may be left out when the CQ is long full. */
void kmsgr_cq_post_note(struct kmsgr_instance *inst,
			const struct kmsgr_cqe *cqe);
/*
 * Free CQ slots now (not counting reservations).  0 marks delivery paused:
 * kmsgr_sess_resume() is called when ENTER or poll() finds room again.
 */
u32 kmsgr_cq_room(struct kmsgr_instance *inst);

/* Receive pool (see mem.c for the details). */
#define KMSGR_NSEG		3
bool kmsgr_pool_too_big(struct kmsgr_instance *inst, const u32 *len,
			unsigned int n);
int kmsgr_pool_alloc_msg(struct kmsgr_instance *inst, u32 who,
			 const u32 *len, u32 *off, unsigned int n);
void kmsgr_pool_unwait(struct kmsgr_instance *inst, u32 who);
u32 kmsgr_pool_token(struct kmsgr_instance *inst);
int kmsgr_pool_free(struct kmsgr_instance *inst, u32 off, u32 len);
/* The kernel frees the slices of a message it will not deliver (len 0: none). */
void kmsgr_pool_free_msg(struct kmsgr_instance *inst,
			 const struct kmsgr_slice *seg, unsigned int n);
/*
 * Kernel address of buffer-area bytes [off, off + len), or NULL when the
 * range is not inside the area (or SETUP has not happened).
 */
void *kmsgr_buf_ptr(struct kmsgr_instance *inst, u64 off, u64 len);

/*
 * Take the delivered slices of one message (len 0: unused) from the
 * application, all or none: they stay allocated, and a RELEASE of them
 * fails, until the kernel frees them (kmsgr_pool_free()).  -EINVAL
 * unless each is exactly one delivered allocation with @token.
 */
int kmsgr_pool_take(struct kmsgr_instance *inst, const struct kmsgr_slice *seg,
		    u32 token);
/*
 * RELEASE: free the delivered slices of one message (len 0: unused), all
 * or none.  @token 0 (the ABI 1 form) takes any delivered slice.  The
 * number of slices freed, or -EINVAL (nothing freed) unless each is
 * exactly one delivered allocation, with @token if non-zero, and no two
 * are the same.
 */
int kmsgr_pool_release(struct kmsgr_instance *inst,
		       const struct kmsgr_slice *seg, u32 token);
/* Whether an allocation failed since the last call (then resume). */
bool kmsgr_pool_take_starved(struct kmsgr_instance *inst);

/* ---- keys.c: cephx secrets from logon keys (below the sessions) --------- */

/*
 * Copy the payload of the caller's "logon" key @desc (exactly @len bytes)
 * into @secret.  -EINVAL (@desc does not start with KMSGR_KEY_DESC_PREFIX,
 * the uapi's: not a kmsgr key), -ENOKEY (none), -EKEYREVOKED,
 * -EKEYEXPIRED, -EACCES, -EKEYREJECTED (its payload is not @len bytes),
 * -EOPNOTSUPP without CONFIG_KEYS.
 */
int kmsgr_key_logon(const char *desc, u8 *secret, size_t len);
/* longest key description CONNECT takes, NUL included */
#define KMSGR_KEY_DESC_MAX	256
/* "kmsgr:TYPE.ID" for an entity (a listener's logon keys); -EINVAL type */
int kmsgr_key_entity_desc(char *buf, size_t size, u8 type, const char *id);

/* ---- session.c ---------------------------------------------------------- */

int kmsgr_sess_connect(struct kmsgr_instance *inst,
		       struct kmsgr_connect __user *uarg);
/*
 * Sessions one ENTER queued SENDs on: it writes them out itself when it
 * has consumed its SQEs (inline submission); more than KMSGR_PUSH_MAX
 * fall back to their send work.  Each entry holds a reference.
 */
#define KMSGR_PUSH_MAX		8
struct kmsgr_sess;
struct kmsgr_push {
	unsigned int n;
	struct kmsgr_sess *sess[KMSGR_PUSH_MAX];
};

/*
 * Queue a SEND whose fields were already copied and checked (slices inside
 * the area) on its session's lock-free send list; its CQ slot is reserved.
 * Takes no lock.  Returns 0 (a KMSGR_CQE_SEND follows: -EPIPE or
 * -ECONNRESET if the session ends before the SEND reaches its engine) or
 * -errno (-ENOENT unknown session, -EPIPE closed, -EMSGSIZE too big):
 * then the caller posts the error CQE itself.  On success the session is
 * added to @push, to be written out by kmsgr_sess_push().
 */
int kmsgr_sess_send(struct kmsgr_instance *inst, const struct kmsgr_sqe *sqe,
		    struct kmsgr_push *push);
/*
 * Write what the sessions of @push have queued to their transports, as
 * far as they take it without waiting (the rest goes when they have
 * room, from the session's work), and drop the references.  A session
 * whose lock is held is not waited for: the holder or the session's send
 * work writes its SENDs.  Process context; no instance lock held but
 * submit_lock, which ENTER holds while it pushes every
 * KMSGR_ENTER_BATCH SQEs of a long batch (a failed write then ends its
 * connection there too: other ENTERs, ATTACH and DETACH wait meanwhile).
 */
void kmsgr_sess_push(struct kmsgr_push *push);
/*
 * An ENTER about to sleep for CQEs runs the sessions whose sockets kick
 * meanwhile itself, in its own context, instead of waking a worker that
 * then wakes it (io_uring's task work): _begin() before its wait loop,
 * _run() whenever it finds kmsgr_sess_rx_pending() (true when it ran
 * any), _end() after (what is still pending goes to the workers).
 */
void kmsgr_sess_rx_wait_begin(struct kmsgr_instance *inst);
bool kmsgr_sess_rx_pending(struct kmsgr_instance *inst);
bool kmsgr_sess_rx_run(struct kmsgr_instance *inst);
void kmsgr_sess_rx_wait_end(struct kmsgr_instance *inst);
/*
 * CQ or pool room appeared: restart sessions paused by backpressure.  Any
 * context; from an interrupt it queues inst->resume_work.
 */
void kmsgr_sess_resume(struct kmsgr_instance *inst);
/* Receive-pool slices were freed: restart the sessions starved of them. */
void kmsgr_sess_pool_freed(struct kmsgr_instance *inst);
/* Give back a CQ slot reserved for an SQE's completion, resuming delivery. */
void kmsgr_sess_unreserve(struct kmsgr_instance *inst);

/*
 * open(): initialise the session.c fields (objs, counters), give @inst its
 * id and add it to the registry that netlink walks.
 */
void kmsgr_sess_inst_init(struct kmsgr_instance *inst);
/* release(): out of the registry, before its sessions are torn down */
void kmsgr_sess_inst_exit(struct kmsgr_instance *inst);
/* release(): after the block ops, nothing resumes sessions any more */
void kmsgr_sess_inst_drain(struct kmsgr_instance *inst);

/*
 * What netlink reports of a session or a listener (kmsgr_obj_info_next(),
 * the notifier): a snapshot taken under the object's lock.
 */
struct kmsgr_obj_info {
	bool listener;
	u32 id;
	u64 user_data;
	u32 transport;			/* KMSGR_XPRT_* */
	struct sockaddr_storage local;	/* ss_family 0: unknown */
	struct sockaddr_storage peer;
	u32 auth;			/* KMSGR_AUTH_* */
	/* sessions */
	bool server;
	bool lossless;
	u32 listener_id;
	u8 state;			/* enum kmsgr_session_state (uapi) */
	u8 mode;			/* enum kmsgr_session_mode */
	u8 peer_type;
	s64 peer_gid;
	u64 msgs_out, bytes_out, msgs_in, bytes_in;
	u32 in_flight;
	u32 reconnects;
	int last_error;
	u16 last_reason;
	/* listeners */
	u32 flags;			/* KMSGR_SESS_F_* */
	u8 my_type;
	u32 half_open;
	u64 accepted, refused;
};

/*
 * The session or listener of @inst with the smallest id >= *@id (of the
 * kind asked for): its snapshot in @info, its id in *@id; -ENOENT when
 * there is none.  Process context; takes the object's lock.
 */
int kmsgr_obj_info_next(struct kmsgr_instance *inst, u32 *id, bool listener,
			struct kmsgr_obj_info *info);

/*
 * Walk the registered instances with an id > *@after, in id order: @fn
 * returns 0 to go on, anything else stops the walk and is returned.
 * *@after is the id of the last instance @fn finished (returned 0 for),
 * so a walk that stopped resumes at the instance it stopped at.  @fn runs
 * with no registry lock held, on an instance whose release waits for it
 * (nothing of it is torn down meanwhile); it may sleep, but never on
 * inst->lock, whose holder may wait on user memory for as long as that
 * user likes: only the session and submit locks, held for bounded work.
 */
int kmsgr_inst_walk(u64 *after,
		    int (*fn)(struct kmsgr_instance *inst, void *arg),
		    void *arg);

/* Module-wide counters (netlink STATS_GET), summed over the CPUs. */
struct kmsgr_stats {
	u64 connects, accepts, refused, reconnects, faults;
	u64 msgs_out, bytes_out, msgs_in, bytes_in;
};

void kmsgr_stats_read(struct kmsgr_stats *st);

/*
 * Where session and listener events go besides the CQ (netlink's monitor
 * group): @want is asked first, so that nothing is built for nobody;
 * @event gets the snapshot.  Called in process context: a session's
 * events under its lock, a listener's with no lock held.  Set once by
 * netlink.c at module init, cleared at exit.
 */
struct kmsgr_notifier {
	bool (*want)(struct kmsgr_instance *inst);
	void (*event)(struct kmsgr_instance *inst,
		      const struct kmsgr_obj_info *info, u8 ev, u16 reason,
		      int res);
};

void kmsgr_set_notifier(const struct kmsgr_notifier *n);

/*
 * Runs sessions' and listeners' work items and the SENDs linked to
 * block-device reads (unbound, WQ_MEM_RECLAIM).
 */
extern struct workqueue_struct *kmsgr_wq;
int kmsgr_sess_init(void);	/* module init: workqueue */
void kmsgr_sess_exit(void);

/* ---- bdev.c: block devices (above session.c, below enter.c) ------------ */

/* open(): an empty handle table */
void kmsgr_bdev_inst_init(struct kmsgr_instance *inst);
int kmsgr_bdev_attach(struct kmsgr_instance *inst,
		      struct kmsgr_bdev __user *uarg);
int kmsgr_bdev_detach(struct kmsgr_instance *inst,
		      struct kmsgr_bdev_detach __user *uarg);
/* release(): detach every device, once its ops have completed */
void kmsgr_bdev_detach_all(struct kmsgr_instance *inst);

/*
 * What netlink reports of an attached block device: a snapshot taken
 * while a count in the handle's inflight holds it (kmsgr_bdev_info_next()).
 */
#define KMSGR_BDEV_NAME_LEN	32	/* the block layer's BDEVNAME_SIZE */
struct kmsgr_bdev_info {
	u32 id;				/* the handle */
	char name[KMSGR_BDEV_NAME_LEN];	/* as %pg prints it: "nvme0n1" */
	dev_t dev;
	u32 lbs, pbs;
	u64 capacity;			/* bytes, now */
	u32 flags;			/* KMSGR_BDEV_F_* attached with */
	u32 attrs;			/* KMSGR_BDEV_A_*, now */
	bool gone;			/* went away: later ops fail ENXIO */
	u32 in_flight;			/* ops submitted, not completed */
	u64 read_ops, write_ops, flush_ops;
	u64 read_bytes, write_bytes;
	u64 errors;			/* ops completed with an error */
};

/*
 * The device attached to @inst with the smallest handle >= *@id: its
 * snapshot in @info, its handle in *@id; -ENOENT when there is none.
 * Process context; takes only the bdevs xarray's lock, never submit_lock
 * (an ENTER may sleep under it in submit_bio()), so a netlink walk may
 * call it (kmsgr_inst_walk()).
 */
int kmsgr_bdev_info_next(struct kmsgr_instance *inst, u32 *id,
			 struct kmsgr_bdev_info *info);
/*
 * Start a BDEV SQE (flags, reserved fields and slices checked): 0 when
 * its KMSGR_CQE_OP follows into the reserved slot, else the errno.
 * @link: the SEND linked to the op (checked too, its slot reserved):
 * made once the op succeeded, else completed with -ECANCELED.
 */
int kmsgr_bdev_submit(struct kmsgr_instance *inst, const struct kmsgr_sqe *sqe,
		      const struct kmsgr_sqe *link);
/* polled ops of @inst are out (KMSGR_BDEV_F_POLL); racy */
static inline bool kmsgr_bdev_polling(struct kmsgr_instance *inst)
{
	return !list_empty_careful(&inst->bdev_polled);
}

/*
 * One pass over @inst's polled ops (process context, TASK_RUNNING):
 * completes what the devices finished, linked SENDs included.  True
 * while polled ops are still out.
 */
bool kmsgr_bdev_poll(struct kmsgr_instance *inst);

/*
 * An ENTER that waits for one CQE (a runner) also finishes linked ops
 * (their SENDs) whose bios ended meanwhile, instead of a work item:
 * between kmsgr_bdev_run_begin() and kmsgr_bdev_run_end() they are handed
 * to it and it is woken; kmsgr_bdev_run_done() finishes them (process
 * context); the last runner to end gives what is left to the instance's
 * work item.
 */
void kmsgr_bdev_run_begin(struct kmsgr_instance *inst);
void kmsgr_bdev_run_end(struct kmsgr_instance *inst);
void kmsgr_bdev_run_done(struct kmsgr_instance *inst);
static inline bool kmsgr_bdev_done_pending(struct kmsgr_instance *inst)
{
	return !llist_empty(&inst->bdev_done);
}

/* ---- listener.c ---------------------------------------------------------- */

int kmsgr_listen(struct kmsgr_instance *inst, struct kmsgr_listen __user *uarg);

/* ---- close.c ------------------------------------------------------------- */

int kmsgr_close(struct kmsgr_instance *inst, struct kmsgr_close __user *uarg);
/* close every session and listener and wait until they are gone */
void kmsgr_close_all(struct kmsgr_instance *inst);

#endif /* KMSGR_H */
