/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kmsgr - kernel version compatibility.
 *
 * kmod/Kbuild force-includes this file (-include) into every object of
 * kmsgr.ko, so it is the one and only place that looks at the version of
 * the kernel being built against.  The rules:
 *
 *  - The driver is written against the newest kernel API.  A shim here
 *    defines the new name in terms of the old one for older kernels.
 *  - Where no shim is possible, define a COMPAT_CANNOT_<WHAT> feature macro
 *    here and test that macro in the driver, never a version number.
 *  - Prefer probing for a macro or header over comparing versions.
 *  - Outside the supported range, fail the build with #error.  The range is
 *    mirrored by BUILD_EXCLUSIVE_KERNEL(_MIN) in dkms.conf.
 *
 * Versions are compared with KMSGR_LINUX_VERSION, built from
 * LINUX_VERSION_MAJOR, _PATCHLEVEL and _SUBLEVEL (Linux >= 5.16), so no
 * checkpatch waiver is needed for this file.
 *
 * Supported: Linux 6.1 (tested: Debian 6.1.0-57-amd64), and only 6.1:
 * built against Debian 12's Linux 6.12 headers, kmsgr fails where later
 * kernels changed the block device API (blkdev_get_by_dev() and
 * blkdev_put(), FMODE_EXCL, QUEUE_FLAG_POLL, BLK_POLL_NOSLEEP,
 * bdev->bd_inode), generic netlink (genl_dumpit_info's attrs) and socket
 * sends (kernel_sendpage() went in 6.5).  Until those have shims the build
 * stops at once, with a clear message, instead.
 * Shims: the unaligned-access header, __assign_str() of the tracepoints,
 * the netlink admin-only group and the kernel socket's netns reference
 * (written for later kernels; never built there yet); and for the 6.1
 * stable releases before 6.1.78, no polled block I/O.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#ifndef KMSGR_COMPAT_H
#define KMSGR_COMPAT_H

#include <linux/version.h>

#if defined(LINUX_VERSION_MAJOR) && defined(LINUX_VERSION_PATCHLEVEL) && \
	defined(LINUX_VERSION_SUBLEVEL)
#define KMSGR_LINUX_VERSION KERNEL_VERSION(LINUX_VERSION_MAJOR, \
					   LINUX_VERSION_PATCHLEVEL, \
					   LINUX_VERSION_SUBLEVEL)
#else
#define KMSGR_LINUX_VERSION 0	/* older than 5.16 */
#endif

/* Oldest supported kernel; keep in step with dkms.conf. */
#define KMSGR_LINUX_VERSION_MIN KERNEL_VERSION(6, 1, 0)

#if KMSGR_LINUX_VERSION < KMSGR_LINUX_VERSION_MIN
#error "kmsgr needs Linux 6.1 or later"
#endif

/* The first kernel past the supported range; keep in step with dkms.conf. */
#define KMSGR_LINUX_VERSION_END KERNEL_VERSION(6, 2, 0)

#if KMSGR_LINUX_VERSION >= KMSGR_LINUX_VERSION_END
#error "kmsgr builds for Linux 6.1 only (the comment above says what later kernels changed)"
#endif

/* <asm/unaligned.h> moved to <linux/unaligned.h> in Linux 6.12. */
#define KMSGR_LINUX_VERSION_UNALIGNED KERNEL_VERSION(6, 12, 0)
#if KMSGR_LINUX_VERSION < KMSGR_LINUX_VERSION_UNALIGNED
#include <asm/unaligned.h>
#else
#include <linux/unaligned.h>
#endif

/*
 * Generic netlink multicast groups that only CAP_NET_ADMIN may join
 * (GENL_MCAST_CAP_NET_ADMIN): Linux 6.7, and the stable 6.1.64 and 6.6.3.
 * Without it the group would be open to every local user, so kmsgr does not
 * register its "monitor" group there (KMSGR_GENL_MCAST_ADMIN 0, netlink.c).
 */
#define KMSGR_LINUX_VERSION_6_1_64	KERNEL_VERSION(6, 1, 64)
#define KMSGR_LINUX_VERSION_6_2		KERNEL_VERSION(6, 2, 0)
#define KMSGR_LINUX_VERSION_6_6_3	KERNEL_VERSION(6, 6, 3)
#if KMSGR_LINUX_VERSION >= KMSGR_LINUX_VERSION_6_6_3
#define KMSGR_GENL_MCAST_ADMIN	GENL_MCAST_CAP_NET_ADMIN
#elif KMSGR_LINUX_VERSION >= KMSGR_LINUX_VERSION_6_2
#define KMSGR_GENL_MCAST_ADMIN	0
#elif KMSGR_LINUX_VERSION >= KMSGR_LINUX_VERSION_6_1_64
#define KMSGR_GENL_MCAST_ADMIN	GENL_MCAST_CAP_NET_ADMIN
#else
#define KMSGR_GENL_MCAST_ADMIN	0
#endif

/*
 * Polled block I/O: before 6.1.78, bio_poll() entered the queue with
 * bio_queue_enter(), which sleeps while the queue freezes (a controller
 * reset, a scheduler switch, an unplug) and, once the disk is dead, fails
 * the still in-flight bio it was asked to poll.  A poller that
 * holds the queue (kmsgr_bio_enter()) would then wait for a freeze that
 * waits for it, and a bio would complete twice.  "block: treat poll queue
 * enter similarly to timeouts" made it a try.  Without it kmsgr does not
 * poll: no KMSGR_FEAT_BDEV_POLL, and KMSGR_BDEV_F_POLL is EOPNOTSUPP.
 */
#define KMSGR_LINUX_VERSION_POLL_ENTER KERNEL_VERSION(6, 1, 78)
#if KMSGR_LINUX_VERSION < KMSGR_LINUX_VERSION_POLL_ENTER
#define COMPAT_CANNOT_POLL_FROZEN	1
#endif

/*
 * Tracepoints: __assign_str() lost its source argument in Linux 6.10 (it
 * copies what __string() named).  kmsgr_assign_str(dst, src) is either.
 */
#define KMSGR_LINUX_VERSION_ASSIGN_STR KERNEL_VERSION(6, 10, 0)
#if KMSGR_LINUX_VERSION < KMSGR_LINUX_VERSION_ASSIGN_STR
#define kmsgr_assign_str(dst, src)	__assign_str(dst, src)
#else
#define kmsgr_assign_str(dst, src)	__assign_str(dst)
#endif

/*
 * A kernel socket taking a reference on its network namespace, as user
 * sockets hold one (TCP keeps an orphan's timers running only then):
 * sk_net_refcnt_upgrade() from Linux 6.15, which also drops the passive
 * reference kernel sockets hold there; by hand before, as 6.1's own users
 * of kernel TCP sockets (mptcp, sunrpc) do.  A macro: <net/sock.h> is
 * the caller's (xprt_tcp.c).
 */
#define KMSGR_LINUX_VERSION_NET_UPGRADE KERNEL_VERSION(6, 15, 0)
#if KMSGR_LINUX_VERSION >= KMSGR_LINUX_VERSION_NET_UPGRADE
#define kmsgr_sk_hold_net(sk)	sk_net_refcnt_upgrade(sk)
#else
#define kmsgr_sk_hold_net(sk) do {					\
	struct sock *__kmsgr_sk = (sk);					\
									\
	__kmsgr_sk->sk_net_refcnt = 1;					\
	get_net_track(sock_net(__kmsgr_sk), &__kmsgr_sk->ns_tracker,	\
		      GFP_KERNEL);					\
	sock_inuse_add(sock_net(__kmsgr_sk), 1);			\
} while (0)
#endif

#endif /* KMSGR_COMPAT_H */
