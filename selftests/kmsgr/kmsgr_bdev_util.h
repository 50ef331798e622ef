/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kmsgr selftests - block-device helpers shared by kmsgr_bdev_test and
 * kmsgr_bdev4k_test: attaching a device, one op at a time on a ring and
 * its CQE, O_DIRECT access to the device next to the module, and bytes
 * (random, compared).
 *
 * The checks with the kselftest harness (_metadata, EXPECT_*, TH_LOG)
 * are inline, for a test that included kselftest_harness.h first: the
 * harness may be in only one object of a program.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#ifndef KMSGR_BDEV_UTIL_H
#define KMSGR_BDEV_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include "kmsgr_ring_util.h"

#define OP_MS		10000		/* for one op's CQE */
#define BOUNCE		(1024U * 1024)	/* O_DIRECT bounce buffer */
#define NO_CQE		1		/* op_res(): no completion came */

uint64_t test_seed(void);
bool bdev_unsupported(void);

void fill(void *p, size_t len, uint64_t *rng);
long long diff_at(const void *a, const void *b, size_t len);
long long not_byte(const void *p, size_t len, uint8_t v);

int attach_fd(struct kmsgr *k, int fd, uint32_t flags, struct kmsgr_bdev *b);
int attach_path(struct kmsgr *k, const char *path, int oflags,
		uint32_t flags, struct kmsgr_bdev *b);

int queue_sqe(struct kt_inst *ti, const struct kmsgr_sqe *s);
int submit_all(struct kt_inst *ti);
int next_cqe(struct kt_inst *ti, struct kmsgr_cqe *out, int ms);
struct kmsgr_sqe bdev_sqe(uint8_t opcode, uint32_t id, uint64_t dev_off,
			  uint32_t off, uint32_t len, uint64_t ud);
struct kmsgr_slice slice(uint32_t off, uint32_t len);

int dev_io(int dfd, uint8_t *bounce, bool wr, uint64_t off, void *p,
	   size_t len);

#ifdef __KSELFTEST_HARNESS_H

/*
 * Run one op @s on @ti and check its CQE: KMSGR_CQE_OP with the SQE's
 * user_data and, for a BDEV op, its session (the handle) and tid (the
 * device offset).
 * Return: its res, or NO_CQE when none came.
 */
static inline int op_res(struct __test_metadata *_metadata,
			 struct kt_inst *ti, const struct kmsgr_sqe *s,
			 const char *what)
{
	struct kmsgr_cqe c;

	ASSERT_EQ(0, queue_sqe(ti, s)) TH_LOG("%s: SQ full", what);
	if (next_cqe(ti, &c, OP_MS)) {
		TH_LOG("%s: no completion within %d ms", what, OP_MS);
		return NO_CQE;
	}
	EXPECT_EQ(KMSGR_CQE_OP, c.kind) TH_LOG("%s: CQE kind", what);
	EXPECT_EQ(s->user_data, c.user_data) TH_LOG("%s: user_data", what);
	if (s->opcode < KMSGR_OP_BDEV_WRITE || s->opcode > KMSGR_OP_BDEV_FLUSH)
		return c.res;
	EXPECT_EQ(s->session, c.session) TH_LOG("%s: CQE session", what);
	EXPECT_EQ(s->tid, c.tid) TH_LOG("%s: CQE tid (device offset)", what);
	return c.res;
}

/* The device holds @want at @off (read with O_DIRECT): true. */
static inline bool dev_holds(struct __test_metadata *_metadata, int dfd,
			     uint8_t *bounce, uint64_t off,
			     const void *want, size_t len, const char *what)
{
	uint8_t *got = malloc(len);
	long long d;
	int ret;

	ASSERT_NE(NULL, got);
	ret = dev_io(dfd, bounce, false, off, got, len);
	EXPECT_EQ(0, ret) TH_LOG("%s: O_DIRECT read of %zu bytes at %llu: %s",
				 what, len, (unsigned long long)off,
				 strerror(-ret));
	d = ret ? -1 : diff_at(got, want, len);
	EXPECT_EQ(-1, d)
		TH_LOG("%s: the device differs at %llu (byte %lld of %zu)",
		       what, (unsigned long long)off + d, d, len);
	free(got);
	return !ret && d < 0;
}

/*
 * Open the block device @path (from $@env) O_RDWR | O_DIRECT into *@dfd,
 * with its fstat() in *@st, its size in *@cap and its logical and
 * physical block sizes in *@lbs and *@pbs.
 */
static inline void dev_open(struct __test_metadata *_metadata,
			    const char *env, const char *path, int *dfd,
			    struct stat *st, uint64_t *cap, int *lbs,
			    unsigned int *pbs)
{
	*dfd = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);
	ASSERT_LE(0, *dfd) TH_LOG("open %s: %s", path, strerror(errno));
	ASSERT_EQ(0, fstat(*dfd, st));
	ASSERT_TRUE(S_ISBLK(st->st_mode))
		TH_LOG("%s=%s is no block device", env, path);
	ASSERT_EQ(0, ioctl(*dfd, BLKGETSIZE64, cap));
	ASSERT_EQ(0, ioctl(*dfd, BLKSSZGET, lbs));
	ASSERT_EQ(0, ioctl(*dfd, BLKPBSZGET, pbs));
}

/*
 * A fixture's end: close @dfd (when >= 0), free @bounce; then the kernel
 * log watched on @kmsg (when >= 0) must hold nothing bad.
 */
static inline void dev_close(struct __test_metadata *_metadata, int dfd,
			     uint8_t *bounce, int kmsg)
{
	char line[512];

	if (dfd >= 0)
		close(dfd);
	free(bounce);
	if (kmsg >= 0) {
		usleep(100000);
		EXPECT_EQ(0, kt_kmsg_check(kmsg, line, sizeof(line)))
			TH_LOG("kernel log: %s", line);
		close(kmsg);
	}
}

/*
 * In a test of a fixture whose ->why says why it has no device: skip
 * unless there is one and the module has fault points (KMSGR_FAULT=y).
 */
#define BDEV_SKIP_UNLESS_FAULTS(self)					\
	do {								\
		if ((self)->why)					\
			SKIP(return, "%s", (self)->why);		\
		if (access(KMSGR_FAULT_PARAM, W_OK))			\
			SKIP(return, "not a test build (KMSGR_FAULT=y): no fault points"); \
	} while (0)

#endif /* __KSELFTEST_HARNESS_H */

#endif /* KMSGR_BDEV_UTIL_H */
