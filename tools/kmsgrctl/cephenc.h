/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kmsgrctl - Ceph's little-endian encoding, both ways, for the message
 * fronts kmsgrctl builds and reads (mon.c, osdc.c).
 *
 * An encoder writes into a caller's buffer and remembers overflow; a
 * decoder reads from one and remembers running out.  Either way the
 * caller checks ->err once at the end, not after every field.
 *
 * Copyright (C) 2026 The kmsgr authors
 */
#ifndef KMSGRCTL_CEPHENC_H
#define KMSGRCTL_CEPHENC_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include <linux/types.h>

static inline __u32 get_le32(const __u8 *p)
{
	return (__u32)p[0] | (__u32)p[1] << 8 | (__u32)p[2] << 16 |
	       (__u32)p[3] << 24;
}

static inline __u64 get_le64(const __u8 *p)
{
	return get_le32(p) | (__u64)get_le32(p + 4) << 32;
}

static inline void put_le32(__u8 *p, __u32 v)
{
	p[0] = (__u8)v;
	p[1] = (__u8)(v >> 8);
	p[2] = (__u8)(v >> 16);
	p[3] = (__u8)(v >> 24);
}

static inline void put_le64(__u8 *p, __u64 v)
{
	put_le32(p, (__u32)v);
	put_le32(p + 4, (__u32)(v >> 32));
}

struct cenc {
	__u8 *buf;
	size_t len, cap;
	bool err;		/* ran out of room */
};

static inline __u8 *cenc_room(struct cenc *e, size_t n)
{
	__u8 *p;

	if (e->err || n > e->cap - e->len) {
		e->err = true;
		return NULL;
	}
	p = e->buf + e->len;
	e->len += n;
	return p;
}

static inline void cenc_bytes(struct cenc *e, const void *src, size_t n)
{
	__u8 *p = cenc_room(e, n);

	if (p && n)
		memcpy(p, src, n);
}

static inline void cenc_zero(struct cenc *e, size_t n)
{
	__u8 *p = cenc_room(e, n);

	if (p)
		memset(p, 0, n);
}

static inline void cenc_u8(struct cenc *e, __u8 v)
{
	cenc_bytes(e, &v, 1);
}

static inline void cenc_le16(struct cenc *e, __u16 v)
{
	__u8 b[2] = { (__u8)v, (__u8)(v >> 8) };

	cenc_bytes(e, b, 2);
}

static inline void cenc_le32(struct cenc *e, __u32 v)
{
	__u8 *p = cenc_room(e, 4);

	if (p)
		put_le32(p, v);
}

static inline void cenc_le64(struct cenc *e, __u64 v)
{
	__u8 *p = cenc_room(e, 8);

	if (p)
		put_le64(p, v);
}

/* le32 length, then the bytes */
static inline void cenc_string(struct cenc *e, const char *s, size_t n)
{
	cenc_le32(e, (__u32)n);
	cenc_bytes(e, s, n);
}

/* ENCODE_START: u8 version, u8 compat, le32 length of what follows */
static inline void cenc_start(struct cenc *e, __u8 v, __u8 compat,
			      __u32 len)
{
	cenc_u8(e, v);
	cenc_u8(e, compat);
	cenc_le32(e, len);
}

struct cdec {
	const __u8 *buf;
	size_t len, off;
	bool err;		/* ran past the end */
};

static inline const __u8 *cdec_take(struct cdec *d, size_t n)
{
	const __u8 *p;

	if (d->err || n > d->len - d->off) {
		d->err = true;
		return NULL;
	}
	p = d->buf + d->off;
	d->off += n;
	return p;
}

static inline __u8 cdec_u8(struct cdec *d)
{
	const __u8 *p = cdec_take(d, 1);

	return p ? *p : 0;
}

static inline __u32 cdec_le32(struct cdec *d)
{
	const __u8 *p = cdec_take(d, 4);

	return p ? get_le32(p) : 0;
}

static inline __u64 cdec_le64(struct cdec *d)
{
	const __u8 *p = cdec_take(d, 8);

	return p ? get_le64(p) : 0;
}

/* a le32-length string: its bytes (not NUL-terminated) and length */
static inline const char *cdec_string(struct cdec *d, __u32 *n)
{
	*n = cdec_le32(d);
	return (const char *)cdec_take(d, *n);
}

#endif /* KMSGRCTL_CEPHENC_H */
