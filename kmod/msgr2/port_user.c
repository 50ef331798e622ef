// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr msgr2 engine - the user-space port (test programs, fuzzers, tools).
 *
 * crc32c is a slice-by-8 table implementation; AES-GCM, HMAC-SHA256,
 * AES-CBC and the random source come from OpenSSL's libcrypto (EVP).
 */
#include <stdlib.h>
#include <limits.h>
#include <pthread.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include "port.h"

/* ---- crc32c ------------------------------------------------------------- */

#define CRC32C_POLY	0x82f63b78U	/* reflected Castagnoli polynomial */

static u32 crc32c_tab[8][256];
static pthread_once_t crc32c_once = PTHREAD_ONCE_INIT;

static void crc32c_init_tables(void)
{
	u32 i, j, c;

	for (i = 0; i < 256; i++) {
		c = i;
		for (j = 0; j < 8; j++)
			c = (c >> 1) ^ ((c & 1) ? CRC32C_POLY : 0);
		crc32c_tab[0][i] = c;
	}
	for (i = 0; i < 256; i++) {
		c = crc32c_tab[0][i];
		for (j = 1; j < 8; j++) {
			c = (c >> 8) ^ crc32c_tab[0][c & 0xff];
			crc32c_tab[j][i] = c;
		}
	}
}

u32 msgr2_crc32c(u32 seed, const void *buf, size_t len)
{
	const u8 *p = buf;
	u32 crc = seed;
	u32 lo, hi;

	pthread_once(&crc32c_once, crc32c_init_tables);

	while (len >= 8) {
		lo = crc ^ msgr2_get_le32(p);
		hi = msgr2_get_le32(p + 4);
		crc = crc32c_tab[7][lo & 0xff] ^
		      crc32c_tab[6][(lo >> 8) & 0xff] ^
		      crc32c_tab[5][(lo >> 16) & 0xff] ^
		      crc32c_tab[4][lo >> 24] ^
		      crc32c_tab[3][hi & 0xff] ^
		      crc32c_tab[2][(hi >> 8) & 0xff] ^
		      crc32c_tab[1][(hi >> 16) & 0xff] ^
		      crc32c_tab[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = crc32c_tab[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

/* ---- HMAC-SHA256 ------------------------------------------------------- */

static struct evp_mac_st *hmac_alg;	/* EVP_MAC */
static pthread_once_t hmac_once = PTHREAD_ONCE_INIT;

static void hmac_fetch(void)
{
	hmac_alg = EVP_MAC_fetch(NULL, "HMAC", NULL);
}

int msgr2_hmac_sha256(const u8 *key, size_t key_len,
		      const struct msgr2_iov *iov, int n, u8 out[32])
{
	static const u8 nokey[1];
	char digest[] = "SHA256";
	OSSL_PARAM params[2];
	EVP_MAC_CTX *ctx;
	size_t olen = 0;
	int i, ret = -EIO;

	if (n < 0)
		return -EINVAL;
	pthread_once(&hmac_once, hmac_fetch);
	if (!hmac_alg)
		return -EIO;
	ctx = EVP_MAC_CTX_new(hmac_alg);
	if (!ctx)
		return -ENOMEM;
	params[0] = OSSL_PARAM_construct_utf8_string("digest", digest, 0);
	params[1] = OSSL_PARAM_construct_end();
	/* a NULL key would mean "keep the previous key" to OpenSSL */
	if (EVP_MAC_init(ctx, key_len ? key : nokey, key_len, params) != 1)
		goto out;
	for (i = 0; i < n; i++) {
		if (iov[i].len &&
		    EVP_MAC_update(ctx, iov[i].base, iov[i].len) != 1)
			goto out;
	}
	if (EVP_MAC_final(ctx, out, &olen, 32) != 1 || olen != 32)
		goto out;
	ret = 0;
out:
	EVP_MAC_CTX_free(ctx);	/* cleanses the key schedule */
	return ret;
}

int msgr2_memneq(const void *a, const void *b, size_t len)
{
	return CRYPTO_memcmp(a, b, len) != 0;
}

/* ---- AES-128-GCM ------------------------------------------------------- */

struct msgr2_gcm {
	EVP_CIPHER_CTX *enc;
	EVP_CIPHER_CTX *dec;
};

int msgr2_gcm_alloc(struct msgr2_gcm **gcm, const u8 key[16])
{
	struct msgr2_gcm *g;

	*gcm = NULL;
	g = msgr2_zalloc(sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->enc = EVP_CIPHER_CTX_new();
	g->dec = EVP_CIPHER_CTX_new();
	if (!g->enc || !g->dec)
		goto err_nomem;
	/* set the key once; each operation only sets the IV */
	if (EVP_EncryptInit_ex(g->enc, EVP_aes_128_gcm(), NULL, NULL, NULL) != 1 ||
	    EVP_CIPHER_CTX_ctrl(g->enc, EVP_CTRL_GCM_SET_IVLEN, 12, NULL) != 1 ||
	    EVP_EncryptInit_ex(g->enc, NULL, NULL, key, NULL) != 1)
		goto err_io;
	if (EVP_DecryptInit_ex(g->dec, EVP_aes_128_gcm(), NULL, NULL, NULL) != 1 ||
	    EVP_CIPHER_CTX_ctrl(g->dec, EVP_CTRL_GCM_SET_IVLEN, 12, NULL) != 1 ||
	    EVP_DecryptInit_ex(g->dec, NULL, NULL, key, NULL) != 1)
		goto err_io;
	*gcm = g;
	return 0;

err_io:
	msgr2_gcm_free(g);
	return -EIO;
err_nomem:
	msgr2_gcm_free(g);
	return -ENOMEM;
}

void msgr2_gcm_free(struct msgr2_gcm *gcm)
{
	if (!gcm)
		return;
	EVP_CIPHER_CTX_free(gcm->enc);	/* frees and cleanses the key */
	EVP_CIPHER_CTX_free(gcm->dec);
	msgr2_free(gcm);
}

int msgr2_gcm_seal(struct msgr2_gcm *gcm, const u8 nonce[12],
		   const struct msgr2_iov *src, int n, u8 *dst, u8 tag[16])
{
	EVP_CIPHER_CTX *ctx = gcm->enc;
	size_t off = 0;
	int i, olen;

	if (n < 0)
		return -EINVAL;
	if (EVP_EncryptInit_ex(ctx, NULL, NULL, NULL, nonce) != 1)
		return -EIO;
	for (i = 0; i < n; i++) {
		if (!src[i].len)
			continue;
		if (src[i].len > INT_MAX)
			return -EINVAL;
		/* GCM is a stream mode: output length equals input length */
		if (EVP_EncryptUpdate(ctx, dst + off, &olen, src[i].base,
				      (int)src[i].len) != 1 ||
		    (size_t)olen != src[i].len)
			return -EIO;
		off += src[i].len;
	}
	if (EVP_EncryptFinal_ex(ctx, dst + off, &olen) != 1 || olen != 0)
		return -EIO;
	if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, tag) != 1)
		return -EIO;
	return 0;
}

int msgr2_gcm_open(struct msgr2_gcm *gcm, const u8 nonce[12],
		   const struct msgr2_iov *buf, int n, const u8 tag[16])
{
	EVP_CIPHER_CTX *ctx = gcm->dec;
	u8 t[16], fin[16];
	int i, olen;

	if (n < 0)
		return -EINVAL;
	memcpy(t, tag, 16);
	if (EVP_DecryptInit_ex(ctx, NULL, NULL, NULL, nonce) != 1)
		return -EIO;
	for (i = 0; i < n; i++) {
		if (!buf[i].len)
			continue;
		if (buf[i].len > INT_MAX)
			return -EINVAL;
		if (EVP_DecryptUpdate(ctx, buf[i].base, &olen, buf[i].base,
				      (int)buf[i].len) != 1 ||
		    (size_t)olen != buf[i].len)
			return -EIO;
	}
	if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, 16, t) != 1)
		return -EIO;
	if (EVP_DecryptFinal_ex(ctx, fin, &olen) != 1)
		return -EBADMSG;
	return 0;
}

/* ---- AES-128-CBC, no padding ------------------------------------------- */

int msgr2_aes_cbc(const u8 key[16], const u8 iv[16], bool encrypt,
		  const u8 *in, u8 *out, size_t len)
{
	EVP_CIPHER_CTX *ctx;
	int olen, flen, ret = -EIO;

	if (len % 16 || len > INT_MAX)
		return -EINVAL;
	if (!len)
		return 0;
	ctx = EVP_CIPHER_CTX_new();
	if (!ctx)
		return -ENOMEM;
	if (EVP_CipherInit_ex(ctx, EVP_aes_128_cbc(), NULL, key, iv,
			      encrypt ? 1 : 0) != 1)
		goto out;
	if (EVP_CIPHER_CTX_set_padding(ctx, 0) != 1)
		goto out;
	if (EVP_CipherUpdate(ctx, out, &olen, in, (int)len) != 1)
		goto out;
	if (EVP_CipherFinal_ex(ctx, out + olen, &flen) != 1 ||
	    (size_t)(olen + flen) != len)
		goto out;
	ret = 0;
out:
	EVP_CIPHER_CTX_free(ctx);
	return ret;
}

/* ---- misc -------------------------------------------------------------- */

void msgr2_random(void *buf, size_t len)
{
	if (len > INT_MAX || RAND_bytes(buf, (int)len) != 1)
		abort();	/* no safe fallback for a broken RNG */
}

u64 msgr2_wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (u64)ts.tv_sec * 1000000000ULL + (u64)ts.tv_nsec;
}

void msgr2_wipe(void *buf, size_t len)
{
	if (buf && len)
		OPENSSL_cleanse(buf, len);
}

void *msgr2_zalloc(size_t len)
{
	return calloc(1, len ? len : 1);
}

void msgr2_free(void *p)
{
	free(p);
}
