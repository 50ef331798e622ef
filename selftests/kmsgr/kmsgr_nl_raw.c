// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr selftests - a raw generic netlink socket (see kmsgr_nl_raw.h).
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <stdio.h>
#include <sys/socket.h>

#include <linux/netlink.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>

#include <linux/kmsgr_netlink.h>

#include "kmsgr_nl_raw.h"

int kt_nl_raw_open(const char *prog, int *family)
{
	struct nl_sock *sk = nl_socket_alloc();
	int fd;

	if (!sk || genl_connect(sk) < 0) {
		fprintf(stderr, "%s: cannot open generic netlink\n", prog);
		if (sk)
			nl_socket_free(sk);
		return -1;
	}
	*family = genl_ctrl_resolve(sk, KMSGR_GENL_NAME);
	nl_socket_free(sk);
	if (*family < 0) {
		fprintf(stderr, "%s: no \"%s\" family (module not loaded?)\n",
			prog, KMSGR_GENL_NAME);
		return -1;
	}
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (fd < 0)
		perror(prog);
	return fd;
}
