/* `counter LOCK_NAME ITERATIONS FILE`: the counter guest in C.
 *
 * ITERATIONS times: take LOCK_NAME exclusively, read the integer stored in
 * FILE (a missing or empty file counts as 0), write it back incremented and
 * release the lock. Run several instances at once: if the lock provides
 * mutual exclusion, FILE ends up holding the sum of all their ITERATIONS.
 *
 * Two special values of ITERATIONS test what the host does with a guest that
 * ends while holding the lock (FILE is not touched):
 *   trap  take LOCK_NAME exclusively, print `holding`, then abort() (a trap);
 *   leak  take LOCK_NAME exclusively, print `leaked` and return 0 without
 *         releasing or dropping the handle.
 *
 * Exit codes: 0 success, 1 lock or I/O error, 2 bad arguments (the host
 * reports any non-zero code of a WASI command as 1). */

#include "common.h"

static const char USAGE[] = "usage: counter LOCK_NAME ITERATIONS|trap|leak FILE  (ITERATIONS >= 1)";

int main(int argc, char **argv) {
    uint64_t iterations = 0;
    if (argc != 4 || (strcmp(argv[2], "trap") && strcmp(argv[2], "leak") &&
                      (!parse_u64(argv[2], &iterations) || iterations == 0))) {
        fprintf(stderr, "%s\n", USAGE);
        return 2;
    }
    const char *name = argv[1], *path = argv[3];
    lock_t lock;

    if (!strcmp(argv[2], "trap") || !strcmp(argv[2], "leak")) {
        if (!acquire_lock("counter", name, WARDLOCK_LOCK_TYPES_MODE_EXCLUSIVE, &lock))
            return 1;
        bool trap = !strcmp(argv[2], "trap");
        puts(trap ? "holding" : "leaked");
        fflush(stdout);
        if (trap)
            abort();
        return 0; /* `lock` is never dropped: the host releases it */
    }

    uint64_t value = 0, token = 0;
    for (uint64_t i = 0; i < iterations; i++) {
        if (!acquire_lock("counter", name, WARDLOCK_LOCK_TYPES_MODE_EXCLUSIVE, &lock))
            return 1;
        bool ok = read_value("counter", path, &value) && write_value("counter", path, ++value);
        token = wardlock_lock_locks_method_lock_fencing_token(wardlock_lock_locks_borrow_lock(lock));
        if (!release_lock("counter", name, lock) || !ok)
            return 1;
    }
    printf("counter: %s +%" PRIu64 " (last value %" PRIu64 ", last fencing token %" PRIu64 ")\n",
           name, iterations, value, token);
    return 0;
}
