// SPDX-License-Identifier: GPL-2.0
/*
 * libkmsgr - thin user-space library over /dev/kmsgr (see libkmsgr.h).
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "libkmsgr.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

struct kmsgr {
	int fd;		/* the instance: an open file of /dev/kmsgr */
};

/* Names of the KMSGR_FEAT_* bits, indexed by bit number. */
static const char *const kmsgr_feature_names[] = {
	[0] = "info",		/* KMSGR_FEAT_INFO */
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

	*kp = k;
	return 0;

out_close:
	close(k->fd);
out_free:
	free(k);
	return ret;
}

void kmsgr_close(struct kmsgr *k)
{
	if (!k)
		return;
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
		return "kmsgr module ABI version differs from libkmsgr's";
	case ENOTTY:
		return "Command not supported by the loaded kmsgr module";
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
