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
#include <stdbool.h>
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

/*
 * Whether task @tid (a thread id, or a process id) sleeps uninterruptibly
 * (state D in /proc/TID/stat): in the kernel's fault holds
 * (usleep_range(), msleep()), for one.
 */
static inline bool kmsgr_task_in_d(int tid)
{
	char path[64], line[512], *p;

	if (tid <= 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/stat", tid);
	if (kmsgr_read_line(path, line, sizeof(line)))
		return false;
	p = strrchr(line, ')');		/* after the command name */
	return p && p[1] == ' ' && p[2] == 'D';
}

/* Publish the calling thread's id in *@tid for kmsgr_thread_in_d(). */
static inline void kmsgr_thread_publish(int *tid)
{
	__atomic_store_n(tid, (int)gettid(), __ATOMIC_RELEASE);
}

/* kmsgr_task_in_d() of the thread that kmsgr_thread_publish()ed @tid. */
static inline bool kmsgr_thread_in_d(const int *tid)
{
	return kmsgr_task_in_d(__atomic_load_n(tid, __ATOMIC_ACQUIRE));
}

/* Write @val to a sysfs/procfs/cgroup file; 0 or -errno. */
static inline int kmsgr_write_line(const char *path, const char *val)
{
	ssize_t n, len = (ssize_t)strlen(val);
	int fd, ret = 0;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, val, (size_t)len);
	if (n < 0)
		ret = -errno;
	else if (n != len)
		ret = -EIO;
	close(fd);
	return ret;
}

/*
 * Fault injection (a module built with KMSGR_FAULT=y): the points of
 * kmod/kmsgr.h's enum kmsgr_fault_point in @mask wait @us there; 0 or
 * -errno (-ENOENT: not such a build).
 */
#define KMSGR_FAULT_PARAM	"/sys/module/kmsgr/parameters/fault_points"
#define KMSGR_FAULT_DELAY	"/sys/module/kmsgr/parameters/fault_delay_us"

static inline int kmsgr_set_faults(unsigned int mask, unsigned int us)
{
	char v[16];
	int ret;

	snprintf(v, sizeof(v), "%u", us);
	ret = kmsgr_write_line(KMSGR_FAULT_DELAY, v);
	snprintf(v, sizeof(v), "%u", mask);
	return ret ? ret : kmsgr_write_line(KMSGR_FAULT_PARAM, v);
}

/*
 * Every fault point off, on a test build (nothing to do on another):
 * fixtures call it before and after each test, so that a test that
 * failed or was killed with points set does not leave them to the next.
 */
static inline void kmsgr_faults_off(void)
{
	if (!access(KMSGR_FAULT_PARAM, W_OK))
		kmsgr_set_faults(0, 200);
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

/*
 * Why a test cannot run here, or NULL when it can: the module must be
 * loaded and, with @need_root, we must be root (the node is 0600).
 * Use: why = kmsgr_missing(true); if (why) SKIP(return, "%s", why);
 */
static inline const char *kmsgr_missing(int need_root)
{
	if (!kmsgr_module_loaded())
		return "kmsgr module not loaded";
	if (need_root && geteuid() != 0)
		return "needs root: " KMSGR_DEV_PATH " is mode 0600";
	return NULL;
}

/* Open a new instance; on failure say why on stderr, return -1. */
static inline int kmsgr_open_dev(void)
{
	int fd;

	fd = open(KMSGR_DEV_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		fprintf(stderr, "# open %s: %s\n", KMSGR_DEV_PATH,
			strerror(errno));
	return fd;
}

#endif /* KMSGR_SELFTEST_H */
