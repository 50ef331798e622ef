/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkmsgr - thin user-space library over /dev/kmsgr.
 *
 * Conventions
 *
 *  - Functions returning int return 0 (or a non-negative value) on success
 *    and a negative errno value on failure; they never rely on errno.
 *    kmsgr_strerror() turns such a value into a message.
 *  - A struct kmsgr is one kernel instance (one open file of /dev/kmsgr).
 *    Calls on one handle must be serialised by the caller; distinct handles
 *    are independent.
 *  - The kernel ABI is <linux/kmsgr.h>; kmsgr_open() refuses a module whose
 *    KMSGR_ABI_VERSION differs from the one libkmsgr was built with.
 *
 * Build: pkg-config --cflags --libs kmsgr
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#ifndef LIBKMSGR_H
#define LIBKMSGR_H

#include <linux/kmsgr.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An open kmsgr instance; opaque. */
struct kmsgr;

/**
 * kmsgr_open() - create a kmsgr instance
 * @path: device node, or NULL for KMSGR_DEV_PATH ("/dev/kmsgr")
 * @kp:   on success, the new handle; untouched on failure
 *
 * Opens the device (close-on-exec) and checks the module's ABI version.
 *
 * Return: 0, or a negative errno: -ENOENT (no node: module not loaded),
 * -EACCES (not privileged), -ENODEV (@path is not a kmsgr device),
 * -EPROTO (module ABI differs from libkmsgr's), -ENOMEM, or any error of
 * open(2) or of KMSGR_IOC_INFO.
 */
int kmsgr_open(const char *path, struct kmsgr **kp);

/**
 * kmsgr_close() - destroy an instance and free its handle
 * @k: handle from kmsgr_open(), or NULL (then nothing happens)
 */
void kmsgr_close(struct kmsgr *k);

/**
 * kmsgr_fd() - file descriptor of an instance, for poll(2) and the like
 * @k: handle from kmsgr_open()
 *
 * Return: the descriptor; it stays owned by @k (kmsgr_close() closes it).
 */
int kmsgr_fd(const struct kmsgr *k);

/**
 * kmsgr_info() - ask the module for its ABI version, features and limits
 * @k:    handle from kmsgr_open()
 * @info: filled with the module's answer (KMSGR_IOC_INFO)
 *
 * Return: 0, or a negative errno from the ioctl.
 */
int kmsgr_info(struct kmsgr *k, struct kmsgr_info *info);

/**
 * kmsgr_feature_name() - short name of a KMSGR_FEAT_* bit
 * @bit: bit number (0 for KMSGR_FEAT_INFO, ...)
 *
 * Return: a static lower-case name such as "info", or NULL when the bit is
 * unknown to this libkmsgr.
 */
const char *kmsgr_feature_name(unsigned int bit);

/**
 * kmsgr_strerror() - message for an error returned by libkmsgr
 * @err: negative errno value (a positive one is accepted too)
 *
 * Return: a static, thread-safe string; kmsgr-specific meanings (such as
 * -EPROTO for an ABI mismatch) are spelled out.
 */
const char *kmsgr_strerror(int err);

/**
 * kmsgr_version() - version of libkmsgr
 *
 * Return: a static string such as "0.1.0" (the kmsgr release it belongs to).
 */
const char *kmsgr_version(void);

#ifdef __cplusplus
}
#endif

#endif /* LIBKMSGR_H */
