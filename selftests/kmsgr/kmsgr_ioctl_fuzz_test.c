// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr selftests - random ioctls and mmaps on /dev/kmsgr.
 *
 * Bad ioctls must never oops, leak or corrupt another session.  A healthy
 * lossless session between two instances (the "bed", as in
 * kmsgr_badinput_test) carries small messages both ways from a thread of
 * its own, while the main thread throws structure-aware random input at a
 * few other instances: some set up, some not, some opened read-only, each
 * closed and reopened now and then (its mappings may outlive the file).
 *
 *  - every documented command with a valid argument of which 1 to 3
 *    fields are mutated: reserved fields nonzero, unknown flag bits,
 *    zero, odd and huge lengths and counts, ids of other instances' and
 *    of the bed's sessions and listeners, user pointers (NULL, unaligned,
 *    kernel, unmapped, PROT_NONE, read-only, across the end of a mapping,
 *    into the rings), addresses (127.0.0.1 with random ports, port 0, bad
 *    families and bytes; never a port below 10000, where this host's
 *    services are, nor the bed's listener), transports out of range
 *    (never rdma: that would load kmsgr_rdma), block device fds that are
 *    none (a pipe, /dev/null, a memfd, a socket, a directory, /dev/kmsgr
 *    itself, -1, a number never open); or random bytes, as they are or
 *    with the reserved fields cleared;
 *  - the argument itself NULL, a kernel address, unmapped, PROT_NONE,
 *    across the end of a mapping, read-only, unaligned, in the rings;
 *  - unknown command numbers of type 0xC5, and the documented numbers
 *    with another size or direction;
 *  - mmap() with random offsets, lengths, protections and flags; munmap(),
 *    mremap() and mprotect() of (pieces of) the mappings; random writes to
 *    the instance's own ring counters and SQEs.
 *
 * Asserted: an unknown number fails ENOTTY, on a read-only file too
 * (where every known command but INFO fails EBADF); a valid argument whose only mutations
 * are reserved fields or unknown flag bits fails EINVAL; a bad argument
 * pointer fails EFAULT; INFO with only output fields mutated and a valid
 * first SETUP succeed; CLOSE of an id the instance never had (a bed's id)
 * fails ENOENT, DETACH_BDEV ENODEV, ATTACH_BDEV of a non-block fd always
 * fails; mmap() follows the rules of the header.  Every other result is
 * counted per command and errno, and the histogram is logged.  Listeners
 * and sessions that get created are capped per instance and closed.  A
 * watchdog fails the test when a call hangs.  A few of the asserted bad
 * calls go to the bed's own instance.  Afterwards every fuzz instance is
 * gone (the module's instances counter is back), the bed's streams never
 * failed (once, in order, hashes equal), and a new pair of instances
 * still sets up, listens, connects and exchanges a message.
 *
 *  KMSGR_IOCTL_FUZZ_SECONDS  time budget of the loop (30; at most 300)
 *  KMSGR_IOCTL_FUZZ_ITERS    most iterations (20000)
 *  KMSGR_IOCTL_FUZZ_SEED     seed (default: from the clock; logged)
 *
 * An unexpected result is logged with the seed, the iteration and the
 * call; the same seed makes the same calls (their results may differ
 * with timing).  The kernel log is checked by run_guest.sh.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "kselftest_harness.h"
#include "kmsgr_selftest.h"
#include "kmsgr_ring_util.h"

#define SETUP_MS	20000
#define NR_FI		5	/* fuzz instances */
#define MAX_OBJS	4	/* tracked listeners and sessions per instance */
#define MAX_ACCEPTED	16	/* connects to one instance's listeners */
#define MAX_MAPS	32
#define MAX_MUT		3
#define ARG_MAX		256
#define PG		4096UL
#define KADDR		0xffff888000000000ULL
#define BIG_BUF		(8ULL << 20)	/* no SETUP allocates more */
#define MAX_WAIT_NS	20000000ULL	/* ENTER waits at most 20 ms */
#define MAX_LOGGED	20
#define NR_ERRNO	134
#define MAX_SECONDS	300
#define WATCHDOG_S	90	/* beyond the loop's budget */
#define LOW_PORTS	10000	/* fuzzed addresses never name these */

/* ---- the bed: a healthy session that must not notice ----------------------- */

struct bed {
	struct kt_bed h;		/* the healthy pair (kmsgr_ring_util.h) */
	pthread_t thread;
	bool running;
	int stop;			/* __atomic */
	int err;			/* kt_loop_run_once() failed */
};

/* The bed's thread: only it touches the bed until it is stopped. */
static void *bed_thread(void *arg)
{
	struct bed *b = arg;
	int ret;

	while (!__atomic_load_n(&b->stop, __ATOMIC_ACQUIRE)) {
		ret = kt_loop_run_once(&b->h.lp, 20);
		if (ret) {
			b->err = ret;
			break;
		}
	}
	return NULL;
}

static void bed_stop(struct bed *b)
{
	if (!b->running)
		return;
	__atomic_store_n(&b->stop, 1, __ATOMIC_RELEASE);
	pthread_join(b->thread, NULL);
	b->running = false;
}

static void bed_fini(struct bed *b)
{
	bed_stop(b);
	kt_bed_close(&b->h);
}

/* ---- what is fuzzed ---------------------------------------------------------- */

enum {
	C_INFO, C_SETUP, C_ENTER, C_LISTEN, C_CONNECT, C_CLOSE, C_ATTACH,
	C_DETACH, NR_CMDS
};

/* histogram rows: the commands, then the other operations */
enum {
	OP_UNKNOWN = NR_CMDS, OP_BADCMD, OP_MMAP, OP_MUNMAP, OP_RINGS, NR_OPS
};

static const char *const op_names[NR_OPS] = {
	"INFO", "SETUP", "ENTER", "LISTEN", "CONNECT", "CLOSE",
	"ATTACH_BDEV", "DETACH_BDEV", "unknown nr", "bad size/dir", "mmap",
	"munmap/mremap/mprotect", "ring writes",
};

static const struct {
	unsigned long cmd;
	size_t size;
} cmds[NR_CMDS] = {
	[C_INFO] = { KMSGR_IOC_INFO, sizeof(struct kmsgr_info) },
	[C_SETUP] = { KMSGR_IOC_SETUP, sizeof(struct kmsgr_setup) },
	[C_ENTER] = { KMSGR_IOC_ENTER, sizeof(struct kmsgr_enter) },
	[C_LISTEN] = { KMSGR_IOC_LISTEN, sizeof(struct kmsgr_listen) },
	[C_CONNECT] = { KMSGR_IOC_CONNECT, sizeof(struct kmsgr_connect) },
	[C_CLOSE] = { KMSGR_IOC_CLOSE, sizeof(struct kmsgr_close) },
	[C_ATTACH] = { KMSGR_IOC_ATTACH_BDEV, sizeof(struct kmsgr_bdev) },
	[C_DETACH] = { KMSGR_IOC_DETACH_BDEV,
		       sizeof(struct kmsgr_bdev_detach) },
};

/* kinds of fields, for the mutations */
enum {
	F_RSV,		/* reserved: must be 0 */
	F_FLAGS,	/* flag word: @valid are the defined bits */
	F_LEN,		/* a length, count, size or time */
	F_ID,		/* a session, listener or device id */
	F_PTR,		/* a __u64 user pointer */
	F_FD,		/* a file descriptor */
	F_ADDR,		/* struct kmsgr_addr but its reserved field */
	F_XPRT,		/* KMSGR_XPRT_* */
	F_OUT,		/* an output field: ignored on input */
	F_ANY,		/* an input that may hold any value */
	F_TYPE,		/* a CEPH_ENTITY_TYPE_* */
	F_NAME,		/* a NUL-terminated name */
	F_AUTH,		/* KMSGR_AUTH_* */
};

struct field {
	const char *name;
	unsigned short off, size;
	unsigned char kind;
	unsigned int valid;
};

#define FLD(s, m, k)	{ #m, offsetof(s, m), sizeof(((s *)0)->m), k, 0 }
#define FLG(s, m, v)	{ #m, offsetof(s, m), sizeof(((s *)0)->m), F_FLAGS, v }

static const struct field info_f[] = {
	FLG(struct kmsgr_info, flags, KMSGR_INFO_F_ALL),
	FLD(struct kmsgr_info, reserved0, F_RSV),
	FLD(struct kmsgr_info, reserved, F_RSV),
	FLD(struct kmsgr_info, abi_version, F_OUT),
	FLD(struct kmsgr_info, features, F_OUT),
	FLD(struct kmsgr_info, max_sq_entries, F_OUT),
	FLD(struct kmsgr_info, max_buf_size, F_OUT),
	FLD(struct kmsgr_info, version, F_OUT),
	FLD(struct kmsgr_info, pool_bytes, F_OUT),
	FLD(struct kmsgr_info, registered_bytes, F_OUT),
};

static const struct field setup_f[] = {
	FLD(struct kmsgr_setup, sq_entries, F_LEN),
	FLD(struct kmsgr_setup, cq_entries, F_LEN),
	FLD(struct kmsgr_setup, buf_size, F_LEN),
	FLD(struct kmsgr_setup, rx_pool_size, F_LEN),
	FLG(struct kmsgr_setup, flags, KMSGR_SETUP_F_ALL),
	FLD(struct kmsgr_setup, reserved0, F_RSV),
	FLD(struct kmsgr_setup, reserved, F_RSV),
	FLD(struct kmsgr_setup, sq_ring_size, F_OUT),
	FLD(struct kmsgr_setup, cq_ring_size, F_OUT),
};

static const struct field enter_f[] = {
	FLD(struct kmsgr_enter, to_submit, F_LEN),
	FLD(struct kmsgr_enter, min_complete, F_LEN),
	FLG(struct kmsgr_enter, flags, KMSGR_ENTER_F_GETEVENTS),
	FLD(struct kmsgr_enter, submitted, F_OUT),
	FLD(struct kmsgr_enter, timeout_ns, F_LEN),
	FLD(struct kmsgr_enter, busy_poll_us, F_LEN),
	FLD(struct kmsgr_enter, reserved32, F_RSV),
	FLD(struct kmsgr_enter, reserved, F_RSV),
};

#define SESS_FLAGS	(KMSGR_SESS_F_LOSSLESS | KMSGR_SESS_F_SECURE)

static const struct field listen_f[] = {
	FLD(struct kmsgr_listen, addr, F_ADDR),
	FLD(struct kmsgr_listen, addr.reserved, F_RSV),
	FLD(struct kmsgr_listen, transport, F_XPRT),
	FLG(struct kmsgr_listen, flags, SESS_FLAGS),
	FLD(struct kmsgr_listen, user_data, F_ANY),
	FLD(struct kmsgr_listen, id, F_OUT),
	FLD(struct kmsgr_listen, my_type, F_TYPE),
	FLD(struct kmsgr_listen, reserved1, F_RSV),
	FLD(struct kmsgr_listen, bound, F_OUT),
	FLD(struct kmsgr_listen, keys, F_PTR),
	FLD(struct kmsgr_listen, n_keys, F_LEN),
	FLD(struct kmsgr_listen, auth, F_AUTH),
	FLD(struct kmsgr_listen, reserved2, F_RSV),
	FLD(struct kmsgr_listen, reserved, F_RSV),
};

static const struct field connect_f[] = {
	FLD(struct kmsgr_connect, addr, F_ADDR),
	FLD(struct kmsgr_connect, addr.reserved, F_RSV),
	FLD(struct kmsgr_connect, transport, F_XPRT),
	FLG(struct kmsgr_connect, flags, SESS_FLAGS),
	FLD(struct kmsgr_connect, peer_type, F_TYPE),
	FLD(struct kmsgr_connect, my_type, F_TYPE),
	FLD(struct kmsgr_connect, auth, F_AUTH),
	FLD(struct kmsgr_connect, key_len, F_LEN),
	FLD(struct kmsgr_connect, key, F_PTR),
	FLD(struct kmsgr_connect, name, F_NAME),
	FLD(struct kmsgr_connect, user_data, F_ANY),
	FLD(struct kmsgr_connect, id, F_OUT),
	FLD(struct kmsgr_connect, ticket_from, F_ID),
	FLD(struct kmsgr_connect, key_desc, F_PTR),
	FLD(struct kmsgr_connect, reserved, F_RSV),
};

static const struct field close_f[] = {
	FLD(struct kmsgr_close, id, F_ID),
	FLG(struct kmsgr_close, flags, 0),
	FLD(struct kmsgr_close, reserved, F_RSV),
};

static const struct field bdev_f[] = {
	FLD(struct kmsgr_bdev, fd, F_FD),
	FLG(struct kmsgr_bdev, flags, KMSGR_BDEV_F_ALL),
	FLD(struct kmsgr_bdev, id, F_OUT),
	FLD(struct kmsgr_bdev, attrs, F_OUT),
	FLD(struct kmsgr_bdev, capacity, F_OUT),
	FLD(struct kmsgr_bdev, max_io, F_OUT),
	FLD(struct kmsgr_bdev, reserved0, F_RSV),
	FLD(struct kmsgr_bdev, reserved, F_RSV),
};

static const struct field detach_f[] = {
	FLD(struct kmsgr_bdev_detach, id, F_ID),
	FLG(struct kmsgr_bdev_detach, flags, 0),
	FLD(struct kmsgr_bdev_detach, reserved, F_RSV),
};

static const struct {
	const struct field *f;
	unsigned int n;
} fields[NR_CMDS] = {
	[C_INFO] = { info_f, ARRAY_SIZE(info_f) },
	[C_SETUP] = { setup_f, ARRAY_SIZE(setup_f) },
	[C_ENTER] = { enter_f, ARRAY_SIZE(enter_f) },
	[C_LISTEN] = { listen_f, ARRAY_SIZE(listen_f) },
	[C_CONNECT] = { connect_f, ARRAY_SIZE(connect_f) },
	[C_CLOSE] = { close_f, ARRAY_SIZE(close_f) },
	[C_ATTACH] = { bdev_f, ARRAY_SIZE(bdev_f) },
	[C_DETACH] = { detach_f, ARRAY_SIZE(detach_f) },
};

/* ---- the fuzzer's state ------------------------------------------------------ */

struct fobj {
	uint32_t id;
	bool listener;
	uint16_t port;			/* a listener's, host order */
};

struct fmap {
	void *addr;
	size_t len;
};

/* one fuzz instance */
struct finst {
	int fd;
	bool rdonly;
	bool setup;
	bool unknown_ids;	/* may hold objects we did not see created */
	bool bdev_seen;		/* an ATTACH_BDEV succeeded (never should) */
	unsigned int accepted;	/* connects to its listeners */
	uint64_t size[3];	/* SQ, CQ and buffer area regions */
	uint64_t pool;
	uint8_t *map[3];	/* our full mappings of them */
	uint32_t head_off[2], tail_off[2], entries_off[2], entries[2];
	struct fobj objs[MAX_OBJS];
	unsigned int nr_objs;
};

static const uint64_t region_off[3] = {
	KMSGR_OFF_SQ_RING, KMSGR_OFF_CQ_RING, KMSGR_OFF_BUF,
};

/* where an ioctl's argument goes */
enum {
	PL_HEAP, PL_UNALIGNED, PL_END, PL_BUF,		/* writable, stable */
	PL_RO,						/* read-only */
	PL_CQ,						/* kernel-written */
	PL_NULL, PL_KERNEL, PL_LOW, PL_NONE, PL_STRADDLE, /* bad */
};

static const char *const pl_names[] = {
	"heap", "unaligned", "end of mapping", "buffer area", "read-only",
	"CQ ring", "NULL", "kernel address", "unmapped", "PROT_NONE",
	"across a mapping's end",
};

struct fz {
	uint64_t seed, rng;
	unsigned long iter;
	struct kmsgr_info info;
	struct finst fi[NR_FI];
	struct fmap maps[MAX_MAPS];	/* the random mappings */
	unsigned int nr_maps;
	uint8_t *area;		/* rw (2 pages), guard, ro */
	uint8_t *rw, *guard, *ro;
	uint64_t argw[ARG_MAX / 8];	/* the argument, aligned */
	uint8_t scratch[PG];
	struct kmsgr_listen_key keys[3];
	uint8_t key[16];
	char key_desc[32];
	int fds[8];		/* not block devices */
	int nr_fds;
	int closed_fd;		/* a number that is never open */
	uint32_t bed_ids[3];
	uint16_t bed_port;
	int victim_fd;
	uint8_t dialled[65536 / 8];	/* ports sessions were made to */
	unsigned int counts[NR_OPS][NR_ERRNO + 1];
	unsigned int unexpected, calls, created, bystander;
	char what[640];		/* the call under way, for the log */
};

/* for the watchdog */
static char wd_what[1200];

static void watchdog(int sig)
{
	static const char pre[] = "# the fuzz loop is stuck in: ";
	ssize_t n;

	(void)sig;
	n = write(2, pre, sizeof(pre) - 1);
	n = write(2, wd_what, strnlen(wd_what, sizeof(wd_what)));
	n = write(2, "\n", 1);
	(void)n;
	_exit(99);
}

static uint64_t rnd(struct fz *fz, uint64_t n)
{
	return n ? kt_rand(&fz->rng) % n : 0;
}

/* Hex of @len bytes of @p into @out (NUL-terminated, truncated). */
static void hex(char *out, size_t size, const void *p, size_t len)
{
	const uint8_t *b = p;
	size_t i, n = 0;

	out[0] = 0;
	for (i = 0; i < len && n + 3 < size; i++)
		n += snprintf(out + n, size - n, "%02x", b[i]);
}

/* Tell the watchdog what comes next: the call, and its argument. */
static void watch(struct fz *fz, const void *arg, size_t len)
{
	size_t n;

	n = snprintf(wd_what, sizeof(wd_what), "seed %llu iteration %lu: %s",
		     (unsigned long long)fz->seed, fz->iter, fz->what);
	if (arg && n + 8 < sizeof(wd_what)) {
		n += snprintf(wd_what + n, sizeof(wd_what) - n, "; bytes ");
		hex(wd_what + n, sizeof(wd_what) - n, arg, len);
	}
}

static void count(struct fz *fz, unsigned int op, long ret, int err)
{
	unsigned int i = ret >= 0 ? 0 : err > 0 && err < NR_ERRNO ? err :
							      NR_ERRNO;

	fz->counts[op][i]++;
	fz->calls++;
}

static const char *ename(int err)
{
	const char *s = err ? strerrorname_np(err) : "0";

	return s ? s : "?";
}

/* what a call must give */
enum { XP_ANY, XP_OK, XP_FAIL, XP_ERR };

struct expect {
	int kind;
	int e1, e2;		/* XP_ERR: either (0 = success) */
	const char *why;
};

static void check(struct __test_metadata *_metadata, struct fz *fz,
		  const struct expect *x, long ret, int err)
{
	int got = ret >= 0 ? 0 : err;
	bool ok;

	switch (x->kind) {
	case XP_OK:
		ok = ret >= 0;
		break;
	case XP_FAIL:
		ok = ret < 0;
		break;
	case XP_ERR:
		ok = got == x->e1 || got == x->e2;
		break;
	default:
		ok = true;
	}
	if (ok)
		return;
	if (fz->unexpected++ < MAX_LOGGED)
		TH_LOG("seed %llu iteration %lu: %s: returned %ld (%s), expected %s%s%s (%s)",
		       (unsigned long long)fz->seed, fz->iter, fz->what, ret,
		       ename(got),
		       x->kind == XP_OK ? "success" :
		       x->kind == XP_FAIL ? "failure" : ename(x->e1),
		       x->kind == XP_ERR && x->e2 != x->e1 ? " or " : "",
		       x->kind == XP_ERR && x->e2 != x->e1 ? ename(x->e2) : "",
		       x->why);
}

static void expect_err(struct expect *x, int e1, int e2, const char *why)
{
	x->kind = XP_ERR;
	x->e1 = e1;
	x->e2 = e2;
	x->why = why;
}

/* ---- the instances ------------------------------------------------------------ */

static void map_add(struct fz *fz, void *addr, size_t len)
{
	unsigned int i;

	if (fz->nr_maps == MAX_MAPS) {
		i = rnd(fz, MAX_MAPS);
		munmap(fz->maps[i].addr, fz->maps[i].len);
		fz->maps[i] = fz->maps[--fz->nr_maps];
	}
	fz->maps[fz->nr_maps].addr = addr;
	fz->maps[fz->nr_maps].len = len;
	fz->nr_maps++;
}

/* After a SETUP that succeeded: map the three regions whole. */
static void fi_map(struct __test_metadata *_metadata, struct fz *fz,
		   struct finst *fi, const struct kmsgr_setup *su)
{
	const struct kmsgr_ring *r;
	unsigned int i;
	void *p;

	fi->setup = true;
	fi->size[0] = su->sq_ring_size;
	fi->size[1] = su->cq_ring_size;
	fi->size[2] = su->buf_size;
	fi->pool = su->rx_pool_size;
	for (i = 0; i < 3; i++) {
		p = mmap(NULL, fi->size[i], PROT_READ | PROT_WRITE, MAP_SHARED,
			 fi->fd, region_off[i]);
		if (p == MAP_FAILED) {
			if (fz->unexpected++ < MAX_LOGGED)
				TH_LOG("iteration %lu: mmap region %u (%llu B): %s",
				       fz->iter, i,
				       (unsigned long long)fi->size[i],
				       strerror(errno));
			continue;
		}
		fi->map[i] = p;
	}
	for (i = 0; i < 2; i++) {
		r = (const struct kmsgr_ring *)fi->map[i];
		if (!r)
			continue;
		fi->entries[i] = r->entries;
		fi->entries_off[i] = r->entries_off;
		fi->head_off[i] = r->head_off ? r->head_off :
				  offsetof(struct kmsgr_ring, head);
		fi->tail_off[i] = r->tail_off ? r->tail_off :
				  offsetof(struct kmsgr_ring, tail);
		/* never trust what we may scribble over later */
		if (!fi->entries[i] ||
		    (fi->entries[i] & (fi->entries[i] - 1)) ||
		    fi->head_off[i] + 4 > fi->size[i] ||
		    fi->tail_off[i] + 4 > fi->size[i] ||
		    fi->entries_off[i] >= fi->size[i] ||
		    fi->entries_off[i] + 64ULL * fi->entries[i] > fi->size[i]) {
			if (fz->unexpected++ < MAX_LOGGED)
				TH_LOG("iteration %lu: ring %u: head@%u tail@%u %u@%u, %llu B",
				       fz->iter, i, fi->head_off[i],
				       fi->tail_off[i], fi->entries[i],
				       fi->entries_off[i],
				       (unsigned long long)fi->size[i]);
			munmap(fi->map[i], fi->size[i]);
			fi->map[i] = NULL;
		}
	}
}

static void fi_open(struct __test_metadata *_metadata, struct fz *fz,
		    struct finst *fi)
{
	struct kmsgr_setup su;

	memset(fi, 0, sizeof(*fi));
	snprintf(wd_what, sizeof(wd_what), "open and SETUP of an instance");
	fi->rdonly = !rnd(fz, 8);
	fi->fd = open(KMSGR_DEV_PATH,
		      (fi->rdonly ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	if (fi->fd < 0) {
		fz->unexpected++;
		TH_LOG("iteration %lu: open %s: %s", fz->iter, KMSGR_DEV_PATH,
		       strerror(errno));
		return;
	}
	if (fi->rdonly || rnd(fz, 2))
		return;
	memset(&su, 0, sizeof(su));
	su.sq_entries = 8;
	su.buf_size = 256 << 10;
	su.rx_pool_size = 128 << 10;
	if (ioctl(fi->fd, KMSGR_IOC_SETUP, &su)) {
		fz->unexpected++;
		TH_LOG("iteration %lu: SETUP of a new instance: %s", fz->iter,
		       strerror(errno));
		return;
	}
	fi_map(_metadata, fz, fi, &su);
}

/* Close the file; its mappings live on (and the instance with them). */
static void fi_close(struct fz *fz, struct finst *fi)
{
	unsigned int i;

	for (i = 0; i < 3; i++) {
		if (fi->map[i] && rnd(fz, 2))
			map_add(fz, fi->map[i], fi->size[i]);
		else if (fi->map[i])
			munmap(fi->map[i], fi->size[i]);
		fi->map[i] = NULL;
	}
	if (fi->fd >= 0)
		close(fi->fd);
	fi->fd = -1;
}

static bool fi_has(const struct finst *fi, uint32_t id)
{
	unsigned int i;

	for (i = 0; i < fi->nr_objs; i++)
		if (fi->objs[i].id == id)
			return true;
	return false;
}

static void fi_forget(struct finst *fi, uint32_t id)
{
	unsigned int i;

	for (i = 0; i < fi->nr_objs; i++) {
		if (fi->objs[i].id == id) {
			memmove(&fi->objs[i], &fi->objs[i + 1],
				(fi->nr_objs - i - 1) * sizeof(fi->objs[0]));
			fi->nr_objs--;
			return;
		}
	}
}

static void close_id(struct __test_metadata *_metadata, struct fz *fz,
		     struct finst *fi, uint32_t id)
{
	struct kmsgr_close c = { .id = id };
	struct expect x;
	long ret;

	snprintf(fz->what, sizeof(fz->what), "CLOSE %u (tracked, to make room)",
		 id);
	watch(fz, NULL, 0);
	ret = ioctl(fi->fd, KMSGR_IOC_CLOSE, &c);
	count(fz, C_CLOSE, ret, errno);
	expect_err(&x, 0, ENOENT, "an id CONNECT or LISTEN returned");
	check(_metadata, fz, &x, ret, errno);
	fi_forget(fi, id);
}

/* A listener or session was created: track it, close the oldest if full. */
static void fi_track(struct __test_metadata *_metadata, struct fz *fz,
		     struct finst *fi, uint32_t id, bool listener,
		     uint16_t port)
{
	unsigned int i;

	fz->created++;
	if (fi_has(fi, id)) {
		if (fz->unexpected++ < MAX_LOGGED)
			TH_LOG("iteration %lu: %s: id %u returned twice",
			       fz->iter, fz->what, id);
		return;
	}
	/* lossless sessions that dialled this port before get accepted */
	if (listener && port && (fz->dialled[port / 8] & (1 << (port % 8))))
		fi->unknown_ids = true;
	/*
	 * A session to a listener of ours: accepted there, id unknown. Before
	 * making room below, which may close that very listener after the
	 * session has reached it.
	 */
	for (i = 0; !listener && port && i < NR_FI; i++) {
		struct finst *o = &fz->fi[i];
		unsigned int j;

		for (j = 0; j < o->nr_objs; j++) {
			if (o->objs[j].listener && o->objs[j].port == port) {
				o->unknown_ids = true;
				o->accepted++;
			}
		}
	}
	if (!listener && port)
		fz->dialled[port / 8] |= 1 << (port % 8);
	if (fi->nr_objs == MAX_OBJS)
		close_id(_metadata, fz, fi, fi->objs[0].id);
	fi->objs[fi->nr_objs].id = id;
	fi->objs[fi->nr_objs].listener = listener;
	fi->objs[fi->nr_objs].port = port;
	fi->nr_objs++;
}

/* ---- values --------------------------------------------------------------- */

/* a user pointer, good or bad; @d says which */
static uint64_t pick_ptr(struct fz *fz, const char **d)
{
	struct finst *fi = &fz->fi[rnd(fz, NR_FI)];
	unsigned int r;

	switch (rnd(fz, 11)) {
	case 0:
		*d = "NULL";
		return 0;
	case 1:
		*d = "kernel";
		return KADDR + 8 * rnd(fz, 512);
	case 2:
		*d = "~0";
		return ~0ULL - rnd(fz, 16);
	case 3:
		*d = "non-canonical";
		return (1ULL << 47) + 8 * rnd(fz, 64);
	case 4:
		*d = "unmapped";
		return PG * (1 + rnd(fz, 15));
	case 5:
		*d = "PROT_NONE";
		return (uintptr_t)fz->guard + rnd(fz, PG);
	case 6:
		*d = "read-only";
		return (uintptr_t)fz->ro + rnd(fz, 256);
	case 7:
		*d = "unaligned";
		return (uintptr_t)fz->scratch + 1 + rnd(fz, 7);
	case 8:
		*d = "across a mapping's end";
		return (uintptr_t)fz->guard - 1 - rnd(fz, 16);
	case 9:
		r = rnd(fz, 3);
		if (fi->map[r]) {
			*d = "in a ring mapping";
			return (uintptr_t)fi->map[r] + rnd(fz, fi->size[r]);
		}
		*d = "scratch";
		return (uintptr_t)fz->scratch;
	default:
		*d = "random";
		return kt_rand(&fz->rng);
	}
}

static int pick_fd(struct fz *fz, const char **d)
{
	struct finst *fi = &fz->fi[rnd(fz, NR_FI)];

	switch (rnd(fz, 8)) {
	case 0:
		*d = "-1";
		return -1;
	case 1:
		*d = "never open";
		return fz->closed_fd;
	case 2:
		*d = "INT_MAX";
		return INT_MAX;
	case 3:
		*d = "INT_MIN";
		return INT_MIN;
	case 4:
		*d = "a kmsgr instance";
		return fi->fd >= 0 ? fi->fd : fz->victim_fd;
	case 5:
		*d = "the bed's instance";
		return fz->victim_fd;
	default:
		*d = "not a block device";
		return fz->fds[rnd(fz, fz->nr_fds)];
	}
}

static uint32_t pick_id(struct fz *fz, const struct finst *fi,
			const char **d)
{
	const struct finst *o = &fz->fi[rnd(fz, NR_FI)];

	switch (rnd(fz, 8)) {
	case 0:
		*d = "0";
		return 0;
	case 1:
	case 2:
		*d = "the bed's";
		return fz->bed_ids[rnd(fz, 3)];
	case 3:
		if (fi && fi->nr_objs) {
			*d = "its own";
			return fi->objs[rnd(fz, fi->nr_objs)].id;
		}
		*d = "small";
		return 1 + rnd(fz, 8);
	case 4:
		if (o->nr_objs) {
			*d = "another instance's";
			return o->objs[rnd(fz, o->nr_objs)].id;
		}
		*d = "small";
		return 1 + rnd(fz, 8);
	case 5:
		*d = "huge";
		return rnd(fz, 2) ? UINT32_MAX : 0x80000000U;
	case 6:
		*d = "small";
		return 1 + rnd(fz, 16);
	default:
		*d = "random";
		return (uint32_t)kt_rand(&fz->rng);
	}
}

static uint64_t pick_len(struct fz *fz, uint64_t cur, unsigned int size)
{
	uint64_t max = size >= 8 ? UINT64_MAX : (1ULL << (8 * size)) - 1;
	static const uint64_t odd[] = {
		1, 2, 3, 7, 63, 65, 4095, 4097, 65535, 65536, 65537,
		1U << 20, (1U << 20) + 1, 1U << 31, 10000, 10001,
	};

	switch (rnd(fz, 8)) {
	case 0:
		return 0;
	case 1:
		return max;
	case 2:
		return max - rnd(fz, 16);
	case 3:
		return (cur + 1) & max;
	case 4:
		return (cur - 1) & max;
	case 5:
		return (cur * 2 + rnd(fz, 2)) & max;
	case 6:
		return kt_rand(&fz->rng) & max;
	default:
		return odd[rnd(fz, ARRAY_SIZE(odd))] & max;
	}
}

static void put_uint(uint8_t *p, unsigned int size, uint64_t v)
{
	switch (size) {
	case 1:
		*p = (uint8_t)v;
		break;
	case 2:
		*(uint16_t *)p = (uint16_t)v;
		break;
	case 4:
		*(uint32_t *)p = (uint32_t)v;
		break;
	default:
		*(uint64_t *)p = v;
	}
}

static uint64_t get_uint(const uint8_t *p, unsigned int size)
{
	switch (size) {
	case 1:
		return *p;
	case 2:
		return *(const uint16_t *)p;
	case 4:
		return *(const uint32_t *)p;
	default:
		return *(const uint64_t *)p;
	}
}

static void fill_random(struct fz *fz, void *p, size_t len)
{
	uint8_t *b = p;
	size_t i;

	for (i = 0; i < len; i++)
		b[i] = (uint8_t)kt_rand(&fz->rng);
}

static void mutate_addr(struct fz *fz, struct kmsgr_addr *a, char *d,
			size_t dl)
{
	switch (rnd(fz, 10)) {
	case 0:
		a->port = 0;
		snprintf(d, dl, "port 0");
		break;
	case 1:
		a->port = htons(1 + rnd(fz, 65535));
		snprintf(d, dl, "port %u", ntohs(a->port));
		break;
	case 2:
		a->family = (uint16_t)(rnd(fz, 2) ? rnd(fz, 64) : 0xffff);
		snprintf(d, dl, "family %u", a->family);
		break;
	case 3:
		a->family = AF_INET6;	/* with the IPv4 bytes */
		snprintf(d, dl, "family AF_INET6 of 127.0.0.1's bytes");
		break;
	case 4:
		a->family = AF_UNIX;
		snprintf(d, dl, "family AF_UNIX");
		break;
	case 5:
		a->addr[4 + rnd(fz, 12)] = 1 + rnd(fz, 255);
		snprintf(d, dl, "IPv4 with bytes past the 4th");
		break;
	case 6:
		a->scope_id = 1 + rnd(fz, 1000);
		snprintf(d, dl, "scope_id %u", a->scope_id);
		break;
	case 7:
		a->nonce = (uint32_t)kt_rand(&fz->rng);
		snprintf(d, dl, "nonce %#x", a->nonce);
		break;
	case 8:
		a->family = AF_INET6;
		memset(a->addr, 0, sizeof(a->addr));
		a->addr[15] = 1;
		snprintf(d, dl, "::1");
		break;
	default:
		memset(a->addr, 0, 4);
		snprintf(d, dl, "0.0.0.0");
		break;
	}
}

/*
 * Mutate field @f of @buf.  Return true for a mutation that alone must
 * make the command fail EINVAL: a reserved field nonzero, an unknown flag.
 */
static bool mutate(struct fz *fz, const struct finst *fi, uint8_t *buf,
		   const struct field *f, bool strict_only, char *d, size_t dl)
{
	uint8_t *p = buf + f->off;
	unsigned int bits = 8 * (f->size < 4 ? f->size : 4), b, i;
	const char *s = "";
	uint64_t v;

	switch (strict_only ? (f->kind == F_FLAGS ? F_FLAGS : F_RSV) :
			      f->kind) {
	case F_RSV:
		if (rnd(fz, 4)) {
			i = rnd(fz, f->size);
			p[i] = 1 + rnd(fz, 255);
			snprintf(d, dl, "%s byte %u = %#x", f->name, i, p[i]);
		} else {
			memset(p, 0xff, f->size);
			snprintf(d, dl, "%s all ones", f->name);
		}
		return true;
	case F_FLAGS:
		if (f->valid && !strict_only && !rnd(fz, 3)) {
			do
				b = rnd(fz, bits);
			while (!(f->valid & (1U << b)));
			put_uint(p, f->size, get_uint(p, f->size) ^ (1U << b));
			snprintf(d, dl, "%s ^= %#x (defined)", f->name, 1U << b);
			return false;
		}
		do
			b = rnd(fz, bits);
		while (f->valid & (1U << b));
		put_uint(p, f->size, get_uint(p, f->size) | (1U << b));
		snprintf(d, dl, "%s |= %#x (unknown)", f->name, 1U << b);
		return true;
	case F_LEN:
		v = pick_len(fz, get_uint(p, f->size), f->size);
		put_uint(p, f->size, v);
		snprintf(d, dl, "%s = %#llx", f->name, (unsigned long long)v);
		return false;
	case F_ID:
		v = pick_id(fz, fi, &s);
		put_uint(p, f->size, v);
		snprintf(d, dl, "%s = %llu (%s)", f->name,
			 (unsigned long long)v, s);
		return false;
	case F_PTR:
		v = pick_ptr(fz, &s);
		put_uint(p, f->size, v);
		snprintf(d, dl, "%s = %#llx (%s)", f->name,
			 (unsigned long long)v, s);
		return false;
	case F_FD:
		v = (uint32_t)pick_fd(fz, &s);
		put_uint(p, f->size, v);
		snprintf(d, dl, "%s = %d (%s)", f->name, (int)v, s);
		return false;
	case F_ADDR:
		mutate_addr(fz, (struct kmsgr_addr *)p, d, dl);
		return false;
	case F_XPRT:
		v = rnd(fz, 2) ? rnd(fz, 8) : kt_rand(&fz->rng);
		put_uint(p, f->size, v);
		snprintf(d, dl, "%s = %#llx", f->name, (unsigned long long)v);
		return false;
	case F_TYPE:
		v = rnd(fz, 2) ? rnd(fz, 33) : kt_rand(&fz->rng);
		put_uint(p, f->size, v);
		snprintf(d, dl, "%s = %u", f->name, (uint8_t)v);
		return false;
	case F_AUTH:
		v = rnd(fz, 2) ? rnd(fz, 5) : kt_rand(&fz->rng);
		put_uint(p, f->size, v);
		snprintf(d, dl, "%s = %u", f->name, (uint16_t)v);
		return false;
	case F_NAME:
		switch (rnd(fz, 3)) {
		case 0:
			memset(p, 'a', f->size);
			snprintf(d, dl, "%s without a NUL", f->name);
			break;
		case 1:
			memset(p, 0, f->size);
			snprintf(d, dl, "%s empty", f->name);
			break;
		default:
			fill_random(fz, p, f->size);
			snprintf(d, dl, "%s random", f->name);
		}
		return false;
	default:	/* F_OUT, F_ANY */
		fill_random(fz, p, f->size);
		snprintf(d, dl, "%s random", f->name);
		return false;
	}
}

/* Clear the reserved fields and the unknown flags of random bytes. */
static void clear_strict(unsigned int c, uint8_t *buf)
{
	const struct field *f;
	unsigned int i;

	for (i = 0; i < fields[c].n; i++) {
		f = &fields[c].f[i];
		if (f->kind == F_RSV)
			memset(buf + f->off, 0, f->size);
		else if (f->kind == F_FLAGS)
			put_uint(buf + f->off, f->size,
				 get_uint(buf + f->off, f->size) & f->valid);
	}
}

/* ---- valid arguments ------------------------------------------------------- */

/* The port of a listener of a fuzz instance, or 0. */
static uint16_t listener_port(struct fz *fz)
{
	struct finst *o = &fz->fi[rnd(fz, NR_FI)];
	unsigned int i;

	if (o->accepted >= MAX_ACCEPTED)
		return 0;
	for (i = 0; i < o->nr_objs; i++)
		if (o->objs[i].listener && o->objs[i].port)
			return o->objs[i].port;
	return 0;
}

static void loopback(struct kmsgr_addr *a, uint16_t port)
{
	memset(a, 0, sizeof(*a));
	a->family = AF_INET;
	a->port = htons(port);
	a->addr[0] = 127;
	a->addr[3] = 1;
}

/*
 * A valid argument of command @c for instance @fi in @buf.  Return false
 * when it is not valid for the instance as it is (SETUP once more).
 */
static bool build(struct fz *fz, const struct finst *fi, unsigned int c,
		  uint8_t *buf)
{
	struct kmsgr_setup *su = (void *)buf;
	struct kmsgr_enter *e = (void *)buf;
	struct kmsgr_listen *l = (void *)buf;
	struct kmsgr_connect *cn = (void *)buf;
	struct kmsgr_close *cl = (void *)buf;
	struct kmsgr_bdev *bd = (void *)buf;
	struct kmsgr_bdev_detach *dt = (void *)buf;
	static const uint8_t types[] = { 0, 1, 2, 4, 8, 16 };
	const char *s;
	uint16_t port;

	memset(buf, 0, ARG_MAX);
	switch (c) {
	case C_INFO:
		return true;
	case C_SETUP:
		su->sq_entries = rnd(fz, 2) ? 1U << rnd(fz, 8) :
					      1 + rnd(fz, 200);
		su->cq_entries = rnd(fz, 2) ? 0 : su->sq_entries * 2;
		su->buf_size = KMSGR_POOL_MIN + rnd(fz, 1 << 20);
		su->rx_pool_size = KMSGR_POOL_MIN +
				   rnd(fz, su->buf_size - KMSGR_POOL_MIN + 1);
		if ((fz->info.features & KMSGR_FEAT_RING_LINES) && rnd(fz, 2))
			su->flags = KMSGR_SETUP_F_RING_LINES;
		return !fi->setup;
	case C_ENTER:
		e->to_submit = rnd(fz, 3) ? 0 : rnd(fz, 4);
		if (rnd(fz, 2)) {
			e->flags = KMSGR_ENTER_F_GETEVENTS;
			e->min_complete = rnd(fz, 3);
			e->timeout_ns = 100000 + rnd(fz, 5000000);
			if (fz->info.features & KMSGR_FEAT_BUSY_POLL &&
			    !rnd(fz, 4))
				e->busy_poll_us = rnd(fz, 1000);
		}
		return true;
	case C_LISTEN:
		loopback(&l->addr, rnd(fz, 2) ? 0 : LOW_PORTS + rnd(fz, 50000));
		l->transport = KMSGR_XPRT_TCP;
		l->flags = rnd(fz, 2) ? KMSGR_SESS_F_LOSSLESS : 0;
		l->user_data = kt_rand(&fz->rng);
		l->my_type = types[rnd(fz, ARRAY_SIZE(types))];
		l->auth = rnd(fz, 2) ? KMSGR_AUTH_NONE : 0;
		if ((fz->info.features & KMSGR_FEAT_LISTEN_CEPHX) &&
		    !rnd(fz, 4)) {
			l->auth = KMSGR_AUTH_CEPHX;
			l->keys = (uintptr_t)fz->keys;
			l->n_keys = 1 + rnd(fz, ARRAY_SIZE(fz->keys));
			if (rnd(fz, 2))
				l->flags |= KMSGR_SESS_F_SECURE;
		}
		return true;
	case C_CONNECT:
		port = rnd(fz, 6) ? 0 : listener_port(fz);
		if (!port)
			port = LOW_PORTS + rnd(fz, 50000);
		loopback(&cn->addr, port);
		cn->transport = KMSGR_XPRT_TCP;
		cn->flags = rnd(fz, 2) ? KMSGR_SESS_F_LOSSLESS : 0;
		cn->peer_type = types[rnd(fz, ARRAY_SIZE(types))];
		cn->my_type = rnd(fz, 2) ? 0 : 8;
		cn->auth = KMSGR_AUTH_NONE;
		if (rnd(fz, 2))
			snprintf(cn->name, sizeof(cn->name), "fuzz%u",
				 (unsigned int)rnd(fz, 100));
		cn->user_data = kt_rand(&fz->rng);
		if ((fz->info.features & KMSGR_FEAT_CEPHX) && !rnd(fz, 4)) {
			cn->auth = KMSGR_AUTH_CEPHX;
			snprintf(cn->name, sizeof(cn->name), "admin");
			cn->key = (uintptr_t)fz->key;
			cn->key_len = sizeof(fz->key);
			if (rnd(fz, 2))
				cn->flags |= KMSGR_SESS_F_SECURE;
		}
		return true;
	case C_CLOSE:
		if (fi->nr_objs && rnd(fz, 2))
			cl->id = fi->objs[rnd(fz, fi->nr_objs)].id;
		else
			cl->id = pick_id(fz, fi, &s);
		return true;
	case C_ATTACH:
		bd->fd = pick_fd(fz, &s);
		bd->flags = rnd(fz, KMSGR_BDEV_F_ALL + 1) & KMSGR_BDEV_F_ALL;
		return true;
	default:
		dt->id = pick_id(fz, fi, &s);
		return true;
	}
}

/*
 * Whatever the mutations did: nothing that allocates a lot, waits for
 * long, loads a module (the rdma transport), or reaches beyond this host,
 * its services (ports below LOW_PORTS) or the bed's listener.
 */
static void make_safe(struct fz *fz, unsigned int c, uint8_t *buf)
{
	struct kmsgr_setup *su = (void *)buf;
	struct kmsgr_enter *e = (void *)buf;
	struct kmsgr_addr *a = NULL;
	uint32_t *xprt = NULL;

	switch (c) {
	case C_SETUP:
		if (su->buf_size > BIG_BUF &&
		    su->buf_size <= fz->info.max_buf_size)
			su->buf_size = fz->info.max_buf_size + 1;
		break;
	case C_ENTER:
		if ((e->flags & KMSGR_ENTER_F_GETEVENTS) && e->min_complete &&
		    (!e->timeout_ns || e->timeout_ns > MAX_WAIT_NS))
			e->timeout_ns = 1 + rnd(fz, MAX_WAIT_NS);
		break;
	case C_LISTEN:
		a = &((struct kmsgr_listen *)buf)->addr;
		xprt = &((struct kmsgr_listen *)buf)->transport;
		break;
	case C_CONNECT:
		a = &((struct kmsgr_connect *)buf)->addr;
		xprt = &((struct kmsgr_connect *)buf)->transport;
		break;
	}
	if (!a)
		return;
	if (*xprt == KMSGR_XPRT_RDMA)
		*xprt = KMSGR_XPRT_RDMA + 1;
	if (a->family == AF_INET && a->addr[0] != 127 &&
	    (a->addr[0] || a->addr[1] || a->addr[2] || a->addr[3])) {
		a->addr[0] = 127;
		a->addr[1] = 0;
		a->addr[2] = 0;
		a->addr[3] = 1;
	}
	if (a->family == AF_INET6) {
		static const uint8_t any[16], lo[16] = { [15] = 1 };

		if (memcmp(a->addr, any, 16) && memcmp(a->addr, lo, 16))
			memcpy(a->addr, lo, 16);
	}
	/* not the services of this host (ssh, the Ceph daemons, ...) */
	if (ntohs(a->port) && ntohs(a->port) < LOW_PORTS)
		a->port = htons(ntohs(a->port) + 2 * LOW_PORTS);
	if (ntohs(a->port) == fz->bed_port)
		a->port = htons(fz->bed_port + 1);
}

/* ---- one command ------------------------------------------------------------- */

static int pick_cmd(struct fz *fz)
{
	static const unsigned char weight[NR_CMDS] = {
		[C_INFO] = 10, [C_SETUP] = 12, [C_ENTER] = 15,
		[C_LISTEN] = 15, [C_CONNECT] = 15, [C_CLOSE] = 15,
		[C_ATTACH] = 9, [C_DETACH] = 9,
	};
	unsigned int r = rnd(fz, 100), c;

	for (c = 0; c < NR_CMDS - 1; c++) {
		if (r < weight[c])
			return c;
		r -= weight[c];
	}
	return c;
}

/* A set-up instance with its maps, or NULL. */
static struct finst *any_setup(struct fz *fz)
{
	unsigned int i, s = rnd(fz, NR_FI);

	for (i = 0; i < NR_FI; i++) {
		struct finst *fi = &fz->fi[(s + i) % NR_FI];

		if (fi->setup && fi->map[0] && fi->map[1] && fi->map[2])
			return fi;
	}
	return NULL;
}

/* A bad argument pointer of kind @pl for an argument of @sz bytes. */
static uint8_t *bad_arg(struct fz *fz, int pl, size_t sz)
{
	switch (pl) {
	case PL_NULL:
		return NULL;
	case PL_KERNEL:
		return (uint8_t *)(uintptr_t)(KADDR + 64 * rnd(fz, 64));
	case PL_LOW:
		return (uint8_t *)(uintptr_t)(PG * (1 + rnd(fz, 15)));
	case PL_NONE:
		return fz->guard + rnd(fz, PG - sz);
	default:	/* PL_STRADDLE: its end is in the guard page */
		return fz->guard - 1 - rnd(fz, sz - 1);
	}
}

/* Put the argument of command @c somewhere; return the pointer to pass. */
static uint8_t *place(struct fz *fz, unsigned int c, int *pl,
		      const uint8_t *buf, size_t sz)
{
	unsigned int r = rnd(fz, 100);
	struct finst *o = any_setup(fz);
	uint8_t *p;

	if (r < 70)
		*pl = PL_HEAP;
	else if (r < 76)
		*pl = PL_UNALIGNED;
	else if (r < 81)
		*pl = PL_END;
	else if (r < 85)
		*pl = o ? PL_BUF : PL_HEAP;
	else if (r < 89)
		*pl = PL_RO;
	else if (r < 91)
		*pl = o ? PL_CQ : PL_HEAP;
	else
		*pl = PL_NULL + rnd(fz, 5);
	/* SETUP's answer is read back: not where the kernel writes CQEs */
	if (o && c == C_SETUP && (*pl == PL_CQ ||
				  (*pl == PL_BUF && o->size[2] - o->pool < PG)))
		*pl = PL_HEAP;

	switch (*pl) {
	case PL_HEAP:
		p = (uint8_t *)fz->argw;
		break;
	case PL_UNALIGNED:
		p = fz->scratch + 1 + rnd(fz, 63);
		break;
	case PL_END:
		p = fz->guard - sz;
		break;
	case PL_BUF:
		/* before the receive pool: the kernel does not write there */
		if (o->size[2] - o->pool < PG)
			*pl = PL_CQ;
		p = o->map[2] + 64 * rnd(fz, PG / 64 - 4);
		break;
	case PL_RO:
		p = fz->ro + rnd(fz, PG - sz);
		mprotect(fz->ro, PG, PROT_READ | PROT_WRITE);
		memcpy(p, buf, sz);
		mprotect(fz->ro, PG, PROT_READ);
		return p;
	case PL_CQ:
		p = o->map[1] + o->entries_off[1] +
		    64 * rnd(fz, o->entries[1] > 4 ? o->entries[1] - 4 : 1);
		break;
	default:
		return bad_arg(fz, *pl, sz);
	}
	memcpy(p, buf, sz);
	return p;
}

/* Read back what a successful LISTEN, CONNECT or SETUP wrote. */
static void created(struct __test_metadata *_metadata, struct fz *fz,
		    struct finst *fi, unsigned int c, const uint8_t *argp,
		    int pl)
{
	struct kmsgr_listen l;
	struct kmsgr_connect cn;
	struct kmsgr_setup su;
	struct kmsgr_bdev bd;
	struct kmsgr_close cl;

	if (pl == PL_CQ)
		fi->unknown_ids = true;
	switch (c) {
	case C_SETUP:
		memcpy(&su, argp, sizeof(su));
		fi_map(_metadata, fz, fi, &su);
		break;
	case C_LISTEN:
		memcpy(&l, argp, sizeof(l));
		fi_track(_metadata, fz, fi, l.id, true, ntohs(l.bound.port));
		break;
	case C_CONNECT:
		memcpy(&cn, argp, sizeof(cn));
		fi_track(_metadata, fz, fi, cn.id, false,
			 cn.addr.family == AF_INET ||
			 cn.addr.family == AF_INET6 ? ntohs(cn.addr.port) : 0);
		break;
	case C_CLOSE:
		memcpy(&cl, argp, sizeof(cl));
		fi_forget(fi, cl.id);
		break;
	case C_ATTACH:
		memcpy(&bd, argp, sizeof(bd));
		fi->bdev_seen = true;
		if (fz->unexpected++ < MAX_LOGGED)
			TH_LOG("iteration %lu: %s: attached as %u", fz->iter,
			       fz->what, bd.id);
		break;
	}
}

/*
 * One documented command on fuzz instance @fi, or, with @victim, a bad
 * one that must fail at once on the bed's own instance.
 */
static void one_cmd(struct __test_metadata *_metadata, struct fz *fz,
		    struct finst *fi, bool victim)
{
	uint64_t bufw[ARG_MAX / 8];
	uint8_t *buf = (uint8_t *)bufw;
	unsigned int c = pick_cmd(fz), i, nmut = 0, nstrict = 0, kinds = 0;
	unsigned int unexpected;
	const struct field *f;
	bool valid, rand_bytes = false;
	size_t sz, len;
	struct expect x = { .kind = XP_ANY, .why = "" };
	char md[160];
	uint8_t *argp;
	int pl, fd = victim ? fz->victim_fd : fi->fd, err;
	long ret;

	if (victim && c == C_SETUP)	/* EBUSY comes first there */
		c = C_ENTER;
	sz = cmds[c].size;
	valid = build(fz, fi, c, buf);
	len = snprintf(fz->what, sizeof(fz->what), "%s on %s%s%s: ",
		       op_names[c], victim ? "the bed's victim" : "instance",
		       !victim && fi->rdonly ? " (read-only)" : "",
		       !victim && fi->setup ? " (set up)" : "");
	if (victim && c == C_CLOSE)
		((struct kmsgr_close *)buf)->id = fz->bed_ids[0];

	if (victim) {
		/* exactly one reserved field or unknown flag */
		do
			f = &fields[c].f[rnd(fz, fields[c].n)];
		while (f->kind != F_RSV && f->kind != F_FLAGS);
		mutate(fz, fi, buf, f, true, md, sizeof(md));
		nmut = 1;
		nstrict = 1;
		len += snprintf(fz->what + len, sizeof(fz->what) - len, "%s",
				md);
	} else if (!rnd(fz, 5)) {
		rand_bytes = true;
		fill_random(fz, buf, sz);
		if (rnd(fz, 2))
			clear_strict(c, buf);
		len += snprintf(fz->what + len, sizeof(fz->what) - len,
				"random bytes");
	} else {
		nmut = rnd(fz, 5) ? 1 + rnd(fz, MAX_MUT) : 0;
		for (i = 0; i < nmut; i++) {
			f = &fields[c].f[rnd(fz, fields[c].n)];
			if (mutate(fz, fi, buf, f, false, md, sizeof(md)))
				nstrict++;
			kinds |= 1U << f->kind;
			if (len < sizeof(fz->what))
				len += snprintf(fz->what + len,
						sizeof(fz->what) - len,
						"%s%s", i ? ", " : "", md);
		}
		if (!nmut && len < sizeof(fz->what))
			len += snprintf(fz->what + len, sizeof(fz->what) - len,
					"valid");
	}
	make_safe(fz, c, buf);
	if (victim && rnd(fz, 4)) {
		pl = PL_HEAP;
		argp = memcpy((uint8_t *)fz->argw, buf, sz);
	} else if (victim) {
		pl = PL_NULL + rnd(fz, 5);
		argp = bad_arg(fz, pl, sz);
	} else {
		argp = place(fz, c, &pl, buf, sz);
	}
	if (len < sizeof(fz->what))
		snprintf(fz->what + len, sizeof(fz->what) - len, "; arg %s %p",
			 pl_names[pl], argp);

	/* what it must give */
	if (fi->rdonly && !victim && c != C_INFO) {
		expect_err(&x, EBADF, EBADF, "not opened for writing");
	} else if (pl >= PL_NULL) {
		if ((c == C_LISTEN || c == C_CONNECT) && !victim && !fi->setup)
			expect_err(&x, EFAULT, EINVAL,
				   "bad argument pointer, not set up");
		else
			expect_err(&x, EFAULT, EFAULT, "bad argument pointer");
	} else if (c == C_ATTACH) {
		x.kind = XP_FAIL;
		x.why = "never a block device";
		if (nstrict && nstrict == nmut && pl != PL_CQ)
			expect_err(&x, EINVAL, EINVAL,
				   "reserved field or unknown flag");
	} else if (pl == PL_CQ || rand_bytes) {
		/* anything */
	} else if (nstrict && nstrict == nmut && valid) {
		expect_err(&x, EINVAL, EINVAL,
			   "reserved field or unknown flag");
	} else if (c == C_INFO && !(kinds & ~(1U << F_OUT)) && pl != PL_RO) {
		x.kind = XP_OK;
		x.why = "output fields are ignored on input";
	} else if (c == C_SETUP && !nmut && valid && pl != PL_RO) {
		x.kind = XP_OK;
		x.why = "a valid first SETUP";
	} else if (c == C_CLOSE && !(kinds & ~(1U << F_ID))) {
		uint32_t id = ((struct kmsgr_close *)buf)->id;

		if (!id)
			expect_err(&x, ENOENT, ENOENT, "id 0");
		else if (fi_has(fi, id))
			expect_err(&x, 0, ENOENT, "its own object");
		else if (!fi->unknown_ids)
			expect_err(&x, ENOENT, ENOENT, "never its id");
	} else if (c == C_DETACH && !(kinds & ~(1U << F_ID)) &&
		   !fi->bdev_seen) {
		expect_err(&x, ENODEV, ENODEV, "no device attached");
	}

	watch(fz, buf, sz);
	unexpected = fz->unexpected;
	ret = ioctl(fd, cmds[c].cmd, argp);
	err = errno;
	count(fz, c, ret, err);
	if (victim)
		fz->bystander++;
	check(_metadata, fz, &x, ret, err);
	if (fz->unexpected != unexpected && unexpected < MAX_LOGGED) {
		hex(md, sizeof(md), buf, sz > 64 ? 64 : sz);
		TH_LOG("  argument (%zu bytes, first 64): %s", sz, md);
		if (sz > 64) {
			hex(md, sizeof(md), buf + 64, sz - 64 > 64 ? 64 : sz - 64);
			TH_LOG("  bytes 64-127: %s", md);
		}
		if (sz > 128) {
			hex(md, sizeof(md), buf + 128, sz - 128);
			TH_LOG("  bytes 128-: %s", md);
		}
	}
	if (ret < 0 || victim)
		return;
	if (c == C_SETUP || c == C_LISTEN || c == C_CONNECT ||
	    c == C_CLOSE || c == C_ATTACH)
		created(_metadata, fz, fi, c, argp, pl);
}

/* An unknown number, or a documented one with another size/direction. */
static void bad_cmd(struct __test_metadata *_metadata, struct fz *fz,
		    struct finst *fi, bool victim)
{
	unsigned int nr, dir, size, op;
	unsigned long cmd;
	struct expect x;
	const char *d;
	uint8_t *argp;
	int fd = victim ? fz->victim_fd : fi->fd, err;
	long ret;

	dir = rnd(fz, 4);
	size = rnd(fz, 2) ? (unsigned int)rnd(fz, 1 << 14) :
			    (unsigned int)cmds[rnd(fz, NR_CMDS)].size;
	if (rnd(fz, 2)) {
		op = OP_UNKNOWN;
		nr = 0x08 + rnd(fz, 0x100 - 0x08);
		cmd = _IOC(dir, KMSGR_IOC_MAGIC, nr, size);
		if (!rnd(fz, 8))
			cmd = rnd(fz, 2) ? 0 : _IOWR('x', 0, struct kmsgr_info);
	} else {
		op = OP_BADCMD;
		nr = rnd(fz, NR_CMDS);
		cmd = _IOC(dir, KMSGR_IOC_MAGIC, nr, size);
		if (cmd == cmds[nr].cmd)
			cmd = _IOC(dir, KMSGR_IOC_MAGIC, nr, size + 8);
	}
	argp = (uint8_t *)(uintptr_t)pick_ptr(fz, &d);
	if (!rnd(fz, 2)) {
		fill_random(fz, (uint8_t *)fz->argw, sizeof(fz->argw));
		argp = (uint8_t *)fz->argw;
		d = "random bytes";
	}
	snprintf(fz->what, sizeof(fz->what),
		 "ioctl %#lx (%s) on %s%s, arg %p (%s)", cmd, op_names[op],
		 victim ? "the bed's victim" : "instance",
		 !victim && fi->rdonly ? " (read-only)" : "", argp, d);
	/* on any fd: a read-only one refuses commands it knows (EBADF) */
	expect_err(&x, ENOTTY, ENOTTY, "unknown command");
	watch(fz, NULL, 0);
	ret = ioctl(fd, cmd, argp);
	err = errno;
	count(fz, op, ret, err);
	if (victim)
		fz->bystander++;
	check(_metadata, fz, &x, ret, err);
}

/* ---- mappings ----------------------------------------------------------------- */

static void fuzz_mmap(struct __test_metadata *_metadata, struct fz *fz,
		      struct finst *fi)
{
	static const int prots[] = {
		PROT_READ, PROT_READ | PROT_WRITE, PROT_WRITE, PROT_NONE,
		PROT_READ | PROT_EXEC, PROT_READ | PROT_WRITE | PROT_EXEC,
	};
	unsigned int r = rnd(fz, 3), i;
	uint64_t off, size = 0, len, rlen;
	int prot = prots[rnd(fz, ARRAY_SIZE(prots))], flags, err;
	struct expect x = { .kind = XP_ANY, .why = "" };
	void *p;

	switch (rnd(fz, 6)) {
	case 0:
	case 1:
	case 2:
		off = region_off[r];
		break;
	case 3:
		off = region_off[r] + (rnd(fz, 2) ? PG : -PG);
		break;
	case 4:
		off = PG * rnd(fz, 0x40000);
		break;
	default:
		off = rnd(fz, 2) ? 1ULL << 40 : 0x30000000ULL;
	}
	for (i = 0; i < 3; i++)
		if (fi->setup && off == region_off[i])
			size = fi->size[i];
	switch (rnd(fz, 7)) {
	case 0:
		len = 1;
		break;
	case 1:
		len = PG;
		break;
	case 2:
	case 3:
		len = size ? size : PG * (1 + rnd(fz, 8));
		break;
	case 4:
		len = (size ? size : PG) + PG;
		break;
	case 5:
		len = 1 + rnd(fz, 2 << 20);
		break;
	default:
		len = rnd(fz, 2) ? 0 : 1ULL << 34;
	}
	flags = rnd(fz, 4) ? MAP_SHARED : MAP_PRIVATE;
	if (!rnd(fz, 4))
		flags |= MAP_POPULATE;
	if (!rnd(fz, 8))
		flags |= MAP_NORESERVE;
	rlen = (len + PG - 1) & ~(PG - 1);
	snprintf(fz->what, sizeof(fz->what),
		 "mmap of instance%s%s: offset %#llx length %#llx (region %#llx) prot %#x flags %#x",
		 fi->rdonly ? " (read-only)" : "",
		 fi->setup ? " (set up)" : "", (unsigned long long)off,
		 (unsigned long long)len, (unsigned long long)size, prot,
		 flags);
	if (!fi->setup || !size || !(flags & MAP_SHARED) || !len ||
	    rlen > size) {
		x.kind = XP_FAIL;
		x.why = "not set up, not a region, private, or too long";
	} else if (!(prot & PROT_EXEC)) {
		x.kind = XP_OK;
		x.why = "a region, shared, not longer";
	}
	watch(fz, NULL, 0);
	p = mmap(NULL, len, prot, flags, fi->fd, off);
	err = errno;
	count(fz, OP_MMAP, p == MAP_FAILED ? -1 : 0, err);
	check(_metadata, fz, &x, p == MAP_FAILED ? -1 : 0, err);
	if (p == MAP_FAILED)
		return;
	if (prot & PROT_READ)
		(void)__atomic_load_n((uint8_t *)p, __ATOMIC_RELAXED);
	if ((prot & PROT_WRITE) && off == KMSGR_OFF_BUF)
		__atomic_store_n((uint8_t *)p, (uint8_t)fz->iter,
				 __ATOMIC_RELAXED);
	map_add(fz, p, len);
}

static void fuzz_munmap(struct __test_metadata *_metadata, struct fz *fz)
{
	unsigned int i;
	struct fmap *m;
	size_t len;
	long ret;
	void *p;

	if (!fz->nr_maps)
		return;
	i = rnd(fz, fz->nr_maps);
	m = &fz->maps[i];
	snprintf(fz->what, sizeof(fz->what), "munmap/mremap/mprotect of %p +%#zx",
		 m->addr, m->len);
	watch(fz, NULL, 0);
	switch (rnd(fz, 4)) {
	case 0:
		ret = munmap(m->addr, m->len);
		count(fz, OP_MUNMAP, ret, errno);
		*m = fz->maps[--fz->nr_maps];
		break;
	case 1:		/* the first page only */
		if (m->len <= PG)
			return;
		ret = munmap(m->addr, PG);
		count(fz, OP_MUNMAP, ret, errno);
		if (!ret) {
			m->addr = (uint8_t *)m->addr + PG;
			m->len -= PG;
		}
		break;
	case 2:
		len = m->len + PG * (1 + rnd(fz, 4));
		p = mremap(m->addr, m->len, len, MREMAP_MAYMOVE);
		count(fz, OP_MUNMAP, p == MAP_FAILED ? -1 : 0, errno);
		if (p != MAP_FAILED) {
			/* VM_DONTEXPAND: it must not grow */
			if (fz->unexpected++ < MAX_LOGGED)
				TH_LOG("iteration %lu: %s: mremap grew it",
				       fz->iter, fz->what);
			munmap(p, len);
			*m = fz->maps[--fz->nr_maps];
		}
		break;
	default:
		ret = mprotect(m->addr, m->len,
			       rnd(fz, 2) ? PROT_READ : PROT_NONE);
		count(fz, OP_MUNMAP, ret, errno);
	}
}

/* Scribble over our own rings: counters, SQEs, the kernel's fields. */
static void fuzz_rings(struct fz *fz, struct finst *fi)
{
	uint32_t *sq_tail, *cq_head, *cq_tail, t;
	struct kmsgr_sqe *sqe;
	unsigned int i, n;

	if (!fi->setup || !fi->map[0] || !fi->map[1])
		return;
	sq_tail = (uint32_t *)(fi->map[0] + fi->tail_off[0]);
	cq_head = (uint32_t *)(fi->map[1] + fi->head_off[1]);
	cq_tail = (uint32_t *)(fi->map[1] + fi->tail_off[1]);
	snprintf(fz->what, sizeof(fz->what), "ring writes");
	switch (rnd(fz, 5)) {
	case 0:		/* consume every CQE */
		t = __atomic_load_n(cq_tail, __ATOMIC_ACQUIRE);
		__atomic_store_n(cq_head, t, __ATOMIC_RELEASE);
		break;
	case 1:		/* random SQEs */
		t = __atomic_load_n(sq_tail, __ATOMIC_ACQUIRE);
		n = 1 + rnd(fz, 4);
		for (i = 0; i < n; i++) {
			sqe = (struct kmsgr_sqe *)(fi->map[0] +
						   fi->entries_off[0]) +
			      ((t + i) & (fi->entries[0] - 1));
			fill_random(fz, sqe, sizeof(*sqe));
			sqe->opcode = rnd(fz, 6);
			if (rnd(fz, 2))
				sqe->flags = 0;
			if (rnd(fz, 2))
				sqe->session = fi->nr_objs ?
					fi->objs[rnd(fz, fi->nr_objs)].id :
					fz->bed_ids[rnd(fz, 3)];
		}
		__atomic_store_n(sq_tail, t + n, __ATOMIC_RELEASE);
		break;
	case 2:
		__atomic_store_n(sq_tail, (uint32_t)kt_rand(&fz->rng),
				 __ATOMIC_RELEASE);
		break;
	case 3:
		__atomic_store_n(cq_head, (uint32_t)kt_rand(&fz->rng),
				 __ATOMIC_RELEASE);
		break;
	default:	/* the fields only the kernel writes */
		fill_random(fz, fi->map[rnd(fz, 2)] +
			    offsetof(struct kmsgr_ring, mask), 16);
	}
	count(fz, OP_RINGS, 0, 0);
}

/* ---- the test --------------------------------------------------------------- */

static int fz_init(struct __test_metadata *_metadata, struct fz *fz,
		   struct bed *b)
{
	int fd, p[2], i;

	for (i = 0; i < NR_FI; i++)
		fz->fi[i].fd = -1;
	fd = kmsgr_open_dev();
	if (fd < 0)
		return -errno;
	memset(&fz->info, 0, sizeof(fz->info));
	if (ioctl(fd, KMSGR_IOC_INFO, &fz->info)) {
		close(fd);
		return -errno;
	}
	close(fd);

	fz->area = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (fz->area == MAP_FAILED)
		return -errno;
	fz->rw = fz->area;
	fz->guard = fz->area + 2 * PG;
	fz->ro = fz->area + 3 * PG;
	fill_random(fz, fz->rw, 2 * PG);
	fill_random(fz, fz->ro, PG);
	fill_random(fz, fz->scratch, sizeof(fz->scratch));
	if (mprotect(fz->guard, PG, PROT_NONE) ||
	    mprotect(fz->ro, PG, PROT_READ))
		return -errno;

	for (i = 0; i < (int)ARRAY_SIZE(fz->keys); i++) {
		snprintf(fz->keys[i].name, sizeof(fz->keys[i].name),
			 "fuzz%d", i);
		fz->keys[i].entity_type = KT_ENTITY_CLIENT;
		fill_random(fz, fz->keys[i].key, sizeof(fz->keys[i].key));
	}
	fill_random(fz, fz->key, sizeof(fz->key));
	snprintf(fz->key_desc, sizeof(fz->key_desc), "kmsgr:client.none");

	/* file descriptors that are no block devices */
	if (pipe2(p, O_CLOEXEC))
		return -errno;
	fz->fds[fz->nr_fds++] = p[0];
	fz->fds[fz->nr_fds++] = p[1];
	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd >= 0)
		fz->fds[fz->nr_fds++] = fd;
	fd = memfd_create("kmsgr-fuzz", MFD_CLOEXEC);
	if (fd >= 0 && !ftruncate(fd, 1 << 20))
		fz->fds[fz->nr_fds++] = fd;
	else if (fd >= 0)
		close(fd);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0)
		fz->fds[fz->nr_fds++] = fd;
	fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0)
		fz->fds[fz->nr_fds++] = fd;
	fz->closed_fd = 999999;		/* above RLIMIT_NOFILE */

	fz->victim_fd = kmsgr_fd(b->h.victim.k);
	fz->fds[fz->nr_fds++] = fz->victim_fd;
	fz->bed_ids[0] = b->h.v_id;
	fz->bed_ids[1] = b->h.p_id;
	fz->bed_ids[2] = b->h.pl.id;
	fz->bed_port = ntohs(b->h.pl.bound.port);
	for (i = 0; i < NR_FI; i++)
		fi_open(_metadata, fz, &fz->fi[i]);
	return 0;
}

static void fz_fini(struct fz *fz)
{
	unsigned int i;

	for (i = 0; i < NR_FI; i++) {
		fz->fi[i].nr_objs = 0;
		fi_close(fz, &fz->fi[i]);
	}
	while (fz->nr_maps) {
		fz->nr_maps--;
		munmap(fz->maps[fz->nr_maps].addr, fz->maps[fz->nr_maps].len);
	}
	for (i = 0; i < (unsigned int)fz->nr_fds; i++)
		if (fz->fds[i] != fz->victim_fd)
			close(fz->fds[i]);
	fz->nr_fds = 0;
	if (fz->area && fz->area != MAP_FAILED)
		munmap(fz->area, 4 * PG);
	fz->area = NULL;
}

static void histogram(struct __test_metadata *_metadata, struct fz *fz)
{
	char line[512];
	unsigned int op, e;
	size_t n;

	for (op = 0; op < NR_OPS; op++) {
		n = 0;
		line[0] = 0;
		for (e = 0; e <= NR_ERRNO && n < sizeof(line); e++) {
			if (!fz->counts[op][e])
				continue;
			n += snprintf(line + n, sizeof(line) - n, " %s %u",
				      e == NR_ERRNO ? "other" :
				      e ? ename(e) : "ok",
				      fz->counts[op][e]);
		}
		if (line[0])
			TH_LOG("%-22s%s", op_names[op], line);
	}
}

/* A new pair of instances still works: SETUP, LISTEN, CONNECT, a message. */
static void fresh_pair(struct __test_metadata *_metadata)
{
	struct kt_plan one = {
		.count = 1, .max_log2 = 12, .small_log2 = 12,
		.big_one_in = 1, .seed = 0xf1e5,
	};
	struct kt_inst srv, cli;
	struct kmsgr_listen l;
	struct kt_stream st;
	struct kt_loop lp;
	uint32_t cid, sid;

	memset(&st, 0, sizeof(st));
	kt_loop_init(&lp);
	ASSERT_EQ(0, kt_inst_open(&srv, "fresh-server", 16, 256 << 10,
				  256 << 10, 5));
	ASSERT_EQ(0, kt_inst_open(&cli, "fresh-client", 16, 256 << 10,
				  256 << 10, 6));
	kt_loop_add(&lp, &srv);
	kt_loop_add(&lp, &cli);
	ASSERT_EQ(0, kt_listen(&srv, "127.0.0.1", 0, 0xf5, &l));
	ASSERT_EQ(0, kt_connect(&cli, &l.bound, 0, KT_PEER_ANY, 0xfc, &cid));
	ASSERT_EQ(0, kt_wait_pair(&lp, &cli, cid, &srv, &sid, SETUP_MS));
	ASSERT_EQ(0, kt_stream_init(&st, &cli, cid, &srv, sid, &one, 1));
	kt_loop_add_stream(&lp, &st);
	EXPECT_EQ(0, kt_loop_run(&lp, kt_loop_streams_finished, SETUP_MS));
	EXPECT_EQ(0, st.failed) TH_LOG("fresh pair: %s", st.why);
	EXPECT_EQ(1, st.received);
	kt_inst_close(&cli);
	kt_inst_close(&srv);
	kt_stream_free(&st);
}

FIXTURE(ioctl_fuzz) {
	const char *why;
	struct bed b;
	struct fz *fz;
};

FIXTURE_SETUP(ioctl_fuzz)
{
	self->fz = NULL;
	self->why = kt_bed_missing();
	if (self->why)
		return;
	ASSERT_EQ(0, kt_bed_open(&self->b.h));
}

FIXTURE_TEARDOWN(ioctl_fuzz)
{
	if (self->fz) {
		fz_fini(self->fz);
		free(self->fz);
	}
	if (!self->why)
		bed_fini(&self->b);
}

TEST_F_TIMEOUT(ioctl_fuzz, random_calls, 600)
{
	struct sigaction sa = { .sa_handler = watchdog };
	struct bed *b = &self->b;
	long secs = kt_env_long("KMSGR_IOCTL_FUZZ_SECONDS", 30);
	long iters = kt_env_long("KMSGR_IOCTL_FUZZ_ITERS", 20000);
	struct finst *fi;
	unsigned int r;
	sigset_t set, old;
	uint64_t end;
	long base;
	struct fz *fz;

	if (self->why)
		SKIP(return, "%s", self->why);
	if (secs < 1 || secs > MAX_SECONDS) {
		TH_LOG("KMSGR_IOCTL_FUZZ_SECONDS %ld: using %d", secs,
		       MAX_SECONDS);
		secs = MAX_SECONDS;
	}
	fz = calloc(1, sizeof(*fz));
	ASSERT_NE(NULL, fz);
	self->fz = fz;
	fz->seed = (uint64_t)kt_env_long("KMSGR_IOCTL_FUZZ_SEED",
					 (long)(time(NULL) ^ getpid()));
	fz->rng = fz->seed;
	TH_LOG("seed %llu (KMSGR_IOCTL_FUZZ_SEED), %ld s, %ld iterations",
	       (unsigned long long)fz->seed, secs, iters);

	base = kmsgr_instances();
	ASSERT_EQ(0, fz_init(_metadata, fz, b));

	/* the bed runs on its own thread; the watchdog's signal comes here */
	sigemptyset(&set);
	sigaddset(&set, SIGALRM);
	ASSERT_EQ(0, pthread_sigmask(SIG_BLOCK, &set, &old));
	b->running = !pthread_create(&b->thread, NULL, bed_thread, b);
	ASSERT_EQ(0, pthread_sigmask(SIG_SETMASK, &old, NULL));
	ASSERT_TRUE(b->running);
	ASSERT_EQ(0, sigaction(SIGALRM, &sa, NULL));
	alarm(secs + WATCHDOG_S);

	end = kt_now_ms() + 1000ULL * secs;
	for (fz->iter = 0; fz->iter < (unsigned long)iters; fz->iter++) {
		if (!(fz->iter % 8) && kt_now_ms() >= end)
			break;
		fi = &fz->fi[rnd(fz, NR_FI)];
		if (fi->fd < 0) {
			fi_open(_metadata, fz, fi);
			if (fi->fd < 0)
				break;
			continue;
		}
		r = rnd(fz, 1000);
		if (r < 5) {
			snprintf(wd_what, sizeof(wd_what), "close of an instance");
			fi_close(fz, fi);
			fi_open(_metadata, fz, fi);
		} else if (r < 65) {
			fuzz_mmap(_metadata, fz, fi);
		} else if (r < 95) {
			fuzz_munmap(_metadata, fz);
		} else if (r < 115) {
			fuzz_rings(fz, fi);
		} else if (r < 125) {
			one_cmd(_metadata, fz, fi, true);
		} else if (r < 130) {
			bad_cmd(_metadata, fz, fi, true);
		} else if (r < 250) {
			bad_cmd(_metadata, fz, fi, false);
		} else {
			one_cmd(_metadata, fz, fi, false);
		}
		if (__atomic_load_n(&b->err, __ATOMIC_RELAXED) ||
		    __atomic_load_n(&b->h.out.failed, __ATOMIC_RELAXED) ||
		    __atomic_load_n(&b->h.in.failed, __ATOMIC_RELAXED))
			break;
	}
	alarm(0);
	snprintf(wd_what, sizeof(wd_what), "the checks after the loop");
	alarm(WATCHDOG_S * 2);

	TH_LOG("%lu iterations, %u calls (%u to the bed), %u listeners/sessions made",
	       fz->iter, fz->calls, fz->bystander, fz->created);
	histogram(_metadata, fz);
	EXPECT_EQ(0, fz->unexpected)
		TH_LOG("unexpected results (the first %d are logged above); seed %llu",
		       MAX_LOGGED, (unsigned long long)fz->seed);

	/* every fuzz instance goes away */
	fz_fini(fz);
	if (base >= 0)
		EXPECT_EQ(base, kmsgr_instances());

	/* the healthy session never noticed, and was busy all along */
	bed_stop(b);
	TH_LOG("healthy session during the loop: %u messages out, %u in",
	       b->h.out.received, b->h.in.received);
	EXPECT_LT(0, b->h.out.received);
	EXPECT_LT(0, b->h.in.received);
	EXPECT_EQ(0, b->err) TH_LOG("bed loop: %s", kmsgr_strerror(b->err));
	EXPECT_EQ(0, kt_bed_progress(&b->h, 20, 30000));
	EXPECT_EQ(0, b->h.out.failed) TH_LOG("victim->peer: %s", b->h.out.why);
	EXPECT_EQ(0, b->h.in.failed) TH_LOG("peer->victim: %s", b->h.in.why);
	EXPECT_EQ(NULL, kt_find_event(&b->h.lp, &b->h.victim, b->h.v_id,
				      KMSGR_EV_DOWN, 0));
	EXPECT_EQ(NULL, kt_find_event(&b->h.lp, &b->h.victim, b->h.v_id,
				      KMSGR_EV_CLOSED, 0));
	EXPECT_EQ(0, b->h.lp.stray) TH_LOG("%s", b->h.lp.stray_why);
	TH_LOG("healthy session at the end: %u messages out, %u in",
	       b->h.out.received, b->h.in.received);

	/* and the module still works */
	fresh_pair(_metadata);
	alarm(0);
}

TEST_HARNESS_MAIN
