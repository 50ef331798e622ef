// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the secure-mode receive path after decryption.  An
 * engine client and server reach READY in secure mode (lib_pipe's test
 * auth, which hands both a known connection secret); then the fuzz input
 * is a sequence of plaintext frames that one side sends.  Each is framed
 * and sealed with the sender's own TX GCM state and nonce, so the
 * receiver's GCM check passes and its parsing of the decrypted preamble,
 * inline block, segments, padding and epilogue runs.
 *
 * Input: byte 0 bit 0: 0 the client sends to the server, 1 the reverse.
 * Then records, until the input ends:
 *   op byte
 *     bits 0-1  kind:
 *               0 control frame by the sender's engine (m2_ctrl_send):
 *                 u8 tag, le16 len (<= 8192), payload
 *               1 MESSAGE by the sender's engine (msgr2_send): le16 type,
 *                 3 x le16 front/middle/data length, payload bytes
 *               2 raw frame built here: u8 tag, u8 nsegs, 4 x le32
 *                 segment length, u8 late status, 48 inline bytes, then
 *                 the bytes after the inline block (padded segments,
 *                 epilogue after the late status byte)
 *               3 raw frame with lengths near the limits: u8 tag,
 *                 u8 nsegs, 4 x u8 index into fs_lens[], u8 late status;
 *                 zero contents
 *     bits 2-3  delivery piece size: all, 1, 7, 61 bytes
 *     bit 4     flip one ciphertext byte of the frame: le16 offset (mod
 *               the frame length) follows the op byte
 *     bit 5     raw MESSAGE: write the receiver's next seq into the header
 *     bit 6     u8 n follows (after the flip offset): the receiver's next
 *               n & 7 rx_alloc() calls refuse (-EAGAIN, pool full); the
 *               harness retries through msgr2_rx_want() and feeds on
 *     bit 7     raw frame: corrupt its preamble crc32c before sealing
 * Missing payload bytes are zero.  A raw frame longer than FS_RAW_MAX
 * bytes is sent truncated and ends the input.
 * Seeds: corpus/fuzz_secure/ (mkcorpus.sh).
 *
 * Asserts beyond the sanitizers: the receiver is READY or failed with a
 * valid reason; a flipped byte in the sealed head of a frame the engine
 * built fails it with MSGR2_R_GCM_TAG, and anywhere in such a frame fails
 * it once the frame was taken whole; rx_alloc() is never asked for more
 * than the configured segment limit; an engine-built MESSAGE taken whole
 * reaches rx_msg() once (in order when accepted), refused allocations or
 * not; a raw frame with a bad preamble crc, its head taken whole at a frame
 * boundary and not flipped, fails the receiver with MSGR2_R_PREAMBLE_CRC.
 */
#include <stdint.h>
#include <stdlib.h>

#include "msgr2.h"
#include "msgr2_int.h"
#include "lib_pipe.h"

#define FS_SEG_MAX	PIPE_HEAP_SEG_MAX
#define FS_SCRATCH	(256 << 10)
#define FS_RAW_MAX	(256 << 10)	/* body bytes built for a raw frame */
#define FS_EAGAIN_MAX	7		/* refused rx_alloc()s per record */

struct fs_side {
	struct msgr2_conn *c;
	struct msgr2_session s;
	struct msgr2_config cfg;
	struct tauth auth;
	void *scratch;
	int n_rx;			/* messages delivered (status 0) */
	int n_cb;			/* rx_msg() calls, any status */
	int rx_eagain;			/* next rx_alloc()s to refuse */
	int n_eagain;			/* rx_alloc()s refused */
};

static const size_t fs_pieces[4] = { 0, 1, 7, 61 };
static const u32 fs_lens[16] = {
	0, 1, 15, 16, M2_HDR2_LEN, 47, 48, 49, 64, MSGR2_CTRL_MAX - 1,
	MSGR2_CTRL_MAX, MSGR2_CTRL_MAX + 1, FS_SEG_MAX - 1, FS_SEG_MAX,
	FS_SEG_MAX + 1, 0xffffffff
};

static struct fs_side fs_cli, fs_srv;

/* the wire: bytes the sender produced, not yet given to the receiver */
static u8 *fs_wire;
static size_t fs_wire_len, fs_wire_cap;

static struct msgr2_session *fs_attach(void *priv, struct msgr2_conn *c,
				       const struct msgr2_addrvec *addrs,
				       u64 client_cookie, u64 server_cookie,
				       bool reconnect)
{
	return NULL;
}

static int fs_rx_alloc(void *priv, struct msgr2_rx_msg *m)
{
	struct fs_side *x = priv;
	int i;

	for (i = 0; i < MSGR2_NSEG; i++)
		if (m->len[i] > x->cfg.max_seg_len[i])
			abort();
	if (x->rx_eagain > 0) {
		x->rx_eagain--;
		x->n_eagain++;
		return -EAGAIN;
	}
	return pipe_heap_rx_alloc(priv, m);
}

static void fs_rx_msg(void *priv, struct msgr2_rx_msg *m, int status)
{
	struct fs_side *x = priv;

	x->n_cb++;
	if (!status)
		x->n_rx++;
	pipe_heap_rx_msg(priv, m, status);
}

static void fs_tx_done(void *priv, struct msgr2_msg *m, int status)
{
	free(m);
}

static const struct msgr2_ops fs_ops = {
	.rx_alloc = fs_rx_alloc,
	.rx_msg = fs_rx_msg,
	.tx_done = fs_tx_done,
	.event = pipe_ignore_event,
	.attach = fs_attach,
};

static void fs_setup(struct fs_side *x, bool server)
{
	struct msgr2_config *cfg = &x->cfg;

	if (!x->c) {
		x->c = calloc(1, msgr2_conn_size());
		x->scratch = malloc(FS_SCRATCH);
		if (!x->c || !x->scratch)
			abort();
	}
	x->n_rx = 0;
	x->n_cb = 0;
	x->rx_eagain = 0;
	x->n_eagain = 0;
	tauth_init(&x->auth, 7, false);
	msgr2_session_init(&x->s, false);
	pipe_test_cfg(cfg, server, MSGR2_MODE_SECURE, &x->auth, FS_SEG_MAX,
		      x->scratch, FS_SCRATCH, &fs_ops, x);
}

static u8 *fs_wire_grow(size_t n)
{
	size_t cap = fs_wire_cap ? fs_wire_cap : 4096;
	u8 *p;

	while (cap - fs_wire_len < n)
		cap *= 2;
	if (cap != fs_wire_cap) {
		p = realloc(fs_wire, cap);
		if (!p)
			abort();
		fs_wire = p;
		fs_wire_cap = cap;
	}
	p = fs_wire + fs_wire_len;
	fs_wire_len += n;
	return p;
}

/* Append everything the sender has queued to the wire. */
static void fs_drain(struct msgr2_conn *c)
{
	struct msgr2_iov iov[8];
	size_t len;
	int k, i;

	while ((k = msgr2_tx_iov(c, iov, 8)) > 0) {
		for (len = 0, i = 0; i < k; i++) {
			memcpy(fs_wire_grow(iov[i].len), iov[i].base,
			       iov[i].len);
			len += iov[i].len;
		}
		if (msgr2_tx_done(c, len) < 0)
			return;
	}
}

/* Take up to @n input bytes into @dst, zero-filling what is missing. */
static void fs_take(const u8 **d, size_t *len, void *dst, size_t n)
{
	size_t k = min_t(size_t, n, *len);

	memcpy(dst, *d, k);
	memset((u8 *)dst + k, 0, n - k);
	*d += k;
	*len -= k;
}

static u32 fs_le16(const u8 **d, size_t *len)
{
	u8 b[2];

	fs_take(d, len, b, 2);
	return msgr2_get_le16(b);
}

/* Seal @n bytes at @p in place with the sender's TX state; tag after. */
static void fs_seal(struct msgr2_conn *c, u8 *p, size_t n)
{
	struct msgr2_iov iov = { .base = p, .len = n };

	if (msgr2_gcm_seal(c->gcm_tx, c->tx_nonce, &iov, 1, p, p + n))
		abort();
	c->tx_nonce_left--;
	msgr2_put_le64(c->tx_nonce + 4, msgr2_get_le64(c->tx_nonce + 4) + 1);
}

/*
 * A frame built here, sealed as the sender's engine seals its frames.
 * Returns false when it had to be truncated (the stream ends there).
 */
static bool fs_raw(struct fs_side *snd, struct fs_side *rcv, u8 op,
		   bool table, const u8 **d, size_t *len)
{
	u8 tag, nsegs, late, *h, *b;
	u32 seg[M2_MAX_SEGS], i;
	u64 body;

	tag = *len ? (*d)[0] : 0;
	nsegs = *len > 1 ? (*d)[1] : 0;
	*d += min_t(size_t, *len, 2);
	*len -= min_t(size_t, *len, 2);
	for (i = 0; i < M2_MAX_SEGS; i++) {
		u8 b4[4];

		if (table) {
			fs_take(d, len, b4, 1);
			seg[i] = fs_lens[b4[0] & 15];
		} else {
			fs_take(d, len, b4, 4);
			seg[i] = msgr2_get_le32(b4);
		}
	}
	fs_take(d, len, &late, 1);

	h = fs_wire_grow(M2_SECURE_HEAD_LEN);
	memset(h, 0, M2_PREAMBLE_LEN);
	h[0] = tag;
	h[1] = nsegs;
	for (i = 0; i < M2_MAX_SEGS; i++) {
		msgr2_put_le32(h + 2 + 6 * i, seg[i]);
		msgr2_put_le16(h + 6 + 6 * i, i == 3 ? M2_ALIGN_DATA :
			       M2_ALIGN_DEFAULT);
	}
	msgr2_put_le32(h + M2_PREAMBLE_CRC_OFF,
		       msgr2_crc32c(0, h, M2_PREAMBLE_CRC_OFF) ^ (op & 128));
	if (table)
		memset(h + M2_PREAMBLE_LEN, 0, M2_INLINE_LEN);
	else
		fs_take(d, len, h + M2_PREAMBLE_LEN, M2_INLINE_LEN);
	if (tag == MSGR2_TAG_MESSAGE && (op & 32))
		msgr2_put_le64(h + M2_PREAMBLE_LEN, rcv->s.in_seq + 1);
	fs_seal(snd->c, h, M2_PREAMBLE_LEN + M2_INLINE_LEN);

	/* the sealed body the receiver will ask for after the head */
	body = 0;
	if (tag == MSGR2_TAG_MESSAGE && nsegs > 1 && nsegs <= M2_MAX_SEGS) {
		for (i = 1; i < nsegs; i++)
			body += m2_pad16(seg[i]);
		body += M2_EPI_SECURE_LEN;
	} else if (m2_pad16(seg[0]) > M2_INLINE_LEN) {
		body = m2_pad16(seg[0]) - M2_INLINE_LEN;
	}
	if (!body)
		return true;
	if (body > FS_RAW_MAX) {
		b = fs_wire_grow(FS_RAW_MAX);
		fs_take(d, len, b, FS_RAW_MAX);
		return false;
	}
	b = fs_wire_grow(body + M2_GCM_TAG_LEN);
	if (table)
		memset(b, 0, body);
	else
		fs_take(d, len, b, body);
	if (tag == MSGR2_TAG_MESSAGE && nsegs > 1)
		b[body - M2_EPI_SECURE_LEN] = late;
	fs_seal(snd->c, b, body);
	return true;
}

/* A MESSAGE queued on the sender's session; the engine frames it. */
static bool fs_msg(struct fs_side *snd, const u8 **d, size_t *len)
{
	struct msgr2_msg *m;
	u32 l[MSGR2_NSEG], type, i;
	u8 *p;

	type = fs_le16(d, len);
	for (i = 0; i < MSGR2_NSEG; i++)
		l[i] = fs_le16(d, len);
	m = calloc(1, sizeof(*m) + l[0] + l[1] + l[2]);
	if (!m)
		abort();
	m->hdr.type = type;
	m->hdr.priority = 127;
	p = (u8 *)(m + 1);
	for (i = 0; i < MSGR2_NSEG; i++) {
		m->seg[i].base = p;
		m->seg[i].len = l[i];
		fs_take(d, len, p, l[i]);
		p += l[i];
	}
	if (!msgr2_send(&snd->s, m))
		return true;
	free(m);
	return false;
}

/* Give the wire to the receiver in pieces; returns the bytes taken. */
static size_t fs_deliver(struct fs_side *snd, struct fs_side *rcv,
			 size_t piece)
{
	size_t off = 0, k;
	int stalls = 0;
	ssize_t want;
	void *buf;

	for (;;) {
		want = msgr2_rx_want(rcv->c, &buf);
		/* rx_alloc() refused: the pool has room again, retry */
		if (!want && rcv->c->rx_state == M2_RX_MSG_ALLOC &&
		    stalls++ <= FS_EAGAIN_MAX)
			continue;
		if (want <= 0 || off >= fs_wire_len)
			break;
		k = min_t(size_t, (size_t)want, fs_wire_len - off);
		if (piece)
			k = min_t(size_t, k, piece);
		memcpy(buf, fs_wire + off, k);
		off += k;
		if (msgr2_rx_done(rcv->c, k) < 0)
			break;
		/* acks and keepalive acks go back to the sender */
		pipe_move(rcv->c, snd->c, (size_t)-1);
	}
	/* a refused allocation is retried until it is granted */
	if (msgr2_conn_ready(rcv->c) && rcv->c->rx_state == M2_RX_MSG_ALLOC)
		abort();
	memmove(fs_wire, fs_wire + off, fs_wire_len - off);
	fs_wire_len -= off;
	return off;
}

static void fs_check(struct msgr2_conn *c)
{
	enum msgr2_reason r = msgr2_conn_reason(c);

	if (msgr2_conn_ready(c))
		return;
	if (c->state != M2_S_FAILED || r <= MSGR2_R_NONE ||
	    r >= MSGR2_R__MAX || !msgr2_reason_str(r))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fs_side *snd, *rcv;
	size_t start, flen, pos, taken;
	bool flip, engine, aligned, sent, more = true;
	int n_cb;
	u64 in_seq;
	u8 op, tag;
	u32 clen;
	u8 *pl;

	if (size < 1)
		return 0;
	snd = data[0] & 1 ? &fs_srv : &fs_cli;
	rcv = data[0] & 1 ? &fs_cli : &fs_srv;
	data++;
	size--;
	fs_setup(&fs_cli, false);
	fs_setup(&fs_srv, true);
	if (msgr2_conn_init(fs_cli.c, &fs_cli.cfg, &fs_cli.s))
		abort();
	if (msgr2_conn_init(fs_srv.c, &fs_srv.cfg, &fs_srv.s))
		abort();
	pipe_pump(fs_cli.c, fs_srv.c);
	if (!msgr2_conn_ready(fs_cli.c) || !msgr2_conn_ready(fs_srv.c) ||
	    msgr2_conn_mode(fs_cli.c) != MSGR2_MODE_SECURE ||
	    msgr2_conn_mode(fs_srv.c) != MSGR2_MODE_SECURE)
		abort();
	fs_wire_len = 0;

	while (size && more && msgr2_conn_ready(rcv->c) &&
	       msgr2_conn_ready(snd->c)) {
		op = data[0];
		data++;
		size--;
		flip = op & 16;
		pos = flip ? fs_le16(&data, &size) : 0;
		if (op & 64) {
			fs_take(&data, &size, &tag, 1);
			rcv->rx_eagain = tag & FS_EAGAIN_MAX;
		}
		engine = (op & 3) < 2;
		sent = false;
		n_cb = rcv->n_cb;
		in_seq = rcv->s.in_seq;
		aligned = !fs_wire_len && rcv->c->rx_state == M2_RX_PREAMBLE &&
			  !rcv->c->rx_vi && !rcv->c->rx_voff;
		fs_drain(snd->c);
		start = fs_wire_len;
		switch (op & 3) {
		case 0:
			fs_take(&data, &size, &tag, 1);
			clen = min_t(u32, fs_le16(&data, &size),
				     MSGR2_CTRL_MAX);
			pl = malloc(clen + 1);
			if (!pl)
				abort();
			fs_take(&data, &size, pl, clen);
			m2_ctrl_send(snd->c, tag, pl, clen);
			free(pl);
			fs_drain(snd->c);
			break;
		case 1:
			sent = fs_msg(snd, &data, &size);
			fs_drain(snd->c);
			break;
		default:
			more = fs_raw(snd, rcv, op, (op & 3) == 3, &data,
				      &size);
			break;
		}
		flen = fs_wire_len - start;
		if (flip && flen) {
			pos %= flen;
			fs_wire[start + pos] ^= 0x01;
		}
		taken = fs_deliver(snd, rcv, fs_pieces[(op >> 2) & 3]);
		fs_check(rcv->c);
		if (flip && flen && engine) {
			if (pos < M2_SECURE_HEAD_LEN && start + pos < taken &&
			    msgr2_conn_reason(rcv->c) != MSGR2_R_GCM_TAG)
				abort();
			if (taken == start + flen && msgr2_conn_ready(rcv->c))
				abort();
		}
		if (sent && !flip && !fs_wire_len && msgr2_conn_ready(rcv->c) &&
		    (rcv->n_cb != n_cb + 1 ||
		     (rcv->s.in_seq != in_seq && rcv->s.in_seq != in_seq + 1)))
			abort();
		if (!engine && (op & 128) && aligned &&
		    taken >= start + M2_SECURE_HEAD_LEN &&
		    !(flip && flen && pos < M2_SECURE_HEAD_LEN) &&
		    msgr2_conn_reason(rcv->c) != MSGR2_R_PREAMBLE_CRC)
			abort();
	}
	fs_check(rcv->c);

	msgr2_conn_release(fs_cli.c);
	msgr2_conn_release(fs_srv.c);
	msgr2_session_drain(&fs_cli.s, fs_tx_done, NULL, -ECONNRESET);
	msgr2_session_drain(&fs_srv.s, fs_tx_done, NULL, -ECONNRESET);
	return 0;
}
