# SPDX-License-Identifier: GPL-2.0
#
# kmsgr - top-level Makefile.  Targets (stable):
#   make              build kmod/kmsgr.ko, lib/libkmsgr.{so,a}, tools/kmsgrctl
#   make deps         install the Debian packages everything here uses
#   make run          the main job: boot the guest, load kmsgr, show it working
#   make check        all tests (host + guest); prints "N passed, N failed, N skipped"
#   make check-host   host-only tests (msgr2 engine, interop with ceph-mon, fuzz pass)
#   make check-vm     guest kselftests (under slub_debug)
#   make check-debug  the guest kselftests on a kernel with KASAN, lockdep and
#                     kmemleak (tools/debug-kernel builds it once, ~35 min;
#                     the run takes about an hour: not part of make check)
#   make fuzz         longer fuzzing run (FUZZ_SECONDS, default 300)
#   make bench        benchmarks (docs/bench.md)
#   make lint         checkpatch --strict and sparse on kmod/ and uapi/, shellcheck
#   make install      libkmsgr, its headers, kmsgrctl, the man pages, kmsgrctl's
#                     bash completion; the udev rule and the modules-load.d
#                     file disabled, as examples; ldconfig (without DESTDIR)
#   make modules_install  kmsgr.ko and kmsgr_rdma.ko into /lib/modules, then depmod
#   make install-udev the udev rule, enabled (/dev/kmsgr for the group kmsgr)
#   make install-autoload the modules-load.d file, enabled (kmsgr loaded at boot)
#   make uninstall    remove what the install targets installed, then depmod
#
# KDIR selects the kernel build tree (default: tools/kver).  DESTDIR stages
# every install target (no depmod then); PREFIX (default /usr/local) places
# the library, headers, kmsgrctl, the man page and the examples.

# KVER is tools/kver's answer: the running kernel's release when its build
# directory exists (read here without a fork: KVER is exported and
# recursive, so every recipe line expands it, and the forks add up to
# seconds in the test guest), else tools/kver's search.  Recursive so that
# it sees the headers make deps installs.
OSREL	:= $(strip $(file </proc/sys/kernel/osrelease))
KVER	?= $(if $(wildcard /lib/modules/$(OSREL)/build/Makefile),$(OSREL),$(shell tools/kver))
KDIR	?= /lib/modules/$(KVER)/build
BUILD	:= $(CURDIR)/.build
RESULTS	:= $(BUILD)/results
KSRC	:= $(BUILD)/linux-source-6.1
KSRC_TAR := /usr/src/linux-source-6.1.tar.xz
VMTIMEOUT ?= 2400
# Messages per client of the guest load tests (run_guest.sh), 8 clients:
# 7000 echoes each over TCP, 4000 with the 16-entry CQ and 64 KiB
# pool, and 1500 each way over rdma (soft-RoCE under emulation is slower):
# lowered from 3.5 x 10^4, 2 x 10^4 and 3000 when the netlink, logon-key,
# packaging and tracing tests came (and again for the rados test), to keep
# make check under 30 minutes on 2 cores; run_guest.sh's own defaults are
# 10^5 for a longer soak.
LOAD_MSGS ?= 7000
TINY_MSGS ?= 4000
RDMA_LOAD_MSGS ?= 1500
# kmsgr_rdma_test's mixed streams (its own default is 10^4; 4000 until
# the block path's tests came, make check's time)
RDMA_MSGS ?= 2500
# objects rados_test.sh puts with kmsgrctl (the issue's 1000: ten one
# process each, the rest in one process, 8 in flight; about 40 s with the
# librados check under TCG).
RADOS_OBJS ?= 1000
FUZZ_SECONDS ?= 300

export KVER KDIR KSRC

.PHONY: all module lib tools deps run check check-host check-vm fuzz bench \
	lint clean ksrc install modules_install install-udev install-autoload \
	uninstall modules_uninstall

all: module lib tools

# KMSGR_FAULT=y builds the fault-injection points in (the test build).
KMSGR_FAULT ?= n
export KMSGR_FAULT

module:
	$(MAKE) -C $(KDIR) M=$(CURDIR) W=1 KMSGR_FAULT=$(KMSGR_FAULT) modules

lib:
	$(MAKE) -C lib

tools: lib
	$(MAKE) -C tools

deps:
	@tools/deps

# --- installing -------------------------------------------------------------
# `make install` puts libkmsgr (.so, .a, kmsgr.pc, headers) and kmsgrctl
# under PREFIX (lib/Makefile, tools/kmsgrctl/Makefile), the man pages
# (kmsgrctl.8, kmsgr.4, libkmsgr.3 and a page per call family, with a link
# for every function a page names) under MANDIR, kmsgrctl's bash completion
# under COMPLETIONDIR, and the udev rule and the modules-load.d file in
# EXAMPLEDIR, where neither udev nor systemd reads them: disabled.  It runs
# ldconfig unless DESTDIR is set (a package's postinst does that).  `make
# install-udev` enables the rule (/dev/kmsgr 0660, group kmsgr) in
# UDEVRULESDIR, `make install-autoload` the modules-load.d file in
# MODULESLOADDIR.  `make modules_install` installs the modules as built
# (run `make` first) with kbuild's modules_install into
# /lib/modules/<release>/$(INSTALL_MOD_DIR)/kmod/ (kbuild keeps the objects'
# directory, kmod/), then runs depmod so that `modprobe kmsgr` loads
# libcrc32c and gcm with it and `modprobe kmsgr_rdma` (or the first rdma
# session, alias kmsgr-xprt-2) the RDMA modules.  extra/ is the kernel's
# default for external modules; DKMS (dkms.conf) installs into
# updates/dkms/, which depmod prefers when both are there.  With DESTDIR
# (or INSTALL_MOD_PATH) everything is staged under it and depmod is left
# to the target system.  `make uninstall` removes all of it.
PREFIX		?= /usr/local
MANDIR		?= $(PREFIX)/share/man
EXAMPLEDIR	?= $(PREFIX)/share/kmsgr
COMPLETIONDIR	?= $(PREFIX)/share/bash-completion/completions
UDEVRULESDIR	?= /etc/udev/rules.d
MODULESLOADDIR	?= /etc/modules-load.d
INSTALL		?= install
INSTALL_MOD_DIR	?= extra
INSTALL_MOD_PATH ?= $(DESTDIR)
# The release the modules are for: UTS_RELEASE of KDIR, what their vermagic
# says.  Not kbuild's KERNELRELEASE: Debian's headers have the upstream
# version (6.1.N) in include/config/kernel.release.  Worked out once, on
# first use (it is used a dozen times; each time a sed and tools/kver
# otherwise, which adds up to seconds in the test guest).
KREL = $(eval KREL := $(or $(shell sed -n 's/^\#define UTS_RELEASE "\(.*\)"/\1/p' \
	$(KDIR)/include/generated/utsrelease.h 2>/dev/null),$(KVER)))$(KREL)
MODDIR = $(INSTALL_MOD_PATH)/lib/modules/$(KREL)/$(INSTALL_MOD_DIR)/kmod
MODULES	:= kmsgr kmsgr_rdma
# Section 3: one page per call family of lib/libkmsgr.h; PAGE:FUNCTION
# installs FUNCTION.3 as a link to PAGE.3 (tools/test-install checks that
# every function of libkmsgr.h has a page).
MAN3	:= libkmsgr kmsgr_open kmsgr_setup kmsgr_submit kmsgr_wait_cqe \
	   kmsgr_connect kmsgr_bdev_attach kmsgr_addr_parse kmsgr_nl_open
MAN3LINKS := $(addprefix kmsgr_open:,kmsgr_close kmsgr_fd kmsgr_info \
		kmsgr_feature_name kmsgr_strerror kmsgr_version) \
	$(addprefix kmsgr_setup:,kmsgr_buf kmsgr_buf_size kmsgr_tx_size) \
	$(addprefix kmsgr_submit:,kmsgr_get_sqe kmsgr_prep_send \
		kmsgr_prep_release kmsgr_prep_nop kmsgr_sq_pending kmsgr_sq_space \
		kmsgr_set_busy_poll) \
	$(addprefix kmsgr_wait_cqe:,kmsgr_peek_cqe kmsgr_cqe_seen \
		kmsgr_peek_batch_cqe kmsgr_cq_advance kmsgr_cq_ready \
		kmsgr_cq_posted kmsgr_for_each_cqe kmsgr_cq_entry kmsgr_cq \
		kmsgr_cq_check_paused kmsgr_cq_resume) \
	$(addprefix kmsgr_connect:,kmsgr_listen kmsgr_close_id \
		kmsgr_event_str kmsgr_reason_str kmsgr_down_is_final) \
	$(addprefix kmsgr_bdev_attach:,kmsgr_bdev_detach kmsgr_prep_bdev \
		kmsgr_prep_bdev_write_recv) \
	$(addprefix kmsgr_nl_open:,kmsgr_nl_close kmsgr_nl_errmsg \
		kmsgr_nl_sessions kmsgr_nl_session_get kmsgr_nl_listeners \
		kmsgr_nl_listener_get kmsgr_nl_instances \
		kmsgr_nl_instance_get kmsgr_nl_stats kmsgr_nl_devs \
		kmsgr_nl_bdevs kmsgr_nl_bdev_get \
		kmsgr_nl_monitor_start \
		kmsgr_nl_monitor_read) \
	$(addprefix kmsgr_addr_parse:,kmsgr_addr_format kmsgr_key_decode \
		kmsgr_keyring_load)
# kbuild signs what it installs when the kernel's config says so
# (CONFIG_MODULE_SIG_ALL) with the kernel's build-time key, certificate
# certs/signing_key.x509 in KDIR.  Debian's headers have neither: there the
# attempt only prints SSL errors, so it is left out (Secure Boot: sign with
# your own key, as DKMS does).
NOSIGN = $(if $(wildcard $(KDIR)/certs/signing_key.x509),,CONFIG_MODULE_SIG_ALL=)
# depmod and modinfo live in /usr/sbin, which a user's PATH may lack.
SBINPATH := PATH="$$PATH:/usr/sbin:/sbin"

# depmod for the installed release, unless staging.
define depmod
	@if [ -n "$(INSTALL_MOD_PATH)" ]; then \
		echo "depmod skipped (staged under $(INSTALL_MOD_PATH)): run depmod -a $(KREL) on the target"; \
	else \
		echo "depmod -a $(KREL)"; \
		$(SBINPATH) depmod -a $(KREL); \
	fi
endef

# ldconfig after a system install; not when staging, nor for a user who
# installed under a PREFIX of their own (ldconfig needs root).
define ldconfig
if [ -n "$(DESTDIR)" ]; then :; \
elif [ "$$(id -u)" -ne 0 ]; then \
	echo "ldconfig skipped (not root): run it as root if $(PREFIX)/lib is a system directory"; \
else \
	echo ldconfig; $(SBINPATH) ldconfig; \
fi
endef

install: lib tools
	$(MAKE) -C lib install
	$(MAKE) -C tools install
	$(INSTALL) -d $(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(MANDIR)/man4 \
		$(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(EXAMPLEDIR) \
		$(DESTDIR)$(COMPLETIONDIR)
	$(INSTALL) -m 0644 $(patsubst %,man/%.3,$(MAN3)) $(DESTDIR)$(MANDIR)/man3/
	@for l in $(MAN3LINKS); do \
		ln -sf $${l%%:*}.3 $(DESTDIR)$(MANDIR)/man3/$${l#*:}.3 || exit 1; \
	done
	$(INSTALL) -m 0644 man/kmsgr.4 $(DESTDIR)$(MANDIR)/man4/
	$(INSTALL) -m 0644 man/kmsgrctl.8 $(DESTDIR)$(MANDIR)/man8/
	$(INSTALL) -m 0644 packaging/bash-completion/kmsgrctl \
		$(DESTDIR)$(COMPLETIONDIR)/kmsgrctl
	$(INSTALL) -m 0644 packaging/udev/60-kmsgr.rules \
		packaging/modules-load.d/kmsgr.conf $(DESTDIR)$(EXAMPLEDIR)/
	@$(ldconfig)

# Refuses modules that are missing, built for another kernel than KDIR's,
# or built with KMSGR_FAULT=y (make check's test build, which it leaves in
# kmod/) unless KMSGR_FAULT=y is given here too.  kbuild's own depmod step
# is skipped on Debian ("missing 'System.map'"): the one below does it.
modules_install:
	@test -n "$(KREL)" || { echo "modules_install: no kernel release (KDIR=$(KDIR))" >&2; exit 1; }
	@for m in $(MODULES); do \
		test -f kmod/$$m.ko || { echo "modules_install: no kmod/$$m.ko: run make first" >&2; exit 1; }; \
		v=$$($(SBINPATH) modinfo -F vermagic kmod/$$m.ko | cut -d' ' -f1); \
		test "$$v" = "$(KREL)" || { echo "modules_install: kmod/$$m.ko is built for \"$$v\", not $(KREL) (KDIR=$(KDIR)): make clean; make" >&2; exit 1; }; \
		if [ "$(KMSGR_FAULT)" != y ] && $(SBINPATH) modinfo -F parm kmod/$$m.ko | grep -q '^fault_points:'; then \
			echo "modules_install: kmod/$$m.ko is the test build with fault injection (KMSGR_FAULT=y, from make check): make clean; make" >&2; exit 1; \
		fi; \
	done
	$(MAKE) -C $(KDIR) M=$(CURDIR) KERNELRELEASE=$(KREL) $(NOSIGN) \
		INSTALL_MOD_PATH=$(INSTALL_MOD_PATH) \
		INSTALL_MOD_DIR=$(INSTALL_MOD_DIR) modules_install
	$(depmod)

# Without the group, udev leaves /dev/kmsgr to root (mode 0660).  udev
# looks the group up when it loads its rules: after groupadd, udevadm
# control --reload.
install-udev:
	$(INSTALL) -d $(DESTDIR)$(UDEVRULESDIR)
	$(INSTALL) -m 0644 packaging/udev/60-kmsgr.rules $(DESTDIR)$(UDEVRULESDIR)/
	@[ -n "$(DESTDIR)" ] || getent group kmsgr >/dev/null || \
		echo "note: the udev rule gives /dev/kmsgr to the group kmsgr, which does not exist yet: groupadd --system kmsgr; udevadm control --reload"

install-autoload:
	$(INSTALL) -d $(DESTDIR)$(MODULESLOADDIR)
	$(INSTALL) -m 0644 packaging/modules-load.d/kmsgr.conf $(DESTDIR)$(MODULESLOADDIR)/

# Also the compressed names (CONFIG_MODULE_COMPRESS_*); the directories
# only when empty.  A loaded module stays loaded.
modules_uninstall:
	@test -n "$(KREL)" || { echo "modules_uninstall: no kernel release (KDIR=$(KDIR))" >&2; exit 1; }
	rm -f $(foreach m,$(MODULES),$(MODDIR)/$(m).ko $(MODDIR)/$(m).ko.*)
	@for d in $(MODDIR) $(dir $(MODDIR)); do \
		if [ -d "$$d" ]; then rmdir --ignore-fail-on-non-empty "$$d"; fi; \
	done
	$(depmod)

# Without a kernel release (no headers: a library-only host) the modules
# are left where they are, with a note, and the rest is removed.
uninstall:
	@if [ -n "$(KREL)" ]; then \
		$(MAKE) --no-print-directory modules_uninstall || exit 1; \
	else \
		echo "uninstall: no kernel release (KDIR=$(KDIR)): modules not removed (make modules_uninstall KVER=...)"; \
	fi
	$(MAKE) -C lib uninstall
	$(MAKE) -C tools uninstall
	rm -f $(patsubst %,$(DESTDIR)$(MANDIR)/man3/%.3,$(MAN3) \
		$(foreach l,$(MAN3LINKS),$(lastword $(subst :, ,$(l))))) \
		$(DESTDIR)$(MANDIR)/man4/kmsgr.4 \
		$(DESTDIR)$(COMPLETIONDIR)/kmsgrctl \
		$(DESTDIR)$(MANDIR)/man8/kmsgrctl.8 \
		$(DESTDIR)$(EXAMPLEDIR)/60-kmsgr.rules \
		$(DESTDIR)$(EXAMPLEDIR)/kmsgr.conf \
		$(DESTDIR)$(UDEVRULESDIR)/60-kmsgr.rules \
		$(DESTDIR)$(MODULESLOADDIR)/kmsgr.conf
	@if [ -d $(DESTDIR)$(EXAMPLEDIR) ]; then \
		rmdir --ignore-fail-on-non-empty $(DESTDIR)$(EXAMPLEDIR); fi
	@$(ldconfig)

# Files used at build time from Debian's linux-source-6.1 (never vendored).
ksrc: $(KSRC)/.stamp
$(KSRC)/.stamp: $(KSRC_TAR)
	@mkdir -p $(BUILD)
	tar -C $(BUILD) -xf $(KSRC_TAR) \
		linux-source-6.1/tools/testing/selftests/kselftest.h \
		linux-source-6.1/tools/testing/selftests/kselftest_harness.h \
		linux-source-6.1/scripts/checkpatch.pl \
		linux-source-6.1/scripts/spelling.txt \
		linux-source-6.1/scripts/const_structs.checkpatch
	@touch $@

run: deps
	@$(MAKE) --no-print-directory all ksrc >$(BUILD).run.log 2>&1 || \
		{ cat $(BUILD).run.log; exit 1; }
	@tools/vm/run --rxe --nvme 64M --timeout 600 -- tools/demo

# The result files every stage of make check writes: one that is missing
# (its stage never ran, e.g. a build before it failed) is a failure.  A
# skipped test fails here too: everything make check needs, it installs.
CHECK_TAPS := libkmsgr osdc msgr2-test_cephx msgr2-test_frame msgr2-test_handshake \
	msgr2-fuzz kmsgrctl-fuzz install nlspec deb \
	layers vm vm-runner vm2 vm2-runner vm-pair vm-pair-vm1 vm-run

# The guest suite's two halves run in two guests at once (check-vm-tap);
# then the host tests run beside the pair of guests and beside the
# runner's own test, whose guest mostly sleeps.
check: deps
	@rm -rf $(RESULTS); mkdir -p $(RESULTS)
	@$(MAKE) --no-print-directory -k check-vm-tap; \
	$(MAKE) --no-print-directory -k -j3 check-host-tap check-pair-tap \
		check-vm-run-tap; \
	for t in $(CHECK_TAPS); do [ -e $(RESULTS)/$$t.tap ] || \
		printf 'not ok 1 - %s.tap was not written: its stage never ran\n1..1\n' \
			"$$t" >$(RESULTS)/missing-$$t.tap; done; \
	KMSGR_NO_SKIP=1 tools/testsum $(RESULTS)/*.tap

check-host: deps
	@rm -rf $(RESULTS); mkdir -p $(RESULTS)
	@$(MAKE) --no-print-directory check-host-tap; tools/testsum $(RESULTS)/*.tap

check-vm: deps
	@rm -rf $(RESULTS); mkdir -p $(RESULTS)
	@$(MAKE) --no-print-directory check-vm-tap; tools/testsum $(RESULTS)/*.tap

.PHONY: check-host-tap check-vm-tap check-pair-tap check-vm-run-tap vm-build \
	check-debug
check-host-tap: ksrc
	@mkdir -p $(RESULTS)
	@# a program that fails keeps its TAP (its failures are in it)
	@if $(MAKE) --no-print-directory -C lib test_lib >/dev/null; then \
		lib/test_lib >$(RESULTS)/libkmsgr.tap 2>&1 || true; \
	else printf 'not ok 1 libkmsgr host tests did not build\n1..1\n' \
		>$(RESULTS)/libkmsgr.tap; fi
	@if $(MAKE) --no-print-directory -C tools/kmsgrctl test_osdc >/dev/null; then \
		tools/kmsgrctl/test_osdc >$(RESULTS)/osdc.tap 2>&1 || true; \
	else printf 'not ok 1 kmsgrctl object-client host tests did not build\n1..1\n' \
		>$(RESULTS)/osdc.tap; fi
	@# the programs build two at a time (about 35 s less on 2 cores); the
	@# tests run one after the other, in the recipe
	@$(MAKE) -j2 --no-print-directory -C selftests/msgr2 RESULTS=$(RESULTS) check || \
		printf 'not ok 1 msgr2 host tests did not build or run\n1..1\n' \
			>$(RESULTS)/msgr2-incomplete.tap
	@# kmsgrctl's decoders of what the cluster sends, fuzzed as long as
	@# each msgr2 fuzzer (FUZZ_CHECK_SECONDS): one test
	@$(MAKE) --no-print-directory -C tools/kmsgrctl fuzz_osdc >/dev/null && \
		$(MAKE) --no-print-directory -C tools/kmsgrctl RESULTS=$(RESULTS) \
			fuzz-check || \
		printf 'not ok 1 kmsgrctl fuzz_osdc did not build or run\n1..1\n' \
			>$(RESULTS)/kmsgrctl-fuzz.tap
	@tools/test-install >$(RESULTS)/install.tap 2>&1 || true
	@tools/check-nlspec >$(RESULTS)/nlspec.tap 2>&1 || true
	@tools/test-deb >$(RESULTS)/deb.tap 2>&1 || true

vm-build: ksrc
	@mkdir -p $(RESULTS)
	@$(MAKE) -j2 --no-print-directory all KMSGR_FAULT=y >$(RESULTS)/build.log 2>&1 || \
		{ cat $(RESULTS)/build.log; \
		  echo "not ok 1 build kmsgr (see above)" >$(RESULTS)/build.tap; \
		  exit 1; }
	@# two programs at a time: about 20 s less on 2 cores
	@$(MAKE) -j2 --no-print-directory -C selftests/kmsgr || \
		{ echo "not ok 1 build the guest selftests (selftests/kmsgr)" \
			>$(RESULTS)/selftests-build.tap; exit 1; }
	@tools/check-layers >$(RESULTS)/layers.tap || true
	@# the fio engine fetches fio's Debian source package once (tools/fio);
	@# without it, blk_test.sh's fio checks fail, the rest runs
	@$(MAKE) --no-print-directory -C tools/fio >$(RESULTS)/fio-build.log 2>&1 || \
		{ tail -n 20 $(RESULTS)/fio-build.log; \
		  echo "not ok 1 build the fio engine (tools/fio; see fio-build.log)" \
			>$(RESULTS)/fio-build.tap; }

# The guests get a small NVMe namespace for kmsgr_bdev_test (KMSGR_NVME in
# the guest; without it the device tests skip, a failure with
# KMSGR_NO_SKIP=1).
# The whole guest suite runs under SLUB debugging (red zones, poisoning,
# user tracking; slab_nomerge keeps kmsgr's caches apart): a use-after-free
# or an overrun shows up as a kernel report that the suite's warning checks
# fail on.  run_guest.sh checks that it is on (KMSGR_SLUB_DEBUG=1).  Until
# stop 35 this was a second, lighter pass after a plain one; one pass with
# the full loads takes about 300 s less and checks more under the debugger.
# Its two halves (run_guest.sh's KMSGR_GUEST_PART) run in two guests at
# once: a guest runs both its vCPUs on one host thread (tools/vm/run
# --help says why), so one guest keeps one core busy.  Part 1's TAP
# (vm.tap) is shown as it comes, part 2's (vm2.tap) once both are done.
# A part's runner status is the suite's (0, or 1 with its failures in the
# TAP) unless the guest panicked, hung or timed out: vm-runner.tap
# (vm2-runner.tap) fails then, even when the suite had printed all its
# results.
vm_suite = KMSGR_VM_APPEND="slub_debug=FZPU slab_nomerge" \
	tools/vm/run --rxe --nvme 64M --timeout $(VMTIMEOUT) -- \
	env KMSGR_GUEST_PART=$(1) KMSGR_NO_SKIP=1 KMSGR_SLUB_DEBUG=1 \
	KMSGR_LOAD_MSGS=$(LOAD_MSGS) KMSGR_CYCLES=50 \
	KMSGR_TINY_MSGS=$(TINY_MSGS) KMSGR_RDMA_MSGS=$(RDMA_MSGS) \
	KMSGR_RDMA_LOAD_MSGS=$(RDMA_LOAD_MSGS) KMSGR_RADOS_OBJS=$(RADOS_OBJS) \
	selftests/kmsgr/run_guest.sh 2>&1; echo "\# runner exit $$?"

# runner_taps DIR: DIR/vm-runner.tap and DIR/vm2-runner.tap from the runner
# status each part's TAP ends with
runner_taps = for p in vm vm2; do \
		if grep -q '^\# runner exit [01]$$' $(1)/$$p.tap; then \
			r=ok; else r='not ok'; fi; \
		printf '%s 1 - %s: the guest suite ended by itself: no panic, hang or timeout (runner status 0 or 1)\n1..1\n' \
			"$$r" "$$p" >$(1)/$$p-runner.tap; \
	done

check-vm-tap: vm-build
	@{ $(call vm_suite,2); } >$(RESULTS)/vm2.tap & \
	{ $(call vm_suite,1); } | tee $(RESULTS)/vm.tap; \
	wait; \
	echo "# part 2 of the guest suite, run beside part 1:"; \
	cat $(RESULTS)/vm2.tap; \
	$(call runner_taps,$(RESULTS))

# The guest suite on a debug kernel (docs/debug-kernel.md): KASAN, lockdep,
# DEBUG_ATOMIC_SLEEP and kmemleak, built from Debian's linux-source-6.1 by
# tools/debug-kernel into .build/kdbg (nothing is installed on the host)
# and booted through KMSGR_VM_KTREE; kmsgr built against it with fault
# points.  Its two halves run in two guests at once, as in make check, with
# more memory (KASAN's shadow), longer time limits (the suites run 1.5 to 3
# times slower), kmemleak checked at the end (KMSGR_KMEMLEAK=1), and
# without the install tests (they build against the guest's release with
# the host's packaging tools) and slub_debug (KASAN covers it).  Results in
# .build/results-debug.
DEBUG_RESULTS := $(BUILD)/results-debug
debug_suite = KMSGR_VM_KTREE=$$(tools/debug-kernel root) \
	KMSGR_VM_APPEND=kmemleak=on \
	tools/vm/run --rxe --nvme 64M --mem 3072 --timeout 7200 -- \
	env KMSGR_GUEST_PART=$(1) KMSGR_NO_SKIP=1 KMSGR_KMEMLEAK=1 \
	KMSGR_NO_INSTALL=1 HARNESS_TIMEOUT=3600 KMSGR_CEPH_CLI_SCALE=4 \
	KMSGR_RADOS_BENCH_SECS=10 \
	KMSGR_KO=$(BUILD)/kdbg/kmod/kmod/kmsgr.ko \
	KMSGR_RDMA_KO=$(BUILD)/kdbg/kmod/kmod/kmsgr_rdma.ko \
	KMSGR_LOAD_MSGS=2000 KMSGR_CYCLES=10 KMSGR_TINY_MSGS=1000 \
	KMSGR_RDMA_MSGS=1000 KMSGR_RDMA_LOAD_MSGS=500 KMSGR_RADOS_OBJS=300 \
	selftests/kmsgr/run_guest.sh 2>&1; echo "\# runner exit $$?"

check-debug: deps ksrc
	@tools/debug-kernel build
	@tools/debug-kernel module
	@$(MAKE) -j2 --no-print-directory lib tools
	@$(MAKE) -j2 --no-print-directory -C selftests/kmsgr
	@$(MAKE) --no-print-directory -C tools/fio >/dev/null
	@rm -rf $(DEBUG_RESULTS); mkdir -p $(DEBUG_RESULTS)
	@{ $(call debug_suite,2); } >$(DEBUG_RESULTS)/vm2.tap & \
	{ $(call debug_suite,1); } | tee $(DEBUG_RESULTS)/vm.tap; \
	wait; \
	echo "# part 2 of the guest suite, run beside part 1:"; \
	cat $(DEBUG_RESULTS)/vm2.tap; \
	$(call runner_taps,$(DEBUG_RESULTS)); \
	KMSGR_NO_SKIP=1 tools/testsum $(DEBUG_RESULTS)/*.tap

# tools/vm/run with a guest that outlives its --timeout: the vCPUs' state
# from QEMU's monitor, an NMI, the guest's panic with its stack, status 124
# (a hung suite leaves that in make check's log); and one host thread for
# both vCPUs
check-vm-run-tap: vm-build
	@mkdir -p $(RESULTS)
	@tools/test-vm-run >$(RESULTS)/vm-run.tap 2>&1 || true

# Two guests, each with its own soft-RoCE device, joined by a link: kmsgr
# over RDMA between two kernels.  vm0 prints the TAP; vm1's lines become
# comments.  vm1 ends with a hard reset under vm0's live sessions (the
# peer killed); the runner reports its status with that (KMSGR_VM_RESET in
# tools/vm/run --help): vm-pair-vm1.tap wants both.
check-pair-tap: vm-build
	@{ tools/vm/run --pair --rxe --nvme 64M --timeout 900 -- \
		selftests/kmsgr/rdma_pair.sh 2>&1; echo "runner exit $$?"; } | \
		sed -e 's/^\[vm0\] //' -e 's/^\[vm1\] /# [vm1] /' \
		-e '/^\(not \)\{0,1\}ok \|^1\.\.\|^#/!s/^/# /' \
		| tee $(RESULTS)/vm-pair.tap
	@if grep -q '^# runner exit 0$$' $(RESULTS)/vm-pair.tap && \
		grep -q 'vm1: reset by its command, as asked (status 0)' \
			$(RESULTS)/vm-pair.tap; then r=ok; \
		else r='not ok'; fi; \
		printf '%s 1 - pair: vm1 echoed every message, unloaded kmsgr, then reset itself under live sessions as planned\n1..1\n' \
		"$$r" >$(RESULTS)/vm-pair-vm1.tap

fuzz: deps ksrc
	@$(MAKE) --no-print-directory -C selftests/msgr2 fuzz FUZZ_SECONDS=$(FUZZ_SECONDS)
	@$(MAKE) --no-print-directory -C tools/kmsgrctl fuzz FUZZ_SECONDS=$(FUZZ_SECONDS)

bench: deps
	@$(MAKE) --no-print-directory -C selftests/msgr2 bench
	@$(MAKE) --no-print-directory all ksrc >$(BUILD).bench.log 2>&1 || \
		{ cat $(BUILD).bench.log; exit 1; }
	@tools/bench-tcp
	@tools/bench-rdma
	@tools/bench-rados
	@tools/bench-blk

lint: ksrc module
	$(KSRC)/scripts/checkpatch.pl --no-tree --strict --show-types -f \
		$(filter-out %.mod.c,$(wildcard kmod/*.[ch] kmod/msgr2/*.[ch])) \
		uapi/linux/*.h
	# TRACE_EVENT() layout trips these two in every trace header
	$(KSRC)/scripts/checkpatch.pl --no-tree --strict --show-types \
		--ignore PARENTHESIS_ALIGNMENT,OPEN_ENDED_LINE -f kmod/trace/*.h
	$(MAKE) -C $(KDIR) M=$(CURDIR) C=2 W=1 KMSGR_FAULT=y modules
	tools/check-layers
	shellcheck -S warning .ci/run tools/bench-common.sh tools/deps tools/kver tools/testsum tools/check-layers \
		tools/test-install tools/test-deb tools/test-vm-run tools/debug-kernel packaging/bash-completion/kmsgrctl \
		tools/demo tools/bench-tcp tools/bench-rdma tools/bench-rados tools/bench-blk tools/bench-blk-profile tools/bench-profile tools/bench-timeline tools/bench-calls tools/bench-ab tools/vm/run tools/vm/init \
		tools/vm/guest tools/vm/mkinitrd tools/vm/mkvmlinux \
		selftests/kmsgr/*.sh selftests/msgr2/*.sh

clean:
	-$(MAKE) -C $(KDIR) M=$(CURDIR) clean
	-$(MAKE) -C lib clean
	-$(MAKE) -C tools clean
	-$(MAKE) -C selftests/msgr2 clean
	-$(MAKE) -C selftests/kmsgr clean
	rm -rf $(BUILD) $(BUILD).run.log
