/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kmsgr - private definitions shared by the files of kmsgr.ko.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#ifndef KMSGR_H
#define KMSGR_H

#include <linux/mutex.h>
#include <linux/types.h>

#include <linux/kmsgr.h>

/* Module version; lib/ and tools/ take theirs from this line too. */
#define KMSGR_VERSION		"0.1.0"

/* Every KMSGR_FEAT_* bit this build implements. */
#define KMSGR_FEAT_SUPPORTED	(KMSGR_FEAT_INFO)

/**
 * struct kmsgr_instance - state of one open file of /dev/kmsgr
 * @id:   module-unique number, for logs and (later) netlink
 * @lock: serialises the control ioctls of this instance
 *
 * Allocated by open(), freed by the final release() of the file.
 */
struct kmsgr_instance {
	u64 id;
	struct mutex lock;	/* serialises control ioctls */
};

#endif /* KMSGR_H */
