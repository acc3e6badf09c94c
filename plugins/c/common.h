/* Helpers shared by the C guests: lock error text and a counter file.
 *
 * Needs the bindings `wit-bindgen c <repo>/wit --world guest` generates
 * (guest.h, guest.c, guest_component_type.o). */
#ifndef WARDLOCK_GUEST_COMMON_H
#define WARDLOCK_GUEST_COMMON_H

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guest.h"

typedef wardlock_lock_locks_own_lock_t lock_t;
typedef wardlock_lock_locks_error_t lock_error_t;

/* Prints `<prefix>: <kind>[: <detail>]` for a lock error on stderr and frees it. */
static void report_lock_error(const char *prefix, lock_error_t *error) {
    static const char *const kinds[] = {
        "invalid-name", "denied", "timeout", "would-block", "would-deadlock",
        "lost", "released", "limit-exceeded", "unavailable",
    };
    const char *kind = error->tag < sizeof kinds / sizeof *kinds ? kinds[error->tag] : "unknown";
    const guest_string_t *detail = NULL;
    switch (error->tag) {
    case WARDLOCK_LOCK_TYPES_ERROR_INVALID_NAME: detail = &error->val.invalid_name; break;
    case WARDLOCK_LOCK_TYPES_ERROR_DENIED: detail = &error->val.denied; break;
    case WARDLOCK_LOCK_TYPES_ERROR_LIMIT_EXCEEDED: detail = &error->val.limit_exceeded; break;
    case WARDLOCK_LOCK_TYPES_ERROR_UNAVAILABLE: detail = &error->val.unavailable; break;
    }
    if (detail)
        fprintf(stderr, "%s: %s: %.*s\n", prefix, kind, (int)detail->len, (const char *)detail->ptr);
    else
        fprintf(stderr, "%s: %s\n", prefix, kind);
    wardlock_lock_locks_error_free(error);
}

/* Waits for `name` in `mode`; on failure reports it (prefixed by `who`) and
 * returns false. */
static bool acquire_lock(const char *who, const char *name, wardlock_lock_locks_mode_t mode, lock_t *lock) {
    guest_string_t wit_name;
    guest_string_set(&wit_name, name);
    wardlock_lock_locks_options_t opts = {.mode = mode, .timeout_ms = {.is_some = false}};
    lock_error_t error;
    if (wardlock_lock_locks_acquire(&wit_name, &opts, lock, &error))
        return true;
    char prefix[320];
    snprintf(prefix, sizeof prefix, "%s: acquiring %s", who, name);
    report_lock_error(prefix, &error);
    return false;
}

/* Releases and drops `lock`; on failure reports it and returns false. */
static bool release_lock(const char *who, const char *name, lock_t lock) {
    lock_error_t error;
    bool ok = wardlock_lock_locks_method_lock_release(wardlock_lock_locks_borrow_lock(lock), &error);
    wardlock_lock_locks_lock_drop_own(lock);
    if (ok)
        return true;
    char prefix[320];
    snprintf(prefix, sizeof prefix, "%s: releasing %s", who, name);
    report_lock_error(prefix, &error);
    return false;
}

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
