# dpscale — build, test and benchmark.
#
#   make              bin/dpscale (CPU backend; the CUDA backend too when nvcc is found)
#   make demo         the default job: a 1- and 2-rank sweep of configs/mlp-small.ini
#   make test         unit tests, then MPI integration tests (1, 2 and 4 ranks)
#   make bench        the CPU step against OpenBLAS sgemm alone on the same shapes
#   make fuzz-report  dpscale report on thousands of damaged copies of every file in results/ (minutes)
#   make CUDA=0       force a CPU-only build
#
# Dependencies come from mpicc and pkg-config (hdf5, inih, openblas, jansson); a missing one
# stops the build with the package to install (tools/deps.sh). libinih is linked
# statically so that the binary also runs where libinih is not installed.

CUDA ?= $(if $(shell command -v nvcc 2>/dev/null),1,0)
NVCC ?= nvcc
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(shell command -v $(NVCC) 2>/dev/null))
CUDA_ARCH ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_80,code=sm_80 -gencode arch=compute_89,code=sm_89 -gencode arch=compute_120,code=[sm_120,compute_120]
PYTHON ?= $(shell [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || command -v python3)
# The Hopper kernels (kernels/transformer/flash_attention_sm90.cu, kernels/resnet/conv_sm90.cu and
# gemm_bn_stats_sm90.cu: wgmma, TMA)
# exist only for sm_90a, the one target with those instructions; a binary with them still runs elsewhere,
# where the launchers never call them. They need CUTLASS's headers (header-only; PyPI's nvidia-cutlass, which tools/deps.sh
# installs), found through $(PYTHON) once; CUTLASS_INCLUDE=DIR names another copy.
SM90A_ARCH := -gencode arch=compute_90a,code=sm_90a
MPIRUN ?= mpirun
# The integration tests in parallel (pytest-xdist), one worker a core, at most 4, each test
# file on one worker (its module fixtures, a Slurm controller among them, start once): most of a
# test's time is mpirun starting and ranks waiting, and the 2-core CI machine takes the
# suite in about 6 minutes with 2 workers instead of 10 with one.
TEST_WORKERS ?= $(shell n=$$(nproc); [ "$$n" -gt 4 ] && n=4; echo $$n)
# Open MPI refuses root without being told, and 2 ranks on a 1-core machine without oversubscription.
MPIRUN_FLAGS ?= $(if $(filter 0,$(shell id -u)),--allow-run-as-root) $(if $(filter 1,$(shell nproc)),--oversubscribe)

CC := mpicc
# OpenBLAS built on OpenMP shares one thread pool with our element-wise loops;
# the pthread build's threads and OpenMP's spinning threads fight over the cores
# (measured: step 56 ms instead of 24 ms on 2 cores, see docs/PERFORMANCE.md).
OPENBLAS_OPENMP_PC := /usr/lib/$(shell gcc -dumpmachine)/openblas-openmp/pkgconfig
PKG_CONFIG := PKG_CONFIG_PATH=$(if $(wildcard $(OPENBLAS_OPENMP_PC)/openblas.pc),$(OPENBLAS_OPENMP_PC):)$(PKG_CONFIG_PATH) pkg-config
PKGS := hdf5 openblas jansson
CFLAGS ?= -O3 -g
# -fno-trapping-math lets GCC if-convert the clamps of the element-wise loops, and so vectorise them.
# includes name their folder from src/ ("model/model.h") or the tree's root ("kernels/kernels_cuda.h");
# -MMD -MP: each object's header dependencies, written beside it and read back below
CPPFLAGS_TREE := -Isrc -I.
CFLAGS += $(CPPFLAGS_TREE) -MMD -MP
CFLAGS += -std=c11 -D_GNU_SOURCE -Wall -Wextra -fopenmp -fno-trapping-math -fno-math-errno
CFLAGS += $(shell $(PKG_CONFIG) --cflags $(PKGS) inih 2>/dev/null)
OPENBLAS_LIBDIR := $(shell $(PKG_CONFIG) --variable=libdir openblas 2>/dev/null)
LDLIBS := $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null) -Wl,-rpath,$(OPENBLAS_LIBDIR) -Wl,-Bstatic -linih -Wl,-Bdynamic -lm

# every source under src/, one folder per seam (docs/layout.md); the CUDA host files only in a CUDA build
SRC_ALL := $(shell find src -name '*.c' | LC_ALL=C sort)
CUDA_HOST_SRC := $(filter %_cuda.c src/backend/cuda/%.c src/comm/comm_nccl.c,$(SRC_ALL))
SRC := $(filter-out $(CUDA_HOST_SRC),$(SRC_ALL)) $(shell find kernels -name "*_cpu.c" | LC_ALL=C sort)
CUDA_SRC := $(shell find kernels -name "*.cu" | LC_ALL=C sort)
ifeq ($(CUDA),1)
ifeq ($(origin CUTLASS_INCLUDE),undefined)
CUTLASS_INCLUDE := $(shell $(PYTHON) -c 'import os, cutlass_library as c; print(os.path.join(os.path.dirname(c.__file__), "source", "include"))' 2>/dev/null)
endif
ifneq ($(CUDA_HOST_SRC),)
CFLAGS += -DDPSCALE_HAVE_CUDA -I$(CUDA_HOME)/include
SRC += $(CUDA_HOST_SRC)
# the CUDA runtime is linked statically: the binary then needs only the driver, cuBLAS and NCCL where it runs
LDLIBS += -L$(CUDA_HOME)/lib64 -lcublasLt -lcublas -lnccl -lcudart_static -lrt -lpthread -ldl -lstdc++
endif
endif
OBJ := $(patsubst %.c,build/%.o,$(SRC)) $(patsubst %.cu,build/%.o,$(if $(filter -DDPSCALE_HAVE_CUDA,$(CFLAGS)),$(CUDA_SRC)))
LIB_OBJ := $(filter-out build/src/cli/main.o,$(OBJ))

UNIT_TESTS := $(patsubst tests/unit/%.c,bin/tests/%,$(wildcard tests/unit/test_*.c))
# a CUDA build's: the Hopper backward's layouts and TMA descriptors, checked on the host (no GPU needed)
UNIT_TESTS += $(if $(filter -DDPSCALE_HAVE_CUDA,$(CFLAGS)),bin/tests/test_flash_sm90_layouts)
# and the staged LayerNorm backward's plan and mapping, replayed on the host
UNIT_TESTS += $(if $(filter -DDPSCALE_HAVE_CUDA,$(CFLAGS)),bin/tests/test_layernorm_staged_plan)

.PHONY: all deps demo test unit integration bench fuzz-report clean FORCE
all: deps bin/dpscale

# The git commit the binary is built from, as a header that is rewritten only when
# `git describe --always --dirty` changes, so that only version.o is rebuilt then;
# "unknown" outside a git checkout of this tree (a release tarball).
GIT_COMMIT_H := build/gen/git_commit.h
$(GIT_COMMIT_H): FORCE
	@mkdir -p $(@D)
	@c=unknown; \
	if [ "$$(git rev-parse --show-toplevel 2>/dev/null)" = "$$(pwd -P)" ]; then c=$$(git describe --always --dirty 2>/dev/null || echo unknown); fi; \
	printf '/* generated by make from git describe --always --dirty */\n#define DPSCALE_GIT_COMMIT "%s"\n' "$$c" > $@.new; \
	if cmp -s $@.new $@; then rm -f $@.new; else mv $@.new $@; fi
build/src/base/version.o: $(GIT_COMMIT_H)
build/src/base/version.o: CFLAGS += -Ibuild/gen

deps:
	@tools/deps.sh check

bin/dpscale: $(OBJ)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

build/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c -o $@ $<

build/%.o: %.cu
	@mkdir -p $(@D)
	$(NVCC) -O3 -std=c++17 $(CPPFLAGS_TREE) -MMD -MP $(CUDA_ARCH) -Xcompiler -fPIC -c -o $@ $<

# the objects built for sm_90a alone, against CUTLASS (see SM90A_ARCH), and a host-side check;
# CUTLASS's utilities (cutlass/util/, which its convolutions include) sit beside include/ in
# both the PyPI package and a checkout. NDEBUG: CUTLASS's device asserts are function calls,
# which make ptxas serialise the wgmma pipeline.
CUTLASS_FOUND = @[ -f "$(CUTLASS_INCLUDE)/cute/tensor.hpp" ] || { \
	echo "dpscale: error: CUTLASS's CuTe headers not found (CUTLASS_INCLUDE='$(CUTLASS_INCLUDE)')" >&2; \
	echo "hint: tools/deps.sh install   (or: $(PYTHON) -m pip install --no-deps nvidia-cutlass==4.2.0.0)" >&2; exit 1; }
SM90A_OBJ := build/kernels/transformer/flash_attention_sm90.o build/kernels/resnet/conv_sm90.o \
             build/kernels/resnet/gemm_bn_stats_sm90.o
$(SM90A_OBJ): build/%.o: %.cu
	@mkdir -p $(@D)
	$(CUTLASS_FOUND)
	$(NVCC) -O3 -DNDEBUG -std=c++17 $(CPPFLAGS_TREE) -isystem $(CUTLASS_INCLUDE) -isystem $(CUTLASS_INCLUDE)/../tools/util/include -MMD -MP $(SM90A_ARCH) -Xcompiler -fPIC -c -o $@ $<

# CUTLASS 2's mma.sync weight gradient: against CUTLASS as above, for sm_90 and sm_80 (no sm_90a, no PTX)
SM80_CUTLASS_OBJ := build/kernels/resnet/conv_wgrad_sm80.o
SM80_CUTLASS_ARCH := -gencode arch=compute_90,code=sm_90 -gencode arch=compute_80,code=sm_80
$(SM80_CUTLASS_OBJ): build/%.o: %.cu
	@mkdir -p $(@D)
	$(CUTLASS_FOUND)
	$(NVCC) -O3 -DNDEBUG -std=c++17 $(CPPFLAGS_TREE) -isystem $(CUTLASS_INCLUDE) -isystem $(CUTLASS_INCLUDE)/../tools/util/include -MMD -MP $(SM80_CUTLASS_ARCH) -Xcompiler -fPIC -c -o $@ $<

bin/tests/test_flash_sm90_layouts: tests/unit/test_flash_sm90_layouts.cu
	@mkdir -p $(@D)
	$(CUTLASS_FOUND)
	$(NVCC) -O1 -std=c++17 $(CPPFLAGS_TREE) -isystem $(CUTLASS_INCLUDE) -MMD -MP $(SM90A_ARCH) -o $@ $<

# the kernel file included whole; the bias gradient's launcher, which it calls, linked
bin/tests/test_layernorm_staged_plan: tests/unit/test_layernorm_staged_plan.cu build/kernels/bias_grad.o
	@mkdir -p $(@D)
	$(NVCC) -O1 -std=c++17 $(CPPFLAGS_TREE) -MMD -MP -gencode arch=compute_90,code=sm_90 -o $@ $< build/kernels/bias_grad.o

bin/tests/%: tests/unit/%.c $(LIB_OBJ)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $< $(LIB_OBJ) $(LDLIBS)

demo: all
	$(MPIRUN) $(MPIRUN_FLAGS) -np 2 bin/dpscale run --config configs/mlp-small.ini

unit: all $(UNIT_TESTS)
	@tests/unit/run_all.sh $(UNIT_TESTS)

integration: all
	@tools/deps.sh check tests
	$(PYTHON) -m pytest -q -n $(TEST_WORKERS) --dist loadfile tests/integration

test: unit integration

bench: all
	tests/bench/cpu_gemm_share.sh

# The CI test's damage, scaled up: every file of results/, 3000 seeded flips (FUZZ_MUTATIONS, FUZZ_SEED to change).
FUZZ_MUTATIONS ?= 3000
FUZZ_SEED ?= 15
fuzz-report: all
	DPSCALE_FUZZ_MUTATIONS=$(FUZZ_MUTATIONS) DPSCALE_FUZZ_SEED=$(FUZZ_SEED) DPSCALE_FUZZ_ALL=1 \
	    $(PYTHON) -m pytest -q -s tests/integration/test_report_corrupt.py

clean:
	rm -rf build bin

# ---- sanitizers and fuzzing ---------------------------------------------------
#   make test-sanitize  the CPU path (CUDA=0) built with ASan + UBSan into build/sanitize/, its unit tests,
#                       then a 2-rank integration subset (a run of mlp-tiny, gradcheck, bad configs, a report,
#                       dpscale seal, a failed write, and the shared-node attacks of docs/security.md)
#   make fuzz-replay    the libFuzzer harnesses of tests/fuzz/ over their seed corpus (seconds); without
#                       clang's libFuzzer, the same harnesses with a plain main() that feeds each file
#   make fuzz           a longer libFuzzer session per harness (FUZZ_SECONDS each), new inputs in build/fuzz/
SAN_DIR := build/sanitize
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
SAN_CFLAGS := $(filter-out -O3 -DDPSCALE_HAVE_CUDA -I$(CUDA_HOME)/include,$(CFLAGS)) -O1 $(SAN_FLAGS)
SAN_LDLIBS := $(filter-out -L$(CUDA_HOME)/lib64 -lcublasLt -lcublas -lnccl -lcudart_static,$(LDLIBS))
SAN_OBJ := $(patsubst %.c,$(SAN_DIR)/%.o,$(filter-out $(CUDA_HOST_SRC),$(SRC)))
SAN_LIB_OBJ := $(filter-out $(SAN_DIR)/src/cli/main.o,$(SAN_OBJ))
# test_h5out.c hands H5Dwrite a host list shorter than world_size x 64 bytes: ASan stops it with a
# global-buffer-overflow in the test itself (its fix is another change's); it joins when that is in.
SAN_UNIT_SKIP := test_h5out
SAN_UNIT := $(filter-out $(SAN_UNIT_SKIP:%=$(SAN_DIR)/bin/tests/%),$(patsubst tests/unit/%.c,$(SAN_DIR)/bin/tests/%,$(wildcard tests/unit/test_*.c)))
# The unit tests run with leak detection; the MPI runs without, since Open MPI's plugins leak and are
# unloaded before LeakSanitizer can name them. Any ASan or UBSan error stops the process either way.
SAN_ENV := ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
SAN_MPI_ENV := ASAN_OPTIONS=detect_leaks=0:halt_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
SAN_INTEGRATION := tests/integration/test_result_file.py \
	"tests/integration/test_training.py::test_backward_matches_finite_differences[2]" \
	tests/integration/test_bad_input.py::test_bad_ini_file_names_file_and_line \
	tests/integration/test_bad_input.py::test_a_nul_byte_in_the_config_is_refused_with_its_line \
	tests/integration/test_bad_input.py::test_an_option_without_its_value_does_not_swallow_the_next_option \
	tests/integration/test_bad_input.py::test_a_long_line_is_refused_with_its_true_line_and_a_long_comment_is_fine \
	tests/integration/test_report.py::test_markdown_rows_match_the_file \
	tests/integration/test_report.py::test_bad_files_are_named_and_the_others_still_reported \
	tests/integration/test_seal.py \
	tests/integration/test_partial_results.py::test_a_write_that_fails_is_named_and_the_file_is_as_last_written \
	tests/integration/test_divergence.py \
	tests/integration/test_project_hostile.py \
	tests/integration/test_report_hostile.py \
	tests/integration/test_heartbeat_attacks.py::test_entries_that_are_not_heartbeats_are_skipped \
	tests/integration/test_heartbeat_attacks.py::test_truncating_a_live_heartbeat_does_not_crash \
	tests/integration/test_heartbeat_attacks.py::test_a_forged_heartbeat_is_ignored \
	tests/integration/test_heartbeat_attacks.py::test_no_usable_heartbeat_folder_warns_once_and_runs \
	tests/integration/test_output_safety.py::test_a_link_or_fifo_at_the_name_or_its_claim_is_refused_before_any_training \
	tests/integration/test_output_safety.py::test_a_link_planted_at_the_claim_between_points_is_never_written_through \
	tests/integration/test_output_safety.py::test_a_sigterm_during_the_first_write_keeps_that_point \
	tests/integration/test_output_safety.py::test_seal_never_writes_through_a_link_planted_at_its_copy \
	tests/integration/test_bad_input.py::test_cr_crlf_and_lf_line_endings_are_read_alike \
	tests/integration/test_bad_input.py::test_text_after_a_section_header_is_refused_with_its_line \
	tests/integration/test_bad_input.py::test_an_empty_list_item_is_refused \
	tests/integration/test_bad_input.py::test_a_fifo_named_as_an_input_file_is_refused_without_hanging

.PHONY: test-sanitize fuzz fuzz-replay
$(SAN_DIR)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -c -o $@ $<

$(SAN_DIR)/src/base/version.o: $(GIT_COMMIT_H)
$(SAN_DIR)/src/base/version.o: SAN_CFLAGS += -Ibuild/gen

$(SAN_DIR)/bin/dpscale: $(SAN_OBJ)
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -o $@ $^ $(SAN_LDLIBS)

$(SAN_DIR)/bin/tests/%: tests/unit/%.c $(SAN_LIB_OBJ)
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -o $@ $< $(SAN_LIB_OBJ) $(SAN_LDLIBS)

test-sanitize: deps $(SAN_DIR)/bin/dpscale $(SAN_UNIT)
	@tools/deps.sh check tests
	@$(SAN_ENV) tests/unit/run_all.sh $(SAN_UNIT)
	$(SAN_MPI_ENV) DPSCALE_BINARY=$(CURDIR)/$(SAN_DIR)/bin/dpscale $(PYTHON) -m pytest -q -p no:cacheprovider $(SAN_INTEGRATION)

# The fuzz harnesses build from their sources alone: with clang's libFuzzer when it links, otherwise with
# $(FUZZ_FALLBACK_CC) and tests/fuzz/standalone_main.c (the replay then needs no clang). Both with ASan + UBSan.
FUZZ_DIR := build/fuzz
FUZZ_CC ?= clang
FUZZ_FALLBACK_CC ?= gcc
FUZZ_SECONDS ?= 120
FUZZ_HARNESSES := config result_read
FUZZ_SRC_config := src/config/config.c src/config/config_ini.c src/config/config_keys.c src/config/config_value.c \
	src/base/ini_lines.c src/base/safe_file.c src/base/utf8.c
FUZZ_SRC_result_read := src/result/result_read.c src/result/result_read_runs.c src/result/result_read_comm.c \
	src/result/result_read_topo.c src/result/result_read_compat.c src/result/result_in.c src/result/h5read.c \
	src/result/schema.c src/result/checksum.c src/base/utf8.c src/base/error.c src/base/log.c
# recursive (=): pkg-config and the probe run only when a fuzz target is made
FUZZ_CFLAGS = -std=c11 -D_GNU_SOURCE -g -O1 -Wall -Wextra -Isrc -I. $(SAN_FLAGS) $(shell $(PKG_CONFIG) --cflags hdf5 jansson inih)
FUZZ_LDLIBS = $(shell $(PKG_CONFIG) --libs hdf5) -Wl,-Bstatic -linih -Wl,-Bdynamic -lm
FUZZ_PROBE = printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' \
	| $(FUZZ_CC) -fsanitize=fuzzer -x c - -o /dev/null >/dev/null 2>&1
FUZZ_BIN := $(FUZZ_HARNESSES:%=$(FUZZ_DIR)/fuzz_%)
# libhdf5 asks malloc for absurd sizes that a damaged file gives it, and copes with NULL: let ASan return it
FUZZ_ENV := ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:allocator_may_return_null=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 LSAN_OPTIONS=suppressions=$(CURDIR)/tests/fuzz/lsan.supp:print_suppressions=0

$(FUZZ_DIR)/fuzz_config: $(FUZZ_SRC_config)
$(FUZZ_DIR)/fuzz_result_read: $(FUZZ_SRC_result_read)
$(FUZZ_DIR)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/standalone_main.c $(shell find src -name '*.h')
	@mkdir -p $(@D)
	@if $(FUZZ_PROBE); then \
		echo "$(FUZZ_CC) -fsanitize=fuzzer ... -o $@"; \
		$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(filter src/%.c,$^) $(FUZZ_LDLIBS); \
	else \
		echo "$(FUZZ_FALLBACK_CC) (no libFuzzer: tests/fuzz/standalone_main.c) ... -o $@"; \
		$(FUZZ_FALLBACK_CC) $(FUZZ_CFLAGS) -o $@ $< tests/fuzz/standalone_main.c $(filter src/%.c,$^) $(FUZZ_LDLIBS); \
	fi

# every seed once, under the sanitizers (libFuzzer's -runs=0: the corpus, no mutation)
fuzz-replay: $(FUZZ_BIN)
	@for h in $(FUZZ_HARNESSES); do \
		log=$(FUZZ_DIR)/replay-$$h.log; \
		if $(FUZZ_ENV) $(FUZZ_DIR)/fuzz_$$h -runs=0 tests/fuzz/corpus/$$h >$$log 2>&1; then \
			echo "fuzz_$$h: $$(grep -E 'DONE|replayed' $$log)"; \
		else \
			cat $$log; echo "fuzz-replay: fuzz_$$h failed on its seed corpus (log: $$log)"; exit 1; \
		fi; \
	done

# FUZZ_SECONDS per harness, in libFuzzer's fork mode so that one finding does not end the session: new inputs
# in $(FUZZ_DIR)/corpus/HARNESS/, each crash, leak or input over 10 s in $(FUZZ_DIR)/found/HARNESS/ (replay
# one: $(FUZZ_DIR)/fuzz_HARNESS FILE); fails when anything was found.
fuzz: $(FUZZ_BIN)
	@$(FUZZ_PROBE) || { echo "make fuzz needs clang with libFuzzer: apt-get install clang (make fuzz-replay runs without)"; exit 1; }
	@sed -n 's/^ *{"\([a-z]*\)", "\([a-z_0-9]*\)", KEY_.*/"[\1]"\n"\2"\n"--\1.\2="/p' src/config/config_keys.c | sort -u > $(FUZZ_DIR)/config.dict
	@for h in $(FUZZ_HARNESSES); do \
		mkdir -p $(FUZZ_DIR)/corpus/$$h $(FUZZ_DIR)/found/$$h; \
		dict=; [ $$h = config ] && dict=-dict=$(FUZZ_DIR)/config.dict; \
		$(FUZZ_ENV) $(FUZZ_DIR)/fuzz_$$h -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 -timeout=10 \
			-max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 $$dict -artifact_prefix=$(FUZZ_DIR)/found/$$h/ \
			$(FUZZ_DIR)/corpus/$$h tests/fuzz/corpus/$$h > $(FUZZ_DIR)/fuzz-$$h.log 2>&1; \
		echo "fuzz_$$h: $$(grep -E '^#[0-9]+' $(FUZZ_DIR)/fuzz-$$h.log | tail -1) (log: $(FUZZ_DIR)/fuzz-$$h.log)"; \
	done
	@found=$$(find $(FUZZ_DIR)/found -type f | sort); \
	if [ -n "$$found" ]; then echo "fuzz: found (crash-, leak-, timeout-, oom-):"; echo "$$found"; exit 1; fi; \
	echo "fuzz: nothing found"

# the header dependencies -MMD wrote (none before the first build)
-include $(shell find build bin -name '*.d' 2>/dev/null)
