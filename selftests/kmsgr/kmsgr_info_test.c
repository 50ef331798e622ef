// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr selftests - KMSGR_IOC_INFO and ioctl dispatch, raw and through
 * libkmsgr.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "kmsgr_selftest.h"
#include "libkmsgr.h"

static int info_ioctl(int fd, struct kmsgr_info *info)
{
	return ioctl(fd, KMSGR_IOC_INFO, info) ? -errno : 0;
}

TEST(info_reports_abi_and_features)
{
	const char *why;
	struct kmsgr_info info;
	char sysver[64];
	unsigned int i;
	int fd;

	why = kmsgr_missing(1);
	if (why)
		SKIP(return, "%s", why);
	fd = kmsgr_open_dev();
	ASSERT_LE(0, fd);

	memset(&info, 0, sizeof(info));
	ASSERT_EQ(0, info_ioctl(fd, &info));
	EXPECT_EQ(KMSGR_ABI_VERSION, info.abi_version);
	EXPECT_TRUE(info.features & KMSGR_FEAT_INFO);
	EXPECT_EQ(0, info.flags);
	EXPECT_EQ(0, info.reserved0);
	EXPECT_TRUE(info.features & KMSGR_FEAT_INFO_POOL);
	EXPECT_EQ(0, info.pool_bytes);	/* no SETUP yet */
	for (i = 0; i < ARRAY_SIZE(info.reserved); i++)
		EXPECT_EQ(0, info.reserved[i]);

	/* A limit reads 0 only when its feature is not advertised. */
	if (info.features & KMSGR_FEAT_RINGS) {
		EXPECT_NE(0, info.max_sq_entries);
		EXPECT_NE(0, info.max_cq_entries);
		EXPECT_NE(0, info.max_buf_size);
		EXPECT_NE(0, info.max_sessions);
	} else {
		EXPECT_EQ(0, info.max_sq_entries);
		EXPECT_EQ(0, info.max_cq_entries);
		EXPECT_EQ(0, info.max_buf_size);
		EXPECT_EQ(0, info.max_sessions);
	}

	/* NUL-terminated, and the version modinfo shows. */
	ASSERT_NE(NULL, memchr(info.version, '\0', sizeof(info.version)));
	EXPECT_NE(0, strlen(info.version));
	ASSERT_EQ(0, kmsgr_read_line(KMSGR_SYS_MODULE "/version", sysver,
				     sizeof(sysver)));
	EXPECT_STREQ(sysver, info.version);
	close(fd);
}

TEST(info_ignores_output_fields_on_input)
{
	const char *why;
	struct kmsgr_info info, clean;
	int fd;

	why = kmsgr_missing(1);
	if (why)
		SKIP(return, "%s", why);
	fd = kmsgr_open_dev();
	ASSERT_LE(0, fd);

	memset(&clean, 0, sizeof(clean));
	ASSERT_EQ(0, info_ioctl(fd, &clean));
	memset(&info, 0, sizeof(info));
	info.abi_version = 0xdeadbeef;
	info.features = ~0ULL;
	info.max_sq_entries = 1;
	info.max_cq_entries = 2;
	info.max_buf_size = 3;
	info.max_sessions = 4;
	memset(info.version, 'x', sizeof(info.version));
	ASSERT_EQ(0, info_ioctl(fd, &info));
	EXPECT_EQ(KMSGR_ABI_VERSION, info.abi_version);
	EXPECT_EQ(clean.features, info.features);
	EXPECT_EQ(clean.max_sq_entries, info.max_sq_entries);
	EXPECT_EQ(clean.max_cq_entries, info.max_cq_entries);
	EXPECT_EQ(clean.max_buf_size, info.max_buf_size);
	EXPECT_EQ(clean.max_sessions, info.max_sessions);
	EXPECT_NE(NULL, memchr(info.version, '\0', sizeof(info.version)));
	close(fd);
}

TEST(info_rejects_flags)
{
	const char *why;
	struct kmsgr_info info;
	unsigned int bit;
	int fd;

	why = kmsgr_missing(1);
	if (why)
		SKIP(return, "%s", why);
	fd = kmsgr_open_dev();
	ASSERT_LE(0, fd);

	for (bit = 0; bit < 32; bit++) {
		memset(&info, 0, sizeof(info));
		info.flags = 1U << bit;
		EXPECT_EQ(-EINVAL, info_ioctl(fd, &info))
			TH_LOG("flags bit %u accepted", bit);
	}
	close(fd);
}

TEST(info_rejects_reserved)
{
	const char *why;
	struct kmsgr_info info;
	unsigned int i;
	int fd;

	why = kmsgr_missing(1);
	if (why)
		SKIP(return, "%s", why);
	fd = kmsgr_open_dev();
	ASSERT_LE(0, fd);

	memset(&info, 0, sizeof(info));
	info.reserved0 = 1;
	EXPECT_EQ(-EINVAL, info_ioctl(fd, &info));

	for (i = 0; i < ARRAY_SIZE(info.reserved); i++) {
		memset(&info, 0, sizeof(info));
		info.reserved[i] = 1ULL << 63;
		EXPECT_EQ(-EINVAL, info_ioctl(fd, &info))
			TH_LOG("reserved[%u] != 0 accepted", i);
	}

	/* The instance still works after the rejected calls. */
	memset(&info, 0, sizeof(info));
	EXPECT_EQ(0, info_ioctl(fd, &info));
	close(fd);
}

TEST(info_bad_pointer_is_efault)
{
	const char *why;
	void *page;
	int fd;

	why = kmsgr_missing(1);
	if (why)
		SKIP(return, "%s", why);
	fd = kmsgr_open_dev();
	ASSERT_LE(0, fd);

	EXPECT_EQ(-1, ioctl(fd, KMSGR_IOC_INFO, NULL));
	EXPECT_EQ(EFAULT, errno);

	page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, page);
	EXPECT_EQ(-1, ioctl(fd, KMSGR_IOC_INFO, page));
	EXPECT_EQ(EFAULT, errno);
	munmap(page, 4096);
	close(fd);
}

TEST(unknown_ioctl_is_enotty)
{
	const char *why;
	struct { __u64 words[8]; } big;	/* not sizeof(struct kmsgr_info) */
	struct kmsgr_info info;
	int fd;

	why = kmsgr_missing(1);
	if (why)
		SKIP(return, "%s", why);
	fd = kmsgr_open_dev();
	ASSERT_LE(0, fd);
	memset(&info, 0, sizeof(info));
	memset(&big, 0, sizeof(big));

	/* Outside kmsgr's command range. */
	EXPECT_EQ(-1, ioctl(fd, _IO(KMSGR_IOC_MAGIC, 0x40)));
	EXPECT_EQ(ENOTTY, errno);
	/* INFO's number with the wrong size or direction. */
	EXPECT_EQ(-1, ioctl(fd, _IOWR(KMSGR_IOC_MAGIC, 0x00, big), &big));
	EXPECT_EQ(ENOTTY, errno);
	EXPECT_EQ(-1, ioctl(fd, _IOR(KMSGR_IOC_MAGIC, 0x00, struct kmsgr_info),
			    &info));
	EXPECT_EQ(ENOTTY, errno);
	/* Another type character, and a raw number. */
	EXPECT_EQ(-1, ioctl(fd, _IOWR('x', 0x00, struct kmsgr_info), &info));
	EXPECT_EQ(ENOTTY, errno);
	EXPECT_EQ(-1, ioctl(fd, 0, &info));
	EXPECT_EQ(ENOTTY, errno);
	close(fd);
}

TEST(libkmsgr_open_info_close)
{
	const char *why;
	struct kmsgr_info info;
	struct kmsgr *k = NULL;
	long base;

	why = kmsgr_missing(1);
	if (why)
		SKIP(return, "%s", why);
	base = kmsgr_instances();

	ASSERT_EQ(0, kmsgr_open(NULL, &k));
	ASSERT_NE(NULL, k);
	EXPECT_LE(0, kmsgr_fd(k));
	EXPECT_EQ(base + 1, kmsgr_instances());
	ASSERT_EQ(0, kmsgr_info(k, &info));
	EXPECT_EQ(KMSGR_ABI_VERSION, info.abi_version);
	EXPECT_STREQ("info", kmsgr_feature_name(0));
	kmsgr_close(k);
	EXPECT_EQ(base, kmsgr_instances());

	/* Errors come back as negative errno values with a message. */
	k = NULL;
	EXPECT_EQ(-ENOENT, kmsgr_open("/dev/kmsgr-does-not-exist", &k));
	EXPECT_EQ(NULL, k);
	EXPECT_EQ(-ENODEV, kmsgr_open("/dev/null", &k));
	EXPECT_STRNE("", kmsgr_strerror(-EPROTO));
	EXPECT_STRNE("", kmsgr_strerror(-12345));
}

TEST_HARNESS_MAIN
