// SPDX-License-Identifier: GPL-2.0
/*
 * In-memory pipe, test auth method and CRC fixer; see lib_pipe.h.
 */
#include <stdlib.h>

#include "lib_pipe.h"

#define TAUTH_REQ_LEN	16
#define TAUTH_DONE_LEN	4

enum { TA_IDLE, TA_SENT, TA_MORE, TA_DONE };

static const u8 tauth_req_magic[TAUTH_REQ_LEN] = "kmsgr-test-auth";

void tauth_init(struct tauth *t, u64 seed, bool more)
{
	u64 s = seed | 1;
	int i;

	memset(t, 0, sizeof(*t));
	for (i = 0; i < 16; i++)
		t->session_key[i] = (u8)prng_next(&s);
	for (i = 0; i < 64; i++)
		t->con_secret[i] = (u8)prng_next(&s);
	t->secret_len = 64;
	t->more = more;
	t->next_gid = 4100;
}

static void tauth_result(struct tauth *t, u64 gid,
			 struct msgr2_auth_result *res)
{
	res->global_id = gid;
	res->session_key_len = 16;
	memcpy(res->session_key, t->session_key, 16);
	res->con_secret_len = t->secret_len;
	memcpy(res->con_secret, t->con_secret, t->secret_len);
}

static int tauth_request(void *priv, u8 *out, u32 cap)
{
	struct tauth *t = priv;

	if (cap < TAUTH_REQ_LEN)
		return -ENOSPC;
	memcpy(out, tauth_req_magic, TAUTH_REQ_LEN);
	t->state = TA_SENT;
	return TAUTH_REQ_LEN;
}

static int tauth_reply_more(void *priv, const u8 *in, u32 len, u8 *out,
			    u32 cap)
{
	struct tauth *t = priv;
	u32 i;

	if (t->state != TA_SENT || len != 8 || cap < 8)
		return -EINVAL;
	for (i = 0; i < 8; i++)
		out[i] = in[i] ^ 0x5a;
	t->state = TA_MORE;
	return 8;
}

static int tauth_done(void *priv, u64 global_id, u32 con_mode,
		      const u8 *in, u32 len, struct msgr2_auth_result *res)
{
	struct tauth *t = priv;

	if (len != TAUTH_DONE_LEN || memcmp(in, "done", 4))
		return -EINVAL;
	if (t->more && t->state != TA_MORE)
		return -EINVAL;
	t->state = TA_DONE;
	tauth_result(t, global_id, res);
	return 0;
}

static int tauth_accept(void *priv, bool more, u32 con_mode, const u8 *in,
			u32 len, u8 *out, u32 cap, u32 *out_len,
			struct msgr2_auth_result *res)
{
	struct tauth *t = priv;
	u64 s;
	int i;

	if (cap < 8)
		return -ENOSPC;
	if (!more) {
		if (len != TAUTH_REQ_LEN || memcmp(in, tauth_req_magic, len))
			return -EACCES;
		if (t->more) {
			s = t->next_gid * 0x9e3779b97f4a7c15ULL + 1;
			for (i = 0; i < 8; i++)
				t->challenge[i] = (u8)prng_next(&s);
			memcpy(out, t->challenge, 8);
			*out_len = 8;
			t->state = TA_MORE;
			return 1;
		}
	} else {
		if (t->state != TA_MORE || len != 8)
			return -EACCES;
		for (i = 0; i < 8; i++)
			if ((in[i] ^ 0x5a) != t->challenge[i])
				return -EACCES;
	}
	memcpy(out, "done", TAUTH_DONE_LEN);
	*out_len = TAUTH_DONE_LEN;
	t->state = TA_DONE;
	tauth_result(t, t->next_gid++, res);
	return 0;
}

static void tauth_reset(void *priv)
{
	struct tauth *t = priv;

	t->state = TA_IDLE;
}

const struct msgr2_auth_ops tauth_ops = {
	.method = MSGR2_AUTH_CEPHX,
	.request = tauth_request,
	.reply_more = tauth_reply_more,
	.done = tauth_done,
	.accept = tauth_accept,
	.reset = tauth_reset,
};

long pipe_move(struct msgr2_conn *from, struct msgr2_conn *to, size_t budget)
{
	struct msgr2_iov iov[4];
	size_t moved = 0, k;
	ssize_t want;
	void *buf;
	int n, ret;

	while (moved < budget) {
		n = msgr2_tx_iov(from, iov, 4);
		if (n < 0)
			return n;
		if (n == 0)
			break;
		want = msgr2_rx_want(to, &buf);
		if (want < 0)
			return (long)want;
		if (want == 0)
			break;
		k = min_t(size_t, iov[0].len, (size_t)want);
		k = min_t(size_t, k, budget - moved);
		if (!k)
			break;
		memcpy(buf, iov[0].base, k);
		ret = msgr2_tx_done(from, k);
		if (ret < 0)
			return ret;
		ret = msgr2_rx_done(to, k);
		if (ret < 0)
			return ret;
		moved += k;
	}
	return (long)moved;
}

long pipe_pump(struct msgr2_conn *a, struct msgr2_conn *b)
{
	long total = 0, x, y;

	do {
		x = pipe_move(a, b, (size_t)-1);
		if (x < 0)
			return x;
		y = pipe_move(b, a, (size_t)-1);
		if (y < 0)
			return y;
		total += x + y;
	} while (x || y);
	return total;
}

void pipe_fix_crcs(u8 *buf, size_t len)
{
	size_t off = 0, rest;
	u32 seg[4], n, i, crc;
	u8 *p, *q;

	while (len - off >= 32) {
		p = buf + off;
		n = p[1];
		for (i = 0; i < 4; i++)
			seg[i] = msgr2_get_le32(p + 2 + 6 * i);
		msgr2_put_le32(p + 28, msgr2_crc32c(0, p, 28));
		off += 32;
		if (n < 1 || n > 4)
			return;
		rest = len - off;
		if (seg[0]) {
			if (rest < (size_t)seg[0] + 4)
				return;
			msgr2_put_le32(buf + off + seg[0],
				       msgr2_crc32c(~0U, buf + off, seg[0]));
			off += seg[0] + 4;
		}
		if (n == 1)
			continue;
		q = buf + off;
		rest = len - off;
		if (rest < (size_t)seg[1] + seg[2] + seg[3] + 13)
			return;
		off += (size_t)seg[1] + seg[2] + seg[3];
		buf[off] = 0x0e;
		for (i = 1; i < 4; i++) {
			crc = i < n ? msgr2_crc32c(~0U, q, seg[i]) : 0;
			msgr2_put_le32(buf + off + 1 + 4 * (i - 1), crc);
			q += seg[i];
		}
		off += 13;
	}
}

int pipe_heap_rx_alloc(void *priv, struct msgr2_rx_msg *m)
{
	int i;

	for (i = 0; i < MSGR2_NSEG; i++) {
		m->buf[i] = NULL;
		if (m->len[i] > PIPE_HEAP_SEG_MAX)
			return -EMSGSIZE;
		if (m->len[i]) {
			m->buf[i] = malloc(m->len[i]);
			if (!m->buf[i])
				return -ENOMEM;
		}
	}
	return 0;
}

void pipe_heap_rx_msg(void *priv, struct msgr2_rx_msg *m, int status)
{
	int i;

	for (i = 0; i < MSGR2_NSEG; i++) {
		free(m->buf[i]);
		m->buf[i] = NULL;
	}
}

void pipe_ignore_tx_done(void *priv, struct msgr2_msg *m, int status)
{
}

void pipe_ignore_event(void *priv, enum msgr2_event ev, u64 arg)
{
}

void pipe_test_cfg(struct msgr2_config *cfg, bool server, u32 mode,
		   struct tauth *auth, u32 seg_max, void *scratch,
		   size_t scratch_len, const struct msgr2_ops *ops, void *priv)
{
	static const u8 ip_lo[4] = { 127, 0, 0, 1 };
	int i;

	memset(cfg, 0, sizeof(*cfg));
	cfg->role = server ? MSGR2_SERVER : MSGR2_CLIENT;
	cfg->my_type = server ? MSGR2_ENTITY_OSD : MSGR2_ENTITY_CLIENT;
	cfg->peer_type = server ? 0 : MSGR2_ENTITY_OSD;
	cfg->my_gid = server ? 3 : 0;
	msgr2_addr_ipv4(&cfg->target, MSGR2_ADDR_MSGR2, 77, ip_lo, 6800);
	if (server)
		cfg->my_addrs.a[0] = cfg->target;
	else
		msgr2_addr_ipv4(&cfg->my_addrs.a[0], MSGR2_ADDR_ANY, 5,
				ip_lo, 0);
	cfg->my_addrs.n = 1;
	cfg->features_supported = MSGR2_FEATURES_DEFAULT;
	cfg->n_modes = 1;
	cfg->modes[0] = mode;
	cfg->n_auth = 1;
	cfg->auth[0] = &tauth_ops;
	cfg->auth_priv[0] = auth;
	cfg->global_seq = 1;
	for (i = 0; i < MSGR2_NSEG; i++)
		cfg->max_seg_len[i] = seg_max;
	cfg->tx_scratch = scratch;
	cfg->tx_scratch_len = scratch_len;
	cfg->ops = ops;
	cfg->priv = priv;
}
