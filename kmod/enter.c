// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr - ENTER and poll(): consume SQEs, dispatch them to the sessions and
 * the receive pool, wait for CQEs.  Above the sessions (session.c) and the
 * instance memory (mem.c); nothing below calls into it.
 *
 * Inline submission: ENTER writes the SENDs it consumed to their
 * transports itself (kmsgr_sess_push(), after every KMSGR_ENTER_BATCH SQEs
 * and at the end), as far as they take them without waiting; what does
 * not fit is written by the session's work when write space appears.
 *
 * Locking: submit_lock serialises SQ consumption; SQEs are dispatched
 * under it, never under cq_lock (see mem.c).
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/hrtimer.h>
#include <linux/jiffies.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/sched/signal.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/wait.h>

#include "kmsgr.h"
#include "log.h"

/* SQEs consumed between two cond_resched() calls in ENTER. */
#define KMSGR_ENTER_BATCH	64

/* Refresh the CQ (kmsgr_cq_refresh()) and restart paused sessions. */
static u32 kmsgr_enter_refresh(struct kmsgr_instance *inst)
{
	bool resume;
	u32 ready;

	ready = kmsgr_cq_refresh(inst, &resume);
	if (resume)
		kmsgr_sess_resume(inst);
	return ready;
}

/* ---- ENTER -------------------------------------------------------------- */

static bool kmsgr_sqe_is_bdev(const struct kmsgr_sqe *sqe)
{
	return sqe->opcode >= KMSGR_OP_BDEV_WRITE &&
	       sqe->opcode <= KMSGR_OP_BDEV_FLUSH;
}

/* Post the completion of a consumed SQE into its reserved slot. */
static void kmsgr_sqe_complete(struct kmsgr_instance *inst,
			       const struct kmsgr_sqe *sqe, u8 kind, int res)
{
	struct kmsgr_cqe cqe = {
		.user_data = sqe->user_data,
		.res = res,
		.kind = kind,
	};

	if (kind == KMSGR_CQE_SEND)
		cqe.session = sqe->session;
	if (kmsgr_sqe_is_bdev(sqe)) {
		cqe.session = sqe->session;
		cqe.tid = sqe->tid;
	}
	kmsgr_cq_post(inst, &cqe, KMSGR_CQ_RESERVED);
}

/* Slices of a SEND or RELEASE must lie inside the buffer area. */
static bool kmsgr_sqe_slices_ok(struct kmsgr_instance *inst,
				const struct kmsgr_sqe *sqe)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(sqe->seg); i++)
		if ((u64)sqe->seg[i].off + sqe->seg[i].len > inst->buf_size)
			return false;
	return true;
}

/* The flags each opcode takes. */
static const u8 kmsgr_sqe_flags[] = {
	[KMSGR_OP_NOP] = 0,
	[KMSGR_OP_SEND] = KMSGR_SQE_F_SKIP_SUCCESS,
	[KMSGR_OP_RELEASE] = KMSGR_SQE_F_TOKEN,
	[KMSGR_OP_BDEV_WRITE] = KMSGR_SQE_F_FUA | KMSGR_SQE_F_PREFLUSH |
				KMSGR_SQE_F_RELEASE | KMSGR_SQE_F_SKIP_SUCCESS |
				KMSGR_SQE_F_LINK,
	[KMSGR_OP_BDEV_READ] = KMSGR_SQE_F_LINK | KMSGR_SQE_F_SKIP_SUCCESS,
	[KMSGR_OP_BDEV_FLUSH] = KMSGR_SQE_F_SKIP_SUCCESS | KMSGR_SQE_F_LINK,
};

/*
 * Whether the fields @sqe's opcode (a known one) does not use are 0: the
 * message header's for all but SEND; every other one for NOP; @tid for a
 * RELEASE without KMSGR_SQE_F_TOKEN.  A RELEASE's @session is ignored
 * (libkmsgr has always put the RECV's session there).
 */
static bool kmsgr_sqe_unused_zero(const struct kmsgr_sqe *sqe)
{
	unsigned int i;

	if (sqe->opcode == KMSGR_OP_SEND)
		return true;
	if (sqe->type || sqe->version || sqe->compat_version || sqe->priority)
		return false;
	switch (sqe->opcode) {
	case KMSGR_OP_NOP:
		for (i = 0; i < ARRAY_SIZE(sqe->seg); i++)
			if (sqe->seg[i].off || sqe->seg[i].len)
				return false;
		return !sqe->session && !sqe->tid;
	case KMSGR_OP_RELEASE:
		return sqe->flags & KMSGR_SQE_F_TOKEN || !sqe->tid;
	case KMSGR_OP_BDEV_FLUSH:
		for (i = 0; i < ARRAY_SIZE(sqe->seg); i++)
			if (sqe->seg[i].off || sqe->seg[i].len)
				return false;
		return !sqe->tid;
	default:
		return true;	/* the other BDEV ops use the rest */
	}
}

/* Check the fields every opcode shares; 0 or -EINVAL. */
static int kmsgr_sqe_check(struct kmsgr_instance *inst,
			   const struct kmsgr_sqe *sqe)
{
	if (sqe->opcode >= ARRAY_SIZE(kmsgr_sqe_flags) ||
	    sqe->flags & ~kmsgr_sqe_flags[sqe->opcode] || sqe->reserved0)
		return -EINVAL;
	if (sqe->reserved1 ||
	    !(sqe->flags & KMSGR_SQE_F_RELEASE) != !sqe->token ||
	    !kmsgr_sqe_unused_zero(sqe))
		return -EINVAL;
	if (sqe->opcode == KMSGR_OP_NOP)
		return 0;
	return kmsgr_sqe_slices_ok(inst, sqe) ? 0 : -EINVAL;
}

/*
 * RELEASE: free the non-empty slices, all or none: -EINVAL, nothing
 * freed, if any is not a delivered one (of the message whose token the
 * SQE carries, with KMSGR_SQE_F_TOKEN) or two are the same.
 */
static int kmsgr_sqe_release(struct kmsgr_instance *inst,
			     const struct kmsgr_sqe *sqe)
{
	u32 token = 0;
	int ret;

	if (sqe->flags & KMSGR_SQE_F_TOKEN) {
		if (!sqe->tid || sqe->tid > KMSGR_RELEASE_TOKEN_MAX)
			return -EINVAL;
		token = (u32)sqe->tid;
	}
	ret = kmsgr_pool_release(inst, sqe->seg, token);
	if (ret < 0)
		return ret;
	if (ret)
		kmsgr_sess_pool_freed(inst);
	return 0;
}

/* Execute one consumed SQE (a snapshot); its CQ slot is reserved. */
static void kmsgr_sqe_exec(struct kmsgr_instance *inst,
			   const struct kmsgr_sqe *sqe, struct kmsgr_push *push)
	__must_hold(&inst->submit_lock)
{
	int ret;

	ret = kmsgr_sqe_check(inst, sqe);
	if (ret) {
		kmsgr_inst_dbg_ratelimited(inst, "bad SQE opcode %u\n", sqe->opcode);
		kmsgr_sqe_complete(inst, sqe, KMSGR_CQE_OP, ret);
		return;
	}

	switch (sqe->opcode) {
	case KMSGR_OP_NOP:
		kmsgr_sqe_complete(inst, sqe, KMSGR_CQE_OP, 0);
		break;
	case KMSGR_OP_RELEASE:
		ret = kmsgr_sqe_release(inst, sqe);
		if (ret)
			kmsgr_sqe_complete(inst, sqe, KMSGR_CQE_OP, ret);
		else
			kmsgr_sess_unreserve(inst);	/* silent success */
		break;
	case KMSGR_OP_SEND:
		/* On success the session posts the SEND CQE later. */
		ret = kmsgr_sess_send(inst, sqe, push);
		if (ret)
			kmsgr_sqe_complete(inst, sqe, KMSGR_CQE_SEND, ret);
		break;
	default:
		/* the block device ops: their completion posts the CQE */
		ret = kmsgr_bdev_submit(inst, sqe, NULL);
		if (ret)
			kmsgr_sqe_complete(inst, sqe, KMSGR_CQE_OP, ret);
		break;
	}
}

/* The CQE kind of @sqe's completion. */
static u8 kmsgr_sqe_kind(const struct kmsgr_sqe *sqe)
{
	return sqe->opcode == KMSGR_OP_SEND ? KMSGR_CQE_SEND : KMSGR_CQE_OP;
}

/* Whether a non-empty slice of @a and one of @b share a byte. */
static bool kmsgr_sqe_overlap(const struct kmsgr_sqe *a,
			      const struct kmsgr_sqe *b)
{
	unsigned int i, j;

	for (i = 0; i < KMSGR_NSEG; i++) {
		for (j = 0; j < KMSGR_NSEG; j++) {
			if (a->seg[i].len && b->seg[j].len &&
			    (u64)a->seg[i].off < (u64)b->seg[j].off + b->seg[j].len &&
			    (u64)b->seg[j].off < (u64)a->seg[i].off + a->seg[i].len)
				return true;
		}
	}
	return false;
}

/*
 * Execute a BDEV op with KMSGR_SQE_F_LINK and the SQE after it (@next,
 * NULL when this ENTER has none); both CQ slots are reserved.  The op's
 * completion makes the SEND (bdev.c); a pair refused here gets both CQEs
 * at once, the one at fault with its errno, the other -ECANCELED (a SEND
 * of slices the op RELEASEs: the SEND EINVAL).
 */
static void kmsgr_sqe_exec_link(struct kmsgr_instance *inst,
				const struct kmsgr_sqe *sqe,
				const struct kmsgr_sqe *next)
	__must_hold(&inst->submit_lock)
{
	int ret, ret_next = -ECANCELED;

	ret = kmsgr_sqe_check(inst, sqe);
	if (!ret && (!next || next->opcode != KMSGR_OP_SEND))
		ret = -EINVAL;
	if (!ret) {
		ret_next = kmsgr_sqe_check(inst, next);
		/*
		 * A write that RELEASEs its slices frees them when it ends,
		 * before the SEND is made: the SEND cannot carry them.
		 */
		if (!ret_next && (sqe->flags & KMSGR_SQE_F_RELEASE) &&
		    kmsgr_sqe_overlap(sqe, next))
			ret_next = -EINVAL;
		if (ret_next)
			ret = -ECANCELED;
	}
	if (!ret) {
		ret = kmsgr_bdev_submit(inst, sqe, next);
		if (!ret)
			return;
		ret_next = -ECANCELED;
	}
	kmsgr_inst_dbg_ratelimited(inst, "linked SQEs refused: %d, %d\n", ret,
				   ret_next);
	kmsgr_sqe_complete(inst, sqe, KMSGR_CQE_OP, ret);
	if (next)
		kmsgr_sqe_complete(inst, next, kmsgr_sqe_kind(next), ret_next);
}

/* Copy the SQE at the SQ head out (it is consumed once sq_head moves). */
static void kmsgr_sq_peek(struct kmsgr_instance *inst, struct kmsgr_sqe *sqe)
	__must_hold(&inst->submit_lock)
{
	/* One copy; only the snapshot is looked at from here on. */
	memcpy(sqe, &inst->sqes[inst->sq_head & (inst->sq_entries - 1)],
	       sizeof(*sqe));
}

/*
 * Consume up to @max SQEs, each only after reserving its CQ slot.  When
 * it stopped for lack of CQ room, *@need is the slots the next SQE wants
 * (2 for a linked pair), else it is left alone.  Returns the count.
 */
static u32 kmsgr_sq_consume(struct kmsgr_instance *inst, u32 max,
			    u32 *need, struct kmsgr_push *push)
	__must_hold(&inst->submit_lock)
{
	u32 tail, avail, n, done = 0, batch = 0;
	struct kmsgr_sqe sqe, next;
	const struct kmsgr_sqe *last;
	bool cancel, link, linked;

	lockdep_assert_held(&inst->submit_lock);

	/* Pairs with the application's store-release of the tail. */
	tail = smp_load_acquire(inst->sq_ktail);
	avail = min(tail - inst->sq_head, inst->sq_entries);
	max = min(max, avail);

	while (done < max) {
		kmsgr_sq_peek(inst, &sqe);
		cancel = inst->sq_cancel_next;
		/*
		 * A linked pair is consumed whole, with both slots, or not.
		 * LINK on another opcode is a bad flag of that SQE alone.
		 */
		link = !cancel && kmsgr_sqe_is_bdev(&sqe) &&
		       sqe.flags & KMSGR_SQE_F_LINK;
		/* a CQ of under 4 entries never has 2 slots to reserve */
		linked = link && done + 1 < max && inst->cq_entries >= 4;
		if (!kmsgr_cq_reserve(inst, 1 + linked)) {
			*need = 1 + linked;
			break;
		}
		inst->sq_head++;
		if (linked) {
			kmsgr_sq_peek(inst, &next);
			inst->sq_head++;
		}
		n = 1 + linked;
		done += n;
		batch += n;
		inst->stats.sqes += n;
		/*
		 * A LINK refused for want of its SEND here (@max ended, or
		 * too small a CQ), or on a BDEV op that fails whole (one
		 * cancelled, or taken as a pair's second): the SQE after it,
		 * in this ENTER or a later one, must not go out as an
		 * ordinary SEND.
		 */
		last = linked ? &next : &sqe;
		inst->sq_cancel_next = (link && !linked) ||
				       ((cancel || linked) &&
					kmsgr_sqe_is_bdev(last) &&
					last->flags & KMSGR_SQE_F_LINK);
		if (cancel)
			kmsgr_sqe_complete(inst, &sqe, kmsgr_sqe_kind(&sqe),
					   -ECANCELED);
		else if (link)
			kmsgr_sqe_exec_link(inst, &sqe, linked ? &next : NULL);
		else
			kmsgr_sqe_exec(inst, &sqe, push);

		if (batch >= KMSGR_ENTER_BATCH) {
			batch = 0;
			/* Let the application refill the consumed slots. */
			smp_store_release(inst->sq_khead, inst->sq_head);
			kmsgr_sess_push(push);
			cond_resched();
		}
	}
	/* The slots are free once the new head is visible. */
	smp_store_release(inst->sq_khead, inst->sq_head);
	return done;
}

/* An ENTER waiting for min_complete CQEs. */
struct kmsgr_cq_waiter {
	struct wait_queue_entry wqe;
	struct kmsgr_instance *inst;
	u32 want;
	u32 room;		/* also for this many slots given back */
	bool woken_for_room;
};

/*
 * Delivery is paused for want of CQ room or of receive-pool room, and
 * CQEs are there: a waiter for more must return, since what it waits for
 * may be behind the paused delivery (a lossless SEND's CQE comes with the
 * peer's ack, which the session reads only after the message it could not
 * deliver), and the room may come only with the RELEASE of slices that
 * those CQEs hand over.  @locked:
 * under the wait queue's lock (a wake function), where cq_lock, which a
 * waker may hold, cannot be taken: the head last synced is never ahead of
 * the application's, so at worst it wakes the waiter once too often.
 */
static bool kmsgr_cq_reap_first(struct kmsgr_instance *inst, bool locked)
{
	if (!READ_ONCE(inst->cq_paused) && !READ_ONCE(inst->pool_starved))
		return false;
	if (locked)
		return READ_ONCE(inst->cq_tail) != READ_ONCE(inst->cq_head);
	return kmsgr_cq_ready(inst);
}

/*
 * Wake the waiter only once its min_complete CQEs are there (io_uring's
 * threshold wake): a CQE at a time does not bounce a batch waiter in and
 * out of sleep.  Lockless: cq_head is the kernel's last sync of the
 * application's head, never ahead of it, so the count is never below the
 * truth: at worst one wake too many, never one too few.
 */
static int kmsgr_cq_wake_fn(struct wait_queue_entry *wqe, unsigned int mode,
			    int sync, void *key)
{
	struct kmsgr_cq_waiter *w = container_of(wqe, struct kmsgr_cq_waiter,
						 wqe);
	struct kmsgr_instance *inst = w->inst;

	if (key == KMSGR_WAKE_RUN) {
		/* a runner (min_complete 1): it runs the session */
		if (w->want > 1)
			return 0;
	} else if (key == KMSGR_WAKE_ROOM) {
		if (!w->room)
			return 0;
		WRITE_ONCE(w->woken_for_room, true);
	} else if (!w->room && !kmsgr_cq_reap_first(inst, true) &&
		   READ_ONCE(inst->cq_tail) - READ_ONCE(inst->cq_head) <
		   w->want) {
		/*
		 * A waiter for room looks at every post: the completion of
		 * an SQE it consumed frees a reserved slot, and it may be
		 * the room it waits for (it slept on until a signal).
		 */
		return 0;
	}
	return autoremove_wake_function(wqe, mode, sync, key);
}

/*
 * When a wait with a timeout ends.  It is fixed when the wait first
 * cannot end at once (a wait that finds its CQEs reads no clock), in
 * ticks: the sleeps of KMSGR_WAIT_COARSE_MS and more sleep on the timer
 * wheel (never early, at most two ticks late), with no clock read and no
 * hrtimer to program, which an emulated guest pays for in exits to its
 * HPET and local APIC.  The clock's end is worked out only when something
 * needs it (a shorter sleep on an hrtimer, a spin, the confirmation that
 * a run of sessions has used the time up), from the ticks gone by since
 * the start.  Sleeps, spins and runs of one wait all end at the same
 * time, whatever their order: a wait never outlasts its timeout because
 * it ran sessions before it slept, or slept before it ran them.
 */
#define KMSGR_WAIT_COARSE_MS	20

/*
 * The longest wait, 100 years: the clock's end time (ns, signed 64 bits)
 * cannot overflow, where U64_MAX ("for ever") wrapped to an end already
 * passed and the wait ended at once.
 */
#define KMSGR_WAIT_MAX_NS	(100ULL * 365 * 24 * 3600 * NSEC_PER_SEC)

struct kmsgr_cq_deadline {
	u64 ns;			/* the whole timeout; 0: none */
	unsigned long start_j;	/* when it was fixed */
	unsigned long end_j;	/* start_j + 1 + the timeout in ticks */
	ktime_t end;		/* on the clock, once asked for; 0: not yet */
	bool fixed;
};

static void kmsgr_cq_deadline_fix(struct kmsgr_cq_deadline *dl)
{
	if (!dl->ns || dl->fixed)
		return;
	dl->fixed = true;
	dl->start_j = jiffies;
	/*
	 * +1: the tick under way may be nearly over.  Not msecs_to_jiffies():
	 * it takes 2^31 ms (24.9 days) and more for "for ever".  The timeout
	 * is at most 100 years (KMSGR_WAIT_MAX_NS).
	 */
	dl->end_j = dl->start_j + 1 +
		    min_t(u64, nsecs_to_jiffies64(dl->ns + TICK_NSEC - 1),
			  MAX_JIFFY_OFFSET);
}

/*
 * The end on the clock.  The ticks since the start, less one (the start
 * may have been late by up to a tick, as the +1 of end_j allows), have
 * surely passed: never early.  Ticks that come late (a busy or emulated
 * CPU) only make it later.
 */
static ktime_t kmsgr_cq_deadline_end(struct kmsgr_cq_deadline *dl)
{
	unsigned long gone;

	kmsgr_cq_deadline_fix(dl);
	if (!dl->end) {
		gone = jiffies - dl->start_j;
		gone = gone ? gone - 1 : 0;
		/*
		 * jiffies64_to_nsecs(), not jiffies_to_nsecs(): the latter
		 * goes through 32-bit microseconds and wraps after 71.6
		 * minutes, which would put the end that much too late.
		 */
		dl->end = ktime_add_ns(ktime_get(), dl->ns -
				       min_t(u64, jiffies64_to_nsecs(gone),
					     dl->ns));
	}
	return dl->end;
}

/* Whether the time is up: the ticks first, then the clock confirms. */
static bool kmsgr_cq_deadline_passed(struct kmsgr_cq_deadline *dl)
{
	kmsgr_cq_deadline_fix(dl);
	return time_after(jiffies, dl->end_j - 1) &&
	       !ktime_before(ktime_get(), kmsgr_cq_deadline_end(dl));
}

/*
 * Sleep (the task state is set) until woken or the end of @dl; false once
 * that has passed.  @short_wait: what is left of the timeout after a
 * busy-poll is under KMSGR_WAIT_COARSE_MS, so an hrtimer ends it.
 */
static bool kmsgr_cq_sleep(struct kmsgr_cq_deadline *dl, bool short_wait)
{
	long left;

	if (short_wait) {
		ktime_t end = kmsgr_cq_deadline_end(dl);

		return schedule_hrtimeout(&end, HRTIMER_MODE_ABS);
	}
	kmsgr_cq_deadline_fix(dl);
	left = (long)(dl->end_j - jiffies);
	if (left <= 0)
		return false;
	return schedule_timeout(left) > 0;
}

/*
 * How long a waiter spins for polled block I/O after the last CQE it saw
 * posted.  Polled ops that make no progress for that long are not
 * completing (a device that holds them, an NVMe controller in error
 * recovery): the waiter sleeps then, while the instance's poll work
 * keeps polling every tick, and a CQE that work posts wakes it.
 */
#define KMSGR_POLL_SPIN_MS	20

/* Whether the waiter that saw CQ tail *@tail still spins (jiffies *@until). */
static bool kmsgr_cq_spin_on(struct kmsgr_instance *inst, u32 *tail,
			     unsigned long *until)
{
	u32 t = READ_ONCE(inst->cq_tail);

	if (!*until || t != *tail) {
		*tail = t;
		*until = jiffies + 1 + msecs_to_jiffies(KMSGR_POLL_SPIN_MS);
		return true;
	}
	return time_before(jiffies, *until);
}

/*
 * Spin instead of sleeping (polled block I/O is out): false once the end
 * of @dl has passed.
 */
static bool kmsgr_cq_spin(struct kmsgr_cq_deadline *dl)
{
	if (dl->ns && !ktime_before(ktime_get(), kmsgr_cq_deadline_end(dl)))
		return false;
	cond_resched();
	return true;
}

/*
 * Busy-poll (kmsgr_enter.busy_poll_us): spin rather than sleep until @ns
 * after the first call; false once that has passed.  local_clock(), as
 * the network stack's busy polling uses: no exit to an emulated HPET per
 * look, and this CPU's own clock is all a spin needs.
 */
static bool kmsgr_cq_busy(u64 ns, u64 *end)
{
	u64 now = local_clock();

	if (!*end)
		*end = now + ns;
	else if (now >= *end)
		return false;
	cond_resched();
	cpu_relax();
	return true;
}

/*
 * Wait until @want CQEs are ready, or with @room until that many slots
 * can be reserved (SQEs were left for want of them: 2 for a linked
 * pair); 0, -ETIME or -EINTR.
 * While polled block I/O is out (KMSGR_BDEV_F_POLL) it polls the devices
 * and spins rather than sleeps, as long as CQEs keep coming
 * (KMSGR_POLL_SPIN_MS): the poll work would complete that I/O only at
 * the next tick.
 * With @busy_ns it spins that long first, its time taken from @timeout_ns;
 * a runner spinning is still a registered runner, so the sessions kicked
 * meanwhile are queued for it and it runs them at its next look.
 * @bdev_runner: the caller is a registered block runner already.
 */
static int kmsgr_cq_wait(struct kmsgr_instance *inst, u32 want,
			 u64 timeout_ns, u64 busy_ns, u32 room, bool bdev_runner)
{
	struct kmsgr_cq_waiter w = {
		.inst = inst,
		.want = min(want, inst->cq_entries),
		.room = room,
	};
	struct kmsgr_cq_deadline dl = { .ns = timeout_ns };
	bool expired = false, busy_all = false, runner, spin;
	unsigned long spin_j = 0;
	u32 spin_tail = 0;
	u64 busy_end = 0;
	int ret = 0;

	/*
	 * The spin counts on local_clock(), which can run at another rate
	 * than the clock the caller times the wait by (an emulated TSC
	 * against the HPET: a 2 ms spin took 1.1 ms of CLOCK_MONOTONIC once),
	 * and ticks may come late while it spins: the wait's end is fixed on
	 * that clock now, and the sleep after the spin, or the rest of a spin
	 * that was the whole wait, runs up to it.
	 */
	if (timeout_ns && busy_ns)
		kmsgr_cq_deadline_end(&dl);
	if (timeout_ns && busy_ns >= timeout_ns) {
		busy_ns = timeout_ns;
		busy_all = true;	/* the spin is the whole wait */
	} else if (timeout_ns) {
		timeout_ns -= busy_ns;	/* what is left once the spin ends */
	}
	init_wait(&w.wqe);
	w.wqe.func = kmsgr_cq_wake_fn;
	/*
	 * A waiter for one CQE runs the sessions kicked meanwhile itself
	 * (latency: one wake-up instead of a worker's and then its own); a
	 * batch waiter leaves them to the workers and sleeps until its
	 * min_complete CQEs are there.
	 */
	runner = bdev_runner || (w.want <= 1 && READ_ONCE(kmsgr_enter_runs));
	if (runner) {
		kmsgr_sess_rx_wait_begin(inst);
		if (!bdev_runner)
			kmsgr_bdev_run_begin(inst);
	}
	for (;;) {
		spin = kmsgr_bdev_polling(inst) && kmsgr_bdev_poll(inst);
		/* a busy-poll looks itself: on the wait queue only to sleep */
		if (!busy_ns)
			prepare_to_wait(&inst->cq_wait, &w.wqe,
					TASK_INTERRUPTIBLE);
		if (kmsgr_cq_ready(inst) >= w.want ||
		    kmsgr_cq_reap_first(inst, false) ||
		    READ_ONCE(w.woken_for_room) ||
		    (w.room && kmsgr_cq_can_reserve(inst, w.room)))
			break;
		kmsgr_cq_deadline_fix(&dl);
		if (runner && !expired && !signal_pending(current) &&
		    (kmsgr_sess_rx_pending(inst) ||
		     kmsgr_bdev_done_pending(inst) ||
		     kmsgr_fault_set(KMSGR_FAULT_RUN_SPIN))) {
			/*
			 * run the kicked sessions and the linked SENDs of
			 * finished block I/O here, then look again
			 */
			__set_current_state(TASK_RUNNING);
			kmsgr_sess_rx_run(inst);
			kmsgr_bdev_run_done(inst);
			/* sessions kicked again and again must not hog the CPU */
			cond_resched();
			/* ... nor outlast the timeout (ticks, then the clock) */
			if (dl.ns && kmsgr_cq_deadline_passed(&dl))
				expired = true;	/* one last look */
			continue;
		}
		if (expired) {
			ret = -ETIME;
			break;
		}
		if (signal_pending(current)) {
			/* a restart would start the timeout anew */
			ret = -EINTR;
			break;
		}
		if (busy_ns) {
			__set_current_state(TASK_RUNNING);
			if (kmsgr_cq_busy(busy_ns, &busy_end))
				continue;
			/* spun out: one more look, on the queue, then sleep */
			busy_ns = 0;
			if (busy_all &&
			    !ktime_before(ktime_get(), kmsgr_cq_deadline_end(&dl)))
				expired = true;
			continue;
		}
		if (spin && kmsgr_cq_spin_on(inst, &spin_tail, &spin_j)) {
			__set_current_state(TASK_RUNNING);
			if (!kmsgr_cq_spin(&dl))
				expired = true;
		} else if (!dl.ns) {
			schedule();
		} else if (!kmsgr_cq_sleep(&dl, timeout_ns <
				KMSGR_WAIT_COARSE_MS * NSEC_PER_MSEC)) {
			/*
			 * its time was up before it slept: the state is still
			 * the one prepare_to_wait() set, and the last look
			 * may poll and allocate (linked SENDs)
			 */
			__set_current_state(TASK_RUNNING);
			expired = true;	/* one last look */
		}
	}
	finish_wait(&inst->cq_wait, &w.wqe);
	if (runner) {
		if (!bdev_runner)
			kmsgr_bdev_run_end(inst);
		kmsgr_sess_rx_wait_end(inst);
	}
	return ret;
}

/**
 * kmsgr_inst_enter() - KMSGR_IOC_ENTER: consume SQEs, optionally wait
 * @inst: the instance
 * @uarg: struct kmsgr_enter in user memory
 *
 * Consumes up to to_submit SQEs (never more than the SQ holds), each only
 * when its completion has a reserved CQ slot and fewer than
 * cq_entries - cq_entries / 2 completions are outstanding.  Every consumed SQE gets
 * exactly one CQE: an error KMSGR_CQE_OP when it is invalid, else that of
 * its opcode (none for a successful RELEASE).  Then flushes waiting events,
 * restarts delivery paused by a full CQ if room has appeared, and with
 * KMSGR_ENTER_F_GETEVENTS waits until min_complete CQEs (at most the CQ
 * size) are ready (the waiter is woken only then), or, when SQEs were left
 * for want of a CQ slot, until a slot is given back without a CQE (a SEND
 * with KMSGR_SQE_F_SKIP_SUCCESS succeeded): then it returns what it
 * consumed, and the caller submits again.  GETEVENTS also polls the
 * instance's polled block I/O (KMSGR_BDEV_F_POLL), once with min_complete
 * 0, and spins while waiting for it (while CQEs keep coming).  Also call
 * it (to_submit 0) after consuming CQEs while the CQ ring has
 * KMSGR_RING_F_CQ_PAUSED set; poll() does the same.
 *
 * Return: the number of SQEs consumed, also written to submitted; if none
 * was: 0; -EBUSY (without GETEVENTS) when SQEs were waiting but the CQ had
 * no room for their completions (reap CQEs first); -ETIME when the wait
 * timed out, -EINTR on a signal (also when SQEs were consumed: see
 * submitted).  -EINVAL before SETUP or for a bad flag or reserved field;
 * -EFAULT.
 */
int kmsgr_inst_enter(struct kmsgr_instance *inst,
		     struct kmsgr_enter __user *uarg)
{
	struct kmsgr_push push = { .n = 0 };
	struct kmsgr_enter e;
	u32 done = 0, need = 0;
	bool runner;
	int ret = 0;

	if (copy_from_user(&e, uarg, sizeof(e)))
		return -EFAULT;
	if (e.flags & ~KMSGR_ENTER_F_GETEVENTS || e.reserved32 || e.reserved ||
	    e.busy_poll_us > KMSGR_BUSY_POLL_MAX_US ||
	    (e.busy_poll_us && !(e.flags & KMSGR_ENTER_F_GETEVENTS)))
		return -EINVAL;
	if (!kmsgr_inst_ready(inst))
		return -EINVAL;

	/*
	 * An ENTER that will wait for one CQE (and so run what ends for it,
	 * kmsgr_cq_wait()) takes the linked ops that end from here on: a
	 * fast device may end a READ before the submission path reaches the
	 * wait, and its SEND would go by a work item instead.
	 */
	runner = e.to_submit && e.flags & KMSGR_ENTER_F_GETEVENTS &&
		 e.min_complete == 1 && READ_ONCE(kmsgr_enter_runs);
	if (e.to_submit) {
		/*
		 * Another thread's ENTER may hold it for long (asleep in
		 * submit_bio() for a tag, a frozen queue): a signal ends the
		 * wait for it, nothing consumed.
		 */
		if (mutex_lock_interruptible(&inst->submit_lock)) {
			if (put_user(0, &uarg->submitted))
				return -EFAULT;
			return -EINTR;
		}
		/*
		 * Not before the lock: a runner waiting for it here would take
		 * the ends of every linked op while another submitter holds it
		 */
		if (runner)
			kmsgr_bdev_run_begin(inst);
		done = kmsgr_sq_consume(inst, e.to_submit, &need, &push);
		mutex_unlock(&inst->submit_lock);
		/* write the SENDs out from here: no work-item hop */
		kmsgr_sess_push(&push);
	}
	kmsgr_enter_refresh(inst);

	/*
	 * With GETEVENTS a CQ without room is no error: the slots are either
	 * unread (the wait ends at once) or reserved by SENDs in flight (their
	 * completions end it).
	 */
	if (e.flags & KMSGR_ENTER_F_GETEVENTS && e.min_complete)
		ret = kmsgr_cq_wait(inst, e.min_complete,
				    min(e.timeout_ns, KMSGR_WAIT_MAX_NS),
				    (u64)e.busy_poll_us * NSEC_PER_USEC,
				    done < e.to_submit ? need : 0, runner);
	else if (!done && need)
		ret = -EBUSY;
	/* GETEVENTS without a wait still reaps polled block I/O, once */
	if (e.flags & KMSGR_ENTER_F_GETEVENTS && !e.min_complete &&
	    kmsgr_bdev_polling(inst))
		kmsgr_bdev_poll(inst);
	/* what was handed to us and not run: to the link work */
	if (runner)
		kmsgr_bdev_run_end(inst);

	if (put_user(done, &uarg->submitted) && !done)
		return -EFAULT;
	/*
	 * A signal ends the call as -EINTR even when SQEs were consumed
	 * (submitted says how many): reported as a count, the wait would
	 * look merely short, the caller would wait again, and a handler
	 * that asked it to stop would not be heard.
	 */
	if (ret == -EINTR)
		return ret;
	return done ? done : ret;
}

/* ---- poll --------------------------------------------------------------- */

/**
 * kmsgr_inst_poll() - EPOLLIN | EPOLLRDNORM while the CQ is not empty
 * @inst: the instance
 * @file: its file
 * @wait: poll table
 *
 * Also flushes waiting events and restarts paused delivery, like ENTER.
 *
 * Return: the mask; 0 before SETUP.
 */
__poll_t kmsgr_inst_poll(struct kmsgr_instance *inst, struct file *file,
			 poll_table *wait)
{
	poll_wait(file, &inst->cq_wait, wait);
	if (!kmsgr_inst_ready(inst))
		return 0;
	return kmsgr_enter_refresh(inst) ? EPOLLIN | EPOLLRDNORM : 0;
}
