// SPDX-License-Identifier: GPL-2.0
/*
 * Engine client <-> engine server in one process over an in-memory pipe,
 * with fault injection: the connection is dropped (both ends released)
 * at random byte offsets in either direction, including mid-handshake and
 * mid-frame, and re-established with SESSION_RECONNECT.  A lossless
 * session must still deliver every message exactly once, in order, with
 * the payload intact, in both directions, in crc and in secure mode.
 *
 * Environment: MSGR2_SEED (PRNG seed, default from the clock; printed),
 * MSGR2_PIPE_MSGS (messages per direction, default 10000),
 * MSGR2_PIPE_DROPS (minimum drops, default 100).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kselftest_harness.h"

#include "msgr2.h"
#include "lib_pipe.h"

#define WINDOW		32		/* messages in flight per direction */
#define SEG_MAX		(64 << 10)
#define SCRATCH_LEN	(4 * SEG_MAX)

struct tmsg {
	struct msgr2_msg m;
	u32 idx;
	u8 *buf;
};

struct side {
	const char *name;
	struct msgr2_session sess;
	struct msgr2_conn *c;
	struct msgr2_config cfg;
	struct tauth auth;
	void *scratch;
	/* sending */
	u32 next_send;
	u32 in_flight;
	u64 *hash;		/* hash of message i, written before send */
	/* receiving (from the peer) */
	u32 next_rx;
	u64 rx_bytes;
	struct side *peer;
	struct pipe_test *t;
};

struct pipe_test {
	struct side cli, srv;
	u32 nmsgs;
	u64 seed;
	int errors;
	char err[256];
};

static void fail(struct pipe_test *t, const char *fmt, u32 a, u64 b)
{
	if (!t->errors++)
		snprintf(t->err, sizeof(t->err), fmt, a,
			 (unsigned long long)b);
}

/* deterministic content of message @idx sent by @s */
static u64 msg_seed(const struct side *s, u32 idx, int seg)
{
	return (s->t->seed ^ ((u64)idx << 8) ^ (u64)seg ^
		(s == &s->t->cli ? 0x1000000000ULL : 0x2000000000ULL)) | 1;
}

static u32 pick_len(u64 *rng)
{
	u64 r = prng_next(rng) % 100;

	if (r < 10)
		return 0;
	if (r < 12)
		return SEG_MAX;
	if (r < 55)
		return (u32)(prng_next(rng) % 257);
	if (r < 92)
		return (u32)(prng_next(rng) % 4097);
	return (u32)(prng_next(rng) % (SEG_MAX + 1));
}

static int send_one(struct side *s)
{
	u64 rng = msg_seed(s, s->next_send, 7), h = HASH_INIT, cs;
	static const int pct[MSGR2_NSEG] = { 75, 25, 50 };
	struct tmsg *tm;
	u32 len[MSGR2_NSEG], total = 0, i, j;
	u8 *p;
	int ret;

	for (i = 0; i < MSGR2_NSEG; i++) {
		len[i] = prng_next(&rng) % 100 < (u64)pct[i] ?
			 pick_len(&rng) : 0;
		total += len[i];
	}
	tm = calloc(1, sizeof(*tm));
	if (!tm)
		return -ENOMEM;
	tm->buf = malloc(total ? total : 1);
	if (!tm->buf) {
		free(tm);
		return -ENOMEM;
	}
	tm->idx = s->next_send;
	tm->m.priv = tm;
	tm->m.hdr.type = (u16)(0x100 + tm->idx % 7);
	tm->m.hdr.priority = 127;
	tm->m.hdr.version = 1;
	tm->m.hdr.tid = tm->idx;
	p = tm->buf;
	for (i = 0; i < MSGR2_NSEG; i++) {
		cs = msg_seed(s, tm->idx, (int)i);
		for (j = 0; j < len[i]; j++) {
			if (!(j & 7))
				cs = prng_next(&cs);
			p[j] = (u8)(cs >> (8 * (j & 7)));
		}
		tm->m.seg[i].base = len[i] ? p : NULL;
		tm->m.seg[i].len = len[i];
		h = hash_bytes(h, &len[i], sizeof(len[i]));
		h = hash_bytes(h, p, len[i]);
		p += len[i];
	}
	s->hash[tm->idx] = h;
	ret = msgr2_send(&s->sess, &tm->m);
	if (ret < 0) {
		free(tm->buf);
		free(tm);
		return ret;
	}
	s->next_send++;
	s->in_flight++;
	return 0;
}

static int top_up(struct side *s)
{
	int ret;

	while (s->next_send < s->t->nmsgs && s->in_flight < WINDOW) {
		ret = send_one(s);
		if (ret)
			return ret;
	}
	return 0;
}

/* ---- callbacks ----------------------------------------------------------- */

static int cb_rx_alloc(void *priv, struct msgr2_rx_msg *m)
{
	int i;

	for (i = 0; i < MSGR2_NSEG; i++) {
		m->buf[i] = m->len[i] ? malloc(m->len[i]) : NULL;
		if (m->len[i] && !m->buf[i])
			return -ENOMEM;
	}
	return 0;
}

static void cb_rx_msg(void *priv, struct msgr2_rx_msg *m, int status)
{
	struct side *s = priv;
	struct side *from = s->peer;
	u64 h = HASH_INIT;
	u32 idx = (u32)m->hdr.tid;
	int i;

	if (status == 0) {
		for (i = 0; i < MSGR2_NSEG; i++) {
			h = hash_bytes(h, &m->len[i], sizeof(m->len[i]));
			h = hash_bytes(h, m->buf[i], m->len[i]);
			s->rx_bytes += m->len[i];
		}
		if (idx != s->next_rx)
			fail(s->t, "message %u arrived, expected %llu", idx,
			     s->next_rx);
		else if (idx >= from->next_send || from->hash[idx] != h)
			fail(s->t, "message %u: payload hash %llx differs",
			     idx, h);
		else if (m->hdr.type != 0x100 + idx % 7)
			fail(s->t, "message %u: header type %llu", idx,
			     m->hdr.type);
		s->next_rx++;
	}
	for (i = 0; i < MSGR2_NSEG; i++)
		free(m->buf[i]);
}

static void cb_tx_done(void *priv, struct msgr2_msg *m, int status)
{
	struct side *s = priv;
	struct tmsg *tm = m->priv;

	if (status)
		fail(s->t, "message %u given back with status %lld", tm->idx,
		     (u64)(s64)status);
	s->in_flight--;
	free(tm->buf);
	free(tm);
}

static void cb_event(void *priv, enum msgr2_event ev, u64 arg)
{
	struct side *s = priv;

	if (ev == MSGR2_EV_SESSION_RESET)
		fail(s->t, "%u: unexpected session reset (%llu)", 0, arg);
}

static struct msgr2_session *cb_attach(void *priv, struct msgr2_conn *c,
				       const struct msgr2_addrvec *addrs,
				       u64 client_cookie, u64 server_cookie,
				       bool reconnect)
{
	struct side *s = priv;

	/* one client: it always continues the one server session */
	if (reconnect && s->sess.client_cookie != client_cookie)
		return NULL;
	return &s->sess;
}

static u64 cb_next_gseq(void *priv, u64 at_least)
{
	return at_least + 1;
}

static const struct msgr2_ops pipe_ops = {
	.rx_alloc = cb_rx_alloc,
	.rx_msg = cb_rx_msg,
	.tx_done = cb_tx_done,
	.event = cb_event,
	.attach = cb_attach,
	.next_global_seq = cb_next_gseq,
};

static void drain_cb(void *priv, struct msgr2_msg *m, int status)
{
	cb_tx_done(priv, m, 0);
}

/* ---- set-up ---------------------------------------------------------------- */


static int side_init(struct pipe_test *t, struct side *s, bool server,
		     u32 mode)
{
	struct msgr2_config *cfg = &s->cfg;

	s->t = t;
	s->name = server ? "server" : "client";
	s->peer = server ? &t->cli : &t->srv;
	s->c = calloc(1, msgr2_conn_size());
	s->scratch = malloc(SCRATCH_LEN);
	s->hash = calloc(t->nmsgs, sizeof(u64));
	if (!s->c || !s->scratch || !s->hash)
		return -ENOMEM;
	tauth_init(&s->auth, t->seed, false);
	msgr2_session_init(&s->sess, false);

	pipe_test_cfg(cfg, server, mode, &s->auth, 0, s->scratch, SCRATCH_LEN,
		      &pipe_ops, s);
	return 0;
}

static void side_free(struct side *s)
{
	msgr2_session_drain(&s->sess, drain_cb, s, -ECONNRESET);
	free(s->c);
	free(s->scratch);
	free(s->hash);
}

static u64 env_u64(const char *name, u64 def)
{
	const char *v = getenv(name);

	return v && *v ? strtoull(v, NULL, 0) : def;
}

static const char *reason_of(struct msgr2_conn *c)
{
	return msgr2_reason_str(msgr2_conn_reason(c));
}

static const char *progress(struct pipe_test *t)
{
	static char buf[200];

	snprintf(buf, sizeof(buf),
		 "c->s %u/%u delivered, %u in flight; s->c %u/%u, %u in flight",
		 t->srv.next_rx, t->cli.next_send, t->cli.in_flight,
		 t->cli.next_rx, t->srv.next_send, t->srv.in_flight);
	return buf;
}

static bool all_done(struct pipe_test *t)
{
	return t->cli.next_rx == t->nmsgs && t->srv.next_rx == t->nmsgs &&
	       !t->cli.in_flight && !t->srv.in_flight &&
	       t->cli.next_send == t->nmsgs && t->srv.next_send == t->nmsgs;
}

/*
 * The whole scenario in one mode.  Each connection lives until the chosen
 * direction has carried its byte budget; then both ends are released.
 */
static void run_pipe(struct __test_metadata *_metadata, u32 mode)
{
	struct pipe_test *t;
	u64 rng, budget, moved[2], total_moved = 0, per_msg, left, due;
	u32 delivered;
	u32 drops = 0, hs_drops = 0, conns = 0, min_drops, dir;
	struct msgr2_conn *from, *to;
	long x, y;
	int ret;
	time_t t0 = time(NULL);

	t = calloc(1, sizeof(*t));
	ASSERT_NE(NULL, t);
	t->seed = env_u64("MSGR2_SEED", (u64)time(NULL) ^ (mode << 20));
	t->nmsgs = (u32)env_u64("MSGR2_PIPE_MSGS", 10000);
	min_drops = (u32)env_u64("MSGR2_PIPE_DROPS", 100);
	ksft_print_msg("%s mode: seed %llu (MSGR2_SEED), %u msgs each way\n",
		       mode == MSGR2_MODE_SECURE ? "secure" : "crc",
		       (unsigned long long)t->seed, t->nmsgs);
	fflush(stdout);
	rng = (t->seed ^ 0x9e3779b97f4a7c15ULL) ? : 1;
	ASSERT_EQ(0, side_init(t, &t->cli, false, mode));
	ASSERT_EQ(0, side_init(t, &t->srv, true, mode));

	while (!all_done(t) && !t->errors) {
		ASSERT_LT(conns, 100000U) TH_LOG("no progress");
		ASSERT_EQ(0, msgr2_conn_init(t->cli.c, &t->cli.cfg,
					     &t->cli.sess));
		ASSERT_EQ(0, msgr2_conn_init(t->srv.c, &t->srv.cfg,
					     &t->srv.sess));
		conns++;
		dir = prng_next(&rng) & 1;
		if (drops >= min_drops + 20) {
			budget = ~0ULL;		/* enough: let it finish */
		} else if (prng_next(&rng) % 4 == 0) {
			budget = 1 + prng_next(&rng) % 700; /* handshake */
		} else {
			/*
			 * Spread the drops that are still due over what is
			 * left to send in one direction, measured so far.
			 */
			delivered = t->cli.next_rx + t->srv.next_rx;
			per_msg = delivered ? total_moved / delivered : 6000;
			left = (u64)(2 * t->nmsgs - delivered) * per_msg;
			due = drops < min_drops ? min_drops - drops : 0;
			budget = 1 + prng_next(&rng) %
				 (2 * left / (due + 20) + 1);
		}
		moved[0] = moved[1] = 0;
		for (;;) {
			ASSERT_EQ(0, top_up(&t->cli));
			ASSERT_EQ(0, top_up(&t->srv));
			from = dir ? t->srv.c : t->cli.c;
			to = dir ? t->cli.c : t->srv.c;
			/* the cut falls in whichever direction uses it up */
			x = pipe_move(from, to, budget - moved[0] - moved[1]);
			ASSERT_LE(0, x) TH_LOG("%s: %s / %s",
					       dir ? "s->c" : "c->s",
					       reason_of(from), reason_of(to));
			moved[dir] += (u64)x;
			y = pipe_move(to, from, budget - moved[0] - moved[1]);
			ASSERT_LE(0, y) TH_LOG("reverse: %s / %s",
					       reason_of(from), reason_of(to));
			moved[!dir] += (u64)y;
			if (t->errors || all_done(t))
				break;
			if (moved[0] + moved[1] >= budget) {
				drops++;
				if (!msgr2_conn_ready(t->cli.c) ||
				    !msgr2_conn_ready(t->srv.c))
					hs_drops++;
				break;
			}
			if (!x && !y) {
				/* idle but not done: a stall is a bug */
				ret = msgr2_tick(t->cli.c, 0);
				ASSERT_TRUE(0) TH_LOG("stalled (tick %d): %s",
						      ret, progress(t));
			}
		}
		total_moved += moved[0] + moved[1];
		msgr2_conn_release(t->cli.c);
		msgr2_conn_release(t->srv.c);
	}
	ASSERT_EQ(0, t->errors) TH_LOG("%s (seed %llu)", t->err,
				       (unsigned long long)t->seed);
	EXPECT_EQ(t->nmsgs, t->srv.next_rx);
	EXPECT_EQ(t->nmsgs, t->cli.next_rx);
	EXPECT_LE(min_drops, drops) TH_LOG("only %u drops", drops);
	EXPECT_LT(0U, hs_drops);
	ksft_print_msg("%s: %u conns, %u drops (%u in handshake), %llu + %llu bytes, %ld s\n",
		       mode == MSGR2_MODE_SECURE ? "secure" : "crc", conns,
		       drops, hs_drops, (unsigned long long)t->srv.rx_bytes,
		       (unsigned long long)t->cli.rx_bytes,
		       (long)(time(NULL) - t0));
	fflush(stdout);
	side_free(&t->cli);
	side_free(&t->srv);
	free(t);
}

TEST(lossless_drops_crc)
{
	run_pipe(_metadata, MSGR2_MODE_CRC);
}

TEST(lossless_drops_secure)
{
	run_pipe(_metadata, MSGR2_MODE_SECURE);
}

TEST_HARNESS_MAIN
