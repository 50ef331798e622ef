// SPDX-License-Identifier: GPL-2.0
/*
 * In-memory msgr2 engine pair for host tests; see lib_pair.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <ctype.h>

#include "lib_pair.h"

#define PAIR_SCRATCH	(1024 * 1024)

struct pair_msg {
	struct msgr2_msg m;
	u8 *buf[MSGR2_NSEG];
};

/* ---- fixed-key test auth ------------------------------------------------- */

static int fixed_request(void *priv, u8 *out, u32 cap)
{
	static const char hello[] = "fixed-auth";

	if (cap < sizeof(hello))
		return -ENOSPC;
	memcpy(out, hello, sizeof(hello));
	return sizeof(hello);
}

static int fixed_reply_more(void *priv, const u8 *in, u32 len, u8 *out,
			    u32 cap)
{
	if (cap < len)
		return -ENOSPC;
	memcpy(out, in, len);		/* echo the challenge */
	return len;
}

static void fixed_result(struct pair_auth_fixed *a, u64 gid,
			 struct msgr2_auth_result *res)
{
	memset(res, 0, sizeof(*res));
	res->global_id = gid;
	res->session_key_len = a->session_key_len;
	memcpy(res->session_key, a->session_key, sizeof(a->session_key));
	res->con_secret_len = a->con_secret_len;
	memcpy(res->con_secret, a->con_secret, sizeof(a->con_secret));
}

static int fixed_done(void *priv, u64 global_id, u32 con_mode,
		      const u8 *in, u32 len, struct msgr2_auth_result *res)
{
	fixed_result(priv, global_id, res);
	return 0;
}

static int fixed_accept(void *priv, bool more, u32 con_mode, const u8 *in,
			u32 len, u8 *out, u32 cap, u32 *out_len,
			struct msgr2_auth_result *res)
{
	struct pair_auth_fixed *a = priv;

	*out_len = 0;
	if (a->refuse)
		return -EACCES;
	if (a->round < a->rounds) {
		if (cap < 8)
			return -ENOSPC;
		memcpy(out, "challnge", 8);
		*out_len = 8;
		a->round++;
		return 1;
	}
	fixed_result(a, a->global_id, res);
	return 0;
}

static void fixed_reset(void *priv)
{
	struct pair_auth_fixed *a = priv;

	a->round = 0;
}

const struct msgr2_auth_ops pair_auth_fixed_ops = {
	.method = PAIR_AUTH_FIXED,
	.request = fixed_request,
	.reply_more = fixed_reply_more,
	.done = fixed_done,
	.accept = fixed_accept,
	.reset = fixed_reset,
};

/* ---- callbacks ------------------------------------------------------------- */

static int cb_rx_alloc(void *priv, struct msgr2_rx_msg *m)
{
	struct pair_end *e = priv;
	int i;

	if (e->rx_eagain > 0) {
		e->rx_eagain--;
		e->n_eagain++;
		return -EAGAIN;
	}
	for (i = 0; i < MSGR2_NSEG; i++)
		m->buf[i] = m->len[i] ? malloc(m->len[i]) : NULL;
	e->n_rx_alloc++;
	return 0;
}

static void cb_rx_msg(void *priv, struct msgr2_rx_msg *m, int status)
{
	struct pair_end *e = priv;
	struct pair_rx *r;
	int i;

	if (pair_rx_outstanding(e) <= 0)
		e->n_rx_unpaired++;
	e->n_rx_back++;
	e->rx_last_status = status;
	if (status) {
		if (status == -EALREADY)
			e->n_rx_dup++;
		else
			e->n_rx_drop++;
		for (i = 0; i < MSGR2_NSEG; i++)
			free(m->buf[i]);
		return;
	}
	if (e->n_rx == e->rx_cap) {
		e->rx_cap = e->rx_cap ? 2 * e->rx_cap : 16;
		e->rx = realloc(e->rx, e->rx_cap * sizeof(*e->rx));
		if (!e->rx)
			abort();
	}
	r = &e->rx[e->n_rx++];
	r->hdr = m->hdr;
	for (i = 0; i < MSGR2_NSEG; i++) {
		r->len[i] = m->len[i];
		r->buf[i] = m->buf[i];
	}
}

static void cb_tx_done(void *priv, struct msgr2_msg *m, int status)
{
	struct pair_end *e = priv;

	/*
	 * tx_end: 0 (not written on this connection), else the bytes moved
	 * off it up to the message's end: increasing, never beyond.
	 */
	if (m->tx_end) {
		if (m->tx_end <= e->last_tx_end || m->tx_end > e->tx_taken)
			e->n_tx_end_bad++;
		e->n_tx_end++;
		e->last_tx_end = m->tx_end;
	}
	if (status)
		e->n_tx_err++;
	else
		e->n_tx_ok++;
	pair_msg_free(m);
}

static void cb_event(void *priv, enum msgr2_event ev, u64 arg)
{
	struct pair_end *e = priv;

	switch (ev) {
	case MSGR2_EV_READY:
		e->n_ready++;
		e->ready_arg = arg;
		break;
	case MSGR2_EV_SESSION_RESET:
		e->n_reset++;
		break;
	case MSGR2_EV_KEEPALIVE_ACK:
		e->n_ka_ack++;
		e->ka_ack_stamp = arg;
		break;
	case MSGR2_EV_AUTH_DONE:
		e->n_auth_done++;
		e->auth_mode = (u32)arg;
		break;
	}
}

static struct msgr2_session *cb_attach(void *priv, struct msgr2_conn *c,
				       const struct msgr2_addrvec *addrs,
				       u64 client_cookie, u64 server_cookie,
				       bool reconnect)
{
	struct pair_end *e = priv;
	struct pair *p = e->p;
	struct msgr2_session *s;
	int i;

	if (!reconnect)
		return msgr2_conn_session(c);
	for (i = 0; i < p->n_sv_sess; i++) {
		s = p->sv_sess[i];
		if (s->client_cookie == client_cookie &&
		    s->server_cookie == server_cookie && s->established) {
			/* detach a stale connection still holding it */
			if (s->conn && s->conn != c && !p->attach_keep) {
				struct msgr2_conn *old = s->conn;

				if (old == e->c)
					e->c = NULL;
				msgr2_conn_release(old);
				free(old);
			}
			return s;
		}
	}
	return NULL;
}

static u64 cb_next_gseq(void *priv, u64 at_least)
{
	struct pair_end *e = priv;

	if (e->next_gseq <= at_least)
		e->next_gseq = at_least + 1;
	return e->next_gseq++;
}

/* ---- setup ----------------------------------------------------------------- */

static void pair_end_init(struct pair *p, struct pair_end *e, bool server,
			  u32 mode)
{
	static const u8 mon_ip[4] = { 127, 0, 0, 1 };
	static const u8 zero_ip[4];
	struct msgr2_config *cfg = &e->cfg;
	int i;

	e->p = p;
	e->server = server;
	msgr2_session_init(&e->s, false);
	e->tx_scratch = malloc(PAIR_SCRATCH);
	if (!e->tx_scratch)
		abort();
	e->ops.rx_alloc = cb_rx_alloc;
	e->ops.rx_msg = cb_rx_msg;
	e->ops.tx_done = cb_tx_done;
	e->ops.event = cb_event;
	e->ops.attach = cb_attach;
	e->ops.next_global_seq = cb_next_gseq;

	e->none.entity_type = server ? MSGR2_ENTITY_MON : MSGR2_ENTITY_CLIENT;
	strcpy(e->none.name, server ? "a" : "admin");
	e->fixed.session_key_len = 16;
	e->fixed.con_secret_len = 64;
	for (i = 0; i < 16; i++)
		e->fixed.session_key[i] = 0xa0 + i;
	for (i = 0; i < 64; i++)
		e->fixed.con_secret[i] = i;
	e->fixed.global_id = 5000;

	memset(cfg, 0, sizeof(*cfg));
	cfg->role = server ? MSGR2_SERVER : MSGR2_CLIENT;
	cfg->my_type = server ? MSGR2_ENTITY_MON : MSGR2_ENTITY_CLIENT;
	cfg->peer_type = server ? 0 : MSGR2_ENTITY_MON;
	cfg->my_addrs.n = 1;
	if (server) {
		msgr2_addr_ipv4(&cfg->my_addrs.a[0], MSGR2_ADDR_MSGR2, 0,
				mon_ip, 3300);
		msgr2_addr_ipv4(&cfg->target, MSGR2_ADDR_MSGR2, 0, mon_ip,
				40000);
		cfg->my_gid = 0;
		cfg->global_seq = 7;
	} else {
		msgr2_addr_ipv4(&cfg->my_addrs.a[0], MSGR2_ADDR_ANY,
				0x11223344, zero_ip, 0);
		msgr2_addr_ipv4(&cfg->target, MSGR2_ADDR_MSGR2, 0, mon_ip,
				3300);
		cfg->global_seq = 1;
	}
	cfg->features_supported = MSGR2_FEATURES_DEFAULT;
	cfg->features_required = 0;
	cfg->n_modes = 1;
	cfg->modes[0] = mode;
	if (mode == MSGR2_MODE_SECURE) {
		cfg->n_modes = 2;
		cfg->modes[1] = MSGR2_MODE_CRC;
	}
	if (mode == MSGR2_MODE_SECURE) {
		cfg->n_auth = 1;
		cfg->auth[0] = &pair_auth_fixed_ops;
		cfg->auth_priv[0] = &e->fixed;
	} else {
		cfg->n_auth = 1;
		cfg->auth[0] = &msgr2_auth_none_ops;
		cfg->auth_priv[0] = &e->none;
	}
	cfg->tx_scratch = e->tx_scratch;
	cfg->tx_scratch_len = PAIR_SCRATCH;
	cfg->ops = &e->ops;
	cfg->priv = e;
}

struct pair *pair_new(u32 mode)
{
	struct pair *p = calloc(1, sizeof(*p));

	if (!p)
		abort();
	p->budget = -1;
	pair_end_init(p, &p->cl, false, mode);
	pair_end_init(p, &p->sv, true, mode);
	return p;
}

static void pair_end_free(struct pair_end *e)
{
	int i, j;

	for (i = 0; i < e->n_rx; i++)
		for (j = 0; j < MSGR2_NSEG; j++)
			free(e->rx[i].buf[j]);
	free(e->rx);
	free(e->tx_scratch);
}

static void pair_drain_cb(void *priv, struct msgr2_msg *m, int status)
{
	cb_tx_done(priv, m, status);
}

int pair_rx_outstanding(const struct pair_end *e)
{
	return e->n_rx_alloc - e->n_rx_back;
}

void pair_free(struct pair *p)
{
	int i;

	pair_disconnect(p);
	/* released connections give every receive buffer back, once */
	if (pair_rx_outstanding(&p->cl) || pair_rx_outstanding(&p->sv) ||
	    p->cl.n_rx_unpaired || p->sv.n_rx_unpaired) {
		fprintf(stderr, "pair: rx buffers kept %d/%d, unpaired %d/%d\n",
			pair_rx_outstanding(&p->cl),
			pair_rx_outstanding(&p->sv), p->cl.n_rx_unpaired,
			p->sv.n_rx_unpaired);
		abort();
	}
	msgr2_session_drain(&p->cl.s, pair_drain_cb, &p->cl, -ECONNRESET);
	for (i = 0; i < p->n_sv_sess; i++) {
		msgr2_session_drain(p->sv_sess[i], pair_drain_cb, &p->sv,
				    -ECONNRESET);
		free(p->sv_sess[i]);
	}
	pair_end_free(&p->cl);
	pair_end_free(&p->sv);
	free(p);
}

static void pair_end_close(struct pair_end *e)
{
	if (!e->c)
		return;
	msgr2_conn_release(e->c);
	free(e->c);
	e->c = NULL;
}

void pair_disconnect(struct pair *p)
{
	pair_end_close(&p->cl);
	pair_end_close(&p->sv);
}

int pair_connect(struct pair *p)
{
	struct msgr2_session *s;
	int ret;

	pair_disconnect(p);
	if (p->n_sv_sess == PAIR_MAX_SESSIONS)
		return -ENOSPC;
	p->cl.tx_taken = 0;
	p->cl.last_tx_end = 0;
	p->sv.tx_taken = 0;
	p->sv.last_tx_end = 0;
	s = calloc(1, sizeof(*s));
	p->cl.c = calloc(1, msgr2_conn_size());
	p->sv.c = calloc(1, msgr2_conn_size());
	if (!s || !p->cl.c || !p->sv.c)
		abort();
	msgr2_session_init(s, false);
	p->sv_sess[p->n_sv_sess++] = s;
	ret = msgr2_conn_init(p->cl.c, &p->cl.cfg, &p->cl.s);
	if (ret)
		return ret;
	p->cl.cfg.global_seq++;		/* next attempt gets a new one */
	return msgr2_conn_init(p->sv.c, &p->sv.cfg, s);
}

struct msgr2_session *pair_session(struct pair_end *e)
{
	if (!e->server)
		return &e->s;
	if (e->c)
		return msgr2_conn_session(e->c);
	return e->p->n_sv_sess ? e->p->sv_sess[e->p->n_sv_sess - 1] : NULL;
}

struct msgr2_msg *pair_msg_new(u16 type, const void *front, u32 flen,
			       const void *middle, u32 mlen, const void *data,
			       u32 dlen)
{
	const void *src[MSGR2_NSEG] = { front, middle, data };
	u32 len[MSGR2_NSEG] = { flen, mlen, dlen };
	struct pair_msg *pm = calloc(1, sizeof(*pm));
	int i;

	if (!pm)
		abort();
	pm->m.hdr.type = type;
	pm->m.hdr.priority = 127;
	pm->m.hdr.version = 1;
	for (i = 0; i < MSGR2_NSEG; i++) {
		if (!len[i])
			continue;
		pm->buf[i] = malloc(len[i]);
		if (!pm->buf[i])
			abort();
		memcpy(pm->buf[i], src[i], len[i]);
		pm->m.seg[i].base = pm->buf[i];
		pm->m.seg[i].len = len[i];
	}
	return &pm->m;
}

void pair_msg_free(struct msgr2_msg *m)
{
	struct pair_msg *pm = (struct pair_msg *)m;
	int i;

	for (i = 0; i < MSGR2_NSEG; i++)
		free(pm->buf[i]);
	free(pm);
}

int pair_send(struct pair_end *e, u16 type, const void *front, u32 flen,
	      const void *middle, u32 mlen, const void *data, u32 dlen)
{
	struct msgr2_session *s = pair_session(e);
	struct msgr2_msg *m;
	int ret;

	if (!s)
		abort();
	m = pair_msg_new(type, front, flen, middle, mlen, data, dlen);
	ret = msgr2_send(s, m);
	if (ret)
		pair_msg_free(m);
	return ret;
}

/* ---- the wire -------------------------------------------------------------- */

static u64 pair_xfer(struct pair *p, struct msgr2_conn *a,
		     struct msgr2_conn *b, u64 max)
{
	struct msgr2_iov iov[8];
	size_t off, k, moved = 0;
	bool stop = false;
	ssize_t want;
	void *buf;
	int i, n, t;

	if (!a || !b)
		return 0;
	t = a == p->cl.c ? 0 : 1;
	n = msgr2_tx_iov(a, iov, 8);
	for (i = 0; i < n && !stop; i++) {
		off = 0;
		while (off < iov[i].len) {
			if (p->budget == 0) {
				stop = true;
				break;
			}
			want = msgr2_rx_want(b, &buf);
			if (want <= 0) {
				stop = true;
				break;
			}
			k = iov[i].len - off;
			if ((size_t)want < k)
				k = want;
			if (p->chunk && k > p->chunk)
				k = p->chunk;
			if (p->budget > 0 && (long long)k > p->budget)
				k = p->budget;
			if (max && k > max - moved)
				k = max - moved;
			if (!k) {
				stop = true;
				break;
			}
			memcpy(buf, (u8 *)iov[i].base + off, k);
			if (p->tap[t]) {
				if (p->tap_len[t] + k > p->tap_cap[t])
					abort();
				memcpy(p->tap[t] + p->tap_len[t], buf, k);
				p->tap_len[t] += k;
			}
			off += k;
			moved += k;
			if (p->budget > 0)
				p->budget -= k;
			if (msgr2_rx_done(b, k)) {
				stop = true;
				break;
			}
		}
		if (off < iov[i].len)
			stop = true;
	}
	if (moved) {
		msgr2_tx_done(a, moved);
		(a == p->cl.c ? &p->cl : &p->sv)->tx_taken += moved;
	}
	return moved;
}

u64 pair_pump(struct pair *p)
{
	u64 total = 0, m;

	do {
		m = pair_xfer(p, p->cl.c, p->sv.c, 0);
		m += pair_xfer(p, p->sv.c, p->cl.c, 0);
		total += m;
	} while (m);
	p->moved += total;
	return total;
}

u64 pair_move(struct pair *p, bool c2s, u64 max)
{
	struct msgr2_conn *a = c2s ? p->cl.c : p->sv.c;
	struct msgr2_conn *b = c2s ? p->sv.c : p->cl.c;
	u64 total = 0, m;

	do {
		m = pair_xfer(p, a, b, max ? max - total : 0);
		total += m;
	} while (m && (!max || total < max));
	p->moved += total;
	return total;
}

size_t pair_frame_crc(u8 *out, size_t cap, u8 tag, int nsegs,
		      const void *const seg[4], const u32 len[4], u8 late)
{
	size_t n = 32;
	int i;

	memset(out, 0, 32);
	out[0] = tag;
	out[1] = nsegs;
	for (i = 0; i < 4 && i < nsegs; i++) {
		msgr2_put_le32(out + 2 + 6 * i, len[i]);
		msgr2_put_le16(out + 6 + 6 * i, i == 3 ? 4096 : 8);
	}
	msgr2_put_le32(out + 28, msgr2_crc32c(0, out, 28));
	if (nsegs < 1)
		return n;
	if (len[0]) {
		memcpy(out + n, seg[0], len[0]);
		n += len[0];
		msgr2_put_le32(out + n, msgr2_crc32c(~0U, seg[0], len[0]));
		n += 4;
	}
	if (nsegs == 1)
		return n;
	for (i = 1; i < 4 && i < nsegs; i++) {
		memcpy(out + n, seg[i], len[i]);
		n += len[i];
	}
	out[n] = late;
	for (i = 1; i < 4; i++)
		msgr2_put_le32(out + n + 1 + 4 * (i - 1), i < nsegs ?
			       msgr2_crc32c(~0U, seg[i], len[i]) : 0);
	n += 13;
	if (n > cap)
		abort();
	return n;
}

size_t pair_hex(const char *hex, u8 *out, size_t cap)
{
	size_t n = 0;
	unsigned int v;

	while (*hex) {
		if (isspace((unsigned char)*hex)) {
			hex++;
			continue;
		}
		if (sscanf(hex, "%2x", &v) != 1 || n == cap)
			abort();
		out[n++] = v;
		hex += 2;
	}
	return n;
}
