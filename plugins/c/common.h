/* Helpers shared by the C guests: reporting a lock error and a counter file.
 * The lock calls themselves are the SDK's, guest-sdk/c/wardlock.h (on the
 * include path, with the bindings `wit-bindgen c` generates for the guest's
 * world: c_guest2.h by default, guest.h for a guest of 0.1.0 alone). A guest
 * that includes guest-sdk/c/wardlock_v2.h first gets the file helpers only. */
#ifndef WARDLOCK_GUEST_COMMON_H
#define WARDLOCK_GUEST_COMMON_H

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef WARDLOCK_V2_H
#include "wardlock.h"

/* Prints `<who>: <what> <name>: <error>` on stderr for a failed lock call,
 * frees the error and returns 1 (the guest's exit code for it). */
static int lock_failed(const char *who, const char *what, const char *name, wardlock_error_t *error) {
    char text[300];
    fprintf(stderr, "%s: %s %s: %s\n", who, what, name, wardlock_error_text(error, text, sizeof text));
    wardlock_error_free(error);
    return 1;
}
#endif

/* Parses a whole decimal number (digits only) into `out`. */
static bool parse_u64(const char *text, uint64_t *out) {
    if (!isdigit((unsigned char)text[0]))
        return false;
    char *end;
    errno = 0;
    unsigned long long value = strtoull(text, &end, 10);
    if (errno || *end)
        return false;
    *out = value;
    return true;
}

/* Reads the integer in `path` into `value`; a missing or empty
 * (whitespace-only) file is 0. Reports a failure (prefixed by `who`). */
static bool read_value(const char *who, const char *path, uint64_t *value) {
    FILE *file = fopen(path, "r");
    if (!file) {
        if (errno == ENOENT) {
            *value = 0;
            return true;
        }
        fprintf(stderr, "%s: reading %s: %s\n", who, path, strerror(errno));
        return false;
    }
    char text[32];
    size_t len = fread(text, 1, sizeof text - 1, file);
    bool failed = ferror(file);
    fclose(file);
    if (failed) {
        fprintf(stderr, "%s: reading %s failed\n", who, path);
        return false;
    }
    while (len > 0 && isspace((unsigned char)text[len - 1]))
        len--;
    text[len] = '\0';
    char *start = text;
    while (isspace((unsigned char)*start))
        start++;
    if (!*start) {
        *value = 0;
        return true;
    }
    if (!parse_u64(start, value)) {
        fprintf(stderr, "%s: %s does not hold an integer (\"%s\")\n", who, path, start);
        return false;
    }
    return true;
}

/* Replaces the contents of `path` with `value`. Reports a failure. */
static bool write_value(const char *who, const char *path, uint64_t value) {
    FILE *file = fopen(path, "w");
    if (!file) {
        fprintf(stderr, "%s: writing %s: %s\n", who, path, strerror(errno));
        return false;
    }
    bool ok = fprintf(file, "%" PRIu64, value) > 0;
    ok = fclose(file) == 0 && ok;
    if (!ok)
        fprintf(stderr, "%s: writing %s failed\n", who, path);
    return ok;
}

#endif
