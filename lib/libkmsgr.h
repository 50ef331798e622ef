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

/* ---- rings and buffer area ---------------------------------------------- */

/**
 * kmsgr_setup() - size and map the rings and the buffer area
 * @k:     handle from kmsgr_open()
 * @setup: in: sq_entries, cq_entries (0: 2 x SQ), buf_size, rx_pool_size,
 *         other fields zero; out: what the kernel granted
 *
 * Calls KMSGR_IOC_SETUP and mmaps the SQ ring, the CQ ring and the buffer
 * area.  The application owns [0, buf_size - rx_pool_size) of the area for
 * its outgoing payloads; the rest is the kernel's receive pool.
 *
 * Return: 0, or a negative errno (-EINVAL bad sizes, -EBUSY already set up,
 * -ENOMEM / -EAGAIN over RLIMIT_MEMLOCK or the module's limits).
 */
int kmsgr_setup(struct kmsgr *k, struct kmsgr_setup *setup);

/** kmsgr_buf() - base address of the mapped buffer area (NULL before setup) */
void *kmsgr_buf(const struct kmsgr *k);

/** kmsgr_buf_size() - its size in bytes */
__u64 kmsgr_buf_size(const struct kmsgr *k);

/** kmsgr_tx_size() - bytes at the start of the area that are the app's */
__u64 kmsgr_tx_size(const struct kmsgr *k);

/**
 * kmsgr_get_sqe() - next free submission entry, zeroed
 *
 * Return: the entry, or NULL when the SQ is full (submit first).  The entry
 * becomes visible to the kernel at the next kmsgr_submit().
 */
struct kmsgr_sqe *kmsgr_get_sqe(struct kmsgr *k);

/**
 * kmsgr_submit() - publish prepared SQEs and let the kernel consume them
 * @k:            handle
 * @wait_nr:      also wait until at least this many CQEs are ready (0: no)
 * @timeout_ns:   bound for the wait; 0 waits without a bound
 *
 * Return: the number of SQEs consumed (>= 0), or a negative errno
 * (-ETIME when the wait timed out, -EINTR).
 */
int kmsgr_submit(struct kmsgr *k, unsigned int wait_nr, __u64 timeout_ns);

/**
 * kmsgr_peek_cqe() - oldest unconsumed completion, or NULL when none
 *
 * The entry stays valid until kmsgr_cqe_seen().
 */
struct kmsgr_cqe *kmsgr_peek_cqe(struct kmsgr *k);

/** kmsgr_cqe_seen() - consume the entry returned by kmsgr_peek_cqe() */
void kmsgr_cqe_seen(struct kmsgr *k);

/**
 * kmsgr_wait_cqe() - wait for a completion
 * @timeout_ns: 0 waits without a bound
 *
 * Submits pending SQEs too.  Return: 0 with *@cqe set, -ETIME, or -errno.
 */
int kmsgr_wait_cqe(struct kmsgr *k, struct kmsgr_cqe **cqe, __u64 timeout_ns);

/**
 * kmsgr_prep_send() - fill an SQE to send a message on @session
 *
 * Slices are offsets into the buffer area (len 0: segment absent).
 */
void kmsgr_prep_send(struct kmsgr_sqe *sqe, __u32 session, __u16 type,
		     __u64 tid, struct kmsgr_slice front,
		     struct kmsgr_slice middle, struct kmsgr_slice data,
		     __u64 user_data);

/** kmsgr_prep_release() - fill an SQE that gives back a RECV's slices */
void kmsgr_prep_release(struct kmsgr_sqe *sqe, const struct kmsgr_cqe *recv);

/* ---- sessions ----------------------------------------------------------- */

/**
 * kmsgr_addr_parse() - parse "IPv4:PORT" or "[IPv6]:PORT"
 *
 * Return: 0 or -EINVAL.
 */
int kmsgr_addr_parse(const char *str, struct kmsgr_addr *addr);

/**
 * kmsgr_addr_format() - the reverse; @buf of at least 64 bytes
 */
const char *kmsgr_addr_format(const struct kmsgr_addr *addr, char *buf,
			      size_t len);

/**
 * kmsgr_keyring_load() - read an entity's key from a Ceph keyring file
 * @path: keyring (ini style, "[client.admin]" then "key = <base64>")
 * @name: entity, e.g. "client.admin"
 * @key:  out: the 16-byte AES key (decoded CryptoKey)
 *
 * Return: 0, -ENOENT (no such entity), -EINVAL (malformed), or -errno.
 */
int kmsgr_keyring_load(const char *path, const char *name, __u8 key[16]);

/** kmsgr_listen() - KMSGR_IOC_LISTEN; @l->id and @l->bound are filled */
int kmsgr_listen(struct kmsgr *k, struct kmsgr_listen *l);

/** kmsgr_connect() - KMSGR_IOC_CONNECT; @c->id is filled */
int kmsgr_connect(struct kmsgr *k, struct kmsgr_connect *c);

/** kmsgr_close_id() - KMSGR_IOC_CLOSE of a session or listener id */
int kmsgr_close_id(struct kmsgr *k, __u32 id);

/** kmsgr_reason_str() - text of a KMSGR_REASON_* value */
const char *kmsgr_reason_str(unsigned int reason);

/** kmsgr_event_str() - text of a KMSGR_EV_* value */
const char *kmsgr_event_str(unsigned int event);

#ifdef __cplusplus
}
#endif

#endif /* LIBKMSGR_H */
