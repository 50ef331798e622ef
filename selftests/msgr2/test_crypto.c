// SPDX-License-Identifier: GPL-2.0
/*
 * Port-layer primitives: crc32c, AES-128-GCM, HMAC-SHA256, AES-128-CBC.
 * Vectors from msgr2.md section 1.5 and 8, from the live-mon capture in
 * msgr2-verified.md section 7.2, RFC 4231 and NIST SP 800-38A.
 */
#include <stdio.h>
#include <stdlib.h>

#include "kselftest_harness.h"

#include "port.h"
#include "vec_secure_cephx.h"

static u32 crc_str(u32 seed, const char *s)
{
	return msgr2_crc32c(seed, s, strlen(s));
}

TEST(crc32c_ceph_vectors)
{
	EXPECT_EQ(0xf58c78acU, crc_str(0, "foo bar baz"));
	EXPECT_EQ(881700046U, crc_str(1234, "foo bar baz"));
	EXPECT_EQ(2360230088U, crc_str(0, "whiz bang boom"));
	EXPECT_EQ(3743019208U, crc_str(5678, "whiz bang boom"));
	EXPECT_EQ(0x1cf96d7cU, crc_str(0xffffffffU, "123456789"));
	EXPECT_EQ(0xffffffffU, crc_str(0xffffffffU, ""));
	EXPECT_EQ(0U, crc_str(0, ""));
	/* the standard CRC-32C check value */
	EXPECT_EQ(0xe3069283U, crc_str(0xffffffffU, "123456789") ^ ~0U);
}

/* every split of a buffer gives the same crc as the whole (slice-by-8) */
TEST(crc32c_chained)
{
	u8 buf[301];
	u32 whole, crc;
	size_t i, cut;

	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (u8)(i * 7 + 3);
	whole = msgr2_crc32c(0xffffffffU, buf, sizeof(buf));
	for (cut = 0; cut <= sizeof(buf); cut++) {
		crc = msgr2_crc32c(0xffffffffU, buf, cut);
		crc = msgr2_crc32c(crc, buf + cut, sizeof(buf) - cut);
		ASSERT_EQ(whole, crc);
	}
	/* unaligned starts */
	for (i = 1; i < 8; i++) {
		crc = msgr2_crc32c(0xffffffffU, buf, i);
		crc = msgr2_crc32c(crc, buf + i, sizeof(buf) - i);
		ASSERT_EQ(whole, crc);
	}
}

/* preamble CRC = crc32c(0, bytes 0..27), stored le32 at 28 */
static void check_preamble(struct __test_metadata *_metadata, const u8 *p)
{
	EXPECT_EQ(msgr2_get_le32(p + 28), msgr2_crc32c(0, p, 28));
}

TEST(crc32c_captured_frames)
{
	const u8 *crc_mode[] = { sec_f3, sec_f4, sec_f5, sec_f6, sec_f7,
				 sec_f8 };
	const size_t crc_len[] = { sizeof(sec_f3), sizeof(sec_f4),
				   sizeof(sec_f5), sizeof(sec_f6),
				   sizeof(sec_f7), sizeof(sec_f8) };
	u32 seg;
	size_t i;

	/* the HELLO preamble of the capture */
	EXPECT_EQ(0x066bbd3fU, msgr2_crc32c(0, sec_f3, 28));
	for (i = 0; i < ARRAY_SIZE(crc_mode); i++) {
		check_preamble(_metadata, crc_mode[i]);
		/* rev1 crc mode: seg0 then le32 crc32c(-1, seg0) */
		seg = msgr2_get_le32(crc_mode[i] + 2);
		ASSERT_EQ(32 + seg + 4, crc_len[i]);
		EXPECT_EQ(msgr2_get_le32(crc_mode[i] + 32 + seg),
			  msgr2_crc32c(0xffffffffU, crc_mode[i] + 32, seg));
	}
	/* decrypted preambles of the secure frames */
	check_preamble(_metadata, sec_f9_op1_pt);
	check_preamble(_metadata, sec_f10_op1_pt);
	check_preamble(_metadata, sec_f11_op1_pt);
	check_preamble(_metadata, sec_f12_op1_pt);
	check_preamble(_metadata, sec_f13_op1_pt);
	check_preamble(_metadata, sec_f14_op1_pt);
	/* AUTH_SIGNATURE preamble of msgr2.md section 8 */
	EXPECT_EQ(0x72980ca8U, msgr2_crc32c(0, sec_f9_op1_pt, 28));
}

static void nonce_next(u8 n[12])
{
	msgr2_put_le64(n + 4, msgr2_get_le64(n + 4) + 1);
}

/* msgr2.md section 8: secret = 00..3f, client TX nonce = secret[28..39] */
TEST(gcm_sanity_vector)
{
	static const u8 expect[96] = {
		0x5e, 0xe8, 0x3e, 0x47, 0x77, 0x93, 0xcc, 0x7c,
		0xbb, 0x38, 0x14, 0x80, 0xb3, 0x0c, 0xc6, 0x94,
		0x31, 0xda, 0xbd, 0xf8, 0x79, 0xb5, 0x0b, 0x48,
		0x3d, 0x40, 0x3c, 0xfd, 0x1b, 0x1e, 0xc9, 0x6a,
		0x46, 0xc6, 0x36, 0xfd, 0xd3, 0x4f, 0xf7, 0x96,
		0x50, 0x36, 0xa3, 0xb4, 0xf0, 0x29, 0x08, 0xec,
		0xd7, 0xf8, 0xcc, 0x4f, 0x26, 0x88, 0xa2, 0x8a,
		0xb0, 0x1f, 0x76, 0x1a, 0xee, 0xe6, 0xfd, 0xba,
		0x01, 0x65, 0x4a, 0x9d, 0x4a, 0x84, 0x8c, 0x68,
		0x91, 0x72, 0xd4, 0x52, 0x1f, 0xcf, 0x81, 0x08,
		0xf4, 0x5a, 0x41, 0xcb, 0xf7, 0x7b, 0x63, 0x66,
		0xd5, 0xc3, 0x4c, 0xf7, 0xdd, 0xc9, 0xfc, 0x0a,
	};
	static const u8 next[12] = {
		0x1c, 0x1d, 0x1e, 0x1f, 0x21, 0x21, 0x22, 0x23,
		0x24, 0x25, 0x26, 0x27,
	};
	struct msgr2_gcm *gcm;
	struct msgr2_iov iov;
	u8 secret[64], pt[80], ct[80], tag[16], nonce[12];
	int i;

	for (i = 0; i < 64; i++)
		secret[i] = i;
	memcpy(nonce, secret + 28, 12);
	memset(pt, 0, sizeof(pt));
	memcpy(pt, "\x07\x01\x20\x00\x00\x00\x08\x00", 8);
	msgr2_put_le32(pt + 28, msgr2_crc32c(0, pt, 28));
	EXPECT_EQ(0, memcmp(pt + 28, "\xa8\x0c\x98\x72", 4));

	ASSERT_EQ(0, msgr2_gcm_alloc(&gcm, secret));
	iov.base = pt;
	iov.len = sizeof(pt);
	ASSERT_EQ(0, msgr2_gcm_seal(gcm, nonce, &iov, 1, ct, tag));
	EXPECT_EQ(0, memcmp(ct, expect, 80));
	EXPECT_EQ(0, memcmp(tag, expect + 80, 16));
	nonce_next(nonce);
	EXPECT_EQ(0, memcmp(nonce, next, 12));

	/* and back, in place */
	memcpy(nonce, secret + 28, 12);
	iov.base = ct;
	ASSERT_EQ(0, msgr2_gcm_open(gcm, nonce, &iov, 1, tag));
	EXPECT_EQ(0, memcmp(ct, pt, 80));
	msgr2_gcm_free(gcm);
}

/*
 * The live-mon capture: each GCM operation's ciphertext and tag are the
 * next bytes of the frame.  Sealing the plaintext reproduces them and
 * opening them gives the plaintext back.
 */
struct gcm_op {
	const u8 *nonce;
	const u8 *pt;
	size_t len;
	const u8 *wire;		/* ciphertext || tag */
};

static void check_gcm_op(struct __test_metadata *_metadata,
			 struct msgr2_gcm *gcm, const struct gcm_op *op)
{
	struct msgr2_iov iov;
	u8 buf[128], tag[16];

	ASSERT_LE(op->len, sizeof(buf));
	iov.base = (void *)op->pt;
	iov.len = op->len;
	ASSERT_EQ(0, msgr2_gcm_seal(gcm, op->nonce, &iov, 1, buf, tag));
	EXPECT_EQ(0, memcmp(buf, op->wire, op->len));
	EXPECT_EQ(0, memcmp(tag, op->wire + op->len, 16));

	memcpy(buf, op->wire, op->len);
	iov.base = buf;
	ASSERT_EQ(0, msgr2_gcm_open(gcm, op->nonce, &iov, 1,
				    op->wire + op->len));
	EXPECT_EQ(0, memcmp(buf, op->pt, op->len));
}

TEST(gcm_captured_frames)
{
	const struct gcm_op ops[] = {
		{ sec_f9_op1_nonce, sec_f9_op1_pt, 80, sec_f9 },
		{ sec_f10_op1_nonce, sec_f10_op1_pt, 80, sec_f10 },
		{ sec_f11_op1_nonce, sec_f11_op1_pt, 80, sec_f11 },
		{ sec_f11_op2_nonce, sec_f11_op2_pt, 80, sec_f11 + 96 },
		{ sec_f12_op1_nonce, sec_f12_op1_pt, 80, sec_f12 },
		{ sec_f12_op2_nonce, sec_f12_op2_pt, 48, sec_f12 + 96 },
		{ sec_f13_op1_nonce, sec_f13_op1_pt, 80, sec_f13 },
		{ sec_f13_op2_nonce, sec_f13_op2_pt, 48, sec_f13 + 96 },
		{ sec_f14_op1_nonce, sec_f14_op1_pt, 80, sec_f14 },
		{ sec_f14_op2_nonce, sec_f14_op2_pt, 48, sec_f14 + 96 },
	};
	struct msgr2_gcm *gcm;
	size_t i;

	/* one key, both directions; the AES key is secret[0..15] */
	ASSERT_EQ(0, msgr2_gcm_alloc(&gcm, sec_con_secret));
	for (i = 0; i < ARRAY_SIZE(ops); i++)
		check_gcm_op(_metadata, gcm, &ops[i]);
	/* initial nonces: client TX = secret[28..39], RX = secret[16..27] */
	EXPECT_EQ(0, memcmp(sec_f9_op1_nonce, sec_con_secret + 28, 12));
	EXPECT_EQ(0, memcmp(sec_f10_op1_nonce, sec_con_secret + 16, 12));
	msgr2_gcm_free(gcm);
}

static int open_copy(struct msgr2_gcm *gcm, const u8 *wire, size_t len,
		     int flip_at)
{
	u8 buf[96];

	memcpy(buf, wire, len + 16);
	if (flip_at >= 0)
		buf[flip_at] ^= 0x01;
	return msgr2_gcm_open(gcm, sec_f9_op1_nonce,
			      &(struct msgr2_iov){ buf, len }, 1, buf + len);
}

TEST(gcm_open_rejects_tampering)
{
	struct msgr2_gcm *gcm;
	u8 nonce[12];
	int i;

	ASSERT_EQ(0, msgr2_gcm_alloc(&gcm, sec_con_secret));
	EXPECT_EQ(0, open_copy(gcm, sec_f9, 80, -1));
	/* a flipped bit anywhere in ciphertext or tag */
	for (i = 0; i < 96; i++)
		ASSERT_EQ(-EBADMSG, open_copy(gcm, sec_f9, 80, i));
	/* the wrong nonce */
	memcpy(nonce, sec_f9_op1_nonce, 12);
	nonce_next(nonce);
	{
		u8 buf[96];

		memcpy(buf, sec_f9, 96);
		EXPECT_EQ(-EBADMSG,
			  msgr2_gcm_open(gcm, nonce,
					 &(struct msgr2_iov){ buf, 80 }, 1,
					 buf + 80));
	}
	/* the context is still usable after a failure */
	EXPECT_EQ(0, open_copy(gcm, sec_f9, 80, -1));
	msgr2_gcm_free(gcm);
	/* the wrong key */
	ASSERT_EQ(0, msgr2_gcm_alloc(&gcm, sec_session_key));
	EXPECT_EQ(-EBADMSG, open_copy(gcm, sec_f9, 80, -1));
	msgr2_gcm_free(gcm);
}

TEST(gcm_iov_pieces)
{
	static const size_t cuts[][3] = {
		{ 0, 0, 0 }, { 1, 2, 3 }, { 15, 16, 17 }, { 16, 32, 48 },
		{ 31, 31, 60 }, { 79, 80, 80 }, { 5, 50, 51 },
	};
	struct msgr2_iov iov[4];
	struct msgr2_gcm *gcm;
	u8 pt[80], ct1[80], ct2[80], tag1[16], tag2[16], buf[80];
	size_t c;
	int i;

	for (i = 0; i < 80; i++)
		pt[i] = (u8)(i * 13 + 1);
	ASSERT_EQ(0, msgr2_gcm_alloc(&gcm, sec_con_secret));
	iov[0].base = pt;
	iov[0].len = 80;
	ASSERT_EQ(0, msgr2_gcm_seal(gcm, sec_f9_op1_nonce, iov, 1, ct1, tag1));

	for (c = 0; c < ARRAY_SIZE(cuts); c++) {
		iov[0].base = pt;
		iov[0].len = cuts[c][0];
		iov[1].base = pt + cuts[c][0];
		iov[1].len = cuts[c][1] - cuts[c][0];
		iov[2].base = pt + cuts[c][1];
		iov[2].len = cuts[c][2] - cuts[c][1];
		iov[3].base = pt + cuts[c][2];
		iov[3].len = 80 - cuts[c][2];
		memset(ct2, 0, sizeof(ct2));
		ASSERT_EQ(0, msgr2_gcm_seal(gcm, sec_f9_op1_nonce, iov, 4,
					    ct2, tag2));
		EXPECT_EQ(0, memcmp(ct1, ct2, 80));
		EXPECT_EQ(0, memcmp(tag1, tag2, 16));

		/* open over the same pieces, in place */
		memcpy(buf, ct1, 80);
		for (i = 0; i < 4; i++)
			iov[i].base = buf + ((u8 *)iov[i].base - pt);
		ASSERT_EQ(0, msgr2_gcm_open(gcm, sec_f9_op1_nonce, iov, 4,
					    tag1));
		EXPECT_EQ(0, memcmp(buf, pt, 80));
	}

	/* seal in place (dst == the single source) */
	memcpy(buf, pt, 80);
	iov[0].base = buf;
	iov[0].len = 80;
	ASSERT_EQ(0, msgr2_gcm_seal(gcm, sec_f9_op1_nonce, iov, 1, buf, tag2));
	EXPECT_EQ(0, memcmp(buf, ct1, 80));
	EXPECT_EQ(0, memcmp(tag1, tag2, 16));

	/* zero-length message: only a tag */
	ASSERT_EQ(0, msgr2_gcm_seal(gcm, sec_f9_op1_nonce, iov, 0, buf, tag2));
	EXPECT_EQ(0, msgr2_gcm_open(gcm, sec_f9_op1_nonce, iov, 0, tag2));
	tag2[0] ^= 0x80;
	EXPECT_EQ(-EBADMSG, msgr2_gcm_open(gcm, sec_f9_op1_nonce, iov, 0,
					   tag2));
	msgr2_gcm_free(gcm);
	msgr2_gcm_free(NULL);
}

/* RFC 4231 test case 2 */
TEST(hmac_sha256_rfc4231_case2)
{
	static const u8 expect[32] = {
		0x5b, 0xdc, 0xc1, 0x46, 0xbf, 0x60, 0x75, 0x4e,
		0x6a, 0x04, 0x24, 0x26, 0x08, 0x95, 0x75, 0xc7,
		0x5a, 0x00, 0x3f, 0x08, 0x9d, 0x27, 0x39, 0x83,
		0x9d, 0xec, 0x58, 0xb9, 0x64, 0xec, 0x38, 0x43,
	};
	char data[] = "what do ya want for nothing?";
	struct msgr2_iov iov[3];
	u8 out[32];

	iov[0].base = data;
	iov[0].len = strlen(data);
	ASSERT_EQ(0, msgr2_hmac_sha256((const u8 *)"Jefe", 4, iov, 1, out));
	EXPECT_EQ(0, memcmp(out, expect, 32));
	EXPECT_EQ(0, msgr2_memneq(out, expect, 32));

	/* the same over three pieces, one of them empty */
	iov[0].len = 4;
	iov[1].base = data + 4;
	iov[1].len = 0;
	iov[2].base = data + 4;
	iov[2].len = strlen(data) - 4;
	memset(out, 0, sizeof(out));
	ASSERT_EQ(0, msgr2_hmac_sha256((const u8 *)"Jefe", 4, iov, 3, out));
	EXPECT_EQ(0, memcmp(out, expect, 32));

	out[31] ^= 1;
	EXPECT_NE(0, msgr2_memneq(out, expect, 32));
	EXPECT_EQ(0, msgr2_memneq(out, expect, 0));
}

/* NIST SP 800-38A F.2.1/F.2.2, CBC-AES128, first two blocks */
TEST(aes_cbc_sp800_38a)
{
	static const u8 key[16] = {
		0x2b, 0x7e, 0x15, 0x16, 0x28, 0xae, 0xd2, 0xa6,
		0xab, 0xf7, 0x15, 0x88, 0x09, 0xcf, 0x4f, 0x3c,
	};
	static const u8 iv[16] = {
		0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
		0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
	};
	static const u8 pt[32] = {
		0x6b, 0xc1, 0xbe, 0xe2, 0x2e, 0x40, 0x9f, 0x96,
		0xe9, 0x3d, 0x7e, 0x11, 0x73, 0x93, 0x17, 0x2a,
		0xae, 0x2d, 0x8a, 0x57, 0x1e, 0x03, 0xac, 0x9c,
		0x9e, 0xb7, 0x6f, 0xac, 0x45, 0xaf, 0x8e, 0x51,
	};
	static const u8 ct[32] = {
		0x76, 0x49, 0xab, 0xac, 0x81, 0x19, 0xb2, 0x46,
		0xce, 0xe9, 0x8e, 0x9b, 0x12, 0xe9, 0x19, 0x7d,
		0x50, 0x86, 0xcb, 0x9b, 0x50, 0x72, 0x19, 0xee,
		0x95, 0xdb, 0x11, 0x3a, 0x91, 0x76, 0x78, 0xb2,
	};
	u8 buf[32];

	ASSERT_EQ(0, msgr2_aes_cbc(key, iv, true, pt, buf, 32));
	EXPECT_EQ(0, memcmp(buf, ct, 32));
	/* in place */
	ASSERT_EQ(0, msgr2_aes_cbc(key, iv, false, buf, buf, 32));
	EXPECT_EQ(0, memcmp(buf, pt, 32));
	EXPECT_EQ(-EINVAL, msgr2_aes_cbc(key, iv, true, pt, buf, 17));
	EXPECT_EQ(0, msgr2_aes_cbc(key, iv, true, pt, buf, 0));
}

TEST(random_and_wipe)
{
	u8 a[32], b[32], z[32];
	void *p;

	memset(z, 0, sizeof(z));
	msgr2_random(a, sizeof(a));
	msgr2_random(b, sizeof(b));
	EXPECT_NE(0, memcmp(a, b, sizeof(a)));
	msgr2_wipe(a, sizeof(a));
	EXPECT_EQ(0, memcmp(a, z, sizeof(a)));
	msgr2_wipe(NULL, 0);

	p = msgr2_zalloc(100);
	ASSERT_NE(NULL, p);
	EXPECT_EQ(0, memcmp(p, z, 32));
	msgr2_free(p);
	msgr2_free(NULL);
}

TEST_HARNESS_MAIN
