// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr - an instance's memory: SETUP and mmap of its rings and buffer area,
 * the CQ producer (posting, reservations, overflow) and the receive pool.
 * The bottom of the module: it calls nothing above it (sessions, ENTER).
 *
 * Memory.  SETUP allocates three regions with vmalloc_user() (zeroed,
 * VM_USERMAP): the SQ region (a struct kmsgr_ring, then the SQEs), the CQ
 * region (a struct kmsgr_ring, then the CQEs) and the buffer area, whose
 * last rx_pool_size bytes are the receive pool.  All their pages are charged
 * to the user that called SETUP, against its RLIMIT_MEMLOCK, as io_uring
 * does (user->locked_vm: the charge stays with the user, whatever process
 * holds the file, through fork, exec or fd passing, until the instance is
 * torn down; CAP_IPC_LOCK is not charged), and shown in the pinned_vm
 * (VmPin) of the mm that called SETUP; mmgrab() keeps that mm_struct alive
 * until then.
 *
 * Lifetime.  The regions are freed only by kmsgr_inst_teardown(), which
 * main.c calls from the final release() of the file.  A mapping holds a
 * reference to the file (vma->vm_file), so that release() cannot run while
 * any VMA still maps a region: close() with live mappings leaves the
 * instance alive until the last munmap() (or exit).  Every SQE, ENTER and
 * poll caller holds the file too, so teardown never races with them.
 *
 * Shared memory is hostile.  The kernel keeps its own copy of every ring
 * index and size (sq_head, cq_tail, cq_head, the entry counts) and never
 * reads back the ring headers it wrote.  From user memory it reads only the
 * SQ tail (acquire; the number of new SQEs is bounded by the SQ size), each
 * SQE (copied once into a local snapshot, then checked) and the CQ head
 * (acquire; used only if it lies between the last head seen and the tail,
 * so a corrupt head at worst makes the CQ look full).
 *
 * CQ slots.  Invariant under cq_lock: (cq_tail - cq_head) + cq_reserved <=
 * cq_entries.  ENTER reserves a slot before it consumes each SQE, so the
 * completion of every consumed SQE has a place; sessions post RECV entries
 * only into unreserved room and get -ENOSPC otherwise (backpressure);
 * events that find the CQ full wait on a bounded overflow list.  At most
 * cq_entries - cq_entries / 2 slots are reserved at once, so completions
 * of SENDs in flight can never take the room that the inbound messages
 * (which carry the acks completing them) need: once the application has
 * reaped its CQ, at least half of it is free for them.
 *
 * Locking: submit_lock serialises SQ consumption (ENTER).  cq_lock (irqsave,
 * callable from any context, never held while sleeping) protects the CQ
 * producer state, the reservations, the overflow list, the receive pool
 * bitmaps and the counters in inst->stats.  inst->lock serialises SETUP
 * against the other control ioctls.  Nothing here takes a session lock or
 * calls a session: when CQ room appears, kmsgr_cq_refresh() says so and its
 * caller (enter.c) restarts the paused sessions.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitmap.h>
#include <linux/build_bug.h>
#include <linux/capability.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/log2.h>
#include <linux/minmax.h>
#include <linux/random.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/sched/user.h>
#include <linux/sizes.h>
#include <linux/cred.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "kmsgr.h"
#include "log.h"
#include "trace/kmsgr_trace.h"

/*
 * Most events kept on one instance's overflow list.  Events are rare (a
 * few per session state change, at most max_sessions sessions); reaching
 * this means the application stopped reading its CQ for a long time while
 * sessions kept changing state.  Beyond it events are counted and lost.
 */
#define KMSGR_CQ_OVERFLOW_MAX	4096
/*
 * A listener's REFUSED events, which a remote peer can cause as fast as it
 * can connect, wait on that list only while it holds fewer than this many
 * entries: a flood of refusals leaves the rest to the sessions' own events.
 * Beyond it a refusal posts no event (the listener's refused count, in
 * netlink, has them all).
 */
#define KMSGR_CQ_OVERFLOW_NOTES	(KMSGR_CQ_OVERFLOW_MAX / 4)
/*
 * Listeners refuse new sessions, and resumes of old ones, while the
 * overflow list holds this many entries (kmsgr_cq_backlogged()).  A
 * session's events are bounded by max_sessions only while it lives: a
 * remote peer that connects, is announced and hangs up, again and again,
 * leaves ACCEPTED, UP and CLOSED of sessions already gone each time, and
 * would fill the list until the events of the application's other
 * sessions were lost.  Past this mark its sessions are refused (the
 * refusal posts nothing more, NOTES being lower), and the rest of the
 * list is kept for the sessions there are.
 */
#define KMSGR_CQ_OVERFLOW_ACCEPT	(KMSGR_CQ_OVERFLOW_MAX / 2)

/*
 * A pool waiter that has not asked again for this long has gone (paused
 * sessions ask every 20 ms): the others stop keeping room for it.
 */
#define KMSGR_POOL_WAIT_MS	1000

/* An event waiting for CQ room. */
struct kmsgr_cq_ovf {
	struct list_head node;
	struct kmsgr_cqe cqe;
};

void kmsgr_inst_init(struct kmsgr_instance *inst)
{
	mutex_init(&inst->submit_lock);
	spin_lock_init(&inst->cq_lock);
	INIT_LIST_HEAD(&inst->cq_overflow);
	init_waitqueue_head(&inst->cq_wait);
}

/* true once SETUP has published the rings (pairs with its store-release) */
bool kmsgr_inst_ready(struct kmsgr_instance *inst)
{
	/* Pairs with SETUP's store-release: the rings are seen complete. */
	return smp_load_acquire(&inst->setup_done);
}

/* ---- SETUP -------------------------------------------------------------- */

/*
 * Charge @pages to @user's locked memory against the caller's
 * RLIMIT_MEMLOCK: -ENOMEM over it.
 */
static int kmsgr_user_charge(struct user_struct *user, unsigned long pages)
{
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	unsigned long cur = atomic_long_read(&user->locked_vm);

	do {
		if (cur + pages < cur || cur + pages > limit)
			return -ENOMEM;
	} while (!atomic_long_try_cmpxchg(&user->locked_vm, &cur,
					  cur + pages));
	return 0;
}

static void kmsgr_user_uncharge(struct user_struct *user, unsigned long pages)
{
	if (user)
		atomic_long_sub(pages, &user->locked_vm);
}

/*
 * Where a ring's counters and entries go.  ABI 1 layout: the counters are
 * kmsgr_ring.head and .tail, the entries follow the structure.  With
 * KMSGR_SETUP_F_RING_LINES: head and tail each on a cache line of its own
 * after the structure, then the entries.
 */
static u32 kmsgr_ring_line(u32 setup_flags)
{
	return setup_flags & KMSGR_SETUP_F_RING_LINES ?
	       max_t(u32, SMP_CACHE_BYTES, sizeof(struct kmsgr_ring)) : 0;
}

static u32 kmsgr_ring_entries_off(u32 setup_flags)
{
	u32 line = kmsgr_ring_line(setup_flags);

	return line ? 3 * line : sizeof(struct kmsgr_ring);
}

/* Bytes of a ring region: the header, then @entries of @size, page-rounded. */
static size_t kmsgr_ring_bytes(u32 setup_flags, u32 entries, size_t size)
{
	return PAGE_ALIGN(kmsgr_ring_entries_off(setup_flags) +
			  (size_t)entries * size);
}

/* Lay out the ring at @ring; returns its entries, sets its counters. */
static void *kmsgr_ring_init(struct kmsgr_ring *ring, u32 setup_flags,
			     u32 entries, u32 **head, u32 **tail)
{
	u32 line = kmsgr_ring_line(setup_flags);

	ring->mask = entries - 1;
	ring->entries = entries;
	ring->entries_off = kmsgr_ring_entries_off(setup_flags);
	ring->head_off = line ? line : offsetof(struct kmsgr_ring, head);
	ring->tail_off = line ? 2 * line : offsetof(struct kmsgr_ring, tail);
	*head = (void *)ring + ring->head_off;
	*tail = (void *)ring + ring->tail_off;
	return (void *)ring + ring->entries_off;
}

/*
 * Check the sizes asked for and round them up in place: ring entries to a
 * power of two, the CQ to at least KMSGR_CQ_MIN_ENTRIES, the buffer area
 * to pages, the pool to grains.
 */
static int kmsgr_setup_sizes(struct kmsgr_setup *p)
{
	u32 max_sq = READ_ONCE(kmsgr_max_sq_entries);
	u32 max_cq = READ_ONCE(kmsgr_max_cq_entries);
	u64 max_buf = READ_ONCE(kmsgr_max_buf_size);

	if (!p->sq_entries || p->sq_entries > max_sq)
		return -EINVAL;
	p->sq_entries = roundup_pow_of_two(p->sq_entries);
	if (!p->cq_entries)
		p->cq_entries = min_t(u32, 2 * p->sq_entries, max_cq);
	if (p->cq_entries > max_cq)
		return -EINVAL;
	p->cq_entries = roundup_pow_of_two(max_t(u32, p->cq_entries,
						 KMSGR_CQ_MIN_ENTRIES));
	/* The limits are powers of two (main.c), rounding stays inside. */
	if (p->sq_entries > max_sq || p->cq_entries > max_cq)
		return -EINVAL;

	if (!p->buf_size || p->buf_size > max_buf)
		return -EINVAL;
	p->buf_size = PAGE_ALIGN(p->buf_size);
	if (p->buf_size > max_buf)
		return -EINVAL;

	if (p->rx_pool_size < KMSGR_POOL_MIN || p->rx_pool_size > p->buf_size)
		return -EINVAL;
	/* buf_size is a multiple of pages, hence of grains: no overflow. */
	p->rx_pool_size = round_up(p->rx_pool_size, KMSGR_POOL_GRAIN);
	return 0;
}

/* Free what kmsgr_inst_alloc() set up; also the teardown of a live one. */
static void kmsgr_inst_free(struct kmsgr_instance *inst)
{
	kvfree(inst->pool_token);
	kvfree(inst->pool_start);
	kvfree(inst->pool_used);
	vfree(inst->buf);
	vfree(inst->cq);
	vfree(inst->sq);
	inst->pool_token = NULL;
	inst->pool_start = NULL;
	inst->pool_used = NULL;
	inst->buf = NULL;
	inst->cq = NULL;
	inst->sq = NULL;
}

static int kmsgr_inst_alloc(struct kmsgr_instance *inst,
			    const struct kmsgr_setup *p)
{
	u32 grains = p->rx_pool_size / KMSGR_POOL_GRAIN;

	inst->sq = vmalloc_user(p->sq_ring_size);
	inst->cq = vmalloc_user(p->cq_ring_size);
	inst->buf = vmalloc_user(p->buf_size);
	inst->pool_used = kvcalloc(BITS_TO_LONGS(grains), sizeof(long),
				   GFP_KERNEL_ACCOUNT);
	inst->pool_start = kvcalloc(BITS_TO_LONGS(grains), sizeof(long),
				    GFP_KERNEL_ACCOUNT);
	inst->pool_token = kvcalloc(grains, sizeof(u32), GFP_KERNEL_ACCOUNT);
	if (!inst->sq || !inst->cq || !inst->buf || !inst->pool_used ||
	    !inst->pool_start || !inst->pool_token) {
		kmsgr_inst_free(inst);
		return -ENOMEM;
	}

	inst->sq_size = p->sq_ring_size;
	inst->sq_entries = p->sq_entries;
	inst->sqes = kmsgr_ring_init(inst->sq, p->flags, p->sq_entries,
				     &inst->sq_khead, &inst->sq_ktail);

	inst->cq_size = p->cq_ring_size;
	inst->cq_entries = p->cq_entries;
	inst->cqes = kmsgr_ring_init(inst->cq, p->flags, p->cq_entries,
				     &inst->cq_khead, &inst->cq_ktail);

	inst->buf_size = p->buf_size;
	inst->pool_off = p->buf_size - p->rx_pool_size;
	inst->pool_grains = grains;
	return 0;
}

/**
 * kmsgr_inst_setup() - KMSGR_IOC_SETUP: size and allocate the rings and the
 * buffer area, charge them to RLIMIT_MEMLOCK
 * @inst: the instance
 * @uarg: struct kmsgr_setup in user memory
 *
 * Once per instance; a failed SETUP leaves nothing behind and may be
 * retried.
 *
 * Return: 0; -EBUSY when already set up; -EINVAL for a bad size, flag or
 * reserved field; -ENOMEM when out of memory or over RLIMIT_MEMLOCK (and
 * not CAP_IPC_LOCK); -EFAULT.
 */
int kmsgr_inst_setup(struct kmsgr_instance *inst,
		     struct kmsgr_setup __user *uarg)
	__must_hold(&inst->lock)
{
	struct mm_struct *mm = current->mm;
	struct user_struct *user = NULL;
	struct kmsgr_setup p;
	unsigned long pages;
	int ret;

	lockdep_assert_held(&inst->lock);

	if (copy_from_user(&p, uarg, sizeof(p)))
		return -EFAULT;
	if (inst->setup_done)
		return -EBUSY;
	if ((p.flags & ~KMSGR_SETUP_F_ALL) || p.reserved0 ||
	    memchr_inv(p.reserved, 0, sizeof(p.reserved)))
		return -EINVAL;
	ret = kmsgr_setup_sizes(&p);
	if (ret)
		return ret;
	if (!mm)
		return -EINVAL;

	p.sq_ring_size = kmsgr_ring_bytes(p.flags, p.sq_entries,
					  sizeof(struct kmsgr_sqe));
	p.cq_ring_size = kmsgr_ring_bytes(p.flags, p.cq_entries,
					  sizeof(struct kmsgr_cqe));
	pages = (p.sq_ring_size + p.cq_ring_size + p.buf_size) >> PAGE_SHIFT;

	/* Charge first: over the limit fails before any allocation. */
	if (!capable(CAP_IPC_LOCK)) {
		user = get_uid(current_user());
		ret = kmsgr_user_charge(user, pages);
		if (ret) {
			free_uid(user);
			return ret;
		}
	}

	ret = kmsgr_inst_alloc(inst, &p);
	if (ret)
		goto out_uncharge;

	if (copy_to_user(uarg, &p, sizeof(p))) {
		ret = -EFAULT;
		goto out_free;
	}

	mmgrab(mm);
	atomic64_add(pages, &mm->pinned_vm);
	inst->mm = mm;
	inst->user = user;
	inst->locked_pages = pages;
	/* Publish the rings: ENTER, mmap and poll read setup_done locklessly. */
	smp_store_release(&inst->setup_done, true);
	kmsgr_inst_dbg(inst, "sq %u cq %u buf %llu pool %llu\n",
		       p.sq_entries, p.cq_entries, p.buf_size, p.rx_pool_size);
	return 0;

out_free:
	kmsgr_inst_free(inst);
out_uncharge:
	kmsgr_user_uncharge(user, pages);
	free_uid(user);
	return ret;
}

/**
 * kmsgr_inst_teardown() - free the rings, the buffer area and the pool
 * @inst: the instance, at its final release: no mapping, no ioctl, no
 *        session is left
 */
void kmsgr_inst_teardown(struct kmsgr_instance *inst)
{
	struct kmsgr_cq_ovf *ovf, *tmp;

	list_for_each_entry_safe(ovf, tmp, &inst->cq_overflow, node) {
		list_del(&ovf->node);
		kfree(ovf);
	}
	inst->cq_overflow_nr = 0;

	if (inst->setup_done) {
		kmsgr_inst_free(inst);
		kmsgr_user_uncharge(inst->user, inst->locked_pages);
		free_uid(inst->user);
		inst->user = NULL;
		atomic64_sub(inst->locked_pages, &inst->mm->pinned_vm);
		mmdrop(inst->mm);
		inst->mm = NULL;
		inst->locked_pages = 0;
		inst->setup_done = false;
	}
	if (inst->stats.cq_lost)
		kmsgr_inst_warn(inst, "lost %llu events\n",
				inst->stats.cq_lost);
	mutex_destroy(&inst->submit_lock);
}

/* ---- mmap --------------------------------------------------------------- */

/**
 * kmsgr_inst_mmap() - map the SQ region, the CQ region or the buffer area
 * @inst: the instance
 * @vma:  the mapping: offset exactly KMSGR_OFF_*, length at most the
 *        region's, MAP_SHARED
 *
 * Return: 0; -EINVAL before SETUP, for another offset, a longer or private
 * mapping; an error of remap_vmalloc_range().
 */
int kmsgr_inst_mmap(struct kmsgr_instance *inst, struct vm_area_struct *vma)
{
	u64 off = (u64)vma->vm_pgoff << PAGE_SHIFT;
	unsigned long len = vma->vm_end - vma->vm_start;
	size_t size;
	void *mem;

	BUILD_BUG_ON(sizeof(struct kmsgr_ring) != 64);
	BUILD_BUG_ON(sizeof(struct kmsgr_sqe) != 64);
	BUILD_BUG_ON(sizeof(struct kmsgr_cqe) != 64);
	BUILD_BUG_ON(KMSGR_OFF_CQ_RING & ~PAGE_MASK);
	BUILD_BUG_ON(KMSGR_OFF_BUF & ~PAGE_MASK);

	if (!kmsgr_inst_ready(inst))
		return -EINVAL;
	/* A private mapping would copy the pages on write: never shared. */
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;

	switch (off) {
	case KMSGR_OFF_SQ_RING:
		mem = inst->sq;
		size = inst->sq_size;
		break;
	case KMSGR_OFF_CQ_RING:
		mem = inst->cq;
		size = inst->cq_size;
		break;
	case KMSGR_OFF_BUF:
		mem = inst->buf;
		size = inst->buf_size;
		break;
	default:
		return -EINVAL;
	}
	if (len > size)
		return -EINVAL;

	/* Sets VM_DONTEXPAND | VM_DONTDUMP; the VMA pins the file. */
	return remap_vmalloc_range(vma, mem, 0);
}

/* ---- CQ ----------------------------------------------------------------- */

/*
 * Read the CQ head the application wrote and adopt it if it is sane: at or
 * after the last head seen and not beyond the tail.  Anything else (a head
 * that went back, or ahead of the tail) is ignored, so the kernel never
 * overwrites an entry it has not seen consumed.
 */
static void kmsgr_cq_sync_head(struct kmsgr_instance *inst)
	__must_hold(&inst->cq_lock)
{
	u32 head;

	lockdep_assert_held(&inst->cq_lock);
	/* Pairs with the application's store-release after reading CQEs. */
	head = smp_load_acquire(inst->cq_khead);
	if (head - inst->cq_head <= inst->cq_tail - inst->cq_head)
		WRITE_ONCE(inst->cq_head, head);
}

/* Unreserved free slots. */
static u32 kmsgr_cq_free(struct kmsgr_instance *inst)
	__must_hold(&inst->cq_lock)
{
	u32 used = inst->cq_tail - inst->cq_head + inst->cq_reserved;

	return used < inst->cq_entries ? inst->cq_entries - used : 0;
}

static void kmsgr_cq_write(struct kmsgr_instance *inst,
			   const struct kmsgr_cqe *cqe)
	__must_hold(&inst->cq_lock)
{
	memcpy(&inst->cqes[inst->cq_tail & (inst->cq_entries - 1)], cqe,
	       sizeof(*cqe));
	WRITE_ONCE(inst->cq_tail, inst->cq_tail + 1);
	/* The entry is visible before the tail that covers it. */
	smp_store_release(inst->cq_ktail, inst->cq_tail);
	inst->stats.cqes++;
}

/* Delivery was refused for lack of room: tell the application. */
static void kmsgr_cq_set_paused(struct kmsgr_instance *inst)
	__must_hold(&inst->cq_lock)
{
	if (!inst->cq_paused) {
		WRITE_ONCE(inst->cq_paused, true);
		WRITE_ONCE(inst->cq->flags, KMSGR_RING_F_CQ_PAUSED);
		trace_kmsgr_cq_pause(inst);
		/* a waiter for more CQEs than are there reaps first now */
		kmsgr_cq_wake(inst);
	}
	inst->stats.cq_full++;
}

/* Move overflowed events into the CQ while there is room; true if any. */
static bool kmsgr_cq_flush(struct kmsgr_instance *inst)
	__must_hold(&inst->cq_lock)
{
	struct kmsgr_cq_ovf *ovf;
	bool moved = false;

	while (!list_empty(&inst->cq_overflow) && kmsgr_cq_free(inst)) {
		ovf = list_first_entry(&inst->cq_overflow, struct kmsgr_cq_ovf,
				       node);
		list_del(&ovf->node);
		WRITE_ONCE(inst->cq_overflow_nr, inst->cq_overflow_nr - 1);
		kmsgr_cq_write(inst, &ovf->cqe);
		kfree(ovf);
		moved = true;
	}
	return moved;
}

/*
 * Unreserved room for an event or inbound message (none while older events
 * wait on the overflow list).  When there is none, delivery is marked
 * paused and the application's head read once more: an application that
 * advanced its head before it could see the flag is seen here (the
 * set-then-recheck of io_uring's NEED_WAKEUP; the application's side is
 * described at KMSGR_RING_F_CQ_PAUSED).
 */
static u32 kmsgr_cq_room_locked(struct kmsgr_instance *inst)
	__must_hold(&inst->cq_lock)
{
	kmsgr_cq_sync_head(inst);
	kmsgr_cq_flush(inst);
	if (list_empty(&inst->cq_overflow) && kmsgr_cq_free(inst))
		return kmsgr_cq_free(inst);
	kmsgr_cq_set_paused(inst);
	/* the flag before the head; pairs with the application's barrier */
	smp_mb();
	kmsgr_cq_sync_head(inst);
	kmsgr_cq_flush(inst);
	return list_empty(&inst->cq_overflow) ? kmsgr_cq_free(inst) : 0;
}

void kmsgr_cq_wake(struct kmsgr_instance *inst)
{
	/* wq_has_sleeper() orders the tail store before the check. */
	if (wq_has_sleeper(&inst->cq_wait))
		wake_up_all(&inst->cq_wait);
}

/*
 * After a cq_lock section: wake the waiters if it posted anything (its
 * own entry, or overflowed events it moved in), whether or not the
 * caller's own post succeeded.  @tail: cq_tail when the section began.
 */
static void kmsgr_cq_wake_if(struct kmsgr_instance *inst, u32 tail)
{
	if (READ_ONCE(inst->cq_tail) != tail)
		kmsgr_cq_wake(inst);
}

/* End a pause of delivery if room has appeared; true if it ended. */
static bool kmsgr_cq_unpause(struct kmsgr_instance *inst)
	__must_hold(&inst->cq_lock)
{
	if (!inst->cq_paused || !list_empty(&inst->cq_overflow) ||
	    !kmsgr_cq_free(inst))
		return false;
	WRITE_ONCE(inst->cq_paused, false);
	WRITE_ONCE(inst->cq->flags, 0);
	trace_kmsgr_cq_resume(inst);
	return true;
}

/*
 * Resync with the application's head and flush the overflow list.  If
 * delivery was paused and room has appeared, unpause it and set *@resume:
 * the caller restarts the sessions (kmsgr_sess_resume()).  Returns the
 * number of CQEs ready for the application.
 */
u32 kmsgr_cq_refresh(struct kmsgr_instance *inst, bool *resume)
{
	unsigned long flags;
	bool moved;
	u32 ready;

	spin_lock_irqsave(&inst->cq_lock, flags);
	kmsgr_cq_sync_head(inst);
	moved = kmsgr_cq_flush(inst);
	*resume = kmsgr_cq_unpause(inst);
	ready = inst->cq_tail - inst->cq_head;
	spin_unlock_irqrestore(&inst->cq_lock, flags);

	if (moved)
		kmsgr_cq_wake(inst);
	return ready;
}

/* Whether new sessions are refused for the overflow list's length. */
bool kmsgr_cq_backlogged(struct kmsgr_instance *inst)
{
	return READ_ONCE(inst->cq_overflow_nr) >= KMSGR_CQ_OVERFLOW_ACCEPT ||
	       kmsgr_fault_set(KMSGR_FAULT_BACKLOG);
}

/* CQEs ready, for the ENTER wait condition (no side effects but the head). */
u32 kmsgr_cq_ready(struct kmsgr_instance *inst)
{
	unsigned long flags;
	u32 ready;

	spin_lock_irqsave(&inst->cq_lock, flags);
	kmsgr_cq_sync_head(inst);
	ready = inst->cq_tail - inst->cq_head;
	spin_unlock_irqrestore(&inst->cq_lock, flags);
	return ready;
}

/*
 * Most CQ slots reserved at once: the rest (half the CQ) is kept for
 * inbound messages and events.  Without that bound, SEND completions
 * could take every slot, no inbound message could be posted, reading
 * would stop, and the acks that complete those SENDs would never be read.
 */
static u32 kmsgr_cq_reserve_max(const struct kmsgr_instance *inst)
{
	return inst->cq_entries - inst->cq_entries / 2;
}

/* Whether a slot may be reserved now, the CQ's head synced. */
static bool kmsgr_cq_reservable(struct kmsgr_instance *inst, u32 n)
	__must_hold(&inst->cq_lock)
{
	kmsgr_cq_sync_head(inst);
	return list_empty(&inst->cq_overflow) && kmsgr_cq_free(inst) >= n &&
	       inst->cq_reserved + n <= kmsgr_cq_reserve_max(inst);
}

/* Whether kmsgr_cq_reserve() of @n slots could succeed now. */
bool kmsgr_cq_can_reserve(struct kmsgr_instance *inst, u32 n)
{
	unsigned long flags;
	bool ok;

	spin_lock_irqsave(&inst->cq_lock, flags);
	ok = kmsgr_cq_reservable(inst, n);
	spin_unlock_irqrestore(&inst->cq_lock, flags);
	return ok;
}

/*
 * Reserve slots for the completions of @n SQEs (a linked pair: 2), all or
 * none; false when there are not that many free, or the in-flight bound
 * is reached.  (A pair reserved one slot at a time gave its first back
 * when the second failed, and that woke the room waiters for nothing.)
 */
bool kmsgr_cq_reserve(struct kmsgr_instance *inst, u32 n)
{
	unsigned long flags;
	bool ok = false;
	u32 tail;

	spin_lock_irqsave(&inst->cq_lock, flags);
	tail = inst->cq_tail;
	kmsgr_cq_sync_head(inst);
	kmsgr_cq_flush(inst);
	if (kmsgr_cq_reservable(inst, n)) {
		inst->cq_reserved += n;
		ok = true;
	}
	spin_unlock_irqrestore(&inst->cq_lock, flags);
	kmsgr_cq_wake_if(inst, tail);
	return ok;
}

void kmsgr_cq_wake_runners(struct kmsgr_instance *inst)
{
	if (wq_has_sleeper(&inst->cq_wait))
		__wake_up(&inst->cq_wait, TASK_NORMAL, 0, KMSGR_WAKE_RUN);
}

/*
 * Give back a reservation that no completion will use.  The slot is room:
 * events waiting on the overflow list move in (their waiters are woken),
 * and a pause of delivery may end; then it returns true, and the caller
 * restarts the sessions (kmsgr_sess_unreserve() does both).  Without
 * that, a waiter for those events or for held messages slept on, with
 * the room there.
 */
bool kmsgr_cq_unreserve(struct kmsgr_instance *inst)
{
	unsigned long flags;
	bool resume;
	u32 tail;

	spin_lock_irqsave(&inst->cq_lock, flags);
	tail = inst->cq_tail;
	if (!WARN_ON_ONCE(!inst->cq_reserved))
		inst->cq_reserved--;
	kmsgr_cq_sync_head(inst);
	kmsgr_cq_flush(inst);
	resume = kmsgr_cq_unpause(inst);
	spin_unlock_irqrestore(&inst->cq_lock, flags);
	kmsgr_cq_wake_if(inst, tail);
	if (wq_has_sleeper(&inst->cq_wait))
		__wake_up(&inst->cq_wait, TASK_NORMAL, 0, KMSGR_WAKE_ROOM);
	return resume;
}

static void kmsgr_pool_hand_out(struct kmsgr_instance *inst,
				const struct kmsgr_cqe *cqe);

/**
 * kmsgr_cq_post() - post a completion
 * @inst:  the instance (set up)
 * @cqe:   the entry, copied
 * @flags: KMSGR_CQ_RESERVED: use a slot reserved by ENTER (completion of a
 *         consumed SQE); KMSGR_CQ_QUIET: do not wake the waiters, the
 *         caller calls kmsgr_cq_wake() after its batch
 *
 * Without KMSGR_CQ_RESERVED, the entry goes in only if the CQ has
 * unreserved room and no older event waits on the overflow list (order is
 * kept); else delivery is marked paused (KMSGR_RING_F_CQ_PAUSED) and the
 * caller must hold the entry back until kmsgr_sess_resume().  Callable
 * from any context.
 *
 * Return: 0, or -ENOSPC (never with KMSGR_CQ_RESERVED).
 */
int kmsgr_cq_post(struct kmsgr_instance *inst, const struct kmsgr_cqe *cqe,
		  unsigned int flags)
{
	unsigned long irqflags;
	int ret = 0;
	u32 tail;

	if (WARN_ON_ONCE(!kmsgr_inst_ready(inst)))
		return -ENOSPC;

	spin_lock_irqsave(&inst->cq_lock, irqflags);
	tail = inst->cq_tail;
	kmsgr_cq_sync_head(inst);
	kmsgr_cq_flush(inst);
	if ((flags & KMSGR_CQ_RESERVED) &&
	    !WARN_ON_ONCE(!inst->cq_reserved)) {
		/* The slot was counted in the invariant: it is free. */
		inst->cq_reserved--;
		/* an SQE's completion: refused, or failed on its way */
		if (cqe->res)
			inst->stats.sqe_errors++;
	} else if (!kmsgr_cq_room_locked(inst)) {
		ret = -ENOSPC;
		goto out_unlock;
	}
	kmsgr_cq_write(inst, cqe);
	if (cqe->kind == KMSGR_CQE_RECV)
		kmsgr_pool_hand_out(inst, cqe);
out_unlock:
	spin_unlock_irqrestore(&inst->cq_lock, irqflags);
	/*
	 * A quiet caller wakes after its batch, for what it posted; events
	 * moved in by a post that then failed are woken for here.
	 */
	if (!(flags & KMSGR_CQ_QUIET) || ret)
		kmsgr_cq_wake_if(inst, tail);
	return ret;
}

/* An event; @note: kmsgr_cq_post_note()'s, else kmsgr_cq_post_event()'s. */
static void kmsgr_cq_post_ev(struct kmsgr_instance *inst,
			     const struct kmsgr_cqe *cqe, bool note)
{
	struct kmsgr_cq_ovf *ovf;
	unsigned long flags;
	u64 lost = 0;
	u32 tail;

	if (WARN_ON_ONCE(!kmsgr_inst_ready(inst)))
		return;

	spin_lock_irqsave(&inst->cq_lock, flags);
	tail = inst->cq_tail;
	if (kmsgr_cq_room_locked(inst)) {
		kmsgr_cq_write(inst, cqe);
		goto out_unlock;
	}

	ovf = NULL;
	if (inst->cq_overflow_nr < (note ? KMSGR_CQ_OVERFLOW_NOTES :
					   KMSGR_CQ_OVERFLOW_MAX))
		ovf = kmalloc(sizeof(*ovf), GFP_ATOMIC | __GFP_ACCOUNT | __GFP_NOWARN);
	if (!ovf && note)
		goto out_unlock;	/* no event: see KMSGR_CQ_OVERFLOW_NOTES */
	if (!ovf) {
		lost = ++inst->stats.cq_lost;
		WRITE_ONCE(inst->cq->dropped, (u32)lost);
		goto out_unlock;
	}
	ovf->cqe = *cqe;
	list_add_tail(&ovf->node, &inst->cq_overflow);
	WRITE_ONCE(inst->cq_overflow_nr, inst->cq_overflow_nr + 1);
	inst->stats.cq_overflow++;
out_unlock:
	spin_unlock_irqrestore(&inst->cq_lock, flags);

	kmsgr_cq_wake_if(inst, tail);
	if (lost)
		kmsgr_inst_warn_ratelimited(inst, "CQ overflow list full, event %u of session %u lost (%llu lost)\n",
					    cqe->event, cqe->session, lost);
}

/**
 * kmsgr_cq_post_event() - post a session event, never refused
 * @inst: the instance (set up)
 * @cqe:  the event, copied
 *
 * When the CQ is full the event waits on the overflow list (in order) and
 * is moved into the CQ when room appears.  That list is bounded; an event
 * beyond the bound, or when GFP_ATOMIC fails, is counted in
 * inst->stats.cq_lost and logged.  Callable from any context.
 */
void kmsgr_cq_post_event(struct kmsgr_instance *inst,
			 const struct kmsgr_cqe *cqe)
{
	kmsgr_cq_post_ev(inst, cqe, false);
}

/**
 * kmsgr_cq_post_note() - post an event the application may miss (a
 * listener's REFUSED)
 * @inst: the instance (set up)
 * @cqe:  the event, copied
 *
 * As kmsgr_cq_post_event(), but while the CQ is full it waits on the
 * overflow list only below KMSGR_CQ_OVERFLOW_NOTES entries, else it is not
 * posted (and not counted as lost).  Callable from any context.
 */
void kmsgr_cq_post_note(struct kmsgr_instance *inst,
			const struct kmsgr_cqe *cqe)
{
	kmsgr_cq_post_ev(inst, cqe, true);
}

/**
 * kmsgr_cq_room() - unreserved free CQ slots
 * @inst: the instance
 *
 * A caller that finds no room holds its delivery back: 0 marks the CQ
 * paused (KMSGR_RING_F_CQ_PAUSED), so that kmsgr_sess_resume() is called
 * when ENTER or poll() finds room again.
 *
 * Return: slots a kmsgr_cq_post() without reservation could fill now; 0
 * before SETUP, when full, or while events wait on the overflow list.
 */
u32 kmsgr_cq_room(struct kmsgr_instance *inst)
{
	unsigned long flags;
	u32 room, tail;

	if (!kmsgr_inst_ready(inst))
		return 0;
	spin_lock_irqsave(&inst->cq_lock, flags);
	tail = inst->cq_tail;
	room = kmsgr_cq_room_locked(inst);
	spin_unlock_irqrestore(&inst->cq_lock, flags);
	kmsgr_cq_wake_if(inst, tail);
	return room;
}

/* ---- receive pool ------------------------------------------------------- */

/*
 * Where a message's run of grains may start: at a grain g with
 * (g + off) & mask == 0.  mask 0: anywhere.  Its data segment then starts
 * at a buffer-area offset that is a multiple of KMSGR_POOL_DATA_ALIGN
 * (kmsgr_pool_msg_align()).
 */
struct kmsgr_pool_align {
	unsigned long mask;
	unsigned long off;
};

/*
 * A received data segment whose length is a non-zero multiple of this
 * starts at a buffer-area offset that is a multiple of it: the logical
 * block size of 4Kn NVMe namespaces, so that a BDEV_WRITE from the pool
 * (KMSGR_SQE_F_RELEASE) meets their alignment rule.
 */
#define KMSGR_POOL_DATA_ALIGN	SZ_4K
#define KMSGR_POOL_ALIGN_MASK	(KMSGR_POOL_DATA_ALIGN / KMSGR_POOL_GRAIN - 1)

/*
 * Grains of a @len-byte slice, rounded up in 64 bits: a u32 length near
 * 4 GiB must not wrap to 0 grains.
 */
static u32 kmsgr_grains(u64 len)
{
	return DIV_ROUND_UP_ULL(len, KMSGR_POOL_GRAIN);
}

/*
 * The placement rule of a message of @n segments of @len bytes: when its
 * data segment (the last of KMSGR_NSEG) is a non-zero multiple of
 * KMSGR_POOL_DATA_ALIGN, its run starts where the grains of the segments
 * before it end on such an offset of the buffer area (pool_off is only
 * grain-aligned); any other message goes anywhere.
 */
static void kmsgr_pool_msg_align(const struct kmsgr_instance *inst,
				 const u32 *len, unsigned int n,
				 struct kmsgr_pool_align *a)
{
	unsigned long pre;
	unsigned int i;

	a->mask = 0;
	a->off = 0;
	if (n != KMSGR_NSEG || !len[n - 1] ||
	    !IS_ALIGNED(len[n - 1], KMSGR_POOL_DATA_ALIGN))
		return;
	pre = inst->pool_off / KMSGR_POOL_GRAIN;
	for (i = 0; i < n - 1; i++)
		pre += kmsgr_grains(len[i]);
	a->mask = KMSGR_POOL_ALIGN_MASK;
	a->off = pre & a->mask;
}

/*
 * First grain of a free run of @n in [@start, @end) that starts where @a
 * allows, or pool_grains.
 */
static unsigned long kmsgr_pool_run(struct kmsgr_instance *inst,
				    unsigned long start, unsigned long end,
				    unsigned long n,
				    const struct kmsgr_pool_align *a)
	__must_hold(&inst->cq_lock)
{
	unsigned long first;

	if (start >= end || n > end - start)
		return inst->pool_grains;
	first = bitmap_find_next_zero_area_off(inst->pool_used, end, start, n,
					       a->mask, a->off);
	return first + n > end ? inst->pool_grains : first;
}

/* Grains in use in [@start, @end) of the pool, a word at a time. */
static unsigned long kmsgr_pool_used_in(const struct kmsgr_instance *inst,
					unsigned long start, unsigned long end)
{
	unsigned long i, last, word, used = 0;

	if (start >= end)
		return 0;
	last = (end - 1) / BITS_PER_LONG;
	for (i = start / BITS_PER_LONG; i <= last; i++) {
		word = inst->pool_used[i];
		if (i == start / BITS_PER_LONG)
			word &= BITMAP_FIRST_WORD_MASK(start);
		if (i == last)
			word &= BITMAP_LAST_WORD_MASK(end);
		used += hweight_long(word);
	}
	return used;
}

/*
 * The grains promised to a message that waits: of the windows of its size
 * that start where @a allows, the one with the fewest grains in use (it
 * frees soonest); the first of them on a tie.  In a pool of more than
 * KMSGR_POOL_PICK_WINDOWS grains, only every step-th window is weighed, the
 * step a multiple of the alignment's that leaves at most that many: the
 * scan runs under cq_lock with irqs off, and a bit at a time it took
 * 0.6-1.5 ms on this project's host for a 256 MiB pool (a tenth of that
 * now, a few words counted per window).  Any window would do (the region
 * is only kept free for the waiter); this one frees soonest to within a
 * step.
 */
#define KMSGR_POOL_PICK_WINDOWS	4096

static unsigned long kmsgr_pool_pick_region(struct kmsgr_instance *inst,
					    unsigned long n,
					    const struct kmsgr_pool_align *a)
	__must_hold(&inst->cq_lock)
{
	unsigned long step, first = -a->off & a->mask, best = first;
	unsigned long used, best_used;

	step = round_up(DIV_ROUND_UP(inst->pool_grains,
				     KMSGR_POOL_PICK_WINDOWS), a->mask + 1);
	used = kmsgr_pool_used_in(inst, first, first + n);
	best_used = used;
	while (best_used && first + step + n <= inst->pool_grains) {
		used -= kmsgr_pool_used_in(inst, first, first + step);
		used += kmsgr_pool_used_in(inst, first + n, first + n + step);
		first += step;
		if (used < best_used) {
			best_used = used;
			best = first;
		}
	}
	return best;
}

/*
 * First fit of @n grains for @who, placed as @a says, from the rotating
 * hint; pool_grains when none.  While another caller's message waits, its
 * promised region is left alone.
 */
static unsigned long kmsgr_pool_find(struct kmsgr_instance *inst, u32 who,
				     unsigned long n,
				     const struct kmsgr_pool_align *a)
	__must_hold(&inst->cq_lock)
{
	unsigned long g = inst->pool_grains, hint = inst->pool_hint;
	unsigned long lo = g, hi = g, first;

	if (inst->pool_waiter && inst->pool_waiter != who) {
		if (time_after(jiffies, inst->pool_wait_at +
					msecs_to_jiffies(KMSGR_POOL_WAIT_MS))) {
			inst->pool_waiter = 0;	/* it stopped asking */
		} else {
			lo = inst->pool_wait_first;
			hi = lo + inst->pool_wait_grains;
		}
	}
	first = hint < lo ? kmsgr_pool_run(inst, hint, lo, n, a) :
			    kmsgr_pool_run(inst, max(hint, hi), g, n, a);
	if (first == g)
		first = kmsgr_pool_run(inst, hi, g, n, a);
	if (first == g)
		first = kmsgr_pool_run(inst, 0, lo, n, a);
	return first;
}

/*
 * Whether a message of segments @len would take more than half the pool
 * (after SETUP): such a message is refused, never placed nor spilled.  A
 * peer that announces a large message and withholds it can then never
 * take the room the other sessions of the instance need (msg_timeout ends
 * its hold).
 */
static bool kmsgr_pool_over_half(const struct kmsgr_instance *inst,
				 u64 grains)
{
	return grains > inst->pool_grains / 2;
}

bool kmsgr_pool_too_big(struct kmsgr_instance *inst, const u32 *len,
			unsigned int n)
{
	u64 total = 0;
	unsigned int i;

	if (!kmsgr_inst_ready(inst))
		return false;
	for (i = 0; i < n; i++)
		total += kmsgr_grains(len[i]);
	return kmsgr_pool_over_half(inst, total);
}

/**
 * kmsgr_pool_alloc_msg() - allocate receive-pool space for one message
 * @inst: the instance
 * @who:  the caller (a session id, not 0), for fairness
 * @len:  bytes of each of @n segments (each rounded up to
 *        KMSGR_POOL_GRAIN; 0 gives an empty slice at offset 0)
 * @off:  out: each segment's offset in the buffer area
 * @n:    number of segments
 *
 * The segments get one contiguous run of grains, each its own allocation
 * (released one by one), so that a message either fits whole or waits
 * whole: a message never holds part of the pool while it waits for the
 * rest.  First fit from a rotating hint.  The slices are "being received"
 * until their RECV CQE is posted (kmsgr_pool_token()).  Never sleeps;
 * callable from any context.
 *
 * Alignment: a message of KMSGR_NSEG segments whose data segment (the
 * last) is a non-zero multiple of 4 KiB (KMSGR_POOL_DATA_ALIGN) gets its
 * data slice at a 4 KiB-aligned offset of the buffer area (not only of
 * the pool), so that it can be written to a device with 4 KiB logical
 * blocks straight from the pool.  The search only considers runs that
 * start where that holds (one grain in 8); no padding is allocated: the
 * up to 7 free grains the rule may skip before a run stay free for other
 * messages.  Every other message is placed on any grain, as before.
 *
 * Fairness: the first caller refused for want of room becomes the
 * waiter, and is promised the run of its size (placed as above) that has
 * the fewest grains in use.  Until it is served (or stops asking for
 * KMSGR_POOL_WAIT_MS), the others are placed only outside that run, so a
 * stream of small messages can never starve a large one by keeping the
 * pool fragmented, and yet keeps flowing where it does not stand in the
 * way.
 *
 * Return: 0; -EMSGSIZE when the message is larger than half the pool (it
 * is refused: see below; the grains the alignment may skip are not
 * counted, since they are never allocated, and an aligned run of half the
 * pool always exists in an empty one); -ENOSPC when it does not fit now
 * (a RELEASE that frees space calls kmsgr_sess_resume()), or before SETUP.
 */
int kmsgr_pool_alloc_msg(struct kmsgr_instance *inst, u32 who,
			 const u32 *len, u32 *off, unsigned int n)
{
	struct kmsgr_pool_align a;
	unsigned long flags, first, pos;
	bool wake = false;
	u64 total = 0;
	unsigned int i;
	int ret = 0;

	/*
	 * An aligned run of half the pool fits in an empty pool: half the
	 * smallest pool leaves room for the grains the alignment skips.
	 */
	BUILD_BUG_ON((KMSGR_POOL_MIN / KMSGR_POOL_GRAIN / 2) < KMSGR_POOL_ALIGN_MASK);

	for (i = 0; i < n; i++) {
		off[i] = 0;
		total += kmsgr_grains(len[i]);
	}
	if (!total)
		return 0;
	if (!kmsgr_inst_ready(inst))
		return -ENOSPC;
	if (kmsgr_pool_over_half(inst, total))
		return -EMSGSIZE;
	kmsgr_pool_msg_align(inst, len, n, &a);

	spin_lock_irqsave(&inst->cq_lock, flags);
	first = kmsgr_pool_find(inst, who, total, &a);
	if (first == inst->pool_grains) {
		if (!inst->pool_waiter || inst->pool_waiter == who) {
			/* a new size, or a region placed for another rule */
			if (inst->pool_waiter != who ||
			    inst->pool_wait_grains != total ||
			    ((inst->pool_wait_first + a.off) & a.mask))
				inst->pool_wait_first =
					kmsgr_pool_pick_region(inst, total, &a);
			inst->pool_waiter = who;
			inst->pool_wait_grains = total;
			inst->pool_wait_at = jiffies;
		}
		/* a waiter for more CQEs than are there reaps first now */
		wake = !inst->pool_starved;
		WRITE_ONCE(inst->pool_starved, true);
		inst->stats.pool_full++;
		ret = -ENOSPC;
		goto out_unlock;
	}
	if (inst->pool_waiter == who)
		inst->pool_waiter = 0;
	bitmap_set(inst->pool_used, first, total);
	for (pos = first, i = 0; i < n; i++) {
		if (!len[i])
			continue;
		__set_bit(pos, inst->pool_start);
		inst->pool_token[pos] = 0;	/* being received */
		off[i] = inst->pool_off + (u64)pos * KMSGR_POOL_GRAIN;
		pos += kmsgr_grains(len[i]);
	}
	inst->pool_hint = first + total < inst->pool_grains ?
			  first + total : 0;
	inst->stats.pool_bytes += total * KMSGR_POOL_GRAIN;
out_unlock:
	spin_unlock_irqrestore(&inst->cq_lock, flags);
	if (wake)
		kmsgr_cq_wake(inst);
	return ret;
}

u64 kmsgr_pool_in_use(struct kmsgr_instance *inst)
{
	unsigned long flags;
	u64 bytes;

	if (!kmsgr_inst_ready(inst))
		return 0;
	spin_lock_irqsave(&inst->cq_lock, flags);
	bytes = inst->stats.pool_bytes;
	spin_unlock_irqrestore(&inst->cq_lock, flags);
	return bytes;
}

/**
 * kmsgr_pool_unwait() - @who no longer waits for pool room
 * @inst: the instance
 * @who:  as given to kmsgr_pool_alloc_msg()
 */
void kmsgr_pool_unwait(struct kmsgr_instance *inst, u32 who)
{
	unsigned long flags;

	spin_lock_irqsave(&inst->cq_lock, flags);
	if (inst->pool_waiter == who)
		inst->pool_waiter = 0;
	spin_unlock_irqrestore(&inst->cq_lock, flags);
}

/* Grain index of a pool slice, or -EINVAL when @off is not a grain start. */
static long kmsgr_pool_grain(struct kmsgr_instance *inst, u32 off, u32 len)
{
	u32 n = kmsgr_grains(len);
	u64 rel, first;

	if (!kmsgr_inst_ready(inst) || off < inst->pool_off)
		return -EINVAL;
	rel = off - inst->pool_off;
	if (rel % KMSGR_POOL_GRAIN)
		return -EINVAL;
	first = rel / KMSGR_POOL_GRAIN;
	if (first >= inst->pool_grains || n > inst->pool_grains - first)
		return -EINVAL;
	return (long)first;
}

void kmsgr_pool_free_msg(struct kmsgr_instance *inst,
			 const struct kmsgr_slice *seg, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (seg[i].len)
			kmsgr_pool_free(inst, seg[i].off, seg[i].len);
}

/**
 * kmsgr_pool_token() - a release token for the slices of a received message
 * @inst: the instance
 *
 * Return: the token (1 .. 2^31 - 1) for the RECV CQE: the instance's next
 * one, so that a stale RELEASE could meet its token again only after 2^31
 * messages (random ones met again by chance).  The slices take it when
 * that CQE goes into the CQ (kmsgr_cq_post()), not before: a RECV held
 * back for want of CQ room names slices that no RELEASE can free yet.  A
 * RELEASE that names the token frees exactly these slices and nothing
 * that reuses their space later.
 */
u32 kmsgr_pool_token(struct kmsgr_instance *inst)
{
	u32 token;

	do {
		token = (u32)atomic_inc_return(&inst->tokens) &
			KMSGR_RELEASE_TOKEN_MAX;
	} while (!token);
	return token;
}

/* The RECV @cqe is in the CQ: its slices are the application's now. */
static void kmsgr_pool_hand_out(struct kmsgr_instance *inst,
				const struct kmsgr_cqe *cqe)
	__must_hold(&inst->cq_lock)
{
	unsigned int i;
	long first;

	for (i = 0; i < KMSGR_NSEG; i++) {
		if (!cqe->seg[i].len)
			continue;
		first = kmsgr_pool_grain(inst, cqe->seg[i].off,
					 cqe->seg[i].len);
		if (!WARN_ON_ONCE(first < 0))
			inst->pool_token[first] = cqe->res;
	}
}

/*
 * true if grains [first, first + n) are exactly one live allocation: all
 * used, a start at @first, no other start inside, and the allocation does
 * not go on past the end.
 */
static bool kmsgr_pool_is_alloc(struct kmsgr_instance *inst, u32 first,
				u32 n)
	__must_hold(&inst->cq_lock)
{
	u32 end = first + n;

	if (!test_bit(first, inst->pool_start))
		return false;
	if (find_next_zero_bit(inst->pool_used, end, first) < end)
		return false;
	if (find_next_bit(inst->pool_start, end, first + 1) < end)
		return false;
	return end == inst->pool_grains || !test_bit(end, inst->pool_used) ||
	       test_bit(end, inst->pool_start);
}

/* Under cq_lock: free the allocation of @n grains at grain @first. */
static void kmsgr_pool_clear(struct kmsgr_instance *inst, long first, u32 n)
{
	lockdep_assert_held(&inst->cq_lock);
	bitmap_clear(inst->pool_used, first, n);
	__clear_bit(first, inst->pool_start);
	inst->pool_token[first] = 0;
	inst->stats.pool_bytes -= (u64)n * KMSGR_POOL_GRAIN;
}

/**
 * kmsgr_pool_free() - the kernel gives back receive-pool space
 * @inst:  the instance
 * @off:   offset in the buffer area, as kmsgr_pool_alloc_msg() gave it
 * @len:   bytes, as allocated (the same number of grains); 0 is a no-op
 *
 * Callable from any context.  The application's RELEASE goes through
 * kmsgr_pool_release(), which checks the slices' tokens.
 *
 * Return: 0, or -EINVAL when [@off, @off + @len) is not exactly one live
 * allocation (outside the pool, misaligned, free already, part of one or
 * spanning several).
 */
int kmsgr_pool_free(struct kmsgr_instance *inst, u32 off, u32 len)
{
	u32 n = kmsgr_grains(len);
	unsigned long flags;
	long first;
	int ret = 0;

	if (!len)
		return 0;
	first = kmsgr_pool_grain(inst, off, len);
	if (first < 0)
		return -EINVAL;

	spin_lock_irqsave(&inst->cq_lock, flags);
	if (kmsgr_pool_is_alloc(inst, first, n))
		kmsgr_pool_clear(inst, first, n);
	else
		ret = -EINVAL;
	spin_unlock_irqrestore(&inst->cq_lock, flags);
	return ret;
}

/*
 * The first grain of each of an SQE's slices (-1: len 0, unused), into
 * @first; -EINVAL when one is not a pool range, or two are the same (it
 * would be freed twice).
 */
static int kmsgr_pool_slices(struct kmsgr_instance *inst,
			     const struct kmsgr_slice *seg, long *first)
{
	unsigned int i, j;

	for (i = 0; i < KMSGR_NSEG; i++) {
		first[i] = -1;
		if (!seg[i].len)
			continue;
		first[i] = kmsgr_pool_grain(inst, seg[i].off, seg[i].len);
		if (first[i] < 0)
			return -EINVAL;
		for (j = 0; j < i; j++)
			if (first[j] == first[i])
				return -EINVAL;
	}
	return 0;
}

/*
 * Under cq_lock: whether each slice of @first is one delivered allocation,
 * with @token (0: any token, the ABI 1 RELEASE).
 */
static bool kmsgr_pool_delivered(struct kmsgr_instance *inst,
				 const struct kmsgr_slice *seg,
				 const long *first, u32 token)
{
	unsigned int i;
	u32 t;

	lockdep_assert_held(&inst->cq_lock);
	for (i = 0; i < KMSGR_NSEG; i++) {
		if (first[i] < 0)
			continue;
		if (!kmsgr_pool_is_alloc(inst, first[i],
					 kmsgr_grains(seg[i].len)))
			return false;
		t = inst->pool_token[first[i]];
		if (!t || (token && t != token))
			return false;
	}
	return true;
}

int kmsgr_pool_take(struct kmsgr_instance *inst, const struct kmsgr_slice *seg,
		    u32 token)
{
	long first[KMSGR_NSEG];
	unsigned long flags;
	unsigned int i;
	int ret = -EINVAL;

	if (!token || token > KMSGR_RELEASE_TOKEN_MAX ||
	    kmsgr_pool_slices(inst, seg, first))
		return -EINVAL;

	spin_lock_irqsave(&inst->cq_lock, flags);
	if (!kmsgr_pool_delivered(inst, seg, first, token))
		goto out_unlock;
	/* token 0: as while being received into, no RELEASE takes it */
	for (i = 0; i < KMSGR_NSEG; i++)
		if (first[i] >= 0)
			inst->pool_token[first[i]] = 0;
	ret = 0;
out_unlock:
	spin_unlock_irqrestore(&inst->cq_lock, flags);
	return ret;
}

int kmsgr_pool_release(struct kmsgr_instance *inst,
		       const struct kmsgr_slice *seg, u32 token)
{
	long first[KMSGR_NSEG];
	unsigned long flags;
	unsigned int i;
	int ret = 0;

	if (kmsgr_pool_slices(inst, seg, first))
		return -EINVAL;

	spin_lock_irqsave(&inst->cq_lock, flags);
	if (!kmsgr_pool_delivered(inst, seg, first, token)) {
		ret = -EINVAL;
		goto out_unlock;
	}
	for (i = 0; i < KMSGR_NSEG; i++) {
		if (first[i] < 0)
			continue;
		kmsgr_pool_clear(inst, first[i], kmsgr_grains(seg[i].len));
		ret++;
	}
out_unlock:
	spin_unlock_irqrestore(&inst->cq_lock, flags);
	return ret;
}

bool kmsgr_pool_take_starved(struct kmsgr_instance *inst)
{
	unsigned long flags;
	bool starved;

	spin_lock_irqsave(&inst->cq_lock, flags);
	starved = inst->pool_starved;
	WRITE_ONCE(inst->pool_starved, false);
	spin_unlock_irqrestore(&inst->cq_lock, flags);
	return starved;
}

/**
 * kmsgr_buf_ptr() - kernel address of buffer-area bytes
 * @inst: the instance
 * @off:  offset in the area
 * @len:  length
 *
 * Return: the address of [@off, @off + @len), or NULL when that range is
 * not inside the area or the instance is not set up.
 */
void *kmsgr_buf_ptr(struct kmsgr_instance *inst, u64 off, u64 len)
{
	if (!kmsgr_inst_ready(inst))
		return NULL;
	if (off > inst->buf_size || len > inst->buf_size - off)
		return NULL;
	return inst->buf + off;
}
