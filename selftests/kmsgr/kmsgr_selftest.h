/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kmsgr selftests - helpers shared by the kselftest_harness programs.
 *
 * A test SKIPs (with the reason) when what it needs is missing: the module
 * is not loaded, or the test needs root and does not run as root.  Once the
 * module is loaded, anything wrong with /dev/kmsgr is a failure.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#ifndef KMSGR_SELFTEST_H
#define KMSGR_SELFTEST_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <linux/kmsgr.h>

#define KMSGR_SYS_MODULE	"/sys/module/kmsgr"
#define KMSGR_SYS_INSTANCES	KMSGR_SYS_MODULE "/parameters/instances"

static inline int kmsgr_module_loaded(void)
{
	struct stat st;

	return stat(KMSGR_SYS_MODULE, &st) == 0;
}

/*
 * Read one line of a sysfs file into @buf without its newline.
 * Return: 0, or a negative errno.
 */
static inline int kmsgr_read_line(const char *path, char *buf, size_t size)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* The module's live-instance counter, or -1 when it cannot be read. */
static inline long kmsgr_instances(void)
{
	char buf[32], *end;
	long val;

	if (kmsgr_read_line(KMSGR_SYS_INSTANCES, buf, sizeof(buf)))
		return -1;
	val = strtol(buf, &end, 10);
	return end != buf && *end == '\0' ? val : -1;
}

/* SKIP unless the module is loaded. */
#define REQUIRE_MODULE() do { \
	if (!kmsgr_module_loaded()) \
		SKIP(return, "kmsgr module not loaded"); \
} while (0)

/* SKIP unless the module is loaded and we are root (the node is 0600). */
#define REQUIRE_MODULE_ROOT() do { \
	REQUIRE_MODULE(); \
	if (geteuid() != 0) \
		SKIP(return, "needs root: %s is mode 0600", KMSGR_DEV_PATH); \
} while (0)

/* Open a new instance into @fd, or fail the test. */
#define OPEN_KMSGR(fd) do { \
	(fd) = open(KMSGR_DEV_PATH, O_RDWR | O_CLOEXEC); \
	ASSERT_LE(0, (fd)) \
		TH_LOG("open %s: %s", KMSGR_DEV_PATH, strerror(errno)); \
} while (0)

#endif /* KMSGR_SELFTEST_H */
