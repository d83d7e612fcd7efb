/* provenance_libs.c — the libraries of provenance.h: each one as dpscale was built
 * with it (its header's version) and as it is loaded now (its own answer), and
 * `dpscale --version`, which prints them. The CUDA side is provenance_cuda.c's, in
 * builds with CUDA; without, those fields stay empty. */
#include <cblas.h>
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "system/nvml.h"
#include "system/provenance.h"
#include "base/version.h"

#ifndef DPSCALE_HAVE_CUDA
void provenance_cuda_libraries(struct provenance_libraries *l) { (void)l; }
long long provenance_cuda_memory_bytes(int index)
{
    (void)index;
    return -1;
}
#endif

/* The MPI library, callable before MPI_Init and without a launch (dpscale --version):
 * MPI_Get_library_version whole, MPI_Get_version ("3.1"), and the MPI of the mpi.h
 * dpscale was built with ("Open MPI 4.1.4"). */
static void mpi_library_versions(char *library, size_t liblen, char *standard, size_t stdlen, char *built,
                                 size_t builtlen)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len = 0, version = 0, subversion = 0;
    if (MPI_Get_library_version(lib, &len) != MPI_SUCCESS) lib[0] = '\0';
    while (len > 0 && (lib[len - 1] == '\n' || lib[len - 1] == '\0' || lib[len - 1] == ' ')) lib[--len] = '\0';
    snprintf(library, liblen, "%s", lib);
    if (MPI_Get_version(&version, &subversion) == MPI_SUCCESS) snprintf(standard, stdlen, "%d.%d", version, subversion);
    else snprintf(standard, stdlen, "unknown");
#if defined(OMPI_MAJOR_VERSION)
    snprintf(built, builtlen, "Open MPI %d.%d.%d", OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION, OMPI_RELEASE_VERSION);
#elif defined(MPICH_VERSION)
    snprintf(built, builtlen, "MPICH %s", MPICH_VERSION);
#else
    snprintf(built, builtlen, "MPI %d.%d", MPI_VERSION, MPI_SUBVERSION);
#endif
}

void provenance_libraries(struct provenance_libraries *l)
{
    memset(l, 0, sizeof *l);
    mpi_library_versions(l->mpi_library_version, sizeof l->mpi_library_version, l->mpi_standard_version,
                         sizeof l->mpi_standard_version, l->mpi_library_built, sizeof l->mpi_library_built);
    unsigned major = 0, minor = 0, release = 0;
    if (H5get_libversion(&major, &minor, &release) >= 0)
        snprintf(l->hdf5_version, sizeof l->hdf5_version, "%u.%u.%u", major, minor, release);
    snprintf(l->hdf5_version_built, sizeof l->hdf5_version_built, "%s", H5_VERSION);
    snprintf(l->blas_library, sizeof l->blas_library, "%s", openblas_get_config());
#if defined(__clang__)
    snprintf(l->compiler, sizeof l->compiler, "clang %s", __clang_version__);
#elif defined(__GNUC__)
    snprintf(l->compiler, sizeof l->compiler, "gcc %s", __VERSION__);
#else
    snprintf(l->compiler, sizeof l->compiler, "unknown");
#endif
    provenance_cuda_libraries(l);
    /* the driver through NVML, where there is one: "unknown" here means none */
    nvml_driver_version(l->gpu_driver_version, sizeof l->gpu_driver_version);
    if (strcmp(l->gpu_driver_version, "unknown") == 0) l->gpu_driver_version[0] = '\0';
}

static const char *or_none(const char *v) { return v[0] ? v : "none"; }

void provenance_print_version(FILE *out)
{
    struct provenance_libraries l;
    provenance_libraries(&l);
    fprintf(out, "dpscale %s (git %s)\n", DPSCALE_VERSION, version_git_commit());
    fprintf(out, "%-9s %-28s %s\n", "library", "built with", "runs with");
    if (l.nccl_version_built[0]) {
        fprintf(out, "%-9s %-28s %s\n", "NCCL", l.nccl_version_built, or_none(l.nccl_version));
        fprintf(out, "%-9s %-28s runtime %s, %s%s\n", "CUDA", "(runtime linked statically)", or_none(l.cuda_runtime_version),
                l.cuda_driver_version[0] ? "driver supports CUDA " : "no CUDA driver", l.cuda_driver_version);
        fprintf(out, "%-9s %-28s %s\n", "cuBLASLt", l.cublas_version_built, or_none(l.cublas_version));
    } else {
        fprintf(out, "%-9s %-28s %s\n", "CUDA", "none (built with CUDA=0)", "-");
    }
    fprintf(out, "%-9s %-28s %s\n", "driver", "-", l.gpu_driver_version[0] ? l.gpu_driver_version : "none (no NVML)");
    fprintf(out, "%-9s %-28s %s (MPI %s)\n", "MPI", l.mpi_library_built, or_none(l.mpi_library_version),
            l.mpi_standard_version);
    fprintf(out, "%-9s %-28s %s\n", "HDF5", l.hdf5_version_built, or_none(l.hdf5_version));
    fprintf(out, "%-9s %-28s %s\n", "OpenBLAS", "-", or_none(l.blas_library));
    fprintf(out, "%-9s %s\n", "compiler", l.compiler);
}
