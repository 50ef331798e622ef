// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr selftests - the /dev/kmsgr device: node, permissions, instances.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <grp.h>
#include <sys/ioctl.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "kmsgr_selftest.h"

/* An unprivileged identity: "nobody" on Debian. */
#define NOBODY_ID	65534

TEST(module_loaded)
{
	const char *why;
	char buf[64];

	why = kmsgr_missing(0);
	if (why)
		SKIP(return, "%s", why);
	ASSERT_EQ(0, kmsgr_read_line(KMSGR_SYS_MODULE "/initstate", buf,
				     sizeof(buf)));
	EXPECT_STREQ("live", buf);
	/* The live-instance counter must exist: the leak checks use it. */
	EXPECT_LE(0, kmsgr_instances());
}

TEST(node_is_root_only_char_device)
{
	const char *why;
	unsigned int major, minor;
	struct stat st;
	int fields;
	char buf[32];

	why = kmsgr_missing(0);
	if (why)
		SKIP(return, "%s", why);
	ASSERT_EQ(0, stat(KMSGR_DEV_PATH, &st))
		TH_LOG("stat %s: %s", KMSGR_DEV_PATH, strerror(errno));
	EXPECT_TRUE(S_ISCHR(st.st_mode));
	EXPECT_EQ(0600, st.st_mode & 07777);
	EXPECT_EQ(0, st.st_uid);
	EXPECT_EQ(0, st.st_gid);

	/* The node is the misc device the module registered. */
	ASSERT_EQ(0, kmsgr_read_line("/sys/class/misc/" KMSGR_DEV_NAME "/dev",
				     buf, sizeof(buf)));
	fields = sscanf(buf, "%u:%u", &major, &minor);
	ASSERT_EQ(2, fields);
	EXPECT_EQ(major, major(st.st_rdev));
	EXPECT_EQ(minor, minor(st.st_rdev));
}

TEST(open_close)
{
	static const int modes[] = { O_RDWR, O_RDONLY, O_WRONLY };
	const char *why;
	unsigned int i;
	long base;
	int fd;

	why = kmsgr_missing(1);
	if (why)
		SKIP(return, "%s", why);
	base = kmsgr_instances();
	ASSERT_LE(0, base);
	/* read-write, read-only and write-only opens each make an instance */
	for (i = 0; i < ARRAY_SIZE(modes); i++) {
		fd = open(KMSGR_DEV_PATH, modes[i] | O_CLOEXEC);
		ASSERT_LE(0, fd) TH_LOG("open mode %d: %s", modes[i],
					strerror(errno));
		EXPECT_EQ(base + 1, kmsgr_instances())
			TH_LOG("open mode %d", modes[i]);
		EXPECT_EQ(0, close(fd));
		EXPECT_EQ(base, kmsgr_instances())
			TH_LOG("close after open mode %d", modes[i]);
	}
}

TEST(not_seekable)
{
	const char *why;
	int fd;

	why = kmsgr_missing(1);
	if (why)
		SKIP(return, "%s", why);
	fd = kmsgr_open_dev();
	ASSERT_LE(0, fd);
	EXPECT_EQ(-1, lseek(fd, 0, SEEK_SET));
	EXPECT_EQ(ESPIPE, errno);
	close(fd);
}

/* In a child that became "nobody", opening the node must fail. */
TEST(unprivileged_open_denied)
{
	const char *why;
	int status;
	pid_t pid;

	why = kmsgr_missing(1);
	if (why)
		SKIP(return, "%s", why);

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fd;

		if (setgroups(0, NULL) || setgid(NOBODY_ID) ||
		    setuid(NOBODY_ID))
			_exit(10);
		fd = open(KMSGR_DEV_PATH, O_RDWR | O_CLOEXEC);
		if (fd >= 0)
			_exit(11);
		if (errno != EACCES)
			_exit(12);
		fd = open(KMSGR_DEV_PATH, O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			_exit(13);
		_exit(errno == EACCES ? 0 : 14);
	}

	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("child: 10 setuid failed, 11/13 open succeeded, 12/14 errno not EACCES");
}

/*
 * Every open is its own instance: the live-instance counter follows the
 * open files, and closing one leaves the other working.
 */
TEST(two_opens_are_independent_instances)
{
	const char *why;
	struct kmsgr_info info;
	long base;
	int a, b;

	why = kmsgr_missing(1);
	if (why)
		SKIP(return, "%s", why);
	base = kmsgr_instances();
	ASSERT_LE(0, base);

	a = kmsgr_open_dev();
	ASSERT_LE(0, a);
	EXPECT_EQ(base + 1, kmsgr_instances());
	b = kmsgr_open_dev();
	ASSERT_LE(0, b);
	EXPECT_EQ(base + 2, kmsgr_instances());

	/* A dup() shares the instance: no new one. */
	{
		int c = dup(a);

		ASSERT_LE(0, c);
		EXPECT_EQ(base + 2, kmsgr_instances());
		close(c);
		EXPECT_EQ(base + 2, kmsgr_instances());
	}

	memset(&info, 0, sizeof(info));
	EXPECT_EQ(0, ioctl(a, KMSGR_IOC_INFO, &info));
	EXPECT_EQ(0, close(a));
	EXPECT_EQ(base + 1, kmsgr_instances());

	memset(&info, 0, sizeof(info));
	EXPECT_EQ(0, ioctl(b, KMSGR_IOC_INFO, &info))
		TH_LOG("INFO on the second instance: %s", strerror(errno));
	EXPECT_EQ(KMSGR_ABI_VERSION, info.abi_version);
	EXPECT_EQ(0, close(b));
	EXPECT_EQ(base, kmsgr_instances());
}

/* The counter is read-only, at run time as at load time. */
TEST(instances_param_read_only)
{
	const char *why;
	struct stat st;
	ssize_t n = -1;
	int fd;

	why = kmsgr_missing(1);
	if (why)
		SKIP(return, "%s", why);
	ASSERT_EQ(0, stat(KMSGR_SYS_INSTANCES, &st));
	EXPECT_EQ(0444, st.st_mode & 0777);

	fd = open(KMSGR_SYS_INSTANCES, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = write(fd, "5", 1);
		close(fd);
	}
	EXPECT_EQ(-1, n);
	EXPECT_NE(5, kmsgr_instances());
}

TEST_HARNESS_MAIN
