// The MPI calls of the mpirun bootstrap, in a shared library of their own that the verbs backend
// loads at run time (dlopen with RTLD_DEEPBIND). Why: libsimgrid also exports MPI_* (SimGrid's
// SMPI), and in the same process the dynamic linker would bind MPI_Init to it. Loaded this way,
// these calls bind to the real MPI library this shim was linked against.
#include <dlfcn.h>
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <initializer_list>

namespace {
int fail(int rc, const char* what, char* err, int errlen) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  std::snprintf(err, static_cast<std::size_t>(errlen), "MPI: %s failed: %.*s", what, len, text);
  return 1;
}
}  // namespace

extern "C" {

__attribute__((visibility("default"))) int rdmalab_mpi_init(int* rank, int* size, char* err, int errlen) {
  // Open MPI's components look up libmpi's symbols globally: make it global before MPI_Init.
  for (const char* lib : {"libmpi.so.40", "libmpi.so.12", "libmpi.so"}) dlopen(lib, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited) {
    int provided = 0;
    if (int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SINGLE, &provided); rc != MPI_SUCCESS) return fail(rc, "MPI_Init", err, errlen);
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
  return 0;
}

__attribute__((visibility("default"))) int rdmalab_mpi_barrier(char* err, int errlen) {
  if (int rc = MPI_Barrier(MPI_COMM_WORLD); rc != MPI_SUCCESS) return fail(rc, "MPI_Barrier", err, errlen);
  return 0;
}

// Checks that every rank gives the same length (*lo == *hi on return), then gathers.
__attribute__((visibility("default"))) int rdmalab_mpi_allgather(const void* mine, long long len, void* out, long long* lo, long long* hi,
                                                                char* err, int errlen) {
  if (int rc = MPI_Allreduce(&len, lo, 1, MPI_LONG_LONG, MPI_MIN, MPI_COMM_WORLD); rc != MPI_SUCCESS) return fail(rc, "MPI_Allreduce", err, errlen);
  if (int rc = MPI_Allreduce(&len, hi, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD); rc != MPI_SUCCESS) return fail(rc, "MPI_Allreduce", err, errlen);
  if (*lo != *hi || len == 0 || !out) return 0;
  if (int rc = MPI_Allgather(mine, static_cast<int>(len), MPI_BYTE, out, static_cast<int>(len), MPI_BYTE, MPI_COMM_WORLD); rc != MPI_SUCCESS)
    return fail(rc, "MPI_Allgather", err, errlen);
  return 0;
}

__attribute__((visibility("default"))) void rdmalab_mpi_abort() { MPI_Abort(MPI_COMM_WORLD, 1); }

__attribute__((visibility("default"))) void rdmalab_mpi_finalize() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}
}
