// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: drive an engine client/server pair to a chosen state
 * of the handshake (or READY), then replace what the peer would send next
 * with the fuzz bytes.
 *
 * Input: byte 0 = selector
 *   bits 0-3  state (mod 9): 0 banner, 1 hello, 2 auth, 3 auth-more,
 *             4 signature, 5 ident, 6 reconnect, 7 READY crc,
 *             8 READY secure
 *   bit 4     0: inject into the client, 1: into the server
 *   bit 5     rewrite frame CRCs in the injected bytes (pipe_fix_crcs)
 *   bits 6-7  injection piece size: all, 1, 7, 61 bytes
 * READY states: byte 1 (low 2 bits) = number of real messages the peer
 * sends first, each sized by the next 2 bytes (le16), before injection.
 * Seeds: corpus/fuzz_handshake/ (mkcorpus.sh).
 */
#include <stdint.h>
#include <stdlib.h>

#include "msgr2.h"
#include "msgr2_int.h"
#include "lib_pipe.h"

#define FZ_SEG_MAX	PIPE_HEAP_SEG_MAX
#define FZ_SCRATCH	(256 << 10)

enum fz_state {
	FZ_BANNER, FZ_HELLO, FZ_AUTH, FZ_AUTH_MORE, FZ_SIGN, FZ_IDENT,
	FZ_RECONNECT, FZ_READY_CRC, FZ_READY_SECURE, FZ_NSTATES
};

struct fz_side {
	struct msgr2_conn *c;
	struct msgr2_session s;
	struct msgr2_config cfg;
	struct tauth auth;
	void *scratch;
};

static struct fz_side fz_cli, fz_srv;
static u8 fz_payload[3 * 65536];
static struct msgr2_msg fz_msgs[3];

static struct msgr2_session *fz_attach(void *priv, struct msgr2_conn *c,
				       const struct msgr2_addrvec *addrs,
				       u64 client_cookie, u64 server_cookie,
				       bool reconnect)
{
	struct fz_side *s = priv;

	if (reconnect && s->s.client_cookie != client_cookie)
		return NULL;
	return &s->s;
}

static u64 fz_next_gseq(void *priv, u64 at_least)
{
	return at_least + 1;
}

static const struct msgr2_ops fz_ops = {
	.rx_alloc = pipe_heap_rx_alloc,
	.rx_msg = pipe_heap_rx_msg,
	.tx_done = pipe_ignore_tx_done,
	.event = pipe_ignore_event,
	.attach = fz_attach,
	.next_global_seq = fz_next_gseq,
};

static void fz_setup(struct fz_side *x, bool server, u32 mode, bool lossless,
		     bool more)
{
	struct msgr2_config *cfg = &x->cfg;

	if (!x->c) {
		x->c = calloc(1, msgr2_conn_size());
		x->scratch = malloc(FZ_SCRATCH);
	}
	tauth_init(&x->auth, 42, more);
	msgr2_session_init(&x->s, !lossless);
	pipe_test_cfg(cfg, server, mode, &x->auth, FZ_SEG_MAX, x->scratch,
		      FZ_SCRATCH, &fz_ops, x);
}

/* has @c reached the point where it waits for what @st names? */
static bool at_state(struct msgr2_conn *c, bool server, enum fz_state st)
{
	switch (st) {
	case FZ_BANNER:
		return c->state == M2_S_BANNER;
	case FZ_HELLO:
		return c->state == M2_S_HELLO;
	case FZ_AUTH:
		return c->state == M2_S_AUTH && !c->auth_rounds;
	case FZ_AUTH_MORE:
		return server ? c->state == M2_S_AUTH_MORE :
				c->state == M2_S_AUTH && c->auth_rounds;
	case FZ_SIGN:
		return c->state == M2_S_AUTH_SIGN;
	case FZ_IDENT:
		return c->state == M2_S_IDENT;
	case FZ_RECONNECT:
		return server ? c->state == M2_S_IDENT :
				c->state == M2_S_RECONNECT;
	default:
		return c->state == M2_S_READY;
	}
}

/*
 * Run the pair, delivering the peer's bytes to @t one piece at a time, until
 * @t is in @st.  Returns false if the pair failed or stalled first.
 */
static bool drive_to(struct msgr2_conn *t, struct msgr2_conn *p, bool server,
		     enum fz_state st)
{
	struct msgr2_iov iov[4];
	ssize_t want;
	size_t k;
	void *buf;
	int n, guard;

	for (guard = 0; guard < 100000; guard++) {
		if (pipe_move(t, p, (size_t)-1) < 0)
			return false;
		if (at_state(t, server, st))
			return true;
		n = msgr2_tx_iov(p, iov, 4);
		want = msgr2_rx_want(t, &buf);
		if (n <= 0 || want <= 0)
			return false;
		k = min_t(size_t, iov[0].len, (size_t)want);
		memcpy(buf, iov[0].base, k);
		if (msgr2_tx_done(p, k) < 0 || msgr2_rx_done(t, k) < 0)
			return false;
	}
	return false;
}

static void discard_tx(struct msgr2_conn *c)
{
	struct msgr2_iov iov[8];
	size_t len;
	int k, i;

	while ((k = msgr2_tx_iov(c, iov, 8)) > 0) {
		for (len = 0, i = 0; i < k; i++)
			len += iov[i].len;
		if (msgr2_tx_done(c, len) < 0)
			return;
	}
}

/* READY states: the peer sends up to 3 real messages first */
static size_t send_real(struct fz_side *peer, const u8 *d, size_t len)
{
	size_t used = 0;
	u32 n, i, l;

	if (!len)
		return 0;
	n = d[0] & 3;
	used = 1;
	for (i = 0; i < n && used + 2 <= len; i++) {
		l = msgr2_get_le16(d + used);
		used += 2;
		memset(&fz_msgs[i], 0, sizeof(fz_msgs[i]));
		fz_msgs[i].hdr.type = 0x100;
		fz_msgs[i].hdr.priority = 127;
		fz_msgs[i].seg[i % 3].base = fz_payload;
		fz_msgs[i].seg[i % 3].len = l;
		msgr2_send(&peer->s, &fz_msgs[i]);
	}
	return used;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum fz_state st;
	struct fz_side *t, *p;
	size_t off, piece, used;
	bool server;
	u8 *buf, sel;
	u32 mode;
	int ret;
	static const size_t pieces[4] = { 0, 1, 7, 61 };

	if (size < 1)
		return 0;
	sel = data[0];
	st = (enum fz_state)((sel & 15) % FZ_NSTATES);
	server = sel & 16;
	piece = pieces[sel >> 6];
	mode = st == FZ_READY_SECURE ? MSGR2_MODE_SECURE : MSGR2_MODE_CRC;
	t = server ? &fz_srv : &fz_cli;
	p = server ? &fz_cli : &fz_srv;

	fz_setup(&fz_cli, false, mode, st == FZ_RECONNECT, st == FZ_AUTH_MORE);
	fz_setup(&fz_srv, true, mode, st == FZ_RECONNECT, st == FZ_AUTH_MORE);
	/* the fixed set-up does not depend on the input: it must work */
	if (msgr2_conn_init(fz_cli.c, &fz_cli.cfg, &fz_cli.s) ||
	    msgr2_conn_init(fz_srv.c, &fz_srv.cfg, &fz_srv.s))
		abort();
	if (st == FZ_RECONNECT) {
		/* a lossless session, then a fresh connection resumes it */
		pipe_pump(fz_cli.c, fz_srv.c);
		msgr2_conn_release(fz_cli.c);
		msgr2_conn_release(fz_srv.c);
		if (msgr2_conn_init(fz_cli.c, &fz_cli.cfg, &fz_cli.s) ||
		    msgr2_conn_init(fz_srv.c, &fz_srv.cfg, &fz_srv.s))
			abort();
	}
	if (!drive_to(t->c, p->c, server, st))
		abort();
	data++;
	size--;
	if (st >= FZ_READY_CRC) {
		used = send_real(p, data, size);
		data += used;
		size -= used;
		pipe_pump(p->c, t->c);
	}
	buf = malloc(size ? size : 1);
	memcpy(buf, data, size);
	if (sel & 32)
		pipe_fix_crcs(buf, size);
	discard_tx(t->c);
	off = 0;
	ret = 0;
	while (!ret && off < size) {
		used = 0;
		ret = msgr2_rx_feed(t->c, buf + off,
				    piece ? min_t(size_t, piece, size - off) :
				    size - off, &used);
		discard_tx(t->c);
		if (!used)
			break;
		off += used;
	}
	msgr2_tick(t->c, 1);
	msgr2_tick(t->c, 1000000);
	free(buf);
	msgr2_conn_release(fz_cli.c);
	msgr2_conn_release(fz_srv.c);
	msgr2_session_drain(&fz_cli.s, pipe_ignore_tx_done, NULL, -ECONNRESET);
	msgr2_session_drain(&fz_srv.s, pipe_ignore_tx_done, NULL, -ECONNRESET);
	return 0;
}
