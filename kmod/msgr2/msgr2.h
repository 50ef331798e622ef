/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kmsgr msgr2 engine - public API.
 *
 * A sans-I/O implementation of the Ceph messenger v2.1 protocol (REVISION_1
 * only), both roles, crc and secure mode.  It consumes received bytes and
 * produces bytes to send; it never touches a socket, never sleeps, takes no
 * locks and has no global state.  The same sources build into kmsgr.ko and
 * into the user-space test programs (see port.h).
 *
 * Objects, all allocated by the caller:
 *
 *   struct msgr2_session  what survives a reconnect: cookies, sequence
 *                         numbers, the out-queue of caller-owned messages.
 *   struct msgr2_conn     one transport connection (banner .. READY); opaque,
 *                         size from msgr2_conn_size().
 *   struct msgr2_msg      one outgoing message; owned by the caller, linked
 *                         into the session until ops->tx_done() gives it back.
 *
 * Driving a connection:
 *
 *   RX  n = msgr2_rx_want(c, &buf): receive up to n bytes into buf, then
 *       msgr2_rx_done(c, got).  Message payload bytes go straight into the
 *       buffers that ops->rx_alloc() supplied (no copy in crc mode; secure
 *       mode decrypts in place).  msgr2_rx_feed() is a copying convenience.
 *   TX  n = msgr2_tx_iov(c, iov, max): send those bytes, then
 *       msgr2_tx_done(c, sent).  Payload iovecs point at the caller's
 *       message buffers (crc mode) or at the caller's tx scratch (secure).
 *   TIME msgr2_tick(c, now_ms): handshake timeout and keepalives.
 *
 * Every function returning int returns 0 (or a count) on success and a
 * negative errno on failure.  Once a connection has failed, every call
 * returns the same error and msgr2_conn_reason() says why.
 *
 * Engine contract details (all refinements of the above):
 *  - msgr2_rx_want() returns 0 ("nothing now") while ops->rx_alloc()
 *    answers -EAGAIN, and during the handshake while the engine's TX
 *    buffer still holds a frame's worth of unsent bytes: the transport
 *    must keep calling msgr2_tx_iov()/msgr2_tx_done().  msgr2_rx_done()
 *    accepts at most the length msgr2_rx_want() returned.
 *  - The iovecs of msgr2_tx_iov() stay valid until msgr2_tx_done(), even
 *    when RX is processed in between.
 *  - Callbacks may call msgr2_send(), msgr2_keepalive() and
 *    msgr2_conn_fail(), never msgr2_conn_release() of the same connection.
 *  - Errno per reason: crc/tag -EBADMSG, OVERSIZE -EMSGSIZE, AUTH and
 *    SIGNATURE -EACCES, MISSING_FEATURES -EOPNOTSUPP, SEQ -EILSEQ, WAIT
 *    -EAGAIN, TIMEOUT -ETIMEDOUT, EOF -ECONNRESET, LOCAL -ECONNABORTED,
 *    NOMEM -ENOMEM, NONCE -EOVERFLOW, BUSY -ENOBUFS, others -EPROTO.
 */
#ifndef KMSGR_MSGR2_H
#define KMSGR_MSGR2_H

#include "port.h"

/* ---- protocol constants --------------------------------------------------- */

#ifndef BIT_ULL
#define BIT_ULL(nr)			(1ULL << (nr))
#endif

#define MSGR2_BANNER_FEAT_REV1		BIT_ULL(0)	/* REVISION_1 */

/* entity types (also bitmask values, e.g. CephX other_keys) */
#define MSGR2_ENTITY_MON		0x01
#define MSGR2_ENTITY_MDS		0x02
#define MSGR2_ENTITY_OSD		0x04
#define MSGR2_ENTITY_CLIENT		0x08
#define MSGR2_ENTITY_MGR		0x10
#define MSGR2_ENTITY_AUTH		0x20

/* entity_addr_t.type */
#define MSGR2_ADDR_NONE			0
#define MSGR2_ADDR_LEGACY		1
#define MSGR2_ADDR_MSGR2		2
#define MSGR2_ADDR_ANY			3

/* auth methods and connection modes */
#define MSGR2_AUTH_NONE			1
#define MSGR2_AUTH_CEPHX		2
#define MSGR2_MODE_CRC			1
#define MSGR2_MODE_SECURE		2

/* CEPH_FEATURE_* words */
#define MSGR2_FEATURE_MSG_ADDR2		BIT_ULL(59)
#define MSGR2_FEATURES_DEFAULT		0x2f018eb87aa4aafeULL	/* kernel set */

/* ceph_msg_header2 flags / SERVER_IDENT flags */
#define MSGR2_CONNECT_LOSSY		1

/* frame tags */
enum msgr2_tag {
	MSGR2_TAG_HELLO = 1,
	MSGR2_TAG_AUTH_REQUEST = 2,
	MSGR2_TAG_AUTH_BAD_METHOD = 3,
	MSGR2_TAG_AUTH_REPLY_MORE = 4,
	MSGR2_TAG_AUTH_REQUEST_MORE = 5,
	MSGR2_TAG_AUTH_DONE = 6,
	MSGR2_TAG_AUTH_SIGNATURE = 7,
	MSGR2_TAG_CLIENT_IDENT = 8,
	MSGR2_TAG_SERVER_IDENT = 9,
	MSGR2_TAG_IDENT_MISSING_FEATURES = 10,
	MSGR2_TAG_SESSION_RECONNECT = 11,
	MSGR2_TAG_SESSION_RESET = 12,
	MSGR2_TAG_SESSION_RETRY = 13,
	MSGR2_TAG_SESSION_RETRY_GLOBAL = 14,
	MSGR2_TAG_SESSION_RECONNECT_OK = 15,
	MSGR2_TAG_WAIT = 16,
	MSGR2_TAG_MESSAGE = 17,
	MSGR2_TAG_KEEPALIVE2 = 18,
	MSGR2_TAG_KEEPALIVE2_ACK = 19,
	MSGR2_TAG_ACK = 20,
};

/* ---- limits ------------------------------------------------------------- */

#define MSGR2_CTRL_MAX		8192	/* largest control segment accepted */
#define MSGR2_PREAUTH_MAX	8192	/* pre-auth bytes recorded per direction */
#define MSGR2_MAX_ADDRS		4	/* addrvec entries kept */
#define MSGR2_MAX_MODES		2
#define MSGR2_MAX_AUTH		2	/* auth methods a client may try */

/* ---- addresses ---------------------------------------------------------- */

/*
 * An entity_addr_t exactly as it travels (ADDR2 form): @sa holds the raw
 * sockaddr bytes (le16 family, be16 port, address, zero padding) and @len
 * is the encoded sockaddr length (16 for IPv4, 28 for IPv6).  Two addresses
 * are equal when type, nonce, len and all 28 bytes of @sa are equal.
 */
struct msgr2_addr {
	u32 type;
	u32 nonce;
	u32 len;
	u8 sa[28];
};

struct msgr2_addrvec {
	u32 n;
	struct msgr2_addr a[MSGR2_MAX_ADDRS];
};

/* @ip in network byte order as 4 bytes, @port in host order */
void msgr2_addr_ipv4(struct msgr2_addr *a, u32 type, u32 nonce,
		     const u8 ip[4], u16 port);
bool msgr2_addr_equal(const struct msgr2_addr *a, const struct msgr2_addr *b);

/* ---- messages ----------------------------------------------------------- */

enum msgr2_seg {
	MSGR2_FRONT,
	MSGR2_MIDDLE,
	MSGR2_DATA,
	MSGR2_NSEG
};

/* ceph_msg_header2, decoded */
struct msgr2_msg_hdr {
	u64 seq;		/* engine: assigned on send */
	u64 tid;
	u16 type;
	u16 priority;
	u16 version;
	u16 compat_version;
	u32 data_pre_padding_len;
	u16 data_off;
	u8 flags;
	u64 ack_seq;		/* engine: filled on send */
};

/* An outgoing message.  Caller-owned until ops->tx_done(). */
struct msgr2_msg {
	struct msgr2_msg *next;		/* engine-private queue link */
	struct msgr2_msg_hdr hdr;
	struct msgr2_iov seg[MSGR2_NSEG];	/* front, middle, data */
	void *priv;			/* caller's */
	/*
	 * Engine: once written on the current connection, the number of
	 * bytes the transport had taken on it up to the message's last
	 * byte; 0 while not (re)written on it.
	 */
	u64 tx_end;
};

/* An inbound message being received. */
struct msgr2_rx_msg {
	struct msgr2_msg_hdr hdr;
	u32 len[MSGR2_NSEG];		/* segment lengths from the preamble */
	void *buf[MSGR2_NSEG];		/* set by ops->rx_alloc() */
	void *priv;			/* caller's, set by ops->rx_alloc() */
};

/* ---- sessions ----------------------------------------------------------- */

/*
 * Session state that survives reconnects.  The caller allocates it and may
 * read it; only the engine writes it.
 */
struct msgr2_session {
	bool lossy;		/* policy: lossy sessions never resend */
	bool established;	/* SERVER_IDENT / RECONNECT_OK seen once */
	u8 peer_type;
	s64 peer_gid;
	struct msgr2_addrvec peer_addrs;
	u64 features;		/* negotiated CEPH_FEATURE_* word */
	u64 client_cookie;
	u64 server_cookie;	/* 0: no session on the server yet */
	u64 global_seq;		/* ours, as last sent */
	u64 peer_global_seq;
	u64 connect_seq;
	u64 out_seq;		/* last seq assigned to an outgoing message */
	u64 in_seq;		/* last seq received and delivered */
	u64 acked_seq;		/* highest of our seqs the peer acknowledged */
	u64 wire_seq;		/* highest of our seqs that went onto a
				 * connection: no peer can have more
				 */
	struct msgr2_msg *out_head, *out_tail;	/* not yet (re)sent */
	struct msgr2_msg *sent_head, *sent_tail; /* sent, waiting for ack */
	struct msgr2_conn *conn;	/* attached connection or NULL */
};

void msgr2_session_init(struct msgr2_session *s, bool lossy);

/*
 * Give every queued and unacknowledged message back through @done with
 * @status and clear the out-queue (session teardown, lossy faults).
 */
void msgr2_session_drain(struct msgr2_session *s,
			 void (*done)(void *priv, struct msgr2_msg *m,
				      int status),
			 void *priv, int status);

/*
 * Queue a message.  Its seq is assigned here; the header's seq/ack_seq are
 * overwritten.  Returns -EMSGSIZE when a segment exceeds the limits or (in
 * secure mode) the caller's tx scratch.
 */
int msgr2_send(struct msgr2_session *s, struct msgr2_msg *m);

/* ---- authentication (pluggable) ----------------------------------------- */

struct msgr2_auth_result {
	u64 global_id;
	u32 session_key_len;		/* 0: no key (AUTH_NONE) */
	u8 session_key[32];
	u32 con_secret_len;		/* >= 40 needed for secure mode */
	u8 con_secret[64];
	u8 entity_type;			/* server: whom it proved to be; 0 */
};

/*
 * One auth method.  The client hooks build the AUTH_REQUEST payload and
 * answer AUTH_REPLY_MORE; the server hook consumes AUTH_REQUEST(_MORE).
 * Each hook returns the number of bytes written to @out, or -errno.
 */
struct msgr2_auth_ops {
	u32 method;			/* MSGR2_AUTH_* */
	/* client role */
	int (*request)(void *priv, u8 *out, u32 cap);
	int (*reply_more)(void *priv, const u8 *in, u32 len, u8 *out, u32 cap);
	int (*done)(void *priv, u64 global_id, u32 con_mode,
		    const u8 *in, u32 len, struct msgr2_auth_result *res);
	/*
	 * server role: consume a request payload.  Return 0 and fill @res when
	 * done (then *@out_len bytes of @out are the AUTH_DONE payload), 1 when
	 * *@out_len bytes of @out go back in AUTH_REPLY_MORE, or -errno
	 * (AUTH_BAD_METHOD).  NULL: method not offered as a server.
	 */
	int (*accept)(void *priv, bool more, u32 con_mode, const u8 *in,
		      u32 len, u8 *out, u32 cap, u32 *out_len,
		      struct msgr2_auth_result *res);
	void (*reset)(void *priv);	/* forget per-connection state */
};

/*
 * AUTH_NONE: @name is the entity id without the type ("admin").  The
 * client sends the mon form (auth mode 10) when @peer_type is 0 or
 * MSGR2_ENTITY_MON, the authorizer form (OSD/MDS/MGR, msgr2.md 7.2)
 * otherwise.  The server accepts both and assigns global ids from
 * @next_global_id (0: start at 4096) to clients that send 0.
 */
struct msgr2_auth_none {
	u8 entity_type;
	char name[64];
	u64 global_id;			/* client: last one, or 0 */
	u64 next_global_id;		/* server: counter for new clients */
	u8 peer_type;			/* client: who we talk to (0 = mon) */
};

extern const struct msgr2_auth_ops msgr2_auth_none_ops;

/* ---- callbacks ---------------------------------------------------------- */

enum msgr2_event {
	MSGR2_EV_READY = 1,		/* READY; arg = 1 when a reconnect */
	MSGR2_EV_SESSION_RESET,		/* peer reset the session: seqs lost;
					 * arg = 1 for a full reset (the
					 * queue was given back, -ECONNRESET)
					 */
	MSGR2_EV_KEEPALIVE_ACK,		/* arg = echoed stamp in ns */
	MSGR2_EV_AUTH_DONE,		/* arg = con_mode */
};

struct msgr2_conn;

struct msgr2_ops {
	/*
	 * Supply m->buf[i] for every non-zero m->len[i] of an inbound message.
	 * Return 0, -EAGAIN to pause reception (msgr2_rx_want() returns 0
	 * until the next call succeeds), or -errno to fail the connection.
	 */
	int (*rx_alloc)(void *priv, struct msgr2_rx_msg *m);
	/*
	 * An inbound message is finished.  status 0: verified, in order, to be
	 * delivered.  status < 0: discarded; the buffers are the caller's
	 * again: -EALREADY duplicate (seq <= in_seq), -ECANCELED aborted
	 * frame (no reason's errno: see m2_errno()), -ECONNRESET connection
	 * released, or the connection's errno when it failed (bad crc or
	 * tag...).  rx_alloc() is called for every MESSAGE frame,
	 * duplicates included.
	 */
	void (*rx_msg)(void *priv, struct msgr2_rx_msg *m, int status);
	/*
	 * An outgoing message is finished: status 0 when sent (lossy) or acked
	 * (lossless); -errno when dropped.
	 */
	void (*tx_done)(void *priv, struct msgr2_msg *m, int status);
	void (*event)(void *priv, enum msgr2_event ev, u64 arg);
	/*
	 * Server role.  CLIENT_IDENT (reconnect = false) or SESSION_RECONNECT
	 * (true) arrived from @addrs with @client_cookie: return the session
	 * this connection continues.  For CLIENT_IDENT that is normally the
	 * connection's own fresh session; for SESSION_RECONNECT the existing
	 * one, or NULL (SESSION_RESET is sent).  The caller should release any
	 * other connection of a session it returns (if it does not, the engine
	 * ends that connection when it takes the session over; the caller must
	 * still release it).  NULL hook: fresh sessions only.
	 * For CLIENT_IDENT a NULL return keeps the connection's own session.
	 * A returned session is only switched to when the reconnect is
	 * accepted (not on SESSION_RETRY(_GLOBAL) or SESSION_RESET).
	 * @server_cookie: SESSION_RECONNECT's server cookie (0 for
	 * CLIENT_IDENT); a client that redialled before it saw SERVER_IDENT
	 * may own several sessions with one client cookie, and only the
	 * server cookie tells which one it resumes.
	 */
	struct msgr2_session *(*attach)(void *priv, struct msgr2_conn *c,
					const struct msgr2_addrvec *addrs,
					u64 client_cookie, u64 server_cookie,
					bool reconnect);
	/* client: a global_seq greater than @at_least (SESSION_RETRY_GLOBAL) */
	u64 (*next_global_seq)(void *priv, u64 at_least);
	/*
	 * Secure mode: a buffer of at least @len bytes (<= cfg.tx_scratch_len)
	 * for one encrypted message tail, kept until the next call; NULL when
	 * out of memory.  Optional: without it cfg.tx_scratch is used.
	 */
	void *(*tx_scratch)(void *priv, size_t len);
};

/* ---- connections -------------------------------------------------------- */

enum msgr2_role {
	MSGR2_CLIENT,
	MSGR2_SERVER,
};

struct msgr2_config {
	enum msgr2_role role;
	u8 my_type;			/* MSGR2_ENTITY_* */
	u8 peer_type;			/* client: expected; 0 = any */
	s64 my_gid;			/* server: gid in SERVER_IDENT */
	/*
	 * Client: my_addrs.a[0] is sent in CLIENT_IDENT (an all-zero IP is
	 * replaced by the one the server's HELLO reports); target is the
	 * address dialled.  Server: my_addrs is our addrvec (CLIENT_IDENT's
	 * target_addr must equal one entry; n = 0 accepts any) and target is
	 * the client's address as seen on the socket, sent in our HELLO.
	 * global_seq: client: this connection's value; server: the value
	 * sent in SERVER_IDENT.  n_modes 0 selects crc only.
	 */
	struct msgr2_addrvec my_addrs;
	struct msgr2_addr target;
	u64 features_supported;
	u64 features_required;
	u32 n_modes;			/* client: preferred; server: allowed */
	u32 modes[MSGR2_MAX_MODES];
	u32 n_auth;			/* client: in order of preference */
	const struct msgr2_auth_ops *auth[MSGR2_MAX_AUTH];
	void *auth_priv[MSGR2_MAX_AUTH];
	u64 global_seq;			/* client: this connection's value */
	/* limits; 0 selects the default */
	u32 max_ctrl_len;		/* <= MSGR2_CTRL_MAX */
	u32 max_seg_len[MSGR2_NSEG];
	u32 handshake_timeout_ms;	/* 0: default 10000 */
	u32 keepalive_ms;		/* 0: no keepalives */
	/*
	 * secure mode: scratch for one encrypted message tail (or NULL with
	 * ops->tx_scratch); @tx_scratch_len bounds a message's tail either way
	 */
	void *tx_scratch;
	size_t tx_scratch_len;
	const struct msgr2_ops *ops;
	void *priv;
};

/* Why a connection ended (msgr2_conn_reason()). */
enum msgr2_reason {
	MSGR2_R_NONE = 0,
	MSGR2_R_BANNER,			/* bad banner magic or length */
	MSGR2_R_BANNER_FEATURES,	/* banner feature bits incompatible */
	MSGR2_R_PREAMBLE_CRC,
	MSGR2_R_SEGMENT_CRC,
	MSGR2_R_GCM_TAG,		/* secure mode: authentication failed */
	MSGR2_R_UNKNOWN_TAG,
	MSGR2_R_ORDER,			/* known frame in the wrong state */
	MSGR2_R_OVERSIZE,		/* a length above the limits */
	MSGR2_R_MALFORMED,		/* bad segment count or payload */
	MSGR2_R_LATE_STATUS,
	MSGR2_R_SIGNATURE,		/* AUTH_SIGNATURE mismatch */
	MSGR2_R_AUTH,			/* auth refused or failed */
	MSGR2_R_MISSING_FEATURES,	/* IDENT_MISSING_FEATURES / required */
	MSGR2_R_PEER,			/* wrong peer type or address */
	MSGR2_R_SEQ,			/* unused (gaps are taken), kept for
					 * the numbering of KMSGR_REASON_*
					 */
	MSGR2_R_WAIT,			/* server said WAIT: retry later */
	MSGR2_R_TIMEOUT,		/* handshake deadline, or the caller's */
	MSGR2_R_EOF,			/* transport closed (mid-frame: truncated) */
	MSGR2_R_LOCAL,			/* closed by the caller */
	MSGR2_R_NOMEM,
	MSGR2_R_NONCE,			/* secure mode: out of nonces */
	MSGR2_R_BUSY,			/* payload allocation failed */
	MSGR2_R_MODE,			/* the peer allows none of our modes */
	/* keep MSGR2_R__MAX last: msgr2_reason_str() covers every value */
	MSGR2_R__MAX
};

const char *msgr2_reason_str(enum msgr2_reason r);

size_t msgr2_conn_size(void);

/*
 * Start a connection on @s (which must outlive it).  The banner is queued
 * for transmission at once.  A client whose session has a server cookie
 * resumes it with SESSION_RECONNECT, otherwise sends CLIENT_IDENT.  The
 * pre-auth transcripts are allocated here (-ENOMEM) and freed after auth;
 * after a successful init, msgr2_conn_release() frees what is left.
 */
int msgr2_conn_init(struct msgr2_conn *c, const struct msgr2_config *cfg,
		    struct msgr2_session *s);

/*
 * End the connection and free its crypto state; secrets are wiped.  The
 * session is detached: a lossless session keeps its sent-but-unacked
 * messages for the next connection, a lossy one gives every queued message
 * back through ops->tx_done(-ECONNRESET).  An inbound message in progress
 * is finished through ops->rx_msg(-ECONNRESET).
 */
void msgr2_conn_release(struct msgr2_conn *c);

ssize_t msgr2_rx_want(struct msgr2_conn *c, void **buf);
int msgr2_rx_done(struct msgr2_conn *c, size_t n);
/* copy-in convenience: consumes what it can; *used = bytes consumed */
int msgr2_rx_feed(struct msgr2_conn *c, const void *data, size_t len,
		  size_t *used);
/* the transport reported EOF or an error */
int msgr2_rx_eof(struct msgr2_conn *c);

int msgr2_tx_iov(struct msgr2_conn *c, struct msgr2_iov *iov, int max);
/*
 * After msgr2_tx_iov() returned @n pieces: true when more is queued behind
 * them (pieces beyond its max, another message, a control frame), so that
 * the transport may hold a partial segment back for what follows
 * (MSG_MORE).  A hint: the next msgr2_tx_iov() may still return 0.
 */
bool msgr2_tx_more(const struct msgr2_conn *c, int n);
int msgr2_tx_done(struct msgr2_conn *c, size_t n);

/* handshake timeout, keepalive generation; @now_ms from any monotonic clock */
int msgr2_tick(struct msgr2_conn *c, u64 now_ms);
/*
 * Queue a KEEPALIVE2 (READY only) carrying @stamp_ns; msgr2_tick()'s carry
 * the wall clock, as Ceph's do.
 */
int msgr2_keepalive(struct msgr2_conn *c, u64 stamp_ns);
/* end the connection locally (reason MSGR2_R_LOCAL) */
void msgr2_conn_fail(struct msgr2_conn *c, enum msgr2_reason r);

bool msgr2_conn_ready(const struct msgr2_conn *c);
u32 msgr2_conn_mode(const struct msgr2_conn *c);	/* MSGR2_MODE_* or 0 */
enum msgr2_reason msgr2_conn_reason(const struct msgr2_conn *c);
struct msgr2_session *msgr2_conn_session(const struct msgr2_conn *c);
/* client: the address the server saw us at (its HELLO) */
const struct msgr2_addr *msgr2_conn_peer_view(const struct msgr2_conn *c);

#endif /* KMSGR_MSGR2_H */
