/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kmsgr msgr2 engine - internal header shared by the engine's files.
 *
 *   wire.c     primitive encoders/decoders on a bounded cursor,
 *              entity_addr_t / entity_addrvec_t, ceph_msg_header2
 *   frame.c    frames on the wire: banner, preamble, segments, epilogue,
 *              crc and secure mode, the TX arena and the RX pieces
 *   conn.c     handshake and READY state machines, the public conn API
 *   session.c  out-queue, sent-queue, seq/ack, resend
 *   auth_none.c AUTH_NONE, both roles
 *   reason.c   msgr2_reason_str()
 *
 * Nothing here is part of the public API (msgr2.h).
 */
#ifndef KMSGR_MSGR2_INT_H
#define KMSGR_MSGR2_INT_H

#include "msgr2.h"

/* ---- wire constants ----------------------------------------------------- */

#define M2_BANNER_MAGIC		"ceph v2\n"
#define M2_BANNER_MAGIC_LEN	8
#define M2_BANNER_PREFIX_LEN	10	/* magic + le16 payload length */
#define M2_BANNER_PAYLOAD_LEN	16	/* le64 supported + le64 required */
#define M2_BANNER_PAYLOAD_MAX	4096	/* longest peer banner payload read */
#define M2_BANNER_LEN		(M2_BANNER_PREFIX_LEN + M2_BANNER_PAYLOAD_LEN)

#define M2_PREAMBLE_LEN		32
#define M2_PREAMBLE_CRC_OFF	28
#define M2_MAX_SEGS		4
#define M2_HDR2_LEN		41	/* ceph_msg_header2, packed */
#define M2_CRC_LEN		4
#define M2_EPI_CRC_LEN		13	/* u8 late_status + 3 x le32 crc */
#define M2_EPI_SECURE_LEN	16	/* u8 late_status + 15 zero bytes */
#define M2_LATE_COMPLETE	0x0e
#define M2_LATE_ABORTED		0x01
#define M2_LATE_MASK		0x0f
#define M2_ALIGN_DEFAULT	8
#define M2_ALIGN_DATA		4096

#define M2_GCM_KEY_LEN		16
#define M2_GCM_NONCE_LEN	12
#define M2_GCM_TAG_LEN		16
#define M2_INLINE_LEN		48
#define M2_SECURE_HEAD_LEN	(M2_PREAMBLE_LEN + M2_INLINE_LEN + M2_GCM_TAG_LEN)
#define M2_SECRET_MIN		(M2_GCM_KEY_LEN + 2 * M2_GCM_NONCE_LEN)

#define M2_SIG_LEN		32
#define M2_KEEPALIVE_LEN	8	/* utime_t */

/* largest control frame on the wire, either mode */
#define M2_FRAME_MAX		(M2_SECURE_HEAD_LEN + MSGR2_CTRL_MAX + \
				 2 * M2_GCM_TAG_LEN)
/* room a single RX step may append to the TX arena */
#define M2_TX_RESERVE		(M2_FRAME_MAX + 1024)
#define M2_TX_ARENA		(2 * M2_TX_RESERVE)
/* RX control buffer: padded segment + tag */
#define M2_RX_BUF		(MSGR2_CTRL_MAX + 2 * M2_GCM_TAG_LEN + 16)

/* defaults for the limits of struct msgr2_config */
#define M2_DEF_FRONT_MAX	(16U << 20)
#define M2_DEF_MIDDLE_MAX	(16U << 20)
#define M2_DEF_DATA_MAX		(64U << 20)
#define M2_DEF_HS_TIMEOUT_MS	10000

#define M2_MAX_VEC		16	/* vector<u32> entries accepted */
#define M2_MAX_ADDRVEC		64	/* addrvec entries accepted */
#define M2_MAX_AUTH_ROUNDS	16	/* AUTH_*_MORE round trips */
#define M2_MAX_RETRIES		16	/* SESSION_RETRY*, BAD_METHOD */

static inline u32 m2_pad16(u32 len)
{
	return (len + 15) & ~15U;
}

/* ---- bounded cursors (wire.c) ------------------------------------------- */

struct m2_enc {
	u8 *p;
	u32 cap;
	u32 off;
	bool err;	/* an encode did not fit: nothing more is written */
};

struct m2_dec {
	const u8 *p;
	u32 len;
	u32 off;
	bool err;	/* a decode ran past the end: every later one yields 0 */
};

static inline void m2_enc_init(struct m2_enc *e, u8 *p, u32 cap)
{
	e->p = p;
	e->cap = cap;
	e->off = 0;
	e->err = false;
}

static inline void m2_dec_init(struct m2_dec *d, const u8 *p, u32 len)
{
	d->p = p;
	d->len = len;
	d->off = 0;
	d->err = false;
}

static inline u32 m2_dec_left(const struct m2_dec *d)
{
	return d->err ? 0 : d->len - d->off;
}

u8 *m2_enc_reserve(struct m2_enc *e, u32 n);
void m2_enc_u8(struct m2_enc *e, u8 v);
void m2_enc_le16(struct m2_enc *e, u16 v);
void m2_enc_le32(struct m2_enc *e, u32 v);
void m2_enc_le64(struct m2_enc *e, u64 v);
void m2_enc_bytes(struct m2_enc *e, const void *src, u32 n);
void m2_enc_addr(struct m2_enc *e, const struct msgr2_addr *a);
void m2_enc_addrvec(struct m2_enc *e, const struct msgr2_addrvec *v);
void m2_enc_u32vec(struct m2_enc *e, const u32 *v, u32 n);

const u8 *m2_dec_bytes(struct m2_dec *d, u32 n);
u8 m2_dec_u8(struct m2_dec *d);
u16 m2_dec_le16(struct m2_dec *d);
u32 m2_dec_le32(struct m2_dec *d);
u64 m2_dec_le64(struct m2_dec *d);
int m2_dec_addr(struct m2_dec *d, struct msgr2_addr *a);
int m2_dec_addrvec(struct m2_dec *d, struct msgr2_addrvec *v,
		   const struct msgr2_addr *find, bool *found);
int m2_dec_u32vec(struct m2_dec *d, u32 *v, u32 max, u32 *n);
/* le32 length + bytes: returns the bytes (or NULL) and their length */
const u8 *m2_dec_blob(struct m2_dec *d, u32 *len);

void m2_hdr2_encode(u8 *p, const struct msgr2_msg_hdr *h);
void m2_hdr2_decode(const u8 *p, struct msgr2_msg_hdr *h);

bool m2_addr_is_blank(const struct msgr2_addr *a);

/* ---- connection --------------------------------------------------------- */

enum m2_state {
	M2_S_BANNER,		/* waiting for the peer's banner */
	M2_S_HELLO,		/* waiting for the peer's HELLO */
	M2_S_AUTH,		/* client: request sent; server: waiting */
	M2_S_AUTH_MORE,		/* server: AUTH_REPLY_MORE sent */
	M2_S_AUTH_SIGN,		/* waiting for the peer's AUTH_SIGNATURE */
	M2_S_IDENT,		/* client: CLIENT_IDENT sent; server: waiting */
	M2_S_RECONNECT,		/* client: SESSION_RECONNECT sent */
	M2_S_READY,
	M2_S_FAILED,
	M2_S_RELEASED,
};

enum m2_rx_state {
	M2_RX_BANNER,		/* 10-byte banner prefix */
	M2_RX_BANNER_PAYLOAD,
	M2_RX_PREAMBLE,		/* 32 bytes (crc) or 96 (secure head) */
	M2_RX_CTRL,		/* rest of a control segment */
	M2_RX_MSG_HDR,		/* crc mode: header2 + crc */
	M2_RX_MSG_ALLOC,	/* waiting for ops->rx_alloc() */
	M2_RX_MSG_TAIL,		/* payload segments, padding, epilogue */
	M2_RX_STOP,		/* failed or released */
};

#define M2_RX_PIECES	8
#define M2_TX_PIECES	6

struct msgr2_conn {
	struct msgr2_config cfg;
	struct msgr2_session *s;
	enum m2_state state;
	enum msgr2_reason reason;
	int err;
	u32 mode;			/* MSGR2_MODE_* once auth is done */
	bool secure;			/* frames are encrypted */

	/* handshake */
	u8 peer_type;
	struct msgr2_addrvec my_addrs;	/* client: with the learned IP */
	struct msgr2_addr peer_view;	/* client: our address per HELLO */
	u32 auth_idx;			/* client: current cfg.auth[] */
	u32 n_sent_modes;
	u32 sent_modes[MSGR2_MAX_MODES];
	bool crc_retry_done;
	u32 auth_rounds;
	u32 retries;
	u64 global_id;
	struct msgr2_auth_result ares;
	u8 sig_expect[M2_SIG_LEN];
	u32 srv_auth_idx;		/* server: method in progress */
	u32 srv_mode;
	bool reconnect;			/* READY reached by a reconnect */

	/* crypto */
	struct msgr2_gcm *gcm_tx;
	struct msgr2_gcm *gcm_rx;
	u8 tx_nonce[M2_GCM_NONCE_LEN];
	u8 rx_nonce[M2_GCM_NONCE_LEN];
	u64 tx_nonce_left;
	u64 rx_nonce_left;

	/* timers */
	bool tick_started;
	u64 tick_t0;
	u64 ka_last;

	/* READY control frames, built lazily in TX order */
	bool ka_pending;
	u8 ka_stamp[M2_KEEPALIVE_LEN];
	bool ka_ack_pending;
	u8 ka_ack_stamp[M2_KEEPALIVE_LEN];
	u64 in_seq_told;		/* in_seq the peer was last told */

	/* TX: arena bytes [a_head, a_tail) go first, then tx_v[] */
	u32 a_head;
	u32 a_tail;
	struct msgr2_msg *tx_msg;	/* message in tx_v[], or NULL */
	u64 tx_total;			/* bytes the transport has taken */
	struct msgr2_iov tx_v[M2_TX_PIECES];
	int tx_vn;
	int tx_vi;
	size_t tx_voff;
	u8 tx_head[M2_SECURE_HEAD_LEN];	/* message preamble+header(+crc) */
	u8 tx_epi[M2_EPI_CRC_LEN];

	/* RX */
	enum m2_rx_state rx_state;
	struct msgr2_iov rx_v[M2_RX_PIECES];
	u8 rx_v_seg[M2_RX_PIECES];	/* MSG_TAIL: 1 + payload segment of the
					 * piece, 0 for pad and epilogue
					 */
	u32 rx_seg_crc[MSGR2_NSEG];	/* crc mode: running crc32c of each
					 * payload segment, as it arrives
					 */
	int rx_vn;
	int rx_vi;
	size_t rx_voff;
	u8 rx_head[M2_SECURE_HEAD_LEN];
	u8 rx_tag;
	u8 rx_nsegs;
	u32 rx_len[M2_MAX_SEGS];
	bool rx_msg_live;		/* rx_alloc() succeeded */
	struct msgr2_rx_msg rx_msg;
	u8 rx_pad[3 * 16];
	u8 rx_tail[M2_EPI_SECURE_LEN + M2_GCM_TAG_LEN];

	/*
	 * pre-auth transcript (msgr2.md 5.3): MSGR2_PREAUTH_MAX bytes per
	 * direction, allocated by msgr2_conn_init(), freed once the
	 * signatures are computed (or at release)
	 */
	bool recording;
	u32 rx_rec_len;
	u32 tx_rec_len;
	u8 *rx_rec;
	u8 *tx_rec;

	u8 rx_buf[M2_RX_BUF];
	u8 arena[M2_TX_ARENA];
};

/* frame.c */
int m2_fail(struct msgr2_conn *c, enum msgr2_reason r);
bool m2_failed(const struct msgr2_conn *c);
int m2_record(struct msgr2_conn *c, bool tx, const void *p, size_t n);
int m2_banner_queue(struct msgr2_conn *c);
u8 *m2_ctrl_begin(struct msgr2_conn *c, u32 *cap);
int m2_ctrl_end(struct msgr2_conn *c, u8 tag, u32 len);
int m2_ctrl_send(struct msgr2_conn *c, u8 tag, const void *p, u32 len);
int m2_set_secure(struct msgr2_conn *c, const u8 *secret, u32 len);
void m2_crypto_free(struct msgr2_conn *c);
void m2_rx_start(struct msgr2_conn *c);
void m2_rx_abort_msg(struct msgr2_conn *c, int status);
void m2_tx_abort_msg(struct msgr2_conn *c);
int m2_msg_tail_len(const struct msgr2_msg *m, u32 *nsegs, size_t *tail);
bool m2_msg_fits(const struct msgr2_conn *c, const struct msgr2_msg *m);
int m2_errno(enum msgr2_reason r);

/* conn.c: called by frame.c */
int m2_on_banner(struct msgr2_conn *c, const u8 *p, u32 len);
bool m2_tag_ok(const struct msgr2_conn *c, u8 tag);
int m2_on_ctrl(struct msgr2_conn *c, u8 tag, const u8 *p, u32 len);
int m2_on_msg_done(struct msgr2_conn *c, bool aborted);

/* session.c */
void m2_sess_requeue(struct msgr2_session *s);
void m2_sess_renumber(struct msgr2_session *s, u64 first);
void m2_sess_ack(struct msgr2_session *s, struct msgr2_conn *c, u64 seq);
void m2_sess_drop_acked(struct msgr2_session *s, struct msgr2_conn *c,
			u64 seq);
struct msgr2_msg *m2_sess_next(struct msgr2_session *s);
void m2_sess_sent(struct msgr2_session *s, struct msgr2_msg *m);
void m2_sess_drop_all(struct msgr2_session *s, struct msgr2_conn *c,
		      int status);
void m2_sess_reset(struct msgr2_session *s);

#endif /* KMSGR_MSGR2_INT_H */
