/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * kmsgr - Ceph msgr2 sessions as a kernel service: user API of /dev/kmsgr.
 *
 * Every open() of /dev/kmsgr creates an independent instance; closing the
 * last reference to the file destroys it.  Control is by ioctl on that file
 * descriptor; data will move through mmap'd rings (not implemented yet).
 *
 * ABI rules
 *
 *  - All structures have fixed-width fields, natural alignment and explicit
 *    reserved space.  Reserved fields and undefined flag bits must be zero on
 *    input, else the ioctl fails with EINVAL; the kernel returns them as zero.
 *    New fields are carved out of reserved space, new behaviour is announced
 *    by a bit in kmsgr_info.features and requested by a flag bit.
 *  - KMSGR_ABI_VERSION changes only on an incompatible change (none is
 *    planned); a user of this header must check it first.
 *  - A command never changes meaning: a different argument size or semantic
 *    gets a new command number.
 *  - Unknown commands fail with ENOTTY.
 *  - User pointers are passed as __u64.
 *
 * ioctl namespace
 *
 *  Type character KMSGR_IOC_MAGIC (0xC5, unassigned in
 *  Documentation/userspace-api/ioctl/ioctl-number.rst as of Linux 6.1),
 *  command numbers 0x00-0x3f are kmsgr's:
 *
 *   0x00  KMSGR_IOC_INFO        module ABI version, features, limits
 *   0x01  KMSGR_IOC_SETUP       (reserved) size the SQ, the CQ and the buffer
 *                               area; return the mmap offsets, io_uring style
 *   0x02  KMSGR_IOC_ENTER       (reserved) submit SQEs, optionally wait for CQEs
 *   0x03  KMSGR_IOC_LISTEN      (reserved) listen on an address (tcp, rdma)
 *   0x04  KMSGR_IOC_CONNECT     (reserved) open a session to a peer
 *   0x05  KMSGR_IOC_CLOSE       (reserved) close a session or a listener
 *   0x06  KMSGR_IOC_ATTACH_BDEV (reserved) attach a block device by fd
 *   0x07  KMSGR_IOC_DETACH_BDEV (reserved) detach it
 *   0x08-0x3f                   reserved for later kmsgr commands
 *
 * mmap namespace (reserved, with KMSGR_IOC_SETUP)
 *
 *  The page offset passed to mmap() will select a region, as in io_uring:
 *  the SQ ring, the SQE array, the CQ ring and the buffer area, each at a
 *  fixed offset constant defined here together with SETUP.  Positions inside
 *  a region will be returned by SETUP, never fixed by this header.  SQEs and
 *  CQEs will be fixed-size, naturally aligned entries with reserved fields;
 *  SQEs will send messages and release received buffer slices, CQEs will
 *  report completions, inbound messages and session events.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#ifndef _UAPI_LINUX_KMSGR_H
#define _UAPI_LINUX_KMSGR_H

#include <linux/const.h>
#include <linux/ioctl.h>
#include <linux/types.h>

/* Name of the misc device: the node is /dev/KMSGR_DEV_NAME. */
#define KMSGR_DEV_NAME		"kmsgr"
#define KMSGR_DEV_PATH		"/dev/" KMSGR_DEV_NAME

/* Version of the ABI below; changes only on an incompatible change. */
#define KMSGR_ABI_VERSION	1

/* ioctl type character of every kmsgr command. */
#define KMSGR_IOC_MAGIC		0xC5

/* Length of kmsgr_info.version, including the terminating NUL. */
#define KMSGR_VERSION_LEN	32

/*
 * kmsgr_info.features: what this module implements.
 *
 * Bits 1-63 are reserved for later features: rings (SETUP/ENTER/mmap),
 * transports (tcp, rdma), secure mode, the block-device path.  A module
 * never sets a bit it does not implement; user space must ignore bits it
 * does not know.
 */
#define KMSGR_FEAT_INFO		_BITULL(0)	/* KMSGR_IOC_INFO, struct kmsgr_info */

/*
 * struct kmsgr_info - argument of KMSGR_IOC_INFO.
 *
 * Passed in with @flags and @reserved zero; copied back with the module's
 * answer.  Output fields are ignored on input.  A limit that belongs to a
 * feature the module does not advertise reads as 0.
 */
struct kmsgr_info {
	__u32 flags;		/* in: KMSGR_INFO_F_* (none defined yet), must be 0 */
	__u32 abi_version;	/* out: KMSGR_ABI_VERSION of the module */
	__u64 features;		/* out: KMSGR_FEAT_* bits the module implements */
	__u32 max_sq_entries;	/* out: largest SQ that SETUP accepts, entries */
	__u32 max_cq_entries;	/* out: largest CQ that SETUP accepts, entries */
	__u64 max_buf_size;	/* out: largest buffer area SETUP accepts, bytes */
	__u32 max_sessions;	/* out: most sessions per instance */
	__u32 reserved0;	/* in: must be 0; out: 0 */
	char version[KMSGR_VERSION_LEN]; /* out: module version, NUL-terminated */
	__u64 reserved[7];	/* in: must be 0; out: 0 */
};

/* kmsgr_info.flags: none defined; every bit must be zero. */
#define KMSGR_INFO_F_ALL	0U

/* Commands; see "ioctl namespace" above for the reserved numbers. */
#define KMSGR_IOC_INFO		_IOWR(KMSGR_IOC_MAGIC, 0x00, struct kmsgr_info)

#endif /* _UAPI_LINUX_KMSGR_H */
