// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libkmsgr - thin user-space library over /dev/kmsgr (see libkmsgr.h).
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <arpa/inet.h>
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* the completion helpers of libkmsgr.h become exported functions here */
#define LIBKMSGR_BUILD
#include "libkmsgr.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Shared ring fields: the other side writes them concurrently. */
#define load_acquire(p)		__atomic_load_n((p), __ATOMIC_ACQUIRE)
#define store_release(p, v)	__atomic_store_n((p), (v), __ATOMIC_RELEASE)

/* One mmap'd region. */
struct kmsgr_map {
	void *addr;
	size_t len;
};

struct kmsgr {
	/*
	 * First, public (libkmsgr.h): the CQ's counters, flags and entries.
	 * Before kmsgr_setup() its pointers name @cq_none.
	 */
	struct kmsgr_cq cq;
	__u32 cq_none;		/* always 0: an empty ring, not paused */
	int fd;			/* the instance: an open file of /dev/kmsgr */
	__u64 features;		/* KMSGR_FEAT_* of the module */
	__u64 busy_poll_ns;	/* kmsgr_set_busy_poll(); 0: off */

	/* after kmsgr_setup() */
	struct kmsgr_map sq_map;
	struct kmsgr_map cq_map;
	struct kmsgr_map buf_map;
	struct kmsgr_ring *sq;
	__u32 *sq_khead, *sq_ktail;	/* the SQ's counters */
	struct kmsgr_sqe *sqes;
	struct kmsgr_ring *cq_ring;
	__u32 sq_tail;		/* prepared, not necessarily published */
	/*
	 * the SQ's size, as checked at setup: the ring header is the
	 * application's memory too, and a stray write there must not move
	 * kmsgr_get_sqe() out of the SQE array
	 */
	__u32 sq_entries, sq_mask;
	__u64 buf_size;
	__u64 tx_size;
};

/* kmsgr_cq() relies on it */
static_assert(offsetof(struct kmsgr, cq) == 0,
	      "struct kmsgr must begin with its struct kmsgr_cq");

/* Names of the KMSGR_FEAT_* bits, indexed by bit number. */
static const char *const kmsgr_feature_names[] = {
	[0] = "info",		/* KMSGR_FEAT_INFO */
	[1] = "rings",		/* KMSGR_FEAT_RINGS */
	[2] = "tcp",		/* KMSGR_FEAT_TCP */
	[3] = "cephx",		/* KMSGR_FEAT_CEPHX */
	[4] = "secure",		/* KMSGR_FEAT_SECURE */
	[5] = "release-token",	/* KMSGR_FEAT_RELEASE_TOKEN */
	[6] = "listen-cephx",	/* KMSGR_FEAT_LISTEN_CEPHX */
	[7] = "skip-success",	/* KMSGR_FEAT_SKIP_SUCCESS */
	[8] = "info-pool",	/* KMSGR_FEAT_INFO_POOL */
	[9] = "ring-lines",	/* KMSGR_FEAT_RING_LINES */
	[10] = "rdma",		/* KMSGR_FEAT_RDMA */
	[11] = "logon-keys",	/* KMSGR_FEAT_LOGON_KEYS */
	[12] = "cephx-tickets",	/* KMSGR_FEAT_CEPHX_TICKETS */
	[13] = "bdev",		/* KMSGR_FEAT_BDEV */
	[14] = "bdev-link",	/* KMSGR_FEAT_BDEV_LINK */
	[15] = "bdev-poll",	/* KMSGR_FEAT_BDEV_POLL */
	[16] = "busy-poll",	/* KMSGR_FEAT_BUSY_POLL */
	[17] = "peer-key",	/* KMSGR_FEAT_PEER_KEY */
};

/* ioctl() returning 0 or a negative errno. */
static int kmsgr_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) < 0 ? -errno : 0;
}

int kmsgr_open(const char *path, struct kmsgr **kp)
{
	struct kmsgr_info info;
	struct kmsgr *k;
	int ret;

	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->cq.khead = &k->cq_none;
	k->cq.ktail = &k->cq_none;
	k->cq.kflags = &k->cq_none;

	k->fd = open(path ? path : KMSGR_DEV_PATH, O_RDWR | O_CLOEXEC);
	if (k->fd < 0) {
		ret = -errno;
		goto out_free;
	}

	/* Every kmsgr module implements INFO: ENOTTY means another device. */
	ret = kmsgr_info(k, &info);
	if (ret == -ENOTTY)
		ret = -ENODEV;
	if (ret)
		goto out_close;
	if (info.abi_version != KMSGR_ABI_VERSION) {
		ret = -EPROTO;
		goto out_close;
	}
	k->features = info.features;

	*kp = k;
	return 0;

out_close:
	close(k->fd);
out_free:
	free(k);
	return ret;
}

static void kmsgr_unmap(struct kmsgr_map *m)
{
	if (m->addr)
		munmap(m->addr, m->len);
	m->addr = NULL;
	m->len = 0;
}

void kmsgr_close(struct kmsgr *k)
{
	if (!k)
		return;
	kmsgr_unmap(&k->buf_map);
	kmsgr_unmap(&k->cq_map);
	kmsgr_unmap(&k->sq_map);
	close(k->fd);
	free(k);
}

int kmsgr_fd(const struct kmsgr *k)
{
	return k->fd;
}

int kmsgr_info(struct kmsgr *k, struct kmsgr_info *info)
{
	memset(info, 0, sizeof(*info));
	return kmsgr_ioctl(k->fd, KMSGR_IOC_INFO, info);
}

const char *kmsgr_feature_name(unsigned int bit)
{
	if (bit >= ARRAY_SIZE(kmsgr_feature_names))
		return NULL;
	return kmsgr_feature_names[bit];
}

const char *kmsgr_strerror(int err)
{
	const char *msg;

	if (err < 0)
		err = -err;

	switch (err) {
	case 0:
		return "Success";
	case EPROTO:
		/* also a session's protocol error (KMSGR_REASON_PROTOCOL) */
		return "Protocol error (kmsgr_open(): module ABI differs from libkmsgr's)";
	case ENOTTY:
		return "Command not supported by the loaded kmsgr module";
	case ETIME:
		return "Timed out waiting for a completion";
	case EBADMSG:
		return "Kernel ring layout is inconsistent";
	default:
		break;
	}

	/* glibc >= 2.32: static strings, no locale, thread-safe. */
	msg = strerrordesc_np(err);
	return msg ? msg : "Unknown error";
}

const char *kmsgr_version(void)
{
	return LIBKMSGR_VERSION;
}

/* ---- rings and buffer area ---------------------------------------------- */

static int kmsgr_map_region(struct kmsgr *k, struct kmsgr_map *m, __u64 off,
			    __u64 len)
{
	void *addr;

	if (!len || len > SIZE_MAX)
		return -EBADMSG;
	addr = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_POPULATE, k->fd, (off_t)off);
	if (addr == MAP_FAILED)
		return -errno;
	m->addr = addr;
	m->len = (size_t)len;
	return 0;
}

/*
 * Check a mapped ring head against what SETUP granted, so that a bad
 * kernel answer cannot make us index outside the mapping.
 */
static int kmsgr_ring_check(const struct kmsgr_map *m, __u32 entries,
			    size_t entry_size)
{
	const struct kmsgr_ring *r = m->addr;
	__u64 end;

	if (m->len < sizeof(*r) || r->entries != entries ||
	    !entries || (entries & (entries - 1)) ||
	    r->mask != entries - 1 || r->entries_off < sizeof(*r) ||
	    r->entries_off % 8 || r->head_off % 4 || r->tail_off % 4 ||
	    r->head_off > m->len - 4 || r->tail_off > m->len - 4 ||
	    (r->head_off && r->head_off == r->tail_off))
		return -EBADMSG;
	end = (__u64)r->entries_off + (__u64)entries * entry_size;
	return end <= m->len ? 0 : -EBADMSG;
}

/*
 * The counters of the ring at @r: where the module says, or (a module
 * without KMSGR_FEAT_RING_LINES leaves the offsets 0) the ABI 1 fields.
 */
static void *kmsgr_ring_map(struct kmsgr_ring *r, __u32 **head, __u32 **tail)
{
	*head = r->head_off ? (__u32 *)((char *)r + r->head_off) : &r->head;
	*tail = r->tail_off ? (__u32 *)((char *)r + r->tail_off) : &r->tail;
	return (char *)r + r->entries_off;
}

int kmsgr_setup(struct kmsgr *k, struct kmsgr_setup *setup)
{
	int ret;

	if (k->sq_map.addr || k->cq_map.addr || k->buf_map.addr)
		return -EBUSY;

	/* counters on lines of their own where the module can */
	if (k->features & KMSGR_FEAT_RING_LINES)
		setup->flags |= KMSGR_SETUP_F_RING_LINES;
	ret = kmsgr_ioctl(k->fd, KMSGR_IOC_SETUP, setup);
	if (ret)
		return ret;
	if (setup->rx_pool_size > setup->buf_size)
		return -EBADMSG;

	ret = kmsgr_map_region(k, &k->sq_map, KMSGR_OFF_SQ_RING,
			       setup->sq_ring_size);
	if (ret)
		return ret;
	ret = kmsgr_map_region(k, &k->cq_map, KMSGR_OFF_CQ_RING,
			       setup->cq_ring_size);
	if (ret)
		goto out_unmap_sq;
	ret = kmsgr_map_region(k, &k->buf_map, KMSGR_OFF_BUF, setup->buf_size);
	if (ret)
		goto out_unmap_cq;

	ret = kmsgr_ring_check(&k->sq_map, setup->sq_entries,
			       sizeof(struct kmsgr_sqe));
	if (!ret)
		ret = kmsgr_ring_check(&k->cq_map, setup->cq_entries,
				       sizeof(struct kmsgr_cqe));
	if (ret)
		goto out_unmap_buf;

	k->sq = k->sq_map.addr;
	k->sqes = kmsgr_ring_map(k->sq, &k->sq_khead, &k->sq_ktail);
	k->cq_ring = k->cq_map.addr;
	k->cq.cqes = kmsgr_ring_map(k->cq_ring, &k->cq.khead, &k->cq.ktail);
	k->cq.kflags = &k->cq_ring->flags;
	k->cq.mask = k->cq_ring->mask;
	k->cq.entries = k->cq_ring->entries;
	k->sq_entries = setup->sq_entries;	/* what the check saw */
	k->sq_mask = setup->sq_entries - 1;
	k->sq_tail = load_acquire(k->sq_ktail);
	k->buf_size = setup->buf_size;
	k->tx_size = setup->buf_size - setup->rx_pool_size;
	return 0;

out_unmap_buf:
	kmsgr_unmap(&k->buf_map);
out_unmap_cq:
	kmsgr_unmap(&k->cq_map);
out_unmap_sq:
	kmsgr_unmap(&k->sq_map);
	return ret;
}

void *kmsgr_buf(const struct kmsgr *k)
{
	return k->buf_map.addr;
}

__u64 kmsgr_buf_size(const struct kmsgr *k)
{
	return k->buf_size;
}

__u64 kmsgr_tx_size(const struct kmsgr *k)
{
	return k->tx_size;
}

struct kmsgr_sqe *kmsgr_get_sqe(struct kmsgr *k)
{
	struct kmsgr_sqe *sqe;
	__u32 head;

	if (!k->sq)
		return NULL;
	head = load_acquire(k->sq_khead);
	if (k->sq_tail - head >= k->sq_entries)
		return NULL;
	sqe = &k->sqes[k->sq_tail & k->sq_mask];
	memset(sqe, 0, sizeof(*sqe));
	k->sq_tail++;
	return sqe;
}

unsigned int kmsgr_sq_pending(const struct kmsgr *k)
{
	if (!k->sq)
		return 0;
	return k->sq_tail - load_acquire(k->sq_khead);
}

unsigned int kmsgr_sq_space(const struct kmsgr *k)
{
	if (!k->sq)
		return 0;
	return k->sq_entries - (k->sq_tail - load_acquire(k->sq_khead));
}

static __u64 kmsgr_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
}

/*
 * KMSGR_IOC_ENTER that consumes up to @to_submit SQEs and waits for
 * nothing: the count consumed, 0 when the CQ has no room for their
 * completions yet (not an error), or a negative errno.
 */
static int kmsgr_enter_nowait(struct kmsgr *k, unsigned int to_submit)
{
	struct kmsgr_enter enter;
	int ret;

	memset(&enter, 0, sizeof(enter));
	enter.to_submit = to_submit;
	ret = kmsgr_ioctl(k->fd, KMSGR_IOC_ENTER, &enter);
	if (ret == -EBUSY)
		return 0;
	return ret ? ret : (int)enter.submitted;
}

int kmsgr_cq_resume(struct kmsgr *k)
{
	if (!k->sq)
		return -EINVAL;
	/*
	 * Only what kmsgr_submit() or kmsgr_wait_cqe() published: the peek
	 * helpers come here, and the caller may be filling an SQE it took
	 * (the kernel consumes no more than the published tail).
	 */
	return kmsgr_enter_nowait(k, kmsgr_sq_pending(k));
}

/*
 * Submit without waiting.  With nothing to submit there is no system call,
 * unless delivery is paused: the caller may have made CQ room since the
 * kernel looked (see kmsgr_cq_check_paused()).
 */
static int kmsgr_submit_nowait(struct kmsgr *k)
{
	unsigned int pending = kmsgr_sq_pending(k);

	if (pending)
		return kmsgr_enter_nowait(k, pending);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (load_acquire(k->cq.kflags) & KMSGR_RING_F_CQ_PAUSED)
		return kmsgr_enter_nowait(k, 0);
	return 0;
}

/* A hint to the CPU that this is a spin-wait loop. */
static inline void kmsgr_cpu_relax(void)
{
#if defined(__x86_64__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

/* Looks at the CQ tail between two looks at the clock. */
#define KMSGR_SPIN_LOOKS	32

/*
 * Busy-poll: watch the CQ tail until @want CQEs are ready (true) or @ns
 * passed (false, *@spun set to the time spent).
 */
static bool kmsgr_spin(struct kmsgr *k, unsigned int want, __u64 ns,
		       __u64 *spun)
{
	__u64 start = kmsgr_now_ns();
	unsigned int i;

	for (;;) {
		for (i = 0; i < KMSGR_SPIN_LOOKS; i++) {
			if (kmsgr_cq_ready(k) >= want)
				return true;
			kmsgr_cpu_relax();
		}
		*spun = kmsgr_now_ns() - start;
		if (*spun >= ns)
			return kmsgr_cq_ready(k) >= want;
	}
}

int kmsgr_set_busy_poll(struct kmsgr *k, unsigned int usec)
{
	if (!k || usec > KMSGR_BUSY_POLL_MAX_US)
		return -EINVAL;
	k->busy_poll_ns = (__u64)usec * 1000;
	return 0;
}

int kmsgr_submit(struct kmsgr *k, unsigned int wait_nr, __u64 timeout_ns)
{
	struct kmsgr_enter enter;
	unsigned int want;
	__u64 spin, spun;
	int ret, done = 0;

	if (!k->sq)
		return -EINVAL;

	/* Make the SQE contents visible before the new tail. */
	store_release(k->sq_ktail, k->sq_tail);
	if (!wait_nr)
		return kmsgr_submit_nowait(k);

	/* ENTER waits for at most a full CQ; nothing to do: no ENTER */
	want = wait_nr < k->cq.entries ? wait_nr : k->cq.entries;
	if (!kmsgr_sq_pending(k) && kmsgr_cq_ready(k) >= want)
		return 0;

	/* a module that spins itself runs the sessions while it spins */
	if (k->busy_poll_ns && !(k->features & KMSGR_FEAT_BUSY_POLL)) {
		ret = kmsgr_submit_nowait(k);
		if (ret < 0)
			return ret;
		done = ret;
		spin = k->busy_poll_ns;
		if (timeout_ns && timeout_ns < spin)
			spin = timeout_ns;
		if (kmsgr_spin(k, want, spin, &spun))
			return done;
		if (timeout_ns) {
			if (spun >= timeout_ns)
				return done ? done : -ETIME;
			timeout_ns -= spun;
		}
	}

	memset(&enter, 0, sizeof(enter));
	enter.to_submit = kmsgr_sq_pending(k);
	enter.min_complete = wait_nr;
	enter.flags = KMSGR_ENTER_F_GETEVENTS;
	enter.timeout_ns = timeout_ns;
	if (k->features & KMSGR_FEAT_BUSY_POLL)
		enter.busy_poll_us = (__u32)(k->busy_poll_ns / 1000);
	ret = kmsgr_ioctl(k->fd, KMSGR_IOC_ENTER, &enter);
	if (ret == -ETIMEDOUT)
		ret = -ETIME;
	/* a signal is always reported (the SQ head shows what was taken) */
	if (ret == -EINTR)
		return ret;
	/* as the kernel does: what was consumed counts more than the wait */
	if (ret && !done)
		return ret;
	return done + (ret ? 0 : (int)enter.submitted);
}

int kmsgr_wait_cqe(struct kmsgr *k, struct kmsgr_cqe **cqe, __u64 timeout_ns)
{
	__u64 deadline = 0, now, left = 0;
	int ret;

	if (!k->sq)
		return -EINVAL;

	/*
	 * The clock only when about to sleep: where clock_gettime() is a
	 * system call (a clocksource without vDSO support, as the HPET of
	 * an emulated guest), reading it costs more than a wait.
	 */
	for (;;) {
		*cqe = kmsgr_peek_cqe(k);
		if (*cqe) {
			/*
			 * Still offer what the caller prepared.  Whatever that
			 * submit says (no room, a signal), a completion is
			 * ready and is what the caller asked for: unconsumed
			 * SQEs stay pending for the next call, and an error
			 * that persists is reported by the next call that
			 * has to wait.
			 */
			if (kmsgr_sq_pending(k))
				(void)kmsgr_submit(k, 0, 0);
			return 0;
		}
		if (timeout_ns) {
			now = kmsgr_now_ns();
			/* saturated: a "for ever" timeout must not wrap */
			if (!deadline)
				deadline = timeout_ns > UINT64_MAX - now ?
					   UINT64_MAX : now + timeout_ns;
			else if (now >= deadline)
				return -ETIME;
			left = deadline - now;
		}
		ret = kmsgr_submit(k, 1, left);
		if (ret == -ETIME)
			continue;	/* re-check the ring, then the clock */
		if (ret < 0)
			return ret;
	}
}

void kmsgr_prep_send(struct kmsgr_sqe *sqe, __u32 session, __u16 type,
		     __u64 tid, struct kmsgr_slice front,
		     struct kmsgr_slice middle, struct kmsgr_slice data,
		     __u64 user_data)
{
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = KMSGR_OP_SEND;
	sqe->session = session;
	sqe->type = type;
	sqe->tid = tid;
	sqe->seg[0] = front;
	sqe->seg[1] = middle;
	sqe->seg[2] = data;
	sqe->user_data = user_data;
}

void kmsgr_prep_release(struct kmsgr_sqe *sqe, const struct kmsgr_cqe *recv)
{
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = KMSGR_OP_RELEASE;
	sqe->session = recv->session;
	memcpy(sqe->seg, recv->seg, sizeof(sqe->seg));
	/* a module with KMSGR_FEAT_RELEASE_TOKEN names the message */
	if (recv->res > 0) {
		sqe->flags = KMSGR_SQE_F_TOKEN;
		sqe->tid = (__u32)recv->res;
	}
	sqe->user_data = recv->user_data;
}

void kmsgr_prep_nop(struct kmsgr_sqe *sqe, __u64 user_data)
{
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = KMSGR_OP_NOP;
	sqe->user_data = user_data;
}

/* ---- addresses ---------------------------------------------------------- */

/*
 * @len decimal digits and nothing else, at most @max (<= UINT32_MAX).  At
 * most ten digits, summed in 64 bits: nothing wraps around to a small valid
 * value (in a 32-bit unsigned long, ILP32, "4294967376" would be 80).
 */
static int kmsgr_parse_uint(const char *s, size_t len, unsigned long max,
			    unsigned long *val)
{
	unsigned long long v = 0;
	size_t i;

	if (!len || len > 10)
		return -EINVAL;
	for (i = 0; i < len; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -EINVAL;
		v = v * 10 + (unsigned int)(s[i] - '0');
	}
	if (v > max)
		return -EINVAL;
	*val = (unsigned long)v;
	return 0;
}

int kmsgr_addr_parse(const char *str, struct kmsgr_addr *addr)
{
	char host[INET6_ADDRSTRLEN + IF_NAMESIZE + 2];
	const char *p = str, *hend, *port, *slash;
	unsigned long portnum, nonce = 0, scope = 0;
	size_t hlen;
	char *pct;

	if (!str)
		return -EINVAL;
	memset(addr, 0, sizeof(*addr));

	/* Ceph's "v2:" prefix and "/nonce" suffix are accepted. */
	if (!strncmp(p, "v2:", 3))
		p += 3;
	slash = strchr(p, '/');
	if (slash && kmsgr_parse_uint(slash + 1, strlen(slash + 1),
				      UINT32_MAX, &nonce))
		return -EINVAL;
	if (!slash)
		slash = p + strlen(p);

	if (*p == '[') {
		p++;
		hend = memchr(p, ']', (size_t)(slash - p));
		if (!hend || hend[1] != ':')
			return -EINVAL;
		port = hend + 2;
		addr->family = AF_INET6;
	} else {
		hend = NULL;
		for (port = p; port < slash; port++)
			if (*port == ':')
				hend = port;
		if (!hend)
			return -EINVAL;
		port = hend + 1;
		addr->family = AF_INET;
	}
	hlen = (size_t)(hend - p);
	if (!hlen || hlen >= sizeof(host))
		return -EINVAL;
	memcpy(host, p, hlen);
	host[hlen] = '\0';

	if (kmsgr_parse_uint(port, (size_t)(slash - port), 65535, &portnum))
		return -EINVAL;

	if (addr->family == AF_INET) {
		if (inet_pton(AF_INET, host, addr->addr) != 1)
			return -EINVAL;
	} else {
		pct = strchr(host, '%');
		if (pct) {
			*pct++ = '\0';
			if (kmsgr_parse_uint(pct, strlen(pct), UINT32_MAX,
					     &scope)) {
				scope = if_nametoindex(pct);
				if (!scope)
					return -EINVAL;
			}
		}
		if (inet_pton(AF_INET6, host, addr->addr) != 1)
			return -EINVAL;
		addr->scope_id = (__u32)scope;
	}
	addr->port = htons((uint16_t)portnum);
	addr->nonce = (__u32)nonce;
	return 0;
}

const char *kmsgr_addr_format(const struct kmsgr_addr *addr, char *buf,
			      size_t len)
{
	char host[INET6_ADDRSTRLEN];
	char scope[16] = "";
	char nonce[16] = "";

	if (!buf || !len)
		return NULL;
	if (addr->nonce)
		snprintf(nonce, sizeof(nonce), "/%u", addr->nonce);

	if (addr->family == AF_INET &&
	    inet_ntop(AF_INET, addr->addr, host, sizeof(host))) {
		snprintf(buf, len, "%s:%u%s", host, ntohs(addr->port), nonce);
	} else if (addr->family == AF_INET6 &&
		   inet_ntop(AF_INET6, addr->addr, host, sizeof(host))) {
		if (addr->scope_id)
			snprintf(scope, sizeof(scope), "%%%u", addr->scope_id);
		snprintf(buf, len, "[%s%s]:%u%s", host, scope,
			 ntohs(addr->port), nonce);
	} else {
		snprintf(buf, len, "(family %u)", addr->family);
	}
	return buf;
}

/* ---- keyrings ----------------------------------------------------------- */

/* Layout of an encoded Ceph CryptoKey (AES). */
#define CRYPTO_KEY_AES		1
#define CRYPTO_KEY_BLOB_LEN	(2 + 8 + 2 + 16)
#define KEYRING_LINE_MAX	4096

static int b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/*
 * Strict base64: length a multiple of 4, '=' only as the last one or two
 * characters, and unused bits of the last group zero.  Returns the decoded
 * length or -EINVAL.
 */
static int kmsgr_base64_decode(const char *in, size_t in_len, __u8 *out,
			       size_t out_cap)
{
	size_t i, o = 0;
	int v[4], pad, j;

	if (in_len % 4)
		return -EINVAL;
	for (i = 0; i < in_len; i += 4) {
		pad = 0;
		for (j = 0; j < 4; j++) {
			if (in[i + j] == '=' && i + 4 == in_len && j >= 2) {
				v[j] = 0;
				pad++;
				continue;
			}
			if (pad)
				return -EINVAL;	/* data after '=' */
			v[j] = b64_value((unsigned char)in[i + j]);
			if (v[j] < 0)
				return -EINVAL;
		}
		if ((pad == 1 && (v[2] & 0x3)) || (pad == 2 && (v[1] & 0xf)))
			return -EINVAL;	/* non-canonical trailing bits */
		if (o + 3 - (size_t)pad > out_cap)
			return -EINVAL;
		out[o++] = (__u8)(v[0] << 2 | v[1] >> 4);
		if (pad < 2)
			out[o++] = (__u8)((v[1] & 0xf) << 4 | v[2] >> 2);
		if (pad < 1)
			out[o++] = (__u8)((v[2] & 0x3) << 6 | v[3]);
	}
	return (int)o;
}

int kmsgr_key_decode(const char *b64, __u8 key[16])
{
	__u8 blob[CRYPTO_KEY_BLOB_LEN + 3];
	int len, ret = -EINVAL;

	len = kmsgr_base64_decode(b64, strlen(b64), blob, sizeof(blob));
	if (len != CRYPTO_KEY_BLOB_LEN)
		goto out;
	/* le16 type, 8 bytes created (utime), le16 length, the key */
	if ((blob[0] | blob[1] << 8) != CRYPTO_KEY_AES)
		goto out;
	if ((blob[10] | blob[11] << 8) != 16)
		goto out;
	memcpy(key, blob + 12, 16);
	ret = 0;
out:
	explicit_bzero(blob, sizeof(blob));
	return ret;
}

static char *kmsgr_trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/*
 * One keyring line: 1 when it is "key = VALUE" inside the wanted section
 * (then *@val points at VALUE), 0 otherwise, -EINVAL when malformed.
 */
static int kmsgr_keyring_line(char *line, const char *name, bool *in_sect,
			      char **val)
{
	char *p = kmsgr_trim(line), *eq, *k;

	if (!*p || *p == '#' || *p == ';')
		return 0;
	if (*p == '[') {
		k = strchr(p, ']');
		if (!k || k[1])
			return -EINVAL;
		*k = '\0';
		*in_sect = !strcmp(kmsgr_trim(p + 1), name);
		return 0;
	}
	eq = strchr(p, '=');
	if (!eq)
		return -EINVAL;
	*eq = '\0';
	k = kmsgr_trim(p);
	if (!*in_sect || strcmp(k, "key"))
		return 0;
	*val = kmsgr_trim(eq + 1);
	return 1;
}

int kmsgr_keyring_load(const char *path, const char *name, __u8 key[16])
{
	char *line, *val = NULL;
	bool in_sect = false, seen = false;
	FILE *f;
	size_t n;
	int ret;

	if (!path || !name || !*name)
		return -EINVAL;
	line = malloc(KEYRING_LINE_MAX);
	if (!line)
		return -ENOMEM;
	f = fopen(path, "re");
	if (!f) {
		ret = -errno;
		goto out_free;
	}

	ret = -ENOENT;
	while (fgets(line, KEYRING_LINE_MAX, f)) {
		n = strlen(line);
		if (n == KEYRING_LINE_MAX - 1 && line[n - 1] != '\n') {
			ret = -EINVAL;	/* line too long */
			break;
		}
		ret = kmsgr_keyring_line(line, name, &in_sect, &val);
		if (ret < 0)
			break;
		if (in_sect)
			seen = true;
		if (ret == 1) {
			ret = kmsgr_key_decode(val, key);
			break;
		}
		ret = seen ? -ENOKEY : -ENOENT;
	}
	if (ferror(f))
		ret = -EIO;
	fclose(f);
out_free:
	explicit_bzero(line, KEYRING_LINE_MAX);
	free(line);
	return ret;
}

/* ---- sessions ----------------------------------------------------------- */

int kmsgr_listen(struct kmsgr *k, struct kmsgr_listen *l)
{
	return kmsgr_ioctl(k->fd, KMSGR_IOC_LISTEN, l);
}

int kmsgr_connect(struct kmsgr *k, struct kmsgr_connect *c)
{
	return kmsgr_ioctl(k->fd, KMSGR_IOC_CONNECT, c);
}

int kmsgr_close_id(struct kmsgr *k, __u32 id)
{
	struct kmsgr_close c;

	memset(&c, 0, sizeof(c));
	c.id = id;
	return kmsgr_ioctl(k->fd, KMSGR_IOC_CLOSE, &c);
}

int kmsgr_bdev_attach(struct kmsgr *k, struct kmsgr_bdev *b)
{
	return kmsgr_ioctl(k->fd, KMSGR_IOC_ATTACH_BDEV, b);
}

int kmsgr_bdev_detach(struct kmsgr *k, __u32 id)
{
	struct kmsgr_bdev_detach d;

	memset(&d, 0, sizeof(d));
	d.id = id;
	return kmsgr_ioctl(k->fd, KMSGR_IOC_DETACH_BDEV, &d);
}

void kmsgr_prep_bdev(struct kmsgr_sqe *sqe, __u8 opcode, __u32 id,
		     __u64 dev_off, __u32 off, __u32 len, __u64 user_data)
{
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = opcode;
	sqe->session = id;
	sqe->tid = dev_off;
	sqe->seg[0].off = off;
	sqe->seg[0].len = len;
	sqe->user_data = user_data;
}

void kmsgr_prep_bdev_write_recv(struct kmsgr_sqe *sqe, __u32 id,
				__u64 dev_off, const struct kmsgr_cqe *recv,
				__u64 user_data)
{
	kmsgr_prep_bdev(sqe, KMSGR_OP_BDEV_WRITE, id, dev_off,
			recv->seg[2].off, recv->seg[2].len, user_data);
	sqe->flags = KMSGR_SQE_F_RELEASE;
	sqe->token = recv->res > 0 ? (__u32)recv->res : 0;
}

static const char *const kmsgr_reason_names[] = {
	[KMSGR_REASON_NONE] = "closed by the application",
	[KMSGR_REASON_BANNER] = "bad banner (not a msgr2 peer?)",
	[KMSGR_REASON_BANNER_FEATURES] = "banner features incompatible",
	[KMSGR_REASON_PREAMBLE_CRC] = "bad preamble crc",
	[KMSGR_REASON_SEGMENT_CRC] = "bad segment or epilogue crc",
	[KMSGR_REASON_GCM_TAG] = "secure mode: bad authentication tag",
	[KMSGR_REASON_UNKNOWN_TAG] = "unknown frame tag",
	[KMSGR_REASON_ORDER] = "frame not valid in this state",
	[KMSGR_REASON_OVERSIZE] = "a length above the limits",
	[KMSGR_REASON_MALFORMED] = "malformed frame or payload",
	[KMSGR_REASON_LATE_STATUS] = "bad epilogue late status",
	[KMSGR_REASON_SIGNATURE] = "AUTH_SIGNATURE mismatch",
	[KMSGR_REASON_AUTH] = "authentication refused",
	[KMSGR_REASON_MISSING_FEATURES] = "required features missing",
	[KMSGR_REASON_PEER] = "wrong peer type or address",
	[KMSGR_REASON_SEQ] = "sequence gap",
	[KMSGR_REASON_WAIT] = "peer said WAIT",
	[KMSGR_REASON_TIMEOUT] = "timed out (handshake, keepalive, idle or resume)",
	[KMSGR_REASON_EOF] = "connection closed by the peer",
	[KMSGR_REASON_LOCAL] = "closed locally",
	[KMSGR_REASON_NOMEM] = "out of memory",
	[KMSGR_REASON_NONCE] = "secure mode: out of nonces",
	[KMSGR_REASON_BUSY] = "no receive space (a listener: too many unread events)",
	[KMSGR_REASON_CONNECT] = "connect failed",
	[KMSGR_REASON_HALF_OPEN] = "too many handshakes in progress (max_half_open)",
	[KMSGR_REASON_SESSIONS] = "too many sessions (max_sessions)",
	[KMSGR_REASON_DEVICE] = "transport device removed or its link down",
	[KMSGR_REASON_MODE] = "connection mode refused by the peer (secure or crc)",
};

const char *kmsgr_reason_str(unsigned int reason)
{
	if (reason < ARRAY_SIZE(kmsgr_reason_names) &&
	    kmsgr_reason_names[reason])
		return kmsgr_reason_names[reason];
	return "unknown reason";
}

static const char *const kmsgr_event_names[] = {
	[KMSGR_EV_ACCEPTED] = "accepted",
	[KMSGR_EV_UP] = "up",
	[KMSGR_EV_DOWN] = "down",
	[KMSGR_EV_RESET] = "reset",
	[KMSGR_EV_CLOSED] = "closed",
	[KMSGR_EV_REFUSED] = "refused",
};

const char *kmsgr_event_str(unsigned int event)
{
	if (event < ARRAY_SIZE(kmsgr_event_names) && kmsgr_event_names[event])
		return kmsgr_event_names[event];
	return "unknown";
}

int kmsgr_down_is_final(const struct kmsgr_cqe *cqe, int lossless, int was_up)
{
	if (!lossless)
		return 1;
	return !was_up && cqe->reason == KMSGR_REASON_CONNECT &&
	       cqe->res == -ECONNREFUSED;
}
