// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr msgr2 engine - the connection state machines (msgr2.md 5), both
 * roles, from the banner to READY, and the READY control frames.
 *
 *   client: BANNER -> HELLO -> AUTH -> AUTH_SIGN -> IDENT | RECONNECT -> READY
 *   server: BANNER -> HELLO -> AUTH (-> AUTH_MORE) -> AUTH_SIGN -> IDENT
 *           -> READY
 *
 * Every frame handler validates its whole payload through the bounded
 * decoder before it changes any state.
 */
#include "msgr2_int.h"

#define M2_AF_INET	2
#define M2_AF_INET6	10

static void m2_event(struct msgr2_conn *c, enum msgr2_event ev, u64 arg)
{
	if (c->cfg.ops->event)
		c->cfg.ops->event(c->cfg.priv, ev, arg);
}

static u64 m2_cookie(void)
{
	u64 v = 0;

	while (!v)
		msgr2_random(&v, sizeof(v));
	return v;
}

static bool m2_has_mode(const u32 *modes, u32 n, u32 mode)
{
	u32 i;

	for (i = 0; i < n; i++)
		if (modes[i] == mode)
			return true;
	return false;
}

/* ---- tag validity per role and state -------------------------------------- */

#define M2_BIT(t)	(1U << (t))

static u32 m2_tags_allowed(const struct msgr2_conn *c)
{
	bool client = c->cfg.role == MSGR2_CLIENT;

	switch (c->state) {
	case M2_S_HELLO:
		return M2_BIT(MSGR2_TAG_HELLO);
	case M2_S_AUTH:
		if (!client)
			return M2_BIT(MSGR2_TAG_AUTH_REQUEST);
		return M2_BIT(MSGR2_TAG_AUTH_BAD_METHOD) |
		       M2_BIT(MSGR2_TAG_AUTH_REPLY_MORE) |
		       M2_BIT(MSGR2_TAG_AUTH_DONE);
	case M2_S_AUTH_MORE:
		return client ? 0 : M2_BIT(MSGR2_TAG_AUTH_REQUEST_MORE);
	case M2_S_AUTH_SIGN:
		return M2_BIT(MSGR2_TAG_AUTH_SIGNATURE);
	case M2_S_IDENT:
		if (!client)
			return M2_BIT(MSGR2_TAG_CLIENT_IDENT) |
			       M2_BIT(MSGR2_TAG_SESSION_RECONNECT);
		return M2_BIT(MSGR2_TAG_SERVER_IDENT) |
		       M2_BIT(MSGR2_TAG_IDENT_MISSING_FEATURES) |
		       M2_BIT(MSGR2_TAG_WAIT);
	case M2_S_RECONNECT:
		return client ? M2_BIT(MSGR2_TAG_SESSION_RECONNECT_OK) |
				M2_BIT(MSGR2_TAG_SESSION_RESET) |
				M2_BIT(MSGR2_TAG_SESSION_RETRY) |
				M2_BIT(MSGR2_TAG_SESSION_RETRY_GLOBAL) |
				M2_BIT(MSGR2_TAG_WAIT) : 0;
	case M2_S_READY:
		return M2_BIT(MSGR2_TAG_MESSAGE) |
		       M2_BIT(MSGR2_TAG_KEEPALIVE2) |
		       M2_BIT(MSGR2_TAG_KEEPALIVE2_ACK) |
		       M2_BIT(MSGR2_TAG_ACK);
	default:
		return 0;
	}
}

bool m2_tag_ok(const struct msgr2_conn *c, u8 tag)
{
	return tag < 32 && (m2_tags_allowed(c) & M2_BIT(tag));
}

/* ---- banner and HELLO ------------------------------------------------------ */

static int m2_send_hello(struct msgr2_conn *c)
{
	struct m2_enc e;
	u32 cap;
	u8 *p = m2_ctrl_begin(c, &cap);

	if (!p)
		return m2_fail(c, MSGR2_R_OVERSIZE);
	m2_enc_init(&e, p, cap);
	m2_enc_u8(&e, c->cfg.my_type);
	/* client: the address dialled; server: the client as seen */
	m2_enc_addr(&e, &c->cfg.target);
	if (e.err)
		return m2_fail(c, MSGR2_R_OVERSIZE);
	return m2_ctrl_end(c, MSGR2_TAG_HELLO, e.off);
}

int m2_on_banner(struct msgr2_conn *c, const u8 *p, u32 len)
{
	const u64 mine = MSGR2_BANNER_FEAT_REV1;
	u64 supported = msgr2_get_le64(p);
	u64 required = msgr2_get_le64(p + 8);

	if ((mine & supported) != mine || (required & mine) != required)
		return m2_fail(c, MSGR2_R_BANNER_FEATURES);
	c->state = M2_S_HELLO;
	return m2_send_hello(c);
}

/* Take our IP from the server's view when we do not know it (6.2). */
static void m2_learn_addr(struct msgr2_conn *c, const struct msgr2_addr *seen)
{
	struct msgr2_addr *me = &c->my_addrs.a[0];
	u16 fam, sfam = msgr2_get_le16(seen->sa);

	if (!c->my_addrs.n) {
		c->my_addrs.n = 1;
		memset(me, 0, sizeof(*me));
		me->type = MSGR2_ADDR_ANY;
		msgr2_random(&me->nonce, sizeof(me->nonce));
	}
	fam = msgr2_get_le16(me->sa);
	if (sfam == M2_AF_INET && seen->len >= 8 &&
	    (!fam || (fam == M2_AF_INET && !msgr2_get_le32(me->sa + 4)))) {
		msgr2_put_le16(me->sa, M2_AF_INET);
		memcpy(me->sa + 4, seen->sa + 4, 4);
		me->len = 16;
	} else if (sfam == M2_AF_INET6 && seen->len >= 24 &&
		   (!fam || (fam == M2_AF_INET6 &&
			     !msgr2_get_le64(me->sa + 8) &&
			     !msgr2_get_le64(me->sa + 16)))) {
		msgr2_put_le16(me->sa, M2_AF_INET6);
		memcpy(me->sa + 8, seen->sa + 8, 16);
		me->len = 28;
	}
}

static int m2_send_auth_request(struct msgr2_conn *c);

static int m2_on_hello(struct msgr2_conn *c, struct m2_dec *d)
{
	struct msgr2_addr seen;
	u8 type = m2_dec_u8(d);

	if (m2_dec_addr(d, &seen))
		return m2_fail(c, MSGR2_R_MALFORMED);
	c->peer_type = type;
	if (c->cfg.role == MSGR2_SERVER) {
		c->state = M2_S_AUTH;
		return 0;
	}
	if (c->cfg.peer_type && type != c->cfg.peer_type)
		return m2_fail(c, MSGR2_R_PEER);
	c->peer_view = seen;
	m2_learn_addr(c, &seen);
	c->state = M2_S_AUTH;
	return m2_send_auth_request(c);
}

/* ---- authentication: common ------------------------------------------------ */

/* The transcripts are not needed after auth: wipe and free them. */
static void m2_rec_free(struct msgr2_conn *c)
{
	c->recording = false;
	if (!c->rx_rec)
		return;
	msgr2_wipe(c->rx_rec, c->rx_rec_len);
	msgr2_wipe(c->tx_rec, c->tx_rec_len);
	msgr2_free(c->rx_rec);	/* one allocation for both */
	c->rx_rec = NULL;
	c->tx_rec = NULL;
	c->rx_rec_len = 0;
	c->tx_rec_len = 0;
}

static int m2_auth_finish(struct msgr2_conn *c, u32 con_mode)
{
	const struct msgr2_auth_result *r = &c->ares;
	u32 klen = min_t(u32, r->session_key_len, sizeof(r->session_key));
	struct msgr2_iov iov;
	u8 sig[M2_SIG_LEN];
	int ret;

	c->recording = false;
	memset(sig, 0, sizeof(sig));
	memset(c->sig_expect, 0, sizeof(c->sig_expect));
	if (klen) {
		/* ours covers what we received, the peer's what we sent */
		iov.base = c->rx_rec;
		iov.len = c->rx_rec_len;
		ret = msgr2_hmac_sha256(r->session_key, klen, &iov, 1, sig);
		if (!ret) {
			iov.base = c->tx_rec;
			iov.len = c->tx_rec_len;
			ret = msgr2_hmac_sha256(r->session_key, klen, &iov, 1,
						c->sig_expect);
		}
		if (ret)
			return m2_fail(c, MSGR2_R_NOMEM);
	}
	m2_rec_free(c);

	c->mode = con_mode;
	if (con_mode == MSGR2_MODE_SECURE) {
		ret = m2_set_secure(c, r->con_secret, r->con_secret_len);
		if (ret)
			return m2_fail(c, ret == -ENOMEM ? MSGR2_R_NOMEM :
					  MSGR2_R_AUTH);
	}
	/* the keys are in the ciphers and signatures now: nothing reads them */
	msgr2_wipe(&c->ares, sizeof(c->ares));
	c->state = M2_S_AUTH_SIGN;
	/* AUTH_SIGNATURE is the first frame in the negotiated mode */
	ret = m2_ctrl_send(c, MSGR2_TAG_AUTH_SIGNATURE, sig, sizeof(sig));
	msgr2_wipe(sig, sizeof(sig));
	if (ret)
		return ret;
	m2_event(c, MSGR2_EV_AUTH_DONE, con_mode);
	return m2_failed(c) ? c->err : 0;
}

/* ---- authentication: client ------------------------------------------------ */

/* Modes to offer with @method: AUTH_NONE can only do crc (C2). */
static u32 m2_client_modes(struct msgr2_conn *c, u32 method, bool crc_only)
{
	u32 i, n = 0;

	for (i = 0; i < c->cfg.n_modes && i < MSGR2_MAX_MODES; i++) {
		u32 m = c->cfg.modes[i];

		if ((method == MSGR2_AUTH_NONE || crc_only) &&
		    m != MSGR2_MODE_CRC)
			continue;
		if (m != MSGR2_MODE_CRC && m != MSGR2_MODE_SECURE)
			continue;
		if (!m2_has_mode(c->sent_modes, n, m))
			c->sent_modes[n++] = m;
	}
	c->n_sent_modes = n;
	return n;
}

static int m2_auth_request(struct msgr2_conn *c)
{
	const struct msgr2_auth_ops *a = c->cfg.auth[c->auth_idx];
	void *priv = c->cfg.auth_priv[c->auth_idx];
	struct m2_enc e;
	u8 *p, *lenp;
	u32 cap;
	int ret;

	if (a->reset)
		a->reset(priv);
	p = m2_ctrl_begin(c, &cap);
	if (!p)
		return m2_fail(c, MSGR2_R_OVERSIZE);
	m2_enc_init(&e, p, cap);
	m2_enc_le32(&e, a->method);
	m2_enc_u32vec(&e, c->sent_modes, c->n_sent_modes);
	lenp = m2_enc_reserve(&e, 4);
	if (e.err)
		return m2_fail(c, MSGR2_R_OVERSIZE);
	ret = a->request(priv, p + e.off, cap - e.off);
	if (ret < 0 || (u32)ret > cap - e.off)
		return m2_fail(c, MSGR2_R_AUTH);
	msgr2_put_le32(lenp, ret);
	c->auth_rounds = 0;
	return m2_ctrl_end(c, MSGR2_TAG_AUTH_REQUEST, e.off + ret);
}

/*
 * Start with the first usable method at or after auth_idx; with a non-empty
 * @allowed list (AUTH_BAD_METHOD) skip the methods the server refuses.
 */
static int m2_auth_pick(struct msgr2_conn *c, const u32 *allowed, u32 n)
{
	const struct msgr2_auth_ops *a;

	for (; c->auth_idx < c->cfg.n_auth; c->auth_idx++) {
		a = c->cfg.auth[c->auth_idx];
		if (!a || !a->request)
			continue;
		if (n && !m2_has_mode(allowed, n, a->method))
			continue;
		if (m2_client_modes(c, a->method, false))
			return m2_auth_request(c);
	}
	return m2_fail(c, MSGR2_R_AUTH);
}

static int m2_send_auth_request(struct msgr2_conn *c)
{
	c->auth_idx = 0;
	c->crc_retry_done = false;
	return m2_auth_pick(c, NULL, 0);
}

/* Does one of our modes appear in the peer's list? */
static bool m2_modes_meet(const struct msgr2_conn *c, const u32 *modes, u32 n)
{
	u32 i;

	for (i = 0; i < c->cfg.n_modes; i++)
		if (m2_has_mode(modes, n, c->cfg.modes[i]))
			return true;
	return false;
}

static int m2_on_auth_bad_method(struct msgr2_conn *c, struct m2_dec *d)
{
	const struct msgr2_auth_ops *a = c->cfg.auth[c->auth_idx];
	u32 methods[M2_MAX_VEC], modes[M2_MAX_VEC];
	u32 n_methods, n_modes;

	m2_dec_le32(d);			/* method */
	m2_dec_le32(d);			/* result */
	if (m2_dec_u32vec(d, methods, M2_MAX_VEC, &n_methods) ||
	    m2_dec_u32vec(d, modes, M2_MAX_VEC, &n_modes))
		return m2_fail(c, MSGR2_R_MALFORMED);
	if (++c->retries > M2_MAX_RETRIES)
		return m2_fail(c, MSGR2_R_AUTH);
	/*
	 * allowed_modes is the server's whole mode list, not what works with
	 * this method (C3): retry crc-only once, if we allow crc and did not
	 * offer crc alone already.
	 */
	if (!c->crc_retry_done &&
	    m2_has_mode(methods, n_methods, a->method) &&
	    m2_has_mode(modes, n_modes, MSGR2_MODE_CRC) &&
	    !(c->n_sent_modes == 1 && c->sent_modes[0] == MSGR2_MODE_CRC) &&
	    m2_client_modes(c, a->method, true)) {
		c->crc_retry_done = true;
		return m2_auth_request(c);
	}
	/*
	 * The method is allowed but none of our modes is (a secure-only mon
	 * and a crc-only client): no other method changes that.
	 */
	if (m2_has_mode(methods, n_methods, a->method) &&
	    !m2_modes_meet(c, modes, n_modes))
		return m2_fail(c, MSGR2_R_MODE);
	c->auth_idx++;
	c->crc_retry_done = false;
	return m2_auth_pick(c, methods, n_methods);
}

static int m2_on_auth_reply_more(struct msgr2_conn *c, struct m2_dec *d)
{
	const struct msgr2_auth_ops *a = c->cfg.auth[c->auth_idx];
	void *priv = c->cfg.auth_priv[c->auth_idx];
	const u8 *in;
	u32 len, cap;
	u8 *p;
	int ret;

	in = m2_dec_blob(d, &len);
	if (!in)
		return m2_fail(c, MSGR2_R_MALFORMED);
	if (!a->reply_more || ++c->auth_rounds > M2_MAX_AUTH_ROUNDS)
		return m2_fail(c, MSGR2_R_AUTH);
	p = m2_ctrl_begin(c, &cap);
	if (!p || cap < 4)
		return m2_fail(c, MSGR2_R_OVERSIZE);
	ret = a->reply_more(priv, in, len, p + 4, cap - 4);
	if (ret < 0 || (u32)ret > cap - 4)
		return m2_fail(c, MSGR2_R_AUTH);
	msgr2_put_le32(p, ret);
	return m2_ctrl_end(c, MSGR2_TAG_AUTH_REQUEST_MORE, 4 + ret);
}

static int m2_on_auth_done(struct msgr2_conn *c, struct m2_dec *d)
{
	const struct msgr2_auth_ops *a = c->cfg.auth[c->auth_idx];
	void *priv = c->cfg.auth_priv[c->auth_idx];
	u64 global_id = m2_dec_le64(d);
	u32 con_mode = m2_dec_le32(d);
	const u8 *in;
	u32 len;
	int ret;

	in = m2_dec_blob(d, &len);
	if (!in)
		return m2_fail(c, MSGR2_R_MALFORMED);
	/* the server must pick one of the modes we offered */
	if (!m2_has_mode(c->sent_modes, c->n_sent_modes, con_mode) ||
	    !a->done)
		return m2_fail(c, MSGR2_R_AUTH);
	memset(&c->ares, 0, sizeof(c->ares));
	ret = a->done(priv, global_id, con_mode, in, len, &c->ares);
	if (ret < 0)
		return m2_fail(c, MSGR2_R_AUTH);
	/* no secure mode without a full connection secret (C1) */
	if (con_mode == MSGR2_MODE_SECURE &&
	    c->ares.con_secret_len < M2_SECRET_MIN)
		return m2_fail(c, MSGR2_R_AUTH);
	c->global_id = global_id;
	return m2_auth_finish(c, con_mode);
}

/* ---- authentication: server ------------------------------------------------ */

static int m2_send_bad_method(struct msgr2_conn *c, u32 method, int result)
{
	u32 methods[MSGR2_MAX_AUTH];
	u32 i, n = 0, cap;
	struct m2_enc e;
	u8 *p;

	for (i = 0; i < c->cfg.n_auth; i++)
		if (c->cfg.auth[i] && c->cfg.auth[i]->accept)
			methods[n++] = c->cfg.auth[i]->method;
	p = m2_ctrl_begin(c, &cap);
	if (!p)
		return m2_fail(c, MSGR2_R_OVERSIZE);
	m2_enc_init(&e, p, cap);
	m2_enc_le32(&e, method);
	m2_enc_le32(&e, (u32)result);
	m2_enc_u32vec(&e, methods, n);
	m2_enc_u32vec(&e, c->cfg.modes, c->cfg.n_modes);
	if (e.err)
		return m2_fail(c, MSGR2_R_OVERSIZE);
	c->state = M2_S_AUTH;
	return m2_ctrl_end(c, MSGR2_TAG_AUTH_BAD_METHOD, e.off);
}

static int m2_srv_accept(struct msgr2_conn *c, bool more, const u8 *in,
			 u32 len)
{
	const struct msgr2_auth_ops *a = c->cfg.auth[c->srv_auth_idx];
	void *priv = c->cfg.auth_priv[c->srv_auth_idx];
	struct msgr2_auth_result res;
	u32 cap, olen = 0;
	u8 *p;
	int ret;

	p = m2_ctrl_begin(c, &cap);
	if (!p || cap < 16)
		return m2_fail(c, MSGR2_R_OVERSIZE);
	memset(&res, 0, sizeof(res));
	ret = a->accept(priv, more, c->srv_mode, in, len, p + 16, cap - 16,
			&olen, &res);
	if (ret == -EBUSY) {
		ret = m2_fail(c, MSGR2_R_AUTH);
		goto out;
	}
	if (ret < 0) {
		ret = m2_send_bad_method(c, a->method, ret);
		goto out;
	}
	if (olen > cap - 16) {
		ret = m2_fail(c, MSGR2_R_AUTH);
		goto out;
	}
	if (ret > 0) {
		if (++c->auth_rounds > M2_MAX_AUTH_ROUNDS) {
			ret = m2_fail(c, MSGR2_R_AUTH);
			goto out;
		}
		memmove(p + 4, p + 16, olen);
		msgr2_put_le32(p, olen);
		c->state = M2_S_AUTH_MORE;
		ret = m2_ctrl_end(c, MSGR2_TAG_AUTH_REPLY_MORE, 4 + olen);
		goto out;
	}
	/*
	 * refuse secure mode without a full connection secret (C1), and a
	 * peer that proved to be another kind of entity than HELLO said (a
	 * client's key must not make an "osd" of the session's peer_type)
	 */
	if ((c->srv_mode == MSGR2_MODE_SECURE &&
	     res.con_secret_len < M2_SECRET_MIN) ||
	    (res.entity_type && res.entity_type != c->peer_type)) {
		ret = m2_fail(c, MSGR2_R_AUTH);
		goto out;
	}
	c->ares = res;
	c->global_id = res.global_id;
	msgr2_put_le64(p, res.global_id);
	msgr2_put_le32(p + 8, c->srv_mode);
	msgr2_put_le32(p + 12, olen);
	ret = m2_ctrl_end(c, MSGR2_TAG_AUTH_DONE, 16 + olen);
	if (!ret)
		ret = m2_auth_finish(c, c->srv_mode);
out:
	msgr2_wipe(&res, sizeof(res));
	return ret;
}

static int m2_on_auth_request(struct msgr2_conn *c, struct m2_dec *d)
{
	u32 method = m2_dec_le32(d);
	u32 modes[M2_MAX_VEC], n_modes, i, len;
	const struct msgr2_auth_ops *a = NULL;
	const u8 *in;

	if (m2_dec_u32vec(d, modes, M2_MAX_VEC, &n_modes))
		return m2_fail(c, MSGR2_R_MALFORMED);
	in = m2_dec_blob(d, &len);
	if (!in)
		return m2_fail(c, MSGR2_R_MALFORMED);
	if (++c->retries > M2_MAX_RETRIES)
		return m2_fail(c, MSGR2_R_AUTH);
	for (i = 0; i < c->cfg.n_auth; i++) {
		a = c->cfg.auth[i];
		if (a && a->accept && a->method == method)
			break;
	}
	if (i == c->cfg.n_auth)
		return m2_send_bad_method(c, method, -EOPNOTSUPP);
	c->srv_auth_idx = i;
	/* first of the client's modes that we allow for this method */
	c->srv_mode = 0;
	for (i = 0; i < n_modes && !c->srv_mode; i++) {
		if (method == MSGR2_AUTH_NONE && modes[i] != MSGR2_MODE_CRC)
			continue;
		if (m2_has_mode(c->cfg.modes, c->cfg.n_modes, modes[i]))
			c->srv_mode = modes[i];
	}
	if (!c->srv_mode)
		return m2_send_bad_method(c, method, -EOPNOTSUPP);
	if (a->reset)
		a->reset(c->cfg.auth_priv[c->srv_auth_idx]);
	c->auth_rounds = 0;
	return m2_srv_accept(c, false, in, len);
}

static int m2_on_auth_request_more(struct msgr2_conn *c, struct m2_dec *d)
{
	const u8 *in;
	u32 len;

	in = m2_dec_blob(d, &len);
	if (!in)
		return m2_fail(c, MSGR2_R_MALFORMED);
	return m2_srv_accept(c, true, in, len);
}

/* ---- AUTH_SIGNATURE --------------------------------------------------------- */

static int m2_send_ident(struct msgr2_conn *c);

static int m2_on_auth_signature(struct msgr2_conn *c, struct m2_dec *d)
{
	const u8 *sig = m2_dec_bytes(d, M2_SIG_LEN);

	if (!sig)
		return m2_fail(c, MSGR2_R_MALFORMED);
	if (msgr2_memneq(sig, c->sig_expect, M2_SIG_LEN))
		return m2_fail(c, MSGR2_R_SIGNATURE);
	if (c->cfg.role == MSGR2_SERVER) {
		c->state = M2_S_IDENT;
		return 0;
	}
	return m2_send_ident(c);
}

/* ---- session: client -------------------------------------------------------- */

static void m2_ready(struct msgr2_conn *c, bool reconnect)
{
	c->state = M2_S_READY;
	c->reconnect = reconnect;
	c->retries = 0;
	m2_event(c, MSGR2_EV_READY, reconnect);
}

/* A new session on the peer: our message seqs start at 1 again. */
static void m2_sess_fresh(struct msgr2_conn *c)
{
	struct msgr2_session *s = c->s;

	m2_sess_requeue(s);
	s->in_seq = 0;
	s->acked_seq = 0;
	s->wire_seq = 0;
	s->connect_seq = 0;
	c->in_seq_told = 0;
	m2_sess_renumber(s, 1);
}

static int m2_send_client_ident(struct msgr2_conn *c)
{
	struct msgr2_session *s = c->s;
	struct m2_enc e;
	u32 cap;
	u8 *p;

	m2_sess_fresh(c);
	if (!s->client_cookie)
		s->client_cookie = m2_cookie();
	p = m2_ctrl_begin(c, &cap);
	if (!p)
		return m2_fail(c, MSGR2_R_OVERSIZE);
	m2_enc_init(&e, p, cap);
	m2_enc_addrvec(&e, &c->my_addrs);
	m2_enc_addr(&e, &c->cfg.target);
	m2_enc_le64(&e, c->global_id);
	m2_enc_le64(&e, s->global_seq);
	m2_enc_le64(&e, c->cfg.features_supported);
	m2_enc_le64(&e, c->cfg.features_required);
	m2_enc_le64(&e, s->lossy ? MSGR2_CONNECT_LOSSY : 0);
	m2_enc_le64(&e, s->client_cookie);
	if (e.err)
		return m2_fail(c, MSGR2_R_OVERSIZE);
	c->state = M2_S_IDENT;
	return m2_ctrl_end(c, MSGR2_TAG_CLIENT_IDENT, e.off);
}

static int m2_send_reconnect(struct msgr2_conn *c)
{
	struct msgr2_session *s = c->s;
	struct m2_enc e;
	u32 cap;
	u8 *p = m2_ctrl_begin(c, &cap);

	if (!p)
		return m2_fail(c, MSGR2_R_OVERSIZE);
	m2_enc_init(&e, p, cap);
	m2_enc_addrvec(&e, &c->my_addrs);
	m2_enc_le64(&e, s->client_cookie);
	m2_enc_le64(&e, s->server_cookie);
	m2_enc_le64(&e, s->global_seq);
	m2_enc_le64(&e, s->connect_seq);
	m2_enc_le64(&e, s->in_seq);
	if (e.err)
		return m2_fail(c, MSGR2_R_OVERSIZE);
	c->state = M2_S_RECONNECT;
	c->in_seq_told = s->in_seq;
	return m2_ctrl_end(c, MSGR2_TAG_SESSION_RECONNECT, e.off);
}

static int m2_send_ident(struct msgr2_conn *c)
{
	struct msgr2_session *s = c->s;

	if (!s->server_cookie)
		return m2_send_client_ident(c);
	s->connect_seq++;
	return m2_send_reconnect(c);
}

static int m2_on_server_ident(struct msgr2_conn *c, struct m2_dec *d)
{
	struct msgr2_session *s = c->s;
	struct msgr2_addrvec v;
	u64 gid, gseq, sup, req, flags, cookie;
	bool found;

	if (m2_dec_addrvec(d, &v, &c->cfg.target, &found))
		return m2_fail(c, MSGR2_R_MALFORMED);
	gid = m2_dec_le64(d);
	gseq = m2_dec_le64(d);
	sup = m2_dec_le64(d);
	req = m2_dec_le64(d);
	flags = m2_dec_le64(d);
	cookie = m2_dec_le64(d);
	if (d->err)
		return m2_fail(c, MSGR2_R_MALFORMED);
	if (!found)
		return m2_fail(c, MSGR2_R_PEER);
	if ((c->cfg.features_required & ~sup) ||
	    (req & ~c->cfg.features_supported))
		return m2_fail(c, MSGR2_R_MISSING_FEATURES);
	s->peer_type = c->peer_type;
	s->peer_gid = (s64)gid;
	s->peer_addrs = v;
	s->peer_global_seq = gseq;
	s->features = sup & c->cfg.features_supported;
	s->lossy = flags & MSGR2_CONNECT_LOSSY;
	s->server_cookie = s->lossy ? 0 : cookie;
	s->established = true;
	m2_ready(c, false);
	return 0;
}

static int m2_on_session_reset(struct msgr2_conn *c, struct m2_dec *d)
{
	struct msgr2_session *s = c->s;
	bool full = m2_dec_u8(d);

	if (d->err)
		return m2_fail(c, MSGR2_R_MALFORMED);
	if (++c->retries > M2_MAX_RETRIES)
		return m2_fail(c, MSGR2_R_PEER);
	if (full) {
		m2_sess_drop_all(s, c, -ECONNRESET);
		m2_sess_reset(s);
	} else {
		s->server_cookie = 0;
		s->connect_seq = 0;
		s->in_seq = 0;
	}
	m2_event(c, MSGR2_EV_SESSION_RESET, full);
	if (m2_failed(c))
		return c->err;
	return m2_send_client_ident(c);
}

static int m2_on_session_retry(struct msgr2_conn *c, struct m2_dec *d,
			       bool global)
{
	struct msgr2_session *s = c->s;
	u64 v = m2_dec_le64(d);
	u64 gs;

	if (d->err)
		return m2_fail(c, MSGR2_R_MALFORMED);
	if (++c->retries > M2_MAX_RETRIES)
		return m2_fail(c, MSGR2_R_PEER);
	if (global) {
		gs = c->cfg.ops->next_global_seq ?
		     c->cfg.ops->next_global_seq(c->cfg.priv, v) : v + 1;
		s->global_seq = gs > v ? gs : v + 1;
	} else {
		s->connect_seq = v + 1;
	}
	return m2_send_reconnect(c);
}

static int m2_on_reconnect_ok(struct msgr2_conn *c, struct m2_dec *d)
{
	u64 msg_seq = m2_dec_le64(d);

	if (d->err)
		return m2_fail(c, MSGR2_R_MALFORMED);
	m2_sess_drop_acked(c->s, c, msg_seq);
	m2_ready(c, true);
	return 0;
}

/* ---- session: server -------------------------------------------------------- */

static int m2_send_u64(struct msgr2_conn *c, u8 tag, u64 v)
{
	u8 b[8];

	msgr2_put_le64(b, v);
	return m2_ctrl_send(c, tag, b, sizeof(b));
}

/*
 * End connection @o and take it off its session without touching the
 * session's messages beyond a lossless requeue (a takeover by a new
 * connection of the same session).
 */
static void m2_detach(struct msgr2_conn *o)
{
	struct msgr2_session *s = o->s;

	m2_rx_abort_msg(o, -ECONNRESET);
	m2_fail(o, MSGR2_R_LOCAL);
	m2_tx_abort_msg(o);
	if (s) {
		if (!s->lossy)
			m2_sess_requeue(s);
		if (s->conn == o)
			s->conn = NULL;
	}
	o->s = NULL;
}

static void m2_use_session(struct msgr2_conn *c, struct msgr2_session *s)
{
	if (s == c->s)
		return;
	if (s->conn && s->conn != c)
		m2_detach(s->conn);
	if (c->s->conn == c)
		c->s->conn = NULL;
	c->s = s;
	s->conn = c;
}

static int m2_send_server_ident(struct msgr2_conn *c)
{
	struct msgr2_session *s = c->s;
	struct m2_enc e;
	u32 cap;
	u8 *p = m2_ctrl_begin(c, &cap);

	if (!p)
		return m2_fail(c, MSGR2_R_OVERSIZE);
	m2_enc_init(&e, p, cap);
	m2_enc_addrvec(&e, &c->cfg.my_addrs);
	m2_enc_le64(&e, (u64)c->cfg.my_gid);
	m2_enc_le64(&e, c->cfg.global_seq);
	m2_enc_le64(&e, c->cfg.features_supported);
	/* what the server checks the client for (see m2_on_client_ident()) */
	m2_enc_le64(&e, c->cfg.features_required | MSGR2_FEATURE_MSG_ADDR2);
	m2_enc_le64(&e, s->lossy ? MSGR2_CONNECT_LOSSY : 0);
	m2_enc_le64(&e, s->server_cookie);
	if (e.err)
		return m2_fail(c, MSGR2_R_OVERSIZE);
	return m2_ctrl_end(c, MSGR2_TAG_SERVER_IDENT, e.off);
}

static bool m2_is_my_addr(const struct msgr2_conn *c,
			  const struct msgr2_addr *a)
{
	u32 i;

	if (!c->cfg.my_addrs.n)
		return true;
	for (i = 0; i < c->cfg.my_addrs.n && i < MSGR2_MAX_ADDRS; i++)
		if (msgr2_addr_equal(&c->cfg.my_addrs.a[i], a))
			return true;
	return false;
}

static int m2_on_client_ident(struct msgr2_conn *c, struct m2_dec *d)
{
	struct msgr2_session *s;
	struct msgr2_addrvec v;
	struct msgr2_addr target;
	u64 gid, gseq, sup, missing, cookie;
	int ret;

	if (m2_dec_addrvec(d, &v, NULL, NULL) || m2_dec_addr(d, &target))
		return m2_fail(c, MSGR2_R_MALFORMED);
	gid = m2_dec_le64(d);
	gseq = m2_dec_le64(d);
	sup = m2_dec_le64(d);
	m2_dec_le64(d);			/* client's required features */
	m2_dec_le64(d);			/* flags: our policy decides */
	cookie = m2_dec_le64(d);
	if (d->err)
		return m2_fail(c, MSGR2_R_MALFORMED);
	if (!v.n || m2_addr_is_blank(&v.a[0]) || !m2_is_my_addr(c, &target))
		return m2_fail(c, MSGR2_R_PEER);
	missing = (c->cfg.features_required | MSGR2_FEATURE_MSG_ADDR2) & ~sup;
	if (missing)	/* the client may retry on this connection */
		return m2_send_u64(c, MSGR2_TAG_IDENT_MISSING_FEATURES,
				   missing);
	s = c->cfg.ops->attach ?
	    c->cfg.ops->attach(c->cfg.priv, c, &v, cookie, 0, false) : NULL;
	m2_use_session(c, s ? s : c->s);
	s = c->s;
	m2_sess_fresh(c);
	s->peer_type = c->peer_type;
	/* what authentication settled, not what CLIENT_IDENT claims */
	s->peer_gid = (s64)(c->global_id ? c->global_id : gid);
	s->peer_addrs = v;
	s->peer_global_seq = gseq;
	s->features = sup & c->cfg.features_supported;
	s->client_cookie = cookie;
	s->server_cookie = s->lossy ? 0 : m2_cookie();
	s->established = true;
	ret = m2_send_server_ident(c);
	if (ret)
		return ret;
	m2_ready(c, false);
	return 0;
}

static int m2_on_session_reconnect(struct msgr2_conn *c, struct m2_dec *d)
{
	struct msgr2_session *s = NULL;
	struct msgr2_addrvec v;
	u64 ccookie, scookie, gseq, cseq, msg_seq;
	u8 full;

	if (m2_dec_addrvec(d, &v, NULL, NULL))
		return m2_fail(c, MSGR2_R_MALFORMED);
	ccookie = m2_dec_le64(d);
	scookie = m2_dec_le64(d);
	gseq = m2_dec_le64(d);
	cseq = m2_dec_le64(d);
	msg_seq = m2_dec_le64(d);
	if (d->err)
		return m2_fail(c, MSGR2_R_MALFORMED);
	if (++c->retries > M2_MAX_RETRIES)
		return m2_fail(c, MSGR2_R_PEER);
	if (c->cfg.ops->attach)
		s = c->cfg.ops->attach(c->cfg.priv, c, &v, ccookie, scookie,
				       true);
	/* msgr2.md 5.6, in order */
	if (!s || s->client_cookie != ccookie || !s->server_cookie ||
	    s->server_cookie != scookie) {
		full = !s || s->client_cookie != ccookie;
		return m2_ctrl_send(c, MSGR2_TAG_SESSION_RESET, &full, 1);
	}
	if (s->peer_global_seq > gseq)
		return m2_send_u64(c, MSGR2_TAG_SESSION_RETRY_GLOBAL,
				   s->peer_global_seq);
	if (s->connect_seq > cseq)
		return m2_send_u64(c, MSGR2_TAG_SESSION_RETRY, s->connect_seq);
	/*
	 * Step 7, equal connect_seq: WAIT is for a connect race, where both
	 * ends dial each other for one session and the side with the lower
	 * address wins.  A session this engine serves is server-policy: it
	 * never dials its peer, so there is no race and, as in Ceph for a
	 * server-policy connection, the new connection wins.
	 */
	m2_use_session(c, s);
	s->connect_seq = cseq;
	s->peer_global_seq = gseq;
	s->peer_addrs = v;
	m2_sess_drop_acked(s, c, msg_seq);
	c->in_seq_told = s->in_seq;
	if (m2_send_u64(c, MSGR2_TAG_SESSION_RECONNECT_OK, s->in_seq))
		return c->err;
	m2_ready(c, true);
	return 0;
}

/* ---- READY ------------------------------------------------------------------ */

static int m2_on_keepalive(struct msgr2_conn *c, struct m2_dec *d, bool ack)
{
	const u8 *t = m2_dec_bytes(d, M2_KEEPALIVE_LEN);

	if (!t)
		return m2_fail(c, MSGR2_R_MALFORMED);
	if (!ack) {
		memcpy(c->ka_ack_stamp, t, M2_KEEPALIVE_LEN);
		c->ka_ack_pending = true;
		return 0;
	}
	m2_event(c, MSGR2_EV_KEEPALIVE_ACK,
		 msgr2_get_le32(t) * 1000000000ULL + msgr2_get_le32(t + 4));
	return m2_failed(c) ? c->err : 0;
}

int m2_on_msg_done(struct msgr2_conn *c, bool aborted)
{
	struct msgr2_session *s = c->s;
	struct msgr2_rx_msg *m = &c->rx_msg;
	u64 seq = m->hdr.seq;
	int status = 0;

	/*
	 * A seq past in_seq + 1 is taken, as Ceph's own messenger takes it
	 * ("missed message?  skipped"): the Linux client revokes messages
	 * it has given a seq (ceph_msg_revoke()), with an ABORTED frame while
	 * it writes one, and without a trace once one was written and not
	 * yet acknowledged: after a fault it resends the others with their
	 * own seqs, and the revoked one's is never seen.
	 */
	if (aborted) {
		status = -ECANCELED;		/* dropped, seq not recorded */
	} else if (seq <= s->in_seq) {
		status = -EALREADY;		/* duplicate after a resend */
	} else {
		m2_sess_ack(s, c, m->hdr.ack_seq);
		/*
		 * a tx_done() callback that failed the connection: the
		 * message is dropped unrecorded (a lossless peer resends it),
		 * and the failure has handed it back already
		 * (m2_rx_abort_msg()): rx_msg() once per message
		 */
		if (m2_failed(c)) {
			if (!c->rx_msg_live)
				return c->err;
			status = c->err;
		} else {
			s->in_seq = seq;
		}
	}
	c->rx_msg_live = false;
	c->cfg.ops->rx_msg(c->cfg.priv, m, status);
	return m2_failed(c) ? c->err : 0;
}

int m2_on_ctrl(struct msgr2_conn *c, u8 tag, const u8 *p, u32 len)
{
	struct m2_dec d;

	m2_dec_init(&d, p, len);
	switch (tag) {
	case MSGR2_TAG_HELLO:
		return m2_on_hello(c, &d);
	case MSGR2_TAG_AUTH_REQUEST:
		return m2_on_auth_request(c, &d);
	case MSGR2_TAG_AUTH_BAD_METHOD:
		return m2_on_auth_bad_method(c, &d);
	case MSGR2_TAG_AUTH_REPLY_MORE:
		return m2_on_auth_reply_more(c, &d);
	case MSGR2_TAG_AUTH_REQUEST_MORE:
		return m2_on_auth_request_more(c, &d);
	case MSGR2_TAG_AUTH_DONE:
		return m2_on_auth_done(c, &d);
	case MSGR2_TAG_AUTH_SIGNATURE:
		return m2_on_auth_signature(c, &d);
	case MSGR2_TAG_CLIENT_IDENT:
		return m2_on_client_ident(c, &d);
	case MSGR2_TAG_SERVER_IDENT:
		return m2_on_server_ident(c, &d);
	case MSGR2_TAG_IDENT_MISSING_FEATURES:
		return m2_fail(c, MSGR2_R_MISSING_FEATURES);
	case MSGR2_TAG_SESSION_RECONNECT:
		return m2_on_session_reconnect(c, &d);
	case MSGR2_TAG_SESSION_RESET:
		return m2_on_session_reset(c, &d);
	case MSGR2_TAG_SESSION_RETRY:
		return m2_on_session_retry(c, &d, false);
	case MSGR2_TAG_SESSION_RETRY_GLOBAL:
		return m2_on_session_retry(c, &d, true);
	case MSGR2_TAG_SESSION_RECONNECT_OK:
		return m2_on_reconnect_ok(c, &d);
	case MSGR2_TAG_WAIT:
		return m2_fail(c, MSGR2_R_WAIT);
	case MSGR2_TAG_KEEPALIVE2:
		return m2_on_keepalive(c, &d, false);
	case MSGR2_TAG_KEEPALIVE2_ACK:
		return m2_on_keepalive(c, &d, true);
	case MSGR2_TAG_ACK: {
		u64 seq = m2_dec_le64(&d);

		if (d.err)
			return m2_fail(c, MSGR2_R_MALFORMED);
		m2_sess_ack(c->s, c, seq);
		return 0;
	}
	default:
		return m2_fail(c, MSGR2_R_UNKNOWN_TAG);
	}
}

/* ---- public API ------------------------------------------------------------- */

size_t msgr2_conn_size(void)
{
	return sizeof(struct msgr2_conn);
}

static int m2_check_config(const struct msgr2_config *cfg)
{
	const struct msgr2_ops *ops = cfg->ops;

	if (!ops || !ops->rx_alloc || !ops->rx_msg || !ops->tx_done)
		return -EINVAL;
	if (cfg->role != MSGR2_CLIENT && cfg->role != MSGR2_SERVER)
		return -EINVAL;
	if (cfg->max_ctrl_len > MSGR2_CTRL_MAX ||
	    cfg->n_modes > MSGR2_MAX_MODES || cfg->n_auth > MSGR2_MAX_AUTH ||
	    cfg->my_addrs.n > MSGR2_MAX_ADDRS)
		return -EINVAL;
	if (cfg->tx_scratch_len && !cfg->tx_scratch && !ops->tx_scratch)
		return -EINVAL;
	return 0;
}

int msgr2_conn_init(struct msgr2_conn *c, const struct msgr2_config *cfg,
		    struct msgr2_session *s)
{
	static const u32 seg_max[MSGR2_NSEG] = {
		M2_DEF_FRONT_MAX, M2_DEF_MIDDLE_MAX, M2_DEF_DATA_MAX
	};
	u32 i;
	int ret;

	if (!c || !cfg || !s)
		return -EINVAL;
	ret = m2_check_config(cfg);
	if (ret)
		return ret;
	if (s->conn)
		return -EBUSY;
	memset(c, 0, sizeof(*c));
	c->rx_rec = msgr2_zalloc(2 * MSGR2_PREAUTH_MAX);
	if (!c->rx_rec)
		return -ENOMEM;
	c->tx_rec = c->rx_rec + MSGR2_PREAUTH_MAX;
	c->cfg = *cfg;
	if (!c->cfg.max_ctrl_len)
		c->cfg.max_ctrl_len = MSGR2_CTRL_MAX;
	for (i = 0; i < MSGR2_NSEG; i++)
		if (!c->cfg.max_seg_len[i])
			c->cfg.max_seg_len[i] = seg_max[i];
	if (!c->cfg.handshake_timeout_ms)
		c->cfg.handshake_timeout_ms = M2_DEF_HS_TIMEOUT_MS;
	if (!c->cfg.n_modes) {
		c->cfg.n_modes = 1;
		c->cfg.modes[0] = MSGR2_MODE_CRC;
	}
	c->s = s;
	s->conn = c;
	if (cfg->role == MSGR2_CLIENT)
		s->global_seq = cfg->global_seq;
	c->my_addrs = cfg->my_addrs;
	c->state = M2_S_BANNER;
	c->recording = true;
	c->in_seq_told = s->in_seq;
	m2_rx_start(c);
	ret = m2_banner_queue(c);
	if (ret)
		msgr2_conn_release(c);
	return ret;
}

void msgr2_conn_release(struct msgr2_conn *c)
{
	struct msgr2_session *s = c->s;
	u32 i;

	if (c->state == M2_S_RELEASED)
		return;
	m2_rx_abort_msg(c, -ECONNRESET);
	m2_fail(c, MSGR2_R_LOCAL);
	m2_tx_abort_msg(c);
	if (s && s->conn == c) {
		if (s->lossy)
			m2_sess_drop_all(s, c, -ECONNRESET);
		else
			m2_sess_requeue(s);
		s->conn = NULL;
	}
	if (c->cfg.role == MSGR2_CLIENT)
		for (i = 0; i < c->cfg.n_auth; i++)
			if (c->cfg.auth[i] && c->cfg.auth[i]->reset)
				c->cfg.auth[i]->reset(c->cfg.auth_priv[i]);
	m2_crypto_free(c);
	msgr2_wipe(&c->ares, sizeof(c->ares));
	msgr2_wipe(c->sig_expect, sizeof(c->sig_expect));
	m2_rec_free(c);
	msgr2_wipe(c->rx_buf, sizeof(c->rx_buf));
	c->state = M2_S_RELEASED;
}

int msgr2_keepalive(struct msgr2_conn *c, u64 stamp_ns)
{
	if (m2_failed(c))
		return c->err;
	if (c->state != M2_S_READY)
		return -ENOTCONN;
	msgr2_put_le32(c->ka_stamp, (u32)(stamp_ns / 1000000000ULL));
	msgr2_put_le32(c->ka_stamp + 4, (u32)(stamp_ns % 1000000000ULL));
	c->ka_pending = true;
	return 0;
}

int msgr2_tick(struct msgr2_conn *c, u64 now_ms)
{
	if (m2_failed(c))
		return c->err;
	if (!c->tick_started) {
		c->tick_started = true;
		c->tick_t0 = now_ms;
		c->ka_last = now_ms;
	}
	if (c->state != M2_S_READY) {
		if (now_ms - c->tick_t0 >= c->cfg.handshake_timeout_ms)
			return m2_fail(c, MSGR2_R_TIMEOUT);
		return 0;
	}
	if (c->cfg.keepalive_ms && now_ms - c->ka_last >= c->cfg.keepalive_ms) {
		c->ka_last = now_ms;
		/* Ceph stamps a KEEPALIVE2 with the wall clock */
		return msgr2_keepalive(c, msgr2_wall_ns());
	}
	return 0;
}

void msgr2_conn_fail(struct msgr2_conn *c, enum msgr2_reason r)
{
	m2_fail(c, r);
}

bool msgr2_conn_ready(const struct msgr2_conn *c)
{
	return c->state == M2_S_READY;
}

u32 msgr2_conn_mode(const struct msgr2_conn *c)
{
	return c->mode;
}

enum msgr2_reason msgr2_conn_reason(const struct msgr2_conn *c)
{
	return c->reason;
}

struct msgr2_session *msgr2_conn_session(const struct msgr2_conn *c)
{
	return c->s;
}

const struct msgr2_addr *msgr2_conn_peer_view(const struct msgr2_conn *c)
{
	return &c->peer_view;
}
