# dpscale — build, test and benchmark.
#
#   make              bin/dpscale (CPU backend; the CUDA backend too when nvcc is found)
#   make demo         the default job: a 1- and 2-rank sweep of configs/mlp-small.ini
#   make test         unit tests, then MPI integration tests (1, 2 and 4 ranks)
#   make bench        the CPU step against OpenBLAS sgemm alone on the same shapes
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
MPIRUN ?= mpirun
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
CFLAGS += -std=c11 -D_GNU_SOURCE -Wall -Wextra -fopenmp -fno-trapping-math -fno-math-errno
CFLAGS += $(shell $(PKG_CONFIG) --cflags $(PKGS) inih 2>/dev/null)
OPENBLAS_LIBDIR := $(shell $(PKG_CONFIG) --variable=libdir openblas 2>/dev/null)
LDLIBS := $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null) -Wl,-rpath,$(OPENBLAS_LIBDIR) -Wl,-Bstatic -linih -Wl,-Bdynamic -lm

CUDA_HOST_SRC := $(wildcard src/*_cuda.c comm/*_nccl.c)
SRC := $(filter-out $(CUDA_HOST_SRC),$(wildcard src/*.c src/models/*.c mpi/*.c comm/*.c)) $(wildcard kernels/*_cpu.c)
CUDA_SRC := $(wildcard kernels/*.cu)
ifeq ($(CUDA),1)
ifneq ($(CUDA_HOST_SRC),)
CFLAGS += -DDPSCALE_HAVE_CUDA -I$(CUDA_HOME)/include
SRC += $(CUDA_HOST_SRC)
# the CUDA runtime is linked statically: the binary then needs only the driver, cuBLAS and NCCL where it runs
LDLIBS += -L$(CUDA_HOME)/lib64 -lcublasLt -lcublas -lnccl -lcudart_static -lrt -lpthread -ldl -lstdc++
endif
endif
OBJ := $(patsubst %.c,build/%.o,$(SRC)) $(patsubst %.cu,build/%.o,$(if $(filter -DDPSCALE_HAVE_CUDA,$(CFLAGS)),$(CUDA_SRC)))
LIB_OBJ := $(filter-out build/src/main.o,$(OBJ))

UNIT_TESTS := $(patsubst tests/unit/%.c,bin/tests/%,$(wildcard tests/unit/test_*.c))

.PHONY: all deps demo test unit integration bench clean
all: deps bin/dpscale

deps:
	@tools/deps.sh check

bin/dpscale: $(OBJ)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

build/%.o: %.c $(wildcard src/*.h src/models/*.h mpi/*.h comm/*.h kernels/*.h)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c -o $@ $<

build/%.o: %.cu $(wildcard kernels/*.h src/backend.h)
	@mkdir -p $(@D)
	$(NVCC) -O3 -std=c++17 $(CUDA_ARCH) -Xcompiler -fPIC -c -o $@ $<

bin/tests/%: tests/unit/%.c $(wildcard tests/unit/*.h) $(LIB_OBJ)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Isrc -o $@ $< $(LIB_OBJ) $(LDLIBS)

demo: all
	$(MPIRUN) $(MPIRUN_FLAGS) -np 2 bin/dpscale run --config configs/mlp-small.ini

unit: all $(UNIT_TESTS)
	@tests/unit/run_all.sh $(UNIT_TESTS)

integration: all
	@tools/deps.sh check tests
	$(PYTHON) -m pytest -q tests/integration

test: unit integration

bench: all
	tests/bench/cpu_gemm_share.sh

clean:
	rm -rf build bin
