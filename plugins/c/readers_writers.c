/* `readers-writers LOCK_NAME ROUNDS FILE WRITE_PERCENT`: the readers/writers
 * guest in C.
 *
 * Each round is, at random, a writer (with probability WRITE_PERCENT %) or a
 * reader:
 *   - a writer takes LOCK_NAME exclusively, reads the value `v` in FILE
 *     (missing or empty = 0), writes `v + 1`, reads it back and writes
 *     `v + 2`, so an odd value exists only while a writer is mid-work;
 *   - a reader takes LOCK_NAME shared, reads the value twice and expects it to
 *     be even and unchanged.
 * Any odd or changing value seen under the lock is a violation of
 * reader/writer exclusion. At the end it prints
 * `readers-writers: reads=R writes=W violations=X`.
 *
 * Exit codes: 0 no violations, 1 violations or a lock/I/O error, 2 bad
 * arguments (the host reports any non-zero code of a WASI command as 1). */

#include <unistd.h>

/* This guest stays on 0.1.0 alone (hosts that serve only 0.1.0), so the
 * 0.1.0 API of wardlock.h stays exercised: the 0.1.0 world's bindings. */
#define WARDLOCK_BINDINGS "guest.h"
#define WARDLOCK_WORLD guest
#include "common.h"

static const char USAGE[] =
    "usage: readers-writers LOCK_NAME ROUNDS FILE WRITE_PERCENT  (WRITE_PERCENT 0..=100)";
static const char WHO[] = "readers-writers";

/* One writer step under the exclusive lock: adds the violations seen. */
static bool write_round(const char *path, uint64_t *violations) {
    uint64_t value, read_back;
    if (!read_value(WHO, path, &value))
        return false;
    if (value % 2) {
        fprintf(stderr, "%s: writer found odd value %" PRIu64 "\n", WHO, value);
        ++*violations;
    }
    if (!write_value(WHO, path, value + 1) || !read_value(WHO, path, &read_back))
        return false;
    if (read_back != value + 1) {
        fprintf(stderr, "%s: writer wrote %" PRIu64 " but read back %" PRIu64 "\n", WHO, value + 1,
                read_back);
        ++*violations;
    }
    return write_value(WHO, path, value + 2);
}

/* One reader step under the shared lock: adds the violations seen. */
static bool read_round(const char *path, uint64_t *violations) {
    uint64_t first, second;
    if (!read_value(WHO, path, &first))
        return false;
    if (first % 2) {
        fprintf(stderr, "%s: reader saw odd value %" PRIu64 "\n", WHO, first);
        ++*violations;
    }
    if (!read_value(WHO, path, &second))
        return false;
    if (second != first) {
        fprintf(stderr, "%s: reader saw %" PRIu64 " then %" PRIu64 "\n", WHO, first, second);
        ++*violations;
    }
    return true;
}

/* A random number below 100 from WASI random, so concurrent instances
 * interleave readers and writers differently. */
static uint64_t percentile(void) {
    uint32_t random;
    if (getentropy(&random, sizeof random) != 0)
        abort();
    return random % 100;
}

int main(int argc, char **argv) {
    uint64_t rounds, write_percent;
    if (argc != 5 || !parse_u64(argv[2], &rounds) || !parse_u64(argv[4], &write_percent) ||
        write_percent > 100) {
        fprintf(stderr, "%s\n", USAGE);
        return 2;
    }
    const char *name = argv[1], *path = argv[3];
    uint64_t reads = 0, writes = 0, violations = 0;
    for (uint64_t round = 0; round < rounds; round++) {
        bool writer = percentile() < write_percent;
        WARDLOCK_SCOPED(lock); /* dropped (released) on every way out */
        wardlock_error_t err;
        if (!wardlock_acquire(name, writer ? WARDLOCK_EXCLUSIVE : WARDLOCK_SHARED, WARDLOCK_NO_TIMEOUT,
                              &lock, &err))
            return lock_failed(WHO, "acquiring", name, &err);
        if (!(writer ? write_round(path, &violations) : read_round(path, &violations)))
            return 1;
        *(writer ? &writes : &reads) += 1;
        if (!wardlock_release(&lock, &err))
            return lock_failed(WHO, "releasing", name, &err);
    }
    printf("%s: reads=%" PRIu64 " writes=%" PRIu64 " violations=%" PRIu64 "\n", WHO, reads, writes,
           violations);
    return violations ? 1 : 0;
}
