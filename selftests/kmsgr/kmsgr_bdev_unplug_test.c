// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr selftests - the block-device path when things end badly, on the
 * test guest's NVMe namespace (KMSGR_NVME, tools/vm/run --nvme SIZE):
 *
 *  fua_writes_survive_kill  a process writes with KMSGR_SQE_F_FUA and
 *                           reports each write whose CQE said 0; it is
 *                           killed (-9) with writes in flight: every
 *                           reported write is on the namespace (read
 *                           back with O_DIRECT), and its instance goes
 *                           away (the module's instance count)
 *  unplug_mid_operation     the NVMe controller's PCI function is removed
 *                           while reads and writes are in flight: every
 *                           op still gets exactly one CQE (0 or an
 *                           error), later ops fail ENXIO, DETACH and the
 *                           end of the instance work, another instance
 *                           goes on (NOPs complete), no kernel warning;
 *                           a CQE may wait for the nvme driver's I/O
 *                           timeout (one that took 5 s or more is
 *                           logged), the test 180 s at most
 *
 * The second test takes the device away for good: this program runs after
 * kmsgr_bdev_test (run_guest.sh runs the harness programs in name order)
 * and nothing after it in the guest uses the namespace.  Without
 * KMSGR_NVME both SKIP (make check counts that as a failure).
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "kmsgr_selftest.h"
#include "kmsgr_ring_util.h"

#define SQ		64
#define AREA		(8U << 20)
#define POOL		(1U << 20)
#define IO_LEN		(64U << 10)	/* unplug: per op */
#define BATCH		16		/* ops in flight per round */
#define KILL_LEN	4096U		/* kill: per write, one slot each */
#define KILL_SLOTS	4096U		/* 16 MiB of the namespace */
#define KILL_AFTER	200		/* acknowledged writes before the kill */
/*
 * An op in flight when the controller goes may end only by the nvme
 * driver's I/O timeout (nvme_core.io_timeout, 30 s): a CQE may take that
 * long, and the test longer than the harness's default 30 s.
 */
#define CQE_NS		(60ULL * 1000 * 1000 * 1000)
#define SLOW_CQE_MS	5000
#define UNPLUG_TIMEOUT	180

/* The namespace, or NULL with *why set. */
static const char *nvme_path(const char **why)
{
	const char *p = getenv("KMSGR_NVME");

	*why = kmsgr_missing(1);
	if (*why)
		return NULL;
	if (!p || !*p) {
		*why = "KMSGR_NVME not set: no device (tools/vm/run --nvme SIZE)";
		return NULL;
	}
	return p;
}

/* An instance with the device attached; its handle in *id. */
static struct kmsgr *attach(const char *path, __u32 *id, __u64 *cap)
{
	struct kmsgr_setup s = { .sq_entries = SQ, .buf_size = AREA,
				 .rx_pool_size = POOL };
	struct kmsgr_bdev b = { 0 };
	struct kmsgr *k;
	int fd;

	if (kmsgr_open(NULL, &k))
		return NULL;
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (kmsgr_setup(k, &s) || fd < 0) {
		if (fd >= 0)
			close(fd);
		kmsgr_close(k);
		return NULL;
	}
	b.fd = fd;
	if (kmsgr_bdev_attach(k, &b)) {
		close(fd);
		kmsgr_close(k);
		return NULL;
	}
	close(fd);
	*id = b.id;
	*cap = b.capacity;
	return k;
}

/* The pattern of write @n: n + 1 in every 8-byte word. */
static void fill(uint8_t *p, uint64_t n)
{
	unsigned int i;

	n++;
	for (i = 0; i < KILL_LEN; i += 8)
		memcpy(p + i, &n, 8);
}

/* Whether @p holds write @n's pattern. */
static bool holds(const uint8_t *p, uint64_t n)
{
	uint8_t want[KILL_LEN];

	fill(want, n);
	return !memcmp(p, want, KILL_LEN);
}

/*
 * Writes FUA, write n to slot n, until killed (or out of slots: then it
 * waits for the kill), telling @wfd the number of each one done.
 */
static void writer(const char *path, int wfd)
{
	uint8_t *buf;
	__u64 n = 0, cap;
	struct kmsgr_cqe *cqe;
	struct kmsgr_sqe *sqe;
	struct kmsgr *k;
	unsigned int i;
	__u32 id;

	k = attach(path, &id, &cap);
	if (!k)
		_exit(2);
	buf = kmsgr_buf(k);
	for (;;) {
		if (n + BATCH > KILL_SLOTS)
			pause();
		for (i = 0; i < BATCH; i++, n++) {
			fill(buf + i * KILL_LEN, n);
			sqe = kmsgr_get_sqe(k);
			kmsgr_prep_bdev(sqe, KMSGR_OP_BDEV_WRITE, id,
					n * KILL_LEN, i * KILL_LEN, KILL_LEN,
					n);
			sqe->flags = KMSGR_SQE_F_FUA;
		}
		if (kmsgr_submit(k, 0, 0) != BATCH)
			_exit(3);
		for (i = 0; i < BATCH; i++) {
			if (kmsgr_wait_cqe(k, &cqe, CQE_NS) || cqe->res)
				_exit(4);
			if (write(wfd, &cqe->user_data, 8) != 8)
				_exit(5);
			kmsgr_cqe_seen(k);
		}
	}
}

static long instances(void)
{
	char v[32] = "";
	FILE *f = fopen("/sys/module/kmsgr/parameters/instances", "r");

	if (!f)
		return -1;
	if (!fgets(v, sizeof(v), f))
		v[0] = 0;
	fclose(f);
	return strtol(v, NULL, 10);
}

TEST(fua_writes_survive_kill)
{
	unsigned int slots = KILL_SLOTS, got = 0, i, bad = 0;
	const char *why, *path = nvme_path(&why);
	uint64_t n;
	bool *done;
	long before;
	int p[2], st, fd;
	uint8_t *b;
	pid_t pid;

	if (!path)
		SKIP(return, "%s", why);
	/* one slot per write: KILL_AFTER + what is in flight < slots */
	done = calloc(slots, sizeof(*done));
	ASSERT_NE(NULL, done);
	before = instances();
	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(p[0]);
		writer(path, p[1]);
	}
	close(p[1]);
	while (got < KILL_AFTER && read(p[0], &n, 8) == 8) {
		ASSERT_GT(slots, n);
		done[n] = true;
		got++;
	}
	ASSERT_EQ(KILL_AFTER, got) TH_LOG("the writer stopped early");
	kill(pid, SIGKILL);
	/* what it reported before it died counts too */
	while (read(p[0], &n, 8) == 8 && n < slots) {
		done[n] = true;
		got++;
	}
	close(p[0]);
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	ASSERT_TRUE(WIFSIGNALED(st));
	for (i = 0; i < 100 && instances() > before; i++)
		usleep(50 * 1000);
	EXPECT_EQ(before, instances()) TH_LOG("its instance did not go away");

	fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, posix_memalign((void **)&b, 4096, KILL_LEN));
	for (i = 0; i < slots; i++) {
		if (!done[i])
			continue;
		ASSERT_EQ(KILL_LEN, pread(fd, b, KILL_LEN, (off_t)i * KILL_LEN));
		if (!holds(b, i) && bad++ < 3)
			TH_LOG("write %u: reported done, not on the device", i);
	}
	TH_LOG("%u FUA writes reported done before the kill; %u missing", got,
	       bad);
	EXPECT_EQ(0, bad);
	free(b);
	free(done);
	close(fd);
}

/* The sysfs "remove" of the PCI function under namespace @path. */
static int pci_remove_path(const char *path, char *out, size_t len)
{
	char link[PATH_MAX], *real;
	const char *name = strrchr(path, '/');

	snprintf(link, sizeof(link), "/sys/class/block/%s/device/device",
		 name ? name + 1 : path);
	real = realpath(link, NULL);
	if (!real)
		return -errno;
	snprintf(out, len, "%s/remove", real);
	free(real);
	return 0;
}

FIXTURE(unplug) {
	int unused;
};

FIXTURE_SETUP(unplug)
{
}

FIXTURE_TEARDOWN(unplug)
{
}

TEST_F_TIMEOUT(unplug, unplug_mid_operation, UNPLUG_TIMEOUT)
{
	unsigned int round, i, ok = 0, fail = 0, enxio = 0, other = 0;
	__u64 seen;
	uint64_t t0, waited;
	const char *why, *path = nvme_path(&why);
	struct kmsgr_cqe *cqe;
	struct kmsgr_sqe *sqe;
	struct kmsgr *k, *k2;
	struct kmsgr_setup s2 = { .sq_entries = 8, .buf_size = 1 << 20,
				  .rx_pool_size = KMSGR_POOL_MIN };
	char rm[PATH_MAX], line[512];
	__u64 cap;
	pid_t pid;
	__u32 id;
	int kmsg, st, ret;

	if (!path)
		SKIP(return, "%s", why);
	ASSERT_EQ(0, pci_remove_path(path, rm, sizeof(rm)));
	kmsg = kt_kmsg_open();
	ASSERT_LE(0, kmsg) TH_LOG("/dev/kmsg: %s", strerror(-kmsg));
	k = attach(path, &id, &cap);
	ASSERT_NE(NULL, k);
	ASSERT_EQ(0, kmsgr_open(NULL, &k2));
	ASSERT_EQ(0, kmsgr_setup(k2, &s2));

	/* the removal comes from elsewhere, while ops are in flight */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int fd;

		usleep(700 * 1000);
		fd = open(rm, O_WRONLY);
		_exit(fd < 0 || write(fd, "1", 1) != 1);
	}
	for (round = 0; round < 400 && !enxio; round++) {
		for (i = 0; i < BATCH; i++) {
			sqe = kmsgr_get_sqe(k);
			ASSERT_NE(NULL, sqe);
			kmsgr_prep_bdev(sqe, i % 2 ? KMSGR_OP_BDEV_WRITE :
					KMSGR_OP_BDEV_READ, id,
					(__u64)((round * BATCH + i) % 256) *
					IO_LEN, i * IO_LEN, IO_LEN, i);
		}
		ASSERT_EQ(BATCH, kmsgr_submit(k, 0, 0));
		seen = 0;
		for (i = 0; i < BATCH; i++) {
			t0 = kt_now_ms();
			ASSERT_EQ(0, kmsgr_wait_cqe(k, &cqe, CQE_NS))
				TH_LOG("round %u: an op got no CQE", round);
			waited = kt_now_ms() - t0;
			if (waited >= SLOW_CQE_MS)
				TH_LOG("round %u: a CQE (res %d) came after %llu ms",
				       round, cqe->res,
				       (unsigned long long)waited);
			EXPECT_EQ(KMSGR_CQE_OP, cqe->kind);
			EXPECT_EQ(id, cqe->session);
			/* one CQE per op: each user_data of the round once */
			EXPECT_GT(BATCH, cqe->user_data)
				TH_LOG("round %u: a CQE of user_data %llu", round,
				       (unsigned long long)cqe->user_data);
			if (cqe->user_data < BATCH) {
				EXPECT_FALSE(seen & 1ULL << cqe->user_data)
					TH_LOG("round %u: op %llu completed twice",
					       round,
					       (unsigned long long)cqe->user_data);
				seen |= 1ULL << cqe->user_data;
			}
			if (!cqe->res)
				ok++;
			else if (cqe->res == -ENXIO)
				enxio++;
			else if (cqe->res < 0)
				fail++;
			else
				other++;
			kmsgr_cqe_seen(k);
		}
		usleep(10 * 1000);
	}
	/* and none more than one per op */
	usleep(200 * 1000);
	EXPECT_EQ(0, kmsgr_cq_ready(k)) TH_LOG("CQEs beyond one per op");
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	ASSERT_TRUE(WIFEXITED(st) && !WEXITSTATUS(st))
		TH_LOG("writing %s failed", rm);
	TH_LOG("%u ops done, %u failed in flight, %u ENXIO after (%u rounds)",
	       ok, fail, enxio, round);
	EXPECT_LT(0, ok);
	EXPECT_LT(0, enxio) TH_LOG("later ops did not fail ENXIO");
	EXPECT_EQ(0, other);

	/* another instance is untouched */
	kmsgr_prep_nop(kmsgr_get_sqe(k2), 77);
	ASSERT_EQ(1, kmsgr_submit(k2, 1, CQE_NS));
	ASSERT_EQ(0, kmsgr_wait_cqe(k2, &cqe, CQE_NS));
	EXPECT_EQ(77, cqe->user_data);
	EXPECT_EQ(0, cqe->res);
	kmsgr_cqe_seen(k2);

	ret = kmsgr_bdev_detach(k, id);
	EXPECT_EQ(0, ret) TH_LOG("DETACH of the unplugged device: %d", ret);
	kmsgr_close(k);
	kmsgr_close(k2);
	usleep(100 * 1000);
	EXPECT_EQ(0, kt_kmsg_check(kmsg, line, sizeof(line)))
		TH_LOG("kernel log: %s", line);
	close(kmsg);
}

TEST_HARNESS_MAIN
