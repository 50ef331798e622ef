// SPDX-License-Identifier: GPL-2.0
/*
 * CephX client role, checked against the live-mon SECURE/CephX exchange
 * of msgr2-verified.md section 7.2 (decoded in 7.3).
 */
#include <stdio.h>
#include <stdlib.h>

#include "kselftest_harness.h"

#include "auth_cephx.h"
#include "vec_secure_cephx.h"

/* AUTH_DONE (frame 8): le64 global_id at 0x20, le32 con_mode, le32 len */
#define F8_PAYLOAD	0x30
#define F8_LEN		1011
#define F8_SECRET_OFF	(0xe6 - F8_PAYLOAD)	/* 182: end of AUTH tickets */
#define F8_EXTRA_OFF	(0x13e - F8_PAYLOAD)	/* 270: extra tickets */
/* frame offsets of the two ciphertexts decrypted by the client */
#define F8_AUTH_CT	0x44	/* 48 bytes, client.admin key */
#define F8_SECRET_CT	0xee	/* 80 bytes, AUTH session key */

static const u8 server_challenge[8] = {
	0x51, 0x62, 0x53, 0x7e, 0xa0, 0x8d, 0xf8, 0x47,
};

static const u8 client_challenge[8] = {
	0x01, 0x5d, 0x80, 0x82, 0x91, 0x23, 0x3b, 0xd0,
};

static const u8 expect_key[8] = {
	0x3c, 0xa8, 0x63, 0x42, 0x2d, 0xd2, 0x9b, 0x46,
};

static void cx_init(struct msgr2_auth_cephx *cx)
{
	memset(cx, 0, sizeof(*cx));
	cx->entity_type = MSGR2_ENTITY_CLIENT;
	strcpy(cx->name, "admin");
	memcpy(cx->key, sec_admin_key, 16);
}

/* drive request + reply_more with the captured server challenge */
static int cx_to_done(struct msgr2_auth_cephx *cx)
{
	u8 out[128];
	int n;

	n = msgr2_auth_cephx_ops.request(cx, out, sizeof(out));
	if (n < 0)
		return n;
	n = msgr2_auth_cephx_ops.reply_more(cx, sec_f6 + 0x24, 9, out,
					    sizeof(out));
	return n < 0 ? n : 0;
}

/* run @cx's done() on a heap copy of exactly @len bytes (ASan: over-reads) */
static int run_done_on(struct msgr2_auth_cephx *cx, const u8 *payload,
		       u32 len, u32 con_mode, struct msgr2_auth_result *res)
{
	u8 *copy;
	int ret;

	copy = malloc(len ? len : 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, payload, len);
	memset(res, 0xa5, sizeof(*res));
	ret = msgr2_auth_cephx_ops.done(cx, 4122, con_mode, copy, len, res);
	free(copy);
	return ret;
}

/* the same on a fresh client brought to AUTH_DONE */
static int run_done(const u8 *payload, u32 len, u32 con_mode,
		    struct msgr2_auth_result *res)
{
	struct msgr2_auth_cephx cx;
	int ret;

	cx_init(&cx);
	ret = cx_to_done(&cx);
	if (ret)
		return ret;
	return run_done_on(&cx, payload, len, con_mode, res);
}

static const u8 *f8_payload(void)
{
	return sec_f8 + F8_PAYLOAD;
}

TEST(frame8_layout)
{
	ASSERT_EQ(4122U, msgr2_get_le64(sec_f8 + 0x20));
	ASSERT_EQ((u32)MSGR2_MODE_SECURE, msgr2_get_le32(sec_f8 + 0x28));
	ASSERT_EQ((u32)F8_LEN, msgr2_get_le32(sec_f8 + 0x2c));
	ASSERT_EQ(sizeof(sec_f8), (size_t)(F8_PAYLOAD + F8_LEN + 4));
	/* the segment crc right after the payload */
	ASSERT_EQ(msgr2_get_le32(sec_f8 + F8_PAYLOAD + F8_LEN),
		  msgr2_crc32c(0xffffffffU, sec_f8 + 0x20, 0x403));
}

TEST(request_matches_capture)
{
	struct msgr2_auth_cephx cx;
	u8 out[64];
	int n;

	cx_init(&cx);
	n = msgr2_auth_cephx_ops.request(&cx, out, sizeof(out));
	ASSERT_EQ(22, n);
	ASSERT_EQ(22U, msgr2_get_le32(sec_f5 + 0x2c));
	EXPECT_EQ(0, memcmp(out, sec_f5 + 0x30, 22));
	EXPECT_EQ((u32)MSGR2_AUTH_CEPHX, msgr2_auth_cephx_ops.method);
	EXPECT_EQ(NULL, msgr2_auth_cephx_ops.accept);

	EXPECT_EQ(-ENOSPC, msgr2_auth_cephx_ops.request(&cx, out, 21));
	cx.name[0] = 0;
	EXPECT_EQ(-EINVAL, msgr2_auth_cephx_ops.request(&cx, out, 64));
	memset(cx.name, 'a', sizeof(cx.name));	/* no NUL */
	EXPECT_EQ(-EINVAL, msgr2_auth_cephx_ops.request(&cx, out, 64));
}

/* msgr2-verified.md 7.2 frame 7: the challenge response "key" */
TEST(challenge_key_vector)
{
	u8 chal[16], enc[36];
	u64 key;

	memcpy(chal, server_challenge, 8);
	memcpy(chal + 8, client_challenge, 8);
	ASSERT_EQ(36, msgr2_cephx_encrypt(sec_admin_key, chal, 16, enc,
					  sizeof(enc)));
	EXPECT_EQ(32U, msgr2_get_le32(enc));
	key = msgr2_get_le64(enc) ^ msgr2_get_le64(enc + 8) ^
	      msgr2_get_le64(enc + 16) ^ msgr2_get_le64(enc + 24);
	EXPECT_EQ(msgr2_get_le64(expect_key), key);
	/* and the captured request carries exactly these bytes */
	EXPECT_EQ(0, memcmp(sec_f7 + 0x27, client_challenge, 8));
	EXPECT_EQ(0, memcmp(sec_f7 + 0x2f, expect_key, 8));
}

TEST(reply_more_builds_request_more)
{
	struct msgr2_auth_cephx cx;
	u8 out[64], chal[16], enc[36], expect[36];
	u64 key;
	int n;

	cx_init(&cx);
	/* out of order: no AUTH_REQUEST yet */
	EXPECT_EQ(-EBADMSG, msgr2_auth_cephx_ops.reply_more(&cx, sec_f6 + 0x24,
							    9, out, 64));
	ASSERT_EQ(22, msgr2_auth_cephx_ops.request(&cx, out, sizeof(out)));
	/* malformed challenges */
	EXPECT_EQ(-EBADMSG, msgr2_auth_cephx_ops.reply_more(&cx, sec_f6 + 0x24,
							    8, out, 64));
	EXPECT_EQ(-EBADMSG, msgr2_auth_cephx_ops.reply_more(&cx, sec_f6 + 0x24,
							    10, out, 64));
	EXPECT_EQ(-EBADMSG, msgr2_auth_cephx_ops.reply_more(&cx, sec_f6 + 0x25,
							    9, out, 64));
	EXPECT_EQ(-ENOSPC, msgr2_auth_cephx_ops.reply_more(&cx, sec_f6 + 0x24,
							   9, out, 35));

	ASSERT_EQ(36U, msgr2_get_le32(sec_f7 + 0x20));
	n = msgr2_auth_cephx_ops.reply_more(&cx, sec_f6 + 0x24, 9, out,
					    sizeof(out));
	ASSERT_EQ(36, n);

	/* the capture with our (random) challenge and its key */
	memcpy(chal, server_challenge, 8);
	memcpy(chal + 8, out + 3, 8);
	ASSERT_EQ(36, msgr2_cephx_encrypt(sec_admin_key, chal, 16, enc,
					  sizeof(enc)));
	key = msgr2_get_le64(enc) ^ msgr2_get_le64(enc + 8) ^
	      msgr2_get_le64(enc + 16) ^ msgr2_get_le64(enc + 24);
	memcpy(expect, sec_f7 + 0x24, 36);
	memcpy(expect + 3, out + 3, 8);
	msgr2_put_le64(expect + 11, key);
	EXPECT_EQ(0, memcmp(out, expect, 36));
	/* struct_v 3 and other_keys 0x17 (never 0) */
	EXPECT_EQ(3, out[2]);
	EXPECT_EQ(0x17U, msgr2_get_le32(out + 32));

	/* a configured want_keys is sent as is */
	cx_init(&cx);
	cx.want_keys = MSGR2_ENTITY_MON | MSGR2_ENTITY_OSD;
	ASSERT_EQ(22, msgr2_auth_cephx_ops.request(&cx, out, sizeof(out)));
	ASSERT_EQ(36, msgr2_auth_cephx_ops.reply_more(&cx, sec_f6 + 0x24, 9,
						      out, sizeof(out)));
	EXPECT_EQ(0x05U, msgr2_get_le32(out + 32));
	/* a second AUTH_REPLY_MORE is refused */
	EXPECT_EQ(-EBADMSG, msgr2_auth_cephx_ops.reply_more(&cx, sec_f6 + 0x24,
							    9, out, 64));
}

TEST(done_captured_secure)
{
	static const u8 zero[16];
	struct msgr2_auth_result res;
	struct msgr2_auth_cephx cx;
	u8 *copy, out[64];

	cx_init(&cx);
	ASSERT_EQ(0, cx_to_done(&cx));
	copy = malloc(F8_LEN);
	ASSERT_NE(NULL, copy);
	memcpy(copy, f8_payload(), F8_LEN);
	memset(&res, 0xa5, sizeof(res));
	ASSERT_EQ(0, msgr2_auth_cephx_ops.done(&cx, 4122, MSGR2_MODE_SECURE,
					       copy, F8_LEN, &res));
	free(copy);
	EXPECT_EQ(4122U, res.global_id);
	EXPECT_EQ(16U, res.session_key_len);
	EXPECT_EQ(0, memcmp(res.session_key, sec_session_key, 16));
	EXPECT_EQ(64U, res.con_secret_len);
	EXPECT_EQ(0, memcmp(res.con_secret, sec_con_secret, 64));

	/* what stays in the object */
	EXPECT_EQ(4122U, cx.global_id);
	EXPECT_EQ(0, memcmp(cx.auth.session_key, sec_session_key, 16));
	EXPECT_EQ((u32)MSGR2_ENTITY_AUTH, cx.auth.service);
	EXPECT_EQ(2U, cx.auth.secret_id);
	EXPECT_EQ(96U, cx.auth.blob_len);
	EXPECT_EQ(0, memcmp(cx.auth.blob, sec_f8 + 0x86, 96));

	/* done() twice is out of order */
	memset(&res, 0, sizeof(res));
	EXPECT_EQ(-EBADMSG,
		  msgr2_auth_cephx_ops.done(&cx, 4122, MSGR2_MODE_SECURE,
					    f8_payload(), F8_LEN, &res));

	/* reset wipes the secrets and the tickets, keeps the global_id */
	msgr2_auth_cephx_ops.reset(&cx);
	EXPECT_EQ(4122U, cx.global_id);
	EXPECT_EQ(0U, cx.auth.service);
	EXPECT_EQ(0U, cx.auth.blob_len);
	EXPECT_EQ(0, memcmp(cx.auth.session_key, zero, 16));
	EXPECT_EQ(0U, cx.svc[2].service);
	/*
	 * The next AUTH_REQUEST asks for a new global_id (0): without the
	 * old AUTH ticket a 16.2.1+ mon refuses to let it be reclaimed.
	 */
	ASSERT_EQ(22, msgr2_auth_cephx_ops.request(&cx, out, 64));
	EXPECT_EQ(0U, msgr2_get_le64(out + 14));
}

/*
 * The session key and the captured AUTH_SIGNATURE frames agree: each side
 * signs what it received with the AUTH session key (msgr2.md 5.3).
 */
TEST(session_key_signs_captured_frames)
{
	struct msgr2_iov rx[4] = {
		{ (void *)sec_f2, sizeof(sec_f2) },
		{ (void *)sec_f4, sizeof(sec_f4) },
		{ (void *)sec_f6, sizeof(sec_f6) },
		{ (void *)sec_f8, sizeof(sec_f8) },
	};
	struct msgr2_iov tx[4] = {
		{ (void *)sec_f1, sizeof(sec_f1) },
		{ (void *)sec_f3, sizeof(sec_f3) },
		{ (void *)sec_f5, sizeof(sec_f5) },
		{ (void *)sec_f7, sizeof(sec_f7) },
	};
	struct msgr2_auth_result res;
	u8 mac[32];

	ASSERT_EQ(0, run_done(f8_payload(), F8_LEN, MSGR2_MODE_SECURE, &res));
	ASSERT_EQ(0, msgr2_hmac_sha256(res.session_key, 16, rx, 4, mac));
	EXPECT_EQ(0, memcmp(mac, sec_f9_op1_pt + 32, 32));
	ASSERT_EQ(0, msgr2_hmac_sha256(res.session_key, 16, tx, 4, mac));
	EXPECT_EQ(0, memcmp(mac, sec_f10_op1_pt + 32, 32));
}

/* other_keys = 0: the payload ends after the AUTH ticket reply (C1) */
TEST(done_without_secret_section)
{
	struct msgr2_auth_result res;

	ASSERT_EQ(0, run_done(f8_payload(), F8_SECRET_OFF, MSGR2_MODE_CRC,
			      &res));
	EXPECT_EQ(0, memcmp(res.session_key, sec_session_key, 16));
	EXPECT_EQ(16U, res.session_key_len);
	EXPECT_EQ(0U, res.con_secret_len);
	EXPECT_EQ(4122U, res.global_id);
	/* but never SECURE without a secret */
	EXPECT_EQ(-EPROTO, run_done(f8_payload(), F8_SECRET_OFF,
				    MSGR2_MODE_SECURE, &res));
}

/* CRC mode with other_keys != 0: a zero-length secret (C4) */
TEST(done_empty_secret)
{
	u8 payload[F8_LEN], zero[4] = { 0 };
	struct msgr2_auth_result res;
	u32 off = F8_SECRET_OFF, xlen;
	int n;

	memcpy(payload, f8_payload(), off);
	n = msgr2_cephx_encrypt(sec_session_key, zero, 4, payload + off + 4,
				sizeof(payload) - off - 4);
	ASSERT_EQ(20, n);
	msgr2_put_le32(payload + off, n);
	off += 4 + n;
	xlen = F8_LEN - F8_EXTRA_OFF;
	ASSERT_LE(off + xlen, sizeof(payload));
	memcpy(payload + off, f8_payload() + F8_EXTRA_OFF, xlen);
	off += xlen;

	ASSERT_EQ(0, run_done(payload, off, MSGR2_MODE_CRC, &res));
	EXPECT_EQ(0U, res.con_secret_len);
	EXPECT_EQ(0, memcmp(res.session_key, sec_session_key, 16));
	EXPECT_EQ(-EPROTO, run_done(payload, off, MSGR2_MODE_SECURE, &res));

	/* an empty secret blob (le32 0) is accepted the same way */
	memcpy(payload, f8_payload(), F8_SECRET_OFF);
	msgr2_put_le32(payload + F8_SECRET_OFF, 0);
	memcpy(payload + F8_SECRET_OFF + 4, f8_payload() + F8_EXTRA_OFF,
	       xlen);
	ASSERT_EQ(0, run_done(payload, F8_SECRET_OFF + 4 + xlen,
			      MSGR2_MODE_CRC, &res));
	EXPECT_EQ(0U, res.con_secret_len);
}

TEST(done_every_truncation)
{
	struct msgr2_auth_result res;
	u8 payload[F8_LEN + 1];
	u32 len;
	int ret;

	for (len = 0; len < F8_LEN; len++) {
		ret = run_done(f8_payload(), len, MSGR2_MODE_CRC, &res);
		if (len == F8_SECRET_OFF) {
			ASSERT_EQ(0, ret);
			continue;
		}
		if (ret != -EBADMSG)
			TH_LOG("truncated at %u: %d", len, ret);
		ASSERT_EQ(-EBADMSG, ret);
	}
	/* trailing garbage */
	memcpy(payload, f8_payload(), F8_LEN);
	payload[F8_LEN] = 0;
	EXPECT_EQ(-EBADMSG, run_done(payload, F8_LEN + 1, MSGR2_MODE_CRC,
				     &res));
}

static int done_flipped(u32 frame_off, u8 mask, struct msgr2_auth_result *res)
{
	u8 payload[F8_LEN];

	memcpy(payload, f8_payload(), F8_LEN);
	payload[frame_off - F8_PAYLOAD] ^= mask;
	return run_done(payload, F8_LEN, MSGR2_MODE_SECURE, res);
}

TEST(done_flipped_ciphertext)
{
	struct msgr2_auth_result res;
	struct msgr2_auth_cephx cx;
	u32 i;

	/* any change to the AUTH client part (48 bytes) is caught */
	for (i = 0; i < 48; i++) {
		ASSERT_EQ(-EBADMSG, done_flipped(F8_AUTH_CT + i, 0x01, &res));
		ASSERT_EQ(-EBADMSG, done_flipped(F8_AUTH_CT + i, 0x80, &res));
	}
	/*
	 * The secret's header block is checked, its padding mostly; CBC has
	 * no integrity, so another change yields a different secret (and a
	 * GCM failure on the first SECURE frame), never the real one.
	 */
	for (i = 0; i < 80; i++) {
		int ret = done_flipped(F8_SECRET_CT + i, 0x01, &res);

		if (i < 16) {
			ASSERT_EQ(-EBADMSG, ret);
		} else if (ret == 0) {
			ASSERT_NE(0, memcmp(res.con_secret, sec_con_secret,
					    64));
		}
	}
	/* lengths, versions, flags */
	EXPECT_EQ(-EBADMSG, done_flipped(0x30, 0x01, &res));	/* op */
	EXPECT_EQ(-EBADMSG, done_flipped(0x36, 0x02, &res));	/* reply v */
	EXPECT_EQ(-EBADMSG, done_flipped(0x37, 0x02, &res));	/* n */
	EXPECT_EQ(-EBADMSG, done_flipped(0x37, 0x01, &res));	/* n = 0 */
	EXPECT_EQ(-EBADMSG, done_flipped(0x3b, 0x01, &res));	/* service */
	EXPECT_EQ(-EBADMSG, done_flipped(0x3f, 0x02, &res));	/* entry v */
	EXPECT_EQ(-EBADMSG, done_flipped(0x40, 0x10, &res));	/* ct len */
	EXPECT_EQ(-EBADMSG, done_flipped(0x74, 0x02, &res));	/* enc flag */
	EXPECT_EQ(-EBADMSG, done_flipped(0x75, 0x01, &res));	/* tkt len */
	EXPECT_EQ(-EBADMSG, done_flipped(0x79, 0x02, &res));	/* tkt v */
	EXPECT_EQ(-EBADMSG, done_flipped(0x82, 0x01, &res));	/* blob len */
	EXPECT_EQ(-EBADMSG, done_flipped(0xe6, 0x01, &res));	/* sec len */
	EXPECT_EQ(-EBADMSG, done_flipped(0xea, 0x10, &res));	/* sec ctlen */
	EXPECT_EQ(-EBADMSG, done_flipped(0x13e, 0x01, &res));	/* extra len */
	EXPECT_EQ(-EBADMSG, done_flipped(0x142, 0x01, &res));	/* extra v */
	EXPECT_EQ(-EBADMSG, done_flipped(0x143, 0x01, &res));	/* extra n */
	EXPECT_EQ(-EBADMSG, done_flipped(0x143, 0x80, &res));	/* extra n */
	/* huge lengths */
	EXPECT_EQ(-EBADMSG, done_flipped(0x43, 0x80, &res));
	EXPECT_EQ(-EBADMSG, done_flipped(0xe9, 0x80, &res));
	EXPECT_EQ(-EBADMSG, done_flipped(0x141, 0x80, &res));
	/* the wrong long-term key */
	cx_init(&cx);
	cx.key[5] ^= 1;
	ASSERT_EQ(0, cx_to_done(&cx));
	EXPECT_EQ(-EBADMSG, msgr2_auth_cephx_ops.done(&cx, 4122,
						      MSGR2_MODE_SECURE,
						      f8_payload(), F8_LEN,
						      &res));
}

TEST(done_refused)
{
	struct msgr2_auth_result res;
	u8 p[6];

	msgr2_put_le16(p, 0x0100);
	msgr2_put_le32(p + 2, (u32)-EACCES);
	EXPECT_EQ(-EACCES, run_done(p, 6, MSGR2_MODE_CRC, &res));
	msgr2_put_le32(p + 2, 1);
	EXPECT_EQ(-EACCES, run_done(p, 6, MSGR2_MODE_CRC, &res));
	msgr2_put_le32(p + 2, 0);
	EXPECT_EQ(-EBADMSG, run_done(p, 6, MSGR2_MODE_CRC, &res));
	msgr2_put_le16(p, 0x0200);
	EXPECT_EQ(-EBADMSG, run_done(p, 6, MSGR2_MODE_CRC, &res));
}

/* done() without AUTH_REPLY_MORE first is out of order */
TEST(done_out_of_order)
{
	struct msgr2_auth_result res;
	struct msgr2_auth_cephx cx;
	u8 out[64];

	cx_init(&cx);
	EXPECT_EQ(-EBADMSG, msgr2_auth_cephx_ops.done(&cx, 1, MSGR2_MODE_CRC,
						      f8_payload(), F8_LEN,
						      &res));
	ASSERT_EQ(22, msgr2_auth_cephx_ops.request(&cx, out, 64));
	EXPECT_EQ(-EBADMSG, msgr2_auth_cephx_ops.done(&cx, 1, MSGR2_MODE_CRC,
						      f8_payload(), F8_LEN,
						      &res));
}

TEST(encrypt_decrypt_roundtrip)
{
	u8 in[64], ct[4 + 96], pt[96];
	u32 len, used;
	int n;

	for (len = 0; len < sizeof(in); len++)
		in[len] = (u8)(len * 5 + 1);
	for (len = 0; len <= 64; len++) {
		n = msgr2_cephx_encrypt(sec_session_key, in, len, ct,
					sizeof(ct));
		ASSERT_EQ((int)(4 + ((9 + len) / 16 + 1) * 16), n);
		ASSERT_EQ((u32)n - 4, msgr2_get_le32(ct));
		n = msgr2_cephx_decrypt(sec_session_key, ct, n, &used, pt,
					sizeof(pt));
		ASSERT_EQ((int)len, n);
		ASSERT_EQ(4 + msgr2_get_le32(ct), used);
		ASSERT_EQ(0, memcmp(pt + 9, in, len));
		/* one byte short */
		ASSERT_EQ(-EBADMSG, msgr2_cephx_decrypt(sec_session_key, ct,
							used - 1, &used, pt,
							sizeof(pt)));
	}
	/* output too small */
	EXPECT_EQ(-ENOSPC, msgr2_cephx_encrypt(sec_session_key, in, 16, ct,
					       35));
	EXPECT_EQ(-ENOSPC, msgr2_cephx_encrypt(sec_session_key, in, 16, ct,
					       3));
	/* plaintext buffer too small */
	n = msgr2_cephx_encrypt(sec_session_key, in, 40, ct, sizeof(ct));
	ASSERT_EQ(4 + 64, n);
	EXPECT_EQ(-EBADMSG, msgr2_cephx_decrypt(sec_session_key, ct, n, &used,
						pt, 48));
	/* zero and unaligned ciphertext lengths */
	msgr2_put_le32(ct, 0);
	EXPECT_EQ(-EBADMSG, msgr2_cephx_decrypt(sec_session_key, ct, n, &used,
						pt, sizeof(pt)));
	msgr2_put_le32(ct, 17);
	EXPECT_EQ(-EBADMSG, msgr2_cephx_decrypt(sec_session_key, ct, n, &used,
						pt, sizeof(pt)));
	EXPECT_EQ(-EBADMSG, msgr2_cephx_decrypt(sec_session_key, ct, 3, &used,
						pt, sizeof(pt)));
}

/* hand-made ciphertexts with a bad header or padding */
static int decrypt_raw(const u8 *plain, u32 len)
{
	u8 buf[4 + 64], pt[64];
	static const u8 iv[16] = "cephsageyudagreg";
	u32 used;

	msgr2_put_le32(buf, len);
	if (msgr2_aes_cbc(sec_session_key, iv, true, plain, buf + 4, len))
		return -EIO;
	return msgr2_cephx_decrypt(sec_session_key, buf, 4 + len, &used, pt,
				   sizeof(pt));
}

TEST(decrypt_rejects_bad_padding)
{
	u8 p[32];

	memset(p, 0, sizeof(p));
	p[0] = 1;
	msgr2_put_le64(p + 1, 0xff009cad8826aa55ULL);
	memset(p + 9, 7, 7);			/* pad 7 */
	EXPECT_EQ(0, decrypt_raw(p, 16));
	p[10] = 6;				/* pad byte differs */
	EXPECT_EQ(-EBADMSG, decrypt_raw(p, 16));
	memset(p + 9, 0, 7);			/* pad 0 */
	EXPECT_EQ(-EBADMSG, decrypt_raw(p, 16));
	memset(p + 9, 8, 7);			/* pad 8 > room (7) */
	EXPECT_EQ(-EBADMSG, decrypt_raw(p, 16));
	memset(p + 16, 17, 16);			/* pad 17 */
	EXPECT_EQ(-EBADMSG, decrypt_raw(p, 32));
	memset(p + 16, 16, 16);			/* a full block of padding */
	EXPECT_EQ(7, decrypt_raw(p, 32));
	p[0] = 2;				/* struct_v */
	EXPECT_EQ(-EBADMSG, decrypt_raw(p, 32));
	p[0] = 1;
	p[3] ^= 1;				/* magic */
	EXPECT_EQ(-EBADMSG, decrypt_raw(p, 32));
}

TEST(parse_key)
{
	static const u8 authtool_key[16] = {
		0x2c, 0x92, 0x44, 0xff, 0x44, 0x75, 0x53, 0xff,
		0x98, 0xf8, 0x4a, 0xe0, 0x2b, 0xfe, 0x4e, 0x15,
	};
	static const char * const bad[] = {
		"",
		"AQCgszFjNBIAABAAZKID+3DrcC7nQPk1S2QXcw=",	/* 39 */
		"AQCgszFjNBIAABAAZKID+3DrcC7nQPk1S2QXcw===",	/* 41 */
		"AQCgszFjNBIAABAAZKID+3DrcC7nQPk1S2QXcw== ",	/* space */
		" AQCgszFjNBIAABAAZKID+3DrcC7nQPk1S2QXcw==",
		"AQCgszFjNBIAABAAZKID+3DrcC7nQPk1S2QXcx==",	/* bits */
		"AQCgszFjNBIAABAAZKID+3DrcC7nQPk1S2QX=w==",	/* '=' */
		"AQCgszFjNBIAABAAZKID-3DrcC7nQPk1S2QXcw==",	/* url-safe */
		"AQCgszFjNBIAABAAZKID+3DrcC7nQPk1S2QXcwAA",	/* 30 bytes */
		"AgCgszFjAAAAABAAZKID+3DrcC7nQPk1S2QXcw==",	/* type 2 */
		"AQCgszFjAAAAACAAZKID+3DrcC7nQPk1S2QXcw==",	/* len 32 */
		"AQCgszFjNBIAABAAZKID+3DrcC7nQPk1S2Q\nXcw=",
	};
	u8 key[16];
	size_t i;

	memset(key, 0, sizeof(key));
	ASSERT_EQ(0, msgr2_cephx_parse_key("AQCgszFjNBIAABAAZKID+3DrcC7nQPk1S2QXcw==",
					   key));
	EXPECT_EQ(0, memcmp(key, sec_admin_key, 16));
	/* as printed by ceph-authtool --gen-print-key */
	ASSERT_EQ(0, msgr2_cephx_parse_key("AQC4fAxrz4DPMRAALJJE/0R1U/+Y+ErgK/5OFQ==",
					   key));
	EXPECT_EQ(0, memcmp(key, authtool_key, 16));

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		memset(key, 0x5a, sizeof(key));
		EXPECT_EQ(-EINVAL, msgr2_cephx_parse_key(bad[i], key));
	}
	EXPECT_EQ(-EINVAL, msgr2_cephx_parse_key(NULL, key));
}

/*
 * The captured AUTH_DONE's extra ticket reply (other_keys MON | MDS | OSD
 * | MGR) decrypts with the AUTH session key: done() keeps one ticket per
 * service, as the mon issued them (secret_id 2, 112-byte blobs).
 */
static void cx_done_captured(struct __test_metadata *_metadata,
			     struct msgr2_auth_cephx *cx)
{
	struct msgr2_auth_result res;

	cx_init(cx);
	ASSERT_EQ(0, cx_to_done(cx));
	ASSERT_EQ(0, run_done_on(cx, f8_payload(), F8_LEN, MSGR2_MODE_SECURE,
				 &res));
}

TEST(done_keeps_service_tickets)
{
	static const u32 svc[MSGR2_CEPHX_N_SVC] = {
		MSGR2_ENTITY_MON, MSGR2_ENTITY_MDS, MSGR2_ENTITY_OSD,
		MSGR2_ENTITY_MGR,
	};
	struct msgr2_auth_cephx cx;
	int i;

	cx_done_captured(_metadata, &cx);
	for (i = 0; i < MSGR2_CEPHX_N_SVC; i++) {
		EXPECT_EQ(svc[i], cx.svc[i].service);
		EXPECT_EQ(2U, cx.svc[i].secret_id);
		EXPECT_EQ(i ? 112U : 96U, cx.svc[i].blob_len);
		/* a fresh key per service, none of them the AUTH one */
		EXPECT_NE(0, memcmp(cx.svc[i].session_key,
				    cx.auth.session_key, 16));
	}
	EXPECT_NE(0, memcmp(cx.svc[2].session_key, cx.svc[3].session_key,
			    16));
}

/* the service side of an authorizer, played here with the ticket's key */
struct osd_side {
	u8 key[16];
	u64 nonce;
	u8 have_challenge;
	u64 challenge_plus_one;
};

/* check an AUTH_REQUEST(_MORE) payload and open its CephXAuthorize */
static int osd_open(const struct msgr2_cephx_ticket *t, u64 gid,
		    const u8 *p, int n, struct osd_side *o)
{
	u8 pt[64];
	u32 off = 22 + t->blob_len, used;
	int m;

	if (n < (int)off + 36 || p[0] != 1 || msgr2_get_le64(p + 1) != gid ||
	    msgr2_get_le32(p + 9) != t->service || p[13] != 1 ||
	    msgr2_get_le64(p + 14) != t->secret_id ||
	    msgr2_get_le32(p + 22) != t->blob_len ||
	    memcmp(p + 26, t->blob, t->blob_len))
		return -1;
	off += 4;
	m = msgr2_cephx_decrypt(t->session_key, p + off, n - off, &used, pt,
				sizeof(pt));
	if (m != 18 || off + used != (u32)n || pt[9] != 2)
		return -1;
	o->nonce = msgr2_get_le64(pt + 10);
	o->have_challenge = pt[18];
	o->challenge_plus_one = msgr2_get_le64(pt + 19);
	return 0;
}

/* CephXAuthorizeReply {v, nonce + 1[, secret]} sealed, as AUTH_DONE has it */
static int osd_reply(const u8 key[16], u8 v, u64 nonce1, u32 slen, u8 *out,
		     u32 cap)
{
	u8 pt[1 + 8 + 4 + 64];
	u32 i;

	pt[0] = v;
	msgr2_put_le64(pt + 1, nonce1);
	msgr2_put_le32(pt + 9, slen);
	for (i = 0; i < 64; i++)
		pt[13 + i] = 0x40 + i;
	return msgr2_cephx_encrypt(key, pt, v >= 2 ? 13 + slen : 9, out, cap);
}

TEST(authorizer_init)
{
	struct msgr2_cephx_authorizer az;
	struct msgr2_auth_cephx cx;

	memset(&cx, 0, sizeof(cx));
	/* not authenticated: no ticket */
	EXPECT_EQ(-ENOKEY, msgr2_cephx_authorizer_init(&az, &cx,
						       MSGR2_ENTITY_OSD));
	cx_done_captured(_metadata, &cx);
	EXPECT_EQ(-EINVAL, msgr2_cephx_authorizer_init(&az, &cx,
						       MSGR2_ENTITY_AUTH));
	EXPECT_EQ(-EINVAL, msgr2_cephx_authorizer_init(&az, &cx,
						       MSGR2_ENTITY_CLIENT));
	ASSERT_EQ(0, msgr2_cephx_authorizer_init(&az, &cx, MSGR2_ENTITY_OSD));
	EXPECT_EQ(4122U, az.global_id);
	EXPECT_EQ(0, memcmp(&az.ticket, &cx.svc[2], sizeof(az.ticket)));
	/* a reset mon session has none */
	msgr2_auth_cephx_ops.reset(&cx);
	EXPECT_EQ(-ENOKEY, msgr2_cephx_authorizer_init(&az, &cx,
						       MSGR2_ENTITY_OSD));
	/* no ticket, no request */
	memset(&az, 0, sizeof(az));
	EXPECT_EQ(-ENOKEY, msgr2_auth_cephx_authorizer_ops.request(&az, NULL,
								   0));
}

/*
 * The captured AUTH_DONE payload with the OSD ticket's blob replaced by
 * @blob_len bytes (0x5a): the extra ticket reply at F8_EXTRA_OFF is
 * rebuilt entry by entry ({le32 service, u8 1, le32 len + client part, u8
 * enc, le32 len + [u8 1, le64 secret_id, le32 len + blob]}), its lengths
 * fixed.  Returns the new payload's length, 0 when the capture is not laid
 * out that way.
 */
static u32 f8_with_osd_blob(u8 *out, u32 cap, u32 blob_len)
{
	const u8 *in = f8_payload(), *x = in + F8_EXTRA_OFF + 4;
	u32 xlen = msgr2_get_le32(in + F8_EXTRA_OFF), i, n, o, plen, tlen;
	u32 service;

	if (F8_EXTRA_OFF + 4 + xlen != F8_LEN || x[0] != 1 ||
	    cap < F8_LEN + blob_len)
		return 0;
	memcpy(out, in, F8_EXTRA_OFF + 4 + 5);
	o = F8_EXTRA_OFF + 4 + 5;
	n = msgr2_get_le32(x + 1);
	x += 5;
	for (i = 0; i < n; i++) {
		service = msgr2_get_le32(x);
		plen = msgr2_get_le32(x + 5);
		/* service, 1, client part, enc */
		memcpy(out + o, x, 9 + plen + 1);
		o += 9 + plen + 1;
		x += 9 + plen + 1;
		tlen = msgr2_get_le32(x);
		if (service != MSGR2_ENTITY_OSD || x[-1]) {
			memcpy(out + o, x, 4 + tlen);
			o += 4 + tlen;
			x += 4 + tlen;
			continue;
		}
		/* [1][secret_id]: kept; the blob: @blob_len bytes */
		msgr2_put_le32(out + o, 1 + 8 + 4 + blob_len);
		memcpy(out + o + 4, x + 4, 9);
		msgr2_put_le32(out + o + 13, blob_len);
		memset(out + o + 17, 0x5a, blob_len);
		o += 17 + blob_len;
		x += 4 + tlen;
	}
	if (x != in + F8_LEN)
		return 0;
	msgr2_put_le32(out + F8_EXTRA_OFF, o - F8_EXTRA_OFF - 4);
	return o;
}

/*
 * A service ticket as large as MSGR2_CEPHX_TICKET_MAX is kept and
 * presented whole; one byte more is not kept, and the authorizer for that
 * service says so (-EMSGSIZE, not -ENOKEY); the other services' tickets
 * are unaffected.
 */
TEST(oversized_service_ticket)
{
	static u8 payload[F8_LEN + MSGR2_CEPHX_TICKET_MAX + 1];
	static struct msgr2_cephx_authorizer az;
	static struct msgr2_auth_cephx cx;
	static u8 req[MSGR2_CEPHX_TICKET_MAX + 128];
	struct msgr2_auth_result res;
	struct osd_side o;
	u32 len;
	int n;

	len = f8_with_osd_blob(payload, sizeof(payload),
			       MSGR2_CEPHX_TICKET_MAX);
	ASSERT_NE(0U, len);
	cx_init(&cx);
	ASSERT_EQ(0, cx_to_done(&cx));
	ASSERT_EQ(0, run_done_on(&cx, payload, len, MSGR2_MODE_SECURE, &res));
	EXPECT_EQ((u32)MSGR2_CEPHX_TICKET_MAX, cx.svc[2].blob_len);
	EXPECT_EQ(0U, cx.svc[2].too_big);
	ASSERT_EQ(0, msgr2_cephx_authorizer_init(&az, &cx, MSGR2_ENTITY_OSD));
	n = msgr2_auth_cephx_authorizer_ops.request(&az, req, sizeof(req));
	ASSERT_EQ(22 + MSGR2_CEPHX_TICKET_MAX + 4 + 36, n);
	EXPECT_EQ(0, osd_open(&az.ticket, 4122, req, n, &o));

	len = f8_with_osd_blob(payload, sizeof(payload),
			       MSGR2_CEPHX_TICKET_MAX + 1);
	ASSERT_NE(0U, len);
	cx_init(&cx);
	ASSERT_EQ(0, cx_to_done(&cx));
	ASSERT_EQ(0, run_done_on(&cx, payload, len, MSGR2_MODE_SECURE, &res));
	EXPECT_EQ(0U, cx.svc[2].blob_len);
	EXPECT_EQ((u32)MSGR2_CEPHX_TICKET_MAX + 1, cx.svc[2].too_big);
	EXPECT_EQ(-EMSGSIZE, msgr2_cephx_authorizer_init(&az, &cx,
							 MSGR2_ENTITY_OSD));
	EXPECT_EQ(0, msgr2_cephx_authorizer_init(&az, &cx, MSGR2_ENTITY_MGR));
	EXPECT_EQ(112U, az.ticket.blob_len);
	/* a reset forgets it */
	msgr2_auth_cephx_ops.reset(&cx);
	EXPECT_EQ(0U, cx.svc[2].too_big);
}

/*
 * The whole exchange against an OSD played with the ticket's session key:
 * authorizer, challenge, authorizer with challenge + 1, reply with nonce +
 * 1 and a connection secret.
 */
TEST(authorizer_exchange)
{
	const struct msgr2_auth_ops *a = &msgr2_auth_cephx_authorizer_ops;
	struct msgr2_cephx_authorizer az;
	struct msgr2_auth_result res;
	struct msgr2_auth_cephx cx;
	struct osd_side o1, o2;
	u8 req[512], more[512], chal[64], done[128], pt[9];
	const struct msgr2_cephx_ticket *t;
	u64 c = 0x1122334455667788ULL;
	int n, m, d;

	cx_done_captured(_metadata, &cx);
	ASSERT_EQ(0, msgr2_cephx_authorizer_init(&az, &cx, MSGR2_ENTITY_OSD));
	t = &az.ticket;
	EXPECT_EQ((u32)MSGR2_AUTH_CEPHX, a->method);

	n = a->request(&az, req, sizeof(req));
	ASSERT_EQ(22 + 112 + 4 + 36, n);
	ASSERT_EQ(0, osd_open(t, 4122, req, n, &o1));
	EXPECT_EQ(0, o1.have_challenge);
	EXPECT_EQ(0U, o1.challenge_plus_one);
	EXPECT_EQ(-ENOSPC, a->request(&az, req, n - 1));

	/* the challenge comes without a length prefix */
	pt[0] = 1;
	msgr2_put_le64(pt + 1, c);
	ASSERT_EQ(36, msgr2_cephx_encrypt(t->session_key, pt, 9, chal,
					  sizeof(chal)));
	n = a->request(&az, req, sizeof(req));
	ASSERT_EQ(0, osd_open(t, 4122, req, n, &o1));
	m = a->reply_more(&az, chal + 4, 32, more, sizeof(more));
	ASSERT_EQ(n, m);
	ASSERT_EQ(0, osd_open(t, 4122, more, m, &o2));
	EXPECT_EQ(o1.nonce, o2.nonce);
	EXPECT_EQ(1, o2.have_challenge);
	EXPECT_EQ(c + 1, o2.challenge_plus_one);
	/* a second challenge is out of order */
	EXPECT_GT(0, a->reply_more(&az, chal + 4, 32, more, sizeof(more)));

	d = osd_reply(t->session_key, 2, o2.nonce + 1, 64, done, sizeof(done));
	ASSERT_LT(0, d);
	memset(&res, 0xa5, sizeof(res));
	ASSERT_EQ(0, a->done(&az, 4122, MSGR2_MODE_SECURE, done, d, &res));
	EXPECT_EQ(4122U, res.global_id);
	EXPECT_EQ(16U, res.session_key_len);
	EXPECT_EQ(0, memcmp(res.session_key, t->session_key, 16));
	EXPECT_EQ(64U, res.con_secret_len);
	EXPECT_EQ(0x40, res.con_secret[0]);
	EXPECT_EQ(0x7f, res.con_secret[63]);
}

/* what the authorizer refuses: a bad challenge, a wrong or short reply */
TEST(authorizer_refusals)
{
	const struct msgr2_auth_ops *a = &msgr2_auth_cephx_authorizer_ops;
	struct msgr2_cephx_authorizer az;
	struct msgr2_auth_result res;
	struct msgr2_auth_cephx cx;
	struct osd_side o;
	u8 req[512], out[512], done[128], pt[9] = { 1 };
	int n, d;

	cx_done_captured(_metadata, &cx);
	ASSERT_EQ(0, msgr2_cephx_authorizer_init(&az, &cx, MSGR2_ENTITY_OSD));
	n = a->request(&az, req, sizeof(req));
	ASSERT_EQ(0, osd_open(&az.ticket, 4122, req, n, &o));

	/* a challenge sealed with another key, or cut, or too long */
	ASSERT_EQ(36, msgr2_cephx_encrypt(cx.svc[3].session_key, pt, 9, out,
					  sizeof(out)));
	EXPECT_EQ(-EBADMSG, a->reply_more(&az, out + 4, 32, req,
					  sizeof(req)));
	n = a->request(&az, req, sizeof(req));
	ASSERT_EQ(0, osd_open(&az.ticket, 4122, req, n, &o));
	EXPECT_EQ(-EBADMSG, a->reply_more(&az, out + 4, 31, req,
					  sizeof(req)));
	EXPECT_EQ(-EBADMSG, a->reply_more(&az, out, 64, req, sizeof(req)));

	/* the reply: wrong nonce, wrong key, no secret in secure mode */
	n = a->request(&az, req, sizeof(req));
	ASSERT_EQ(0, osd_open(&az.ticket, 4122, req, n, &o));
	d = osd_reply(az.ticket.session_key, 2, o.nonce + 2, 64, done,
		      sizeof(done));
	EXPECT_EQ(-EACCES, a->done(&az, 4122, MSGR2_MODE_CRC, done, d, &res));

	n = a->request(&az, req, sizeof(req));
	ASSERT_EQ(0, osd_open(&az.ticket, 4122, req, n, &o));
	d = osd_reply(cx.svc[3].session_key, 2, o.nonce + 1, 64, done,
		      sizeof(done));
	EXPECT_EQ(-EBADMSG, a->done(&az, 4122, MSGR2_MODE_CRC, done, d,
				    &res));

	n = a->request(&az, req, sizeof(req));
	ASSERT_EQ(0, osd_open(&az.ticket, 4122, req, n, &o));
	d = osd_reply(az.ticket.session_key, 1, o.nonce + 1, 0, done,
		      sizeof(done));
	EXPECT_EQ(-EPROTO, a->done(&az, 4122, MSGR2_MODE_SECURE, done, d,
				   &res));

	/* crc mode: a v1 reply (no secret) is fine; every cut is not */
	n = a->request(&az, req, sizeof(req));
	ASSERT_EQ(0, osd_open(&az.ticket, 4122, req, n, &o));
	d = osd_reply(az.ticket.session_key, 2, o.nonce + 1, 64, done,
		      sizeof(done));
	for (n = 0; n < d; n++) {
		az.state = 1;
		EXPECT_EQ(-EBADMSG, a->done(&az, 4122, MSGR2_MODE_CRC, done, n,
					    &res));
	}
	/* a v1 reply (no secret) in crc mode */
	d = osd_reply(az.ticket.session_key, 1, o.nonce + 1, 0, done,
		      sizeof(done));
	az.state = 1;
	EXPECT_EQ(0, a->done(&az, 4122, MSGR2_MODE_CRC, done, d, &res));
	EXPECT_EQ(0U, res.con_secret_len);
}

/*
 * The cephx server (a listener): AUTH_REQUEST for @name asking for
 * global_id @asked_gid (the challenge's return, 1 when it is one, in
 * *@chal_ret), then CephXAuthenticate as Ceph encodes it, struct_v @v: 1
 * (no other_keys), 2 and 3 (other_keys), proving @key.  Returns the
 * proof's return; the global_id given in *@gid.
 */
static int srv_auth(struct msgr2_auth_cephx_server *sv, const char *name,
		    const u8 key[16], u8 v, u64 asked_gid, int *chal_ret,
		    u64 *gid)
{
	u8 in[64], out[2048], chal[16], enc[36];
	struct msgr2_auth_result res;
	u64 cch = 0x1122334455667788ULL, proof = 0;
	u32 olen = 0, n, len = (u32)strlen(name);
	int ret, i;

	memset(&res, 0, sizeof(res));
	in[0] = 10;				/* AUTH_REQUEST, mon mode */
	msgr2_put_le32(in + 1, MSGR2_ENTITY_CLIENT);
	msgr2_put_le32(in + 5, len);
	memcpy(in + 9, name, len);
	msgr2_put_le64(in + 9 + len, asked_gid);
	*chal_ret = msgr2_auth_cephx_server_ops.accept(sv, false, 1, in,
						       17 + len, out,
						       sizeof(out), &olen,
						       &res);
	if (*chal_ret != 1)
		return -1000;
	if (olen != 9 || out[0] != 1)
		return -1001;
	msgr2_put_le64(chal, msgr2_get_le64(out + 1));
	msgr2_put_le64(chal + 8, cch);
	if (msgr2_cephx_encrypt(key, chal, 16, enc, sizeof(enc)) !=
	    sizeof(enc))
		return -2000;
	for (i = 0; i < 32; i += 8)
		proof ^= msgr2_get_le64(enc + i);
	msgr2_put_le16(in, 0x0100);		/* GET_AUTH_SESSION_KEY */
	n = 2;
	in[n++] = v;
	msgr2_put_le64(in + n, cch);
	n += 8;
	msgr2_put_le64(in + n, proof);
	n += 8;
	in[n++] = 1;				/* old ticket: empty blob */
	msgr2_put_le64(in + n, 0);
	n += 8;
	msgr2_put_le32(in + n, 0);
	n += 4;
	if (v >= 2) {				/* other_keys */
		msgr2_put_le32(in + n, 0x17);
		n += 4;
	}
	ret = msgr2_auth_cephx_server_ops.accept(sv, true, 1, in, n, out,
						 sizeof(out), &olen, &res);
	*gid = res.global_id;
	msgr2_auth_cephx_server_ops.reset(sv);
	return ret;
}

/* client.admin with the first entity's key; the global_id is the server's */
static int srv_authenticate(struct msgr2_auth_cephx_server *sv, u8 v,
			    u64 asked_gid, u64 *gid)
{
	int chal, ret;

	ret = srv_auth(sv, "admin", sv->keys[0].key, v, asked_gid, &chal,
		       gid);
	return chal == 1 ? ret : -1000 + chal;
}

TEST(server_authenticate_versions_and_gid)
{
	struct msgr2_cephx_entity ent = {
		.entity_type = MSGR2_ENTITY_CLIENT,
		.name = "admin",
	};
	struct msgr2_auth_cephx_server sv;
	u64 gid = 0;
	u8 v;

	memset(ent.key, 7, sizeof(ent.key));
	memset(&sv, 0, sizeof(sv));
	sv.keys = &ent;
	sv.n_keys = 1;
	for (v = 1; v <= 3; v++) {
		EXPECT_EQ(0, srv_authenticate(&sv, v, 0, &gid))
			TH_LOG("CephXAuthenticate struct_v %u", v);
		EXPECT_EQ(4096ULL, gid);
	}
	/* a global_id of the client's choice, with no ticket: not given */
	EXPECT_EQ(0, srv_authenticate(&sv, 3, 0x1234, &gid));
	EXPECT_EQ(4096ULL, gid);
	sv.give_global_id = 0x77770001ULL;
	EXPECT_EQ(0, srv_authenticate(&sv, 2, 0, &gid));
	EXPECT_EQ(0x77770001ULL, gid);
	memset(&sv, 0, sizeof(sv));
	memset(&ent, 0, sizeof(ent));
}

/* @name proving @key, struct_v 3: the challenge's return in *@chal_ret */
static int srv_try(struct msgr2_auth_cephx_server *sv, const char *name,
		   const u8 key[16], int *chal_ret)
{
	u64 gid;

	return srv_auth(sv, name, key, 3, 0, chal_ret, &gid);
}

/*
 * The server answers a request for an entity it has no key for as it
 * answers one for a known entity (a challenge), and refuses its proof as
 * it refuses a wrong key: nothing tells a client without a key which
 * entities a listener knows.  A proof made with the all-zero key the
 * unknown entity is checked against is refused too.
 */
TEST(server_unknown_entity_challenged_then_refused)
{
	struct msgr2_cephx_entity ent = {
		.entity_type = MSGR2_ENTITY_CLIENT,
		.name = "admin",
	};
	struct msgr2_auth_cephx_server sv;
	u8 wrong[16], zero[16] = { 0 };
	int chal;

	memset(ent.key, 7, sizeof(ent.key));
	memset(wrong, 8, sizeof(wrong));
	memset(&sv, 0, sizeof(sv));
	sv.keys = &ent;
	sv.n_keys = 1;

	EXPECT_EQ(0, srv_try(&sv, "admin", ent.key, &chal));
	EXPECT_EQ(1, chal);
	EXPECT_EQ(-EACCES, srv_try(&sv, "admin", wrong, &chal));
	EXPECT_EQ(1, chal);
	EXPECT_EQ(-EACCES, srv_try(&sv, "nobody", wrong, &chal));
	EXPECT_EQ(1, chal) TH_LOG("an unknown entity was told so at once");
	EXPECT_EQ(-EACCES, srv_try(&sv, "nobody", zero, &chal));
	EXPECT_EQ(1, chal);
	EXPECT_EQ(-EACCES, srv_try(&sv, "nobody", ent.key, &chal));
	memset(&sv, 0, sizeof(sv));
	memset(&ent, 0, sizeof(ent));
}

TEST_HARNESS_MAIN
