// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr_nl_dumps - the "kmsgr" family's dump requests, as a program that
 * can be checked (netlink_test.sh):
 *
 *   kmsgr_nl_dumps filters
 *	a dump refuses the attributes it does not filter on: INSTANCE_GET
 *	with an instance id, SESSION_GET, LISTENER_GET and BDEV_GET with an
 *	object id, EINVAL each; and an instance filter of 0 lists nothing
 *	(no instance has id 0; it used to mean "every instance").
 *
 *   kmsgr_nl_dumps namespaces [COUNT]
 *	opens COUNT instances (default 300) and starts an INSTANCE_GET
 *	dump; reads its first reply, then hands the socket to a process in
 *	a new PID namespace, which reads the rest.  The replies it reads
 *	are built while it reads (netlink runs each pass of a dump in the
 *	reader's recvmsg()), yet they must give the PIDs of the requester's
 *	namespace, as the first one did: this process's PID for its own
 *	instances, never 0 (it is not visible in the reader's namespace).
 *	(The uids follow the same path; a new user namespace cannot be made
 *	in the test guest's chroot, so they are not checked here.)
 *
 * Prints what it checked; exit status 0 when everything held.
 *
 * Copyright (C) 2026 The kmsgr authors
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/genetlink.h>
#include <linux/netlink.h>

#include <linux/kmsgr_netlink.h>

#include "kmsgr_nl_raw.h"

#define COMM		"kmsgr_nl_dumps"
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define RBUF_SIZE	65536

static int family;

/* Send a dump request for @cmd with one attribute (@type 0: none). */
static int send_dump(int fd, uint8_t cmd, uint16_t type, uint64_t val,
		     size_t vlen)
{
	struct {
		struct nlmsghdr n;
		struct genlmsghdr g;
		struct nlattr a;
		uint64_t v;
	} req;
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };

	memset(&req, 0, sizeof(req));
	req.n.nlmsg_type = family;
	req.n.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	req.n.nlmsg_seq = cmd;
	req.n.nlmsg_len = NLMSG_HDRLEN + GENL_HDRLEN;
	req.g.cmd = cmd;
	req.g.version = KMSGR_GENL_VERSION;
	if (type) {
		req.a.nla_type = type;
		req.a.nla_len = NLA_HDRLEN + vlen;
		memcpy(&req.v, &val, vlen);	/* little endian */
		req.n.nlmsg_len += NLA_ALIGN(req.a.nla_len);
	}
	if (sendto(fd, &req, req.n.nlmsg_len, 0, (struct sockaddr *)&kernel,
		   sizeof(kernel)) < 0) {
		perror("sendto");
		return -1;
	}
	return 0;
}

/*
 * Read a dump's answer to the end: the number of replies, or the error
 * it ended with (-errno).
 */
static int read_dump(int fd)
{
	static unsigned char buf[RBUF_SIZE];
	int replies = 0;

	for (;;) {
		struct nlmsghdr *nlh;
		ssize_t r = recv(fd, buf, sizeof(buf), 0);
		int left = (int)r;

		if (r < 0) {
			perror("recv");
			return -EIO;
		}
		for (nlh = (struct nlmsghdr *)buf; NLMSG_OK(nlh, left);
		     nlh = NLMSG_NEXT(nlh, left)) {
			if (nlh->nlmsg_type == NLMSG_DONE)
				return replies;
			if (nlh->nlmsg_type == NLMSG_ERROR)
				return ((struct nlmsgerr *)NLMSG_DATA(nlh))->error;
			replies++;
		}
	}
}

static int filters(void)
{
	static const struct {
		const char *what;
		uint8_t cmd;
		uint16_t type;
		uint64_t val;
		size_t vlen;
		int want;	/* replies, or -errno */
	} cases[] = {
		{ "INSTANCE_GET, an instance id", KMSGR_CMD_INSTANCE_GET,
		  KMSGR_A_INSTANCE_ID, 1, 8, -EINVAL },
		{ "SESSION_GET, a session id", KMSGR_CMD_SESSION_GET,
		  KMSGR_A_SESSION_ID, 1, 4, -EINVAL },
		{ "LISTENER_GET, a listener id", KMSGR_CMD_LISTENER_GET,
		  KMSGR_A_LISTENER_ID, 1, 4, -EINVAL },
		{ "BDEV_GET, a handle", KMSGR_CMD_BDEV_GET,
		  KMSGR_A_BDEV_ID, 1, 4, -EINVAL },
		{ "SESSION_GET, instance 0", KMSGR_CMD_SESSION_GET,
		  KMSGR_A_SESSION_INSTANCE, 0, 8, 0 },
		{ "LISTENER_GET, instance 0", KMSGR_CMD_LISTENER_GET,
		  KMSGR_A_LISTENER_INSTANCE, 0, 8, 0 },
		{ "BDEV_GET, instance 0", KMSGR_CMD_BDEV_GET,
		  KMSGR_A_BDEV_INSTANCE, 0, 8, 0 },
	};
	int fd = kt_nl_raw_open(COMM, &family), bad = 0;
	size_t i;

	if (fd < 0)
		return 1;
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		const char *what;
		int got;

		if (send_dump(fd, cases[i].cmd, cases[i].type, cases[i].val,
			      cases[i].vlen))
			return 1;
		got = read_dump(fd);
		what = got < 0 ? strerror(-got) : "replies";
		printf("dump %s: %d (%s), want %d\n", cases[i].what, got, what,
		       cases[i].want);
		if (got != cases[i].want)
			bad++;
	}
	close(fd);
	return bad ? 1 : 0;
}

struct ns_count {
	int batches;	/* recv()s that held one of our instances */
	int ours;	/* replies for our instances */
	int wrong;	/* ... with another PID or uid */
};

/* One recv() of INSTANCE_GET replies: 1 at the dump's end, 0 more, -1. */
static int read_insts(int fd, uint32_t pid, uint32_t uid, struct ns_count *c)
{
	static unsigned char buf[RBUF_SIZE];
	ssize_t r = recv(fd, buf, sizeof(buf), 0);
	int left = (int)r, end = 0, in_batch = 0;
	struct nlmsghdr *nlh;

	if (r < 0) {
		perror("recv");
		return -1;
	}
	for (nlh = (struct nlmsghdr *)buf; NLMSG_OK(nlh, left);
	     nlh = NLMSG_NEXT(nlh, left)) {
		uint32_t got_pid = UINT32_MAX, got_uid = UINT32_MAX;
		const char *comm = "";
		struct nlattr *a;
		int alen;

		if (nlh->nlmsg_type == NLMSG_DONE) {
			end = 1;
			break;
		}
		if (nlh->nlmsg_type == NLMSG_ERROR) {
			fprintf(stderr, "the dump failed: %s\n",
				strerror(-((struct nlmsgerr *)NLMSG_DATA(nlh))->error));
			return -1;
		}
		a = (struct nlattr *)((char *)NLMSG_DATA(nlh) + GENL_HDRLEN);
		alen = (int)nlh->nlmsg_len - NLMSG_HDRLEN - GENL_HDRLEN;
		while (alen >= (int)NLA_HDRLEN && a->nla_len >= NLA_HDRLEN &&
		       a->nla_len <= alen) {
			void *v = (char *)a + NLA_HDRLEN;

			switch (a->nla_type & NLA_TYPE_MASK) {
			case KMSGR_A_INSTANCE_PID:
				memcpy(&got_pid, v, 4);
				break;
			case KMSGR_A_INSTANCE_UID:
				memcpy(&got_uid, v, 4);
				break;
			case KMSGR_A_INSTANCE_COMM:
				comm = v;
				break;
			}
			alen -= NLA_ALIGN(a->nla_len);
			a = (struct nlattr *)((char *)a + NLA_ALIGN(a->nla_len));
		}
		if (strcmp(comm, COMM))
			continue;
		c->ours++;
		in_batch = 1;
		if (got_pid != pid || got_uid != uid) {
			if (c->wrong++ < 3)
				printf("  instance of %s: pid %u uid %u, want pid %u uid %u\n",
				       comm, got_pid, got_uid, pid, uid);
		}
	}
	c->batches += in_batch;
	return end;
}

static int namespaces(int count)
{
	uint32_t pid = (uint32_t)getpid(), uid = (uint32_t)geteuid();
	struct ns_count first = { 0 };
	int fd, i, st, r;
	pid_t child;

	prctl(PR_SET_NAME, COMM);
	for (i = 0; i < count; i++) {
		if (open("/dev/kmsgr", O_RDWR) < 0) {
			perror("open /dev/kmsgr");
			return 1;
		}
	}
	fd = kt_nl_raw_open(COMM, &family);
	if (fd < 0 || send_dump(fd, KMSGR_CMD_INSTANCE_GET, 0, 0, 0))
		return 1;
	r = read_insts(fd, pid, uid, &first);
	printf("first reply, read here: %d of our instances, %d wrong\n",
	       first.ours, first.wrong);
	if (r != 0) {
		printf("the dump ended in its first reply: open more instances\n");
		return 1;
	}

	child = fork();
	if (child < 0) {
		perror("fork");
		return 1;
	}
	if (!child) {
		struct ns_count rest = { 0 };
		pid_t gc;

		/* the reader: PID 1 of a new PID namespace */
		if (unshare(CLONE_NEWPID)) {
			perror("unshare");
			_exit(2);
		}
		gc = fork();
		if (gc < 0)
			_exit(2);
		if (gc) {
			if (waitpid(gc, &st, 0) < 0 || !WIFEXITED(st))
				_exit(2);
			_exit(WEXITSTATUS(st));
		}
		printf("reader: pid %d in a PID namespace of its own\n",
		       getpid());
		do {
			r = read_insts(fd, pid, uid, &rest);
		} while (r == 0);
		printf("the rest, read there: %d of our instances in %d replies, %d wrong\n",
		       rest.ours, rest.batches, rest.wrong);
		fflush(stdout);
		/* a reply built in the reader's recv() needs two batches */
		_exit(r < 0 || rest.wrong || rest.batches < 2 ? 1 : 0);
	}
	if (waitpid(child, &st, 0) < 0 || !WIFEXITED(st)) {
		printf("the reader did not exit normally\n");
		return 1;
	}
	return first.wrong || !first.ours || WEXITSTATUS(st) ? 1 : 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 2 && !strcmp(argv[1], "filters"))
		return filters();
	if (argc >= 2 && !strcmp(argv[1], "namespaces"))
		return namespaces(argc > 2 ? atoi(argv[2]) : 300);
	fprintf(stderr, "usage: kmsgr_nl_dumps filters | namespaces [COUNT]\n");
	return 2;
}
