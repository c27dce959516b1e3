/*===- GlibcCompat.c - glibc 2.36's arc4random, for older glibc -----------===*
 *
 * Linked into libfusec_jit.so in a static-LLVM build only. libstdc++.a
 * (GCC 12 built on glibc 2.36, as Debian 12 ships it) implements
 * std::random_device with arc4random, which glibc has only since 2.36, and
 * LLVM's thread pool makes one: so the library would need glibc 2.36,
 * where everything else it takes of glibc is in 2.34 (RHEL 9, Ubuntu
 * 22.04). This definition, hidden inside the library, takes the place of
 * glibc's, with the same contract: 32 random bits from the kernel, or an
 * abort. python/fusec_build.py tags the wheel with the glibc the library
 * needs (readelf -V), so a new need shows there.
 *
 *===----------------------------------------------------------------------===*/

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/random.h>
#include <unistd.h>

__attribute__((visibility("hidden"))) uint32_t arc4random(void) {
  uint32_t value;
  for (;;) {
    ssize_t got = getrandom(&value, sizeof value, 0);
    if (got == (ssize_t)sizeof value)
      return value;
    if (got < 0 && errno != EINTR)
      break;
  }
  /* No getrandom (a kernel before 3.17): /dev/urandom. */
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ssize_t got;
    do
      got = read(fd, &value, sizeof value);
    while (got < 0 && errno == EINTR);
    close(fd);
    if (got == (ssize_t)sizeof value)
      return value;
  }
  abort();
}
