// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr selftests - block-device helpers shared by the block tests (see
 * kmsgr_bdev_util.h).
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kmsgr_bdev_util.h"

/* The seed of this test: KMSGR_SEED, else the clock; printed. */
uint64_t test_seed(void)
{
	uint64_t seed = (uint64_t)kt_env_long("KMSGR_SEED", 0);
	struct timespec ts;

	if (!seed) {
		clock_gettime(CLOCK_REALTIME, &ts);
		seed = (uint64_t)ts.tv_sec * 1000003ULL ^ (uint64_t)ts.tv_nsec ^
		       (uint64_t)getpid() << 40;
	}
	fprintf(stderr, "# seed %llu (KMSGR_SEED=%llu repeats it)\n",
		(unsigned long long)seed, (unsigned long long)seed);
	return seed;
}

/*
 * The module is loaded but has no KMSGR_FEAT_BDEV: true.  False also when
 * it cannot be asked (the test's own open then fails, loudly).
 */
bool bdev_unsupported(void)
{
	struct kmsgr_info info;
	struct kmsgr *k;
	int ret;

	if (kmsgr_open(NULL, &k))
		return false;
	memset(&info, 0, sizeof(info));
	ret = kmsgr_info(k, &info);
	kmsgr_close(k);
	return !ret && !(info.features & KMSGR_FEAT_BDEV);
}

/* @len bytes from @rng at @p. */
void fill(void *p, size_t len, uint64_t *rng)
{
	uint8_t *b = p;
	uint64_t w;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		w = kt_rand(rng);
		memcpy(b + i, &w, 8);
	}
	for (; i < len; i++)
		b[i] = (uint8_t)kt_rand(rng);
}

/* Index of the first byte where @a and @b differ, or -1. */
long long diff_at(const void *a, const void *b, size_t len)
{
	const uint8_t *x = a, *y = b;
	size_t i;

	if (!memcmp(a, b, len))
		return -1;
	for (i = 0; x[i] == y[i]; i++)
		;
	return (long long)i;
}

/* Index of the first byte of @p that is not @v, or -1. */
long long not_byte(const void *p, size_t len, uint8_t v)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < len; i++)
		if (b[i] != v)
			return (long long)i;
	return -1;
}

/* ATTACH_BDEV of @fd with @flags, the rest zero. */
int attach_fd(struct kmsgr *k, int fd, uint32_t flags, struct kmsgr_bdev *b)
{
	memset(b, 0, sizeof(*b));
	b->fd = fd;
	b->flags = flags;
	return kmsgr_bdev_attach(k, b);
}

/* Open @path with @oflags, attach it, close the fd: 0 or -errno. */
int attach_path(struct kmsgr *k, const char *path, int oflags,
		uint32_t flags, struct kmsgr_bdev *b)
{
	int fd, ret;

	fd = open(path, oflags | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = attach_fd(k, fd, flags, b);
	close(fd);
	return ret;
}

/* Copy @s into the next SQE of @ti: 0, or -EBUSY when the SQ stays full. */
int queue_sqe(struct kt_inst *ti, const struct kmsgr_sqe *s)
{
	struct kmsgr_sqe *sqe = kt_sqe(ti);

	if (!sqe)
		return -EBUSY;
	*sqe = *s;
	return 0;
}

/* Submit until the kernel took every prepared SQE: 0 or -ETIME. */
int submit_all(struct kt_inst *ti)
{
	uint64_t end = kt_now_ms() + OP_MS;
	int ret;

	while (kmsgr_sq_pending(ti->k)) {
		ret = kmsgr_submit(ti->k, 0, 0);
		if (ret > 0)
			continue;
		if (kt_now_ms() > end)
			return -ETIME;
		usleep(1000);
	}
	return 0;
}

/* The next CQE of @ti that is not an event, within @ms: 0 or -ETIME. */
int next_cqe(struct kt_inst *ti, struct kmsgr_cqe *out, int ms)
{
	uint64_t end = kt_now_ms() + (uint64_t)ms, now;
	struct kmsgr_cqe *cqe;

	for (;;) {
		now = kt_now_ms();
		if (now >= end)
			return -ETIME;
		if (kmsgr_wait_cqe(ti->k, &cqe, (end - now) * 1000000ULL))
			continue;
		*out = *cqe;
		kmsgr_cqe_seen(ti->k);
		if (out->kind != KMSGR_CQE_EVENT)
			return 0;
	}
}

/* An op's SQE; a vectored one gets seg[1] and seg[2] set after. */
struct kmsgr_sqe bdev_sqe(uint8_t opcode, uint32_t id, uint64_t dev_off,
			  uint32_t off, uint32_t len, uint64_t ud)
{
	struct kmsgr_sqe s;

	kmsgr_prep_bdev(&s, opcode, id, dev_off, off, len, ud);
	return s;
}

struct kmsgr_slice slice(uint32_t off, uint32_t len)
{
	struct kmsgr_slice s = { .off = off, .len = len };

	return s;
}

/* O_DIRECT read (@wr false) or write of [@off, @off + @len): 0 or -errno. */
int dev_io(int dfd, uint8_t *bounce, bool wr, uint64_t off, void *p,
	   size_t len)
{
	uint8_t *b = p;
	ssize_t got;
	size_t n;

	while (len) {
		n = len < BOUNCE ? len : BOUNCE;
		if (wr) {
			memcpy(bounce, b, n);
			got = pwrite(dfd, bounce, n, (off_t)off);
		} else {
			got = pread(dfd, bounce, n, (off_t)off);
		}
		if (got < 0)
			return -errno;
		if ((size_t)got != n)
			return -EIO;
		if (!wr)
			memcpy(b, bounce, n);
		b += n;
		off += n;
		len -= n;
	}
	return 0;
}
