// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr_nl_fuzz - random requests to the "kmsgr" generic netlink family:
 * commands 0 to 15 (known, notifications, unknown; a quarter of the
 * requests one of the family's commands, BDEV_GET included), request
 * flags with and without NLM_F_DUMP, a random genl version and reserved field, and
 * zero to six attributes of random type (0 to 40), length (0 to 40
 * bytes, sometimes a length that overruns the message) and content, some
 * of them the right type and size for an instance or object id (small
 * ids, so that live objects are hit: sessions, listeners, block-device
 * handles).  Every request must be answered (an error ack, a reply or a
 * dump) within a second; the kernel side is checked by the caller (no
 * warning in dmesg).
 *
 *   kmsgr_nl_fuzz [COUNT [SEED]]
 *
 * Prints a summary (with the number of block devices replies showed, so
 * that a caller with one attached can tell that they were reached); exit
 * status 0 when every request got its answer.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <linux/genetlink.h>
#include <linux/netlink.h>

#include <linux/kmsgr_netlink.h>

#include "kmsgr_nl_raw.h"

#define BUF_SIZE	4096

static unsigned int rnd(unsigned int n)
{
	return (unsigned int)random() % n;
}

/* Build one random request for @family into @buf: its length. */
static size_t build(unsigned char *buf, int family, unsigned int seq)
{
	struct nlmsghdr *nlh = (struct nlmsghdr *)buf;
	struct genlmsghdr *g = NLMSG_DATA(nlh);
	size_t len = NLMSG_HDRLEN + GENL_HDRLEN;
	unsigned int i, nattr = rnd(7);

	memset(buf, 0, BUF_SIZE);
	nlh->nlmsg_type = family;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	if (rnd(2))
		nlh->nlmsg_flags |= NLM_F_DUMP;
	nlh->nlmsg_seq = seq;
	g->cmd = rnd(4) ? rnd(16) : 1 + rnd(KMSGR_CMD_MAX);
	g->version = rnd(4) ? KMSGR_GENL_VERSION : rnd(256);
	g->reserved = rnd(8) ? 0 : rnd(65536);

	for (i = 0; i < nattr; i++) {
		struct nlattr *a = (struct nlattr *)(buf + len);
		unsigned int alen, k;

		switch (rnd(4)) {
		case 0:		/* an instance id, small */
			a->nla_type = rnd(3) == 0 ? KMSGR_A_BDEV_INSTANCE :
				      rnd(2) ? KMSGR_A_SESSION_INSTANCE :
					       KMSGR_A_INSTANCE_ID;
			alen = 8;
			break;
		case 1:		/* an object id (or a handle), small */
			a->nla_type = rnd(3) == 0 ? KMSGR_A_BDEV_ID :
						    KMSGR_A_SESSION_ID;
			alen = 4;
			break;
		default:
			a->nla_type = rnd(41) | (rnd(8) ? 0 : NLA_F_NESTED);
			alen = rnd(41);
			break;
		}
		for (k = 0; k < alen; k++)
			buf[len + NLA_HDRLEN + k] = rnd(4) ? 0 : rnd(256);
		if (alen == 8 || alen == 4)
			buf[len + NLA_HDRLEN] = rnd(8);
		a->nla_len = NLA_HDRLEN + alen;
		if (!rnd(16))
			a->nla_len += rnd(64);	/* overruns the message */
		len += NLA_ALIGN(NLA_HDRLEN + alen);
	}
	nlh->nlmsg_len = len;
	return len;
}

/*
 * Read answers until the one that ends request @seq: an error or ack
 * message, or NLMSG_DONE of a dump.  0, or -1 when none came in time.
 * Counts the replies, and in @bdevs those that showed a block device.
 */
static int drain(int fd, unsigned int seq, unsigned long *replies,
		 unsigned long *bdevs)
{
	static unsigned char rbuf[65536];
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	for (;;) {
		struct nlmsghdr *nlh;
		ssize_t r;
		int left;

		if (poll(&pfd, 1, 1000) <= 0)
			return -1;
		r = recv(fd, rbuf, sizeof(rbuf), 0);
		if (r < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			if (errno == ENOBUFS)	/* dropped: count as answered */
				return 0;
			return -1;
		}
		left = (int)r;
		for (nlh = (struct nlmsghdr *)rbuf; NLMSG_OK(nlh, left);
		     nlh = NLMSG_NEXT(nlh, left)) {
			if (nlh->nlmsg_seq != seq)
				continue;
			if (nlh->nlmsg_type == NLMSG_ERROR ||
			    nlh->nlmsg_type == NLMSG_DONE)
				return 0;
			(*replies)++;
			if (nlh->nlmsg_len >= NLMSG_LENGTH(GENL_HDRLEN) &&
			    ((struct genlmsghdr *)NLMSG_DATA(nlh))->cmd ==
			    KMSGR_CMD_BDEV_GET)
				(*bdevs)++;
		}
	}
}

int main(int argc, char **argv)
{
	unsigned long count = argc > 1 ? strtoul(argv[1], NULL, 0) : 10000;
	unsigned int seed = argc > 2 ? strtoul(argv[2], NULL, 0) :
				       (unsigned int)time(NULL);
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	static unsigned char buf[BUF_SIZE];
	unsigned long i, replies = 0, bdevs = 0, lost = 0;
	int family, fd;

	srandom(seed);
	fd = kt_nl_raw_open("kmsgr_nl_fuzz", &family);
	if (fd < 0)
		return 1;

	for (i = 0; i < count; i++) {
		size_t len = build(buf, family, (unsigned int)i + 1);

		if (sendto(fd, buf, len, 0, (struct sockaddr *)&kernel,
			   sizeof(kernel)) < 0) {
			/* a malformed length may be refused at once */
			continue;
		}
		if (drain(fd, (unsigned int)i + 1, &replies, &bdevs))
			lost++;
	}
	close(fd);
	printf("kmsgr_nl_fuzz: seed %u, %lu requests, ", seed, count);
	printf("%lu reply messages (%lu of block devices), %lu unanswered\n",
	       replies, bdevs, lost);
	return lost ? 1 : 0;
}
