// SPDX-License-Identifier: GPL-2.0
/*
 * msgr2 engine: client <-> server in one process (lib_pair), both modes,
 * READY traffic, and the handshake's negative paths.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* the harness compares int literals with unsigned fields */
#pragma GCC diagnostic ignored "-Wsign-compare"

#include "kselftest_harness.h"
#include "lib_pair.h"
#include "auth_cephx.h"

static bool both_ready(struct pair *p)
{
	return p->cl.c && p->sv.c && msgr2_conn_ready(p->cl.c) &&
	       msgr2_conn_ready(p->sv.c);
}

static void fill(u8 *b, u32 len, u32 seed)
{
	u32 i;

	for (i = 0; i < len; i++)
		b[i] = (u8)(seed * 131 + i * 7);
}

/* What traffic() sends from the client: front and middle lengths. */
#define TRAFFIC_FRONT	300
#define TRAFFIC_MIDDLE	200

/* The check of the 8 messages traffic() sent each way: 0, or < 0. */
static int traffic_check(struct pair *p, const u8 *f, const u8 *m,
			 const u8 *d, u32 big, int n0c, int n0s)
{
	int i;

	if (p->cl.n_rx != n0c + 8 || p->sv.n_rx != n0s + 8)
		return -3;
	for (i = 0; i < 8; i++) {
		struct pair_rx *s = &p->sv.rx[n0s + i];
		struct pair_rx *c = &p->cl.rx[n0c + i];

		if (s->hdr.type != 100 + i || c->hdr.type != 200 + i)
			return -4;
		if (s->len[0] != (i & 1 ? TRAFFIC_FRONT : 0) ||
		    s->len[1] != (i & 2 ? TRAFFIC_MIDDLE : 0) ||
		    s->len[2] != (i & 4 ? big : 0) ||
		    c->len[0] != (i & 1 ? 17 : 0) ||
		    c->len[1] != (i & 2 ? 1 : 0) ||
		    c->len[2] != (i & 4 ? big - 1 : 0))
			return -5;
		if ((s->len[0] && memcmp(s->buf[0], f, s->len[0])) ||
		    (s->len[1] && memcmp(s->buf[1], m, s->len[1])) ||
		    (s->len[2] && memcmp(s->buf[2], d, s->len[2])))
			return -6;
		if ((c->len[0] && memcmp(c->buf[0], f, c->len[0])) ||
		    (c->len[1] && memcmp(c->buf[1], m, c->len[1])) ||
		    (c->len[2] && memcmp(c->buf[2], d, c->len[2])))
			return -7;
		if (i && (s->hdr.seq != s[-1].hdr.seq + 1 ||
			  c->hdr.seq != c[-1].hdr.seq + 1))
			return -8;
	}
	return 0;
}

/*
 * All 8 front/middle/data combinations, both ways; check them (sizes and
 * bytes on both sides, in order).
 */
static int traffic(struct pair *p, u32 big)
{
	static u8 f[TRAFFIC_FRONT], m[TRAFFIC_MIDDLE];
	u8 *d = malloc(big);
	int i, ret = 0, n0c = p->cl.n_rx, n0s = p->sv.n_rx;

	if (!d)
		return -ENOMEM;
	fill(f, sizeof(f), 1);
	fill(m, sizeof(m), 2);
	fill(d, big, 3);
	for (i = 0; i < 8 && !ret; i++) {
		if (pair_send(&p->cl, 100 + i, f, i & 1 ? sizeof(f) : 0,
			      m, i & 2 ? sizeof(m) : 0, d, i & 4 ? big : 0))
			ret = -1;
		else if (pair_send(&p->sv, 200 + i, f, i & 1 ? 17 : 0,
				   m, i & 2 ? 1 : 0, d, i & 4 ? big - 1 : 0))
			ret = -2;
	}
	if (!ret) {
		pair_pump(p);
		ret = traffic_check(p, f, m, d, big, n0c, n0s);
	}
	free(d);
	return ret;
}

/* pump, but let at most @s2c bytes go from the server to the client */
static void move_limited(struct pair *p, u64 s2c)
{
	u64 a, b;

	do {
		a = pair_move(p, true, 0);
		b = s2c ? pair_move(p, false, s2c) : 0;
		s2c -= b;
	} while (a || b);
}

TEST(crc_ready_and_traffic)
{
	struct pair *p = pair_new(MSGR2_MODE_CRC);

	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	ASSERT_TRUE(both_ready(p));
	EXPECT_EQ(MSGR2_MODE_CRC, msgr2_conn_mode(p->cl.c));
	EXPECT_EQ(MSGR2_MODE_CRC, msgr2_conn_mode(p->sv.c));
	EXPECT_EQ(1, p->cl.n_ready);
	EXPECT_EQ(0, p->cl.ready_arg);
	/* the client learnt its IP from the server's HELLO */
	EXPECT_EQ(127, msgr2_conn_peer_view(p->cl.c)->sa[4]);
	EXPECT_EQ(MSGR2_ENTITY_CLIENT, pair_session(&p->sv)->peer_type);
	EXPECT_EQ(4096, pair_session(&p->sv)->peer_gid);
	EXPECT_NE(0, p->cl.s.server_cookie);
	EXPECT_EQ(0, traffic(p, 5000));
	/* lossless: after ACK frames every message is acked */
	pair_pump(p);
	EXPECT_EQ(8, p->cl.n_tx_ok);
	EXPECT_EQ(8, p->sv.n_tx_ok);
	EXPECT_EQ(NULL, p->cl.s.sent_head);
	EXPECT_EQ(8, p->cl.s.acked_seq);
	pair_free(p);
}

TEST(partial_reads_and_eagain)
{
	struct pair *p = pair_new(MSGR2_MODE_CRC);

	p->chunk = 3;
	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	ASSERT_TRUE(both_ready(p));
	p->sv.rx_eagain = 5;
	EXPECT_EQ(0, traffic(p, 100));
	EXPECT_GE(p->sv.n_eagain, 1);
	pair_free(p);
}

static u64 wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (u64)ts.tv_sec * 1000000000ULL + (u64)ts.tv_nsec;
}

TEST(keepalive_round_trip)
{
	struct pair *p = pair_new(MSGR2_MODE_CRC);
	u64 before;

	p->cl.cfg.keepalive_ms = 1000;
	ASSERT_EQ(0, pair_connect(p));
	ASSERT_EQ(0, msgr2_tick(p->cl.c, 5));
	pair_pump(p);
	ASSERT_TRUE(both_ready(p));
	ASSERT_EQ(0, msgr2_keepalive(p->cl.c, 123456789012ULL));
	pair_pump(p);
	EXPECT_EQ(1, p->cl.n_ka_ack);
	EXPECT_EQ(123456789012ULL, p->cl.ka_ack_stamp);
	/* from the timer */
	ASSERT_EQ(0, msgr2_tick(p->cl.c, 500));
	pair_pump(p);
	EXPECT_EQ(1, p->cl.n_ka_ack);
	before = wall_ns();
	ASSERT_EQ(0, msgr2_tick(p->cl.c, 1005));
	pair_pump(p);
	EXPECT_EQ(2, p->cl.n_ka_ack);
	/* stamped by the wall clock, as Ceph's are, not by @now_ms */
	EXPECT_GE(p->cl.ka_ack_stamp, before);
	EXPECT_LE(p->cl.ka_ack_stamp, wall_ns());
	/* the server may ping too */
	ASSERT_EQ(0, msgr2_keepalive(p->sv.c, 1));
	pair_pump(p);
	EXPECT_EQ(1, p->sv.n_ka_ack);
	pair_free(p);
}

TEST(secure_mode)
{
	struct pair *p = pair_new(MSGR2_MODE_SECURE);

	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	ASSERT_TRUE(both_ready(p));
	EXPECT_EQ(MSGR2_MODE_SECURE, msgr2_conn_mode(p->cl.c));
	EXPECT_EQ(MSGR2_MODE_SECURE, msgr2_conn_mode(p->sv.c));
	EXPECT_EQ(MSGR2_MODE_SECURE, p->cl.auth_mode);
	EXPECT_EQ(5000, pair_session(&p->sv)->peer_gid);
	EXPECT_EQ(0, traffic(p, 70000));
	ASSERT_EQ(0, msgr2_keepalive(p->cl.c, 77));
	pair_pump(p);
	EXPECT_EQ(1, p->cl.n_ka_ack);
	pair_free(p);
}

TEST(secure_multi_round_auth_and_reconnect)
{
	struct pair *p = pair_new(MSGR2_MODE_SECURE);

	p->sv.fixed.rounds = 2;
	p->chunk = 7;
	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	ASSERT_TRUE(both_ready(p));
	EXPECT_EQ(0, traffic(p, 333));
	pair_disconnect(p);
	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	ASSERT_TRUE(both_ready(p));
	EXPECT_EQ(1, p->cl.ready_arg);		/* resumed */
	EXPECT_EQ(0, traffic(p, 50));
	pair_free(p);
}

TEST(secure_needs_full_secret)
{
	struct pair *p = pair_new(MSGR2_MODE_SECURE);

	p->sv.fixed.con_secret_len = 32;	/* C1: < 40 bytes */
	p->sv.cfg.n_modes = 1;			/* server: secure only */
	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	EXPECT_FALSE(msgr2_conn_ready(p->sv.c));
	EXPECT_EQ(MSGR2_R_AUTH, msgr2_conn_reason(p->sv.c));
	pair_free(p);
}

TEST(crc_with_session_key)
{
	struct pair *p = pair_new(MSGR2_MODE_SECURE);

	/* a keyed method in crc mode: non-zero HMAC signatures */
	p->cl.cfg.n_modes = 1;
	p->cl.cfg.modes[0] = MSGR2_MODE_CRC;
	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	ASSERT_TRUE(both_ready(p));
	EXPECT_EQ(MSGR2_MODE_CRC, msgr2_conn_mode(p->cl.c));
	EXPECT_EQ(0, traffic(p, 10));
	pair_free(p);
}

TEST(signature_mismatch)
{
	struct pair *p = pair_new(MSGR2_MODE_SECURE);

	p->cl.fixed.session_key[3] ^= 1;
	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	EXPECT_EQ(MSGR2_R_SIGNATURE, msgr2_conn_reason(p->cl.c));
	EXPECT_FALSE(msgr2_conn_ready(p->sv.c));
	EXPECT_EQ(-EACCES, msgr2_tx_done(p->cl.c, 1));
	pair_free(p);

	/* the server checks too: hold back its signature */
	p = pair_new(MSGR2_MODE_SECURE);
	p->cl.fixed.session_key[3] ^= 1;
	ASSERT_EQ(0, pair_connect(p));
	move_limited(p, 26 + 72 + 52);
	EXPECT_EQ(MSGR2_R_SIGNATURE, msgr2_conn_reason(p->sv.c));
	pair_free(p);
}

/*
 * AUTH_SIGNATURE is checked in crc mode too, not only in secure mode: with
 * a keyed method negotiated down to crc mode, a client whose session key
 * differs fails with SIGNATURE, and so does the server when it checks
 * first (its own signature held back).
 */
TEST(signature_mismatch_crc)
{
	struct pair *p = pair_new(MSGR2_MODE_SECURE);

	p->cl.cfg.n_modes = 1;
	p->cl.cfg.modes[0] = MSGR2_MODE_CRC;
	p->cl.fixed.session_key[3] ^= 1;
	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	EXPECT_EQ(MSGR2_MODE_CRC, msgr2_conn_mode(p->cl.c));
	EXPECT_EQ(MSGR2_R_SIGNATURE, msgr2_conn_reason(p->cl.c));
	EXPECT_FALSE(msgr2_conn_ready(p->cl.c));
	EXPECT_FALSE(msgr2_conn_ready(p->sv.c));
	pair_free(p);

	p = pair_new(MSGR2_MODE_SECURE);
	p->cl.cfg.n_modes = 1;
	p->cl.cfg.modes[0] = MSGR2_MODE_CRC;
	p->cl.fixed.session_key[3] ^= 1;
	ASSERT_EQ(0, pair_connect(p));
	move_limited(p, 26 + 72 + 52);
	EXPECT_EQ(MSGR2_MODE_CRC, msgr2_conn_mode(p->sv.c));
	EXPECT_EQ(MSGR2_R_SIGNATURE, msgr2_conn_reason(p->sv.c));
	EXPECT_FALSE(msgr2_conn_ready(p->sv.c));
	pair_free(p);
}

/*
 * A server sends at most M2_MAX_AUTH_ROUNDS (16) AUTH_REPLY_MOREs per
 * AUTH_REQUEST: a method that needs 16 rounds completes, one that needs 17
 * fails with AUTH.
 */
TEST(auth_rounds_limit_server)
{
	struct pair *p = pair_new(MSGR2_MODE_SECURE);

	p->sv.fixed.rounds = 16;
	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	ASSERT_TRUE(both_ready(p));
	EXPECT_EQ(0, traffic(p, 10));
	pair_free(p);

	p = pair_new(MSGR2_MODE_SECURE);
	p->sv.fixed.rounds = 17;
	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	EXPECT_FALSE(msgr2_conn_ready(p->sv.c));
	EXPECT_EQ(MSGR2_R_AUTH, msgr2_conn_reason(p->sv.c));
	pair_free(p);
}

/*
 * The sender's limits are inclusive and per segment: msgr2_send() takes
 * front, middle and data at exactly cfg.max_seg_len[] and refuses one byte
 * more with -EMSGSIZE; in secure mode a tail (padded segments, epilogue,
 * tag) of exactly tx_scratch_len fits and 16 bytes more do not, both in
 * msgr2_send() and for a message queued before the connection existed
 * (given back with -EMSGSIZE, the next one still gets seq 1).
 */
TEST(send_limits_exact)
{
	static const u32 max[3] = { 100, 200, 300 };
	struct pair *p = pair_new(MSGR2_MODE_CRC);
	static u8 big[4096];
	int i;

	memcpy(p->cl.cfg.max_seg_len, max, sizeof(max));
	ASSERT_EQ(0, pair_connect(p));
	for (i = 0; i < 3; i++) {
		u32 len[3] = { 0 };

		len[i] = max[i] + 1;
		EXPECT_EQ(-EMSGSIZE, pair_send(&p->cl, 1, big, len[0], big,
					       len[1], big, len[2])) {
			TH_LOG("segment %d one over", i + 1);
		}
	}
	EXPECT_EQ(0, pair_send(&p->cl, 1, big, max[0], big, max[1], big,
			       max[2]));
	pair_pump(p);
	ASSERT_TRUE(both_ready(p));
	ASSERT_EQ(1, p->sv.n_rx);
	EXPECT_EQ(max[2], p->sv.rx[0].len[MSGR2_DATA]);
	pair_free(p);

	/* secure: 1024 = pad16(992) + 16 (epilogue) + 16 (tag) */
	p = pair_new(MSGR2_MODE_SECURE);
	p->cl.cfg.tx_scratch_len = 1024;
	ASSERT_EQ(0, pair_send(&p->cl, 1, big, 993, NULL, 0, NULL, 0));
	ASSERT_EQ(0, pair_send(&p->cl, 2, big, 992, NULL, 0, NULL, 0));
	ASSERT_EQ(0, pair_connect(p));
	EXPECT_EQ(-EMSGSIZE, pair_send(&p->cl, 3, big, 993, NULL, 0, NULL,
				       0));
	EXPECT_EQ(0, pair_send(&p->cl, 4, NULL, 0, NULL, 0, big, 992));
	pair_pump(p);
	ASSERT_TRUE(both_ready(p));
	EXPECT_EQ(1, p->cl.n_tx_err);
	ASSERT_EQ(2, p->sv.n_rx);
	EXPECT_EQ(2, p->sv.rx[0].hdr.type);
	EXPECT_EQ(1, p->sv.rx[0].hdr.seq);
	EXPECT_EQ(4, p->sv.rx[1].hdr.type);
	EXPECT_EQ(2, p->sv.rx[1].hdr.seq);
	pair_free(p);
}

TEST(bad_method_then_second_method)
{
	struct pair *p = pair_new(MSGR2_MODE_CRC);

	/* client prefers the keyed method, the server only has NONE */
	p->cl.cfg.n_auth = 2;
	p->cl.cfg.auth[0] = &pair_auth_fixed_ops;
	p->cl.cfg.auth_priv[0] = &p->cl.fixed;
	p->cl.cfg.auth[1] = &msgr2_auth_none_ops;
	p->cl.cfg.auth_priv[1] = &p->cl.none;
	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	ASSERT_TRUE(both_ready(p));
	EXPECT_EQ(4096, p->cl.none.global_id);
	pair_free(p);

	/* server refuses the only method: client gives up */
	p = pair_new(MSGR2_MODE_SECURE);
	p->sv.fixed.refuse = true;
	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	EXPECT_EQ(MSGR2_R_AUTH, msgr2_conn_reason(p->cl.c));
	EXPECT_FALSE(msgr2_conn_ready(p->sv.c));
	pair_free(p);
}

TEST(auth_none_needs_crc)
{
	struct pair *p = pair_new(MSGR2_MODE_CRC);

	/* the client allows only secure: AUTH_NONE cannot be used at all */
	p->cl.cfg.modes[0] = MSGR2_MODE_SECURE;
	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	EXPECT_EQ(MSGR2_R_AUTH, msgr2_conn_reason(p->cl.c));
	pair_free(p);
}

/*
 * A secure-only server and a crc-only client: the method is fine, the
 * mode is not, and the client says so (MODE, not AUTH).
 */
TEST(mode_refused)
{
	struct pair *p = pair_new(MSGR2_MODE_SECURE);

	p->sv.cfg.n_modes = 1;
	p->sv.cfg.modes[0] = MSGR2_MODE_SECURE;
	p->cl.cfg.n_modes = 1;
	p->cl.cfg.modes[0] = MSGR2_MODE_CRC;
	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	EXPECT_EQ(MSGR2_R_MODE, msgr2_conn_reason(p->cl.c));
	EXPECT_STREQ("connection mode refused by the peer",
		     msgr2_reason_str(MSGR2_R_MODE));
	EXPECT_FALSE(msgr2_conn_ready(p->sv.c));
	pair_free(p);
}

static void feed_frame(struct msgr2_conn *c, u8 tag, const void *pl,
		       u32 len)
{
	const void *seg[4] = { pl };
	u32 lens[4] = { len };
	u8 buf[512];
	size_t n = pair_frame_crc(buf, sizeof(buf), tag, 1, seg, lens, 0);

	msgr2_rx_feed(c, buf, n, NULL);
}

/*
 * A server answers at most M2_MAX_RETRIES (16) AUTH_REQUESTs with
 * AUTH_BAD_METHOD; the 17th fails the connection with AUTH.
 */
TEST(auth_request_retry_limit_server)
{
	struct pair *p = pair_new(MSGR2_MODE_CRC);
	u8 req[16] = { 0 };
	int i;

	/* method 99 (unknown), preferred modes [crc], empty payload */
	msgr2_put_le32(req, 99);
	msgr2_put_le32(req + 4, 1);
	msgr2_put_le32(req + 8, MSGR2_MODE_CRC);
	msgr2_put_le32(req + 12, 0);
	ASSERT_EQ(0, pair_connect(p));
	/*
	 * the client's banner, the server's banner and HELLO, then only
	 * the client's HELLO (72 bytes): the server waits in AUTH
	 */
	pair_move(p, true, 26);
	pair_move(p, false, 0);
	pair_move(p, true, 72);
	for (i = 1; i <= 16; i++) {
		feed_frame(p->sv.c, MSGR2_TAG_AUTH_REQUEST, req, sizeof(req));
		ASSERT_EQ(MSGR2_R_NONE, msgr2_conn_reason(p->sv.c)) {
			TH_LOG("request %d", i);
		}
	}
	feed_frame(p->sv.c, MSGR2_TAG_AUTH_REQUEST, req, sizeof(req));
	EXPECT_EQ(MSGR2_R_AUTH, msgr2_conn_reason(p->sv.c));
	pair_free(p);
}

TEST(order_message_before_ident)
{
	struct pair *p = pair_new(MSGR2_MODE_CRC);
	u8 hdr[41] = { 1 };
	const void *seg[4] = { hdr };
	u32 lens[4] = { 41 };
	u8 buf[128];
	size_t n;

	ASSERT_EQ(0, pair_connect(p));
	/* server: banner, HELLO, AUTH_DONE reach the client; its signature not */
	move_limited(p, 26 + 72 + 52);
	EXPECT_FALSE(msgr2_conn_ready(p->sv.c));
	EXPECT_EQ(MSGR2_R_NONE, msgr2_conn_reason(p->sv.c));
	n = pair_frame_crc(buf, sizeof(buf), MSGR2_TAG_MESSAGE, 1, seg, lens,
			   0);
	msgr2_rx_feed(p->sv.c, buf, n, NULL);
	EXPECT_EQ(MSGR2_R_ORDER, msgr2_conn_reason(p->sv.c));
	pair_free(p);
}

TEST(order_server_ident_in_auth)
{
	struct pair *p = pair_new(MSGR2_MODE_CRC);
	u8 junk[8] = { 0 };

	ASSERT_EQ(0, pair_connect(p));
	move_limited(p, 26 + 72);	/* banner + HELLO: client in AUTH */
	EXPECT_EQ(MSGR2_R_NONE, msgr2_conn_reason(p->cl.c));
	feed_frame(p->cl.c, MSGR2_TAG_SERVER_IDENT, junk, sizeof(junk));
	EXPECT_EQ(MSGR2_R_ORDER, msgr2_conn_reason(p->cl.c));
	/* a failed connection stays failed */
	EXPECT_EQ(-EPROTO, msgr2_rx_feed(p->cl.c, junk, 8, NULL));
	EXPECT_EQ(-EPROTO, msgr2_tick(p->cl.c, 0));
	pair_free(p);
}

TEST(server_wait)
{
	struct pair *p = pair_new(MSGR2_MODE_CRC);

	ASSERT_EQ(0, pair_connect(p));
	/* up to the server's AUTH_SIGNATURE; hold back SERVER_IDENT */
	move_limited(p, 26 + 72 + 52 + 68);
	EXPECT_EQ(MSGR2_R_NONE, msgr2_conn_reason(p->cl.c));
	feed_frame(p->cl.c, MSGR2_TAG_WAIT, NULL, 0);
	EXPECT_EQ(MSGR2_R_WAIT, msgr2_conn_reason(p->cl.c));
	EXPECT_EQ(-EAGAIN, msgr2_rx_eof(p->cl.c));
	pair_free(p);
}

TEST(missing_features)
{
	struct pair *p = pair_new(MSGR2_MODE_CRC);

	p->sv.cfg.features_required = 1ULL << 40;	/* not in the set */
	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	EXPECT_EQ(MSGR2_R_MISSING_FEATURES, msgr2_conn_reason(p->cl.c));
	/* the server sent IDENT_MISSING_FEATURES and stays open */
	EXPECT_EQ(MSGR2_R_NONE, msgr2_conn_reason(p->sv.c));
	pair_free(p);

	/* the client requires what the server lacks */
	p = pair_new(MSGR2_MODE_CRC);
	p->cl.cfg.features_required = 1ULL << 63;
	p->sv.cfg.features_supported = MSGR2_FEATURES_DEFAULT;
	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	EXPECT_EQ(MSGR2_R_MISSING_FEATURES, msgr2_conn_reason(p->cl.c));
	pair_free(p);
}

TEST(peer_checks)
{
	struct pair *p = pair_new(MSGR2_MODE_CRC);

	p->cl.cfg.peer_type = MSGR2_ENTITY_OSD;		/* it is a mon */
	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	EXPECT_EQ(MSGR2_R_PEER, msgr2_conn_reason(p->cl.c));
	pair_free(p);

	p = pair_new(MSGR2_MODE_CRC);
	p->cl.cfg.target.nonce = 1;	/* not the server's address (C5) */
	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	EXPECT_EQ(MSGR2_R_PEER, msgr2_conn_reason(p->sv.c));
	pair_free(p);
}

TEST(handshake_timeout)
{
	struct pair *p = pair_new(MSGR2_MODE_CRC);

	ASSERT_EQ(0, pair_connect(p));
	ASSERT_EQ(0, msgr2_tick(p->cl.c, 1000));
	ASSERT_EQ(0, msgr2_tick(p->cl.c, 10999));
	EXPECT_EQ(-ETIMEDOUT, msgr2_tick(p->cl.c, 11000));
	EXPECT_EQ(MSGR2_R_TIMEOUT, msgr2_conn_reason(p->cl.c));
	/* READY connections do not time out */
	ASSERT_EQ(0, msgr2_tick(p->sv.c, 0));
	pair_free(p);
}

TEST(session_reset_unknown_cookie)
{
	struct pair *p = pair_new(MSGR2_MODE_CRC);
	u8 x = 1;

	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	ASSERT_TRUE(both_ready(p));
	pair_disconnect(p);
	p->cl.s.client_cookie ^= 0x5555;	/* the server never saw it */
	ASSERT_EQ(0, pair_send(&p->cl, 9, &x, 1, NULL, 0, NULL, 0));
	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	ASSERT_TRUE(both_ready(p));
	EXPECT_EQ(1, p->cl.n_reset);
	EXPECT_EQ(0, p->cl.ready_arg);		/* a new session */
	/* full reset drops what was queued */
	EXPECT_EQ(1, p->cl.n_tx_err);
	EXPECT_EQ(0, traffic(p, 10));
	EXPECT_EQ(1, p->sv.rx[0].hdr.seq);
	pair_free(p);
}

TEST(session_retry_global)
{
	struct pair *p = pair_new(MSGR2_MODE_CRC);

	p->cl.cfg.global_seq = 50;
	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	ASSERT_TRUE(both_ready(p));
	pair_disconnect(p);
	p->cl.cfg.global_seq = 3;		/* older than what we used */
	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	ASSERT_TRUE(both_ready(p));
	EXPECT_EQ(1, p->cl.ready_arg);
	EXPECT_GT(p->cl.s.global_seq, 50);
	EXPECT_EQ(0, traffic(p, 10));
	pair_free(p);
}

TEST(session_retry)
{
	struct pair *p = pair_new(MSGR2_MODE_CRC);

	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	ASSERT_TRUE(both_ready(p));
	pair_disconnect(p);
	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	ASSERT_TRUE(both_ready(p));
	pair_disconnect(p);
	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	ASSERT_TRUE(both_ready(p));
	EXPECT_EQ(2, pair_session(&p->sv)->connect_seq);
	pair_disconnect(p);
	p->cl.s.connect_seq = 0;		/* behind the server's count */
	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	ASSERT_TRUE(both_ready(p));
	EXPECT_EQ(1, p->cl.ready_arg);
	EXPECT_EQ(3, p->cl.s.connect_seq);
	pair_free(p);
}

/* Cut the wire at @cut bytes with messages in flight, reconnect, check. */
static int lossless_cut(u32 mode, long long cut, int nmsg)
{
	struct pair *p = pair_new(mode);
	int i, ret = 0, guard;
	u8 b[64];

	if (pair_connect(p))
		return -1;
	pair_pump(p);
	if (!both_ready(p))
		return -2;
	for (i = 0; i < nmsg; i++) {
		memset(b, i, sizeof(b));
		pair_send(&p->cl, 1000 + i, b, 1 + i % 60, NULL, 0,
			  i % 3 ? NULL : b, i % 3 ? 0 : 33);
		pair_send(&p->sv, 2000 + i, b, 2 + i % 50, b, i % 2, NULL, 0);
	}
	p->budget = cut;
	pair_pump(p);
	for (guard = 0; guard < 5; guard++) {
		p->budget = -1;
		pair_disconnect(p);
		if (pair_connect(p))
			return -3;
		pair_pump(p);
		if (both_ready(p) && p->cl.n_rx == nmsg && p->sv.n_rx == nmsg)
			break;
	}
	pair_pump(p);
	if (p->sv.n_rx != nmsg || p->cl.n_rx != nmsg)
		ret = -4;
	for (i = 0; !ret && i < nmsg; i++) {
		if (p->sv.rx[i].hdr.type != 1000 + i ||
		    p->sv.rx[i].hdr.seq != (u64)i + 1 ||
		    p->cl.rx[i].hdr.type != 2000 + i ||
		    p->cl.rx[i].hdr.seq != (u64)i + 1)
			ret = -5;
	}
	if (!ret && (p->cl.n_tx_ok != nmsg || p->sv.n_tx_ok != nmsg ||
		     p->cl.n_tx_err || p->sv.n_tx_err))
		ret = -6;
	/* every tx_end stamp counted the bytes of its own connection */
	if (!ret && (p->cl.n_tx_end_bad || p->sv.n_tx_end_bad ||
		     !p->cl.n_tx_end || !p->sv.n_tx_end))
		ret = -7;
	pair_free(p);
	return ret;
}

TEST(lossless_reconnect_exactly_once)
{
	long long cut;

	for (cut = 0; cut < 3000; cut += 37)
		ASSERT_EQ(0, lossless_cut(MSGR2_MODE_CRC, cut, 20)) {
			TH_LOG("crc cut at %lld", cut);
		}
	for (cut = 0; cut < 4000; cut += 53)
		ASSERT_EQ(0, lossless_cut(MSGR2_MODE_SECURE, cut, 20)) {
			TH_LOG("secure cut at %lld", cut);
		}
}

TEST(reconnect_takes_over_stale_server_conn)
{
	struct pair *p = pair_new(MSGR2_MODE_CRC);
	struct msgr2_conn *stale;
	u8 b[16] = { 7 };
	int i;

	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	ASSERT_TRUE(both_ready(p));
	/* queued and half sent on the old connection */
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, pair_send(&p->sv, 50 + i, b, sizeof(b), NULL, 0,
				       NULL, 0));
	p->budget = 100;
	pair_pump(p);
	p->budget = -1;
	/* the server has not noticed the fault: its conn stays attached */
	stale = p->sv.c;
	p->sv.c = NULL;
	p->attach_keep = true;
	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	ASSERT_TRUE(both_ready(p));
	EXPECT_EQ(1, p->cl.ready_arg);
	EXPECT_EQ(MSGR2_R_LOCAL, msgr2_conn_reason(stale));
	ASSERT_EQ(3, p->cl.n_rx);
	for (i = 0; i < 3; i++)
		EXPECT_EQ((u64)i + 1, p->cl.rx[i].hdr.seq);
	msgr2_conn_release(stale);
	free(stale);
	EXPECT_EQ(0, traffic(p, 64));
	pair_pump(p);
	EXPECT_EQ(11, p->sv.n_tx_ok);
	pair_free(p);
}

/*
 * A lossless client that redials before it sees SERVER_IDENT leaves a
 * server session behind with its client cookie, and a second one is made
 * for the same cookie.  A later resume names the second by its server
 * cookie and must continue that one: no reset, nothing delivered twice,
 * and what the server queued on it reaches the client.
 */
TEST(resume_picks_the_session_of_its_server_cookie)
{
	struct pair *p = pair_new(MSGR2_MODE_CRC);
	u8 x = 1;
	int i;

	ASSERT_EQ(0, pair_connect(p));
	/* banners, hello, auth and idents: SERVER_IDENT held back */
	move_limited(p, 26 + 72 + 52 + 68);
	ASSERT_FALSE(msgr2_conn_ready(p->cl.c));
	ASSERT_EQ(1, p->n_sv_sess);
	ASSERT_EQ(0, pair_connect(p));		/* a fresh CLIENT_IDENT */
	pair_pump(p);
	ASSERT_TRUE(both_ready(p));
	ASSERT_EQ(2, p->n_sv_sess);
	EXPECT_EQ(p->sv_sess[0]->client_cookie, p->sv_sess[1]->client_cookie);
	for (i = 0; i < 3; i++)
		pair_send(&p->cl, 10 + i, &x, 1, NULL, 0, NULL, 0);
	pair_pump(p);
	ASSERT_EQ(3, p->sv.n_rx);
	/* two more reach the server; its acks do not reach the client */
	pair_send(&p->cl, 20, &x, 1, NULL, 0, NULL, 0);
	pair_send(&p->cl, 21, &x, 1, NULL, 0, NULL, 0);
	pair_send(&p->sv, 99, &x, 1, NULL, 0, NULL, 0);
	pair_move(p, true, 0);
	ASSERT_EQ(5, p->sv.n_rx);
	ASSERT_EQ(0, pair_connect(p));		/* a blip: SESSION_RECONNECT */
	pair_pump(p);
	ASSERT_TRUE(both_ready(p));
	EXPECT_EQ(0, p->cl.n_reset);
	EXPECT_EQ(5, p->sv.n_rx);
	for (i = 0; i < p->sv.n_rx; i++)
		EXPECT_EQ(i + 1, p->sv.rx[i].hdr.seq);
	EXPECT_EQ(1, p->cl.n_rx);
	EXPECT_EQ(NULL, p->sv_sess[1]->out_head);
	pair_free(p);
}

/*
 * A message above the segment limits, queued while the session has no
 * connection, fails with -EMSGSIZE when a connection takes it, instead
 * of reaching the peer (OVERSIZE) again after every redial.
 */
TEST(oversize_queued_while_disconnected)
{
	struct pair *p = pair_new(MSGR2_MODE_CRC);
	static u8 big[4096];
	u8 x = 2;

	p->cl.cfg.max_seg_len[MSGR2_DATA] = 1024;
	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	ASSERT_TRUE(both_ready(p));
	EXPECT_EQ(-EMSGSIZE, pair_send(&p->cl, 1, NULL, 0, NULL, 0, big,
				       sizeof(big)));
	pair_disconnect(p);
	EXPECT_EQ(0, pair_send(&p->cl, 1, NULL, 0, NULL, 0, big, sizeof(big)));
	EXPECT_EQ(0, pair_send(&p->cl, 2, &x, 1, NULL, 0, NULL, 0));
	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	ASSERT_TRUE(both_ready(p));
	EXPECT_EQ(1, p->cl.n_tx_err);
	EXPECT_EQ(1, p->sv.n_rx);
	EXPECT_EQ(2, p->sv.rx[0].hdr.type);
	pair_free(p);
}

/*
 * A secure lossless server whose peer sends but does not read: its arena
 * fills with small control frames (keepalives, their acks, acks) and the
 * server must hold them back, not fail its own connection (OVERSIZE).
 */
TEST(slow_reader_keeps_the_connection)
{
	struct pair *p = pair_new(MSGR2_MODE_SECURE);
	struct msgr2_iov iov[8];
	int i, n = 0;

	ASSERT_EQ(0, pair_connect(p));
	for (i = 0; i < 100 && !msgr2_conn_ready(p->sv.c); i++) {
		pair_move(p, true, 0);
		if (!msgr2_conn_ready(p->sv.c))
			pair_move(p, false, 0);
	}
	ASSERT_TRUE(msgr2_conn_ready(p->sv.c));
	/* a keepalive behind SERVER_IDENT; all but its last byte is taken */
	msgr2_keepalive(p->sv.c, 1);
	pair_move(p, false, 160 + 95);
	ASSERT_TRUE(msgr2_conn_ready(p->cl.c));
	for (i = 0; i < 100; i++) {
		pair_send(&p->cl, 42, "x", 1, NULL, 0, NULL, 0);
		msgr2_keepalive(p->cl.c, 2);
		pair_move(p, true, 0);
		msgr2_keepalive(p->sv.c, 3);
		n = msgr2_tx_iov(p->sv.c, iov, 8);	/* nothing taken */
		if (n < 0)
			break;
	}
	EXPECT_LE(0, n) TH_LOG("round %d: %s", i,
			       msgr2_reason_str(msgr2_conn_reason(p->sv.c)));
	pair_free(p);
}

/*
 * A reconnect whose peer claims more messages than were ever written
 * (msg_seq of SESSION_RECONNECT_OK too high: broken or hostile) does not
 * make the unwritten ones count as delivered: they still go out, and
 * complete only at an ack that comes after them.
 */
/* A ready crc pair whose client has queued messages 1 and 2 (one byte). */
static struct pair *pair_two_queued(struct __test_metadata *_metadata)
{
	struct pair *p = pair_new(MSGR2_MODE_CRC);
	u8 x = 3;

	EXPECT_EQ(0, pair_connect(p));
	pair_pump(p);
	EXPECT_TRUE(both_ready(p));
	pair_send(&p->cl, 1, &x, 1, NULL, 0, NULL, 0);
	pair_send(&p->cl, 2, &x, 1, NULL, 0, NULL, 0);
	return p;
}

TEST(reconnect_ack_beyond_what_was_sent)
{
	struct pair *p = pair_two_queued(_metadata);
	u8 x = 3;

	pair_pump(p);
	ASSERT_EQ(2, p->sv.n_rx);
	ASSERT_EQ(2, p->cl.n_tx_ok);
	pair_disconnect(p);
	/* queued while down: never written */
	pair_send(&p->cl, 3, &x, 1, NULL, 0, NULL, 0);
	pair_send(&p->cl, 4, &x, 1, NULL, 0, NULL, 0);
	pair_session(&p->sv)->in_seq = 10;	/* the lie */
	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	ASSERT_TRUE(both_ready(p));
	EXPECT_EQ(2, p->sv.n_rx_dup) TH_LOG("messages 3 and 4 not written");
	/* and not completed before an ack that comes after them */
	EXPECT_EQ(2, p->cl.n_tx_ok);
	pair_free(p);
}

/*
 * The same lie after a reconnect that renumbered the queue: messages 1 to
 * 3 went on a wire nobody read; on the next connection message 1 no
 * longer fits (a smaller segment limit) and is given back, so 2 and 3
 * become 1 and 2.  Seq 3 is then a new message that no wire has carried:
 * an ack of 3 before it is written must not complete it.
 */
TEST(reconnect_renumbered_ack_beyond_what_was_sent)
{
	struct pair *p = pair_new(MSGR2_MODE_CRC);
	static u8 big[64];
	struct msgr2_iov iov[8];
	size_t len;
	u8 x = 3;
	int i, n;

	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	ASSERT_TRUE(both_ready(p));
	ASSERT_EQ(0, pair_send(&p->cl, 1, big, sizeof(big), NULL, 0, NULL, 0));
	ASSERT_EQ(0, pair_send(&p->cl, 2, &x, 1, NULL, 0, NULL, 0));
	ASSERT_EQ(0, pair_send(&p->cl, 3, &x, 1, NULL, 0, NULL, 0));
	/* written, and lost */
	while ((n = msgr2_tx_iov(p->cl.c, iov, 8)) > 0) {
		for (len = 0, i = 0; i < n; i++)
			len += iov[i].len;
		ASSERT_EQ(0, msgr2_tx_done(p->cl.c, len));
	}
	ASSERT_EQ(3, p->cl.s.wire_seq);
	pair_disconnect(p);
	p->cl.cfg.max_seg_len[0] = sizeof(big) - 1;
	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	ASSERT_TRUE(both_ready(p));
	ASSERT_EQ(1, p->cl.n_tx_err);		/* message 1: -EMSGSIZE */
	ASSERT_EQ(2, p->sv.n_rx);
	ASSERT_EQ(2, p->cl.n_tx_ok);
	/* the new seq 3, queued; the server claims to have it */
	ASSERT_EQ(0, pair_send(&p->cl, 4, &x, 1, NULL, 0, NULL, 0));
	pair_session(&p->sv)->in_seq = 3;	/* the lie */
	ASSERT_EQ(0, pair_send(&p->sv, 5, &x, 1, NULL, 0, NULL, 0));
	pair_move(p, false, 0);			/* its ack_seq reaches us */
	ASSERT_EQ(1, p->cl.n_rx);
	pair_move(p, true, 0);			/* now it is written */
	EXPECT_EQ(2, p->cl.n_tx_ok) TH_LOG("completed without an ack");
	pair_free(p);
}

/*
 * The same lie in a live session: a message from the peer whose ack_seq
 * (or an ACK) covers messages still queued.  They are not complete when
 * written, only at an ack that comes after them: a fault before it sends
 * them again.
 */
TEST(ack_beyond_what_was_sent)
{
	/* queued, not written: out_seq 2, wire_seq 0 */
	struct pair *p = pair_two_queued(_metadata);
	u8 x = 3;

	pair_session(&p->sv)->in_seq = 1000;	/* the lie */
	pair_send(&p->sv, 3, &x, 1, NULL, 0, NULL, 0);
	pair_move(p, false, 0);			/* its ack_seq reaches us */
	ASSERT_EQ(1, p->cl.n_rx);
	pair_move(p, true, 0);			/* now they are written */
	EXPECT_EQ(0, p->cl.n_tx_ok) TH_LOG("completed without an ack");
	EXPECT_EQ(2, p->sv.n_rx_dup);		/* dropped by the liar */
	/* still owed: a reconnect to an honest server delivers them */
	pair_disconnect(p);
	pair_session(&p->sv)->in_seq = 0;
	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	ASSERT_TRUE(both_ready(p));
	EXPECT_EQ(2, p->sv.n_rx);
	EXPECT_EQ(2, p->cl.n_tx_ok);
	pair_free(p);
}

TEST(lossy_session)
{
	struct pair *p = pair_new(MSGR2_MODE_CRC);
	u8 b[10] = { 0 };
	int i;

	msgr2_session_init(&p->cl.s, true);
	ASSERT_EQ(0, pair_connect(p));
	/* the server's policy decides: make its fresh session lossy */
	pair_session(&p->sv)->lossy = true;
	pair_pump(p);
	ASSERT_TRUE(both_ready(p));
	EXPECT_TRUE(p->cl.s.lossy);
	EXPECT_EQ(0, p->cl.s.server_cookie);
	for (i = 0; i < 5; i++)
		pair_send(&p->cl, 1, b, sizeof(b), NULL, 0, NULL, 0);
	pair_pump(p);
	/* done once on the wire, no ACK needed */
	EXPECT_EQ(5, p->cl.n_tx_ok);
	EXPECT_EQ(5, p->sv.n_rx);
	/* a fault drops what is queued */
	pair_send(&p->cl, 1, b, sizeof(b), NULL, 0, NULL, 0);
	pair_disconnect(p);
	EXPECT_EQ(1, p->cl.n_tx_err);
	pair_free(p);
}

static void *no_scratch(void *priv, size_t len)
{
	return NULL;
}

/*
 * A lossy message whose frame cannot be sealed (no scratch for its tail:
 * out of memory) is given back when the failed connection is released.
 */
TEST(lossy_secure_seal_failure_gives_message_back)
{
	struct pair *p = pair_new(MSGR2_MODE_SECURE);
	u8 b[10] = { 0 };

	msgr2_session_init(&p->cl.s, true);
	ASSERT_EQ(0, pair_connect(p));
	pair_session(&p->sv)->lossy = true;
	pair_pump(p);
	ASSERT_TRUE(both_ready(p));
	ASSERT_TRUE(p->cl.s.lossy);
	p->cl.ops.tx_scratch = no_scratch;
	/* a data segment: the frame has a tail, sealed into scratch */
	ASSERT_EQ(0, pair_send(&p->cl, 1, b, sizeof(b), NULL, 0, b, 4));
	pair_pump(p);
	EXPECT_EQ(MSGR2_R_NOMEM, msgr2_conn_reason(p->cl.c));
	EXPECT_EQ(0, p->cl.n_tx_ok);
	pair_disconnect(p);
	EXPECT_EQ(1, p->cl.n_tx_err);
	pair_free(p);
}

TEST(send_limits)
{
	struct pair *p = pair_new(MSGR2_MODE_SECURE);
	static u8 big[4096];

	p->cl.cfg.tx_scratch_len = 1024;
	p->cl.cfg.max_seg_len[MSGR2_FRONT] = 100;
	ASSERT_EQ(0, pair_connect(p));
	EXPECT_EQ(-EMSGSIZE, pair_send(&p->cl, 1, big, 101, NULL, 0, NULL, 0));
	EXPECT_EQ(-EMSGSIZE, pair_send(&p->cl, 1, NULL, 0, NULL, 0, big,
				       sizeof(big)));
	EXPECT_EQ(0, pair_send(&p->cl, 1, big, 100, NULL, 0, NULL, 0));
	pair_pump(p);
	ASSERT_TRUE(both_ready(p));
	EXPECT_EQ(1, p->sv.n_rx);
	pair_free(p);
}

TEST(eof)
{
	struct pair *p = pair_new(MSGR2_MODE_CRC);

	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	ASSERT_TRUE(both_ready(p));
	EXPECT_EQ(-ECONNRESET, msgr2_rx_eof(p->cl.c));
	EXPECT_EQ(MSGR2_R_EOF, msgr2_conn_reason(p->cl.c));
	EXPECT_STREQ("connection closed by peer",
		     msgr2_reason_str(msgr2_conn_reason(p->cl.c)));
	pair_free(p);
}

/*
 * A lossless receiver takes the ack of a message's header before it has
 * room for the payload: its own send, acked by that header, may be what
 * holds the room (a reply sent from the request's buffer).  The client
 * gets S1, then sends C1, whose header acks S1; the server refuses room
 * for C1 and must still see S1 acknowledged.
 */
static void header_ack_case(struct __test_metadata *_metadata, u32 mode)
{
	struct pair *p = pair_new(mode);
	u8 b[600] = { 0 };

	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	ASSERT_TRUE(both_ready(p));
	ASSERT_EQ(0, pair_send(&p->sv, 1, b, 10, NULL, 0, NULL, 0));
	pair_move(p, false, 0);
	ASSERT_EQ(1, p->cl.n_rx);
	EXPECT_EQ(0, p->sv.n_tx_ok);
	ASSERT_EQ(0, pair_send(&p->cl, 2, NULL, 0, NULL, 0, b, sizeof(b)));
	p->sv.rx_eagain = 1000;
	pair_move(p, true, 0);
	EXPECT_GE(p->sv.n_eagain, 1);
	EXPECT_EQ(0, p->sv.n_rx);
	EXPECT_EQ(1, p->sv.n_tx_ok);
	EXPECT_EQ(1, pair_session(&p->sv)->acked_seq);
	/* room again: C1 arrives whole */
	p->sv.rx_eagain = 0;
	pair_pump(p);
	EXPECT_EQ(1, p->sv.n_rx);
	EXPECT_EQ(1, p->cl.n_tx_ok);
	pair_free(p);
}

TEST(header_ack_before_payload_room_crc)
{
	header_ack_case(_metadata, MSGR2_MODE_CRC);
}

TEST(header_ack_before_payload_room_secure)
{
	header_ack_case(_metadata, MSGR2_MODE_SECURE);
}

/*
 * Secure mode with the scratch supplied on demand (ops->tx_scratch, as
 * kmsgr.ko does): each message's tail is sealed into a buffer asked for
 * with the tail's size, and a NULL answer fails the connection with
 * NOMEM instead of sealing anywhere.
 */
static size_t scratch_asked;
static bool scratch_refuse;
static u8 scratch_buf[256 << 10];

static void *grow_scratch(void *priv, size_t len)
{
	if (len > scratch_asked)
		scratch_asked = len;
	if (scratch_refuse || len > sizeof(scratch_buf))
		return NULL;
	return scratch_buf;
}

TEST(secure_scratch_on_demand)
{
	struct pair *p = pair_new(MSGR2_MODE_SECURE);
	static u8 big[100000];
	size_t i;

	for (i = 0; i < sizeof(big); i++)
		big[i] = (u8)(i * 31);
	p->cl.cfg.tx_scratch = NULL;
	p->cl.cfg.tx_scratch_len = sizeof(scratch_buf);
	p->cl.ops.tx_scratch = grow_scratch;
	scratch_asked = 0;
	scratch_refuse = false;
	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	ASSERT_TRUE(both_ready(p));
	ASSERT_EQ(0, pair_send(&p->cl, 1, NULL, 0, NULL, 0, big, sizeof(big)));
	pair_pump(p);
	ASSERT_EQ(1, p->sv.n_rx);
	ASSERT_EQ(sizeof(big), p->sv.rx[0].len[MSGR2_DATA]);
	EXPECT_EQ(0, memcmp(big, p->sv.rx[0].buf[MSGR2_DATA], sizeof(big)));
	/* the tail: data padded to 16, epilogue, tag */
	EXPECT_GE(scratch_asked, sizeof(big));
	EXPECT_LE(scratch_asked, sizeof(big) + 64);
	scratch_refuse = true;
	ASSERT_EQ(0, pair_send(&p->cl, 1, NULL, 0, NULL, 0, big, 10));
	pair_pump(p);
	EXPECT_EQ(1, p->sv.n_rx);
	EXPECT_EQ(MSGR2_R_NOMEM, msgr2_conn_reason(p->cl.c));
	pair_free(p);
}

/*
 * Server-side CephX: the engine's own cephx client against the engine as a
 * mon (msgr2_auth_cephx_server_ops): READY in crc and in secure mode (the
 * connection secret the server issued drives the ciphers both ways), a
 * global id assigned; a wrong secret, an unknown entity or a HELLO of
 * another entity type than the key's gets no session.
 */
static const u8 cx_key_admin[16] = "0123456789abcdef";
static const u8 cx_key_other[16] = "fedcba9876543210";

static struct pair *cephx_pair(u32 mode, const char *name, const u8 *key,
			       struct msgr2_auth_cephx *cx,
			       struct msgr2_auth_cephx_server *sv,
			       struct msgr2_cephx_entity *ents)
{
	struct pair *p = pair_new(mode);

	memset(ents, 0, 2 * sizeof(*ents));
	ents[0].entity_type = MSGR2_ENTITY_CLIENT;
	strcpy(ents[0].name, "admin");
	memcpy(ents[0].key, cx_key_admin, 16);
	ents[1].entity_type = MSGR2_ENTITY_CLIENT;
	strcpy(ents[1].name, "other");
	memcpy(ents[1].key, cx_key_other, 16);
	memset(sv, 0, sizeof(*sv));
	sv->keys = ents;
	sv->n_keys = 2;
	memset(cx, 0, sizeof(*cx));
	cx->entity_type = MSGR2_ENTITY_CLIENT;
	strcpy(cx->name, name);
	memcpy(cx->key, key, 16);
	p->cl.cfg.n_auth = 1;
	p->cl.cfg.auth[0] = &msgr2_auth_cephx_ops;
	p->cl.cfg.auth_priv[0] = cx;
	p->sv.cfg.n_auth = 1;
	p->sv.cfg.auth[0] = &msgr2_auth_cephx_server_ops;
	p->sv.cfg.auth_priv[0] = sv;
	return p;
}

static void cephx_server_case(struct __test_metadata *_metadata, u32 mode)
{
	struct msgr2_cephx_entity ents[2];
	struct msgr2_auth_cephx_server sv;
	struct msgr2_auth_cephx cx;
	struct pair *p;

	p = cephx_pair(mode, "admin", cx_key_admin, &cx, &sv, ents);
	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	ASSERT_TRUE(both_ready(p)) {
		TH_LOG("client: %s, server: %s",
		       msgr2_reason_str(msgr2_conn_reason(p->cl.c)),
		       msgr2_reason_str(msgr2_conn_reason(p->sv.c)));
	}
	EXPECT_EQ(mode, msgr2_conn_mode(p->cl.c));
	EXPECT_EQ(mode, msgr2_conn_mode(p->sv.c));
	EXPECT_EQ(4096, cx.global_id);
	EXPECT_EQ(&ents[0], sv.who);
	EXPECT_EQ(0, traffic(p, 50));
	pair_free(p);

	/* a wrong secret: the proof does not match */
	p = cephx_pair(mode, "admin", cx_key_other, &cx, &sv, ents);
	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	EXPECT_EQ(MSGR2_R_AUTH, msgr2_conn_reason(p->cl.c));
	EXPECT_FALSE(msgr2_conn_ready(p->sv.c));
	pair_free(p);

	/* an entity the server does not know */
	p = cephx_pair(mode, "nobody", cx_key_admin, &cx, &sv, ents);
	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	EXPECT_EQ(MSGR2_R_AUTH, msgr2_conn_reason(p->cl.c));
	EXPECT_FALSE(msgr2_conn_ready(p->sv.c));
	pair_free(p);

	/* client.admin's key behind a HELLO that says "osd" */
	p = cephx_pair(mode, "admin", cx_key_admin, &cx, &sv, ents);
	p->cl.cfg.my_type = MSGR2_ENTITY_OSD;
	ASSERT_EQ(0, pair_connect(p));
	pair_pump(p);
	EXPECT_EQ(MSGR2_R_AUTH, msgr2_conn_reason(p->sv.c));
	EXPECT_FALSE(msgr2_conn_ready(p->sv.c));
	EXPECT_FALSE(msgr2_conn_ready(p->cl.c));
	pair_free(p);
}

TEST(cephx_server_crc)
{
	cephx_server_case(_metadata, MSGR2_MODE_CRC);
}

TEST(cephx_server_secure)
{
	cephx_server_case(_metadata, MSGR2_MODE_SECURE);
}

TEST_HARNESS_MAIN
