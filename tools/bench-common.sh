# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=sh
#
# tools/bench-common.sh - sourced by the bench tools (bench-tcp, bench-rdma,
# bench-blk, bench-profile, bench-timeline, bench-calls); not run on its
# own.
#
# bench_load_kmsgr: in the guest, load the tree's kmod/kmsgr.ko ($TOP, the
# caller's) after the modules it depends on; exits 1 when one fails.
bench_load_kmsgr() {
	for dep in $(modinfo -F depends "$TOP/kmod/kmsgr.ko" | tr ',' ' '); do
		modprobe "$dep" || exit 1
	done
	insmod "$TOP/kmod/kmsgr.ko" || exit 1
}
#
# --crc-off: kmsgr computes no crc32c at all (module parameter
# kmsgr.fault_no_crc, only in a test build: KMSGR_FAULT=y), so that both
# ends, kmsgr to kmsgr, still agree while neither sums a byte.  It measures
# crc32c's share of a figure; such frames are not msgr2 to a real Ceph peer,
# so a run with it never writes docs/bench.md.

# bench_crc_off TOOL: in the guest, after kmsgr.ko is loaded; exits 1 when
# the module was not built for tests.
bench_crc_off() {
	echo 1 >/sys/module/kmsgr/parameters/fault_no_crc 2>/dev/null || {
		echo "$1: --crc-off needs the test build (KMSGR_FAULT=y tools/$1 --crc-off)" >&2
		exit 1
	}
	echo "# crc32c OFF (kmsgr.fault_no_crc, test build): kmsgr computes no crc; not msgr2 on the wire, kmsgr to kmsgr only"
}
