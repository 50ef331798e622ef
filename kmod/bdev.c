// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr - block devices: ATTACH_BDEV, DETACH_BDEV and the BDEV SQEs, which
 * move bytes between a block device and the buffer area's own pages (bios
 * built over them, no copy).  Above mem.c (CQ, receive pool) and
 * session.c (resuming sessions the pool starved); below enter.c (which
 * hands it BDEV SQEs) and main.c.
 *
 * Who touches what:
 *  - inst->bdevs (handle -> struct kmsgr_bdev_h) and inst->nr_bdevs change
 *    only under inst->submit_lock, which ENTER holds while it looks a
 *    handle up and counts an op in h->inflight: an op is either counted
 *    before DETACH takes the handle out, or finds no handle.
 *  - h->inflight: ops submitted and not completed, pollers holding @h
 *    (counted while an op counts) and netlink readers (counted under the
 *    bdevs xarray's lock, so only while it is linked).  Whoever took the
 *    handle out (DETACH, the instance's end) waits for it to reach 0, then
 *    lets the device go and frees @h.
 *  - An op's completion (kmsgr_bio_op_done(), any context: the last bio's
 *    end_io) posts its CQE into the slot ENTER reserved, frees the slices
 *    it took from the application, and only then drops h->inflight; after
 *    that it dereferences neither @h nor the instance (wake_up_var() uses
 *    the address as a key only).  So both outlive every op, and the
 *    instance's rings and area are freed only after kmsgr_bdev_detach_all().
 *  - An op with a linked SEND hands that last step to process context
 *    (the session wants it): to an ENTER waiting for one CQE when there
 *    is one (inst->bdev_runners, under bdev_poll_lock: the op goes on
 *    inst->bdev_done and the runner is woken; the last runner to leave
 *    hands what is left on to the work item, and so does
 *    inst->bdev_done_work, KMSGR_BDEV_RUNNER_WAIT after a hand-off, if
 *    the runner has not taken it by then: one still submitting may sleep
 *    in submit_bio() for a long time), else to the instance's one
 *    work item (inst->bdev_link, inst->bdev_link_work on kmsgr_wq): one
 *    task at a time makes those SENDs, never several workers that queue
 *    on a session's lock.  Whoever finishes a batch posts each op's CQE
 *    and queues its SEND (or completes it -ECANCELED), writes the SENDs
 *    out in one push per session, and only then drops each op's
 *    h->inflight, so the sessions, and the buffer area the SENDs are
 *    read from, are still there for it.  The instance's end (after every
 *    h->inflight is 0) waits for the work item to return.
 *  - Polled ops (KMSGR_BDEV_F_POLL): an op whose bio is still REQ_POLLED
 *    when submit_bio() returns goes on inst->bdev_polled (bdev_poll_lock)
 *    then, not before (a stacked device builds its bio's poll state
 *    inside submit_bio(), and bio_poll() is for a submitted bio), and
 *    stays there, holding a reference to that bio (op->pbio), until it is
 *    done.  A bio that the block layer split (or a stacked device could
 *    not poll) has lost the flag by then, and one that a multipath
 *    failover takes off polling later loses it then: those end by
 *    interrupt, are not listed or are dropped by the poller, and nobody
 *    spins for them.  Nothing completes the others but a poll of their
 *    hardware queue, so kmsgr_bdev_poll() polls: the ENTER that waits for
 *    CQEs, or inst->bdev_poll_work when no ENTER does.  One task at a
 *    time polls an instance (inst->bdev_poller).  Under the lock it takes
 *    a bio reference, an h->inflight count and an entry of the bio's
 *    queue for each bio it will poll, so neither the bio nor the device
 *    (a multipath path's included) goes away under bio_poll(), and a bio
 *    that ended has no cookie left (kmsgr_bio_enter()).  A pass takes at
 *    most KMSGR_POLL_BATCH bios, and the next one starts after them.  A
 *    linked op that ends in the poller's own context (its bio_poll()) is
 *    not handed to a work item: the poller makes its SEND on return
 *    (inst->bdev_done), in process context, with no hop.
 *  - Device mapper is not polled (kmsgr_bdev_open()): it may submit our
 *    bio again, still polled, from another task that builds the bio's
 *    poll state while our poller reads it.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/highmem.h>
#include <linux/percpu-refcount.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <linux/wait_bit.h>
#include <linux/xarray.h>

#include "kmsgr.h"
#include "log.h"

/* Largest BDEV_READ or BDEV_WRITE (kmsgr_bdev.max_io). */
#define KMSGR_BDEV_MAX_IO	(8U << 20)

/* One attached device. */
struct kmsgr_bdev_h {
	struct block_device *bdev;
	fmode_t mode;			/* as opened, for blkdev_put() */
	u32 id;
	bool rdonly;
	bool poll;			/* KMSGR_BDEV_F_POLL */
	atomic_t inflight;		/* ops (and pollers) not yet done */
	/*
	 * For netlink (kmsgr_bdev_info_next(), which reads them without
	 * a lock): ops submitted, counted before their bios go out
	 */
	atomic64_t ops, read_ops, write_ops, flush_ops;
	atomic64_t read_bytes, write_bytes;
	atomic64_t done;		/* ops completed (their CQE posted) */
	atomic64_t errors;		/* ... with an error */
};

/* One BDEV SQE in flight: its bios, then its CQE (and its linked SEND). */
struct kmsgr_bio_op {
	struct kmsgr_instance *inst;
	struct kmsgr_bdev_h *h;
	struct kmsgr_cqe cqe;		/* posted when the last bio ends */
	atomic_t bios;			/* bios not ended, + 1 while building */
	int error;			/* the first bio error */
	bool read;
	bool release;			/* free @seg when done (taken slices) */
	bool skip_success;		/* no CQE when it succeeds */
	bool linked;			/* @link is made when the op is done */
	struct bio *pbio;		/* its REQ_POLLED bio, referenced */
	struct list_head poll_node;	/* on inst->bdev_polled while out */
	struct llist_node done_node;	/* on inst->bdev_done or bdev_link */
	struct kmsgr_slice seg[KMSGR_NSEG];
	struct kmsgr_sqe link;		/* the SEND linked to the op */
};

static void kmsgr_bdev_poll_work(struct work_struct *work);
static void kmsgr_bdev_link_work(struct work_struct *work);
static void kmsgr_bdev_done_work(struct work_struct *work);

void kmsgr_bdev_inst_init(struct kmsgr_instance *inst)
{
	xa_init_flags(&inst->bdevs, XA_FLAGS_ALLOC1);
	spin_lock_init(&inst->bdev_poll_lock);
	INIT_LIST_HEAD(&inst->bdev_polled);
	init_llist_head(&inst->bdev_done);
	INIT_DELAYED_WORK(&inst->bdev_done_work, kmsgr_bdev_done_work);
	INIT_DELAYED_WORK(&inst->bdev_poll_work, kmsgr_bdev_poll_work);
	init_llist_head(&inst->bdev_link);
	INIT_WORK(&inst->bdev_link_work, kmsgr_bdev_link_work);
}

/* Drop a count of @h->inflight: the last touch of @h. */
static void kmsgr_bdev_h_put(struct kmsgr_bdev_h *h)
{
	/* a detach waiting on it may free @h now */
	if (atomic_dec_and_test(&h->inflight))
		wake_up_var(&h->inflight);
}

/* ---- attach and detach --------------------------------------------------- */

/* Wait for @h's ops (it is out of inst->bdevs), let the device go. */
static void kmsgr_bdev_put(struct kmsgr_bdev_h *h)
{
	wait_var_event(&h->inflight, !atomic_read(&h->inflight));
	blkdev_put(h->bdev, h->mode);
	kfree(h);
}

/*
 * Take handle @id out (no op can find it afterwards): the handle, NULL if
 * none, or ERR_PTR(-EINTR) when @killable and a fatal signal came while
 * an ENTER held submit_lock (it may sleep under it in submit_bio()).
 */
static struct kmsgr_bdev_h *kmsgr_bdev_unlink(struct kmsgr_instance *inst,
					      u32 id, bool killable)
{
	struct kmsgr_bdev_h *h;

	if (!killable)
		mutex_lock(&inst->submit_lock);
	else if (mutex_lock_killable(&inst->submit_lock))
		return ERR_PTR(-EINTR);
	h = xa_erase(&inst->bdevs, id);
	if (h)
		inst->nr_bdevs--;
	mutex_unlock(&inst->submit_lock);
	return h;
}

/* Open the device behind @fd as @flags ask; the handle is not linked. */
static int kmsgr_bdev_open(struct kmsgr_instance *inst,
			   const struct kmsgr_bdev *a,
			   struct kmsgr_bdev_h **out)
{
	bool rdonly = a->flags & KMSGR_BDEV_F_RDONLY;
	struct block_device *bdev;
	struct kmsgr_bdev_h *h;
	struct file *f;
	fmode_t mode;
	dev_t dev;
	int ret;

	f = fget(a->fd);
	if (!f)
		return -EBADF;
	ret = -ENOTBLK;
	if (!S_ISBLK(file_inode(f)->i_mode))
		goto out_fput;
	/* the caller could open it for what it asks, and did */
	ret = -EBADF;
	if (!(f->f_mode & FMODE_READ) ||
	    (!rdonly && !(f->f_mode & FMODE_WRITE)))
		goto out_fput;
	dev = file_inode(f)->i_rdev;

	ret = -ENOMEM;
	h = kzalloc(sizeof(*h), GFP_KERNEL_ACCOUNT);
	if (!h)
		goto out_fput;
	mode = FMODE_READ | (rdonly ? 0 : FMODE_WRITE);
	if (a->flags & KMSGR_BDEV_F_EXCL)
		mode |= FMODE_EXCL;
	bdev = blkdev_get_by_dev(dev, mode, mode & FMODE_EXCL ? inst : NULL);
	if (IS_ERR(bdev)) {
		ret = PTR_ERR(bdev);
		goto out_free;
	}
	/*
	 * The device the fd was opened on, not another that got its number
	 * since (a disk unplugged, a partition deleted and made again): the
	 * fd's access was checked for that one only.
	 */
	ret = -ENXIO;
	if (bdev != I_BDEV(f->f_mapping->host))
		goto out_put;
	if (a->flags & KMSGR_BDEV_F_POLL) {
		/*
		 * No poll queues: its bios would quietly lose REQ_POLLED.
		 * A build without the feature (a kernel whose bio_poll()
		 * can sleep on a freezing queue, compat.h) polls nothing.
		 */
		ret = -EOPNOTSUPP;
		if (!(KMSGR_FEAT_SUPPORTED & KMSGR_FEAT_BDEV_POLL) ||
		    !test_bit(QUEUE_FLAG_POLL,
			      &bdev_get_queue(bdev)->queue_flags))
			goto out_put;
		/*
		 * Device mapper (the bio-based driver with ->poll_bio)
		 * builds a bio's poll state (bi_private, bi_cookie) in the
		 * task that submits it, and it may submit ours again from
		 * one of its own workers, still REQ_POLLED: after a suspend
		 * (queue_io()), or after blk-throttle held it.  Our poller
		 * may be in dm_poll_bio() on that bio meanwhile, and take
		 * the op for device mapper's list of clones; and a bio
		 * that a target requeues loses REQ_POLLED while a part of
		 * it still waits for a poll.  REQ_NOWAIT covers the first
		 * case only.  So device mapper is not polled; an NVMe
		 * multipath head (bio-based, no ->poll_bio) passes its bios
		 * on to a path's blk-mq queue, where they are polled.
		 */
		if (bdev->bd_disk->fops->poll_bio &&
		    !kmsgr_fault_set(KMSGR_FAULT_BDEV_POLL_DM))
			goto out_put;
		h->poll = true;
	}
	/*
	 * The BDEV ops go past the device's page cache, as O_DIRECT does:
	 * what buffered writers left dirty there goes to the device now,
	 * and the clean pages go, so that neither a later writeback nor a
	 * buffered reader undoes or hides what the ops write.
	 */
	ret = sync_blockdev(bdev);
	if (ret)
		goto out_put;
	invalidate_bdev(bdev);
	h->bdev = bdev;
	h->mode = mode;
	h->rdonly = rdonly || bdev_read_only(bdev);
	atomic_set(&h->inflight, 0);
	*out = h;
	fput(f);
	return 0;

out_put:
	blkdev_put(bdev, mode);
out_free:
	kfree(h);
out_fput:
	fput(f);
	return ret;
}

/**
 * kmsgr_bdev_attach() - KMSGR_IOC_ATTACH_BDEV
 * @inst: the instance (set up)
 * @uarg: struct kmsgr_bdev in user memory
 *
 * Return: 0; -EINVAL (before SETUP, a bad flag or reserved field),
 * -EFAULT, -EBADF, -ENOTBLK, -EMFILE (KMSGR_BDEV_MAX attached), or what
 * opening the device gave (-EBUSY when claimed, -ENXIO when gone, ...).
 */
int kmsgr_bdev_attach(struct kmsgr_instance *inst,
		      struct kmsgr_bdev __user *uarg)
{
	struct kmsgr_bdev_h *h;
	struct kmsgr_bdev a;
	int ret;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	if (a.flags & ~KMSGR_BDEV_F_ALL || a.reserved0 ||
	    memchr_inv(a.reserved, 0, sizeof(a.reserved)))
		return -EINVAL;
	if (!kmsgr_inst_ready(inst))
		return -EINVAL;

	ret = kmsgr_bdev_open(inst, &a, &h);
	if (ret)
		return ret;

	/*
	 * What the caller learns, read while the handle is ours alone: once
	 * it is linked, a DETACH that guesses its id may free it.
	 */
	memset_after(&a, 0, flags);
	a.attrs = (h->rdonly ? KMSGR_BDEV_A_RDONLY : 0) |
		  (bdev_write_cache(h->bdev) ? KMSGR_BDEV_A_WCACHE : 0) |
		  (bdev_fua(h->bdev) ? KMSGR_BDEV_A_FUA : 0) |
		  (h->poll ? KMSGR_BDEV_A_POLL : 0);
	a.capacity = bdev_nr_bytes(h->bdev);
	/* the device's now: ops check it as it is then (a reformat) */
	a.lbs = bdev_logical_block_size(h->bdev);
	a.pbs = bdev_physical_block_size(h->bdev);
	a.max_io = round_down(KMSGR_BDEV_MAX_IO, a.lbs);

	/* an ENTER may hold it for long (asleep in submit_bio()) */
	if (mutex_lock_killable(&inst->submit_lock)) {
		ret = -EINTR;
		goto out_put;
	}
	if (inst->nr_bdevs >= KMSGR_BDEV_MAX) {
		ret = -EMFILE;
	} else {
		ret = xa_alloc_cyclic(&inst->bdevs, &h->id, h,
				      XA_LIMIT(1, INT_MAX), &inst->bdev_next,
				      GFP_KERNEL_ACCOUNT);
		if (ret >= 0) {
			inst->nr_bdevs++;
			a.id = h->id;
			kmsgr_inst_dbg(inst, "block device %pg attached as %u%s%s%s\n",
				       h->bdev, a.id,
				       h->rdonly ? ", read-only" : "",
				       h->mode & FMODE_EXCL ? ", exclusive" : "",
				       h->poll ? ", polled" : "");
			ret = 0;
		}
	}
	mutex_unlock(&inst->submit_lock);
	if (ret) {
		if (ret == -EBUSY)
			ret = -EMFILE;
		goto out_put;
	}
	kmsgr_fault(KMSGR_FAULT_BDEV_ATTACHED, false);
	if (copy_to_user(uarg, &a, sizeof(a))) {
		/* nobody learnt the id; an op that guessed it is waited for */
		h = kmsgr_bdev_unlink(inst, a.id, false);
		if (h)
			kmsgr_bdev_put(h);
		return -EFAULT;
	}
	return 0;

out_put:
	blkdev_put(h->bdev, h->mode);
	kfree(h);
	return ret;
}

/**
 * kmsgr_bdev_detach() - KMSGR_IOC_DETACH_BDEV
 * @inst: the instance
 * @uarg: struct kmsgr_bdev_detach in user memory
 *
 * Return: 0 once the ops submitted on it have completed and the device is
 * let go; -ENODEV (no such handle), -EINVAL, -EFAULT, -EINTR (a fatal
 * signal while another ENTER was submitting: nothing was detached).
 */
int kmsgr_bdev_detach(struct kmsgr_instance *inst,
		      struct kmsgr_bdev_detach __user *uarg)
{
	struct kmsgr_bdev_detach d;
	struct kmsgr_bdev_h *h;

	if (copy_from_user(&d, uarg, sizeof(d)))
		return -EFAULT;
	if (d.flags || memchr_inv(d.reserved, 0, sizeof(d.reserved)))
		return -EINVAL;
	h = d.id ? kmsgr_bdev_unlink(inst, d.id, true) : NULL;
	if (IS_ERR(h))
		return PTR_ERR(h);
	if (!h)
		return -ENODEV;
	kmsgr_bdev_put(h);
	kmsgr_inst_dbg(inst, "block device %u detached\n", d.id);
	return 0;
}

void kmsgr_bdev_detach_all(struct kmsgr_instance *inst)
{
	struct kmsgr_bdev_h *h;
	unsigned long id;

	xa_for_each(&inst->bdevs, id, h) {
		h = kmsgr_bdev_unlink(inst, id, false);
		if (h)
			kmsgr_bdev_put(h);
	}
	xa_destroy(&inst->bdevs);
	/*
	 * Every op is done: nothing is left to poll, nor will be, and
	 * bdev_link is empty; the link work may still be pushing the last
	 * batch's SENDs out of the buffer area.
	 */
	cancel_delayed_work_sync(&inst->bdev_done_work);
	cancel_delayed_work_sync(&inst->bdev_poll_work);
	cancel_work_sync(&inst->bdev_link_work);
}

/* ---- ops ----------------------------------------------------------------- */

/* Post @op's CQE into its reserved slot; none for a skipped success. */
static void kmsgr_bio_op_cqe(struct kmsgr_bio_op *op)
{
	op->cqe.res = op->error;
	atomic64_inc(&op->h->done);
	if (op->error)
		atomic64_inc(&op->h->errors);
	if (op->skip_success && !op->error)
		kmsgr_sess_unreserve(op->inst);
	else
		kmsgr_cq_post(op->inst, &op->cqe, KMSGR_CQ_RESERVED);
}

/* Free @op and drop its count: the last touch of @h and the instance. */
static void kmsgr_bio_op_free(struct kmsgr_bio_op *op)
{
	struct kmsgr_bdev_h *h = op->h;

	kfree(op);
	kmsgr_bdev_h_put(h);
}

/*
 * The first half of finishing a linked op (process context: a runner,
 * the poller, or the link work): its CQE, then its SEND queued on the
 * session and the session added to @push (or the SEND completed
 * -ECANCELED).  The instance and the sessions are there, as h->inflight
 * still counts @op; kmsgr_bdev_finish() frees it after the push.
 */
static void kmsgr_bio_op_link(struct kmsgr_bio_op *op, struct kmsgr_push *push)
{
	struct kmsgr_instance *inst = op->inst;
	struct mem_cgroup *old_memcg;
	struct kmsgr_cqe cqe = {
		.user_data = op->link.user_data,
		.kind = KMSGR_CQE_SEND,
		.session = op->link.session,
		.res = -ECANCELED,
	};

	kmsgr_bio_op_cqe(op);
	kmsgr_fault(KMSGR_FAULT_BDEV_LINK, false);
	if (!op->error) {
		old_memcg = set_active_memcg(inst->memcg);
		cqe.res = kmsgr_sess_send(inst, &op->link, push);
		set_active_memcg(old_memcg);
	}
	if (cqe.res)
		kmsgr_cq_post(inst, &cqe, KMSGR_CQ_RESERVED);
}

/*
 * Finish the linked ops of @list (an llist, newest first) in the order
 * they ended: their CQEs and SENDs, one push for all of them (a session
 * with several replies writes them in one pass), then free them.
 */
static void kmsgr_bdev_finish(struct kmsgr_instance *inst,
			      struct llist_node *list)
{
	struct kmsgr_push push = { .n = 0 };
	struct kmsgr_bio_op *op, *next;

	if (!list)
		return;
	list = llist_reverse_order(list);
	llist_for_each_entry(op, list, done_node)
		kmsgr_bio_op_link(op, &push);
	kmsgr_sess_push(&push);
	llist_for_each_entry_safe(op, next, list, done_node)
		kmsgr_bio_op_free(op);
}

static void kmsgr_bdev_link_work(struct work_struct *work)
{
	struct kmsgr_instance *inst = container_of(work, struct kmsgr_instance,
						   bdev_link_work);

	kmsgr_bdev_finish(inst, llist_del_all(&inst->bdev_link));
}

/* Any context: give @op's SEND to the instance's link work. */
static void kmsgr_bio_op_queue_link(struct kmsgr_bio_op *op)
{
	struct kmsgr_instance *inst = op->inst;

	if (llist_add(&op->done_node, &inst->bdev_link))
		queue_work(kmsgr_wq, &inst->bdev_link_work);
}

/*
 * How long an op handed to a runner may wait for it: a runner takes ops
 * as soon as it waits, but one still submitting may sleep in submit_bio()
 * (no tag free, a frozen queue, a dm device queueing while it has no
 * path), and the op's SEND and CQE must not wait for that.
 */
#define KMSGR_BDEV_RUNNER_WAIT	(HZ / 5)

/* Give the ops of @list (from bdev_done) to the link work, oldest first. */
static void kmsgr_bdev_pass_on(struct llist_node *list)
{
	struct kmsgr_bio_op *op, *next;

	list = llist_reverse_order(list);	/* oldest first, as they ended */
	llist_for_each_entry_safe(op, next, list, done_node)
		kmsgr_bio_op_queue_link(op);
}

/* Any context: to an ENTER runner if one waits (true), else not taken. */
static bool kmsgr_bio_op_to_runner(struct kmsgr_bio_op *op)
{
	struct kmsgr_instance *inst = op->inst;
	unsigned long flags;
	bool taken;

	spin_lock_irqsave(&inst->bdev_poll_lock, flags);
	taken = inst->bdev_runners &&
		!kmsgr_fault_set(KMSGR_FAULT_BDEV_LINK_WORK);
	if (taken) {
		llist_add(&op->done_node, &inst->bdev_done);
		/*
		 * Under the lock: once it is dropped a runner may take the
		 * op, end it and let the instance go (kmsgr_bdev_run_end()
		 * waits only for this lock), so @inst is not ours after.
		 */
		kmsgr_cq_wake_runners(inst);
		queue_delayed_work(kmsgr_wq, &inst->bdev_done_work,
				   KMSGR_BDEV_RUNNER_WAIT);
	}
	spin_unlock_irqrestore(&inst->bdev_poll_lock, flags);
	return taken;
}

static void kmsgr_bdev_done_work(struct work_struct *work)
{
	struct kmsgr_instance *inst = container_of(to_delayed_work(work),
						   struct kmsgr_instance,
						   bdev_done_work);
	struct llist_node *list;
	unsigned long flags;

	spin_lock_irqsave(&inst->bdev_poll_lock, flags);
	list = llist_del_all(&inst->bdev_done);
	spin_unlock_irqrestore(&inst->bdev_poll_lock, flags);
	kmsgr_bdev_pass_on(list);
}

void kmsgr_bdev_run_begin(struct kmsgr_instance *inst)
{
	unsigned long flags;

	spin_lock_irqsave(&inst->bdev_poll_lock, flags);
	inst->bdev_runners++;
	spin_unlock_irqrestore(&inst->bdev_poll_lock, flags);
}

void kmsgr_bdev_run_end(struct kmsgr_instance *inst)
{
	struct llist_node *list = NULL;
	unsigned long flags;

	spin_lock_irqsave(&inst->bdev_poll_lock, flags);
	if (!--inst->bdev_runners)
		list = llist_del_all(&inst->bdev_done);
	spin_unlock_irqrestore(&inst->bdev_poll_lock, flags);
	/* none is handed to a runner now: the link work finishes these */
	kmsgr_bdev_pass_on(list);
}

/* @op's polled bio is done: off the polled list, our reference dropped. */
static void kmsgr_bio_op_unpoll(struct kmsgr_bio_op *op)
{
	struct kmsgr_instance *inst = op->inst;
	unsigned long flags;

	spin_lock_irqsave(&inst->bdev_poll_lock, flags);
	list_del_init(&op->poll_node);
	spin_unlock_irqrestore(&inst->bdev_poll_lock, flags);
	bio_put(op->pbio);	/* a poller may hold its own */
	op->pbio = NULL;
}

/* The last bio of @op ended (or none was needed): complete it. */
static void kmsgr_bio_op_done(struct kmsgr_bio_op *op)
{
	struct kmsgr_instance *inst = op->inst;
	bool freed = false;
	unsigned int i;

	if (op->pbio)
		kmsgr_bio_op_unpoll(op);
	for (i = 0; i < KMSGR_NSEG; i++) {
		if (!op->seg[i].len)
			continue;
		/* the device wrote the pages: no stale cache lines */
		if (op->read)
			invalidate_kernel_vmap_range(inst->buf + op->seg[i].off,
						     op->seg[i].len);
		else if (op->release &&
			 !kmsgr_pool_free(inst, op->seg[i].off,
					  op->seg[i].len))
			freed = true;
	}
	if (freed)
		kmsgr_sess_pool_freed(inst);
	if (op->linked) {
		/*
		 * Ended under our poller's bio_poll() (or an interrupt on
		 * top of it): it makes the SEND when that returns.
		 */
		if (READ_ONCE(inst->bdev_poller) == current) {
			llist_add(&op->done_node, &inst->bdev_done);
			return;
		}
		if (!kmsgr_bio_op_to_runner(op))
			kmsgr_bio_op_queue_link(op);
		return;
	}
	kmsgr_bio_op_cqe(op);
	kmsgr_bio_op_free(op);
}

static void kmsgr_bio_op_put(struct kmsgr_bio_op *op)
{
	if (atomic_dec_and_test(&op->bios))
		kmsgr_bio_op_done(op);
}

static void kmsgr_bio_end_io(struct bio *bio)
{
	struct kmsgr_bio_op *op = bio->bi_private;
	int err = blk_status_to_errno(bio->bi_status);

	if (err)
		cmpxchg(&op->error, 0, err);
	/*
	 * A poller may still hold the bio and poll it later: the cookie
	 * names a hardware queue that a reset may have taken away since
	 * (blk_mq_update_nr_hw_queues(), once nothing is in flight), and
	 * bio_poll() would look it up.  A bio that is done polls nothing.
	 */
	WRITE_ONCE(bio->bi_cookie, BLK_QC_T_NONE);
	bio_put(bio);
	kmsgr_bio_op_put(op);
}

static void kmsgr_bio_submit(struct kmsgr_bio_op *op, struct bio *bio)
{
	struct kmsgr_instance *inst = op->inst;
	bool polled = false;
	unsigned long flags;

	bio->bi_private = op;
	bio->bi_end_io = kmsgr_bio_end_io;
	atomic_inc(&op->bios);
	if (bio->bi_opf & REQ_POLLED) {
		if (op->pbio) {
			/* one polled bio per op; the rest by interrupt */
			bio_clear_polled(bio);
		} else {
			polled = true;
			bio_get(bio);
			op->pbio = bio;
		}
	}
	submit_bio(bio);
	if (!polled)
		return;
	/*
	 * Listed for the pollers only now that it is submitted: a stacked
	 * device builds its bio's poll state inside submit_bio() (device
	 * mapper's list of clones), and bio_poll() is for a bio that is
	 * submitted.  Until it is listed nothing polls it, and nothing but
	 * an error ends it; @op is ours until kmsgr_bdev_submit() puts it,
	 * and our reference keeps the bio readable.  The block layer clears
	 * REQ_POLLED from a bio it splits to the device's limits (or that a
	 * stacked device cannot poll): that one ends by interrupt, and a
	 * waiter that spun for it would burn a CPU for nothing.
	 */
	if (!(READ_ONCE(bio->bi_opf) & REQ_POLLED)) {
		op->pbio = NULL;
		bio_put(bio);
		return;
	}
	spin_lock_irqsave(&inst->bdev_poll_lock, flags);
	list_add_tail(&op->poll_node, &inst->bdev_polled);
	spin_unlock_irqrestore(&inst->bdev_poll_lock, flags);
	/* in case no ENTER polls it */
	queue_delayed_work(kmsgr_wq, &inst->bdev_poll_work, 1);
}

/* Pages the area's bytes of @op's slices lie on (bio_vecs they need). */
static unsigned int kmsgr_bio_op_pages(const struct kmsgr_bio_op *op)
{
	unsigned int i, n = 0;

	for (i = 0; i < KMSGR_NSEG; i++)
		if (op->seg[i].len)
			n += DIV_ROUND_UP(offset_in_page(op->seg[i].off) +
					  op->seg[i].len, PAGE_SIZE);
	return n;
}

/*
 * Bios over the @pages area pages of @op's slices, from device byte @pos:
 * each as large as a bio takes, submitted as it fills.  Nothing here fails
 * (bio_alloc() from its mempool waits instead).  A polled op takes one
 * bio (it was checked to fit).
 */
static void kmsgr_bio_op_map(struct kmsgr_bio_op *op, u64 pos, blk_opf_t opf,
			     unsigned int pages)
{
	struct kmsgr_instance *inst = op->inst;
	struct bio *bio = NULL;
	unsigned int i, pgoff, chunk;
	u32 left, off;
	void *addr;

	for (i = 0; i < KMSGR_NSEG; i++) {
		off = op->seg[i].off;
		left = op->seg[i].len;
		if (!left)
			continue;
		if (!op->read)
			flush_kernel_vmap_range(inst->buf + off, left);
		while (left) {
			if (!bio) {
				bio = bio_alloc(op->h->bdev,
						bio_max_segs(pages), opf,
						GFP_NOIO);
				bio->bi_iter.bi_sector = pos >> SECTOR_SHIFT;
			}
			addr = inst->buf + off;
			pgoff = offset_in_page(addr);
			chunk = min_t(u32, left, PAGE_SIZE - pgoff);
			if (bio_add_page(bio, vmalloc_to_page(addr), chunk,
					 pgoff) != chunk) {
				kmsgr_bio_submit(op, bio);
				bio = NULL;
				continue;
			}
			off += chunk;
			left -= chunk;
			pos += chunk;
			pages -= pages > 1;
		}
	}
	if (!bio)	/* FLUSH: no data */
		bio = bio_alloc(op->h->bdev, 0, opf, GFP_NOIO);
	kmsgr_bio_submit(op, bio);
}

/*
 * The checks of a READ or WRITE against @h; 0 or the SQE's errno.  The
 * block size is the device's now (a namespace formatted anew changes it
 * under an attached handle); the slices' offsets (in memory, the area
 * being page-aligned) must also suit the device's DMA alignment.
 */
static int kmsgr_bdev_check(struct kmsgr_instance *inst,
			    const struct kmsgr_bdev_h *h,
			    const struct kmsgr_sqe *sqe, u64 *total)
{
	unsigned int lbs = bdev_logical_block_size(h->bdev);
	unsigned int mask = (lbs - 1) | bdev_dma_alignment(h->bdev);
	bool read = sqe->opcode == KMSGR_OP_BDEV_READ;
	u64 len = 0, capacity;
	unsigned int i;

	if (sqe->tid & (lbs - 1))
		return -EINVAL;
	for (i = 0; i < KMSGR_NSEG; i++) {
		if (!sqe->seg[i].len)
			continue;
		if ((sqe->seg[i].off | sqe->seg[i].len) & mask)
			return -EINVAL;
		/* the pool is the kernel's to write into */
		if (read &&
		    (u64)sqe->seg[i].off + sqe->seg[i].len > inst->pool_off)
			return -EINVAL;
		len += sqe->seg[i].len;
	}
	if (!len)
		return -EINVAL;
	if (len > round_down(KMSGR_BDEV_MAX_IO, lbs))
		return -EMSGSIZE;
	/* it may have been resized; a namespace going away drops to 0 first */
	capacity = bdev_nr_bytes(h->bdev);
	if (!capacity)
		return -ENXIO;
	if (sqe->tid > capacity || len > capacity - sqe->tid)
		return -ENOSPC;
	if (!read) {
		/*
		 * As write(2) on the device: a write protection set after
		 * ATTACH (BLKROSET, a namespace the controller protects)
		 * counts, and an active swap device is the kernel's.
		 */
		if (h->rdonly || bdev_read_only(h->bdev))
			return -EROFS;
		if (IS_SWAPFILE(h->bdev->bd_inode))
			return -ETXTBSY;
	}
	*total = len;
	return 0;
}

/**
 * kmsgr_bdev_submit() - start a BDEV SQE
 * @inst: the instance
 * @sqe:  the SQE's snapshot; its flags, reserved fields and slices (inside
 *        the area) are checked already (enter.c)
 * @link: the SEND linked to the op (checked likewise, its CQ slot
 *        reserved), made once the op succeeded; else NULL
 *
 * Return: 0 when submitted (its KMSGR_CQE_OP follows into the slot ENTER
 * reserved, and @link's KMSGR_CQE_SEND into its own), or the errno for
 * the caller's error CQE (and -ECANCELED for @link's).
 */
int kmsgr_bdev_submit(struct kmsgr_instance *inst, const struct kmsgr_sqe *sqe,
		      const struct kmsgr_sqe *link)
	__must_hold(&inst->submit_lock)
{
	struct kmsgr_bdev_h *h;
	struct kmsgr_bio_op *op;
	unsigned int pages;
	blk_opf_t opf;
	u64 total = 0;
	int ret;

	lockdep_assert_held(&inst->submit_lock);
	h = xa_load(&inst->bdevs, sqe->session);
	if (!h)
		return -ENODEV;
	/* unplugged: say so, rather than knock at a disk of size 0 */
	if (!disk_live(h->bdev->bd_disk) ||
	    test_bit(GD_DEAD, &h->bdev->bd_disk->state))
		return -ENXIO;
	/* a FLUSH has no range (kmsgr_sqe_unused_zero()) */
	if (sqe->opcode != KMSGR_OP_BDEV_FLUSH) {
		ret = kmsgr_bdev_check(inst, h, sqe, &total);
		if (ret)
			return ret;
	}

	op = kzalloc(sizeof(*op), GFP_NOIO | __GFP_ACCOUNT);
	if (!op)
		return -ENOMEM;
	op->inst = inst;
	op->h = h;
	op->read = sqe->opcode == KMSGR_OP_BDEV_READ;
	memcpy(op->seg, sqe->seg, sizeof(op->seg));
	op->cqe.user_data = sqe->user_data;
	op->cqe.kind = KMSGR_CQE_OP;
	op->cqe.session = sqe->session;
	op->cqe.tid = sqe->tid;
	op->skip_success = sqe->flags & KMSGR_SQE_F_SKIP_SUCCESS;
	if (link) {
		op->linked = true;
		op->link = *link;
	}
	if (sqe->flags & KMSGR_SQE_F_RELEASE) {
		/* from here on the slices are ours until the write ends */
		ret = kmsgr_pool_take(inst, sqe->seg, sqe->token);
		if (ret) {
			kfree(op);
			return ret;
		}
		op->release = true;
	}

	switch (sqe->opcode) {
	case KMSGR_OP_BDEV_READ:
		opf = REQ_OP_READ;
		inst->stats.bdev_read_bytes += total;
		atomic64_inc(&h->read_ops);
		atomic64_add(total, &h->read_bytes);
		break;
	case KMSGR_OP_BDEV_WRITE:
		/*
		 * As O_DIRECT writes: SYNC | IDLE keeps writeback
		 * throttling (wbt) off them, which would otherwise let a
		 * few in flight at a time and put ENTER to sleep in
		 * submit_bio() for the rest.
		 */
		opf = REQ_OP_WRITE | REQ_SYNC | REQ_IDLE;
		if (sqe->flags & KMSGR_SQE_F_FUA)
			opf |= REQ_FUA;
		/* on every bio: none may reach the media before the flush */
		if (sqe->flags & KMSGR_SQE_F_PREFLUSH)
			opf |= REQ_PREFLUSH;
		inst->stats.bdev_write_bytes += total;
		atomic64_inc(&h->write_ops);
		atomic64_add(total, &h->write_bytes);
		break;
	default:
		opf = REQ_OP_WRITE | REQ_PREFLUSH;
		atomic64_inc(&h->flush_ops);
		break;
	}
	/*
	 * Polled when the whole op is one bio the device takes as it is: a
	 * flush, or a FUA the kernel emulates, goes through the flush
	 * machinery, which completes by interrupt.
	 */
	pages = kmsgr_bio_op_pages(op);
	if (h->poll && !(opf & REQ_PREFLUSH) &&
	    (!(opf & REQ_FUA) || bdev_fua(h->bdev)) && pages <= BIO_MAX_VECS)
		opf |= REQ_POLLED;
	inst->stats.bdev_ops++;
	atomic64_inc(&h->ops);
	atomic_inc(&h->inflight);
	atomic_set(&op->bios, 1);	/* ours while the bios are built */
	kmsgr_bio_op_map(op, sqe->tid, opf, pages);
	kmsgr_bio_op_put(op);
	kmsgr_fault(KMSGR_FAULT_BDEV_SUBMITTED, false);
	return 0;
}

/* ---- polled completion ----------------------------------------------------- */

/* Most bios one pass polls. */
#define KMSGR_POLL_BATCH	8

struct kmsgr_poll_ref {
	struct bio *bio;
	struct kmsgr_bdev_h *h;
	struct request_queue *q;	/* entered (q_usage_counter) */
};

/*
 * Enter the queue of @op's polled bio, for a bio_poll() after the poll
 * lock is dropped: NULL if it is frozen (nothing completes there then).
 * Under the lock, with @op listed and its cookie set, the bio's request
 * is in flight and holds that queue (kmsgr_bio_end_io() clears the
 * cookie, and @op is unlisted under this lock when it is done), or has
 * only just ended.  bi_bdev may be a multipath path's device, which
 * neither @op's handle nor the bio reference keeps: once the bio is done
 * only this reference does (del_gendisk() waits for it).
 * bio_poll() enters the queue only after it has read the cookie; with
 * the queue entered first, a controller reset cannot take away the
 * hardware queue the cookie names (blk_mq_update_nr_hw_queues() freezes
 * the queue) before the poll is over, and a bio that ended since has no
 * cookie left (kmsgr_bio_end_io()), as the freeze and unfreeze order it.
 */
static struct request_queue *kmsgr_bio_enter(struct bio *bio)
{
	struct block_device *bdev = READ_ONCE(bio->bi_bdev);
	struct request_queue *q;

	if (!bdev)
		return NULL;
	q = bdev_get_queue(bdev);
	return percpu_ref_tryget(&q->q_usage_counter) ? q : NULL;
}

static void kmsgr_bio_poll(const struct kmsgr_poll_ref *p)
{
	smp_rmb();	/* the cookie after the reference */
	bio_poll(p->bio, NULL, BLK_POLL_ONESHOT | BLK_POLL_NOSLEEP);
	percpu_ref_put(&p->q->q_usage_counter);
}

/* Make the SENDs of the linked ops finished for the poller or a runner. */
void kmsgr_bdev_run_done(struct kmsgr_instance *inst)
{
	kmsgr_bdev_finish(inst, llist_del_all(&inst->bdev_done));
}

/**
 * kmsgr_bdev_poll() - poll the hardware queues of @inst's polled ops once
 * @inst: the instance
 *
 * Process context, TASK_RUNNING, no lock held.  Another task polling the
 * instance already is left to it.
 *
 * Return: true while polled ops are out (after this pass).
 */
bool kmsgr_bdev_poll(struct kmsgr_instance *inst)
{
	struct kmsgr_poll_ref p[KMSGR_POLL_BATCH];
	struct kmsgr_bio_op *op, *next;
	unsigned int i, n = 0;
	unsigned long flags;
	blk_qc_t cookie;

	if (!kmsgr_bdev_polling(inst))
		return false;
	if (cmpxchg(&inst->bdev_poller, NULL, current))
		return true;

	spin_lock_irqsave(&inst->bdev_poll_lock, flags);
	list_for_each_entry_safe(op, next, &inst->bdev_polled, poll_node) {
		/*
		 * Taken off polling after it went out (an NVMe multipath
		 * failover, a device-mapper requeue): it ends by interrupt
		 * now, and must not keep a waiter spinning.
		 */
		if (!(READ_ONCE(op->pbio->bi_opf) & REQ_POLLED)) {
			list_del_init(&op->poll_node);
			continue;
		}
		/*
		 * not dispatched yet, or done.  Each bio is polled, even
		 * several on one hardware queue: polling each queue once per
		 * pass made a third of the bio_poll() calls, and no more
		 * IOPS (4 KiB reads at depth 32, one poll queue, emulated
		 * guest: 1335-2002 against 1770-2067 over two boots, see
		 * docs/bench.md): a poll a little later finds more done.
		 */
		cookie = READ_ONCE(op->pbio->bi_cookie);
		if (cookie == BLK_QC_T_NONE)
			continue;
		p[n].q = kmsgr_bio_enter(op->pbio);
		if (!p[n].q)
			continue;
		/* the op may end once the lock is dropped: hold on */
		p[n].bio = op->pbio;
		bio_get(op->pbio);
		p[n].h = op->h;
		atomic_inc(&op->h->inflight);
		if (++n < ARRAY_SIZE(p))
			continue;
		/*
		 * The next pass starts after the last op taken: ops behind
		 * a batch that does not end (a slow device, a queue the
		 * cookies of the first ones do not name) are polled too.
		 */
		if (!list_entry_is_head(next, &inst->bdev_polled, poll_node))
			list_rotate_to_front(&next->poll_node,
					     &inst->bdev_polled);
		break;
	}
	spin_unlock_irqrestore(&inst->bdev_poll_lock, flags);

	kmsgr_fault(KMSGR_FAULT_BDEV_POLL, false);
	for (i = 0; i < n; i++) {
		kmsgr_bio_poll(&p[i]);
		bio_put(p[i].bio);
		kmsgr_bdev_h_put(p[i].h);
	}
	/* what ended in bio_poll() is on bdev_done now, nothing more will */
	WRITE_ONCE(inst->bdev_poller, NULL);
	kmsgr_bdev_run_done(inst);
	return kmsgr_bdev_polling(inst);
}

/* Poll for an application that does not wait in ENTER: every tick. */
static void kmsgr_bdev_poll_work(struct work_struct *work)
{
	struct kmsgr_instance *inst = container_of(to_delayed_work(work),
						   struct kmsgr_instance,
						   bdev_poll_work);

	if (kmsgr_bdev_poll(inst))
		queue_delayed_work(kmsgr_wq, &inst->bdev_poll_work, 1);
}

/* ---- netlink ------------------------------------------------------------- */

/*
 * kmsgr_bdev_info_next() (kmsgr.h).  It takes no lock of the instance's
 * but the xarray's own, for as long as it takes to find the handle and
 * count itself in h->inflight, as a poller does: then @h (and its device)
 * stay until it drops that count, even if DETACH unlinks it meanwhile.
 * Not submit_lock: an ENTER may sleep under it in submit_bio() as long as
 * a queue stays frozen (a controller reset) or out of tags, and the
 * instance's release waits for a dump that holds it.  The counters are
 * atomics for that reason; @done is read first, as every op it counts
 * was counted in @ops before its bios went out.
 */
int kmsgr_bdev_info_next(struct kmsgr_instance *inst, u32 *id,
			 struct kmsgr_bdev_info *info)
{
	unsigned long idx = *id;
	struct kmsgr_bdev_h *h;
	struct gendisk *disk;
	u64 ops, done;

	xa_lock(&inst->bdevs);
	h = xa_find(&inst->bdevs, &idx, U32_MAX, XA_PRESENT);
	if (h)
		atomic_inc(&h->inflight);
	xa_unlock(&inst->bdevs);
	if (!h)
		return -ENOENT;
	disk = h->bdev->bd_disk;
	memset(info, 0, sizeof(*info));
	info->id = idx;
	snprintf(info->name, sizeof(info->name), "%pg", h->bdev);
	info->dev = h->bdev->bd_dev;
	info->lbs = bdev_logical_block_size(h->bdev);
	info->pbs = bdev_physical_block_size(h->bdev);
	info->capacity = bdev_nr_bytes(h->bdev);
	info->flags = (h->mode & FMODE_EXCL ? KMSGR_BDEV_F_EXCL : 0) |
		      (h->mode & FMODE_WRITE ? 0 : KMSGR_BDEV_F_RDONLY) |
		      (h->poll ? KMSGR_BDEV_F_POLL : 0);
	info->attrs = (h->rdonly ? KMSGR_BDEV_A_RDONLY : 0) |
		      (bdev_write_cache(h->bdev) ? KMSGR_BDEV_A_WCACHE : 0) |
		      (bdev_fua(h->bdev) ? KMSGR_BDEV_A_FUA : 0) |
		      (h->poll ? KMSGR_BDEV_A_POLL : 0);
	/* as kmsgr_bdev_submit() tells that ops would fail ENXIO */
	info->gone = !disk_live(disk) || test_bit(GD_DEAD, &disk->state);
	info->errors = atomic64_read(&h->errors);
	done = atomic64_read(&h->done);
	smp_rmb();	/* an op is counted in @ops before in @done */
	ops = atomic64_read(&h->ops);
	info->in_flight = min_t(u64, ops - min(ops, done), U32_MAX);
	info->read_ops = atomic64_read(&h->read_ops);
	info->write_ops = atomic64_read(&h->write_ops);
	info->flush_ops = atomic64_read(&h->flush_ops);
	info->read_bytes = atomic64_read(&h->read_bytes);
	info->write_bytes = atomic64_read(&h->write_bytes);
	kmsgr_bdev_h_put(h);
	*id = idx;
	return 0;
}
