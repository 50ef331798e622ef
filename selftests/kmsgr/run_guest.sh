#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# run_guest.sh - the kmsgr kselftests, run as root inside the test guest:
#
#   tools/vm/run --rxe --timeout N -- selftests/kmsgr/run_guest.sh
#
# (make check-vm).  Prints ONE TAP stream on stdout: "ok N - ..." and
# "not ok N - ..." numbered in one sequence (the harness programs' results
# are renumbered into it), everything else as "# ..." comments, and the
# plan "1..N" at the END, so a guest that dies half-way never passes.
# Exit status 0 only if every test passed or skipped.
#
# Steps: insmod kmod/kmsgr.ko; modinfo fields; kmsgrctl; each harness
# program (no kernel warnings during each); rmmod; the leak phase (slab
# snapshot, insmod, bad input, kill -9 of an application with sessions and
# sends in flight, rmmod, slab compared); CYCLES load/unload cycles (OPENS
# open/INFO/close in each) with the live-instance counter, the device
# node, lsmod and the slab counters checked; installed like any
# out-of-tree driver (make modules_install and make install into the
# guest's throw-away root, on a small copy of the release's module tree
# for depmod's sake, modprobe with the dependencies, the udev rule,
# modprobe -r, make uninstall); no kernel warnings.  If
# insmod fails, every later test is "not ok": a module that cannot load
# fails the run.  Two Ceph clusters (auth none, cephx) start in the
# background at the beginning for kmsgr_ceph_test.
#
# Environment: KMSGR_NO_SKIP=1 (make check: a skipped test fails),
# KMSGR_CYCLES (default 100), KMSGR_CYCLE_OPENS (default 100),
# KMSGR_NO_CEPH=1 (kmsgr_ceph_test starts its own clusters, if any),
# KMSGR_NO_INSTALL=1 (leave out the install tests),
# KMSGR_SLUB_DEBUG=1 (check that the guest runs under slub_debug),
# KMSGR_KMEMLEAK=1 (a kernel with kmemleak, booted with kmemleak=on: at
# the end, no unreferenced object that kmsgr allocated; make
# check-debug), KMSGR_KO and KMSGR_RDMA_KO (the modules to load),
# KMSGR_NO_CEPH_PEERS=1 (leave out everything that talks to real Ceph
# daemons and tools: ceph -s against kmsgr listeners, kmsgrctl mon against
# a ceph-mon, kmsgr_ceph_test, rados_test.sh, rados_cephx_test.sh, and
# the clusters they need;
# for a quicker run; the same kernel paths run against kmsgr's own
# peers), KMSGR_NVME (tools/vm/run --nvme SIZE sets it, make check's runs
# have --nvme 64M: the block device kmsgr_bdev_test writes all over; the
# harness programs inherit it, and without it that program's device tests
# skip, which KMSGR_NO_SKIP=1 turns into failures; blk_test.sh, the block
# service over tcp and rdma, fails without it; KMSGR_BLK_OPS, its requests
# per transport, 0: not run), KMSGR_NVME_4K (set with it: the second
# namespace, 4 KiB blocks, for kmsgr_bdev4k_test, whose tests skip
# without it), KMSGR_GUEST_PART (below), and
# the knobs of the harness programs (KMSGR_TCP_MSGS, ...; see their heads).
#
# KMSGR_GUEST_PART=1 or 2 runs one half of the suite (unset: all of it).
# A guest runs both its vCPUs on one host thread (tools/vm/run: QEMU's
# multi-threaded TCG can hang it), so make check runs the halves in two
# guests at once, one per host core, each with its own insmod,
# kernel-log checks and plan.  Part 1: the CLI (ceph -s against kmsgr
# listeners included), netlink, logon keys, the block service, the harness
# programs but part 2's, load/unload cycles, installing.  Part 2: the
# clusters of real Ceph daemons (started at boot) and all that uses them
# (kmsgrctl mon, kmsgr_ceph_test, rados, the crc32c and gcm drivers), the
# transport programs (PART2_TESTS) that run while the clusters come up,
# the rdma load, the leak phase with its loads.  Both: insmod, the
# static checks, rmmod, the whole-run kernel-log check.

set -u

TOP=$(cd "$(dirname "$0")/../.." && pwd)
# KMSGR_KO, KMSGR_RDMA_KO: modules built elsewhere (make check-debug's,
# against its debug kernel)
KO=${KMSGR_KO:-$TOP/kmod/kmsgr.ko}
RDMA_KO=${KMSGR_RDMA_KO:-$TOP/kmod/kmsgr_rdma.ko}
BIN=$TOP/.build/selftests/kmsgr
KMSGRCTL=$TOP/tools/kmsgrctl/kmsgrctl
SYSMOD=/sys/module/kmsgr
DEV=/dev/kmsgr
CYCLES=${KMSGR_CYCLES:-100}
# KMSGR_CEPH_CLI_SCALE: the ceph -s tests' time limits times N (make
# check-debug: the ceph command starts slowly on a debug kernel)
CEPH_CLI_SCALE=${KMSGR_CEPH_CLI_SCALE:-1}
OPENS=${KMSGR_CYCLE_OPENS:-100}

# Leak tolerances for CYCLES x OPENS instances.  With the defaults, leaking
# one 64-byte object per instance grows kmalloc by 640 KiB; the noise of an
# idle guest is a few tens of KiB.
KMALLOC_TOL_BYTES=262144
SUNRECLAIM_TOL_KB=384

n=0		# tests reported so far
failed=0	# of which failed
loaded=0	# 1 once insmod succeeded
need_module=0	# 1 after the insmod test: from there, no module = failure

# What a kernel problem looks like in its log ("BUG cache (...)": a SLUB
# debug report).
KWARN='WARNING:|BUG:|BUG [^ ]+ \(|Oops|general protection|Call Trace'

# Harness programs run in the leak phase instead of the main loop.
LEAK_TESTS="kmsgr_badinput_test kmsgr_ioctl_fuzz_test"
# ... and the one that needs the Ceph clusters runs last there.
LATE_TESTS="kmsgr_ceph_test"
# The harness programs of part 2 (KMSGR_GUEST_PART above), with
# LEAK_TESTS and LATE_TESTS; part 1 runs the others.
# kmsgr_tcp_test is in part 1, which would be shorter by about its
# length otherwise.
PART2_TESTS="kmsgr_rdma_test kmsgr_trace_test"
PART=${KMSGR_GUEST_PART:-all}
case $PART in
all | 1 | 2) ;;
*)
	echo "KMSGR_GUEST_PART is 1, 2 or unset, not '$PART'" >&2
	exit 2
	;;
esac
# in_part N: does this run hold part N of the suite?
in_part() {
	[ "$PART" = all ] || [ "$PART" = "$1" ]
}
CEPH_CLUSTER=$TOP/selftests/msgr2/ceph_cluster.sh
# Growth allowed over the leak phase (sessions, TCP, a few processes).
LEAK_KMALLOC_TOL_BYTES=262144
LEAK_SUNRECLAIM_TOL_KB=512
# vmalloc: 2 MiB (measured noise: -288 to +96 kB over the phase), below
# the buffer areas the leak-phase programs set up (the load tests: 64 MiB).
LEAK_VMALLOC_TOL_KB=2048

tmp=$(mktemp -d) || exit 1
ceph_stop() {
	for auth in none cephx; do
		[ -d "$tmp/ceph-$auth" ] &&
			"$CEPH_CLUSTER" stop "$tmp/ceph-$auth" >/dev/null 2>&1
	done
}
pkg_tree=0	# 1 while the install tests' module tree is mounted (pkg_tree_mount)
trap 'ceph_stop; [ "$pkg_tree" = 0 ] || umount "$PKG_MODROOT"; rm -rf "$tmp"' EXIT
export KMSGR_TOP="$TOP"

# tap STATUS DESCRIPTION: report one test; STATUS 0 is a pass.  Once the
# insmod test failed, every later test fails.
tap() {
	if [ "$loaded" -eq 0 ] && [ "$need_module" -eq 1 ]; then
		set -- 1 "$(echo "$2" | sed 's/ *# *SKIP *\(.*\)/ (skipped: \1)/') [module not loaded]"
	fi
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $n - $2"
	else
		failed=$((failed + 1))
		echo "not ok $n - $2"
	fi
}

# comment [FILE]: pass text through as TAP comments.
comment() {
	sed -e 's/^/# /' "$@"
}

# check DESCRIPTION COMMAND [ARG...]: one test, the command's output as
# comments.
check() {
	desc=$1
	shift
	t0=$(date +%s)
	"$@" >"$tmp/check" 2>&1
	rc=$?
	comment "$tmp/check"
	echo "# ($(($(date +%s) - t0)) s; $(($(date +%s) - T_START)) s since the start)"
	tap "$rc" "$desc"
}

# The kernel log is read once, as it grows: fd 7 stays open on /dev/kmsg
# from the start, and klog_read appends the text of each record logged
# since its last call to $tmp/klog, and puts them alone in $tmp/klog.new,
# where a check looks for its mark first.  So no check formats the whole
# log again (dmesg did), and the whole-run check sees every record even
# if the ring wraps.  Records the ring overwrote before they were read
# are not skipped silently: the line KLOG_LOST says so where they were,
# and a check whose span holds it fails.  (Few processes: each costs a
# fifth of a second under TCG.)
KLOG_LOST="kmsgr-selftest: kernel log records lost before they were read"
: >"$tmp/klog"
[ -r /dev/kmsg ] && exec 7</dev/kmsg

klog_read() {
	: >"$tmp/klog.new"
	while :; do
		LC_ALL=C dd bs=64k iflag=nonblock status=none <&7 \
			2>"$tmp/klog.err" |
			sed -e '/^ /d' -e 's/^[^;]*;//' >>"$tmp/klog.new"
		klog_err=
		IFS= read -r klog_err <"$tmp/klog.err"
		case $klog_err in
		*"Broken pipe"*) echo "$KLOG_LOST" >>"$tmp/klog.new" ;;
		*) break ;;
		esac
	done
	cat "$tmp/klog.new" >>"$tmp/klog"
}

# klog: the kernel log so far, as text (what dmesg prints, without times).
klog() {
	klog_read
	cat "$tmp/klog"
}

# mark NAME: the line "kmsgr-selftest: NAME" in the kernel log, where
# kernel_log_since looks from.
mark() {
	echo "kmsgr-selftest: $*" >/dev/kmsg 2>/dev/null || true
}

header_define() {
	sed -n "s/^#define $1[[:space:]][[:space:]]*\"*\([^\"[:space:]]*\)\"*.*/\1/p" "$2"
}

# insmod loads no dependencies (modprobe would, for an installed module):
# the hard ones, then the "pre:" soft ones (gcm for secure mode).
load_deps() {
	for dep in $(modinfo -F depends "$KO" | tr ',' ' '); do
		modprobe "$dep" || return 1
	done
	for dep in $(modinfo -F softdep "$KO" | sed 's/post:.*//; s/pre://g'); do
		modprobe "$dep" || return 1
	done
}

modinfo_is() {
	got=$(modinfo -F "$1" "$KO") || return 1
	[ "$got" = "$2" ] || { echo "modinfo $1: \"$got\", expected \"$2\""; return 1; }
}

modinfo_has() {
	got=$(modinfo -F "$1" "$KO") || return 1
	[ -n "$got" ] || { echo "modinfo $1 is empty"; return 1; }
	echo "$1: $got"
}

# kmsgr_rdma.ko: its RDMA dependencies, then the module; the transport is
# registered (kmsgrctl info lists rdma) and the device rxe0 was seen.
rdma_deps() {
	for dep in $(modinfo -F depends "$RDMA_KO" | tr ',' ' ') rdma_cm; do
		[ "$dep" = kmsgr ] || modprobe "$dep" || return 1
	done
}

# A value at load for a read-only counter of kmsgr_rdma is refused, and
# the module is not left half loaded (it had no ->set: the kernel called
# NULL, an oops holding the module's load for good).
rdma_ro_param_refused() {
	rdma_deps || return 1
	if insmod "$RDMA_KO" pinned_bytes=0 2>"$tmp/ro.err"; then
		echo "insmod pinned_bytes=0 succeeded"
		rmmod kmsgr_rdma
		return 1
	fi
	cat "$tmp/ro.err"
	grep -q "Operation not permitted" "$tmp/ro.err" || return 1
	! [ -e /sys/module/kmsgr_rdma ] ||
		{ echo "/sys/module/kmsgr_rdma is there"; return 1; }
}

rdma_load() {
	rdma_deps || return 1
	insmod "$RDMA_KO" || return 1
	"$KMSGRCTL" info | grep -q ' rdma' ||
		{ echo "kmsgrctl info does not list rdma"; return 1; }
	klog | grep -q "kmsgr_rdma: device ${KMSGR_RXE:-rxe0} added" ||
		{ echo "no 'device ${KMSGR_RXE:-rxe0} added' in the log"; return 1; }
}

# kmsgr_rdma.ko unloads with nothing left mapped.
rdma_unload() {
	pinned=$(cat /sys/module/kmsgr_rdma/parameters/pinned_bytes) || return 1
	[ "$pinned" = 0 ] || { echo "pinned_bytes $pinned before rmmod"; return 1; }
	rmmod kmsgr_rdma
}

module_state_ok() {
	[ -c "$DEV" ] || { echo "$DEV is not a character device"; return 1; }
	ls -l "$DEV"
	[ "$(cat "$SYSMOD/version")" = "$VERSION" ] ||
		{ echo "$SYSMOD/version != $VERSION"; return 1; }
}

kmsgrctl_json() {
	out=$("$KMSGRCTL" -j info) || return 1
	echo "$out"
	case $out in
	*"\"abi_version\":$ABI,"*) return 0 ;;
	*) echo "no \"abi_version\":$ABI in the output"; return 1 ;;
	esac
}

# mem_avail: the guest's MemAvailable in MiB (a suite that starves the
# guest of memory shows in the harness programs' exit lines)
mem_avail() {
	awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo
}

# run_harness PROGRAM: run one kselftest_harness program and renumber its
# results into our stream.
run_harness() {
	prog=$1
	name=${prog##*/}
	if [ ! -x "$prog" ]; then
		tap 1 "$name: not built (make -C selftests/kmsgr)"
		return
	fi
	mark "$name"
	t0=$(date +%s)
	timeout "${HARNESS_TIMEOUT:-600}" "$prog" >"$tmp/out" 2>&1
	prc=$?
	echo "# $name: exit status $prc after $(($(date +%s) - t0)) s ($(($(date +%s) - T_START)) s since the start; $(mem_avail) MiB available)"

	plan=0 seen=0 pfail=0 cur=""
	while IFS= read -r line; do
		case $line in
		"TAP version"*)
			echo "# $name: $line" ;;
		1..*)
			plan=${line#1..}
			plan=${plan%% *}
			echo "# $name: $line" ;;
		"#  RUN "*)
			cur=${line#"#  RUN"}
			cur=${cur#"${cur%%[! ]*}"}
			cur=${cur% ...}
			echo "$line" ;;
		"ok "* | "not ok "*)
			seen=$((seen + 1))
			st=0
			case $line in "not ok "*) st=1 ;; esac
			rest=${line#*ok }
			case $rest in
			*" "*) rest=${rest#* } ;;
			*) rest="" ;;
			esac
			# 6.1's harness leaves the name out of SKIP lines.
			case $rest in
			"" | "#"*) rest="$cur $rest" ;;
			esac
			# make check runs everything: a skip there is a failure
			case $rest in
			*"# SKIP"* | *"# skip"*)
				if [ "${KMSGR_NO_SKIP:-0}" = 1 ]; then
					st=1
					rest=$(echo "$rest" | sed 's/ *# *[Ss][Kk][Ii][Pp] */ (skipped, KMSGR_NO_SKIP=1): /')
				fi ;;
			esac
			[ "$st" -ne 0 ] && pfail=$((pfail + 1))
			tap "$st" "$name: $rest" ;;
		"#"*)
			echo "$line" ;;
		*)
			echo "# $line" ;;
		esac
	done <"$tmp/out"

	if [ "$plan" -eq 0 ]; then
		tap 1 "$name: printed no plan, exit status $prc"
	elif [ "$seen" -lt "$plan" ]; then
		tap 1 "$name: $((plan - seen)) of $plan tests did not report, exit status $prc"
	elif [ "$prc" -ne 0 ] && [ "$pfail" -eq 0 ]; then
		tap 1 "$name: exit status $prc"
	fi
	# a failure: what kmsgr logged meanwhile (why its sessions ended)
	if [ "$pfail" -ne 0 ] || [ "$prc" -ne 0 ]; then
		echo "# $name failed: the last kernel log lines of kmsgr since it started:"
		klog_read
		sed -n "/^kmsgr-selftest: $name\$/,\$p" "$tmp/klog" |
			grep 'kmsgr' | tail -n 40 | comment
	fi
	kernel_quiet_since "$name"
}

# kmemleak_clean: a scan (two: an object is reported only once it was
# seen unreferenced twice) finds no unreferenced object with one of
# kmsgr's functions in its allocation backtrace, or an address no module
# holds any more (kmsgr unloaded: its frames print as bare addresses)
kmemleak_clean() {
	f=/sys/kernel/debug/kmemleak
	[ -w $f ] || { echo "$f is not writable (a kernel with kmemleak, booted with kmemleak=on)"; return 1; }
	echo scan >$f && sleep 5 && echo scan >$f || return 1
	cat $f >"$tmp/kmemleak"
	echo "$(grep -c '^unreferenced object' "$tmp/kmemleak") unreferenced objects in all"
	# kmsgr's frames end in " [kmsgr]" or " [kmsgr_rdma]" (not its
	# test programs' comm); an unloaded module's are "[<...>] 0x..."
	awk 'function ours(b) { return b ~ /\[kmsgr(_rdma)?\]|\] 0x[0-9a-f]+\n/ }
		/^unreferenced object/ { if (ours(b)) print b; b = "" }
		{ b = b $0 "\n" }
		END { if (ours(b)) print b }' "$tmp/kmemleak" >"$tmp/kmemleak.kmsgr"
	k=$(grep -c '^unreferenced object' "$tmp/kmemleak.kmsgr")
	echo "$k of them allocated by kmsgr (or by a module unloaded since)"
	head -n 200 "$tmp/kmemleak.kmsgr"
	[ "$k" -eq 0 ]
}
# kernel_quiet_since NAME: one test, no kernel warning logged since the
# marker NAME (mark) was written.
kernel_quiet_since() {
	kernel_log_since "kmsgr-selftest: $1\$" "$KWARN"
	tap $? "$1: no kernel warnings"
}

# kernel_log_since MARK PATTERN: print what the kernel logged from the line
# MARK (a regex) on that matches PATTERN; 0 when nothing did.  A log that
# does not hold MARK (a failed mark) checked nothing: that fails too,
# saying so; so does a span that lost records (KLOG_LOST).
kernel_log_since() {
	klog_read
	# a mark written since the last read, else an older one ("start")
	sed -n "/$1/,\$p" "$tmp/klog.new" >"$tmp/kspan"
	[ -s "$tmp/kspan" ] || sed -n "/$1/,\$p" "$tmp/klog" >"$tmp/kspan"
	if ! [ -s "$tmp/kspan" ]; then
		echo "# the kernel log does not hold the mark \"$1\": nothing was checked"
		return 1
	fi
	grep -E -e "$2" -e "^$KLOG_LOST\$" "$tmp/kspan" >"$tmp/kwarn"
	[ $? -eq 1 ] && return 0	# nothing matched (2: grep failed)
	comment "$tmp/kwarn"
	return 1
}

# in_list WORD LIST: is WORD one of the words of LIST?
in_list() {
	case " $2 " in
	*" $1 "*) return 0 ;;
	*) return 1 ;;
	esac
}

# Start the Ceph clusters of kmsgr_ceph_test in the background (they take
# a while under TCG); ceph_wait waits for them and exports their dirs.
ceph_start() {
	[ "${KMSGR_NO_CEPH:-0}" = 1 ] && return
	[ "${KMSGR_NO_CEPH_PEERS:-0}" = 1 ] && return
	command -v ceph-mon >/dev/null 2>&1 || return
	# the none cluster gets three OSDs and pool "kmsgr" (size 2) for
	# rados_test.sh
	{
		"$CEPH_CLUSTER" start none "$tmp/ceph-none" &&
			{ [ "${KMSGR_RADOS_OBJS:-1000}" = 0 ] ||
			  "$CEPH_CLUSTER" osds "$tmp/ceph-none" 3 kmsgr 2; }
	} >"$tmp/ceph-none.log" 2>&1 &
	ceph_none=$!
	# the cephx cluster gets one OSD and pool "kmsgr" for
	# rados_cephx_test.sh
	{
		"$CEPH_CLUSTER" start cephx "$tmp/ceph-cephx" &&
			{ [ "${KMSGR_RADOS_OBJS:-1000}" = 0 ] ||
			  "$CEPH_CLUSTER" osds "$tmp/ceph-cephx" 1 kmsgr 1; }
	} >"$tmp/ceph-cephx.log" 2>&1 &
	ceph_cephx=$!
}

ceph_wait() {
	ceph_t0=$(date +%s)
	if [ -n "$ceph_none" ]; then
		if wait "$ceph_none"; then
			export KMSGR_CEPH_NONE="$tmp/ceph-none"
		else
			echo "# ceph_cluster.sh start none failed:"
			comment "$tmp/ceph-none.log"
		fi
	fi
	if [ -n "$ceph_cephx" ]; then
		if wait "$ceph_cephx"; then
			export KMSGR_CEPH_CEPHX="$tmp/ceph-cephx"
		else
			echo "# ceph_cluster.sh start cephx failed:"
			comment "$tmp/ceph-cephx.log"
		fi
	fi
	echo "# the Ceph clusters: waited $(($(date +%s) - ceph_t0)) s for them ($(($(date +%s) - T_START)) s since the start)"
}

# kmsgrctl mon finds the monitor and the key as the ceph CLI does: the
# conf's mon host and keyring (-c, CEPH_CONF), auth none where the conf
# says so, --id, -m with a host name; a conf that says auth none against a
# cephx mon is refused.
mon_conf_test() {
	[ -n "${KMSGR_CEPH_CEPHX:-}" ] && [ -n "${KMSGR_CEPH_NONE:-}" ] ||
		{ echo "the Ceph clusters did not start"; return 1; }
	cx=$KMSGR_CEPH_CEPHX/ceph.conf
	port=$(sed -n 's/^mon host = v2:127\.0\.0\.1:\([0-9]*\)$/\1/p' "$cx")
	[ -n "$port" ] || { echo "no mon host in $cx"; return 1; }
	out=$("$KMSGRCTL" mon ping -c "$cx") || { echo "$out"; return 1; }
	echo "$out"
	case $out in
	"mon a at v2:127.0.0.1:$port: "*) ;;
	*) echo "not the conf's monitor address"; return 1 ;;
	esac
	"$KMSGRCTL" mon version -c "$KMSGR_CEPH_NONE/ceph.conf" osdmap ||
		return 1
	CEPH_CONF=$cx "$KMSGRCTL" mon map --id admin --secure || return 1
	"$KMSGRCTL" mon ping -m "localhost:$port" \
		-k "$KMSGR_CEPH_CEPHX/keyring" || return 1
	# an address vector: its v2 entry is dialled (nothing listens on
	# the v1 one), with cephx; with auth none, refused by the mon
	vec="[v2:127.0.0.1:$port/0,v1:127.0.0.1:6789/0]"
	"$KMSGRCTL" mon ping -m "$vec" -k "$KMSGR_CEPH_CEPHX/keyring" \
		--timeout 20 || return 1
	"$KMSGRCTL" mon ping -m "$vec" -c "$KMSGR_CEPH_NONE/ceph.conf" \
		--timeout 5 >"$tmp/monvec" 2>&1 && {
		echo "auth none was accepted by a cephx mon"; return 1; }
	cat "$tmp/monvec"
	grep -q "connecting to 127.0.0.1:$port: .*authentication refused" \
		"$tmp/monvec"
}

# The session counter of the module, polled until it reads 0 (the
# teardown of killed processes' instances may finish after their exit).
instances_drain() {
	i=0
	while [ "$(cat "$SYSMOD/parameters/instances")" != 0 ]; do
		i=$((i + 1))
		if [ "$i" -gt 200 ]; then
			echo "instances reads $(cat "$SYSMOD/parameters/instances") 20 s after the processes died"
			return 1
		fi
		sleep 0.1
	done
}

# kill -9 of kmsgr_crash (two processes with lossless sessions, sends in
# flight and full receive pools) once both said "ready".
crash_test() {
	"$BIN/kmsgr_crash" >"$tmp/crash" 2>&1 &
	cpid=$!
	i=0
	while [ "$(grep -c '^ready ' "$tmp/crash")" -lt 2 ]; do
		i=$((i + 1))
		if [ "$i" -gt 600 ] || ! kill -0 "$cpid" 2>/dev/null; then
			cat "$tmp/crash"
			echo "kmsgr_crash did not get ready"
			kill -9 "$cpid" 2>/dev/null
			return 1
		fi
		sleep 0.1
	done
	cat "$tmp/crash"
	echo "instances before the kill: $(cat "$SYSMOD/parameters/instances")"
	for p in $(sed -n 's/^ready //p' "$tmp/crash"); do
		kill -9 "$p" || return 1
	done
	wait "$cpid"
	wrc=$?
	# the server (the parent) died of the SIGKILL, not of old age
	[ "$wrc" -eq 137 ] || { echo "kmsgr_crash exited $wrc"; return 1; }
	instances_drain
}

# Bytes in kmalloc caches (active objects x object size).
kmalloc_bytes() {
	awk '/^kmalloc-/ { b += $2 * $4 } END { print b + 0 }' /proc/slabinfo
}

sunreclaim_kb() {
	awk '/^SUnreclaim:/ { print $2 }' /proc/meminfo
}

# vmalloc space in use (buffer areas, rings, large kvmalloc; the module's
# own text while it is loaded).
vmalloc_kb() {
	awk '/^VmallocUsed:/ { print $2 }' /proc/meminfo
}

# The cycles load a copy without debug sections (same code, less to read
# over 9p and parse): it keeps 100 cycles near half a minute under TCG.
CYCLE_KO=$tmp/kmsgr.ko
objcopy --strip-debug "$KO" "$CYCLE_KO" 2>/dev/null || cp "$KO" "$CYCLE_KO"

# One load/unload cycle; stops at the first problem and says which.
# Returns 0, or 1 (load/use/unload failed), 2 (instances counter not 0
# before unload), 3 (node left after unload).
cycle() {
	insmod "$CYCLE_KO" || { echo "insmod failed"; return 1; }
	if ! "$BIN/kmsgr_open_loop" "$OPENS"; then
		echo "kmsgr_open_loop $OPENS failed"
		rmmod kmsgr
		return 1
	fi
	inst=$(cat "$SYSMOD/parameters/instances")
	if [ "$inst" != 0 ]; then
		echo "instances reads \"$inst\" before unload"
		rmmod kmsgr
		return 2
	fi
	rmmod kmsgr || { echo "rmmod failed"; return 1; }
	[ ! -e "$DEV" ] || { echo "$DEV still exists after rmmod"; return 3; }
	return 0
}

# cycles COUNT: run COUNT cycles, stop at the first failure; sets cycle_rc
# and cycles_done.
cycles() {
	cycles_done=0
	cycle_rc=0
	while [ "$cycles_done" -lt "$1" ]; do
		cycle >"$tmp/cycle" 2>&1
		cycle_rc=$?
		if [ "$cycle_rc" -ne 0 ]; then
			echo "# cycle $((cycles_done + 1)):"
			comment "$tmp/cycle"
			return
		fi
		cycles_done=$((cycles_done + 1))
	done
}

# stopped PID SECS: wait up to SECS for PID to exit; if it does not, show
# where it is stuck, kill it and fail.
stopped() {
	i=0
	while kill -0 "$1" 2>/dev/null; do
		i=$((i + 1))
		if [ "$i" -gt $(($2 * 10)) ]; then
			echo "process $1 did not exit in $2 s; kernel stack:"
			cat "/proc/$1/stack" 2>&1
			kill -9 "$1"
			return 1
		fi
		sleep 0.1
	done
}

# listening FILE PID...: wait until each kmsgrctl listener PID has said
# "listening on" (its socket is bound; stdout is line-buffered) in FILE,
# the FILE of the next PID after it, and so on: polled every 0.1 s, for
# up to 10 s each (a fixed "sleep 1" was there).  A listener that died or
# never said it fails, like the client that follows would.
listening() {
	while [ $# -ge 2 ]; do
		i=0
		until grep -q '^listening on' "$1" 2>/dev/null; do
			i=$((i + 1))
			if ! kill -0 "$2" 2>/dev/null || [ "$i" -gt 100 ]; then
				echo "listener $2 is not listening:"
				cat "$1"
				return 1
			fi
			sleep 0.1
		done
		shift 2
	done
}

# kmsgrctl session connect --lossless to a port where nothing listens:
# the kernel would dial again and again, but a refused first connection
# fails the command at once (exit 1, "Connection refused"), not after its
# --timeout of 60 s.
connect_refused_test() {
	t0=$(date +%s)
	timeout 120 "$KMSGRCTL" session connect --lossless --timeout 60 \
		127.0.0.1:1 >"$tmp/refused" 2>&1
	rc=$?
	dt=$(($(date +%s) - t0))
	cat "$tmp/refused"
	echo "exit $rc in $dt s"
	[ "$rc" -eq 1 ] && [ "$dt" -lt 30 ] &&
		grep -q "Connection refused" "$tmp/refused"
}

# listen_addr FILE: the address a kmsgrctl listener said it listens on
listen_addr() {
	sed -n 's/^listening on \([^ ]*\) transport .*/\1/p' "$1"
}

# kmsgrctl's echo listener under sustained load: KMSGR_ECHO_MSGS (20000)
# messages from one client, every echo verified, both processes exit 0
# (the listener used to die of an EBUSY from kmsgr_wait_cqe()).
echo_listener_test() {
	msgs=${KMSGR_ECHO_MSGS:-20000}
	"$KMSGRCTL" session listen --echo --time 600 127.0.0.1:3312 \
		>"$tmp/echo-l" 2>&1 &
	lpid=$!
	listening "$tmp/echo-l" "$lpid"
	timeout 300 "$KMSGRCTL" session connect --send "$msgs" --size 100 \
		--verify-echo --timeout 60 127.0.0.1:3312 >"$tmp/echo-c" 2>&1
	crc=$?
	kill -TERM "$lpid"
	stopped "$lpid" 30
	wait "$lpid"
	lrc=$?
	cat "$tmp/echo-l" "$tmp/echo-c"
	echo "listener exit $lrc, client exit $crc"
	[ "$lrc" -eq 0 ] && [ "$crc" -eq 0 ] &&
		grep -q "^received $msgs messages .* echoed $msgs," "$tmp/echo-l" &&
		grep -q "$msgs echoes, 0 bad" "$tmp/echo-c"
}

# session listen --echo --count N: N messages echoed, then it stops by
# itself although its client keeps sending (the rest are released, not
# echoed: echoes started past N used to keep it going).
echo_count_test() {
	"$KMSGRCTL" session listen --echo --count 10 --time 300 127.0.0.1:0 \
		>"$tmp/cnt-l" 2>&1 &
	lpid=$!
	listening "$tmp/cnt-l" "$lpid" || return 1
	addr=$(listen_addr "$tmp/cnt-l")
	"$KMSGRCTL" session connect --send 5000 --size 100 --timeout 120 \
		"$addr" >"$tmp/cnt-c" 2>&1 &
	cpid=$!
	stopped "$lpid" 60
	src=$?
	wait "$lpid"
	lrc=$?
	kill "$cpid" 2>/dev/null
	wait "$cpid"
	cat "$tmp/cnt-l"
	echo "listener exit $lrc"
	[ "$src" -eq 0 ] && [ "$lrc" -eq 0 ] &&
		grep -q "^received [0-9]* messages .* echoed 10, 0 dropped" \
			"$tmp/cnt-l"
}

# crc32c_driver: each crc32c implementation of the kernel (/proc/crypto),
# forced at load, reads back and carries a command to the real ceph-mon
# (which checks every frame's crc32c); a name that is none is refused;
# left empty, the module times them, says so and keeps one of them.
crc32c_driver_test() {
	[ -n "${KMSGR_CEPH_NONE:-}" ] || { echo "the Ceph cluster did not start"; return 1; }
	drivers=$(awk '$1 == "name" { n = $3 } $1 == "driver" && n == "crc32c" { print $3 }' /proc/crypto | sort -u)
	[ -n "$drivers" ] || { echo "no crc32c in /proc/crypto"; return 1; }
	for d in $drivers; do
		insmod "$KO" crc32c_driver="$d" || return 1
		got=$(cat "$SYSMOD/parameters/crc32c_driver")
		"$KMSGRCTL" mon version -c "$KMSGR_CEPH_NONE/ceph.conf" osdmap
		mrc=$?
		rmmod kmsgr || return 1
		[ "$got" = "$d" ] || { echo "crc32c_driver=$d reads back \"$got\""; return 1; }
		[ "$mrc" = 0 ] || { echo "crc32c_driver=$d: kmsgrctl mon version failed"; return 1; }
		echo "crc32c_driver=$d: the mon answered"
	done
	if insmod "$KO" crc32c_driver=no-such-crc 2>/dev/null; then
		rmmod kmsgr
		echo "crc32c_driver=no-such-crc was accepted"
		return 1
	fi
	# refused for the name, not for anything else
	klog | tail -n 20 | grep 'crc32c_driver=no-such-crc: no such crc32c implementation' ||
		{ echo "crc32c_driver=no-such-crc: not refused for its name"; return 1; }
	insmod "$KO" || return 1
	got=$(cat "$SYSMOD/parameters/crc32c_driver")
	rmmod kmsgr || return 1
	echo "auto: $got; $(klog | grep 'kmsgr: crc32c: ' | tail -n 1)"
	echo "$drivers" | grep -qx "$got"
}

# gcm_driver: the crypto API's AES-GCM and the generic one, each forced at
# load, read back and carry a secure-mode session to the real cephx
# ceph-mon (which decrypts and checks every frame); a bad name is refused;
# left empty, the module keeps one that works.
gcm_driver_test() {
	[ -n "${KMSGR_CEPH_CEPHX:-}" ] || { echo "the Ceph cluster did not start"; return 1; }
	for d in "gcm(aes)" "gcm_base(ctr(aes-generic),ghash-generic)" ""; do
		insmod "$KO" ${d:+gcm_driver="$d"} || return 1
		got=$(cat "$SYSMOD/parameters/gcm_driver")
		CEPH_CONF=$KMSGR_CEPH_CEPHX/ceph.conf "$KMSGRCTL" mon map --id admin --secure >/dev/null
		mrc=$?
		rmmod kmsgr || return 1
		[ -n "$got" ] || { echo "gcm_driver=$d reads back nothing"; return 1; }
		[ -z "$d" ] || [ "$got" = "$d" ] || { echo "gcm_driver=$d reads back \"$got\""; return 1; }
		[ "$mrc" = 0 ] || { echo "gcm_driver=$d ($got): kmsgrctl mon map --secure failed"; return 1; }
		echo "gcm_driver=${d:-(auto)}: $got; the mon answered in secure mode"
	done
	echo "$(klog | grep 'kmsgr: gcm(aes): ' | tail -n 1)"
	if insmod "$KO" gcm_driver=no-such-gcm 2>/dev/null; then
		rmmod kmsgr
		echo "gcm_driver=no-such-gcm was accepted"
		return 1
	fi
	klog | tail -n 20 | grep 'gcm_driver=no-such-gcm: no such AES-GCM implementation' ||
		{ echo "gcm_driver=no-such-gcm: not refused for its name"; return 1; }
}

# Two keyrings with a fresh client.admin key each: $tmp/NAME.keyring and
# $tmp/NAME-other.keyring (a key the listener does not know).
keyrings() {
	command -v ceph-authtool >/dev/null 2>&1 || { echo "no ceph-authtool (make deps)"; return 1; }
	ceph-authtool --create-keyring "$tmp/$1.keyring" --gen-key \
		-n client.admin >/dev/null &&
		ceph-authtool --create-keyring "$tmp/$1-other.keyring" \
			--gen-key -n client.admin >/dev/null
}

# kmsgrctl bench against an echo listener: a ping-pong and a lossless
# one-way run complete every message and report rate, latency and CPU
# per message, as text and as JSON; so do both again with 4 sessions
# on 2 threads (400 messages in all, 100 per session).
bench_test() {
	keyrings bench || return 1
	"$KMSGRCTL" session listen --echo --time 300 127.0.0.1:3313 \
		>"$tmp/bench-l" 2>&1 &
	lpid=$!
	# the cephx listener spins on its ring (session listen --busy-poll)
	"$KMSGRCTL" session listen --echo --time 300 --busy-poll 100 \
		--keyring "$tmp/bench.keyring" 127.0.0.1:3315 \
		>"$tmp/bench-lcx" 2>&1 &
	cxpid=$!
	listening "$tmp/bench-l" "$lpid" "$tmp/bench-lcx" "$cxpid"
	timeout 120 "$KMSGRCTL" bench --pattern pingpong --count 300 \
		--warmup 20 127.0.0.1:3313 >"$tmp/bench-p" 2>&1
	prc=$?
	timeout 120 "$KMSGRCTL" -j bench --lossless --depth 8 --size 65536 \
		--count 300 127.0.0.1:3313 >"$tmp/bench-o" 2>&1
	orc=$?
	timeout 120 "$KMSGRCTL" bench --pattern pingpong --sessions 4 \
		--threads 2 --count 400 --warmup 10 127.0.0.1:3313 \
		>"$tmp/bench-mp" 2>&1
	mprc=$?
	timeout 120 "$KMSGRCTL" -j bench --lossless --depth 4 --size 16384 \
		--sessions 4 --threads 2 --count 400 127.0.0.1:3313 \
		>"$tmp/bench-mo" 2>&1
	morc=$?
	# busy-poll on both workers' instances
	timeout 120 "$KMSGRCTL" bench --pattern pingpong --busy-poll 50 \
		--sessions 2 --threads 2 --count 300 --warmup 10 \
		127.0.0.1:3313 >"$tmp/bench-bp" 2>&1
	bprc=$?
	# the bench process's own CPU: spinning in its ENTER is system time
	timeout 120 "$KMSGRCTL" -j bench --pattern pingpong --busy-poll 1000 \
		--count 1000 --warmup 10 127.0.0.1:3313 >"$tmp/bench-sc" 2>&1
	scrc=$?
	# cephx: secure ping-pong on two workers, crc one-way, a wrong key
	timeout 120 "$KMSGRCTL" -j bench --pattern pingpong --secure \
		--keyring "$tmp/bench.keyring" --sessions 2 --threads 2 \
		--count 200 --warmup 10 127.0.0.1:3315 >"$tmp/bench-cs" 2>&1
	csrc=$?
	timeout 120 "$KMSGRCTL" bench --keyring "$tmp/bench.keyring" \
		--name client.admin --size 16384 --depth 8 --count 200 \
		127.0.0.1:3315 >"$tmp/bench-cc" 2>&1
	ccrc=$?
	timeout 120 "$KMSGRCTL" bench --keyring "$tmp/bench-other.keyring" \
		--secure --count 10 127.0.0.1:3315 >"$tmp/bench-cb" 2>&1
	cbrc=$?
	# usage errors: exit status 2 before any session
	"$KMSGRCTL" bench --busy-poll 10001 127.0.0.1:3313 \
		>"$tmp/bench-u1" 2>&1
	u1rc=$?
	"$KMSGRCTL" bench --secure 127.0.0.1:3315 >"$tmp/bench-u2" 2>&1
	u2rc=$?
	kill -TERM "$lpid" "$cxpid"
	stopped "$lpid" 30
	stopped "$cxpid" 30
	wait "$lpid"
	lrc=$?
	wait "$cxpid"
	cxrc=$?
	cat "$tmp/bench-p" "$tmp/bench-o" "$tmp/bench-mp" "$tmp/bench-mo" \
		"$tmp/bench-bp" "$tmp/bench-cs" "$tmp/bench-cc" \
		"$tmp/bench-cb" "$tmp/bench-u1" "$tmp/bench-u2" "$tmp/bench-sc"
	echo "listener exit $lrc, pingpong exit $prc, oneway exit $orc," \
		"4 sessions: pingpong exit $mprc, oneway exit $morc," \
		"busy-poll exit $bprc, own CPU exit $scrc; cephx listener exit $cxrc," \
		"secure exit $csrc, crc exit $ccrc, wrong key exit $cbrc;" \
		"usage errors exit $u1rc $u2rc"
	[ "$lrc" -eq 0 ] && [ "$prc" -eq 0 ] && [ "$orc" -eq 0 ] &&
		[ "$mprc" -eq 0 ] && [ "$morc" -eq 0 ] && [ "$bprc" -eq 0 ] &&
		[ "$scrc" -eq 0 ] &&
		python3 -c 'import json, sys
j = json.load(open(sys.argv[1]))
c = j["cpu_us_per_msg"]
print("own CPU per round trip: user %.1f us, sys %.1f us, mean latency %.1f us" %
      (c["self_user"], c["self_sys"], j["latency_us"]["mean"]))
# it spins up to 1000 us per wait (then sleeps): a slow round trip
# is not all system time
sys.exit(0 if c["self_sys"] >= 0.3 * min(j["latency_us"]["mean"], 1000) and
         c["self_sys"] > c["self_user"] else 1)' "$tmp/bench-sc" &&
		[ "$cxrc" -eq 0 ] && [ "$csrc" -eq 0 ] && [ "$ccrc" -eq 0 ] &&
		[ "$cbrc" -eq 1 ] && [ "$u1rc" -eq 2 ] && [ "$u2rc" -eq 2 ] &&
		grep -q ": 300 messages in " "$tmp/bench-p" &&
		grep -q "latency us: p50 [0-9]" "$tmp/bench-p" &&
		grep -q "cpu us/msg: kernel [0-9]" "$tmp/bench-p" &&
		grep -q '"messages":300,' "$tmp/bench-o" &&
		grep -q '"auth":"none","mode":"crc","busy_poll_us":0,' \
			"$tmp/bench-o" &&
		grep -q '"cpu_us_per_msg":{"kernel_all":[0-9]' "$tmp/bench-o" &&
		grep -q "depth 1, sessions 4, threads 2: 400 messages in " \
			"$tmp/bench-mp" &&
		grep -q "latency us: p50 [0-9]" "$tmp/bench-mp" &&
		grep -q "cpu us/msg: kernel [0-9]" "$tmp/bench-mp" &&
		grep -q '"sessions":4,"threads":2,' "$tmp/bench-mo" &&
		grep -q '"messages":400,' "$tmp/bench-mo" &&
		grep -q '"cpu_us_per_msg":{"kernel_all":[0-9]' "$tmp/bench-mo" &&
		grep -q "depth 1, sessions 2, threads 2, busy-poll 50 us: 300 messages in " \
			"$tmp/bench-bp" &&
		grep -q "latency us: p50 [0-9]" "$tmp/bench-bp" &&
		grep -q '"sessions":2,"threads":2,' "$tmp/bench-cs" &&
		grep -q '"auth":"cephx","mode":"secure","busy_poll_us":0,"messages":200,' \
			"$tmp/bench-cs" &&
		grep -q "depth 8, auth cephx, mode crc: 200 messages in " \
			"$tmp/bench-cc" &&
		grep -q "authentication refused" "$tmp/bench-cb" &&
		grep -q 'bad --busy-poll "10001"' "$tmp/bench-u1" &&
		grep -q -- "--secure needs cephx" "$tmp/bench-u2" &&
		grep -Eq '^received [1-9][0-9]* messages' "$tmp/bench-lcx"
}

# kmsgrctl bench, 2 sessions on 1 thread: session 1's connection is
# killed (ss -K) while session 2 connects, its CONNECT held 6 s by the
# fault point KMSGR_FAULT_CONNECT_ID (bit 12; before the dial: a process
# start takes a few 100 ms in the emulated guest).  Session
# 1's loss, which ctl_conn_open() set aside meanwhile, reaches the worker
# and bench names it (it was left behind, and the worker later failed on
# a send to the dead session).
bench_early_close_test() {
	fp=$SYSMOD/parameters/fault_points
	[ -w "$fp" ] || { echo "no fault points: not a KMSGR_FAULT=y build"; return 1; }
	"$KMSGRCTL" session listen --echo --time 300 127.0.0.1:0 \
		>"$tmp/bec-l" 2>&1 &
	lpid=$!
	listening "$tmp/bec-l" "$lpid" || return 1
	addr=$(listen_addr "$tmp/bec-l")
	port=${addr##*:}
	# every CONNECT waits 6 s once it has its id: session 2's must
	# still wait when session 1 is killed, a few processes (about a
	# second each with two guests on the host) after session 1 is up;
	# session 1's must end well within bench's 10 s connect timeout
	echo 6000000 >"$SYSMOD/parameters/fault_delay_us"
	echo $((1 << 12)) >"$fp"
	timeout 120 "$KMSGRCTL" bench --sessions 2 --threads 1 --count 100 \
		"$addr" >"$tmp/bec-b" 2>&1 &
	bpid=$!
	# session 1 dialled: it is READY well before session 2's CONNECT
	# ends its wait
	i=0
	until ss -Htn state established dst 127.0.0.1 dport = ":$port" |
		grep -q .; do
		i=$((i + 1))
		[ "$i" -gt 500 ] && break
		sleep 0.02
	done
	sleep 0.5
	ss -K dst 127.0.0.1 dport = ":$port" >/dev/null 2>&1
	wait "$bpid"
	brc=$?
	echo 0 >"$fp"
	echo 200 >"$SYSMOD/parameters/fault_delay_us"
	kill -TERM "$lpid"
	stopped "$lpid" 30
	wait "$lpid"
	cat "$tmp/bec-b"
	echo "bench exit $brc"
	[ "$brc" -eq 1 ] &&
		grep -Eq "bench session 1 of 2: session [0-9]+ (down|closed)" \
			"$tmp/bec-b"
}

# load_test NAME [LISTEN-OPTS...]: two --echo listeners (lossy, lossless)
# with LISTEN-OPTS, 4 concurrent clients per port of LOAD_PORTS (default
# both; message sizes 100 B to 16 KB) each sending LOAD_MSGS messages
# (default KMSGR_LOAD_MSGS, 10^5) and verifying every echo; every process
# must exit 0.  Over LOAD_XPRT (tcp on 127.0.0.1, or rdma on KMSGR_VM_IP).
load_test() {
	name=$1
	shift
	msgs=${LOAD_MSGS:-${KMSGR_LOAD_MSGS:-100000}}
	xprt=${LOAD_XPRT:-tcp}
	lip=127.0.0.1
	[ "$xprt" = rdma ] && lip=${KMSGR_VM_IP:?}
	"$KMSGRCTL" session listen --transport "$xprt" --echo --time 1200 \
		"$@" "$lip:3320" >"$tmp/load-lossy" 2>&1 &
	l1=$!
	"$KMSGRCTL" session listen --transport "$xprt" --echo --lossless \
		--time 1200 "$@" "$lip:3321" >"$tmp/load-lossless" 2>&1 &
	l2=$!
	listening "$tmp/load-lossy" "$l1" "$tmp/load-lossless" "$l2"
	pids=""
	k=0
	for port in ${LOAD_PORTS:-3320 3321}; do
		ll=""
		[ "$port" = 3321 ] && ll=--lossless
		for size in 100 1000 4000 16000; do
			k=$((k + 1))
			# shellcheck disable=SC2086 # $ll: zero or one word
			timeout 1100 "$KMSGRCTL" session connect $ll \
				--transport "$xprt" --send "$msgs" \
				--size "$size" --verify-echo --timeout 120 \
				"$lip:$port" \
				>"$tmp/load-c$k" 2>&1 &
			pids="$pids $!"
		done
	done
	bad=0
	k=0
	for p in $pids; do
		k=$((k + 1))
		wait "$p" || { bad=1; echo "client $k failed:"; }
		tail -n 2 "$tmp/load-c$k"
		grep -q "$msgs echoes, 0 bad" "$tmp/load-c$k" || bad=1
	done
	kill -TERM "$l1" "$l2"
	stopped "$l1" 60 || bad=1
	stopped "$l2" 60 || bad=1
	wait "$l1" || { bad=1; echo "lossy listener failed"; }
	wait "$l2" || { bad=1; echo "lossless listener failed"; }
	tail -n 1 "$tmp/load-lossy" "$tmp/load-lossless"
	echo "$name: $k clients x $msgs messages over $xprt"
	[ "$bad" -eq 0 ]
}

# The two load tests over rdma: KMSGR_RDMA_LOAD_MSGS messages per client
# (default 5000: soft-RoCE under emulation is slower than TCP), with the
# listeners' default CQ and pool, then with a 16-entry CQ and a 64 KiB
# pool; kmsgr_rdma's receive buffers and credits stay at their defaults.
load_test_rdma() {
	LOAD_XPRT=rdma LOAD_MSGS=${KMSGR_RDMA_LOAD_MSGS:-5000} load_test \
		rdma-load &&
		LOAD_XPRT=rdma LOAD_MSGS=${KMSGR_RDMA_LOAD_MSGS:-5000} \
		load_test rdma-tiny --sq 8 --pool-size 65536
}

# Backpressure everywhere: listeners with a 16-entry CQ and a 64 KiB pool,
# lossy and lossless, KMSGR_TINY_MSGS (default 20000) messages per client.
# A lossless echo holds each request's pool slices until the client acks
# the echo, and those acks travel behind requests the full pool has no
# room for: the listener must read on (header acks, the receive spill).
# The 16 KB messages need 32 free grains in a row of a pool that the
# small ones keep fragmented: the pool promises them a run (fairness).
load_test_tiny() {
	LOAD_MSGS=${KMSGR_TINY_MSGS:-100000}
	load_test tiny --sq 8 --pool-size 65536
	rc=$?
	unset LOAD_MSGS
	return "$rc"
}

# Ceph's own client against a kmsgr listener presenting itself as a mon:
# the client's debug_ms log shows the session READY with entity mon.*, and
# the listener receives the client's first message (MMonGetMap).  Against
# a listener with the default entity type (client) it must not get READY.
# ceph_cli WANT LPID CMD...: run a ceph CLI command CMD against the
# listener LPID (session listen --count 1).  WANT 1: the listener should
# get a message, after which it exits; then CMD is stopped half a second
# later (its log has the READY line by then), as it would only retry
# until its --connect-timeout.  WANT 0: CMD runs until it gives up.
# (the times of these tests are CEPH_CLI_SCALE times longer: the ceph
# command, Python on librados, starts slowly on a debug kernel)
ceph_cli() {
	want=$1 lp=$2
	shift 2
	"$@" >/dev/null 2>&1 &
	cp=$!
	if [ "$want" = 1 ]; then
		i=0
		while kill -0 "$lp" 2>/dev/null && kill -0 "$cp" 2>/dev/null &&
			[ "$i" -lt $((300 * CEPH_CLI_SCALE)) ]; do
			sleep 0.1
			i=$((i + 1))
		done
		sleep 0.5
		kill -TERM "$cp" 2>/dev/null
	fi
	wait "$cp"
}

ceph_client_test() {
	command -v ceph >/dev/null 2>&1 || { echo "no ceph (make deps)"; return 1; }
	for as in mon client; do
		"$KMSGRCTL" session listen --as "$as" --count 1 --time $((40 * CEPH_CLI_SCALE)) \
			127.0.0.1:3313 >"$tmp/cc-l-$as" 2>&1 &
		lpid=$!
		listening "$tmp/cc-l-$as" "$lpid" || return 1
		rm -f "$tmp/cc-$as.log"
		ceph_cli "$([ "$as" = mon ] && echo 1 || echo 0)" "$lpid" \
			timeout $((30 * CEPH_CLI_SCALE)) ceph --conf /dev/null -m v2:127.0.0.1:3313 \
			--auth-client-required none --debug-ms 20 \
			--log-file "$tmp/cc-$as.log" --connect-timeout 8 -s
		kill -TERM "$lpid" 2>/dev/null
		stopped "$lpid" 30
		wait "$lpid"
		echo "--as $as:"
		cat "$tmp/cc-l-$as"
		grep -E 'handle_hello received hello|\.ready entity=|peer type' \
			"$tmp/cc-$as.log" | sed 's/^.*conn([^)]*)//' | head -n 4
	done
	# against the client: it got the listener's HELLO and refused it
	grep -q 'ready entity=mon\.' "$tmp/cc-mon.log" &&
		grep -Eq '^received [1-9][0-9]* messages' "$tmp/cc-l-mon" &&
		! grep -q 'ready entity=' "$tmp/cc-client.log" &&
		grep -q 'handle_hello received hello: peer_type=8 ' \
			"$tmp/cc-client.log" &&
		grep -q 'peer type does not match' "$tmp/cc-client.log"
}

# Ceph's own client over IPv4 against a kmsgr mon listener on "::" (which
# takes IPv4 too): READY, the listener gets its first message.  The
# accepted socket names both ends ::ffff:127.0.0.1; a listener that
# presented that form (instead of the 127.0.0.1 the client dialled) never
# got the client past its address check.
ceph_dual_stack_test() {
	command -v ceph >/dev/null 2>&1 || { echo "no ceph (make deps)"; return 1; }
	"$KMSGRCTL" session listen --as mon --count 1 --time $((40 * CEPH_CLI_SCALE)) '[::]:3317' \
		>"$tmp/cc-v6-l" 2>&1 &
	lpid=$!
	listening "$tmp/cc-v6-l" "$lpid" || return 1
	rm -f "$tmp/cc-v6.log"
	ceph_cli 1 "$lpid" timeout $((30 * CEPH_CLI_SCALE)) ceph --conf /dev/null \
		-m v2:127.0.0.1:3317 --auth-client-required none --debug-ms 20 \
		--log-file "$tmp/cc-v6.log" --connect-timeout 8 -s
	kill -TERM "$lpid" 2>/dev/null
	stopped "$lpid" 30
	wait "$lpid"
	cat "$tmp/cc-v6-l"
	grep -E 'handle_hello received hello|\.ready entity=' "$tmp/cc-v6.log" |
		sed 's/^.*conn([^)]*)//' | head -n 4
	grep -q 'ready entity=mon\.' "$tmp/cc-v6.log" &&
		grep -Eq '^received [1-9][0-9]* messages' "$tmp/cc-v6-l"
}

# Ceph's own client with a keyring against a kmsgr listener that presents
# a mon and authenticates with server-side cephx: READY (entity mon.*) and
# the listener gets its first message, in crc and in secure mode; with
# another key, no session.
# kmsgrctl over rdma (rxe0, KMSGR_VM_IP): a lossless cephx echo listener;
# lossless 1 MiB one-way in crc mode (payloads pulled with RDMA READ:
# pulled_bytes grows), a secure ping-pong (encrypted payloads, copied),
# a wrong key refused.
rdma_cli_test() {
	ip=${KMSGR_VM_IP:-}
	[ -n "$ip" ] || { echo "KMSGR_VM_IP not set (tools/vm/run --rxe)"; return 1; }
	keyrings rdma || return 1
	"$KMSGRCTL" session listen --transport rdma --lossless --echo \
		--time 300 --keyring "$tmp/rdma.keyring" "$ip:3320" \
		>"$tmp/rdma-l" 2>&1 &
	lpid=$!
	listening "$tmp/rdma-l" "$lpid"
	pulled0=$(cat /sys/module/kmsgr_rdma/parameters/pulled_bytes)
	timeout 120 "$KMSGRCTL" -j bench --transport rdma --lossless \
		--keyring "$tmp/rdma.keyring" --size 1048576 --depth 4 \
		--count 40 "$ip:3320" >"$tmp/rdma-o" 2>&1
	orc=$?
	pulled=$(( $(cat /sys/module/kmsgr_rdma/parameters/pulled_bytes) - pulled0 ))
	timeout 120 "$KMSGRCTL" bench --transport rdma --pattern pingpong \
		--lossless --secure --keyring "$tmp/rdma.keyring" --count 100 \
		--warmup 10 "$ip:3320" >"$tmp/rdma-s" 2>&1
	src=$?
	timeout 120 "$KMSGRCTL" bench --transport rdma --lossless \
		--keyring "$tmp/rdma-other.keyring" --count 10 "$ip:3320" \
		>"$tmp/rdma-b" 2>&1
	brc=$?
	kill -TERM "$lpid"
	stopped "$lpid" 30
	wait "$lpid"
	lrc=$?
	cat "$tmp/rdma-o" "$tmp/rdma-s" "$tmp/rdma-b" "$tmp/rdma-l"
	echo "listener exit $lrc, lossless one-way exit $orc ($pulled bytes" \
		"pulled), secure ping-pong exit $src, wrong key exit $brc"
	[ "$lrc" -eq 0 ] && [ "$orc" -eq 0 ] && [ "$src" -eq 0 ] &&
		[ "$brc" -eq 1 ] &&
		grep -q '"transport":"rdma"' "$tmp/rdma-o" &&
		grep -q '"messages":40,' "$tmp/rdma-o" &&
		[ "$pulled" -ge $((40 * 1048576)) ] &&
		grep -q "rdma pingpong .*mode secure: 100 messages in " \
			"$tmp/rdma-s" &&
		grep -q "latency us: p50 [0-9]" "$tmp/rdma-s" &&
		grep -q "authentication refused" "$tmp/rdma-b"
}

ceph_cephx_client_test() {
	keyrings cx || return 1
	rc=0
	for run in crc secure bad; do
		mode=$run kr=$tmp/cx.keyring
		[ "$run" = bad ] && { mode=crc; kr=$tmp/cx-other.keyring; }
		"$KMSGRCTL" session listen --as mon --count 1 --time $((40 * CEPH_CLI_SCALE)) \
			--keyring "$tmp/cx.keyring" 127.0.0.1:3314 \
			>"$tmp/cx-l-$run" 2>&1 &
		lpid=$!
		listening "$tmp/cx-l-$run" "$lpid" || return 1
		rm -f "$tmp/cx-$run.log"
		ceph_cli "$([ "$run" = bad ] && echo 0 || echo 1)" "$lpid" \
			timeout $((30 * CEPH_CLI_SCALE)) ceph --conf /dev/null -m v2:127.0.0.1:3314 \
			--keyring "$kr" -n client.admin \
			--auth-client-required cephx \
			--ms-mon-client-mode "$mode" --debug-ms 20 \
			--log-file "$tmp/cx-$run.log" --connect-timeout 8 -s
		kill -TERM "$lpid" 2>/dev/null
		stopped "$lpid" 30
		wait "$lpid"
		echo "$run:"
		cat "$tmp/cx-l-$run"
		grep -E '\.ready entity=|AUTH_BAD|bad_method|auth_done' \
			"$tmp/cx-$run.log" | sed 's/^.*conn([^)]*)//' | head -n 3
		if [ "$run" = bad ]; then
			# refused by the listener's cephx (AUTH_BAD: EACCES)
			! grep -q 'ready entity=' "$tmp/cx-$run.log" &&
				grep -q 'handle_auth_bad_method .*Permission denied' \
					"$tmp/cx-$run.log" || rc=1
		else
			grep -q "$mode :-1 s=READY.*ready entity=mon\." \
				"$tmp/cx-$run.log" &&
				grep -Eq '^received [1-9][0-9]* messages' \
					"$tmp/cx-l-$run" || rc=1
		fi
	done
	return "$rc"
}

# --- installed like any out-of-tree driver -------------------------------------
# make modules_install / install / install-udev / install-autoload /
# uninstall in the guest's root: the host's, read-only, under a tmpfs
# overlay, so whatever they write goes at shutdown.  The modules land in
# extra/kmod/ (Makefile).
PKG_KREL=$(uname -r)
PKG_MODROOT=/lib/modules/$PKG_KREL
PKG_MODDIR=$PKG_MODROOT/extra/kmod
PKG_PREFIX=/usr/local

# The module tree of these tests.  make modules_install and make uninstall
# each run depmod -a, which reads every module of the release: here the
# host's (4023 modules), over 9p under TCG, measured at 50 s cold and 25 s
# warm, 164 s for the install tests in all.  So for these tests
# $PKG_MODROOT is a bind mount of a directory on the guest's /tmp holding
# what depmod needs from the release's tree (modules.builtin,
# modules.builtin.modinfo, modules.order), its build and source links
# (KDIR), and copies, at the same paths, of the modules the tests load or
# may load: the built modules' dependencies, hard and soft (modinfo), the
# modules loaded now (a request_module during the tests finds them), and
# all they depend on (modprobe --show-depends, asked of the host's tree
# before the mount): 41 here.  A depmod -a makes it a tree modprobe knows,
# without kmsgr.  The make targets run unchanged on it, a real depmod -a
# included; pkg_tree_umount puts the host's tree back for the rest of the
# run (the EXIT trap does, should the script die before).  These functions
# run in the script's shell: their variables are named pkg_*.
pkg_tree_mount() {
	if [ "$pkg_tree" = 1 ] || mountpoint -q "$PKG_MODROOT"; then
		echo "$PKG_MODROOT is a mount point already"
		return 1
	fi
	pkg_deps=$({
		modinfo -F depends "$KO" "$RDMA_KO" | tr ',' ' '
		modinfo -F softdep "$KO" "$RDMA_KO" | sed 's/pre://g; s/post://g'
	} | tr ' ' '\n' | grep -v -x -e '' -e kmsgr -e kmsgr_rdma |
		sort -u | tr '\n' ' ')
	[ -n "$pkg_deps" ] || { echo "no dependencies in the built modules' modinfo"; return 1; }
	echo "dependencies of the built modules: $pkg_deps"
	# shellcheck disable=SC2086 # a list of names
	modprobe -a --show-depends $pkg_deps >"$tmp/pkg-need" || return 1
	pkg_loaded=$(cut -d' ' -f1 /proc/modules)
	# shellcheck disable=SC2086 # a list of names
	modprobe -a --show-depends $pkg_loaded >>"$tmp/pkg-need" 2>"$tmp/pkg-err" ||
		{ echo "loaded modules the host's tree does not have:"; cat "$tmp/pkg-err"; }
	sed -n 's/^insmod \([^ ]*\).*/\1/p' "$tmp/pkg-need" | sort -u >"$tmp/pkg-mods"
	pkg_ndep=$(wc -l <"$PKG_MODROOT/modules.dep")
	echo "$(wc -l <"$tmp/pkg-mods") of the $pkg_ndep modules of $PKG_MODROOT:"
	tr '\n' ' ' <"$tmp/pkg-mods" | sed "s|$PKG_MODROOT/||g"
	echo
	if grep -v "^$PKG_MODROOT/" "$tmp/pkg-mods"; then
		echo "(outside $PKG_MODROOT)"
		return 1
	fi
	# The files, the links (build, source) and the modules at their paths
	# relative to $PKG_MODROOT, in one cp: every fork costs under TCG.
	{
		echo modules.builtin modules.builtin.modinfo modules.order
		find "$PKG_MODROOT" -mindepth 1 -maxdepth 1 -type l -printf '%f\n'
		sed "s|^$PKG_MODROOT/||" "$tmp/pkg-mods"
	} >"$tmp/pkg-copy"
	pkg_dir=$tmp/modules
	mkdir "$pkg_dir" || return 1
	(cd "$PKG_MODROOT" && xargs cp -P --parents -t "$pkg_dir") <"$tmp/pkg-copy" ||
		return 1
	mount --bind "$pkg_dir" "$PKG_MODROOT" || return 1
	pkg_tree=1
	depmod -a "$PKG_KREL" || { pkg_tree_umount; return 1; }
	echo "$PKG_MODROOT: $(wc -l <"$PKG_MODROOT/modules.dep") modules"
}

# The host's module tree again: not a mount point, all its modules.
pkg_tree_umount() {
	[ "$pkg_tree" = 1 ] || { echo "the small tree is not mounted"; return 1; }
	umount "$PKG_MODROOT" || return 1
	pkg_tree=0
	rm -rf "$tmp/modules"
	! mountpoint -q "$PKG_MODROOT" ||
		{ echo "$PKG_MODROOT is still a mount point"; return 1; }
	pkg_nd=$(wc -l <"$PKG_MODROOT/modules.dep")
	echo "$PKG_MODROOT: $pkg_nd modules"
	[ "$pkg_nd" = "$pkg_ndep" ] || { echo "not the $pkg_ndep from before"; return 1; }
}

# The files the install targets put in place (not the modules).
pkg_files() {
	echo "$PKG_PREFIX/lib/libkmsgr.so.$VERSION $PKG_PREFIX/lib/libkmsgr.so.0" \
		"$PKG_PREFIX/lib/libkmsgr.so $PKG_PREFIX/lib/libkmsgr.a" \
		"$PKG_PREFIX/lib/pkgconfig/kmsgr.pc $PKG_PREFIX/include/libkmsgr.h" \
		"$PKG_PREFIX/include/linux/kmsgr.h $PKG_PREFIX/sbin/kmsgrctl" \
		"$PKG_PREFIX/share/man/man8/kmsgrctl.8" \
		"$PKG_PREFIX/share/kmsgr/60-kmsgr.rules" \
		"$PKG_PREFIX/share/kmsgr/kmsgr.conf" \
		"/etc/udev/rules.d/60-kmsgr.rules /etc/modules-load.d/kmsgr.conf"
}

mod_loaded() {
	grep -q "^$1 " /proc/modules
}

# make modules_install: both modules, as built, where depmod finds them,
# with their dependencies and the transport alias.  Nothing of kmsgr may
# be installed before: modprobe must find these or nothing.
pkg_modules_install() {
	if p=$(modinfo -n kmsgr 2>/dev/null); then
		echo "kmsgr is installed already: $p"
		return 1
	fi
	# make check's build (KMSGR_FAULT=y), which modules_install otherwise
	# refuses
	make -C "$TOP" --no-print-directory modules_install KMSGR_FAULT=y ||
		return 1
	for m in kmsgr kmsgr_rdma; do
		ko=$TOP/kmod/$m.ko
		cmp "$ko" "$PKG_MODDIR/$m.ko" || return 1
		p=$(modinfo -n "$m") || { echo "depmod does not know $m"; return 1; }
		[ "$p" = "$PKG_MODDIR/$m.ko" ] ||
			{ echo "modinfo -n $m: $p, not $PKG_MODDIR/$m.ko"; return 1; }
		v=$(modinfo -F version "$m")
		[ "$v" = "$VERSION" ] ||
			{ echo "modinfo -F version $m: \"$v\", not $VERSION"; return 1; }
	done
	modprobe --show-depends kmsgr >"$tmp/pkg-deps" || return 1
	cat "$tmp/pkg-deps"
	grep -q '/libcrc32c\.ko' "$tmp/pkg-deps" ||
		{ echo "modprobe kmsgr would not load libcrc32c"; return 1; }
	grep -q '/gcm\.ko' "$tmp/pkg-deps" ||
		{ echo "modprobe kmsgr would not load gcm (softdep)"; return 1; }
	modprobe --show-depends kmsgr_rdma >"$tmp/pkg-deps" || return 1
	for d in kmsgr ib_core rdma_cm; do
		grep -q "/$d\.ko" "$tmp/pkg-deps" ||
			{ echo "modprobe kmsgr_rdma would not load $d"; return 1; }
	done
	a=$(modprobe --resolve-alias kmsgr-xprt-2)
	[ "$a" = kmsgr_rdma ] ||
		{ echo "alias kmsgr-xprt-2 resolves to \"$a\", not kmsgr_rdma"; return 1; }
}

# make install, install-udev and install-autoload: the library, its
# headers and pkg-config file, kmsgrctl, its man page, the udev rule and
# the modules-load.d file (disabled copies, then the enabled ones).
pkg_install() {
	for f in $(pkg_files); do
		[ ! -e "$f" ] || { echo "$f exists before make install"; return 1; }
	done
	make -C "$TOP" --no-print-directory install install-udev install-autoload ||
		return 1
	for f in $(pkg_files); do
		[ -e "$f" ] || { echo "make install did not install $f"; return 1; }
	done
	v=$("$PKG_PREFIX/sbin/kmsgrctl" version) || return 1
	echo "$v"
	[ "$v" = "kmsgrctl $VERSION, libkmsgr $VERSION, ABI $ABI" ] ||
		{ echo "unexpected version line"; return 1; }
	v=$(PKG_CONFIG_PATH=$PKG_PREFIX/lib/pkgconfig pkg-config --modversion kmsgr) ||
		return 1
	[ "$v" = "$VERSION" ] || { echo "pkg-config: version $v"; return 1; }
	grep -qx kmsgr /etc/modules-load.d/kmsgr.conf ||
		{ echo "kmsgr.conf does not list kmsgr"; return 1; }
	cmp "$TOP/packaging/udev/60-kmsgr.rules" /etc/udev/rules.d/60-kmsgr.rules
}

# modprobe kmsgr from a state without libcrc32c (and without gcm, unless
# something else holds it): it loads the installed kmsgr.ko and both.
pkg_modprobe() {
	for m in kmsgr_rdma kmsgr; do
		! mod_loaded "$m" || { echo "$m is loaded before modprobe"; return 1; }
	done
	if mod_loaded libcrc32c && ! rmmod libcrc32c; then
		echo "libcrc32c cannot be unloaded; held by: $(ls /sys/module/libcrc32c/holders)"
		return 1
	fi
	gcm=absent
	if mod_loaded gcm; then
		gcm="loaded, in use"
		rmmod gcm 2>/dev/null && gcm=unloaded
	fi
	echo "before modprobe kmsgr: libcrc32c not loaded, gcm $gcm"
	modprobe -v kmsgr >"$tmp/pkg-probe" 2>&1
	prc=$?
	cat "$tmp/pkg-probe"
	[ "$prc" -eq 0 ] || return 1
	grep -q "^insmod $PKG_MODDIR/kmsgr\.ko" "$tmp/pkg-probe" ||
		{ echo "modprobe did not insert $PKG_MODDIR/kmsgr.ko"; return 1; }
	for m in libcrc32c gcm kmsgr; do
		mod_loaded "$m" || { echo "$m is not loaded after modprobe kmsgr"; return 1; }
	done
	src=$(cat "$SYSMOD/srcversion")
	[ "$src" = "$(modinfo -F srcversion "$PKG_MODDIR/kmsgr.ko")" ] ||
		{ echo "the loaded kmsgr (srcversion $src) is not the installed one"; return 1; }
	[ -c "$DEV" ] || { echo "no $DEV"; return 1; }
	ls -l "$DEV"
	"$KMSGRCTL" info
}

# The enabled udev rule, applied by udevadm test (systemd 252's applies
# a rule's GROUP and MODE to the node): /dev/kmsgr 0660 root:kmsgr.  The
# installed kmsgrctl run as nobody opens it in the group kmsgr, and not
# outside it, where it says how to get access.
pkg_udev() {
	newgroup=0
	if ! getent group kmsgr >/dev/null; then
		groupadd --system kmsgr || return 1
		newgroup=1
	fi
	udevadm test --action=add /sys/class/misc/kmsgr >"$tmp/pkg-udev" 2>&1
	urc=$?
	grep -i 'kmsgr' "$tmp/pkg-udev" | grep -iv '^Reading rules file' | head -n 20
	ls -l "$DEV"
	st=$(stat -c '%a %U %G' "$DEV")
	ok=1
	[ "$urc" -eq 0 ] || { echo "udevadm test exited $urc"; ok=0; }
	[ "$st" = "660 root kmsgr" ] || { echo "$DEV is \"$st\", want \"660 root kmsgr\""; ok=0; }
	if [ "$ok" = 1 ]; then
		setpriv --reuid=nobody --regid=nogroup --groups=kmsgr \
			"$PKG_PREFIX/sbin/kmsgrctl" info >/dev/null ||
			{ echo "a member of kmsgr cannot open $DEV"; ok=0; }
		if setpriv --reuid=nobody --regid=nogroup --clear-groups \
			"$PKG_PREFIX/sbin/kmsgrctl" info >/dev/null 2>"$tmp/pkg-err"; then
			echo "a user outside kmsgr opens $DEV"
			ok=0
		fi
		cat "$tmp/pkg-err"
		grep -q "^kmsgr: cannot open $DEV: Permission denied (needs root, or the group kmsgr with the udev rule 60-kmsgr.rules" \
			"$tmp/pkg-err" || { echo "not the expected message"; ok=0; }
	fi
	[ "$newgroup" = 0 ] || groupdel kmsgr
	[ "$ok" = 1 ]
}

# kmsgr_rdma: loaded by kmsgr itself (request_module of the alias
# kmsgr-xprt-2) for an rdma listener, then by modprobe, with rdma_cm (which
# may stay loaded in between: rdma_ucm holds it once user-space rdma_cm
# ran).
pkg_rdma() {
	ip=${KMSGR_VM_IP:-}
	[ -n "$ip" ] || { echo "KMSGR_VM_IP not set (tools/vm/run --rxe)"; return 1; }
	! mod_loaded kmsgr_rdma || { echo "kmsgr_rdma is loaded already"; return 1; }
	timeout 60 "$KMSGRCTL" session listen --transport rdma --time 1 \
		--pool-size 1M "$ip:0" || return 1
	mod_loaded kmsgr_rdma ||
		{ echo "an rdma listener did not load kmsgr_rdma"; return 1; }
	rmmod kmsgr_rdma || return 1
	if ! mod_loaded rdma_cm; then
		echo "rdma_cm: not loaded"
	elif rmmod rdma_cm 2>/dev/null; then
		echo "rdma_cm: unloaded"
	else
		echo "rdma_cm: in use by $(ls /sys/module/rdma_cm/holders)"
	fi
	modprobe -v kmsgr_rdma >"$tmp/pkg-probe" 2>&1
	prc=$?
	cat "$tmp/pkg-probe"
	[ "$prc" -eq 0 ] || return 1
	grep -q "^insmod $PKG_MODDIR/kmsgr_rdma\.ko" "$tmp/pkg-probe" ||
		{ echo "modprobe did not insert $PKG_MODDIR/kmsgr_rdma.ko"; return 1; }
	for m in rdma_cm kmsgr_rdma; do
		mod_loaded "$m" || { echo "$m is not loaded after modprobe kmsgr_rdma"; return 1; }
	done
	src=$(cat /sys/module/kmsgr_rdma/srcversion)
	[ "$src" = "$(modinfo -F srcversion "$PKG_MODDIR/kmsgr_rdma.ko")" ] ||
		{ echo "the loaded kmsgr_rdma (srcversion $src) is not the installed one"; return 1; }
	"$KMSGRCTL" info | grep ' rdma' ||
		{ echo "kmsgrctl info does not list rdma"; return 1; }
}

# modprobe -r also removes the dependencies nothing else uses, and exits
# 0 when one stays loaded because something else holds it (rdma_cm, held
# by rdma_ucm once the earlier tests' user-space rdma_cm ran; kmsgr_rdma
# has no "pre:" soft dependency that would make kmod 30 exit 1 there).
pkg_unload() {
	if mod_loaded rdma_cm; then
		echo "rdma_cm held by: $(ls /sys/module/rdma_cm/holders | tr '\n' ' ')"
	fi
	modprobe -r kmsgr_rdma kmsgr >"$tmp/pkg-rm" 2>&1
	prc=$?
	cat "$tmp/pkg-rm"
	[ "$prc" -eq 0 ] || { echo "modprobe -r exited $prc"; return 1; }
	for m in kmsgr_rdma kmsgr; do
		! mod_loaded "$m" || { echo "$m is still loaded"; return 1; }
	done
	[ ! -e "$DEV" ] || { echo "$DEV is still there"; return 1; }
}

# make uninstall: every file gone, depmod forgot the modules, modprobe
# kmsgr fails.  Whatever is still loaded is unloaded (and fails the test).
pkg_uninstall() {
	rc=0
	if mod_loaded kmsgr; then
		echo "kmsgr is still loaded before make uninstall"
		rmmod kmsgr_rdma 2>/dev/null
		rmmod kmsgr
		rc=1
	fi
	make -C "$TOP" --no-print-directory uninstall || return 1
	for f in $(pkg_files) "$PKG_MODDIR/kmsgr.ko" "$PKG_MODDIR/kmsgr_rdma.ko" \
		"$PKG_MODDIR" "$PKG_PREFIX/share/kmsgr"; do
		[ ! -e "$f" ] || { echo "$f is still there"; rc=1; }
	done
	for m in kmsgr kmsgr_rdma; do
		if p=$(modinfo -n "$m" 2>/dev/null); then
			echo "depmod still knows $m: $p"
			rc=1
		fi
	done
	if modprobe kmsgr; then
		echo "modprobe kmsgr still loads a kmsgr"
		modprobe -r kmsgr
		rc=1
	fi
	! mod_loaded kmsgr || rc=1
	return "$rc"
}

T_START=$(date +%s)
echo "TAP version 13"
echo "# the guest has been up $(cut -d' ' -f1 /proc/uptime) s"
echo "# part of the suite: $PART (KMSGR_GUEST_PART)"
ceph_none="" ceph_cephx=""
in_part 2 && ceph_start
VERSION=$(header_define KMSGR_VERSION "$TOP/kmod/kmsgr.h")
ABI=$(header_define KMSGR_ABI_VERSION "$TOP/uapi/linux/kmsgr.h")
echo "# kmsgr $VERSION (ABI $ABI) selftests on $(uname -r), $(date -u)"
echo "# block device for kmsgr_bdev_test: KMSGR_NVME=${KMSGR_NVME:-(unset: no --nvme)}"
echo "# 4Kn device for kmsgr_bdev4k_test: KMSGR_NVME_4K=${KMSGR_NVME_4K:-(unset: no --nvme)}"
mark "start"

if [ "$(id -u)" -ne 0 ]; then
	tap 1 "running as root (run me in the guest: make check-vm)"
	echo "1..$n"
	exit 1
fi

# A soft lockup panics the guest (tools/vm/run's kernel parameters), and
# fails the run either way ("BUG: soft lockup" is one of the KWARN
# patterns).
for f in softlockup_panic panic_print; do
	[ "$(cat "/proc/sys/kernel/$f")" != 0 ] ||
		echo "# kernel.$f is 0: a soft lockup will not end the run"
done

# slub_debug_on: every slab cache checks its objects (F), has red zones
# (Z), poisons freed objects (P) and records who allocated and freed them
# (U); kmalloc-64 stands for them (make check-vm boots the guest so).
slub_debug_on() {
	for f in sanity_checks red_zone poison store_user; do
		v=$(cat "/sys/kernel/slab/kmalloc-64/$f" 2>/dev/null)
		echo "kmalloc-64 $f: ${v:-unreadable}"
		[ "$v" = 1 ] || return 1
	done
	grep -qw slab_nomerge /proc/cmdline
}

if [ "${KMSGR_SLUB_DEBUG:-0}" = 1 ]; then
	check "the guest runs under slub_debug=FZPU slab_nomerge (checks, red zones, poisoning, user tracking)" \
		slub_debug_on
fi

# --- load --------------------------------------------------------------------
if grep -q '^kmsgr ' /proc/modules; then
	echo "# kmsgr was loaded already; unloading it first"
	rmmod kmsgr_rdma 2>/dev/null
	rmmod kmsgr
fi
{ load_deps && insmod "$KO"; } >"$tmp/insmod" 2>&1 && loaded=1
comment "$tmp/insmod"
tap $((1 - loaded)) "insmod kmod/kmsgr.ko (dependencies: $(modinfo -F depends "$KO" 2>/dev/null))"
need_module=1
if [ "$loaded" -eq 0 ]; then
	klog | tail -n 20 | comment
fi

# --- static checks -------------------------------------------------------------
check "modinfo version is $VERSION" modinfo_is version "$VERSION"
check "modinfo license is GPL" modinfo_is license GPL
check "modinfo has a description" modinfo_has description
check "modinfo has an author" modinfo_has author
check "modinfo lists the instances parameter" \
	sh -c "modinfo -F parm '$KO' | grep '^instances:'"
check "$DEV is a char device, sysfs version is $VERSION" module_state_ok
check "insmod kmod/kmsgr_rdma.ko pinned_bytes=0 (a read-only counter) is refused with EPERM, nothing left loaded" \
	rdma_ro_param_refused
check "insmod kmod/kmsgr_rdma.ko: the rdma transport registers and sees ${KMSGR_RXE:-rxe0}" rdma_load

# --- CLI -----------------------------------------------------------------------
if in_part 1; then
	check "kmsgrctl info" "$KMSGRCTL" info
	check "kmsgrctl -j info reports abi_version $ABI" kmsgrctl_json
	mark "echo-listener"
	check "kmsgrctl echo listener serves ${KMSGR_ECHO_MSGS:-20000} messages, every echo verified" echo_listener_test
	check "kmsgrctl session listen --echo --count 10 stops after 10 echoes while its client keeps sending" echo_count_test
	check "kmsgrctl bench: ping-pong and lossless one-way against an echo listener report rate, latency and CPU per message (text and JSON)" bench_test
	check "kmsgrctl bench: a session lost while the next one connects is reported as lost" bench_early_close_test
	check "kmsgrctl session connect --lossless to a port where nothing listens fails at once: connection refused" connect_refused_test
	check "kmsgrctl over rdma: lossless cephx echo listener, 1 MiB one-way pulled with RDMA READ, secure ping-pong, a wrong key refused" rdma_cli_test
	kernel_quiet_since "echo-listener"
	if [ "${KMSGR_NO_CEPH_PEERS:-0}" != 1 ]; then
		check "ceph -s reaches READY against a kmsgr listener presenting a mon (and not against one presenting a client)" ceph_client_test
		check "ceph -s over IPv4 reaches READY against a kmsgr mon listener on [::] (dual stack)" ceph_dual_stack_test
		check "ceph -s with a keyring completes cephx against a kmsgr listener (crc and secure; another key is refused)" ceph_cephx_client_test
	fi
fi

# --- the netlink family (kmsgrctl session/listener/instance show, stats,
# monitor; a fuzz pass) --------------------------------------------------------
if in_part 1; then
	run_harness "$TOP/selftests/kmsgr/netlink_test.sh"
	# cephx secrets from kernel logon keys (kmsgrctl key add, --key-desc)
	run_harness "$TOP/selftests/kmsgr/logon_key_test.sh"
fi
# the example block service on the NVMe namespace, over tcp and rdma
# (KMSGR_BLK_OPS=0 leaves it out, for a quicker run:
# kmsgr_bdev_test runs the same kernel paths)
if in_part 1 && [ "${KMSGR_BLK_OPS:-10000}" != 0 ]; then
	run_harness "$TOP/selftests/kmsgr/blk_test.sh"
fi

# --- harness programs ------------------------------------------------------------
for prog in "$BIN"/*_test; do
	name=${prog##*/}
	in_list "$name" "$LEAK_TESTS $LATE_TESTS" && continue
	if in_list "$name" "$PART2_TESTS"; then
		in_part 2 && run_harness "$prog"
	else
		in_part 1 && run_harness "$prog"
	fi
done
if in_part 2 && [ "${KMSGR_NO_CEPH_PEERS:-0}" != 1 ]; then
	ceph_wait
	check "kmsgrctl mon as the ceph CLI: mon host and keyring from the conf (-c, CEPH_CONF), auth none where it says so, --id, -m with a host name or an address vector" mon_conf_test
	for name in $LATE_TESTS; do
		run_harness "$BIN/$name"
	done
fi
# object data to and from the OSDs: kmsgrctl rados against librados
if in_part 2 && [ "${KMSGR_RADOS_OBJS:-1000}" != 0 ] &&
	[ "${KMSGR_NO_CEPH_PEERS:-0}" != 1 ]; then
	t0=$(date +%s)
	KMSGR_RADOS_CEPH=${KMSGR_CEPH_NONE:-} \
		run_harness "$TOP/selftests/kmsgr/rados_test.sh"
	echo "# rados: $(($(date +%s) - t0)) s"
	t0=$(date +%s)
	KMSGR_RADOS_CEPH=${KMSGR_CEPH_CEPHX:-} \
		run_harness "$TOP/selftests/kmsgr/rados_cephx_test.sh"
	echo "# rados cephx: $(($(date +%s) - t0)) s"
fi

if in_part 2; then
	t0=$(date +%s)
	check "load over rdma: 2 echo listeners, 8 clients x ${KMSGR_RDMA_LOAD_MSGS:-5000} messages, lossy and lossless, every echo verified; again with a 16-entry CQ and a 64 KiB pool" load_test_rdma
	echo "# rdma load: $(($(date +%s) - t0)) s"
fi
check "rmmod kmsgr_rdma after the tests (no buffer left mapped)" rdma_unload
check "rmmod kmsgr after the tests" rmmod kmsgr
check "$DEV is gone after rmmod" test ! -e "$DEV"
if in_part 2 && [ "${KMSGR_NO_CEPH_PEERS:-0}" != 1 ]; then
	check "crc32c_driver: each crc32c implementation, forced, reads back and talks to the real ceph-mon; a bad name is refused; left empty, one of them is kept" crc32c_driver_test
	check "gcm_driver: the crypto API's AES-GCM and the generic one, forced, read back and carry secure mode to the real ceph-mon; a bad name is refused" gcm_driver_test
fi

# --- leak phase: bad input and kill -9, then unload --------------------------------
if in_part 2; then
	mark "leaks"
	ceph_stop
	sync
	sleep 1
	leak_k0=$(kmalloc_bytes)
	leak_s0=$(sunreclaim_kb)
	leak_v0=$(vmalloc_kb)
	check "insmod for the leak phase" insmod "$KO"
	for name in $LEAK_TESTS; do
		run_harness "$BIN/$name"
	done
	# the load runs here: inside the measured phase, with the Ceph daemons gone
	mark "load"
	t0=$(date +%s)
	check "load: 2 echo listeners, 8 clients x ${KMSGR_LOAD_MSGS:-100000} messages, lossy and lossless, every echo verified" load_test load
	echo "# load: $(($(date +%s) - t0)) s"
	t0=$(date +%s)
	check "load with backpressure: echo listeners with a 16-entry CQ and a 64 KiB pool, 8 clients x ${KMSGR_TINY_MSGS:-100000} messages, lossy and lossless" load_test_tiny
	echo "# tiny load: $(($(date +%s) - t0)) s"
	kernel_quiet_since "load"
	mark "crash"
	check "kill -9 of an application with sessions and sends in flight; instances drains to 0" crash_test
	kernel_quiet_since crash
	check "rmmod after bad input and kill -9" rmmod kmsgr
	check "$DEV is gone after the leak phase" test ! -e "$DEV"
	sync
	sleep 1
	leak_k1=$(kmalloc_bytes)
	leak_s1=$(sunreclaim_kb)
	leak_v1=$(vmalloc_kb)
	dk=$((leak_k1 - leak_k0))
	echo "# leak phase: kmalloc active bytes $leak_k0 -> $leak_k1 (delta $dk, tolerance $LEAK_KMALLOC_TOL_BYTES)"
	ds=$((leak_s1 - leak_s0))
	echo "# leak phase: SUnreclaim $leak_s0 -> $leak_s1 kB (delta $ds, tolerance $LEAK_SUNRECLAIM_TOL_KB)"
	if [ "${KMSGR_KMEMLEAK:-0}" = 1 ]; then
		# KASAN's quarantine keeps freed objects counted for a while
		check "kmemleak after the leak phase (instead of the slab counters, which KASAN's quarantine inflates): no unreferenced object allocated by kmsgr" kmemleak_clean
	else
		[ "$dk" -le "$LEAK_KMALLOC_TOL_BYTES" ]
		tap $? "kmalloc slabs back to the baseline after the leak phase (delta $dk bytes)"
		[ "$ds" -le "$LEAK_SUNRECLAIM_TOL_KB" ]
		tap $? "unreclaimable slab back to the baseline after the leak phase (delta $ds kB)"
	fi
	dv=$((leak_v1 - leak_v0))
	echo "# leak phase: VmallocUsed $leak_v0 -> $leak_v1 kB (delta $dv, tolerance $LEAK_VMALLOC_TOL_KB)"
	[ "$dv" -le "$LEAK_VMALLOC_TOL_KB" ]
	tap $? "vmalloc back to the baseline after the leak phase (delta $dv kB)"
fi

# --- load/unload cycles and leaks -------------------------------------------------
if in_part 1; then
	mark "cycles"
	# Two warm-up cycles settle one-time allocations before the slab snapshot.
	cycles 2
	sync
	sleep 1
	kmalloc0=$(kmalloc_bytes)
	sunrec0=$(sunreclaim_kb)
	start=$(date +%s)
	[ "$cycle_rc" -eq 0 ] && cycles "$CYCLES"
	secs=$(($(date +%s) - start))
	sync
	sleep 1
	kmalloc1=$(kmalloc_bytes)
	sunrec1=$(sunreclaim_kb)

	tap "$cycle_rc" "$CYCLES load/unload cycles with $OPENS open/INFO/close each ($cycles_done done in ${secs}s)"
	# Verified only if every cycle ran: a failed cycle fails these too.
	[ "$cycle_rc" -eq 0 ]
	tap $? "instances counter read 0 before every unload"
	[ "$cycle_rc" -eq 0 ]
	tap $? "no $DEV node after every rmmod"
	check "lsmod has no kmsgr" sh -c '! lsmod | grep "^kmsgr "'
	check "no $DEV node at the end" test ! -e "$DEV"

	dk=$((kmalloc1 - kmalloc0))
	echo "# kmalloc active bytes: $kmalloc0 -> $kmalloc1 (delta $dk, tolerance $KMALLOC_TOL_BYTES)"
	ds=$((sunrec1 - sunrec0))
	echo "# SUnreclaim: $sunrec0 -> $sunrec1 kB (delta $ds, tolerance $SUNRECLAIM_TOL_KB)"
	if [ "${KMSGR_KMEMLEAK:-0}" = 1 ]; then
		check "kmemleak after the cycles (instead of the slab counters, which KASAN's quarantine inflates): no unreferenced object allocated by kmsgr" kmemleak_clean
	else
		[ "$cycle_rc" -eq 0 ] && [ "$dk" -le "$KMALLOC_TOL_BYTES" ]
		tap $? "kmalloc slabs did not grow over the cycles (delta $dk bytes)"
		[ "$cycle_rc" -eq 0 ] && [ "$ds" -le "$SUNRECLAIM_TOL_KB" ]
		tap $? "unreclaimable slab did not grow over the cycles (delta $ds kB)"
	fi
fi

# --- installed like any out-of-tree driver ---------------------------------------
if in_part 1 && [ "${KMSGR_NO_INSTALL:-0}" = 1 ]; then
	echo "# installing: not tested (KMSGR_NO_INSTALL=1)"
elif in_part 1; then
	t_install=$(date +%s)
	mark "install"
	check "the install tests' module tree: $PKG_MODROOT bound to a copy of its modules loaded now and of the built modules' dependencies, with theirs (depmod over all modules is slow here)" pkg_tree_mount
	check "make modules_install: kmsgr.ko and kmsgr_rdma.ko (version $VERSION) in $PKG_MODDIR, known to depmod (kmsgr: libcrc32c, softdep gcm; kmsgr_rdma: kmsgr, ib_core, rdma_cm; alias kmsgr-xprt-2)" pkg_modules_install
	check "make install, install-udev, install-autoload: libkmsgr, headers, kmsgr.pc, kmsgrctl, kmsgrctl.8, udev rule and modules-load.d file (disabled, then enabled)" pkg_install
	check "modprobe kmsgr loads the installed module with libcrc32c and gcm (not loaded before); $DEV appears" pkg_modprobe
	check "the enabled udev rule makes $DEV 0660 root:kmsgr: a member of kmsgr opens it, another user does not and is told why" pkg_udev
	check "kmsgr_rdma loads on demand for an rdma listener (alias kmsgr-xprt-2), and by modprobe kmsgr_rdma" pkg_rdma
	check "modprobe -r kmsgr_rdma kmsgr unloads both and exits 0; $DEV is gone" pkg_unload
	check "make uninstall removes the modules and every installed file, depmod forgets them: modprobe kmsgr fails" pkg_uninstall
	check "the host's module tree is back: $PKG_MODROOT unmounted, every module there" pkg_tree_umount
	kernel_quiet_since "install"
	echo "# installing: $(($(date +%s) - t_install)) s"
fi

# --- kmemleak (make check-debug) ------------------------------------------------------
if [ "${KMSGR_KMEMLEAK:-0}" = 1 ]; then
	check "kmemleak: no unreferenced object allocated by kmsgr" kmemleak_clean
fi

# --- kernel log --------------------------------------------------------------------
mark "end"
kernel_log_since "kmsgr-selftest: start" "$KWARN|kmsgr: .*(leak|error)"
tap $? "no kernel warnings while testing"

echo "# $((n - failed)) of $n passed"
echo "1..$n"
[ "$failed" -eq 0 ]
