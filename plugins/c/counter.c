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
 * And one that tests the SDK's scoped release (FILE is not touched either):
 *   error take LOCK_NAME exclusively in a WARDLOCK_SCOPED guard and, inside
 *         its block, ask for an invalid name; leaving the block with that
 *         error drops the guard, which releases LOCK_NAME. Then print
 *         `caught invalid-name`, take LOCK_NAME again (waiting for whoever
 *         took it meanwhile) and print `reacquired`.
 *
 * Exit codes: 0 success, 1 lock or I/O error, 2 bad arguments (the host
 * reports any non-zero code of a WASI command as 1). */

#include "common.h"

static const char USAGE[] = "usage: counter LOCK_NAME ITERATIONS|trap|leak|error FILE  (ITERATIONS >= 1)";
static const char WHO[] = "counter";

/* ITERATIONS = `error`: an error inside a guard's scope releases it on the
 * way out. */
static int error_inside(const char *name) {
    wardlock_error_t err;
    char bad[300];
    snprintf(bad, sizeof bad, "%s//", name);
    {
        WARDLOCK_SCOPED(lock);
        if (!wardlock_acquire(name, WARDLOCK_EXCLUSIVE, WARDLOCK_NO_TIMEOUT, &lock, &err))
            return lock_failed(WHO, "acquiring", name, &err);
        WARDLOCK_SCOPED(inner);
        if (wardlock_acquire(bad, WARDLOCK_EXCLUSIVE, WARDLOCK_NO_TIMEOUT, &inner, &err)) {
            fprintf(stderr, "%s: %s was granted\n", WHO, bad);
            return 1;
        }
    } /* `lock` is dropped here: released */
    if (err.tag != WARDLOCK_ERROR_INVALID_NAME)
        return lock_failed(WHO, "acquiring", bad, &err);
    printf("caught %s\n", wardlock_error_kind(&err));
    fflush(stdout);
    wardlock_error_free(&err);
    WARDLOCK_SCOPED(again);
    if (!wardlock_acquire(name, WARDLOCK_EXCLUSIVE, WARDLOCK_NO_TIMEOUT, &again, &err))
        return lock_failed(WHO, "acquiring", name, &err);
    puts("reacquired");
    return 0;
}

int main(int argc, char **argv) {
    uint64_t iterations = 0;
    if (argc != 4 || (strcmp(argv[2], "trap") && strcmp(argv[2], "leak") && strcmp(argv[2], "error") &&
                      (!parse_u64(argv[2], &iterations) || iterations == 0))) {
        fprintf(stderr, "%s\n", USAGE);
        return 2;
    }
    const char *name = argv[1], *path = argv[3];
    wardlock_error_t err;

    if (!strcmp(argv[2], "error"))
        return error_inside(name);
    if (!strcmp(argv[2], "trap") || !strcmp(argv[2], "leak")) {
        wardlock_guard_t lock;
        if (!wardlock_acquire(name, WARDLOCK_EXCLUSIVE, WARDLOCK_NO_TIMEOUT, &lock, &err))
            return lock_failed(WHO, "acquiring", name, &err);
        bool trap = !strcmp(argv[2], "trap");
        puts(trap ? "holding" : "leaked");
        fflush(stdout);
        if (trap)
            abort();
        return 0; /* `lock` is never dropped: the host releases it */
    }

    uint64_t value = 0, token = 0;
    for (uint64_t i = 0; i < iterations; i++) {
        WARDLOCK_SCOPED(lock); /* dropped (released) on every way out */
        if (!wardlock_acquire(name, WARDLOCK_EXCLUSIVE, WARDLOCK_NO_TIMEOUT, &lock, &err))
            return lock_failed(WHO, "acquiring", name, &err);
        if (!read_value(WHO, path, &value) || !write_value(WHO, path, ++value))
            return 1;
        token = wardlock_token(&lock);
        if (!wardlock_release(&lock, &err))
            return lock_failed(WHO, "releasing", name, &err);
    }
    printf("counter: %s +%" PRIu64 " (last value %" PRIu64 ", last fencing token %" PRIu64 ")\n",
           name, iterations, value, token);
    return 0;
}
