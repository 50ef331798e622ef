// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr selftests - netlink helpers (see kmsgr_nl_util.h).
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <unistd.h>

#include "kmsgr_nl_util.h"

struct inst_of {
	uint32_t session;	/* in: a session of this process */
	bool server;		/* in: of the listener's instance */
	uint32_t transport;	/* in: KMSGR_XPRT_* */
	uint64_t instance;	/* out: its instance, 0: not found */
};

static int inst_of_one(const struct kmsgr_session_info *s, void *arg)
{
	struct inst_of *q = arg;

	if (s->pid == (uint32_t)getpid() && s->id == q->session &&
	    !s->server == !q->server && s->transport == q->transport)
		q->instance = s->instance;
	return 0;
}

uint64_t kt_nl_instance_of(struct kmsgr_nl *nl, uint32_t session,
			   bool server, uint32_t transport)
{
	struct inst_of q = {
		.session = session,
		.server = server,
		.transport = transport,
	};

	if (kmsgr_nl_sessions(nl, 0, inst_of_one, &q) < 0)
		return 0;
	return q.instance;
}
