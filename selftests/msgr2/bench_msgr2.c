// SPDX-License-Identifier: GPL-2.0
/*
 * bench_msgr2 - push N messages through a connected engine client/server
 * pair in memory (encode on one side, decode on the other).
 *
 *   bench_msgr2 N SIZE crc|secure
 *
 * Each message carries SIZE bytes in its data segment.  The handshake is
 * done first, so running with N and with 0 and subtracting gives the cost
 * of N messages (bench_callgrind.sh does that under callgrind).  Without
 * valgrind it prints the wall time per message as a rough figure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "msgr2.h"
#include "lib_pipe.h"

struct bside {
	struct msgr2_conn *c;
	struct msgr2_session s;
	struct msgr2_config cfg;
	struct tauth auth;
	void *scratch;
};

static u8 *rx_buf;
static u32 rx_cap;
static u64 rx_count, rx_bytes;
static u32 tx_done_count;

static int b_rx_alloc(void *priv, struct msgr2_rx_msg *m)
{
	int i;

	for (i = 0; i < MSGR2_NSEG; i++) {
		if (m->len[i] > rx_cap)
			return -EMSGSIZE;
		m->buf[i] = m->len[i] ? rx_buf : NULL;
	}
	return 0;
}

static void b_rx_msg(void *priv, struct msgr2_rx_msg *m, int status)
{
	if (!status) {
		rx_count++;
		rx_bytes += m->len[MSGR2_DATA];
	}
}

static void b_tx_done(void *priv, struct msgr2_msg *m, int status)
{
	tx_done_count++;
}

static void b_event(void *priv, enum msgr2_event ev, u64 arg)
{
}

static const struct msgr2_ops b_ops = {
	.rx_alloc = b_rx_alloc,
	.rx_msg = b_rx_msg,
	.tx_done = b_tx_done,
	.event = b_event,
};

static int setup(struct bside *x, bool server, u32 mode, size_t scratch)
{
	struct msgr2_config *cfg = &x->cfg;

	x->c = calloc(1, msgr2_conn_size());
	x->scratch = malloc(scratch);
	if (!x->c || !x->scratch)
		return -ENOMEM;
	tauth_init(&x->auth, 7, false);
	msgr2_session_init(&x->s, true);
	pipe_test_cfg(cfg, server, mode, &x->auth, rx_cap, x->scratch,
		      scratch, &b_ops, x);
	return msgr2_conn_init(x->c, cfg, &x->s);
}

int main(int argc, char **argv)
{
	struct bside cli = { 0 }, srv = { 0 };
	struct msgr2_msg m;
	struct timespec t0, t1;
	u32 n, size, mode, i;
	size_t scratch;
	u8 *payload;
	double ns;

	if (argc != 4 || (strcmp(argv[3], "crc") && strcmp(argv[3], "secure"))) {
		fprintf(stderr, "usage: bench_msgr2 N SIZE crc|secure\n");
		return 2;
	}
	n = (u32)strtoul(argv[1], NULL, 0);
	size = (u32)strtoul(argv[2], NULL, 0);
	mode = strcmp(argv[3], "secure") ? MSGR2_MODE_CRC : MSGR2_MODE_SECURE;
	rx_cap = size > 4096 ? size : 4096;
	scratch = (size_t)rx_cap + 4096;
	rx_buf = malloc(rx_cap);
	payload = malloc(rx_cap);
	if (!rx_buf || !payload)
		return 1;
	for (i = 0; i < rx_cap; i++)
		payload[i] = (u8)(i * 131 + 7);

	if (setup(&cli, false, mode, scratch) ||
	    setup(&srv, true, mode, scratch)) {
		fprintf(stderr, "bench_msgr2: set-up failed\n");
		return 1;
	}
	if (pipe_pump(cli.c, srv.c) < 0 || !msgr2_conn_ready(cli.c) ||
	    !msgr2_conn_ready(srv.c) || msgr2_conn_mode(cli.c) != mode) {
		fprintf(stderr, "bench_msgr2: handshake failed: %s / %s\n",
			msgr2_reason_str(msgr2_conn_reason(cli.c)),
			msgr2_reason_str(msgr2_conn_reason(srv.c)));
		return 1;
	}

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < n; i++) {
		memset(&m, 0, sizeof(m));
		m.hdr.type = 42;
		m.hdr.priority = 127;
		m.hdr.version = 1;
		m.seg[MSGR2_DATA].base = payload;
		m.seg[MSGR2_DATA].len = size;
		if (msgr2_send(&cli.s, &m) < 0 || pipe_pump(cli.c, srv.c) < 0) {
			fprintf(stderr, "bench_msgr2: message %u failed: %s\n",
				i, msgr2_reason_str(msgr2_conn_reason(srv.c)));
			return 1;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (rx_count != n || tx_done_count != n) {
		fprintf(stderr, "bench_msgr2: %llu of %u messages arrived, %u given back\n",
			(unsigned long long)rx_count, n, tx_done_count);
		return 1;
	}
	ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 +
	     (double)(t1.tv_nsec - t0.tv_nsec);
	printf("%u messages of %u bytes, %s: %.0f ns/message\n", n, size,
	       argv[3], n ? ns / n : 0.0);
	msgr2_conn_release(cli.c);
	msgr2_conn_release(srv.c);
	free(cli.c);
	free(srv.c);
	free(cli.scratch);
	free(srv.scratch);
	free(rx_buf);
	free(payload);
	return 0;
}
