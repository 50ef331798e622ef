/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kmsgr msgr2 engine - the port layer.
 *
 * The engine (every other file in kmod/msgr2/) is pure C: no sockets, no
 * sleeping, no locks, no globals.  Everything it needs from its environment
 * is declared here and implemented twice:
 *
 *   port_kernel.c  kmsgr.ko: crc32c(), the crypto API (gcm(aes),
 *                  hmac(sha256), cbc(aes)), get_random_bytes(), kvzalloc()
 *   port_user.c    user-space test build: a table crc32c, OpenSSL libcrypto
 *
 * Allocation (msgr2_zalloc) is only used on setup paths (crypto contexts),
 * never per message.
 */
#ifndef KMSGR_MSGR2_PORT_H
#define KMSGR_MSGR2_PORT_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/errno.h>
#include <linux/string.h>
#include <linux/kernel.h>
#else
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <errno.h>
#include <sys/types.h>
#include <linux/types.h>

/* the kernel's short type names, from the uapi ones */
typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
typedef __s32 s32;
typedef __s64 s64;

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif
#ifndef min_t
/* like the kernel's: both operands converted to @type, each evaluated once */
#define min_t(type, a, b) ({			\
	type __min_a = (a);			\
	type __min_b = (b);			\
	__min_a < __min_b ? __min_a : __min_b;	\
})
#endif
#ifndef fallthrough
#define fallthrough __attribute__((__fallthrough__))
#endif
#endif /* __KERNEL__ */

/* A contiguous piece of memory, as used by the I/O-vector helpers. */
struct msgr2_iov {
	void *base;
	size_t len;
};

/* ---- integrity ---------------------------------------------------------- */

/*
 * Reflected CRC-32C (Castagnoli) with the register initialised to @seed and
 * no final inversion: the kernel's crc32c() and Ceph's ceph_crc32c().
 */
u32 msgr2_crc32c(u32 seed, const void *buf, size_t len);

#ifdef __KERNEL__
/* Module load and unload (the kernel port): choose the crc32c in use. */
int msgr2_port_init(void);
void msgr2_port_exit(void);
#endif

/* HMAC-SHA256 of the concatenation of @n pieces. Returns 0 or -errno. */
int msgr2_hmac_sha256(const u8 *key, size_t key_len,
		      const struct msgr2_iov *iov, int n, u8 out[32]);

/* Constant-time comparison: 0 when equal. */
int msgr2_memneq(const void *a, const void *b, size_t len);

/* ---- AES-128-GCM (secure mode) ------------------------------------------ */

struct msgr2_gcm;	/* opaque, one per direction of a connection */

int msgr2_gcm_alloc(struct msgr2_gcm **gcm, const u8 key[16]);
void msgr2_gcm_free(struct msgr2_gcm *gcm);

/*
 * Encrypt the concatenation of @n source pieces into the contiguous @dst
 * (same total length; may equal the single source) and write the 16-byte
 * tag.  12-byte IV, no AAD.
 */
int msgr2_gcm_seal(struct msgr2_gcm *gcm, const u8 nonce[12],
		   const struct msgr2_iov *src, int n, u8 *dst, u8 tag[16]);

/*
 * Decrypt the concatenation of @n pieces in place and verify @tag.
 * Returns 0, or -EBADMSG when the tag does not match (the plaintext is then
 * undefined and must not be used).
 */
int msgr2_gcm_open(struct msgr2_gcm *gcm, const u8 nonce[12],
		   const struct msgr2_iov *buf, int n, const u8 tag[16]);

/* ---- AES-128-CBC without padding (CephX) -------------------------------- */

/* @len must be a multiple of 16; @in and @out may be equal. */
int msgr2_aes_cbc(const u8 key[16], const u8 iv[16], bool encrypt,
		  const u8 *in, u8 *out, size_t len);

/* ---- misc ---------------------------------------------------------------- */

void msgr2_random(void *buf, size_t len);

/* Wall-clock time in ns since the epoch: what a KEEPALIVE2 carries. */
u64 msgr2_wall_ns(void);

/* Wipe a secret; never optimised away. */
void msgr2_wipe(void *buf, size_t len);

/* Setup-path allocation, zeroed; may sleep in the kernel. */
void *msgr2_zalloc(size_t len);
void msgr2_free(void *p);

/* Little-endian accessors on byte pointers (no alignment needed). */
static inline u16 msgr2_get_le16(const u8 *p)
{
	return (u16)(p[0] | (p[1] << 8));
}

static inline u32 msgr2_get_le32(const u8 *p)
{
	return (u32)p[0] | ((u32)p[1] << 8) | ((u32)p[2] << 16) |
	       ((u32)p[3] << 24);
}

static inline u64 msgr2_get_le64(const u8 *p)
{
	return (u64)msgr2_get_le32(p) | ((u64)msgr2_get_le32(p + 4) << 32);
}

static inline void msgr2_put_le16(u8 *p, u16 v)
{
	p[0] = v & 0xff;
	p[1] = (v >> 8) & 0xff;
}

static inline void msgr2_put_le32(u8 *p, u32 v)
{
	p[0] = v & 0xff;
	p[1] = (v >> 8) & 0xff;
	p[2] = (v >> 16) & 0xff;
	p[3] = (v >> 24) & 0xff;
}

static inline void msgr2_put_le64(u8 *p, u64 v)
{
	msgr2_put_le32(p, (u32)v);
	msgr2_put_le32(p + 4, (u32)(v >> 32));
}

#endif /* KMSGR_MSGR2_PORT_H */
