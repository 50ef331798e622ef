/* SPDX-License-Identifier: GPL-2.0 */
/*
 * In-memory byte pipe between two engine connections, a test-only auth
 * method that hands both sides a chosen session key and connection secret
 * (as CephX would have produced), and a CRC fixer for fuzz input.
 * Used by test_pipe.c, the fuzzers and bench_msgr2.c.
 */
#ifndef KMSGR_SELFTEST_LIB_PIPE_H
#define KMSGR_SELFTEST_LIB_PIPE_H

#include "msgr2.h"

/*
 * Test auth method (wire method number MSGR2_AUTH_CEPHX, both roles).
 * The client sends a 16-byte request; with @more the server answers with
 * an 8-byte challenge in AUTH_REPLY_MORE that the client must return
 * XORed with 0x5a; then AUTH_DONE carries 4 bytes.  Both sides report
 * @session_key and the first @secret_len bytes of @con_secret.
 */
struct tauth {
	u8 session_key[16];
	u8 con_secret[64];
	u32 secret_len;
	bool more;
	/* per connection */
	u32 state;
	u8 challenge[8];
	u64 next_gid;			/* server */
};

extern const struct msgr2_auth_ops tauth_ops;

/* fill @t with a deterministic key and secret derived from @seed */
void tauth_init(struct tauth *t, u64 seed, bool more);

/*
 * Move up to @budget bytes from @from's TX to @to's RX.  Returns the
 * number of bytes moved, or the first negative error of an engine call.
 */
long pipe_move(struct msgr2_conn *from, struct msgr2_conn *to, size_t budget);

/*
 * Run msgr2_tx_iov()/msgr2_rx_want() pairs until neither direction moves
 * (or one side fails).  Returns the bytes moved, or a negative error.
 */
long pipe_pump(struct msgr2_conn *a, struct msgr2_conn *b);

/*
 * Rewrite the CRCs of the rev1 CRC-mode frames found in @buf so that they
 * pass the preamble and segment checks (fuzzers: get past the CRC wall).
 */
void pipe_fix_crcs(u8 *buf, size_t len);

/* xorshift64* PRNG */
static inline u64 prng_next(u64 *s)
{
	u64 x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dULL;
}

/*
 * Callbacks for programs that only need the engine to run (fuzzers):
 * inbound segments up to PIPE_HEAP_SEG_MAX bytes are malloc'd and freed
 * again when the message is finished; completions and events are ignored.
 */
#define PIPE_HEAP_SEG_MAX	(1 << 20)
int pipe_heap_rx_alloc(void *priv, struct msgr2_rx_msg *m);
void pipe_heap_rx_msg(void *priv, struct msgr2_rx_msg *m, int status);
void pipe_ignore_tx_done(void *priv, struct msgr2_msg *m, int status);
void pipe_ignore_event(void *priv, enum msgr2_event ev, u64 arg);

/*
 * The configuration of one end of two engines in one process (test_pipe,
 * the fuzzers, bench_msgr2): a client (type CLIENT) dialling an OSD at
 * 127.0.0.1:6800, or that OSD (gid 3); one mode, the test auth @auth
 * (tauth_ops), global seq 1, every segment limit @seg_max (0: the
 * engine's default), the tx scratch given, and @ops with @priv.  Every
 * other field is zero.
 */
void pipe_test_cfg(struct msgr2_config *cfg, bool server, u32 mode,
		   struct tauth *auth, u32 seg_max, void *scratch,
		   size_t scratch_len, const struct msgr2_ops *ops, void *priv);

/* FNV-1a, chained */
static inline u64 hash_bytes(u64 h, const void *p, size_t len)
{
	const u8 *b = p;

	while (len--)
		h = (h ^ *b++) * 0x100000001b3ULL;
	return h;
}

#define HASH_INIT 0xcbf29ce484222325ULL

#endif /* KMSGR_SELFTEST_LIB_PIPE_H */
