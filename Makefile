# SPDX-License-Identifier: GPL-2.0
#
# kmsgr - top-level Makefile.  Targets (stable):
#   make              build kmod/kmsgr.ko, lib/libkmsgr.{so,a}, tools/kmsgrctl
#   make deps         install the Debian packages everything here uses
#   make run          the main job: boot the guest, load kmsgr, show it working
#   make check        all tests (host + guest); prints "N passed, N failed, N skipped"
#   make check-host   host-only tests (msgr2 engine, interop with ceph-mon, fuzz pass)
#   make check-vm     guest kselftests
#   make check-debug  guest kselftests under slub_debug (also in make check)
#   make fuzz         longer fuzzing run (FUZZ_SECONDS, default 300)
#   make bench        benchmarks (docs/bench.md)
#   make lint         checkpatch --strict and sparse on kmod/ and uapi/, shellcheck
#
# KDIR selects the kernel build tree (default: tools/kver).

KVER	?= $(shell tools/kver)
KDIR	?= /lib/modules/$(KVER)/build
BUILD	:= $(CURDIR)/.build
RESULTS	:= $(BUILD)/results
KSRC	:= $(BUILD)/linux-source-6.1
KSRC_TAR := /usr/src/linux-source-6.1.tar.xz
VMTIMEOUT ?= 2400
# Messages per client of the guest load tests (run_guest.sh), 8 clients:
# 3.5 x 10^4 echoes each over TCP, 2 x 10^4 with the 16-entry CQ and
# 64 KiB pool, and 3000 each way over rdma (soft-RoCE under emulation is
# slower; make check stays near 30 minutes on 2 cores; run_guest.sh's own
# defaults are 10^5 for a longer soak).
LOAD_MSGS ?= 35000
TINY_MSGS ?= 20000
RDMA_LOAD_MSGS ?= 3000
FUZZ_SECONDS ?= 300

export KVER KDIR KSRC

.PHONY: all module lib tools deps run check check-host check-vm fuzz bench \
	lint clean ksrc install

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

# libkmsgr (.so, .a, kmsgr.pc, header) and kmsgrctl; DESTDIR/PREFIX honoured.
# The module installs with DKMS (README) or `make -C $(KDIR) M=$(CURDIR)
# modules_install`.
install: lib tools
	$(MAKE) -C lib install
	$(MAKE) -C tools install

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
	@tools/vm/run --rxe --timeout 600 -- tools/demo

check: deps
	@rm -rf $(RESULTS); mkdir -p $(RESULTS)
	@$(MAKE) --no-print-directory -k check-host-tap check-vm-tap \
		check-pair-tap check-debug-tap; tools/testsum $(RESULTS)/*.tap

# The guest suite again under SLUB debugging (red zones, poisoning, user
# tracking; slab_nomerge keeps kmsgr's caches apart): a use-after-free or
# an overrun that the plain run survives shows up as a kernel warning.
check-debug: deps
	@rm -rf $(RESULTS); mkdir -p $(RESULTS)
	@$(MAKE) --no-print-directory check-debug-tap; tools/testsum $(RESULTS)/*.tap

check-host: deps
	@rm -rf $(RESULTS); mkdir -p $(RESULTS)
	@$(MAKE) --no-print-directory check-host-tap; tools/testsum $(RESULTS)/*.tap

check-vm: deps
	@rm -rf $(RESULTS); mkdir -p $(RESULTS)
	@$(MAKE) --no-print-directory check-vm-tap; tools/testsum $(RESULTS)/*.tap

.PHONY: check-host-tap check-vm-tap check-pair-tap check-debug-tap check-debug \
	vm-build
check-host-tap: ksrc
	@mkdir -p $(RESULTS)
	@$(MAKE) --no-print-directory -C lib test_lib >/dev/null && \
		lib/test_lib >$(RESULTS)/libkmsgr.tap 2>&1 || \
		printf 'not ok 1 libkmsgr host tests did not build or run\n1..1\n' \
			>$(RESULTS)/libkmsgr.tap
	@$(MAKE) --no-print-directory -C selftests/msgr2 RESULTS=$(RESULTS) check || \
		printf 'not ok 1 msgr2 host tests did not build or run\n1..1\n' \
			>$(RESULTS)/msgr2-incomplete.tap

vm-build: ksrc
	@mkdir -p $(RESULTS)
	@$(MAKE) --no-print-directory all KMSGR_FAULT=y >$(RESULTS)/build.log 2>&1 || \
		{ cat $(RESULTS)/build.log; \
		  echo "not ok 1 build kmsgr (see above)" >$(RESULTS)/build.tap; \
		  exit 1; }
	@$(MAKE) --no-print-directory -C selftests/kmsgr
	@tools/check-layers >$(RESULTS)/layers.tap || true

check-vm-tap: vm-build
	@tools/vm/run --rxe --timeout $(VMTIMEOUT) -- \
		env KMSGR_NO_SKIP=1 KMSGR_LOAD_MSGS=$(LOAD_MSGS) \
		KMSGR_TINY_MSGS=$(TINY_MSGS) \
		KMSGR_RDMA_LOAD_MSGS=$(RDMA_LOAD_MSGS) \
		selftests/kmsgr/run_guest.sh \
		2>&1 | tee $(RESULTS)/vm.tap

# Two guests, each with its own soft-RoCE device, joined by a link: kmsgr
# over RDMA between two kernels.  vm0 prints the TAP; vm1's lines become
# comments.  vm1 ends with a hard reset under vm0's live sessions (the
# peer killed); the runner reports its status with that (KMSGR_VM_RESET in
# tools/vm/run --help): vm-pair-vm1.tap wants both.
check-pair-tap: vm-build
	@{ tools/vm/run --pair --rxe --timeout 900 -- \
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

check-debug-tap: vm-build
	@KMSGR_VM_APPEND="slub_debug=FZPU slab_nomerge" \
		tools/vm/run --rxe --timeout $(VMTIMEOUT) -- \
		env KMSGR_NO_SKIP=1 KMSGR_LOAD_MSGS=4000 KMSGR_TINY_MSGS=4000 \
		KMSGR_RDMA_MSGS=3000 KMSGR_RDMA_LOAD_MSGS=1000 \
		KMSGR_CYCLES=30 selftests/kmsgr/run_guest.sh 2>&1 | \
		sed -e 's/^\(not \)\{0,1\}ok [0-9]* - /&slub_debug: /' \
		| tee $(RESULTS)/vm-debug.tap

fuzz: deps ksrc
	@$(MAKE) --no-print-directory -C selftests/msgr2 fuzz FUZZ_SECONDS=$(FUZZ_SECONDS)

bench: deps
	@$(MAKE) --no-print-directory -C selftests/msgr2 bench
	@$(MAKE) --no-print-directory all ksrc >$(BUILD).bench.log 2>&1 || \
		{ cat $(BUILD).bench.log; exit 1; }
	@tools/bench-tcp
	@tools/bench-rdma

lint: ksrc module
	$(KSRC)/scripts/checkpatch.pl --no-tree --strict --show-types -f \
		$(filter-out %.mod.c,$(wildcard kmod/*.[ch] kmod/msgr2/*.[ch])) \
		uapi/linux/*.h
	$(MAKE) -C $(KDIR) M=$(CURDIR) C=2 W=1 KMSGR_FAULT=y modules
	tools/check-layers
	shellcheck -S warning .ci/run tools/deps tools/kver tools/testsum tools/check-layers \
		tools/demo tools/bench-tcp tools/bench-rdma tools/bench-profile tools/vm/run tools/vm/init \
		tools/vm/guest tools/vm/mkinitrd tools/vm/mkvmlinux \
		selftests/kmsgr/*.sh selftests/msgr2/*.sh

clean:
	-$(MAKE) -C $(KDIR) M=$(CURDIR) clean
	-$(MAKE) -C lib clean
	-$(MAKE) -C tools clean
	-$(MAKE) -C selftests/msgr2 clean
	-$(MAKE) -C selftests/kmsgr clean
	rm -rf $(BUILD) $(BUILD).run.log
