// SPDX-License-Identifier: GPL-2.0
/*
 * tcp-pingpong - plain TCP round-trip latency, the reference point of
 * "kmsgrctl bench --pattern pingpong" (tools/bench-tcp).
 *
 *   tcp-pingpong server ADDR:PORT [--count N] [--busy-poll USEC]
 *   tcp-pingpong client ADDR:PORT [--size BYTES] [--count N] [--warmup N]
 *                [--busy-poll USEC]
 *
 * The client sends a 4-byte little-endian message size once, then COUNT
 * messages of that size, each after the previous one came back; the server
 * echoes every message.  Both set TCP_NODELAY.  The client prints the same
 * line format as kmsgrctl bench:
 *   "latency us: p50 X  p99 Y  p999 Z  (min A, mean B, max C)".
 * The server serves one client per connection, --count connections
 * (default 1), then exits.  IPv4 only.
 *
 * --busy-poll USEC (0 to 10000, default 0: off), on either end: before
 * each blocking receive, spin on recv(MSG_DONTWAIT) for up to USEC
 * microseconds (CLOCK_MONOTONIC, read every BUSY_POLL_CHECK empty polls),
 * then block as without it; the counterpart of kmsgrctl bench and session
 * listen --busy-poll.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <linux/types.h>

#define MAX_SIZE	(64U << 20)
#define BUSY_POLL_MAX	10000UL	/* --busy-poll, microseconds */
#define BUSY_POLL_CHECK	64	/* empty polls per clock read */

static const char *prog = "tcp-pingpong";
static __u64 busy_poll_ns;	/* --busy-poll; 0: receive blocking */

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s server ADDR:PORT [--count CONNECTIONS] [--busy-poll USEC]\n"
		"       %s client ADDR:PORT [--size BYTES] [--count N] [--warmup N]\n"
		"                    [--busy-poll USEC]\n"
		"  --busy-poll: spin on a non-blocking receive for up to USEC (0 to\n"
		"  %lu, default 0: off) before each blocking one.\n",
		prog, prog, BUSY_POLL_MAX);
}

static int parse_addr(const char *s, struct sockaddr_in *sin)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	char *end;
	long port;

	if (!colon || (size_t)(colon - s) >= sizeof(host))
		return -1;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (errno || *end || port < 0 || port > 65535)
		return -1;
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons((__u16)port);
	return inet_pton(AF_INET, host, &sin->sin_addr) == 1 ? 0 : -1;
}

static int parse_num(const char *s, unsigned long max, unsigned long *v)
{
	char *end;

	errno = 0;
	*v = strtoul(s, &end, 10);
	if (errno || end == s || *s == '-')
		return -1;
	if (*end == 'K' || *end == 'k') {
		*v <<= 10;
		end++;
	} else if (*end == 'M' || *end == 'm') {
		*v <<= 20;
		end++;
	}
	return *end || *v > max ? -1 : 0;
}

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
}

/* A spin-wait hint: x86 PAUSE where the compiler has it, else nothing. */
static void cpu_relax(void)
{
#if defined(__has_builtin)
#if __has_builtin(__builtin_ia32_pause)
	__builtin_ia32_pause();
#endif
#endif
}

/*
 * recv(@fd, @buf, @len, 0), with --busy-poll first spinning on
 * MSG_DONTWAIT for up to busy_poll_ns: returns what the first receive
 * that did not find the socket empty returned.  The clock is read at the
 * first empty poll and then every BUSY_POLL_CHECK (a syscall under QEMU
 * TCG, where it can cost as much as a poll).
 */
static ssize_t recv_poll(int fd, void *buf, size_t len)
{
	unsigned int polls = 0;
	__u64 t, end = 0;
	ssize_t n;

	while (busy_poll_ns) {
		n = recv(fd, buf, len, MSG_DONTWAIT);
		if (n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			return n;
		if (!(polls++ % BUSY_POLL_CHECK)) {
			t = now_ns();
			if (!end)
				end = t + busy_poll_ns;
			else if (t >= end)
				break;
		}
		cpu_relax();
	}
	return recv(fd, buf, len, 0);
}

/* Move exactly @len bytes; 0, or -1 with a message (EOF counts as error). */
static int xfer(int fd, void *buf, size_t len, int out)
{
	char *p = buf;
	ssize_t n;

	while (len) {
		n = out ? send(fd, p, len, MSG_NOSIGNAL) : recv_poll(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, "%s: %s: %s\n", prog,
				out ? "send" : "recv",
				n ? strerror(errno) : "connection closed");
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static void nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int serve_one(int fd)
{
	unsigned char hdr[4];
	__u32 size;
	char *buf;
	int ret = 0;

	if (xfer(fd, hdr, sizeof(hdr), 0))
		return -1;
	size = hdr[0] | hdr[1] << 8 | hdr[2] << 16 | (__u32)hdr[3] << 24;
	if (!size || size > MAX_SIZE) {
		fprintf(stderr, "%s: bad message size %u\n", prog, size);
		return -1;
	}
	buf = malloc(size);
	if (!buf)
		return -1;
	for (;;) {
		ssize_t n = recv_poll(fd, buf, size);

		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			break;	/* client done */
		if (n < 0 || xfer(fd, buf + n, size - (size_t)n, 0) ||
		    xfer(fd, buf, size, 1)) {
			ret = -1;
			break;
		}
	}
	free(buf);
	return ret;
}

static int server(const struct sockaddr_in *sin, unsigned long count)
{
	int lfd, fd, one = 1, ret = 0;

	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0) {
		perror("socket");
		return 1;
	}
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (const struct sockaddr *)sin, sizeof(*sin)) ||
	    listen(lfd, 4)) {
		fprintf(stderr, "%s: cannot listen: %s\n", prog,
			strerror(errno));
		close(lfd);
		return 1;
	}
	printf("listening\n");
	fflush(stdout);
	while (count--) {
		fd = accept(lfd, NULL, NULL);
		if (fd < 0) {
			perror("accept");
			ret = 1;
			break;
		}
		nodelay(fd);
		if (serve_one(fd))
			ret = 1;
		close(fd);
	}
	close(lfd);
	return ret;
}

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

/*
 * Nearest rank, as kmsgrctl bench computes it (ctl_pct_us()): the
 * smallest sample with at least p of them <= it.
 */
static double pct(const __u64 *lat, unsigned long n, double p)
{
	double rank = p * (double)n;
	unsigned long i = (unsigned long)rank;

	if (!n)
		return 0;
	if ((double)i < rank)
		i++;
	i = i ? i - 1 : 0;
	if (i >= n)
		i = n - 1;
	return (double)lat[i] / 1e3;
}

static int client(const struct sockaddr_in *sin, unsigned long size,
		  unsigned long count, unsigned long warmup)
{
	unsigned char hdr[4] = { size, size >> 8, size >> 16, size >> 24 };
	unsigned long i;
	__u64 *lat, t, t0;
	double sum = 0;
	char *buf;
	int fd, ret = 1;

	lat = calloc(count, sizeof(*lat));
	buf = malloc(size);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (!lat || !buf || fd < 0) {
		fprintf(stderr, "%s: out of resources\n", prog);
		goto out;
	}
	memset(buf, 0x5a, size);
	if (connect(fd, (const struct sockaddr *)sin, sizeof(*sin))) {
		fprintf(stderr, "%s: connect: %s\n", prog, strerror(errno));
		goto out;
	}
	nodelay(fd);
	if (xfer(fd, hdr, sizeof(hdr), 1))
		goto out;
	for (i = 0; i < warmup; i++)
		if (xfer(fd, buf, size, 1) || xfer(fd, buf, size, 0))
			goto out;
	t0 = now_ns();
	for (i = 0; i < count; i++) {
		t = now_ns();
		if (xfer(fd, buf, size, 1) || xfer(fd, buf, size, 0))
			goto out;
		lat[i] = now_ns() - t;
		sum += (double)lat[i];
	}
	t = now_ns() - t0;
	qsort(lat, count, sizeof(*lat), cmp_u64);
	printf("tcp pingpong size %lu", size);
	if (busy_poll_ns)
		printf(", busy-poll %llu us",
		       (unsigned long long)(busy_poll_ns / 1000));
	printf(": %lu round trips in %.3f s\n", count, (double)t / 1e9);
	printf("  %.0f msg/s  %.2f MB/s\n", count / ((double)t / 1e9),
	       count * (double)size / ((double)t / 1e3));
	printf("  latency us: p50 %.1f  p99 %.1f  p999 %.1f  (min %.1f, mean %.1f, max %.1f)\n",
	       pct(lat, count, 0.5), pct(lat, count, 0.99),
	       pct(lat, count, 0.999), pct(lat, count, 0),
	       sum / (double)count / 1e3, pct(lat, count, 1));
	ret = 0;
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	free(lat);
	return ret;
}

int main(int argc, char **argv)
{
	unsigned long size = 4096, count = 0, warmup = 0, busy = 0, *v;
	struct sockaddr_in sin;
	int i, is_server;

	if (argc < 3 || (strcmp(argv[1], "server") && strcmp(argv[1], "client"))) {
		usage(stderr);
		return 2;
	}
	is_server = !strcmp(argv[1], "server");
	if (parse_addr(argv[2], &sin)) {
		fprintf(stderr, "%s: bad address \"%s\" (IPv4:PORT)\n", prog,
			argv[2]);
		return 2;
	}
	for (i = 3; i < argc; i += 2) {
		unsigned long max = MAX_SIZE;

		if (!strcmp(argv[i], "--size")) {
			v = &size;
		} else if (!strcmp(argv[i], "--count")) {
			v = &count;
		} else if (!strcmp(argv[i], "--warmup")) {
			v = &warmup;
		} else if (!strcmp(argv[i], "--busy-poll")) {
			v = &busy;
			max = BUSY_POLL_MAX;
		} else {
			v = NULL;
		}
		/* --warmup and --busy-poll may be 0 */
		if (!v || i + 1 >= argc || parse_num(argv[i + 1], max, v) ||
		    (v != &warmup && v != &busy && !*v)) {
			usage(stderr);
			return 2;
		}
	}
	busy_poll_ns = (__u64)busy * 1000;
	if (is_server)
		return server(&sin, count ? count : 1);
	return client(&sin, size, count ? count : 10000, warmup);
}
