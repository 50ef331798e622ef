/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kmsgr selftests - netlink helpers shared by kmsgr_rdma_test,
 * kmsgr_fast_test and kmsgr_core_test (libkmsgr's nl.o, on libnl-genl-3):
 * which instance holds a session of this process.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#ifndef KMSGR_NL_UTIL_H
#define KMSGR_NL_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#include "libkmsgr.h"

/*
 * The id of the instance of this process that holds session @session
 * over @transport (KMSGR_XPRT_*; a session its listener accepted if
 * @server), from netlink's session dump; 0: none.
 */
uint64_t kt_nl_instance_of(struct kmsgr_nl *nl, uint32_t session,
			   bool server, uint32_t transport);

#endif /* KMSGR_NL_UTIL_H */
