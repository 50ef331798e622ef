// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr - the tracepoints of kmsgr.ko (trace/kmsgr_trace.h): defined here,
 * where the structures their callers pass are all visible.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include "kmsgr.h"
#include "session.h"

#define CREATE_TRACE_POINTS
#include "trace/kmsgr_trace.h"
