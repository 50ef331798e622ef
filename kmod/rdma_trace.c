// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr_rdma - the tracepoints of kmsgr_rdma.ko (trace/kmsgr_rdma_trace.h)
 * are defined here.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#define CREATE_TRACE_POINTS
#include "trace/kmsgr_rdma_trace.h"
