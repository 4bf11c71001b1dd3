// Fault injection for tests, loaded with LD_PRELOAD: writes to files under one directory fail the
// way an exceeded disk quota fails them on a cluster's file system, where the kernels of these
// machines can make no quota (no tmpfs quotas, no QFMT_V2 for ext4):
//   - once this process has written DDPT_FAIL_WRITES_AFTER bytes under DDPT_FAIL_WRITES_UNDER,
//     every further write there fails with EDQUOT ("Disk quota exceeded");
//   - preallocation there fails with EOPNOTSUPP, as on file systems without it (NFS, older
//     Lustre), so the failure comes in the middle of a write, not when space is reserved.
//   - with DDPT_FAIL_FSYNC=1, fsync(2) and fdatasync(2) of files there fail with EIO, as a disk
//     that lost the data on its way fails them (writes pass while within the allowance).
//   - with DDPT_SLOW_WRITE_SECONDS=S, no write fails: the first one past the allowance waits S
//     seconds and then goes through, as on a file server that stops answering for a while.
//   - with DDPT_SLOW_FSYNC_SECONDS=S, fsync(2) and fdatasync(2) of files there wait S seconds
//     before they sync, as on a file server that takes that long to commit the data.
//   - with DDPT_SLOW_OPEN_SECONDS=S, the process's first open(2) of a file there waits S seconds
//     first, saying so on stderr ("fail_writes: holding the open of PATH for S s"), so that a
//     test knows the process is inside a collective open (MPI-IO's, under HDF5's create).
// Only calls made through the dynamic linker are seen (pwrite, write, ... from ddptrain, HDF5 and
// ROMIO); glibc's own stdio writes are not.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

static atomic_llong bytes_written;
static atomic_int slowed;
static atomic_int open_held;

// True if `fd` is a file under DDPT_FAIL_WRITES_UNDER.
static int watched(int fd) {
  const char* dir = getenv("DDPT_FAIL_WRITES_UNDER");
  if (dir == NULL || *dir == '\0') return 0;
  char link[64];
  char path[PATH_MAX];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t length = readlink(link, path, sizeof path - 1);
  if (length <= 0) return 0;
  path[length] = '\0';
  const size_t prefix = strlen(dir);
  return strncmp(path, dir, prefix) == 0 && (path[prefix] == '/' || path[prefix] == '\0');
}

// False (errno EDQUOT) if writing `count` more bytes to `fd` goes past the allowance; with
// DDPT_SLOW_WRITE_SECONDS, true, after a wait the first time.
static int allowed(int fd, size_t count) {
  if (!watched(fd)) return 1;
  const char* after = getenv("DDPT_FAIL_WRITES_AFTER");
  const long long limit = after ? atoll(after) : 0;
  if (atomic_fetch_add(&bytes_written, (long long)count) + (long long)count <= limit) return 1;
  const char* slow = getenv("DDPT_SLOW_WRITE_SECONDS");
  if (slow != NULL && *slow != '\0') {
    if (atomic_exchange(&slowed, 1) == 0) sleep((unsigned)atoi(slow));
    return 1;
  }
  errno = EDQUOT;
  return 0;
}

// The real function, looked up once per call site (a race only stores the same pointer twice).
#define NEXT(name)                                                       \
  ({                                                                     \
    static __typeof__(&name) _Atomic real;                               \
    if (real == NULL) real = (__typeof__(&name))dlsym(RTLD_NEXT, #name); \
    real;                                                                \
  })

// With DDPT_SLOW_OPEN_SECONDS, the first open of a path under DDPT_FAIL_WRITES_UNDER waits.
static void open_waits(const char* path) {
  const char* slow = getenv("DDPT_SLOW_OPEN_SECONDS");
  const char* dir = getenv("DDPT_FAIL_WRITES_UNDER");
  if (slow == NULL || *slow == '\0' || dir == NULL || *dir == '\0' || path == NULL) return;
  const size_t prefix = strlen(dir);
  if (strncmp(path, dir, prefix) != 0 || (path[prefix] != '/' && path[prefix] != '\0')) return;
  if (atomic_exchange(&open_held, 1) != 0) return;
  fprintf(stderr, "fail_writes: holding the open of %s for %s s\n", path, slow);
  fflush(stderr);
  sleep((unsigned)atoi(slow));
}

// open's third argument is there only when a file may be created.
static mode_t mode_of(int flags, va_list arguments) {
  return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(arguments, mode_t) : 0;
}

int open(const char* path, int flags, ...) {
  va_list arguments;
  va_start(arguments, flags);
  const mode_t mode = mode_of(flags, arguments);
  va_end(arguments);
  open_waits(path);
  return NEXT(open)(path, flags, mode);
}

int open64(const char* path, int flags, ...) {
  va_list arguments;
  va_start(arguments, flags);
  const mode_t mode = mode_of(flags, arguments);
  va_end(arguments);
  open_waits(path);
  return NEXT(open64)(path, flags, mode);
}

ssize_t write(int fd, const void* buffer, size_t count) {
  if (!allowed(fd, count)) return -1;
  return NEXT(write)(fd, buffer, count);
}

ssize_t pwrite(int fd, const void* buffer, size_t count, off_t offset) {
  if (!allowed(fd, count)) return -1;
  return NEXT(pwrite)(fd, buffer, count, offset);
}

ssize_t pwrite64(int fd, const void* buffer, size_t count, off64_t offset) {
  if (!allowed(fd, count)) return -1;
  return NEXT(pwrite64)(fd, buffer, count, offset);
}

static size_t total_length(const struct iovec* iov, int count) {
  size_t bytes = 0;
  for (int i = 0; i < count; ++i) bytes += iov[i].iov_len;
  return bytes;
}

ssize_t writev(int fd, const struct iovec* iov, int count) {
  if (!allowed(fd, total_length(iov, count))) return -1;
  return NEXT(writev)(fd, iov, count);
}

ssize_t pwritev(int fd, const struct iovec* iov, int count, off_t offset) {
  if (!allowed(fd, total_length(iov, count))) return -1;
  return NEXT(pwritev)(fd, iov, count, offset);
}

int posix_fallocate(int fd, off_t offset, off_t length) {
  if (watched(fd)) return EOPNOTSUPP;
  return NEXT(posix_fallocate)(fd, offset, length);
}

int posix_fallocate64(int fd, off64_t offset, off64_t length) {
  if (watched(fd)) return EOPNOTSUPP;
  return NEXT(posix_fallocate64)(fd, offset, length);
}

int fallocate(int fd, int mode, off_t offset, off_t length) {
  if (watched(fd)) {
    errno = EOPNOTSUPP;
    return -1;
  }
  return NEXT(fallocate)(fd, mode, offset, length);
}

static int fsync_fails(int fd) {
  const char* fail = getenv("DDPT_FAIL_FSYNC");
  if (fail == NULL || strcmp(fail, "1") != 0 || !watched(fd)) return 0;
  errno = EIO;
  return 1;
}

static void fsync_waits(int fd) {
  const char* slow = getenv("DDPT_SLOW_FSYNC_SECONDS");
  if (slow != NULL && *slow != '\0' && watched(fd)) sleep((unsigned)atoi(slow));
}

int fsync(int fd) {
  if (fsync_fails(fd)) return -1;
  fsync_waits(fd);
  return NEXT(fsync)(fd);
}

int fdatasync(int fd) {
  if (fsync_fails(fd)) return -1;
  fsync_waits(fd);
  return NEXT(fdatasync)(fd);
}
