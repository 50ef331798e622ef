// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr selftests - polled block I/O (KMSGR_BDEV_F_POLL) and the netlink
 * dump of block devices, on null_blk devices this program makes itself
 * (configfs) and a device-mapper device over one (dmsetup).
 *
 *  split_polled_op_sleeps    null_blk with a poll queue, timer completion
 *                            after 500 ms and 4 KiB commands: a polled
 *                            4 KiB READ (one bio, on the poll queue)
 *                            completes with 0 in under 250 ms; a polled
 *                            64 KiB READ, which the block layer splits
 *                            (split bios are not polled: they end by the
 *                            500 ms timer), waited for by one ENTER:
 *                            res 0, the ENTER takes 400 ms or more of
 *                            wall time and under a quarter of that in
 *                            CPU time of its thread (it sleeps; it used
 *                            to spin)
 *  dm_device_not_polled      a dm device of two linear targets (one READ
 *                            crosses their seam) over a polled null_blk
 *                            (queue/io_poll 1): ATTACH with F_POLL fails
 *                            EOPNOTSUPP (device mapper may submit a bio
 *                            of ours again, still polled, from its own
 *                            workers, where it builds the bio's poll
 *                            state while our poller reads it); attached
 *                            without it, 8 4 KiB READs complete with 0
 *                            and the bytes written before
 *  polled_op_behind_a_slow_batch
 *                            (KMSGR_FAULT=y) a dm "delay" device (2000
 *                            ms) over a polled null_blk, polled through
 *                            the fault point BDEV_POLL_DM, and that
 *                            null_blk itself: 8
 *                            polled READs on the dm device, then one on
 *                            the null_blk, then ENTERs with GETEVENTS and
 *                            min_complete 0 (a poll pass each): the
 *                            null_blk READ's CQE comes first, res 0, in
 *                            under 1000 ms (a pass polls at most 8 bios,
 *                            and the next one starts after them; when
 *                            every pass took the first 8 listed, it
 *                            waited for the delayed 8)
 *  stalled_polled_op_sleeps  (KMSGR_FAULT=y) a dm-delay device (1000 ms)
 *                            polled as above: an ENTER waiting for a
 *                            polled READ there takes 0.9 s or more and
 *                            under a quarter of that in CPU (it stops
 *                            spinning 20 ms after the last CQE), and the
 *                            READ completes with 0
 *  stale_cookie_after_queue_shrink
 *                            (KMSGR_FAULT=y) null_blk with 2 submit queues
 *                            and a poll queue (hardware context 2),
 *                            io_timeout 100 ms; the poller held 3 s after
 *                            it took its bio references and entered
 *                            their queues: the polled READ ends by the
 *                            request timeout (its CQE -ETIMEDOUT, the
 *                            ENTER returns 1); the hardware contexts go
 *                            from 3 to 2 only after the poller woke (the
 *                            shrink's queue freeze waits for it), and
 *                            then a polled READ completes with 0.  The
 *                            poller must not poll the finished bio's
 *                            stale cookie once context 2 is gone (a NULL
 *                            dereference, the guest oopses): it polls
 *                            while the context is there, and finds no
 *                            cookie left on the bio that ended
 *  netlink_dump_not_held_by_a_stuck_submit
 *                            null_blk with one tag and 2 s completions:
 *                            an ENTER submitting 3 READs sleeps in
 *                            submit_bio() for the tag, under the
 *                            instance's submit lock; a netlink dump of
 *                            the block devices meanwhile ends in under
 *                            1000 ms, before that ENTER returns, and
 *                            lists the device with an op in flight; the
 *                            3 READs complete with 0
 *
 * Every test makes its own null_blk device (configfs: a directory, its
 * attributes, power 1; its disk is named after the directory where
 * null_blk does so, else nullb<index>) and tears it down in the
 * fixture's teardown, after a failure too.  The module null_blk is
 * loaded (with nr_devices=0 and its default poll_queues=1) when
 * /sys/kernel/config/nullb is missing; without it, without dmsetup for
 * the dm test (tools/deps installs it), or without a KMSGR_FAULT=y
 * module for the stale-cookie test, a test SKIPs saying so (make check
 * counts a skip as a failure).
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "kmsgr_selftest.h"
#include "kmsgr_ring_util.h"
#include "kmsgr_bdev_util.h"

#define KIB		1024U
#define SQ_ENTRIES	16		/* CQ 64 */
#define TX_SIZE		(1024U * KIB)	/* READ targets */
#define POISON		0x5a

#define NB_CONFIGFS	"/sys/kernel/config/nullb"
#define NB_SIZE_MIB	16
#define STR_(x)		#x
#define STR(x)		STR_(x)
#define DM_NAME		"kmsgr-nullb-dm"

/* kmod/kmsgr.h enum kmsgr_fault_point */
#define FAULT_BDEV_POLL		(1U << 4)
#define FAULT_BDEV_POLL_DM	(1U << 21)

/* split_polled_op_sleeps */
#define SPLIT_TIMER_MS	500		/* null_blk's completion_nsec */
#define SPLIT_LEN	(64 * KIB)	/* 16 commands of max_sectors 8 */
#define SPLIT_MIN_MS	400		/* the wait for the timer, at least */
#define CONTROL_MAX_MS	250		/* a polled READ, at most */

/* dm_device_not_polled */
#define DM_READS	8
#define DM_SPAN		(64 * KIB)	/* written first, then read */
#define DM_SEAM		66		/* sector: the READ at 32 KiB crosses */

/* polled_op_behind_a_slow_batch */
#define SLOW_DELAY_MS	2000		/* dm-delay's read delay */
#define SLOW_READS	8		/* KMSGR_POLL_BATCH */
#define SLOW_MAX_MS	(SLOW_DELAY_MS / 2)	/* the READ behind them */

/* stalled_polled_op_sleeps */
#define STALL_MS	1000		/* dm-delay's read delay */

/* stale_cookie_after_queue_shrink */
#define STALE_DELAY_MS	3000		/* the poller's hold (fault_delay_us) */
#define STALE_HELD_MS	(STALE_DELAY_MS * 5 / 4 + 500)	/* usleep_range() */
#define STALE_TIMEOUT_MS 100		/* queue/io_timeout (a second, rounded) */
#define STALE_CQE_MS	10000		/* the request timeout's CQE, at most */

/* netlink_dump_not_held_by_a_stuck_submit */
#define STUCK_READS	3
#define STUCK_TIMER_MS	2000		/* null_blk's completion_nsec */
#define STUCK_START_MS	500		/* ENTER is stuck by then */
#define DUMP_MAX_MS	1000

/* writes_not_throttled_as_writeback */
#define WBT_WRITES	SQ_ENTRIES	/* more than wbt lets through */
#define WBT_TIMER_MS	1000		/* null_blk's completion_nsec */

/* user_data: a tag in the high half, a number in the low one */
#define UD(tag, n)	(((uint64_t)(tag) << 32) | (uint32_t)(n))
#define TAG_READ	0xc0

/* null_blk's attributes every device here has: data reads back */
static const char *const nb_base[] = {
	"size=" STR(NB_SIZE_MIB), "memory_backed=1", "blocksize=512", NULL
};

/* ---- helpers ------------------------------------------------------------- */

static uint64_t clock_us(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* Run the shell command @cmd: its exit status, or -1. */
static int run_cmd(const char *cmd)
{
	int st = system(cmd);

	return st < 0 || !WIFEXITED(st) ? -1 : WEXITSTATUS(st);
}

/* /sys/block/@disk/@rel into @buf: 0 or -errno. */
static int block_attr(const char *disk, const char *rel, char *buf,
		      size_t len)
{
	char path[160];

	snprintf(path, sizeof(path), "/sys/block/%s/%s", disk, rel);
	return kmsgr_read_line(path, buf, len);
}

/* Hardware contexts of @disk (its /sys/block/DISK/mq entries), or -1. */
static int nr_hctx(const char *disk)
{
	struct dirent *e;
	char path[96];
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/sys/block/%s/mq", disk);
	d = opendir(path);
	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Why the tests cannot run here, or NULL; loads null_blk when missing. */
static const char *nullb_missing(void)
{
	const char *why = kmsgr_missing(1);

	if (!why && bdev_unsupported())
		why = "the module has no KMSGR_FEAT_BDEV";
	if (!why && access(NB_CONFIGFS, F_OK) &&
	    (run_cmd("modprobe null_blk nr_devices=0 2>/dev/null") ||
	     access(NB_CONFIGFS, F_OK)))
		why = "no " NB_CONFIGFS ": modprobe null_blk failed, or configfs is not mounted";
	return why;
}

/* A null_blk device made through configfs. */
struct nullb {
	char dir[96];		/* its configfs directory; "" when none */
	char name[40];		/* its disk (/sys/block/NAME) */
	char dev[56];		/* /dev/NAME */
	bool on;		/* power is 1 */
};

/* Write "@attr=value" to the attribute of @nb's directory: 0 or -errno. */
static int nullb_set(const struct nullb *nb, const char *attr)
{
	const char *eq = strchr(attr, '=');
	char path[192];

	if (!eq)
		return -EINVAL;
	snprintf(path, sizeof(path), "%s/%.*s", nb->dir, (int)(eq - attr),
		 attr);
	return kmsgr_write_line(path, eq + 1);
}

/* Read the attribute @attr of @nb into @buf: 0 or -errno. */
static int nullb_get(const struct nullb *nb, const char *attr, char *buf,
		     size_t len)
{
	char path[192];

	snprintf(path, sizeof(path), "%s/%s", nb->dir, attr);
	return kmsgr_read_line(path, buf, len);
}

/* Write each "attribute=value" of the NULL-terminated @attrs to @nb. */
static void nullb_set_all(struct __test_metadata *_metadata,
			  const struct nullb *nb, const char *const *attrs)
{
	int ret;

	for (; *attrs; attrs++) {
		ret = nullb_set(nb, *attrs);
		ASSERT_EQ(0, ret) TH_LOG("null_blk %s: %s: %s", nb->dir,
					 *attrs, strerror(-ret));
	}
}

/*
 * Make a null_blk device of nb_base and then @attrs ("attribute=value",
 * NULL-terminated, in order), power it on and wait for its node.
 */
static void nullb_create(struct __test_metadata *_metadata, struct nullb *nb,
			 const char *const *attrs)
{
	static unsigned int seq;
	char path[sizeof(nb->dir)], idx[16];
	struct stat st;
	uint64_t end;
	int ret;

	snprintf(nb->name, sizeof(nb->name), "kmsgrnb%d_%u", (int)getpid(),
		 seq++);
	snprintf(path, sizeof(path), NB_CONFIGFS "/%s", nb->name);
	ASSERT_EQ(0, mkdir(path, 0755))
		TH_LOG("mkdir %s: %s", path, strerror(errno));
	memcpy(nb->dir, path, sizeof(nb->dir));
	nullb_set_all(_metadata, nb, nb_base);
	nullb_set_all(_metadata, nb, attrs);
	ret = nullb_set(nb, "power=1");
	ASSERT_EQ(0, ret) TH_LOG("null_blk %s: power=1: %s", nb->dir,
				 strerror(-ret));
	nb->on = true;

	/* the disk is named after the directory, or (older) nullbN */
	snprintf(path, sizeof(path), "/sys/block/%s", nb->name);
	if (access(path, F_OK)) {
		ASSERT_EQ(0, nullb_get(nb, "index", idx, sizeof(idx)));
		snprintf(nb->name, sizeof(nb->name), "nullb%s", idx);
	}
	snprintf(nb->dev, sizeof(nb->dev), "/dev/%s", nb->name);
	for (end = kt_now_ms() + 5000; stat(nb->dev, &st) || !S_ISBLK(st.st_mode);
	     usleep(10000))
		ASSERT_GT(end, kt_now_ms())
			TH_LOG("null_blk %s: no block device %s after 5 s",
			       nb->dir, nb->dev);
}

/* Power @nb off and remove its directory: 0, or the first -errno. */
static int nullb_destroy(struct nullb *nb)
{
	int ret = 0;

	if (nb->on)
		ret = nullb_set(nb, "power=0");
	nb->on = false;
	if (nb->dir[0] && rmdir(nb->dir) && !ret)
		ret = -errno;
	nb->dir[0] = '\0';
	return ret;
}

/* The dm-N disk of the device-mapper device @name: 0, or -ENOENT. */
static int dm_disk(const char *name, char *out, size_t len)
{
	char path[300], buf[128];
	struct dirent *e;
	int ret = -ENOENT;
	DIR *d;

	d = opendir("/sys/block");
	if (!d)
		return -errno;
	while (ret && (e = readdir(d))) {
		if (strncmp(e->d_name, "dm-", 3))
			continue;
		snprintf(path, sizeof(path), "/sys/block/%s/dm/name",
			 e->d_name);
		if (!kmsgr_read_line(path, buf, sizeof(buf)) &&
		    !strcmp(buf, name) && strlen(e->d_name) < len) {
			memcpy(out, e->d_name, strlen(e->d_name) + 1);
			ret = 0;
		}
	}
	closedir(d);
	return ret;
}

/*
 * One ENTER, timed: what is queued is submitted with GETEVENTS and a wait
 * for @min_complete CQEs (kmsgr_submit(), one ioctl); with @min_complete
 * 0 it is submitted (kmsgr_submit() without a wait polls nothing), then
 * one ENTER with GETEVENTS and min_complete 0 polls once, which libkmsgr
 * never asks for.
 */
struct enter_call {
	struct kt_inst *ti;
	unsigned int min_complete, timeout_ms;
	int ret;		/* SQEs consumed, or -errno */
	uint64_t wall_us;	/* CLOCK_MONOTONIC */
	uint64_t cpu_us;	/* CLOCK_THREAD_CPUTIME_ID of the caller */
	int done;		/* set when it returned (atomic) */
};

static void enter_call(struct enter_call *c)
{
	struct kmsgr_enter e = { .flags = KMSGR_ENTER_F_GETEVENTS };
	struct kmsgr *k = c->ti->k;
	uint64_t wall, cpu;

	wall = clock_us(CLOCK_MONOTONIC);
	cpu = clock_us(CLOCK_THREAD_CPUTIME_ID);
	if (c->min_complete) {
		c->ret = kmsgr_submit(k, c->min_complete,
				      c->timeout_ms * 1000000ULL);
	} else {
		c->ret = kmsgr_sq_pending(k) ? kmsgr_submit(k, 0, 0) : 0;
		if (c->ret >= 0 && ioctl(kmsgr_fd(k), KMSGR_IOC_ENTER, &e) < 0)
			c->ret = -errno;
	}
	c->cpu_us = clock_us(CLOCK_THREAD_CPUTIME_ID) - cpu;
	c->wall_us = clock_us(CLOCK_MONOTONIC) - wall;
	__atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
}

static void *enter_thread(void *arg)
{
	enter_call(arg);
	return NULL;
}

FIXTURE(nullb) {
	const char *why;	/* set: SKIP with this reason */
	struct kt_inst ti;
	struct nullb nb;
	char dm[32];		/* the dm disk (dm-N), "" when none */
	bool dm_made;		/* DM_NAME was created */
	int dfd;		/* a device, O_RDWR | O_DIRECT */
	uint8_t *bounce;	/* BOUNCE bytes, page-aligned */
	uint64_t rng;
	int kmsg;
	struct enter_call bg;	/* an ENTER in a thread */
	pthread_t bg_thread;
	bool bg_live;		/* bg_thread to join */
};

FIXTURE_SETUP(nullb)
{
	self->dfd = -1;
	self->kmsg = -1;
	kmsgr_faults_off();
	self->why = nullb_missing();
	if (self->why)
		return;
	self->rng = test_seed();
	self->kmsg = kt_kmsg_open();
	ASSERT_EQ(0, posix_memalign((void **)&self->bounce, 4096, BOUNCE));
	ASSERT_EQ(0, kt_inst_open(&self->ti, "nullb", SQ_ENTRIES, TX_SIZE,
				  KMSGR_POOL_MIN, self->rng));
}

FIXTURE_TEARDOWN(nullb)
{
	int ret;

	kmsgr_faults_off();
	if (self->bg_live)
		pthread_join(self->bg_thread, NULL);
	if (self->dfd >= 0)
		close(self->dfd);
	if (self->ti.k)
		kt_inst_close(&self->ti);
	if (self->dm_made)
		EXPECT_EQ(0, run_cmd("dmsetup remove --retry " DM_NAME " >&2"))
			TH_LOG("dmsetup remove " DM_NAME " failed");
	ret = nullb_destroy(&self->nb);
	EXPECT_EQ(0, ret) TH_LOG("null_blk teardown: %s", strerror(-ret));
	dev_close(_metadata, -1, self->bounce, self->kmsg);
}

/* Start @self->bg: an ENTER in a thread. */
static void bg_start(struct __test_metadata *_metadata,
		     FIXTURE_DATA(nullb) *self, unsigned int min_complete,
		     unsigned int timeout_ms)
{
	self->bg = (struct enter_call){
		.ti = &self->ti,
		.min_complete = min_complete,
		.timeout_ms = timeout_ms,
	};
	ASSERT_EQ(0, pthread_create(&self->bg_thread, NULL, enter_thread,
				    &self->bg));
	self->bg_live = true;
}

static void bg_join(FIXTURE_DATA(nullb) *self)
{
	pthread_join(self->bg_thread, NULL);
	self->bg_live = false;
}

/*
 * DM_NAME (a stale one removed first) with @table, over @self->nb; its
 * queue must poll (queue/io_poll 1): its disk (dm-N) in @self->dm, its
 * node in @path.
 */
static void dm_make(struct __test_metadata *_metadata,
		    FIXTURE_DATA(nullb) *self, const char *table, char *path,
		    size_t len)
{
	char cmd[320], poll[16];
	int ret;

	run_cmd("modprobe dm_mod 2>/dev/null");
	run_cmd("dmsetup remove --retry " DM_NAME " >/dev/null 2>&1");
	snprintf(cmd, sizeof(cmd),
		 "printf '%s' | dmsetup create --noudevsync " DM_NAME " >&2",
		 table);
	ret = run_cmd(cmd);
	ASSERT_EQ(0, ret) TH_LOG("%s: exit status %d", cmd, ret);
	self->dm_made = true;
	ASSERT_EQ(0, dm_disk(DM_NAME, self->dm, sizeof(self->dm)))
		TH_LOG("no /sys/block/dm-*/dm/name says " DM_NAME);
	ASSERT_EQ(0, block_attr(self->dm, "queue/io_poll", poll, sizeof(poll)));
	ASSERT_EQ(0, strcmp(poll, "1"))
		TH_LOG("%s (" DM_NAME " over %s): queue/io_poll is %s, not 1",
		       self->dm, self->nb.dev, poll);
	snprintf(path, len, "/dev/%s", self->dm);
}

/*
 * A polled null_blk in @self->nb, and DM_NAME over the whole of it as
 * two linear targets meeting at DM_SEAM, so that a READ across it is
 * split by device mapper into two clones; its queue polls (dm_make()).
 */
static void dm_create(struct __test_metadata *_metadata,
		      FIXTURE_DATA(nullb) *self, char *path, size_t len)
{
	static const char *const cfg[] = {
		"poll_queues=1", "irqmode=0", NULL
	};
	char table[200];

	nullb_create(_metadata, &self->nb, cfg);
	snprintf(table, sizeof(table),
		 "0 %u linear %s 0\\n%u %u linear %s %u\\n",
		 DM_SEAM, self->nb.dev, DM_SEAM, NB_SIZE_MIB * 2048 - DM_SEAM,
		 self->nb.dev, DM_SEAM);
	dm_make(_metadata, self, table, path, len);
}

/* Why the dm tests cannot run here, or NULL. */
static const char *dm_missing(FIXTURE_DATA(nullb) *self)
{
	if (self->why)
		return self->why;
	if (run_cmd("command -v dmsetup >/dev/null 2>&1"))
		return "dmsetup is not installed (tools/deps installs it)";
	return NULL;
}

/* Attach @path O_RDWR with @flags; F_POLL must be granted. */
static void attach(struct __test_metadata *_metadata,
		   FIXTURE_DATA(nullb) *self, const char *path, uint32_t flags,
		   struct kmsgr_bdev *b)
{
	char pq[16] = "?";
	int ret;

	ret = attach_path(self->ti.k, path, O_RDWR, flags, b);
	if (ret == -EOPNOTSUPP)
		kmsgr_read_line("/sys/module/null_blk/parameters/poll_queues",
				pq, sizeof(pq));
	ASSERT_EQ(0, ret) TH_LOG("ATTACH_BDEV %s (flags %#x): %s%s%s", path,
				 flags, strerror(-ret),
				 ret == -EOPNOTSUPP ?
				 ": no poll queue; null_blk's poll_queues is " :
				 "", ret == -EOPNOTSUPP ? pq : "");
	ASSERT_EQ(!!(flags & KMSGR_BDEV_F_POLL),
		  !!(b->attrs & KMSGR_BDEV_A_POLL))
		TH_LOG("attrs %#x: KMSGR_BDEV_A_POLL as F_POLL asked", b->attrs);
}

/* Queue a READ of @len at @dev_off into the area at @off, UD(TAG_READ, @n). */
static void queue_read(struct __test_metadata *_metadata,
		       FIXTURE_DATA(nullb) *self, uint32_t id,
		       uint64_t dev_off, uint32_t off, uint32_t len,
		       unsigned int n)
{
	struct kmsgr_sqe s = bdev_sqe(KMSGR_OP_BDEV_READ, id, dev_off, off, len,
				      UD(TAG_READ, n));

	memset(self->ti.buf + off, POISON, len);
	ASSERT_EQ(0, queue_sqe(&self->ti, &s)) TH_LOG("the SQ is full");
}

/* The next CQE, within @ms: a READ's, UD(TAG_READ, n); its res; *@n. */
static int read_cqe(struct __test_metadata *_metadata,
		    FIXTURE_DATA(nullb) *self, int ms, unsigned int *n,
		    const char *what)
{
	struct kmsgr_cqe c;

	if (next_cqe(&self->ti, &c, ms)) {
		TH_LOG("%s: no CQE within %d ms", what, ms);
		return NO_CQE;
	}
	EXPECT_EQ(KMSGR_CQE_OP, c.kind) TH_LOG("%s: CQE kind", what);
	EXPECT_EQ(TAG_READ, c.user_data >> 32)
		TH_LOG("%s: a CQE of user_data %#llx", what,
		       (unsigned long long)c.user_data);
	*n = (uint32_t)c.user_data;
	return c.res;
}

/*
 * A READ of @len at @dev_off into the area at @off, submitted and waited
 * for by one ENTER (*@c: how long it took); its CQE must say @res.
 */
static void read_waited(struct __test_metadata *_metadata,
			FIXTURE_DATA(nullb) *self, uint32_t id,
			uint64_t dev_off, uint32_t off, uint32_t len, int res,
			struct enter_call *c, const char *what)
{
	unsigned int n;
	int got;

	queue_read(_metadata, self, id, dev_off, off, len, 0);
	*c = (struct enter_call){
		.ti = &self->ti,
		.min_complete = 1,
		.timeout_ms = OP_MS,
	};
	enter_call(c);
	EXPECT_EQ(1, c->ret) TH_LOG("%s: ENTER returned %d (%s), not 1", what,
				    c->ret, c->ret < 0 ? strerror(-c->ret) : "");
	got = read_cqe(_metadata, self, 1000, &n, what);
	EXPECT_EQ(res, got)
		TH_LOG("%s: %s, expected %s", what,
		       got == NO_CQE ? "no CQE" : got ? strerror(-got) : "0",
		       res ? strerror(-res) : "0");
}

/* ATTACH of the dm device @path with F_POLL must fail EOPNOTSUPP. */
static void dm_not_polled(struct __test_metadata *_metadata,
			  FIXTURE_DATA(nullb) *self, const char *path,
			  struct kmsgr_bdev *b)
{
	int ret = attach_path(self->ti.k, path, O_RDWR, KMSGR_BDEV_F_POLL, b);

	EXPECT_EQ(-EOPNOTSUPP, ret)
		TH_LOG("ATTACH_BDEV %s (device mapper) with F_POLL: %s, expected EOPNOTSUPP",
		       path, ret ? strerror(-ret) : "granted");
}

/*
 * A polled null_blk in @self->nb and DM_NAME over it, a dm-delay device
 * that holds every bio @delay_ms, attached polled in @b (its node in
 * @path) through the fault point BDEV_POLL_DM: device mapper is not
 * polled otherwise (ATTACH with F_POLL fails EOPNOTSUPP, checked first).
 * Never suspended nor throttled here, so device mapper submits no bio of
 * ours from its own workers.
 */
static void delay_make(struct __test_metadata *_metadata,
		       FIXTURE_DATA(nullb) *self, unsigned int delay_ms,
		       char *path, size_t len, struct kmsgr_bdev *b)
{
	static const char *const cfg[] = {
		"poll_queues=1", "irqmode=0", NULL
	};
	char table[200];

	nullb_create(_metadata, &self->nb, cfg);
	run_cmd("modprobe dm_delay 2>/dev/null");
	snprintf(table, sizeof(table), "0 %u delay %s 0 %u\\n",
		 NB_SIZE_MIB * 2048, self->nb.dev, delay_ms);
	dm_make(_metadata, self, table, path, len);
	dm_not_polled(_metadata, self, path, b);
	ASSERT_EQ(0, kmsgr_set_faults(FAULT_BDEV_POLL_DM, 0));
	attach(_metadata, self, path, KMSGR_BDEV_F_POLL, b);
	kmsgr_faults_off();
}

/* ---- the tests ----------------------------------------------------------- */

/*
 * A polled op whose bio the block layer splits completes by interrupt
 * (bio_split_rw() clears REQ_POLLED): the ENTER that waits for it must
 * sleep, not spin polling a device where nothing of it is.
 */
TEST_F_TIMEOUT(nullb, split_polled_op_sleeps, 60)
{
	static const char *const cfg[] = {
		"poll_queues=1", "irqmode=2",
		"completion_nsec=" STR(SPLIT_TIMER_MS) "000000",
		"max_sectors=8", NULL
	};
	struct enter_call c;
	struct kmsgr_bdev b;

	if (self->why)
		SKIP(return, "%s", self->why);
	nullb_create(_metadata, &self->nb, cfg);
	attach(_metadata, self, self->nb.dev, KMSGR_BDEV_F_POLL, &b);

	/* one 4 KiB bio: on the poll queue, no timer, done when polled */
	read_waited(_metadata, self, b.id, 0, 0, 4 * KIB, 0, &c,
		    "a polled 4 KiB READ");
	TH_LOG("polled 4 KiB READ: %llu us, %llu us of CPU",
	       (unsigned long long)c.wall_us, (unsigned long long)c.cpu_us);
	EXPECT_GT(CONTROL_MAX_MS * 1000ULL, c.wall_us)
		TH_LOG("a polled 4 KiB READ took %llu ms: not polled (timer: %u ms)",
		       (unsigned long long)c.wall_us / 1000, SPLIT_TIMER_MS);

	/* 64 KiB: split into 4 KiB commands, each ended by the timer */
	read_waited(_metadata, self, b.id, SPLIT_LEN, SPLIT_LEN, SPLIT_LEN, 0,
		    &c, "a polled 64 KiB READ split in 4 KiB bios");
	TH_LOG("split 64 KiB READ: ENTER took %llu us, %llu us of its thread's CPU",
	       (unsigned long long)c.wall_us, (unsigned long long)c.cpu_us);
	EXPECT_LE(SPLIT_MIN_MS * 1000ULL, c.wall_us)
		TH_LOG("the split READ took %llu ms: not ended by the %u ms timer",
		       (unsigned long long)c.wall_us / 1000, SPLIT_TIMER_MS);
	EXPECT_GT(c.wall_us / 4, c.cpu_us)
		TH_LOG("the ENTER spun: %llu us of CPU in %llu us, expected under a quarter",
		       (unsigned long long)c.cpu_us,
		       (unsigned long long)c.wall_us);
}

/* What wbt counts in flight as throttled writes (debugfs), or -1. */
static int wbt_tracked(const char *disk)
{
	char path[160], line[64];
	int n, sum = 0;
	FILE *f;

	snprintf(path, sizeof(path),
		 "/sys/kernel/debug/block/%s/rqos/wbt/inflight", disk);
	if (access(path, R_OK))
		mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%*d: inflight %d", &n) == 1)
			sum += n;
	fclose(f);
	return sum;
}

/*
 * BDEV_WRITEs are not writeback: like O_DIRECT writes they carry REQ_SYNC
 * and REQ_IDLE, so writeback throttling (wbt) neither counts nor holds
 * them (it would let 4 to 16 go at a time, the submitter asleep in
 * submit_bio() for the rest).  WBT_WRITES WRITEs to a device whose
 * commands each take WBT_TIMER_MS: while they are in flight wbt counts
 * none of them, and the ENTER that submitted them has returned.
 */
TEST_F_TIMEOUT(nullb, writes_not_throttled_as_writeback, 60)
{
	static const char *const cfg[] = {
		"irqmode=2", "completion_nsec=" STR(WBT_TIMER_MS) "000000",
		NULL
	};
	struct enter_call c = { .ti = &self->ti };
	unsigned int i, seen = 0;
	struct kmsgr_bdev b;
	struct kmsgr_cqe cqe;
	struct kmsgr_sqe s;
	char path[160];
	int tracked;

	if (self->why)
		SKIP(return, "%s", self->why);
	nullb_create(_metadata, &self->nb, cfg);
	/* on, whatever the kernel's default for this device */
	snprintf(path, sizeof(path), "/sys/block/%s/queue/wbt_lat_usec",
		 self->nb.name);
	ASSERT_EQ(0, kmsgr_write_line(path, "2000"))
		TH_LOG("%s: writeback throttling cannot be turned on", path);
	attach(_metadata, self, self->nb.dev, 0, &b);
	for (i = 0; i < WBT_WRITES; i++) {
		/* 4 KiB apart: no two merge into one request */
		s = bdev_sqe(KMSGR_OP_BDEV_WRITE, b.id, i * 8 * KIB,
			     i * 4 * KIB, 4 * KIB, UD(TAG_READ, i));
		ASSERT_EQ(0, queue_sqe(&self->ti, &s));
	}
	enter_call(&c);
	tracked = wbt_tracked(self->nb.name);
	EXPECT_EQ(WBT_WRITES, c.ret);
	TH_LOG("%u WRITEs submitted in %llu us (each takes %u ms), %d counted by wbt",
	       WBT_WRITES, (unsigned long long)c.wall_us, WBT_TIMER_MS,
	       tracked);
	EXPECT_EQ(0, tracked)
		TH_LOG("wbt counts the WRITEs as writeback (-1: no debugfs wbt state)");
	EXPECT_GT(WBT_TIMER_MS * 1000ULL / 2, c.wall_us)
		TH_LOG("the submitting ENTER waited for WRITEs to end");
	for (i = 0; i < WBT_WRITES; i++) {
		ASSERT_EQ(0, next_cqe(&self->ti, &cqe, 4 * WBT_TIMER_MS *
						       WBT_WRITES))
			TH_LOG("%u of %u CQEs", i, WBT_WRITES);
		EXPECT_EQ(0, cqe.res) TH_LOG("WRITE %u: %s",
					     (uint32_t)cqe.user_data,
					     strerror(-cqe.res));
		seen |= 1U << (uint32_t)cqe.user_data;
	}
	EXPECT_EQ((1U << WBT_WRITES) - 1, seen);
}

/*
 * Device mapper is not polled (kmsgr_bdev_open(): it may submit a bio of
 * ours again, still polled, from its own workers, which build the bio's
 * poll state while our poller reads it): ATTACH with F_POLL is refused
 * even when the dm queue polls, and the device attached without it
 * serves READs by interrupt, one of them split at the targets' seam.
 */
TEST_F_TIMEOUT(nullb, dm_device_not_polled, 60)
{
	unsigned int i, n, seen = 0;
	uint8_t *pattern = NULL;
	struct enter_call c;
	struct kmsgr_bdev b;
	char path[48];
	int ret;

	if (dm_missing(self))
		SKIP(return, "%s", dm_missing(self));
	dm_create(_metadata, self, path, sizeof(path));

	/* a pattern, written with O_DIRECT */
	self->dfd = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);
	ASSERT_LE(0, self->dfd) TH_LOG("open %s: %s", path, strerror(errno));
	pattern = malloc(DM_SPAN);
	ASSERT_NE(NULL, pattern);
	fill(pattern, DM_SPAN, &self->rng);
	ret = dev_io(self->dfd, self->bounce, true, 0, pattern, DM_SPAN);
	EXPECT_EQ(0, ret) TH_LOG("O_DIRECT write to %s: %s", path,
				 strerror(-ret));
	dm_not_polled(_metadata, self, path, &b);
	attach(_metadata, self, path, 0, &b);

	/* 4 KiB at 0, 8 KiB, ...: the one at 32 KiB crosses the seam */
	for (i = 0; i < DM_READS; i++)
		queue_read(_metadata, self, b.id, i * 8ULL * KIB, i * 4 * KIB,
			   4 * KIB, i);
	c = (struct enter_call){
		.ti = &self->ti,
		.min_complete = DM_READS,
		.timeout_ms = OP_MS,
	};
	enter_call(&c);
	ASSERT_EQ(DM_READS, c.ret) TH_LOG("ENTER submitting %u READs: %d",
					  DM_READS, c.ret);
	for (i = 0; i < DM_READS; i++) {
		ret = read_cqe(_metadata, self, OP_MS, &n, "a dm READ");
		if (ret == NO_CQE)
			break;
		ASSERT_GT(DM_READS, n);
		EXPECT_EQ(0, seen & 1U << n) TH_LOG("READ %u: a second CQE", n);
		seen |= 1U << n;
		EXPECT_EQ(0, ret) TH_LOG("READ %u: %s", n, strerror(-ret));
		if (!ret)
			EXPECT_EQ(-1, diff_at(self->ti.buf + n * 4 * KIB,
					      pattern + n * 8 * KIB, 4 * KIB))
				TH_LOG("READ %u: not the bytes written at %u KiB",
				       n, n * 8);
	}
	EXPECT_EQ((1U << DM_READS) - 1, seen)
		TH_LOG("CQEs of READs %#x only", seen);
	free(pattern);
}

/*
 * A pass polls at most KMSGR_POLL_BATCH bios.  Ops listed behind a batch
 * that does not end (here device-mapper bios that dm-delay holds; on
 * NVMe, ops on another hardware queue than those of the first ones) must
 * be polled all the same: the next pass starts after the last bio taken.
 */
TEST_F_TIMEOUT(nullb, polled_op_behind_a_slow_batch, 60)
{
	struct kmsgr_bdev dm, nb;
	unsigned int i, n, enters, ready;
	struct enter_call c;
	char path[48];
	uint64_t t0, ms;
	int ret;

	if (dm_missing(self))
		SKIP(return, "%s", dm_missing(self));
	BDEV_SKIP_UNLESS_FAULTS(self);
	delay_make(_metadata, self, SLOW_DELAY_MS, path, sizeof(path), &dm);
	/* shared: the dm device holds it exclusively */
	attach(_metadata, self, self->nb.dev, KMSGR_BDEV_F_POLL, &nb);

	for (i = 0; i < SLOW_READS; i++)
		queue_read(_metadata, self, dm.id, i * 4ULL * KIB, i * 4 * KIB,
			   4 * KIB, i);
	queue_read(_metadata, self, nb.id, 0, SLOW_READS * 4 * KIB, 4 * KIB,
		   SLOW_READS);
	c = (struct enter_call){ .ti = &self->ti };
	t0 = kt_now_ms();
	enter_call(&c);
	ASSERT_EQ(SLOW_READS + 1, c.ret)
		TH_LOG("ENTER submitting %u READs: %d", SLOW_READS + 1, c.ret);
	for (enters = 1; !kmsgr_cq_ready(self->ti.k) &&
	     kt_now_ms() - t0 < 2 * SLOW_DELAY_MS; enters++) {
		enter_call(&c);
		ASSERT_LE(0, c.ret) TH_LOG("ENTER: %s", strerror(-c.ret));
	}
	ms = kt_now_ms() - t0;
	TH_LOG("%u polled READs on %s (dm-delay %u ms), one on %s: the first CQE after %llu ms, %u ENTERs",
	       SLOW_READS, self->dm, SLOW_DELAY_MS, self->nb.dev,
	       (unsigned long long)ms, enters);
	ret = read_cqe(_metadata, self, OP_MS, &n, "the first READ");
	EXPECT_EQ(SLOW_READS, n)
		TH_LOG("the first CQE is a delayed READ's (%u): the READ on %s was not polled before them",
		       n, self->nb.dev);
	EXPECT_EQ(0, ret) TH_LOG("READ %u: %s", n, ret == NO_CQE ? "no CQE" :
				 strerror(-ret));
	EXPECT_GT(SLOW_MAX_MS, ms)
		TH_LOG("the READ on %s took %llu ms behind %u delayed ones",
		       self->nb.dev, (unsigned long long)ms, SLOW_READS);

	/* the delayed ones end too (the fixture's close waits for them) */
	for (ready = 0, t0 = kt_now_ms(); ready < SLOW_READS &&
	     kt_now_ms() - t0 < 4 * SLOW_DELAY_MS;
	     ready = kmsgr_cq_ready(self->ti.k)) {
		enter_call(&c);
		ASSERT_LE(0, c.ret) TH_LOG("ENTER: %s", strerror(-c.ret));
		usleep(10000);
	}
	EXPECT_EQ(SLOW_READS, ready) TH_LOG("%u of %u delayed READs ended",
					    ready, SLOW_READS);
	for (i = 0; i < ready; i++) {
		ret = read_cqe(_metadata, self, OP_MS, &n, "a delayed READ");
		EXPECT_GT(SLOW_READS, n);
		EXPECT_EQ(0, ret) TH_LOG("READ %u: %s", n, strerror(-ret));
	}
}

/*
 * A polled op that makes no progress (here dm-delay holds its bio) must
 * not keep the ENTER waiting for it spinning: it stops after
 * KMSGR_POLL_SPIN_MS without a CQE, sleeps, and the poll work completes
 * the op once the device has it done.
 */
TEST_F_TIMEOUT(nullb, stalled_polled_op_sleeps, 60)
{
	struct kmsgr_bdev b;
	struct enter_call c;
	unsigned int n;
	char path[48];
	int ret;

	if (dm_missing(self))
		SKIP(return, "%s", dm_missing(self));
	BDEV_SKIP_UNLESS_FAULTS(self);
	delay_make(_metadata, self, STALL_MS, path, sizeof(path), &b);

	queue_read(_metadata, self, b.id, 0, 0, 4 * KIB, 0);
	c = (struct enter_call){
		.ti = &self->ti,
		.min_complete = 1,
		.timeout_ms = 4 * STALL_MS,
	};
	enter_call(&c);
	TH_LOG("a polled READ on %s (dm-delay %u ms): the ENTER took %llu us, %llu us of its thread's CPU",
	       self->dm, STALL_MS, (unsigned long long)c.wall_us,
	       (unsigned long long)c.cpu_us);
	EXPECT_EQ(1, c.ret) TH_LOG("ENTER: %d", c.ret);
	ret = read_cqe(_metadata, self, OP_MS, &n, "the delayed READ");
	EXPECT_EQ(0, ret) TH_LOG("READ: %s", ret == NO_CQE ? "no CQE" :
				 strerror(-ret));
	EXPECT_LE(STALL_MS * 1000ULL * 9 / 10, c.wall_us);
	EXPECT_GT(c.wall_us / 4, c.cpu_us)
		TH_LOG("the ENTER spun: %llu us of CPU in %llu us, expected under a quarter",
		       (unsigned long long)c.cpu_us,
		       (unsigned long long)c.wall_us);
}

/*
 * A poller that took a bio reference must not poll the bio's cookie once
 * the hardware context it names may be gone: the poller enters the bio's
 * queue while the bio is in flight, so a shrink (its queue freeze) waits
 * for the poll, and a bio that ended meanwhile has no cookie left.
 */
TEST_F_TIMEOUT(nullb, stale_cookie_after_queue_shrink, 90)
{
	static const char *const cfg[] = {
		"submit_queues=2", "poll_queues=1", "irqmode=0", NULL
	};
	uint64_t t0, cqe_ms, shrunk_ms;
	struct enter_call c;
	char path[96];
	struct kmsgr_bdev b;
	unsigned int n;
	int ret, hw;

	BDEV_SKIP_UNLESS_FAULTS(self);
	if (sysconf(_SC_NPROCESSORS_CONF) < 2)
		SKIP(return, "one CPU: null_blk gives no second submit queue");
	nullb_create(_metadata, &self->nb, cfg);
	hw = nr_hctx(self->nb.name);
	ASSERT_EQ(3, hw) TH_LOG("%s has %d hardware contexts, expected 3 (2 submit, 1 poll)",
				self->nb.name, hw);
	snprintf(path, sizeof(path), "/sys/block/%s/queue/io_timeout",
		 self->nb.name);
	ret = kmsgr_write_line(path, STR(STALE_TIMEOUT_MS));
	ASSERT_EQ(0, ret) TH_LOG("%s = " STR(STALE_TIMEOUT_MS) ": %s", path,
				 strerror(-ret));
	attach(_metadata, self, self->nb.dev, KMSGR_BDEV_F_POLL, &b);

	ASSERT_EQ(0, kmsgr_set_faults(FAULT_BDEV_POLL, STALE_DELAY_MS * 1000));
	queue_read(_metadata, self, b.id, 0, 0, 4 * KIB, 0);
	t0 = kt_now_ms();
	bg_start(_metadata, self, 1, 2 * OP_MS);

	/* the request timeout ends the READ while the poller sleeps */
	while (!kmsgr_cq_ready(self->ti.k) &&
	       kt_now_ms() - t0 < STALE_CQE_MS)
		usleep(5000);
	cqe_ms = kt_now_ms() - t0;
	ASSERT_NE(0, kmsgr_cq_ready(self->ti.k))
		TH_LOG("no CQE %u ms after the READ: the request timeout did not end it",
		       STALE_CQE_MS);
	ret = nullb_set(&self->nb, "submit_queues=1");
	ASSERT_EQ(0, ret) TH_LOG("submit_queues=1 on %s: %s", self->nb.dir,
				 strerror(-ret));
	shrunk_ms = kt_now_ms() - t0;
	hw = nr_hctx(self->nb.name);
	TH_LOG("READ's CQE at %llu ms, hw contexts 3 -> %d at %llu ms, poller held to %u ms",
	       (unsigned long long)cqe_ms, hw, (unsigned long long)shrunk_ms,
	       STALE_DELAY_MS);
	EXPECT_EQ(2, hw);
	EXPECT_LE(STALE_DELAY_MS, shrunk_ms)
		TH_LOG("the queues shrank at %llu ms, while the poller held its bio (to %u ms): its queue was not entered",
		       (unsigned long long)shrunk_ms, STALE_DELAY_MS);
	EXPECT_EQ(0, kmsgr_set_faults(0, 200));
	bg_join(self);
	EXPECT_EQ(1, self->bg.ret) TH_LOG("the ENTER returned %d (%s), not 1",
					  self->bg.ret,
					  self->bg.ret < 0 ?
					  strerror(-self->bg.ret) : "");
	ret = read_cqe(_metadata, self, 1000, &n, "the timed-out READ");
	EXPECT_EQ(-ETIMEDOUT, ret)
		TH_LOG("the READ's CQE: %s, expected ETIMEDOUT",
		       ret == NO_CQE ? "none" : ret ? strerror(-ret) : "0");

	/* whoever polled with the fault held is done by now */
	while (kt_now_ms() - t0 < STALE_HELD_MS)
		usleep(10000);
	read_waited(_metadata, self, b.id, 8 * KIB, 0, 4 * KIB, 0, &c,
		    "a polled READ after the queues shrank");
}

/* A netlink dump's view of our device. */
struct dump_seen {
	const char *name;	/* in: the disk */
	uint32_t id;		/* in: its handle */
	bool found;
	uint32_t in_flight;
};

static int dump_one(const struct kmsgr_bdev_info *b, void *arg)
{
	struct dump_seen *q = arg;

	if (b->pid == (uint32_t)getpid() && b->id == q->id &&
	    !strcmp(b->name, q->name)) {
		q->found = true;
		q->in_flight = b->in_flight;
	}
	return 0;
}

/*
 * Netlink's dump of the block devices must not wait for an ENTER that
 * sleeps in submit_bio() (out of tags) under the instance's submit lock.
 */
TEST_F_TIMEOUT(nullb, netlink_dump_not_held_by_a_stuck_submit, 90)
{
	static const char *const cfg[] = {
		"hw_queue_depth=1", "no_sched=1", "submit_queues=1",
		"poll_queues=0", "irqmode=2",
		"completion_nsec=" STR(STUCK_TIMER_MS) "000000", NULL
	};
	struct dump_seen q = { 0 };
	struct kmsgr_nl *nl = NULL;
	struct kmsgr_bdev b;
	unsigned int i, n;
	uint64_t t0, ms;
	int ret, entered;

	if (self->why)
		SKIP(return, "%s", self->why);
	nullb_create(_metadata, &self->nb, cfg);
	attach(_metadata, self, self->nb.dev, 0, &b);
	ret = kmsgr_nl_open(&nl);
	ASSERT_EQ(0, ret) TH_LOG("kmsgr_nl_open: %s", strerror(-ret));

	for (i = 0; i < STUCK_READS; i++)
		queue_read(_metadata, self, b.id, i * 4ULL * KIB, i * 4 * KIB,
			   4 * KIB, i);
	bg_start(_metadata, self, STUCK_READS, 3 * OP_MS);
	usleep(STUCK_START_MS * 1000);

	q.name = self->nb.name;
	q.id = b.id;
	t0 = kt_now_ms();
	ret = kmsgr_nl_bdevs(nl, 0, dump_one, &q);
	ms = kt_now_ms() - t0;
	entered = !__atomic_load_n(&self->bg.done, __ATOMIC_ACQUIRE);
	kmsgr_nl_close(nl);
	TH_LOG("bdev dump: %d devices in %llu ms, %s %s, in flight %u; the ENTER %s",
	       ret, (unsigned long long)ms, self->nb.name,
	       q.found ? "listed" : "not listed", q.in_flight,
	       entered ? "had not returned" : "had returned");
	ASSERT_TRUE(entered)
		TH_LOG("the ENTER of %u READs returned before the dump ended: %s",
		       STUCK_READS,
		       "it never slept for the one tag, nothing was tested");
	EXPECT_LE(0, ret) TH_LOG("the dump failed: %s", strerror(-ret));
	EXPECT_GT(DUMP_MAX_MS, ms)
		TH_LOG("the dump took %llu ms: it waited for the ENTER's submit lock",
		       (unsigned long long)ms);
	EXPECT_TRUE(q.found) TH_LOG("the dump did not list %s (handle %u)",
				    self->nb.name, b.id);
	if (q.found)
		EXPECT_LE(1, q.in_flight)
			TH_LOG("%s listed with no op in flight", self->nb.name);

	bg_join(self);
	EXPECT_EQ(STUCK_READS, self->bg.ret)
		TH_LOG("the ENTER returned %d (%s)", self->bg.ret,
		       self->bg.ret < 0 ? strerror(-self->bg.ret) : "");
	for (i = 0; i < STUCK_READS; i++) {
		ret = read_cqe(_metadata, self, OP_MS, &n, "a stuck READ");
		EXPECT_EQ(0, ret) TH_LOG("READ %u: %s", n,
					 ret == NO_CQE ? "no CQE" :
					 strerror(-ret));
	}
}

TEST_HARNESS_MAIN
