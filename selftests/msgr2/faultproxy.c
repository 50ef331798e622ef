// SPDX-License-Identifier: GPL-2.0
/*
 * faultproxy - a misbehaving msgr2 peer for robustness tests.
 *
 *   faultproxy [--life-ms N] MODE
 *
 * Listens on 127.0.0.1 at a free port, prints "PORT\n" on stdout once it
 * accepts connections, then serves connections one after the other:
 *
 *   silent               accept and never send anything
 *   banner-close         send a valid msgr2 banner, then close
 *   banner-stall         send a valid msgr2 banner, then say nothing more
 *   proxy:IP:PORT:N:stall  forward both ways to IP:PORT until N bytes came
 *   proxy:IP:PORT:N:close  from the server; then stop forwarding (stall)
 *                          or close both sockets (close).  Bytes up to N
 *                          are delivered; the rest is dropped.
 *
 * It exits after --life-ms (default 60000) so a forgotten instance cannot
 * outlive a test run.  It uses no part of the engine.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum fp_mode { FP_SILENT, FP_BANNER_CLOSE, FP_BANNER_STALL, FP_PROXY };

struct fp_cfg {
	enum fp_mode mode;
	struct sockaddr_in up;		/* proxy: upstream */
	unsigned long limit;		/* proxy: bytes forwarded S->C */
	int close_at_limit;		/* proxy: close instead of stall */
	long life_ms;
};

/* mon-style banner: "ceph v2\n", le16 16, supported 1, required 0 */
static const unsigned char banner[26] = {
	'c', 'e', 'p', 'h', ' ', 'v', '2', '\n', 16, 0,
	1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void die(const char *what)
{
	fprintf(stderr, "faultproxy: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int parse_mode(const char *s, struct fp_cfg *c)
{
	char ip[64], how[16];
	unsigned int port;

	if (!strcmp(s, "silent")) {
		c->mode = FP_SILENT;
	} else if (!strcmp(s, "banner-close")) {
		c->mode = FP_BANNER_CLOSE;
	} else if (!strcmp(s, "banner-stall")) {
		c->mode = FP_BANNER_STALL;
	} else if (sscanf(s, "proxy:%63[0-9.]:%u:%lu:%15s", ip, &port,
			  &c->limit, how) == 4) {
		c->mode = FP_PROXY;
		if (!strcmp(how, "close"))
			c->close_at_limit = 1;
		else if (strcmp(how, "stall"))
			return -1;
		if (!port || port > 65535)
			return -1;
		memset(&c->up, 0, sizeof(c->up));
		c->up.sin_family = AF_INET;
		c->up.sin_port = htons((unsigned short)port);
		if (inet_pton(AF_INET, ip, &c->up.sin_addr) != 1)
			return -1;
	} else {
		return -1;
	}
	return 0;
}

/* Wait up to @ms for something on the listed fds; returns poll()'s count. */
static int wait_fds(struct pollfd *p, int n, long long deadline)
{
	long long left = deadline - now_ms();

	if (left <= 0)
		return 0;
	return poll(p, n, left > 1000 ? 1000 : (int)left);
}

/* Hold @fd open, draining input, until the peer closes or the deadline. */
static void hold(int fd, long long deadline)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char buf[4096];

	while (now_ms() < deadline) {
		if (wait_fds(&p, 1, deadline) <= 0)
			continue;
		if (read(fd, buf, sizeof(buf)) <= 0)
			return;
	}
}

static void serve_proxy(int cfd, const struct fp_cfg *c, long long deadline)
{
	unsigned long down = 0;
	struct pollfd p[2];
	char buf[16384];
	ssize_t n, w;
	size_t take;
	int ufd;

	ufd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (ufd < 0 || connect(ufd, (const struct sockaddr *)&c->up,
			       sizeof(c->up)) < 0) {
		fprintf(stderr, "faultproxy: upstream connect: %s\n",
			strerror(errno));
		if (ufd >= 0)
			close(ufd);
		return;
	}
	while (now_ms() < deadline) {
		p[0].fd = cfd;
		p[0].events = POLLIN;
		p[1].fd = ufd;
		p[1].events = down < c->limit ? POLLIN : 0;
		p[0].revents = 0;
		p[1].revents = 0;
		if (wait_fds(p, 2, deadline) <= 0)
			continue;
		if (p[0].revents) {
			n = read(cfd, buf, sizeof(buf));
			if (n <= 0)
				break;
			/* client to server: forwarded while not cut */
			if (down < c->limit && write(ufd, buf, n) != n)
				break;
		}
		if (p[1].revents) {
			n = read(ufd, buf, sizeof(buf));
			if (n <= 0)
				break;
			take = (size_t)n;
			if (take > c->limit - down)
				take = c->limit - down;
			w = write(cfd, buf, take);
			if (w != (ssize_t)take)
				break;
			down += take;
			if (down >= c->limit && c->close_at_limit)
				break;
		}
	}
	close(ufd);
}

int main(int argc, char **argv)
{
	struct fp_cfg c = { .life_ms = 60000 };
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);
	long long deadline;
	struct pollfd p;
	int lfd, cfd, one = 1, i = 1;

	if (argc > 2 && !strcmp(argv[1], "--life-ms")) {
		c.life_ms = strtol(argv[2], NULL, 10);
		i = 3;
	}
	if (i != argc - 1 || c.life_ms <= 0 || parse_mode(argv[i], &c)) {
		fprintf(stderr, "usage: faultproxy [--life-ms N] silent|"
			"banner-close|banner-stall|proxy:IP:PORT:N:stall|close\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	deadline = now_ms() + c.life_ms;

	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		die("socket");
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
	    listen(lfd, 8) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&sin, &len) < 0)
		die("listen");
	printf("%u\n", ntohs(sin.sin_port));
	fflush(stdout);

	p.fd = lfd;
	p.events = POLLIN;
	while (now_ms() < deadline) {
		p.revents = 0;
		if (wait_fds(&p, 1, deadline) <= 0)
			continue;
		cfd = accept(lfd, NULL, NULL);
		if (cfd < 0)
			continue;
		switch (c.mode) {
		case FP_SILENT:
			hold(cfd, deadline);
			break;
		case FP_BANNER_CLOSE:
			if (write(cfd, banner, sizeof(banner)) < 0)
				perror("faultproxy: write");
			break;
		case FP_BANNER_STALL:
			if (write(cfd, banner, sizeof(banner)) >= 0)
				hold(cfd, deadline);
			break;
		case FP_PROXY:
			serve_proxy(cfd, &c, deadline);
			break;
		}
		close(cfd);
	}
	return 0;
}
