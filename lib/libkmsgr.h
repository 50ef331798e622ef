/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * libkmsgr - thin user-space library over /dev/kmsgr.
 *
 * Conventions
 *
 *  - Functions returning int return 0 (or a non-negative value) on success
 *    and a negative errno value on failure; they never rely on errno.
 *    kmsgr_strerror() turns such a value into a message.
 *  - A struct kmsgr is one kernel instance (one open file of /dev/kmsgr).
 *    Calls on one handle must be serialised by the caller; distinct handles
 *    are independent.
 *  - The kernel ABI is <linux/kmsgr.h>; kmsgr_open() refuses a module whose
 *    KMSGR_ABI_VERSION differs from the one libkmsgr was built with.
 *
 * Build: pkg-config --cflags --libs kmsgr
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#ifndef LIBKMSGR_H
#define LIBKMSGR_H

/*
 * The kmsgr release this header belongs to; kmsgr_version() gives the
 * library's at run time.  lib/Makefile refuses to build when they differ
 * from KMSGR_VERSION (kmod/kmsgr.h).
 */
#define LIBKMSGR_VERSION_MAJOR	0
#define LIBKMSGR_VERSION_MINOR	1
#define LIBKMSGR_VERSION_PATCH	0

/* True when this header is of release @major.@minor.@patch or later. */
#define LIBKMSGR_CHECK_VERSION(major, minor, patch)			\
	(LIBKMSGR_VERSION_MAJOR > (major) ||				\
	 (LIBKMSGR_VERSION_MAJOR == (major) &&				\
	  (LIBKMSGR_VERSION_MINOR > (minor) ||				\
	   (LIBKMSGR_VERSION_MINOR == (minor) &&			\
	    LIBKMSGR_VERSION_PATCH >= (patch)))))

/*
 * The header compiles as C89 and later and as C++: C89 has no inline,
 * GNU C's __inline__ is the same there.
 */
#if defined(__cplusplus) || \
	(defined(__STDC_VERSION__) && __STDC_VERSION__ >= 199901L)
#define LIBKMSGR_INLINE inline
#else
#define LIBKMSGR_INLINE __inline__
#endif

#include <stddef.h>

#include <linux/kmsgr.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An open kmsgr instance; opaque. */
struct kmsgr;

/**
 * kmsgr_open() - create a kmsgr instance
 * @path: device node, or NULL for KMSGR_DEV_PATH ("/dev/kmsgr")
 * @kp:   on success, the new handle; untouched on failure
 *
 * Opens the device (close-on-exec) and checks the module's ABI version.
 *
 * Return: 0, or a negative errno: -ENOENT (no node: module not loaded),
 * -EACCES (not privileged), -ENODEV (@path is not a kmsgr device),
 * -EPROTO (module ABI differs from libkmsgr's), -ENOMEM, or any error of
 * open(2) or of KMSGR_IOC_INFO.
 */
int kmsgr_open(const char *path, struct kmsgr **kp);

/**
 * kmsgr_close() - destroy an instance and free its handle
 * @k: handle from kmsgr_open(), or NULL (then nothing happens)
 */
void kmsgr_close(struct kmsgr *k);

/**
 * kmsgr_fd() - file descriptor of an instance, for poll(2) and the like
 * @k: handle from kmsgr_open()
 *
 * Return: the descriptor; it stays owned by @k (kmsgr_close() closes it).
 */
int kmsgr_fd(const struct kmsgr *k);

/**
 * kmsgr_info() - ask the module for its ABI version, features and limits
 * @k:    handle from kmsgr_open()
 * @info: filled with the module's answer (KMSGR_IOC_INFO)
 *
 * Return: 0, or a negative errno from the ioctl.
 */
int kmsgr_info(struct kmsgr *k, struct kmsgr_info *info);

/**
 * kmsgr_feature_name() - short name of a KMSGR_FEAT_* bit
 * @bit: bit number (0 for KMSGR_FEAT_INFO, ...)
 *
 * Return: a static lower-case name such as "info", or NULL when the bit is
 * unknown to this libkmsgr.
 */
const char *kmsgr_feature_name(unsigned int bit);

/**
 * kmsgr_strerror() - message for an error returned by libkmsgr
 * @err: negative errno value (a positive one is accepted too)
 *
 * Return: a static, thread-safe string; kmsgr-specific meanings are
 * spelled out (-EPROTO: a protocol error, or from kmsgr_open() an ABI
 * mismatch; -ETIME: no completion in time).
 */
const char *kmsgr_strerror(int err);

/**
 * kmsgr_version() - version of libkmsgr
 *
 * Return: a static string such as "0.1.0" (the kmsgr release it belongs to).
 */
const char *kmsgr_version(void);

/* ---- rings and buffer area ---------------------------------------------- */

/**
 * kmsgr_setup() - size and map the rings and the buffer area
 * @k:     handle from kmsgr_open()
 * @setup: in: sq_entries, cq_entries (0: 2 x SQ, at most max_cq_entries),
 *         buf_size, rx_pool_size, other fields zero; out: what the kernel
 *         granted
 *
 * Calls KMSGR_IOC_SETUP and mmaps the SQ ring, the CQ ring and the buffer
 * area (MAP_SHARED, read-write).  The application owns [0, buf_size -
 * rx_pool_size) of the area for its outgoing payloads (the "tx part"); the
 * rest is the kernel's receive pool.  The mappings live until
 * kmsgr_close().  The ring heads are checked against the granted sizes.
 * @setup->flags may ask for KMSGR_SETUP_F_* layouts; the library adds
 * KMSGR_SETUP_F_RING_LINES itself when the module has it (the ring helpers
 * follow either layout).
 *
 * If SETUP succeeds but a mapping fails the instance stays set up and
 * unusable: close it.
 *
 * Return: 0, or a negative errno: -EINVAL bad sizes (0, above the
 * module's max_sq_entries, max_cq_entries or max_buf_size, or a receive
 * pool under KMSGR_POOL_MIN or larger than the area), flags or reserved
 * fields, -EBUSY already set up, -ENOMEM out of memory or, without
 * CAP_IPC_LOCK, the rings and the area together over RLIMIT_MEMLOCK,
 * -EBADMSG when the kernel's ring layout does not match what it granted,
 * or an error of mmap(2).
 */
int kmsgr_setup(struct kmsgr *k, struct kmsgr_setup *setup);

/**
 * kmsgr_buf() - base address of the mapped buffer area
 * @k: handle
 *
 * Return: the address, NULL before kmsgr_setup().
 */
void *kmsgr_buf(const struct kmsgr *k);

/**
 * kmsgr_buf_size() - size of the buffer area
 * @k: handle
 *
 * Return: bytes, 0 before kmsgr_setup().
 */
__u64 kmsgr_buf_size(const struct kmsgr *k);

/**
 * kmsgr_tx_size() - size of the application's part of the buffer area
 * @k: handle
 *
 * Return: bytes at the start of the area that are the application's
 * (buf_size - rx_pool_size), 0 before kmsgr_setup().
 */
__u64 kmsgr_tx_size(const struct kmsgr *k);

/**
 * kmsgr_get_sqe() - next free submission entry, zeroed
 * @k: handle after kmsgr_setup()
 *
 * The entry becomes visible to the kernel at the next kmsgr_submit() (or
 * kmsgr_wait_cqe()).  The kernel consumes an SQE only when the CQ has
 * room for its completion, so a full SQ usually means "reap CQEs first".
 *
 * Return: the entry, or NULL when the SQ is full (or not set up).
 */
struct kmsgr_sqe *kmsgr_get_sqe(struct kmsgr *k);

/**
 * kmsgr_sq_pending() - SQEs prepared but not yet consumed by the kernel
 * @k: handle
 *
 * Return: the count (published or not), 0 before kmsgr_setup().
 */
unsigned int kmsgr_sq_pending(const struct kmsgr *k);

/**
 * kmsgr_sq_space() - free submission entries
 * @k: handle
 *
 * What many kmsgr_get_sqe() calls in a row return entries for: a BDEV_READ
 * linked to its SEND (KMSGR_SQE_F_LINK) wants 2, submitted together.
 *
 * Return: the count, 0 before kmsgr_setup().
 */
unsigned int kmsgr_sq_space(const struct kmsgr *k);

/**
 * kmsgr_submit() - publish prepared SQEs and let the kernel consume them
 * @k:          handle after kmsgr_setup()
 * @wait_nr:    also wait until at least this many CQEs are ready (0: no)
 * @timeout_ns: bound for the wait; 0 waits without a bound
 *
 * Stores the SQ tail with release semantics, then calls KMSGR_IOC_ENTER
 * with to_submit = every unconsumed SQE and, when @wait_nr is non-zero,
 * KMSGR_ENTER_F_GETEVENTS, min_complete = @wait_nr and @timeout_ns.
 *
 * No system call is made when there is nothing to do: with no SQE to
 * submit and @wait_nr 0, or with @wait_nr CQEs (at most the CQ size, as
 * the kernel counts) already ready, it returns 0 at once; in the first
 * case it still checks KMSGR_RING_F_CQ_PAUSED as kmsgr_cq_check_paused()
 * does, and enters the kernel when it is set.  With busy-poll on
 * (kmsgr_set_busy_poll()) and a module with KMSGR_FEAT_BUSY_POLL, the
 * one ENTER of a wait carries the busy-poll time in busy_poll_us: the
 * kernel spins for up to that long (within @timeout_ns) before it
 * sleeps.  With an older module a wait first submits without waiting,
 * then spins on the CQ tail in user space for up to the busy-poll time
 * (and @timeout_ns), and enters the kernel to sleep only if the CQEs are
 * still missing.  The wait also ends with fewer than @wait_nr CQEs ready
 * when the kernel paused delivery for want of CQ room: reap them first.
 *
 * Return: the number of SQEs consumed (>= 0; may be fewer than prepared,
 * or 0, when the instance has no room for more completions in flight:
 * reap CQEs, then submit again), or a negative errno: -ETIME when the
 * wait timed out, -EINTR on a signal (even when SQEs were consumed:
 * kmsgr_sq_pending() tells what is left), -EINVAL before kmsgr_setup().
 */
int kmsgr_submit(struct kmsgr *k, unsigned int wait_nr, __u64 timeout_ns);

/**
 * kmsgr_cq_resume() - tell the kernel that there is room in the CQ again
 * @k: handle after kmsgr_setup()
 *
 * The slow path of the completion helpers below: one KMSGR_IOC_ENTER that
 * submits the SQEs already published by kmsgr_submit() or kmsgr_wait_cqe()
 * and not yet consumed (if any), never one still being prepared, and
 * waits for nothing.  It resumes
 * delivery the kernel paused for want of CQ room (KMSGR_RING_F_CQ_PAUSED),
 * see kmsgr_cq_check_paused().
 *
 * Return: the number of SQEs consumed (>= 0), or a negative errno:
 * -EINVAL before kmsgr_setup().
 */
int kmsgr_cq_resume(struct kmsgr *k);

/*
 * Completion helpers
 *
 * Reaping completions needs no system call, so the helpers that do it are
 * inline functions on struct kmsgr_cq, the public head of a struct kmsgr.
 * An application built against this header uses them inline; libkmsgr
 * compiles the ones that older releases exported (kmsgr_peek_cqe(),
 * kmsgr_cqe_seen(), kmsgr_peek_batch_cqe(), kmsgr_cq_advance()) once more
 * as ordinary functions, so programs built before keep working.
 *
 * The KMSGR_RING_F_CQ_PAUSED rule of <linux/kmsgr.h> (after making room:
 * a full barrier, read the flag, ENTER when it is set) is kept by
 * kmsgr_cq_check_paused().  kmsgr_peek_cqe() and kmsgr_peek_batch_cqe()
 * call it whenever they find the CQ empty, kmsgr_submit() does the same
 * check when it has nothing to submit and no CQE to wait for (and before
 * a busy-poll), kmsgr_wait_cqe() through both; any ENTER, and poll(2) on
 * kmsgr_fd(), resumes delivery by itself.  Only a loop that reaps with
 * kmsgr_for_each_cqe() or kmsgr_cq_ready() and calls none of those must
 * call kmsgr_cq_check_paused() itself after kmsgr_cq_advance().
 */

/**
 * struct kmsgr_cq - the completion ring, as the inline helpers see it
 * @khead:   the CQ head counter; the application's, only it writes it
 * @ktail:   the CQ tail counter; the kernel's, read with acquire semantics
 * @kflags:  the CQ ring's flags word (KMSGR_RING_F_CQ_PAUSED)
 * @mask:    @entries - 1
 * @entries: CQ size; 0 before kmsgr_setup()
 * @cqes:    entry 0 of the CQ
 *
 * Every struct kmsgr begins with one; kmsgr_cq() returns it.  This is part
 * of libkmsgr's ABI: fields are only ever added at the end.  The counters
 * are wherever the module put them (struct kmsgr_ring, head_off and
 * tail_off); before kmsgr_setup() they point at a zero word in the handle,
 * so the helpers see an empty ring.  Everything here stays valid until
 * kmsgr_close().
 */
struct kmsgr_cq {
	__u32 *khead;
	__u32 *ktail;
	__u32 *kflags;
	__u32 mask;
	__u32 entries;
	struct kmsgr_cqe *cqes;
};

/**
 * kmsgr_cq() - the completion ring of an instance
 * @k: handle from kmsgr_open()
 *
 * Return: the struct kmsgr_cq that starts @k, valid until kmsgr_close().
 */
static LIBKMSGR_INLINE struct kmsgr_cq *kmsgr_cq(struct kmsgr *k)
{
	return (struct kmsgr_cq *)(void *)k;
}

/**
 * kmsgr_cq_posted() - number of completions posted from a CQ position on
 * @k:   handle
 * @pos: a CQ counter value, from the head (*kmsgr_cq(@k)->khead) on
 *
 * One acquire load of the CQ tail: the entries it counts may be read at
 * once.
 *
 * Return: the tail minus @pos, or 0 when @pos is past the tail (a head
 * advanced or stored too far: more than the CQ size apart).
 */
static LIBKMSGR_INLINE unsigned int kmsgr_cq_posted(struct kmsgr *k, __u32 pos)
{
	const struct kmsgr_cq *cq = kmsgr_cq(k);
	__u32 n = __atomic_load_n(cq->ktail, __ATOMIC_ACQUIRE) - pos;

	return n > cq->entries ? 0 : n;
}

/**
 * kmsgr_cq_ready() - number of completions ready to be reaped
 * @k: handle
 *
 * One acquire load of the CQ tail: the entries it counts may be read at
 * once.  No system call, and no KMSGR_RING_F_CQ_PAUSED check.
 *
 * Return: the count (0 before kmsgr_setup()).
 */
static LIBKMSGR_INLINE unsigned int kmsgr_cq_ready(struct kmsgr *k)
{
	return kmsgr_cq_posted(k, *kmsgr_cq(k)->khead);
}

/**
 * kmsgr_cq_check_paused() - resume delivery if the kernel paused it
 * @k: handle
 *
 * Call after giving CQ slots back (kmsgr_cq_advance()) when nothing else
 * will enter the kernel: issues a full barrier (our head stores before the
 * flag load; the kernel sets the flag before it reads the head again),
 * reads KMSGR_RING_F_CQ_PAUSED and, only when it is set, calls
 * kmsgr_cq_resume().
 */
static LIBKMSGR_INLINE void kmsgr_cq_check_paused(struct kmsgr *k)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(kmsgr_cq(k)->kflags, __ATOMIC_ACQUIRE) &
	    KMSGR_RING_F_CQ_PAUSED)
		(void)kmsgr_cq_resume(k);
}

/**
 * kmsgr_cq_entry() - the completion at a position of the CQ, if posted
 * @k:   handle
 * @pos: a CQ counter value, from the head (*kmsgr_cq(@k)->khead) on
 *
 * One acquire load of the CQ tail.
 *
 * Return: the entry at @pos, or NULL when @pos is the tail (not posted)
 * or not behind it by at most the CQ size (a head stored past the tail).
 */
static LIBKMSGR_INLINE struct kmsgr_cqe *kmsgr_cq_entry(struct kmsgr *k, __u32 pos)
{
	const struct kmsgr_cq *cq = kmsgr_cq(k);

	return kmsgr_cq_posted(k, pos) ? &cq->cqes[pos & cq->mask] : NULL;
}

/**
 * struct kmsgr_cq_iter - state of a kmsgr_for_each_cqe() loop
 * @handle: the handle, evaluated once
 * @pos:    the caller's position variable
 */
struct kmsgr_cq_iter {
	struct kmsgr *handle;
	__u32 *pos;
};

/**
 * kmsgr_cq_iter_start() - begin a kmsgr_for_each_cqe() loop
 * @k:   handle
 * @pos: the position variable; set to the CQ head
 *
 * Return: the loop's state.
 */
static LIBKMSGR_INLINE struct kmsgr_cq_iter
kmsgr_cq_iter_start(struct kmsgr *k, __u32 *pos)
{
	struct kmsgr_cq_iter it;

	it.handle = k;
	it.pos = pos;
	*pos = *kmsgr_cq(k)->khead;
	return it;
}

/**
 * kmsgr_for_each_cqe() - iterate over the completions ready in the CQ
 * @k:    handle (evaluated once)
 * @head: a __u32 (unsigned int) variable: in the body, the CQ position of
 *        @cqe; after the loop, the tail it stopped at
 * @cqe:  a struct kmsgr_cqe pointer, the entry visited
 *
 * Visits the entries from the CQ head to the tail, oldest first, without
 * consuming them (no system call); follow it with kmsgr_cq_advance() by
 * the number visited.  Entries posted while the loop runs are visited
 * too.  It does not look at KMSGR_RING_F_CQ_PAUSED (see "Completion
 * helpers" above).  It declares its state in the for statement: C99 or
 * later, or C++.
 */
#define kmsgr_for_each_cqe(k, head, cqe)				\
	for (struct kmsgr_cq_iter kmsgr_cq_it_ =			\
		kmsgr_cq_iter_start((k), &(head));			\
	     ((cqe) = kmsgr_cq_entry(kmsgr_cq_it_.handle,		\
				     *kmsgr_cq_it_.pos)) != NULL;	\
	     (*kmsgr_cq_it_.pos)++)

/*
 * The helpers that releases 0.2 and 0.3 exported are inline here, and
 * ordinary (exported) functions in libkmsgr itself, which defines
 * LIBKMSGR_BUILD.
 */

/**
 * kmsgr_peek_batch_cqe() - the unconsumed completions, up to @max at once
 * @k:    handle
 * @cqes: out: pointers to the entries, oldest first
 * @max:  room in @cqes
 *
 * One acquire load of the CQ tail for the whole batch, no system call
 * while there is something to reap.  The entries stay valid until
 * kmsgr_cq_advance() consumes them.  When the CQ is empty it calls
 * kmsgr_cq_check_paused(), which resumes paused delivery.
 *
 * Return: the number of entries in @cqes, 0 when the CQ is empty (or
 * @max is 0).
 */
#ifndef LIBKMSGR_BUILD
static LIBKMSGR_INLINE
#endif
unsigned int kmsgr_peek_batch_cqe(struct kmsgr *k, struct kmsgr_cqe **cqes,
				  unsigned int max)
{
	const struct kmsgr_cq *cq = kmsgr_cq(k);
	__u32 head = *cq->khead;
	unsigned int n, i;

	if (!max)
		return 0;
	n = kmsgr_cq_ready(k);
	if (n > max)
		n = max;
	for (i = 0; i < n; i++)
		cqes[i] = &cq->cqes[(head + i) & cq->mask];
	if (!n)
		kmsgr_cq_check_paused(k);
	return n;
}

/**
 * kmsgr_cq_advance() - consume the @n oldest completions at once
 * @k: handle
 * @n: at most what kmsgr_peek_batch_cqe() returned, kmsgr_for_each_cqe()
 *     visited or kmsgr_cq_ready() counted
 *
 * One release store of the CQ head, giving the slots back to the kernel
 * (kmsgr_cqe_seen() is @n = 1); never past the ready ones.  Receive-pool
 * slices of RECV entries stay the application's until it submits a
 * KMSGR_OP_RELEASE for them.
 */
#ifndef LIBKMSGR_BUILD
static LIBKMSGR_INLINE
#endif
void kmsgr_cq_advance(struct kmsgr *k, unsigned int n)
{
	const struct kmsgr_cq *cq = kmsgr_cq(k);
	unsigned int ready = kmsgr_cq_ready(k);

	/* never past the tail: the entries there are not written yet */
	__atomic_store_n(cq->khead, *cq->khead + (n < ready ? n : ready),
			 __ATOMIC_RELEASE);
}

/**
 * kmsgr_peek_cqe() - oldest unconsumed completion
 * @k: handle
 *
 * Loads the CQ tail with acquire semantics.  The entry stays valid until
 * kmsgr_cqe_seen(); copy it if it must outlive that.  When the CQ is empty
 * it calls kmsgr_cq_check_paused(): if the kernel marked delivery paused
 * (KMSGR_RING_F_CQ_PAUSED), that submits (KMSGR_IOC_ENTER), which resumes
 * delivery at once.
 *
 * Return: the entry, or NULL when the CQ is empty (or not set up).
 */
#ifndef LIBKMSGR_BUILD
static LIBKMSGR_INLINE
#endif
struct kmsgr_cqe *kmsgr_peek_cqe(struct kmsgr *k)
{
	const struct kmsgr_cq *cq = kmsgr_cq(k);

	if (kmsgr_cq_ready(k))
		return &cq->cqes[*cq->khead & cq->mask];
	kmsgr_cq_check_paused(k);
	return NULL;
}

/**
 * kmsgr_cqe_seen() - consume the entry returned by kmsgr_peek_cqe()
 * @k: handle
 *
 * Advances the CQ head with release semantics, giving the slot back to
 * the kernel.  Receive-pool slices of a RECV entry stay the application's
 * until it submits a KMSGR_OP_RELEASE for them.
 */
#ifndef LIBKMSGR_BUILD
static LIBKMSGR_INLINE
#endif
void kmsgr_cqe_seen(struct kmsgr *k)
{
	kmsgr_cq_advance(k, 1);
}

/**
 * kmsgr_set_busy_poll() - spin for completions before sleeping
 * @k:    handle from kmsgr_open()
 * @usec: how long to spin, microseconds; 0 turns it off (the default)
 *
 * With busy-poll on, a kmsgr_submit() with @wait_nr > 0, and so every
 * kmsgr_wait_cqe() that finds nothing ready, spins for up to @usec before
 * it sleeps for what is still missing.  A module with
 * KMSGR_FEAT_BUSY_POLL spins in the kernel (kmsgr_enter.busy_poll_us):
 * one ENTER submits and waits, and while it spins it receives for the
 * sessions whose transports have data itself, at once.  With an older
 * module the library submits without waiting, then watches the CQ tail
 * from user space (with a CPU relax hint between looks), and only then
 * enters the kernel to sleep.  A reply that comes within @usec is then
 * reaped without a sleep and a wake-up (two context switches, and the
 * scheduler's latency).  The price is a CPU kept busy
 * for up to @usec per wait: worth it for request-reply traffic with short
 * round trips on a machine with CPUs to spare, not for a thread that
 * mostly waits long.  A wait timeout shorter than @usec bounds the spin.
 *
 * Return: 0, or -EINVAL when @usec is above KMSGR_BUSY_POLL_MAX_US.
 */
int kmsgr_set_busy_poll(struct kmsgr *k, unsigned int usec);

/**
 * kmsgr_wait_cqe() - wait for a completion
 * @k:          handle after kmsgr_setup()
 * @cqe:        out: the oldest completion (as kmsgr_peek_cqe())
 * @timeout_ns: overall bound; 0 waits without a bound
 *
 * Submits pending SQEs too, so that a RELEASE or SEND prepared before the
 * wait reaches the kernel.  When a completion is ready it is returned,
 * whatever that submission said; SQEs the kernel could not take yet stay
 * pending for the next call.  A completion already in the CQ costs no
 * system call; to wait, it uses kmsgr_submit() with @wait_nr 1, so
 * busy-poll (kmsgr_set_busy_poll()) applies.
 *
 * Return: 0 with *@cqe set, -ETIME when @timeout_ns passed, -EINTR on a
 * signal, or another negative errno from KMSGR_IOC_ENTER (only when no
 * completion was ready).
 */
int kmsgr_wait_cqe(struct kmsgr *k, struct kmsgr_cqe **cqe, __u64 timeout_ns);

/**
 * kmsgr_prep_send() - fill an SQE to send a message on @session
 * @sqe:       from kmsgr_get_sqe()
 * @session:   session id (kmsgr_connect() or an ACCEPTED event)
 * @type:      message type (CEPH_MSG_*)
 * @tid:       transaction id
 * @front:     front segment, a slice of the buffer area (len 0: absent)
 * @middle:    middle segment (len 0: absent)
 * @data:      data segment (len 0: absent)
 * @user_data: copied into the KMSGR_CQE_SEND completion
 *
 * The header version, compat version and priority are left 0; set
 * @sqe->version / ->compat_version / ->priority afterwards when the peer
 * cares (Ceph decoders check the version of most message types).  The
 * slices must stay untouched until the SEND completes.  Slices may lie in
 * the tx part or be receive-pool slices still held by the application
 * (echo without a copy; release them after the SEND completes).
 */
void kmsgr_prep_send(struct kmsgr_sqe *sqe, __u32 session, __u16 type,
		     __u64 tid, struct kmsgr_slice front,
		     struct kmsgr_slice middle, struct kmsgr_slice data,
		     __u64 user_data);

/**
 * kmsgr_prep_release() - fill an SQE that gives back a RECV's pool slices
 * @sqe:  from kmsgr_get_sqe()
 * @recv: the KMSGR_CQE_RECV entry (or a copy of it)
 *
 * Carries the RECV's release token (KMSGR_SQE_F_TOKEN) when the module
 * gave one, so that a stale or repeated RELEASE fails instead of freeing
 * pool space that a later message reuses.
 * Completes silently; a bad or double release yields a KMSGR_CQE_OP entry
 * with res -EINVAL whose user_data is @recv->user_data.
 */
void kmsgr_prep_release(struct kmsgr_sqe *sqe, const struct kmsgr_cqe *recv);

/**
 * kmsgr_prep_nop() - fill an SQE that completes at once (KMSGR_CQE_OP)
 * @sqe:       from kmsgr_get_sqe()
 * @user_data: copied into the completion
 */
void kmsgr_prep_nop(struct kmsgr_sqe *sqe, __u64 user_data);

/* ---- sessions ----------------------------------------------------------- */

/**
 * kmsgr_addr_parse() - parse a peer or bind address
 * @str:  "IPv4:PORT" or "[IPv6]:PORT" (IPv6 may carry "%SCOPE", a number
 *        or an interface name); Ceph's "v2:" prefix and "/NONCE" suffix
 *        are accepted too
 * @addr: out: family, port (network order), address, scope, nonce
 *
 * Return: 0 or -EINVAL (@addr is then zeroed or partly filled).
 */
int kmsgr_addr_parse(const char *str, struct kmsgr_addr *addr);

/* "[" IPv6 "%" scope "]:" port "/" nonce, and the NUL: 70 bytes at most */
#define KMSGR_ADDR_STRLEN	80

/**
 * kmsgr_addr_format() - the reverse of kmsgr_addr_parse()
 * @addr: address
 * @buf:  output, at least KMSGR_ADDR_STRLEN (80) bytes for every address
 *        to fit (a longer one is cut, NUL-terminated)
 * @len:  size of @buf
 *
 * Writes "IPv4:PORT" or "[IPv6%SCOPE]:PORT", plus "/NONCE" when the nonce
 * is not zero; "(family N)" for another family.
 *
 * Return: @buf, or NULL when @buf is NULL or @len is 0.
 */
const char *kmsgr_addr_format(const struct kmsgr_addr *addr, char *buf,
			      size_t len);

/**
 * kmsgr_key_decode() - decode a base64 Ceph secret into the raw AES key
 * @b64: the "key = ..." value of a keyring, e.g. "AQD...=="
 * @key: out: the 16-byte key
 *
 * Strict: canonical base64 of exactly 28 bytes, an encoded CryptoKey
 * (le16 type 1 = AES, 8 bytes creation time, le16 length 16, the key).
 *
 * Return: 0 or -EINVAL.
 */
int kmsgr_key_decode(const char *b64, __u8 key[16]);

/**
 * kmsgr_keyring_load() - read an entity's key from a Ceph keyring file
 * @path: keyring (ini style, "[client.admin]" then "key = <base64>";
 *        "#" and ";" start comments, other settings are ignored)
 * @name: entity, e.g. "client.admin"
 * @key:  out: the 16-byte AES key (see kmsgr_key_decode())
 *
 * Return: 0, -ENOENT (no such file, or no section for @name), -ENOKEY
 * (the section has no key), -EINVAL (malformed file or key), or another
 * negative errno of fopen(3) / reading.
 */
int kmsgr_keyring_load(const char *path, const char *name, __u8 key[16]);

/**
 * kmsgr_listen() - listen for msgr2 sessions (KMSGR_IOC_LISTEN)
 * @k: handle after kmsgr_setup()
 * @l: in: addr, transport, flags, user_data, the rest zero; out: id (for
 *     kmsgr_close_id()) and bound (the address actually bound)
 *
 * Each accepted session is announced by a KMSGR_EV_ACCEPTED event.
 *
 * Return: 0 or a negative errno (-EADDRINUSE, -EINVAL, -EOPNOTSUPP
 * for a transport the module lacks, ...).
 */
int kmsgr_listen(struct kmsgr *k, struct kmsgr_listen *l);

/**
 * kmsgr_connect() - open a session to a peer (KMSGR_IOC_CONNECT)
 * @k: handle after kmsgr_setup()
 * @c: in: addr, transport, flags, peer_type, my_type, auth, key (or
 *     key_desc, or ticket_from: a mon session's cephx ticket for an OSD),
 *     name, user_data; out: id
 *
 * The connection is made asynchronously: KMSGR_EV_UP when the session is
 * ready, KMSGR_EV_CLOSED (with a reason) when it fails.
 *
 * Return: 0 or a negative errno (-EINVAL, -EOPNOTSUPP for a transport
 * the module lacks, -ENOKEY: no logon key, or the mon session of
 * ticket_from holds no ticket for peer_type, ...).
 */
int kmsgr_connect(struct kmsgr *k, struct kmsgr_connect *c);

/**
 * kmsgr_close_id() - close a session or a listener (KMSGR_IOC_CLOSE)
 * @k:  handle
 * @id: session or listener id
 *
 * Return: 0 or a negative errno (-ENOENT for an unknown id).
 */
int kmsgr_close_id(struct kmsgr *k, __u32 id);

/**
 * kmsgr_bdev_attach() - attach a block device (KMSGR_IOC_ATTACH_BDEV)
 * @k: handle after kmsgr_setup()
 * @b: in: fd (an open block device) and flags (KMSGR_BDEV_F_*), the rest
 *     zero; out: id (the handle the BDEV SQEs name), attrs, capacity,
 *     lbs, pbs, max_io
 *
 * Return: 0 or a negative errno (-ENOTBLK, -EBADF, -EBUSY, -EMFILE, ...).
 */
int kmsgr_bdev_attach(struct kmsgr *k, struct kmsgr_bdev *b);

/**
 * kmsgr_bdev_detach() - detach a block device (KMSGR_IOC_DETACH_BDEV)
 * @k:  handle
 * @id: the handle kmsgr_bdev_attach() returned
 *
 * Waits until the ops already submitted on it have completed.
 *
 * Return: 0 or a negative errno (-ENODEV for an unknown handle).
 */
int kmsgr_bdev_detach(struct kmsgr *k, __u32 id);

/**
 * kmsgr_prep_bdev() - prepare a BDEV_WRITE, BDEV_READ or BDEV_FLUSH
 * @sqe:       the SQE (cleared first)
 * @opcode:    KMSGR_OP_BDEV_*
 * @id:        the device's handle
 * @dev_off:   byte offset on the device (0 for FLUSH)
 * @off:       buffer-area offset of the memory (one slice; add more in
 *             sqe->seg[1] and [2] for a vectored op)
 * @len:       its length (0 for FLUSH)
 * @user_data: copied into the CQE
 */
void kmsgr_prep_bdev(struct kmsgr_sqe *sqe, __u8 opcode, __u32 id,
		     __u64 dev_off, __u32 off, __u32 len, __u64 user_data);

/**
 * kmsgr_prep_bdev_write_recv() - write a received message's data segment
 * to a block device and give its slices back when done
 * @sqe:       the SQE (cleared first)
 * @id:        the device's handle
 * @dev_off:   byte offset on the device
 * @recv:      the RECV CQE (a module with KMSGR_FEAT_RELEASE_TOKEN)
 * @user_data: copied into the CQE
 *
 * The data segment (seg[2]) is written and given back when the write is
 * done (KMSGR_SQE_F_RELEASE).  The message's front and middle, if any,
 * are the caller's to release: kmsgr_prep_release() with seg[2] cleared.
 */
void kmsgr_prep_bdev_write_recv(struct kmsgr_sqe *sqe, __u32 id,
				__u64 dev_off, const struct kmsgr_cqe *recv,
				__u64 user_data);

/**
 * kmsgr_reason_str() - text of a KMSGR_REASON_* value
 * @reason: the reason field of a DOWN or CLOSED event
 *
 * Return: a static lower-case phrase, "unknown reason" if out of range.
 */
const char *kmsgr_reason_str(unsigned int reason);

/**
 * kmsgr_event_str() - text of a KMSGR_EV_* value
 * @event: the event field of a KMSGR_CQE_EVENT entry
 *
 * Return: a static lower-case word ("accepted", "up", ...), "unknown".
 */
const char *kmsgr_event_str(unsigned int event);

/**
 * kmsgr_down_is_final() - does a DOWN event end the wait for a session?
 * @cqe: a KMSGR_EV_DOWN event of the session
 * @lossless: the session was opened with KMSGR_SESS_F_LOSSLESS
 * @was_up: the session reported KMSGR_EV_UP before this event
 *
 * A lossy session is over after a DOWN.  The kernel dials a lossless one
 * again and resends what was in flight, so its DOWN is worth waiting out
 * -- except before it was ever up, when the peer refused the connection
 * (reason KMSGR_REASON_CONNECT, res -ECONNREFUSED): nothing listens at the
 * address, and the redials would only run into the same refusal until a
 * timeout.  The rule kmsgrctl and the fio engine apply.
 *
 * Return: 1 when the application should give the session up (close it,
 * report cqe->res), 0 when the kernel is reconnecting it.
 */
int kmsgr_down_is_final(const struct kmsgr_cqe *cqe, int lossless, int was_up);

/*
 * Netlink: what the module is doing, for operators (the generic netlink
 * family "kmsgr", <linux/kmsgr_netlink.h>).  These calls live in their own
 * object of libkmsgr.a and need libnl-genl-3 (pkg-config kmsgr gives it).
 * A caller sees the instances its effective uid opened, all of them with
 * CAP_NET_ADMIN; monitoring events needs CAP_NET_ADMIN.
 */

/* A netlink connection to the module; opaque. */
struct kmsgr_nl;

/* A session as netlink reports it (KMSGR_A_SESSION_*). */
struct kmsgr_session_info {
	__u64 instance;
	__u32 id;
	__u32 pid;			/* of the process that opened it */
	char comm[16];
	__u64 user_data;
	__u32 transport;		/* KMSGR_XPRT_* */
	__u32 listener;			/* server: the listener's id */
	__u8 server;			/* 1: accepted by a listener */
	__u8 lossless;
	__u8 has_local, has_peer;	/* whether @local, @peer are known */
	__u8 state;			/* enum kmsgr_session_state */
	__u8 mode;			/* enum kmsgr_session_mode */
	__u8 peer_type;			/* CEPH_ENTITY_TYPE_* */
	__u8 event;			/* monitor: KMSGR_EV_*, else 0 */
	struct kmsgr_addr local, peer;
	__s64 peer_gid;
	__u32 auth;			/* KMSGR_AUTH_* */
	__u32 in_flight;		/* SENDs not completed */
	__u64 msgs_out, bytes_out;	/* SENDs completed, payload bytes */
	__u64 msgs_in, bytes_in;	/* messages delivered */
	__u32 reconnects;
	__s32 last_error;		/* -errno of the last connection lost */
	__u32 last_reason;		/* KMSGR_REASON_* of it */
	__u32 reason;			/* monitor: the event's reason */
	__s32 res;			/* monitor: the event's -errno */
	__u32 reserved[7];
};

/* A listener (KMSGR_A_LISTENER_*). */
struct kmsgr_listener_info {
	__u64 instance;
	__u32 id;
	__u32 pid;
	char comm[16];
	__u64 user_data;
	__u32 transport;
	__u32 auth;
	__u32 flags;			/* KMSGR_SESS_F_* of its sessions */
	__u32 half_open;		/* handshakes in progress */
	__u8 my_type;
	__u8 has_local;
	__u8 event;			/* monitor: KMSGR_EV_REFUSED */
	__u8 reserved0;
	__u32 reason;			/* monitor */
	__s32 res;			/* monitor */
	struct kmsgr_addr local;
	__u64 accepted, refused;
	__u64 reserved[4];
};

/* An instance (KMSGR_A_INSTANCE_*). */
struct kmsgr_instance_info {
	__u64 id;
	__u32 pid;
	__u32 uid;
	char comm[16];
	__u32 sq_entries, cq_entries;	/* 0 before SETUP */
	__u64 buf_size, pool_size, pool_used;
	__u64 locked;			/* bytes charged to RLIMIT_MEMLOCK */
	__u32 sessions;			/* sessions and listeners */
	__u32 cq_paused;		/* 1: delivery waits for CQ room */
	__u64 sqes, sqe_errors, cqes;
	__u64 cq_full, cq_overflow, cq_lost, pool_full;
	__u64 pinned;			/* bytes DMA-mapped for its RDMA
					 * connections now
					 */
	__u64 registered;		/* bytes they registered for peers */
	/*
	 * Bytes of the BDEV READs and WRITEs it submitted, on every device
	 * it attached (LIBKMSGR_0.7: 0 from an older library; the struct
	 * keeps its size)
	 */
	__u64 bdev_read_bytes, bdev_write_bytes;
};

/* A device a transport uses (KMSGR_A_DEV_*). */
struct kmsgr_dev_info {
	__u32 transport;		/* KMSGR_XPRT_* */
	__u32 ports;			/* ports 1 .. @ports */
	char name[64];
	__u64 ports_down;		/* bit N: port N is down */
	__u32 conns;			/* connections on it */
	__u32 parked;			/* closed while their port was down */
	__u32 dying;			/* 1: being removed */
	__u32 reserved0;
	__u64 reserved[4];
};

/* A block device an instance attached (KMSGR_A_BDEV_*; LIBKMSGR_0.7). */
struct kmsgr_bdev_info {
	__u64 instance;
	__u32 id;			/* the handle ATTACH_BDEV gave */
	__u32 pid;			/* of the process that opened it */
	char comm[16];
	char name[32];			/* the kernel's name: "nvme0n1" */
	__u32 major, minor;
	__u32 lbs, pbs;			/* logical, physical block size */
	__u64 capacity;			/* bytes */
	__u32 flags;			/* KMSGR_BDEV_F_* it was attached with */
	__u32 attrs;			/* KMSGR_BDEV_A_* */
	__u32 in_flight;		/* ops not completed */
	__u32 gone;			/* 1: the device went away (ENXIO) */
	__u64 ops;			/* BDEV SQEs submitted to it */
	__u64 read_ops, write_ops, flush_ops;
	__u64 read_bytes, write_bytes;
	__u64 errors;			/* ops completed with an error */
	__u64 reserved[6];
};

/* Module-wide counters (KMSGR_A_STATS_*). */
struct kmsgr_stats_info {
	__u32 instances, sessions;
	__u64 connects, accepts, refused, reconnects, faults;
	__u64 msgs_out, bytes_out, msgs_in, bytes_in;
	__u64 pinned, registered;	/* bytes, RDMA */
	__u64 reserved[4];
};

/**
 * kmsgr_nl_open() - connect to the module's netlink family
 * @out: on success, the new handle
 *
 * Return: 0, -ENOENT when the family is not there (module not loaded),
 * -ENOMEM, or another negative errno.
 */
int kmsgr_nl_open(struct kmsgr_nl **out);

/** kmsgr_nl_close() - close a handle from kmsgr_nl_open() (NULL: no-op) */
void kmsgr_nl_close(struct kmsgr_nl *nl);

/**
 * kmsgr_nl_errmsg() - the kernel's message for the last failed request
 * @nl: the handle
 *
 * Return: a string owned by @nl, "" when the kernel gave none.
 */
const char *kmsgr_nl_errmsg(const struct kmsgr_nl *nl);

/*
 * Dumps: @fn is called once per object (its argument is valid during the
 * call only); a non-zero return stops the dump and is returned.  Return:
 * the number of objects, or a negative errno.  @instance 0: all visible
 * instances.  The _get() calls return 0 or a negative errno (-ENOENT: no
 * such object, or one the caller may not see).
 */
int kmsgr_nl_sessions(struct kmsgr_nl *nl, __u64 instance,
		      int (*fn)(const struct kmsgr_session_info *s, void *arg),
		      void *arg);
int kmsgr_nl_session_get(struct kmsgr_nl *nl, __u64 instance, __u32 id,
			 struct kmsgr_session_info *out);
int kmsgr_nl_listeners(struct kmsgr_nl *nl, __u64 instance,
		       int (*fn)(const struct kmsgr_listener_info *l,
				 void *arg),
		       void *arg);
int kmsgr_nl_listener_get(struct kmsgr_nl *nl, __u64 instance, __u32 id,
			  struct kmsgr_listener_info *out);
int kmsgr_nl_instances(struct kmsgr_nl *nl,
		       int (*fn)(const struct kmsgr_instance_info *i,
				 void *arg),
		       void *arg);
int kmsgr_nl_instance_get(struct kmsgr_nl *nl, __u64 id,
			  struct kmsgr_instance_info *out);
int kmsgr_nl_stats(struct kmsgr_nl *nl, struct kmsgr_stats_info *out);
int kmsgr_nl_devs(struct kmsgr_nl *nl,
		  int (*fn)(const struct kmsgr_dev_info *d, void *arg),
		  void *arg);
/* Block devices the instances attached; @fn may be NULL: only counts. */
int kmsgr_nl_bdevs(struct kmsgr_nl *nl, __u64 instance,
		   int (*fn)(const struct kmsgr_bdev_info *b, void *arg),
		   void *arg);
int kmsgr_nl_bdev_get(struct kmsgr_nl *nl, __u64 instance, __u32 id,
		      struct kmsgr_bdev_info *out);

/* Callbacks of kmsgr_nl_monitor_read(); either may be NULL. */
struct kmsgr_nl_monitor_ops {
	int (*session)(const struct kmsgr_session_info *s, void *arg);
	int (*listener)(const struct kmsgr_listener_info *l, void *arg);
};

/**
 * kmsgr_nl_monitor_start() - join the "monitor" group
 * @nl: the handle
 *
 * Return: a descriptor to poll(2) for events (owned by @nl), or -EPERM
 * without CAP_NET_ADMIN, or -EOPNOTSUPP where the module offers no monitor
 * group (kernels before 6.1.64, and 6.2 to 6.6.2, cannot keep it to
 * CAP_NET_ADMIN), or another negative errno.
 */
int kmsgr_nl_monitor_start(struct kmsgr_nl *nl);

/**
 * kmsgr_nl_monitor_read() - read the events that arrived
 * @nl:  the handle, after kmsgr_nl_monitor_start()
 * @ops: what to call for each event (@s->event, @l->event say which)
 * @arg: passed to them
 *
 * Waits for one batch of events (unless the descriptor was made
 * non-blocking) and calls @ops for each.  Return: the number of events,
 * what a callback returned when it stopped, -ENOBUFS when events came
 * faster than they were read and some were lost (reading goes on), or
 * another negative errno.
 */
int kmsgr_nl_monitor_read(struct kmsgr_nl *nl,
			  const struct kmsgr_nl_monitor_ops *ops, void *arg);

#ifdef __cplusplus
}
#endif

#endif /* LIBKMSGR_H */
