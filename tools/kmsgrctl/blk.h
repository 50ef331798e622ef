/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kmsgrctl - the example remote block service on msgr2 (docs/block-service.md):
 * its two messages, shared by the server and the client (blk.c).
 *
 * A request goes as one message of type BLK_MSG_REQUEST: the front is a
 * struct blk_req, the data segment a WRITE's bytes.  The answer is one
 * message of type BLK_MSG_REPLY with the request's tid: the front is a
 * struct blk_reply, the data segment a READ's bytes.  Little-endian.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#ifndef KMSGRCTL_BLK_H
#define KMSGRCTL_BLK_H

#include <linux/types.h>

#define BLK_MSG_REQUEST		0x6b10
#define BLK_MSG_REPLY		0x6b11

/* blk_req.op */
#define BLK_OP_READ		1	/* @len bytes at @off, in the reply */
#define BLK_OP_WRITE		2	/* the data segment at @off */
#define BLK_OP_FLUSH		3	/* the device's write cache */
#define BLK_OP_INFO		4	/* the device's geometry */

/* blk_req.flags */
#define BLK_F_FUA		0x1	/* WRITE: on stable media when answered */

struct blk_req {
	__le16 op;		/* BLK_OP_* */
	__le16 flags;		/* BLK_F_*; 0 unless stated */
	__le32 len;		/* READ, WRITE: bytes (WRITE: the data's) */
	__le64 off;		/* READ, WRITE: byte offset on the device */
	__le64 reserved[2];	/* 0 */
};

struct blk_reply {
	__le16 op;		/* the request's */
	__le16 reserved0;	/* 0 */
	__le32 len;		/* READ: bytes in the data segment */
	__le64 off;		/* the request's */
	__le32 status;		/* 0 or a negative Linux errno */
	__le32 lbs;		/* INFO: logical block size */
	__le64 capacity;	/* INFO: bytes */
	__le32 max_io;		/* INFO: largest READ or WRITE, bytes */
	__le32 reserved1;	/* 0 */
};

#endif /* KMSGRCTL_BLK_H */
