// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr_crash - an application to be killed with SIGKILL (run_guest.sh).
 *
 *   kmsgr_crash
 *
 * Two processes: the parent listens (lossless) on 127.0.0.1, the child
 * connects to it; each queues KMSGR_CRASH_SENDS (48) sends of 1 MiB to the
 * other and never gives received messages back, so the receive pools fill
 * up, the sessions stall with sends in flight, and the kernel holds
 * messages, pool slices and socket buffers on both sides.  Each process
 * prints "ready PID" once its session is up and its sends are queued, then
 * waits for its SIGKILL (exits by itself after 300 s).
 * Exit status (without the kill): 1 on set-up failure.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/prctl.h>

#include "kmsgr_ring_util.h"

#define MSG_LEN		(1U << 20)
#define TX_AREA		(2ULL << 20)
#define RX_POOL		(4ULL << 20)	/* a message takes at most half */

/* keep every RECV: the pool never gets its slices back */
static int keep_recv(struct kt_loop *lp, struct kt_inst *ti,
		     const struct kmsgr_cqe *cqe)
{
	(void)lp;
	(void)ti;
	return cqe->kind == KMSGR_CQE_RECV || cqe->kind == KMSGR_CQE_SEND;
}

static bool up(struct kt_loop *lp)
{
	unsigned int i;

	for (i = 0; i < lp->nr_ev; i++)
		if (lp->ev[i].event == KMSGR_EV_UP ||
		    lp->ev[i].event == KMSGR_EV_ACCEPTED)
			return true;
	return false;
}

/* Queue @n sends of MSG_LEN on @sess (front, middle and data). */
static int queue_sends(struct kt_inst *ti, uint32_t sess, unsigned int n)
{
	struct kmsgr_slice f = { 0, 4096 }, m = { 4096, 512 },
			   d = { 8192, MSG_LEN };
	struct kmsgr_sqe *sqe;
	unsigned int i;

	for (i = 0; i < n; i++) {
		sqe = kt_sqe(ti);
		if (!sqe)
			return -EBUSY;
		kmsgr_prep_send(sqe, sess, 0x4242, i, f, m, d, i);
	}
	return kmsgr_submit(ti->k, 0, 0) < 0 ? -EIO : 0;
}

static int run(bool server, const struct kmsgr_addr *peer, FILE *tell)
{
	struct kt_inst ti;
	struct kt_loop lp;
	struct kmsgr_listen l;
	uint32_t id = 0;
	unsigned int i;
	int ret;

	ret = kt_inst_open(&ti, server ? "crash-server" : "crash-client", 128,
			   TX_AREA, RX_POOL, 5);
	if (ret)
		return ret;
	kt_loop_init(&lp);
	lp.hook = keep_recv;
	kt_loop_add(&lp, &ti);
	if (server) {
		ret = kt_listen(&ti, "127.0.0.1", KMSGR_SESS_F_LOSSLESS, 1, &l);
		if (ret)
			return ret;
		fprintf(tell, "listen %u %u\n", ntohs(l.bound.port),
			l.bound.nonce);
		fclose(tell);
	} else {
		ret = kt_connect(&ti, peer, KMSGR_SESS_F_LOSSLESS,
				 KT_PEER_ANY, 2, &id);
		if (ret)
			return ret;
	}
	ret = kt_loop_run(&lp, up, 30000);
	if (ret) {
		fprintf(stderr, "kmsgr_crash: session not up: %s\n",
			kmsgr_strerror(ret));
		return ret;
	}
	for (i = 0; i < lp.nr_ev; i++)
		if (lp.ev[i].event == KMSGR_EV_ACCEPTED ||
		    lp.ev[i].event == KMSGR_EV_UP)
			id = lp.ev[i].session;
	ret = queue_sends(&ti, id, kt_env_long("KMSGR_CRASH_SENDS", 48));
	if (ret)
		return ret;
	/* let some of it move, then stall on the full pools */
	for (i = 0; i < 20; i++)
		kt_loop_run_once(&lp, 50);
	printf("ready %d\n", getpid());
	fflush(stdout);
	sleep(300);
	return -ETIME;
}

int main(void)
{
	struct kmsgr_addr a;
	unsigned int port, nonce;
	char line[64];
	FILE *f;
	int p[2];
	pid_t pid;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (pipe(p))
		return 1;
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid > 0) {
		/* parent: the server; tells the child where it listens */
		close(p[0]);
		f = fdopen(p[1], "w");
		return !f || run(true, NULL, f) ? 1 : 0;
	}
	/* child: the client */
	close(p[1]);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	f = fdopen(p[0], "r");
	if (!f || !fgets(line, sizeof(line), f) ||
	    sscanf(line, "listen %u %u", &port, &nonce) != 2)
		return 1;
	fclose(f);
	if (kt_addr(&a, "127.0.0.1", (uint16_t)port))
		return 1;
	a.nonce = nonce;
	return run(false, &a, NULL) ? 1 : 0;
}
