// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: arbitrary bytes into a client or a server connection
 * right after the banner exchange, crc mode (AUTH_NONE), plus the wire
 * decoders of msgr2_int.h on the same bytes.
 *
 * Input: byte 0 = control
 *   bit 0     0: feed a client conn (peer = a mon), 1: feed a server conn
 *   bit 1     rewrite the frame CRCs first (pipe_fix_crcs)
 *   bits 2-7  0: feed everything at once; n: feed in pieces of n bytes
 * then the bytes the peer sends after its banner (HELLO onwards).
 * Seeds: corpus/fuzz_frame/ (mkcorpus.sh).
 */
#include <stdint.h>
#include <stdlib.h>

#include "msgr2.h"
#include "msgr2_int.h"
#include "lib_pipe.h"

#define FZ_SEG_MAX	PIPE_HEAP_SEG_MAX

/* banners as a mon and as the kernel client send them */
static const u8 mon_banner[26] = {
	'c', 'e', 'p', 'h', ' ', 'v', '2', '\n', 16, 0,
	1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};

static const u8 cli_banner[26] = {
	'c', 'e', 'p', 'h', ' ', 'v', '2', '\n', 16, 0,
	1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0,
};

static const u8 ip_lo[4] = { 127, 0, 0, 1 };

static const struct msgr2_ops fz_ops = {
	.rx_alloc = pipe_heap_rx_alloc,
	.rx_msg = pipe_heap_rx_msg,
	.tx_done = pipe_ignore_tx_done,
	.event = pipe_ignore_event,
};

/* throw away whatever the connection wants to send */
static int drain(struct msgr2_conn *c)
{
	struct msgr2_iov iov[8];
	size_t n;
	int k, i, ret;

	for (;;) {
		k = msgr2_tx_iov(c, iov, 8);
		if (k <= 0)
			return k;
		for (n = 0, i = 0; i < k; i++)
			n += iov[i].len;
		ret = msgr2_tx_done(c, n);
		if (ret < 0)
			return ret;
	}
}

static void wire_decoders(const u8 *p, size_t len)
{
	struct msgr2_addrvec av;
	struct msgr2_addr a, find;
	struct msgr2_msg_hdr h;
	struct m2_dec d;
	u32 v[M2_MAX_VEC], n, bl;
	bool found;

	msgr2_addr_ipv4(&find, MSGR2_ADDR_MSGR2, 0, ip_lo, 3390);
	m2_dec_init(&d, p, (u32)len);
	m2_dec_addrvec(&d, &av, &find, &found);
	m2_dec_addr(&d, &a);
	m2_dec_u32vec(&d, v, M2_MAX_VEC, &n);
	m2_dec_blob(&d, &bl);
	m2_dec_le64(&d);
	if (len >= M2_HDR2_LEN)
		m2_hdr2_decode(p, &h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct msgr2_conn *c;
	struct msgr2_auth_none none = { .entity_type = MSGR2_ENTITY_CLIENT,
					.name = "admin",
					.next_global_id = 4135 };
	struct msgr2_session s;
	struct msgr2_config cfg = { 0 };
	size_t off = 0, piece, used;
	bool server;
	u8 *buf;
	int ret, i;

	if (size < 1)
		return 0;
	if (!c)
		c = calloc(1, msgr2_conn_size());
	server = data[0] & 1;
	piece = data[0] >> 2;
	size--;
	buf = malloc(size ? size : 1);
	memcpy(buf, data + 1, size);
	if (data[0] & 2)
		pipe_fix_crcs(buf, size);
	wire_decoders(buf, size);

	/* the configuration of the captured exchange (msgr2-verified 7.1) */
	cfg.role = server ? MSGR2_SERVER : MSGR2_CLIENT;
	cfg.my_type = server ? MSGR2_ENTITY_MON : MSGR2_ENTITY_CLIENT;
	cfg.peer_type = server ? 0 : MSGR2_ENTITY_MON;
	msgr2_addr_ipv4(&cfg.target, MSGR2_ADDR_MSGR2, 0, ip_lo, 3390);
	if (server) {
		cfg.my_addrs.a[0] = cfg.target;
	} else {
		static const u8 zero[4];

		msgr2_addr_ipv4(&cfg.my_addrs.a[0], MSGR2_ADDR_ANY,
				0x2343a824, zero, 0);
	}
	cfg.my_addrs.n = 1;
	cfg.features_supported = MSGR2_FEATURES_DEFAULT;
	cfg.n_modes = 1;
	cfg.modes[0] = MSGR2_MODE_CRC;
	cfg.n_auth = 1;
	cfg.auth[0] = &msgr2_auth_none_ops;
	cfg.auth_priv[0] = &none;
	cfg.global_seq = 1;
	for (i = 0; i < MSGR2_NSEG; i++)
		cfg.max_seg_len[i] = FZ_SEG_MAX;
	cfg.ops = &fz_ops;
	msgr2_session_init(&s, true);

	/* the fixed set-up does not depend on the input: it must work */
	if (msgr2_conn_init(c, &cfg, &s))
		abort();
	drain(c);
	ret = msgr2_rx_feed(c, server ? cli_banner : mon_banner, 26, &used);
	if (ret)
		abort();
	drain(c);
	while (!ret && off < size) {
		used = 0;
		ret = msgr2_rx_feed(c, buf + off,
				    piece ? min_t(size_t, piece, size - off) :
				    size - off, &used);
		if (!ret)
			ret = drain(c);
		if (!used)
			break;
		off += used;
	}
	msgr2_tick(c, 0);
	msgr2_tick(c, 1000000);
	msgr2_rx_eof(c);
	drain(c);
	msgr2_conn_release(c);
	msgr2_session_drain(&s, pipe_ignore_tx_done, NULL, -ECONNRESET);
	free(buf);
	return 0;
}
