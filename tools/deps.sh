#!/usr/bin/env bash
# deps.sh — what dpscale needs from Debian/Ubuntu packages, checked or installed.
#   tools/deps.sh check     list what is missing (exit 1 if anything is)
#   tools/deps.sh install   install what is missing (as root), or print the apt-get line to run
#   tools/deps.sh install fuzz   the same, and clang for make fuzz
# Build: Open MPI, HDF5 (C library, serial), libinih, OpenBLAS, jansson (the report's JSON), pkg-config, a C compiler.
# Tests: Python 3 with h5py, numpy, pandas, pytest and pytest-xdist (the integration tests, in parallel, read the HDF5 files back,
# and the report's CSV and JSON through pandas),
# Slurm and munge (a real test cluster, started as root), gnuplot (report plots).
# Sanitizers (make test-sanitize, make fuzz-replay): gcc's ASan and UBSan runtimes, which build-essential brings.
# Fuzzing (make fuzz): clang, for libFuzzer; optional, and not installed by default (tools/deps.sh install fuzz).
# CUDA builds (nvcc found, as the Makefile decides): CUTLASS's CuTe headers for the Hopper attention kernels, from
# PyPI (no Debian package has them) into /usr/bin/python3, whose package the Makefile asks for the include folder;
# --no-deps, since only its headers are used, not its Python generator.
set -euo pipefail

BUILD_PKGS="build-essential pkg-config openmpi-bin libopenmpi-dev libhdf5-dev libinih-dev libopenblas-dev libopenblas-openmp-dev libjansson-dev"
FUZZ_PKGS="clang"
PIP_PKG=nvidia-cutlass PIP_VERSION=4.2.0.0
TEST_PKGS="python3 python3-h5py python3-numpy python3-pandas python3-pytest python3-pytest-xdist hdf5-tools slurm-wlm munge gnuplot-nox"

missing() {
    local m=()
    command -v cc >/dev/null 2>&1 || m+=(build-essential)
    command -v pkg-config >/dev/null 2>&1 || m+=(pkg-config)
    command -v mpicc >/dev/null 2>&1 || m+=(libopenmpi-dev)
    command -v mpirun >/dev/null 2>&1 || m+=(openmpi-bin)
    if command -v pkg-config >/dev/null 2>&1; then
        pkg-config --exists hdf5 || m+=(libhdf5-dev)
        pkg-config --exists inih || m+=(libinih-dev)
        pkg-config --exists openblas || m+=(libopenblas-dev)
        pkg-config --exists jansson || m+=(libjansson-dev)
        [ -e "/usr/lib/$(gcc -dumpmachine 2>/dev/null)/openblas-openmp/pkgconfig/openblas.pc" ] || m+=(libopenblas-openmp-dev)
    fi
    if command -v nvcc >/dev/null 2>&1 && ! /usr/bin/python3 -m pip --version >/dev/null 2>&1; then
        m+=(python3-pip) # for missing_pip's package
    fi
    if [ "${1:-}" = tests ]; then
        local py=/usr/bin/python3
        [ -x "$py" ] || m+=(python3)
        [ -x "$py" ] && ! "$py" -c 'import h5py' 2>/dev/null && m+=(python3-h5py)
        [ -x "$py" ] && ! "$py" -c 'import numpy' 2>/dev/null && m+=(python3-numpy)
        [ -x "$py" ] && ! "$py" -c 'import pandas' 2>/dev/null && m+=(python3-pandas)
        [ -x "$py" ] && ! "$py" -c 'import pytest' 2>/dev/null && m+=(python3-pytest)
        [ -x "$py" ] && ! "$py" -c 'import xdist' 2>/dev/null && m+=(python3-pytest-xdist)
        command -v h5dump >/dev/null 2>&1 || m+=(hdf5-tools)
        command -v gnuplot >/dev/null 2>&1 || m+=(gnuplot-nox)
        if [ "$(id -u)" -eq 0 ]; then # the Slurm tests run only as root
            command -v slurmctld >/dev/null 2>&1 || m+=(slurm-wlm)
            command -v munged >/dev/null 2>&1 || m+=(munge)
        fi
    fi
    echo "${m[@]:-}"
}

# the PyPI package a CUDA build needs, as name==version, when /usr/bin/python3 lacks that version; nothing without nvcc
missing_pip() {
    command -v nvcc >/dev/null 2>&1 || return 0
    local have
    have=$(/usr/bin/python3 -c "import importlib.metadata as m; print(m.version('$PIP_PKG'))" 2>/dev/null || true)
    [ "$have" = "$PIP_VERSION" ] || echo "$PIP_PKG==$PIP_VERSION"
}

# pip's line for it; --break-system-packages where the interpreter is marked as the system's (PEP 668: Debian 12,
# Ubuntu 24.04), whose pip knows the flag
pip_install_cmd() {
    local flags="--quiet --no-deps"
    /usr/bin/python3 -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")))' 2>/dev/null &&
        flags="$flags --break-system-packages"
    echo "/usr/bin/python3 -m pip install $flags $(missing_pip)"
}

case "${1:-check}" in
check)
    m=$(missing "${2:-}")
    p=$(missing_pip)
    if [ -n "$m" ]; then
        echo "dpscale: error: missing packages: $m" >&2
        echo "hint: sudo apt-get install -y $m   (or: tools/deps.sh install)" >&2
    fi
    if [ -n "$p" ]; then
        echo "dpscale: error: missing Python package (its C++ headers, for the CUDA build): $p" >&2
        echo "hint: sudo $(pip_install_cmd)   (or: tools/deps.sh install)" >&2
    fi
    [ -z "$m" ] && [ -z "$p" ]
    ;;
install)
    m=$(missing tests)
    extra=
    if [ "${2:-}" = fuzz ] && ! command -v clang >/dev/null 2>&1; then extra=$FUZZ_PKGS; m="$m $extra"; fi
    if [ -n "${m// /}" ]; then
        if [ "$(id -u)" -eq 0 ]; then
            export DEBIAN_FRONTEND=noninteractive
            apt-get update -qq
            apt-get install -y -qq $BUILD_PKGS $TEST_PKGS $extra $(command -v nvcc >/dev/null 2>&1 && echo python3-pip) >/dev/null
        else
            echo "dpscale: missing packages: $m" >&2
            echo "run: sudo apt-get install -y $BUILD_PKGS $TEST_PKGS $extra" >&2
            exit 1
        fi
    fi
    [ -z "$(missing_pip)" ] && exit 0
    if [ "$(id -u)" -eq 0 ]; then
        $(pip_install_cmd) 2>&1 | grep -v "Running pip as the 'root' user" >&2 || true
        [ -z "$(missing_pip)" ] || { echo "dpscale: error: $(missing_pip) did not install" >&2; exit 1; }
    else
        echo "dpscale: missing Python package: $(missing_pip)" >&2
        echo "run: sudo $(pip_install_cmd)" >&2
        exit 1
    fi
    ;;
*)
    echo "usage: tools/deps.sh check [tests] | install [fuzz]" >&2
    exit 2
    ;;
esac
