// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr msgr2 engine - frames on the wire (msgr2.1 only).
 *
 * TX: control frames are assembled in the connection's arena, a byte FIFO
 * that is only appended to and is reset once drained, so the iovecs handed
 * out by msgr2_tx_iov() stay valid until msgr2_tx_done().  A message is
 * described by up to M2_TX_PIECES iovecs: engine scratch for the preamble,
 * header and epilogue, the caller's buffers for the payload (crc mode) or
 * the caller's tx scratch for the sealed tail (secure mode).  Frames are
 * built in wire order, so GCM nonces are used in wire order.
 *
 * RX: the receiver is a list of pieces (pointer, length) that the caller
 * fills through msgr2_rx_want()/msgr2_rx_done(); when the last piece of a
 * step is complete the step is processed.  Every length is validated from
 * the preamble before a piece is set up, so nothing is ever read or
 * written outside the engine's buffers or the ones ops->rx_alloc() gave.
 */
#include "msgr2_int.h"

static const u8 m2_zero[16];
static const u8 m2_secure_epilogue[M2_EPI_SECURE_LEN] = { M2_LATE_COMPLETE };

/* ---- failure -------------------------------------------------------------- */

int m2_errno(enum msgr2_reason r)
{
	switch (r) {
	case MSGR2_R_PREAMBLE_CRC:
	case MSGR2_R_SEGMENT_CRC:
	case MSGR2_R_GCM_TAG:
		return -EBADMSG;
	case MSGR2_R_OVERSIZE:
		return -EMSGSIZE;
	case MSGR2_R_SIGNATURE:
	case MSGR2_R_AUTH:
		return -EACCES;
	case MSGR2_R_MISSING_FEATURES:
		return -EOPNOTSUPP;
	case MSGR2_R_SEQ:
		return -EILSEQ;
	case MSGR2_R_WAIT:
		return -EAGAIN;
	case MSGR2_R_TIMEOUT:
		return -ETIMEDOUT;
	case MSGR2_R_EOF:
		return -ECONNRESET;
	case MSGR2_R_LOCAL:
		return -ECONNABORTED;
	case MSGR2_R_NOMEM:
		return -ENOMEM;
	case MSGR2_R_NONCE:
		return -EOVERFLOW;
	case MSGR2_R_BUSY:
		return -ENOBUFS;
	default:
		return -EPROTO;
	}
}

bool m2_failed(const struct msgr2_conn *c)
{
	return c->state == M2_S_FAILED || c->state == M2_S_RELEASED;
}

/* End the connection with @r; returns the errno every later call returns. */
int m2_fail(struct msgr2_conn *c, enum msgr2_reason r)
{
	if (m2_failed(c))
		return c->err;
	if (r == MSGR2_R_NONE)
		r = MSGR2_R_LOCAL;
	c->state = M2_S_FAILED;
	c->reason = r;
	c->err = m2_errno(r);
	c->rx_state = M2_RX_STOP;
	m2_rx_abort_msg(c, c->err);
	return c->err;
}

/* Append to the pre-auth transcript of one direction. */
int m2_record(struct msgr2_conn *c, bool tx, const void *p, size_t n)
{
	u32 *len = tx ? &c->tx_rec_len : &c->rx_rec_len;
	u8 *rec = tx ? c->tx_rec : c->rx_rec;

	if (!c->recording || !n)
		return 0;
	if (n > MSGR2_PREAUTH_MAX - *len)
		return m2_fail(c, MSGR2_R_OVERSIZE);
	memcpy(rec + *len, p, n);
	*len += n;
	return 0;
}

/* ---- secure mode ---------------------------------------------------------- */

/* rev1 nonce: le32 fixed + le64 counter, advanced after every operation */
static void m2_nonce_next(u8 *nonce)
{
	msgr2_put_le64(nonce + 4, msgr2_get_le64(nonce + 4) + 1);
}

static int m2_seal(struct msgr2_conn *c, const struct msgr2_iov *src, int n,
		   u8 *dst, u8 *tag)
{
	int ret;

	if (!c->tx_nonce_left)
		return m2_fail(c, MSGR2_R_NONCE);
	ret = msgr2_gcm_seal(c->gcm_tx, c->tx_nonce, src, n, dst, tag);
	if (ret)
		return m2_fail(c, MSGR2_R_NOMEM);
	c->tx_nonce_left--;
	m2_nonce_next(c->tx_nonce);
	return 0;
}

static int m2_open(struct msgr2_conn *c, const struct msgr2_iov *buf, int n,
		   const u8 *tag)
{
	int ret;

	if (!c->rx_nonce_left)
		return m2_fail(c, MSGR2_R_NONCE);
	ret = msgr2_gcm_open(c->gcm_rx, c->rx_nonce, buf, n, tag);
	if (ret)
		return m2_fail(c, ret == -EBADMSG ? MSGR2_R_GCM_TAG :
				  MSGR2_R_NOMEM);
	c->rx_nonce_left--;
	m2_nonce_next(c->rx_nonce);
	return 0;
}

/*
 * Switch both directions to secure mode.  @secret is the connection
 * secret: key[16] || nonce A[12] || nonce B[12]; the client sends with B
 * and receives with A, the server the other way round (msgr2.md 8).
 */
int m2_set_secure(struct msgr2_conn *c, const u8 *secret, u32 len)
{
	const u8 *a = secret + M2_GCM_KEY_LEN;
	const u8 *b = a + M2_GCM_NONCE_LEN;
	bool client = c->cfg.role == MSGR2_CLIENT;
	int ret;

	if (len < M2_SECRET_MIN)
		return -EINVAL;
	ret = msgr2_gcm_alloc(&c->gcm_tx, secret);
	if (ret)
		goto err;
	ret = msgr2_gcm_alloc(&c->gcm_rx, secret);
	if (ret)
		goto err_free_tx;
	memcpy(c->tx_nonce, client ? b : a, M2_GCM_NONCE_LEN);
	memcpy(c->rx_nonce, client ? a : b, M2_GCM_NONCE_LEN);
	/* refuse to reuse a nonce: stop before the counter wraps */
	c->tx_nonce_left = ~0ULL;
	c->rx_nonce_left = ~0ULL;
	c->secure = true;
	return 0;

err_free_tx:
	msgr2_gcm_free(c->gcm_tx);
	c->gcm_tx = NULL;
err:
	return ret;
}

void m2_crypto_free(struct msgr2_conn *c)
{
	msgr2_gcm_free(c->gcm_tx);
	msgr2_gcm_free(c->gcm_rx);
	c->gcm_tx = NULL;
	c->gcm_rx = NULL;
	msgr2_wipe(c->tx_nonce, sizeof(c->tx_nonce));
	msgr2_wipe(c->rx_nonce, sizeof(c->rx_nonce));
}

/* ---- TX: banner and control frames --------------------------------------- */

static u32 m2_arena_free(const struct msgr2_conn *c)
{
	return M2_TX_ARENA - c->a_tail;
}

static void m2_arena_compact(struct msgr2_conn *c)
{
	if (c->a_head == c->a_tail) {
		c->a_head = 0;
		c->a_tail = 0;
	}
}

int m2_banner_queue(struct msgr2_conn *c)
{
	u8 *p = c->arena + c->a_tail;

	memcpy(p, M2_BANNER_MAGIC, M2_BANNER_MAGIC_LEN);
	msgr2_put_le16(p + 8, M2_BANNER_PAYLOAD_LEN);
	msgr2_put_le64(p + 10, MSGR2_BANNER_FEAT_REV1);	/* supported */
	msgr2_put_le64(p + 18, MSGR2_BANNER_FEAT_REV1);	/* required */
	c->a_tail += M2_BANNER_LEN;
	return m2_record(c, true, p, M2_BANNER_LEN);
}

static void m2_preamble(u8 *p, u8 tag, u32 nsegs, const u32 *len,
			const u16 *align)
{
	u32 i;

	memset(p, 0, M2_PREAMBLE_LEN);
	p[0] = tag;
	p[1] = nsegs;
	for (i = 0; i < nsegs; i++) {
		msgr2_put_le32(p + 2 + 6 * i, len[i]);
		msgr2_put_le16(p + 6 + 6 * i, align[i]);
	}
	msgr2_put_le32(p + M2_PREAMBLE_CRC_OFF,
		       msgr2_crc32c(0, p, M2_PREAMBLE_CRC_OFF));
}

/*
 * Start a control frame: returns where its payload goes and (in @cap) how
 * many bytes fit, or NULL when the arena has no room for a frame.
 */
u8 *m2_ctrl_begin(struct msgr2_conn *c, u32 *cap)
{
	u32 room = m2_arena_free(c);

	*cap = 0;
	if (m2_failed(c) || room < M2_FRAME_MAX - MSGR2_CTRL_MAX)
		return NULL;
	*cap = min_t(u32, room - (M2_FRAME_MAX - MSGR2_CTRL_MAX),
		     MSGR2_CTRL_MAX);
	return c->arena + c->a_tail + M2_PREAMBLE_LEN;
}

/* Finish the control frame whose @len payload bytes m2_ctrl_begin() took. */
int m2_ctrl_end(struct msgr2_conn *c, u8 tag, u32 len)
{
	static const u16 align = M2_ALIGN_DEFAULT;
	u8 *f = c->arena + c->a_tail;
	u8 *pl = f + M2_PREAMBLE_LEN;
	struct msgr2_iov iov;
	u32 wire, padded;
	int ret;

	if (m2_failed(c))
		return c->err;
	m2_preamble(f, tag, 1, &len, &align);
	if (!c->secure) {
		wire = M2_PREAMBLE_LEN;
		if (len) {
			msgr2_put_le32(pl + len, msgr2_crc32c(~0U, pl, len));
			wire += len + M2_CRC_LEN;
		}
		c->a_tail += wire;
		return m2_record(c, true, f, wire);
	}

	/* secure: preamble + 48 inline bytes, then the rest of seg0 padded */
	padded = m2_pad16(len);
	if (padded > M2_INLINE_LEN) {
		memmove(pl + M2_INLINE_LEN + M2_GCM_TAG_LEN, pl + M2_INLINE_LEN,
			len - M2_INLINE_LEN);
		memset(pl + M2_GCM_TAG_LEN + len, 0, padded - len);
	} else {
		memset(pl + len, 0, M2_INLINE_LEN - len);
	}
	iov.base = f;
	iov.len = M2_PREAMBLE_LEN + M2_INLINE_LEN;
	ret = m2_seal(c, &iov, 1, f, f + iov.len);
	if (ret)
		return ret;
	wire = M2_SECURE_HEAD_LEN;
	if (padded > M2_INLINE_LEN) {
		iov.base = f + wire;
		iov.len = padded - M2_INLINE_LEN;
		ret = m2_seal(c, &iov, 1, f + wire, f + wire + iov.len);
		if (ret)
			return ret;
		wire += iov.len + M2_GCM_TAG_LEN;
	}
	c->a_tail += wire;
	return m2_record(c, true, f, wire);
}

int m2_ctrl_send(struct msgr2_conn *c, u8 tag, const void *p, u32 len)
{
	u32 cap;
	u8 *pl = m2_ctrl_begin(c, &cap);

	if (!pl || len > cap)
		return m2_fail(c, MSGR2_R_OVERSIZE);
	if (len)
		memcpy(pl, p, len);
	return m2_ctrl_end(c, tag, len);
}

/* ---- TX: messages ---------------------------------------------------------- */

/*
 * Segment count (last non-empty + 1, header included) and the size of the
 * secure-mode tail (padded segments + epilogue, tag excluded).
 */
int m2_msg_tail_len(const struct msgr2_msg *m, u32 *nsegs, size_t *tail)
{
	size_t t = 0;
	u32 i, n = 1;

	for (i = 0; i < MSGR2_NSEG; i++) {
		if (m->seg[i].len > 0xffffffffUL - 15)
			return -EMSGSIZE;
		if (m->seg[i].len)
			n = i + 2;
		t += m2_pad16((u32)m->seg[i].len);
	}
	*nsegs = n;
	*tail = n > 1 ? t + M2_EPI_SECURE_LEN : 0;
	return 0;
}

static int m2_tx_build_msg(struct msgr2_conn *c, struct msgr2_msg *m,
			   u32 nsegs, size_t tail)
{
	u32 len[M2_MAX_SEGS] = { M2_HDR2_LEN };
	u16 align[M2_MAX_SEGS] = { M2_ALIGN_DEFAULT, M2_ALIGN_DEFAULT,
				   M2_ALIGN_DEFAULT, M2_ALIGN_DATA };
	struct msgr2_iov src[2 * MSGR2_NSEG + 1];
	u8 *h = c->tx_head, *buf;
	u32 i, pad;
	int k = 0, n = 0, ret;

	/* ours from here: a failure below gives it back (m2_tx_abort_msg()) */
	c->tx_msg = m;
	for (i = 1; i < nsegs; i++)
		len[i] = (u32)m->seg[i - 1].len;
	m2_preamble(h, MSGR2_TAG_MESSAGE, nsegs, len, align);
	m2_hdr2_encode(h + M2_PREAMBLE_LEN, &m->hdr);

	if (!c->secure) {
		msgr2_put_le32(h + M2_PREAMBLE_LEN + M2_HDR2_LEN,
			       msgr2_crc32c(~0U, h + M2_PREAMBLE_LEN,
					    M2_HDR2_LEN));
		c->tx_v[k].base = h;
		c->tx_v[k++].len = M2_PREAMBLE_LEN + M2_HDR2_LEN + M2_CRC_LEN;
		if (nsegs > 1) {
			memset(c->tx_epi, 0, sizeof(c->tx_epi));
			c->tx_epi[0] = M2_LATE_COMPLETE;
			for (i = 1; i < nsegs; i++) {
				const struct msgr2_iov *s = &m->seg[i - 1];

				msgr2_put_le32(c->tx_epi + 1 + 4 * (i - 1),
					       msgr2_crc32c(~0U, s->base,
							    s->len));
				if (s->len)
					c->tx_v[k++] = *s;
			}
			c->tx_v[k].base = c->tx_epi;
			c->tx_v[k++].len = M2_EPI_CRC_LEN;
		}
		goto out;
	}

	memset(h + M2_PREAMBLE_LEN + M2_HDR2_LEN, 0,
	       M2_INLINE_LEN - M2_HDR2_LEN);
	src[0].base = h;
	src[0].len = M2_PREAMBLE_LEN + M2_INLINE_LEN;
	ret = m2_seal(c, src, 1, h, h + src[0].len);
	if (ret)
		return ret;
	c->tx_v[k].base = h;
	c->tx_v[k++].len = M2_SECURE_HEAD_LEN;
	if (nsegs > 1) {
		for (i = 1; i < nsegs; i++) {
			const struct msgr2_iov *s = &m->seg[i - 1];

			src[n++] = *s;
			pad = m2_pad16((u32)s->len) - (u32)s->len;
			if (pad) {
				src[n].base = (void *)m2_zero;
				src[n++].len = pad;
			}
		}
		src[n].base = (void *)m2_secure_epilogue;
		src[n++].len = M2_EPI_SECURE_LEN;
		buf = c->cfg.tx_scratch;
		if (c->cfg.ops->tx_scratch)
			buf = c->cfg.ops->tx_scratch(c->cfg.priv,
						     tail + M2_GCM_TAG_LEN);
		if (!buf)
			return m2_fail(c, MSGR2_R_NOMEM);
		ret = m2_seal(c, src, n, buf, buf + tail);
		if (ret)
			return ret;
		c->tx_v[k].base = buf;
		c->tx_v[k++].len = tail + M2_GCM_TAG_LEN;
	}
out:
	c->tx_vn = k;
	c->tx_vi = 0;
	c->tx_voff = 0;
	return 0;
}

/* Whether @m's segments are within @c's limits (cfg.max_seg_len). */
bool m2_msg_fits(const struct msgr2_conn *c, const struct msgr2_msg *m)
{
	u32 i;

	for (i = 0; i < MSGR2_NSEG; i++)
		if (m->seg[i].len > c->cfg.max_seg_len[i])
			return false;
	return true;
}

/* Take the next message of the session's out-queue onto the wire. */
static int m2_tx_start_msg(struct msgr2_conn *c)
{
	struct msgr2_session *s = c->s;
	struct msgr2_msg *m;
	size_t tail;
	u32 nsegs;

	while ((m = s->out_head)) {
		/*
		 * msgr2_send() checks the segment limits only with a
		 * connection: a message queued without one is checked here,
		 * else a lossless session would resend it forever into the
		 * peer's OVERSIZE.
		 */
		/* as msgr2_send(): only a tail (nsegs > 1) needs scratch */
		if (!m2_msg_tail_len(m, &nsegs, &tail) && m2_msg_fits(c, m) &&
		    (!c->secure || nsegs <= 1 ||
		     tail + M2_GCM_TAG_LEN <= c->cfg.tx_scratch_len))
			break;
		/* cannot be framed here: give it back, keep seqs dense */
		m = m2_sess_next(s);
		m2_sess_renumber(s, m->hdr.seq);
		/*
		 * The ones after it took new seqs, which no wire has carried
		 * yet: an ack of them before they are written is cut
		 * (m2_sess_ack()).
		 */
		s->wire_seq = min_t(u64, s->wire_seq, m->hdr.seq - 1);
		c->cfg.ops->tx_done(c->cfg.priv, m, -EMSGSIZE);
		/* the callback may fail the connection: then nothing more */
		if (m2_failed(c))
			return c->err;
	}
	if (!m)
		return 0;
	m = m2_sess_next(s);
	if (m->hdr.seq > s->wire_seq)
		s->wire_seq = m->hdr.seq;
	m->hdr.ack_seq = s->in_seq;
	c->in_seq_told = s->in_seq;
	if (!s->lossy)
		m2_sess_sent(s, m);
	return m2_tx_build_msg(c, m, nsegs, tail);
}

static int m2_tx_msg_done(struct msgr2_conn *c)
{
	struct msgr2_msg *m = c->tx_msg;

	c->tx_msg = NULL;
	c->tx_vn = 0;
	c->tx_vi = 0;
	c->tx_voff = 0;
	if (!m)
		return 0;
	/* lossy: nobody acks, a message is done once it is on the wire */
	if (c->s->lossy)
		c->cfg.ops->tx_done(c->cfg.priv, m, 0);
	/* lossless: acknowledged while it was being written, done now */
	else if (m->hdr.seq <= c->s->acked_seq)
		m2_sess_ack(c->s, c, c->s->acked_seq);
	return m2_failed(c) ? c->err : 0;
}

/* Give an unfinished outgoing message back (connection teardown). */
void m2_tx_abort_msg(struct msgr2_conn *c)
{
	struct msgr2_msg *m = c->tx_msg;

	c->tx_msg = NULL;
	c->tx_vn = 0;
	c->tx_vi = 0;
	c->tx_voff = 0;
	if (!m || !c->s)
		return;
	if (c->s->lossy)
		c->cfg.ops->tx_done(c->cfg.priv, m, -ECONNRESET);
	/*
	 * Lossless: it stays on the sent queue and is resent, unless the
	 * peer acknowledged it while it was being written (m2_sess_ack()
	 * kept it for m2_tx_msg_done()): then it is done, not to be failed
	 * by a reset or sent again under a new seq.
	 */
	else if (m->hdr.seq <= c->s->acked_seq)
		m2_sess_ack(c->s, c, c->s->acked_seq);
}

static int m2_tx_ctrl8(struct msgr2_conn *c, u8 tag, const u8 *p)
{
	return m2_ctrl_send(c, tag, p, 8);
}

/* READY: build pending control frames and the next message, in order. */
static int m2_tx_fill(struct msgr2_conn *c)
{
	struct msgr2_session *s = c->s;
	u8 b[8];
	int ret;

	if (c->state != M2_S_READY || c->tx_vn)
		return 0;
	/*
	 * Up to three small frames follow, each wanting the room
	 * m2_ctrl_begin() asks for an 8-byte payload (more than the frame
	 * takes); without it keep them pending, never fail for it.
	 */
	if (m2_arena_free(c) < 3 * (M2_FRAME_MAX - MSGR2_CTRL_MAX + 8))
		return 0;
	if (c->ka_ack_pending) {
		c->ka_ack_pending = false;
		ret = m2_tx_ctrl8(c, MSGR2_TAG_KEEPALIVE2_ACK, c->ka_ack_stamp);
		if (ret)
			return ret;
	}
	if (c->ka_pending) {
		c->ka_pending = false;
		ret = m2_tx_ctrl8(c, MSGR2_TAG_KEEPALIVE2, c->ka_stamp);
		if (ret)
			return ret;
	}
	if (s->out_head)
		return m2_tx_start_msg(c);
	/* lossless: acknowledge what we got when there is nothing to send */
	if (!s->lossy && s->in_seq > c->in_seq_told) {
		c->in_seq_told = s->in_seq;
		msgr2_put_le64(b, s->in_seq);
		return m2_tx_ctrl8(c, MSGR2_TAG_ACK, b);
	}
	return 0;
}

int msgr2_tx_iov(struct msgr2_conn *c, struct msgr2_iov *iov, int max)
{
	int i, n = 0, ret;
	size_t off;

	if (m2_failed(c))
		return c->err;
	if (max <= 0)
		return -EINVAL;
	ret = m2_tx_fill(c);
	if (ret)
		return ret;
	if (m2_failed(c))	/* by a callback of the fill */
		return c->err;
	if (c->a_head < c->a_tail) {
		iov[n].base = c->arena + c->a_head;
		iov[n++].len = c->a_tail - c->a_head;
	}
	for (i = c->tx_vi; i < c->tx_vn && n < max; i++) {
		off = i == c->tx_vi ? c->tx_voff : 0;
		iov[n].base = (u8 *)c->tx_v[i].base + off;
		iov[n++].len = c->tx_v[i].len - off;
	}
	return n;
}

bool msgr2_tx_more(const struct msgr2_conn *c, int n)
{
	const struct msgr2_session *s = c->s;
	int have = (c->a_head < c->a_tail) + (int)(c->tx_vn - c->tx_vi);

	if (m2_failed(c))
		return false;
	if (n < have)
		return true;	/* pieces that did not fit in the caller's max */
	if (c->state != M2_S_READY)
		return false;
	return s->out_head || c->ka_pending || c->ka_ack_pending ||
	       (!s->lossy && s->in_seq > c->in_seq_told);
}

int msgr2_tx_done(struct msgr2_conn *c, size_t n)
{
	struct msgr2_iov *v;
	size_t k;

	if (m2_failed(c))
		return c->err;
	while (n) {
		if (c->a_head < c->a_tail) {
			k = min_t(size_t, n, c->a_tail - c->a_head);
			c->a_head += k;
			c->tx_total += k;
			n -= k;
			m2_arena_compact(c);
			continue;
		}
		if (c->tx_vi >= c->tx_vn)
			return -EINVAL;		/* more than was offered */
		v = &c->tx_v[c->tx_vi];
		k = min_t(size_t, n, v->len - c->tx_voff);
		c->tx_voff += k;
		c->tx_total += k;
		n -= k;
		if (c->tx_voff == v->len) {
			c->tx_vi++;
			c->tx_voff = 0;
		}
		if (c->tx_vi == c->tx_vn) {
			if (c->tx_msg)
				c->tx_msg->tx_end = c->tx_total;
			/* its tx_done() may have failed the connection */
			if (m2_tx_msg_done(c))
				return c->err;
		}
	}
	return 0;
}

/* ---- RX ------------------------------------------------------------------- */

static void m2_rx_set(struct msgr2_conn *c, enum m2_rx_state st, void *p,
		      size_t len)
{
	c->rx_state = st;
	c->rx_v[0].base = p;
	c->rx_v[0].len = len;
	c->rx_vn = 1;
	c->rx_vi = 0;
	c->rx_voff = 0;
}

void m2_rx_start(struct msgr2_conn *c)
{
	m2_rx_set(c, M2_RX_BANNER, c->rx_head, M2_BANNER_PREFIX_LEN);
}

static void m2_rx_next_frame(struct msgr2_conn *c)
{
	if (m2_failed(c))
		return;
	m2_rx_set(c, M2_RX_PREAMBLE, c->rx_head,
		  c->secure ? M2_SECURE_HEAD_LEN : M2_PREAMBLE_LEN);
}

void m2_rx_abort_msg(struct msgr2_conn *c, int status)
{
	if (!c->rx_msg_live)
		return;
	c->rx_msg_live = false;
	c->cfg.ops->rx_msg(c->cfg.priv, &c->rx_msg, status);
}

static int m2_rx_dispatch(struct msgr2_conn *c, const u8 *p, u32 len)
{
	int ret = m2_on_ctrl(c, c->rx_tag, p, len);

	if (ret)
		return ret;
	m2_rx_next_frame(c);
	return 0;
}

static int m2_rx_msg_finish(struct msgr2_conn *c, bool aborted)
{
	int ret = m2_on_msg_done(c, aborted);

	if (ret)
		return ret;
	m2_rx_next_frame(c);
	return 0;
}

/* ops->rx_alloc(): 1 when the payload can be received, 0 paused, -errno */
static int m2_rx_try_alloc(struct msgr2_conn *c)
{
	struct msgr2_rx_msg *m = &c->rx_msg;
	u32 i, pad;
	int k = 0, ret;

	ret = c->cfg.ops->rx_alloc(c->cfg.priv, m);
	if (ret == -EAGAIN)
		return 0;
	if (ret)
		return m2_fail(c, MSGR2_R_BUSY);
	c->rx_msg_live = true;
	/* a callback that failed the connection: given back at release */
	if (m2_failed(c))
		return c->err;
	for (i = 0; i < MSGR2_NSEG; i++)
		if (m->len[i] && !m->buf[i])
			return m2_fail(c, MSGR2_R_BUSY);
	if (c->rx_nsegs == 1) {
		ret = m2_rx_msg_finish(c, false);
		return ret ? ret : 1;
	}
	memset(c->rx_v_seg, 0, sizeof(c->rx_v_seg));
	for (i = 1; i < c->rx_nsegs; i++) {
		c->rx_seg_crc[i - 1] = ~0U;
		if (m->len[i - 1]) {
			c->rx_v_seg[k] = i;
			c->rx_v[k].base = m->buf[i - 1];
			c->rx_v[k++].len = m->len[i - 1];
		}
		pad = m2_pad16(m->len[i - 1]) - m->len[i - 1];
		if (c->secure && pad) {
			c->rx_v[k].base = c->rx_pad + 16 * (i - 1);
			c->rx_v[k++].len = pad;
		}
	}
	c->rx_v[k].base = c->rx_tail;
	c->rx_v[k++].len = c->secure ? M2_EPI_SECURE_LEN + M2_GCM_TAG_LEN :
				       M2_EPI_CRC_LEN;
	c->rx_state = M2_RX_MSG_TAIL;
	c->rx_vn = k;
	c->rx_vi = 0;
	c->rx_voff = 0;
	return 1;
}

static int m2_rx_msg_begin(struct msgr2_conn *c, const u8 *hdr)
{
	struct msgr2_rx_msg *m = &c->rx_msg;
	u32 i;
	int ret;

	memset(m, 0, sizeof(*m));
	m2_hdr2_decode(hdr, &m->hdr);
	for (i = 0; i < MSGR2_NSEG; i++)
		m->len[i] = c->rx_len[i + 1];
	/*
	 * The header is verified (its own crc, or the authenticated inline
	 * block): take its ack now, before the payload needs room.  A
	 * receiver whose room is held by its own sends waiting for that ack
	 * (a lossless reply sent from the request's buffer) would otherwise
	 * wait for an ack queued behind the very message it cannot place.
	 */
	m2_sess_ack(c->s, c, m->hdr.ack_seq);
	/* its tx_done() callback may have failed the connection */
	if (m2_failed(c))
		return c->err;
	c->rx_state = M2_RX_MSG_ALLOC;
	ret = m2_rx_try_alloc(c);
	return ret < 0 ? ret : 0;
}

static int m2_rx_banner(struct msgr2_conn *c)
{
	u32 len;

	if (memcmp(c->rx_head, M2_BANNER_MAGIC, M2_BANNER_MAGIC_LEN))
		return m2_fail(c, MSGR2_R_BANNER);
	len = msgr2_get_le16(c->rx_head + M2_BANNER_MAGIC_LEN);
	if (len < M2_BANNER_PAYLOAD_LEN || len > M2_BANNER_PAYLOAD_MAX)
		return m2_fail(c, MSGR2_R_BANNER);
	m2_rx_set(c, M2_RX_BANNER_PAYLOAD, c->rx_buf, len);
	return 0;
}

static int m2_rx_preamble(struct msgr2_conn *c)
{
	const u32 *max = c->cfg.max_seg_len;
	u8 *p = c->rx_head;
	struct msgr2_iov iov;
	u32 i, len0, inl;
	int ret;

	if (c->secure) {
		iov.base = p;
		iov.len = M2_PREAMBLE_LEN + M2_INLINE_LEN;
		ret = m2_open(c, &iov, 1, p + iov.len);
		if (ret)
			return ret;
	}
	if (msgr2_crc32c(0, p, M2_PREAMBLE_CRC_OFF) !=
	    msgr2_get_le32(p + M2_PREAMBLE_CRC_OFF))
		return m2_fail(c, MSGR2_R_PREAMBLE_CRC);
	c->rx_tag = p[0];
	c->rx_nsegs = p[1];
	if (c->rx_nsegs < 1 || c->rx_nsegs > M2_MAX_SEGS || p[26] || p[27])
		return m2_fail(c, MSGR2_R_MALFORMED);
	for (i = 0; i < M2_MAX_SEGS; i++) {
		c->rx_len[i] = msgr2_get_le32(p + 2 + 6 * i);
		if (i >= c->rx_nsegs && c->rx_len[i])
			return m2_fail(c, MSGR2_R_MALFORMED);
	}
	if (c->rx_nsegs > 1 && !c->rx_len[c->rx_nsegs - 1])
		return m2_fail(c, MSGR2_R_MALFORMED);
	if (c->rx_tag < MSGR2_TAG_HELLO || c->rx_tag > MSGR2_TAG_ACK)
		return m2_fail(c, MSGR2_R_UNKNOWN_TAG);
	if (!m2_tag_ok(c, c->rx_tag))
		return m2_fail(c, MSGR2_R_ORDER);
	len0 = c->rx_len[0];

	if (c->rx_tag == MSGR2_TAG_MESSAGE) {
		if (len0 != M2_HDR2_LEN)
			return m2_fail(c, MSGR2_R_MALFORMED);
		for (i = 1; i < M2_MAX_SEGS; i++)
			if (c->rx_len[i] > max[i - 1])
				return m2_fail(c, MSGR2_R_OVERSIZE);
		if (c->secure)
			return m2_rx_msg_begin(c, p + M2_PREAMBLE_LEN);
		m2_rx_set(c, M2_RX_MSG_HDR, c->rx_buf,
			  M2_HDR2_LEN + M2_CRC_LEN);
		return 0;
	}

	if (c->rx_nsegs != 1)
		return m2_fail(c, MSGR2_R_MALFORMED);
	if (len0 > c->cfg.max_ctrl_len)
		return m2_fail(c, MSGR2_R_OVERSIZE);
	if (!c->secure) {
		if (!len0)
			return m2_rx_dispatch(c, c->rx_buf, 0);
		m2_rx_set(c, M2_RX_CTRL, c->rx_buf, len0 + M2_CRC_LEN);
		return 0;
	}
	inl = min_t(u32, len0, M2_INLINE_LEN);
	memcpy(c->rx_buf, p + M2_PREAMBLE_LEN, inl);
	if (m2_pad16(len0) <= M2_INLINE_LEN)
		return m2_rx_dispatch(c, c->rx_buf, len0);
	m2_rx_set(c, M2_RX_CTRL, c->rx_buf + M2_INLINE_LEN,
		  m2_pad16(len0) - M2_INLINE_LEN + M2_GCM_TAG_LEN);
	return 0;
}

static int m2_rx_ctrl(struct msgr2_conn *c)
{
	u32 len0 = c->rx_len[0];
	struct msgr2_iov iov;
	int ret;

	if (c->secure) {
		iov.base = c->rx_buf + M2_INLINE_LEN;
		iov.len = m2_pad16(len0) - M2_INLINE_LEN;
		ret = m2_open(c, &iov, 1, (u8 *)iov.base + iov.len);
		if (ret)
			return ret;
	} else if (msgr2_crc32c(~0U, c->rx_buf, len0) !=
		   msgr2_get_le32(c->rx_buf + len0)) {
		return m2_fail(c, MSGR2_R_SEGMENT_CRC);
	}
	return m2_rx_dispatch(c, c->rx_buf, len0);
}

static int m2_rx_msg_tail(struct msgr2_conn *c)
{
	struct msgr2_iov iov[M2_RX_PIECES];
	u8 late = c->rx_tail[0];
	u32 i, crc;
	int ret;

	if (c->secure) {
		memcpy(iov, c->rx_v, c->rx_vn * sizeof(iov[0]));
		iov[c->rx_vn - 1].len = M2_EPI_SECURE_LEN;
		ret = m2_open(c, iov, c->rx_vn,
			      c->rx_tail + M2_EPI_SECURE_LEN);
		if (ret)
			return ret;
		late = c->rx_tail[0];
	}
	if ((late & M2_LATE_MASK) == M2_LATE_ABORTED)
		return m2_rx_msg_finish(c, true);
	if ((late & M2_LATE_MASK) != M2_LATE_COMPLETE)
		return m2_fail(c, MSGR2_R_LATE_STATUS);
	if (!c->secure) {
		/* computed in msgr2_rx_done(), piece by piece */
		for (i = 1; i < c->rx_nsegs; i++) {
			crc = c->rx_seg_crc[i - 1];
			if (crc != msgr2_get_le32(c->rx_tail + 1 + 4 * (i - 1)))
				return m2_fail(c, MSGR2_R_SEGMENT_CRC);
		}
	}
	return m2_rx_msg_finish(c, false);
}

static int m2_rx_step(struct msgr2_conn *c)
{
	switch (c->rx_state) {
	case M2_RX_BANNER:
		return m2_rx_banner(c);
	case M2_RX_BANNER_PAYLOAD: {
		int ret = m2_on_banner(c, c->rx_buf, (u32)c->rx_v[0].len);

		if (ret)
			return ret;
		m2_rx_next_frame(c);
		return 0;
	}
	case M2_RX_PREAMBLE:
		return m2_rx_preamble(c);
	case M2_RX_CTRL:
		return m2_rx_ctrl(c);
	case M2_RX_MSG_HDR:
		if (msgr2_crc32c(~0U, c->rx_buf, M2_HDR2_LEN) !=
		    msgr2_get_le32(c->rx_buf + M2_HDR2_LEN))
			return m2_fail(c, MSGR2_R_SEGMENT_CRC);
		return m2_rx_msg_begin(c, c->rx_buf);
	case M2_RX_MSG_TAIL:
		return m2_rx_msg_tail(c);
	default:
		return -EINVAL;
	}
}

ssize_t msgr2_rx_want(struct msgr2_conn *c, void **buf)
{
	struct msgr2_iov *v;
	int ret;

	*buf = NULL;
	if (m2_failed(c))
		return c->err;
	if (c->rx_state == M2_RX_MSG_ALLOC) {
		ret = m2_rx_try_alloc(c);
		if (ret <= 0)
			return ret;
		if (m2_failed(c))
			return c->err;
	}
	/* the next step may answer: wait until the TX arena has room */
	if (c->state != M2_S_READY &&
	    c->a_tail > M2_TX_ARENA - M2_TX_RESERVE)
		return 0;
	if (c->rx_vi >= c->rx_vn)
		return 0;
	v = &c->rx_v[c->rx_vi];
	*buf = (u8 *)v->base + c->rx_voff;
	return v->len - c->rx_voff;
}

int msgr2_rx_done(struct msgr2_conn *c, size_t n)
{
	struct msgr2_iov *v;
	int ret;
	u8 seg;

	if (m2_failed(c))
		return c->err;
	if (!n)
		return 0;
	if (c->rx_state == M2_RX_MSG_ALLOC || c->rx_vi >= c->rx_vn)
		return -EINVAL;
	v = &c->rx_v[c->rx_vi];
	if (n > v->len - c->rx_voff)
		return -EINVAL;
	ret = m2_record(c, false, (u8 *)v->base + c->rx_voff, n);
	if (ret)
		return ret;
	/* crc mode: a payload segment's crc over the bytes just received,
	 * while they are in the cache, not in a pass of its own at the end
	 */
	seg = c->rx_state == M2_RX_MSG_TAIL && !c->secure ?
	      c->rx_v_seg[c->rx_vi] : 0;
	if (seg)
		c->rx_seg_crc[seg - 1] =
			msgr2_crc32c(c->rx_seg_crc[seg - 1],
				     (u8 *)v->base + c->rx_voff, n);
	c->rx_voff += n;
	if (c->rx_voff < v->len)
		return 0;
	c->rx_vi++;
	c->rx_voff = 0;
	if (c->rx_vi < c->rx_vn)
		return 0;
	return m2_rx_step(c);
}

int msgr2_rx_feed(struct msgr2_conn *c, const void *data, size_t len,
		  size_t *used)
{
	const u8 *p = data;
	size_t off = 0, k;
	ssize_t n;
	void *buf;
	int ret = 0;

	while (off < len) {
		n = msgr2_rx_want(c, &buf);
		if (n <= 0) {
			ret = (int)n;
			break;
		}
		k = min_t(size_t, (size_t)n, len - off);
		memcpy(buf, p + off, k);
		off += k;
		ret = msgr2_rx_done(c, k);
		if (ret)
			break;
	}
	if (used)
		*used = off;
	return ret;
}

int msgr2_rx_eof(struct msgr2_conn *c)
{
	return m2_fail(c, MSGR2_R_EOF);
}
