/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kmsgr selftests - a raw generic netlink socket for the programs that
 * write the "kmsgr" family's requests byte by byte (kmsgr_nl_fuzz,
 * kmsgr_nl_dumps): libnl only resolves the family's id.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#ifndef KMSGR_NL_RAW_H
#define KMSGR_NL_RAW_H

/*
 * A NETLINK_GENERIC socket (its fd) and the family's id in @family; -1
 * after saying why on stderr, prefixed with @prog.
 */
int kt_nl_raw_open(const char *prog, int *family);

#endif /* KMSGR_NL_RAW_H */
