/* SPDX-License-Identifier: GPL-2.0 */
/*
 * In-memory msgr2 engine pair for host tests: an engine client and an
 * engine server in one process, joined by a loop that moves bytes from one
 * side's msgr2_tx_iov() into the other side's msgr2_rx_want() buffers.
 *
 * Usage:
 *
 *	struct pair *p = pair_new(MSGR2_MODE_CRC);	// AUTH_NONE, lossless
 *	p->cl.cfg.keepalive_ms = ...;			// tweak configs here
 *	pair_connect(p);				// new conns on both ends
 *	pair_send(&p->cl, 42, "front", 5, NULL, 0, NULL, 0);
 *	pair_pump(p);					// until nothing moves
 *	... p->sv.rx[0] is the message the server got ...
 *	pair_disconnect(p);				// a transport fault
 *	pair_connect(p);				// lossless reconnect
 *	pair_free(p);
 *
 * Each end owns copies of everything it sent (freed in tx_done) and keeps
 * every delivered message (status 0) in rx[] in order.  The server keeps
 * one session per client connection and finds them again by client cookie
 * on SESSION_RECONNECT (ops->attach).
 *
 * Fault injection: p->budget >= 0 limits the bytes pair_pump() moves in
 * total (both directions); when it reaches 0 pumping stops, which lets a
 * test cut the "wire" in the middle of any frame.  p->chunk > 0 moves at
 * most that many bytes per rx_done() call (partial reads).
 */
#ifndef KMSGR_SELFTEST_LIB_PAIR_H
#define KMSGR_SELFTEST_LIB_PAIR_H

#include "msgr2.h"

#define PAIR_MAX_SESSIONS	64
#define PAIR_AUTH_FIXED		MSGR2_AUTH_CEPHX	/* method number used */

struct pair;

/* A delivered inbound message (buffers malloc'd, freed by pair_free()). */
struct pair_rx {
	struct msgr2_msg_hdr hdr;
	u32 len[MSGR2_NSEG];
	u8 *buf[MSGR2_NSEG];
};

/*
 * Test-only auth method with a fixed session key and 64-byte connection
 * secret (secure mode capable).  @rounds AUTH_REPLY_MORE round trips
 * happen before AUTH_DONE; @refuse makes the server answer
 * AUTH_BAD_METHOD; @secret_len < 40 exercises the C1 check.
 */
struct pair_auth_fixed {
	u8 session_key[16];
	u32 session_key_len;
	u8 con_secret[64];
	u32 con_secret_len;
	u64 global_id;
	int rounds;
	int round;			/* per connection, reset by ops->reset */
	bool refuse;
};

extern const struct msgr2_auth_ops pair_auth_fixed_ops;

struct pair_end {
	struct pair *p;
	bool server;
	struct msgr2_conn *c;		/* current connection, or NULL */
	struct msgr2_session s;		/* the client's session */
	struct msgr2_config cfg;	/* used by the next pair_connect() */
	struct msgr2_ops ops;
	struct msgr2_auth_none none;
	struct pair_auth_fixed fixed;
	u8 *tx_scratch;

	/* what happened */
	struct pair_rx *rx;
	int n_rx;
	int rx_cap;
	int n_rx_dup;			/* rx_msg(-EALREADY) */
	int n_rx_drop;			/* other rx_msg(status < 0) */
	int n_rx_alloc;			/* rx_alloc()s that gave buffers */
	int n_rx_back;			/* rx_msg()s: buffers given back */
	int n_rx_unpaired;		/* rx_msg()s with nothing handed out */
	int rx_last_status;		/* status of the last rx_msg() */
	int n_tx_ok;
	int n_tx_err;
	u64 tx_taken;			/* bytes moved off the current conn */
	u64 last_tx_end;		/* of the last tx_done() with one */
	int n_tx_end;			/* tx_done()s with a tx_end */
	int n_tx_end_bad;		/* tx_end not increasing, or beyond */
	int n_ready;
	u64 ready_arg;
	int n_reset;
	int n_ka_ack;
	u64 ka_ack_stamp;	/* the last KEEPALIVE2_ACK's, ns */
	int n_auth_done;
	u32 auth_mode;
	int rx_eagain;			/* next rx_alloc()s to refuse */
	int n_eagain;
	u64 next_gseq;
};

struct pair {
	struct pair_end cl;
	struct pair_end sv;
	struct msgr2_session *sv_sess[PAIR_MAX_SESSIONS];
	int n_sv_sess;
	long long budget;		/* bytes left to move; < 0: unlimited */
	size_t chunk;			/* max bytes per rx_done(); 0: any */
	bool attach_keep;		/* attach: leave a stale conn alone */
	u64 moved;			/* total bytes moved */
	/* when tap[] is set, bytes moved are appended (0: c2s, 1: s2c) */
	u8 *tap[2];
	size_t tap_len[2];
	size_t tap_cap[2];
};

struct pair *pair_new(u32 mode);
void pair_free(struct pair *p);
/* Release any current connections and start new ones (both ends). */
int pair_connect(struct pair *p);
/* Release both connections (the sessions stay). */
void pair_disconnect(struct pair *p);
/*
 * Move bytes both ways until nothing moves, a side fails or the budget is
 * used up.  Returns the number of bytes moved.
 */
u64 pair_pump(struct pair *p);
/*
 * A message owned by the pair (freed in tx_done): segments copied,
 * priority 127, version 1; the caller may adjust hdr before msgr2_send().
 */
struct msgr2_msg *pair_msg_new(u16 type, const void *front, u32 flen,
			       const void *middle, u32 mlen, const void *data,
			       u32 dlen);
void pair_msg_free(struct msgr2_msg *m);
/* Queue a message on @e's session; segments are copied.  0 or -errno. */
int pair_send(struct pair_end *e, u16 type, const void *front, u32 flen,
	      const void *middle, u32 mlen, const void *data, u32 dlen);
/*
 * Messages whose buffers rx_alloc() handed out and rx_msg() has not given
 * back yet (0 whenever no MESSAGE is in progress).  pair_free() aborts when
 * a released connection still holds any: buffers must never be kept.
 */
int pair_rx_outstanding(const struct pair_end *e);
/* The session @e uses now (the server's follows its connection). */
struct msgr2_session *pair_session(struct pair_end *e);

/*
 * Move bytes one way only: at most @max (0: unlimited) from the client to
 * the server (@c2s) or back, in as many steps as needed.
 */
u64 pair_move(struct pair *p, bool c2s, u64 max);

/*
 * Build a crc-mode (rev1) frame independently of the engine: @nsegs
 * segments (0..5 accepted, for negative tests), epilogue with @late when
 * nsegs > 1.  Returns the frame length.
 */
size_t pair_frame_crc(u8 *out, size_t cap, u8 tag, int nsegs,
		      const void *const seg[4], const u32 len[4], u8 late);

/* Parse "63 65 70..." (whitespace ignored) into @out; returns the length. */
size_t pair_hex(const char *hex, u8 *out, size_t cap);

#endif /* KMSGR_SELFTEST_LIB_PAIR_H */
