/* C guest SDK for wardlock: header-only helpers over the bindings
 * `wit-bindgen c` generates for the guest's world (compile with -I pointing at
 * them and at this directory).
 *
 * One header for both versions of `wardlock:lock`: on a world of 0.2.x (the
 * default, `wit-bindgen c plugins/wit --world c-guest2`: c_guest2.h) it is the
 * whole 0.2 API of wardlock_v2.h, under the `wardlock_` names below as well as
 * its own `wardlock2_` ones, so code written for 0.1.0 builds unchanged; on a
 * world of 0.1.0 alone (`wit-bindgen c <repo>/wit --world guest`, for a host
 * serving only 0.1.0: define WARDLOCK_BINDINGS "guest.h" and WARDLOCK_WORLD
 * guest first) it is the 0.1.0 API.
 *
 *     wardlock_guard_t lock;
 *     wardlock_error_t err;
 *     if (!wardlock_acquire("orders", WARDLOCK_EXCLUSIVE, 5000, &lock, &err)) {
 *         char text[300];
 *         fprintf(stderr, "orders: %s\n", wardlock_error_text(&err, text, sizeof text));
 *         wardlock_error_free(&err);
 *         return 1;
 *     }
 *     charge(order, wardlock_token(&lock));
 *     if (!wardlock_release(&lock, &err)) { ... lost meanwhile ... }
 *
 * Scoped release: declare the guard with WARDLOCK_SCOPED (clang and GCC's
 * `cleanup` attribute) and every way out of its block (return, break, goto)
 * drops it, which releases the lock:
 *
 *     {
 *         WARDLOCK_SCOPED(lock);
 *         if (!wardlock_acquire("orders", WARDLOCK_EXCLUSIVE, WARDLOCK_NO_TIMEOUT, &lock, &err))
 *             return fail(&err);
 *         if (!step())
 *             return 1;              // released here
 *         ...
 *     }                              // and here
 *
 * Without the attribute, the same with one exit: `goto cleanup;` on every
 * failure, and `cleanup: wardlock_drop(&lock);` (a no-op on a guard that
 * was released, or never acquired when initialised with WARDLOCK_GUARD_INIT).
 * A guard never dropped is released by the host when the instance ends. */
#ifndef WARDLOCK_H
#define WARDLOCK_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* The header `wit-bindgen c` wrote for your world, and that world's name, the
 * prefix of its string helpers. The defaults are the 0.2 world this project's
 * build uses ("c_guest2.h", c_guest2_string_*); a guest of a world of its own
 * that imports wardlock's interface defines both before including this header:
 *
 *     #define WARDLOCK_BINDINGS "my_plugin.h"
 *     #define WARDLOCK_WORLD my_plugin
 *     #include "wardlock.h"
 */
#ifndef WARDLOCK_BINDINGS
#define WARDLOCK_BINDINGS "c_guest2.h"
#endif
#ifndef WARDLOCK_WORLD
#define WARDLOCK_WORLD c_guest2
#endif
#define WARDLOCK_PASTE_(a, b) a##b
#define WARDLOCK_PASTE(a, b) WARDLOCK_PASTE_(a, b)
#define WARDLOCK_STRING_T WARDLOCK_PASTE(WARDLOCK_WORLD, _string_t)
#define WARDLOCK_STRING_SET WARDLOCK_PASTE(WARDLOCK_WORLD, _string_set)
#define WARDLOCK_STRING_DUP WARDLOCK_PASTE(WARDLOCK_WORLD, _string_dup)

#include WARDLOCK_BINDINGS

#ifdef WARDLOCK_LOCK_0_2_2_TYPES_MODE_EXCLUSIVE
/* A world of 0.2.x: wardlock_v2.h, over the same bindings, under both names. */
#ifndef WARDLOCK2_BINDINGS
#define WARDLOCK2_BINDINGS WARDLOCK_BINDINGS
#endif
#ifndef WARDLOCK2_WORLD
#define WARDLOCK2_WORLD WARDLOCK_WORLD
#endif
#include "wardlock_v2.h"

typedef wardlock2_mode_t wardlock_mode_t;
typedef wardlock2_status_t wardlock_status_t;
typedef wardlock2_error_t wardlock_error_t;
typedef wardlock2_guard_t wardlock_guard_t;
typedef wardlock2_pollable_t wardlock_pollable_t;
typedef wardlock2_queue_t wardlock_queue_t;
typedef wardlock2_contender_t wardlock_contender_t;
typedef wardlock2_request_t wardlock_request_t;
typedef wardlock2_many_t wardlock_many_t;
typedef wardlock2_pending_t wardlock_pending_t;
typedef wardlock2_outcome_t wardlock_outcome_t;
typedef wardlock2_permit_t wardlock_permit_t;

#define WARDLOCK_EXCLUSIVE WARDLOCK2_EXCLUSIVE
#define WARDLOCK_SHARED WARDLOCK2_SHARED
#define WARDLOCK_HELD WARDLOCK2_HELD
#define WARDLOCK_SUSPENDED WARDLOCK2_SUSPENDED
#define WARDLOCK_LOST WARDLOCK2_LOST
#define WARDLOCK_RELEASED WARDLOCK2_RELEASED
#define WARDLOCK_ERROR_INVALID_NAME WARDLOCK2_ERROR_INVALID_NAME
#define WARDLOCK_ERROR_DENIED WARDLOCK2_ERROR_DENIED
#define WARDLOCK_ERROR_TIMEOUT WARDLOCK2_ERROR_TIMEOUT
/* 0.1.0's would-block, never produced (and gone from 0.2): no error has it. */
#define WARDLOCK_ERROR_WOULD_BLOCK 0xff
#define WARDLOCK_ERROR_WOULD_DEADLOCK WARDLOCK2_ERROR_WOULD_DEADLOCK
#define WARDLOCK_ERROR_LOST WARDLOCK2_ERROR_LOST
#define WARDLOCK_ERROR_RELEASED WARDLOCK2_ERROR_RELEASED
#define WARDLOCK_ERROR_LIMIT_EXCEEDED WARDLOCK2_ERROR_LIMIT_EXCEEDED
#define WARDLOCK_ERROR_UNAVAILABLE WARDLOCK2_ERROR_UNAVAILABLE
#define WARDLOCK_ERROR_INVALID_REQUEST WARDLOCK2_ERROR_INVALID_REQUEST
#define WARDLOCK_NO_TIMEOUT WARDLOCK2_NO_TIMEOUT
#define WARDLOCK_GUARD_INIT WARDLOCK2_GUARD_INIT
#define WARDLOCK_SCOPED WARDLOCK2_SCOPED
#define WARDLOCK_SCOPED_MANY WARDLOCK2_SCOPED_MANY
#define WARDLOCK_PENDING_INIT WARDLOCK2_PENDING_INIT
#define WARDLOCK_PENDING_SCOPED WARDLOCK2_PENDING_SCOPED
#define WARDLOCK_PERMIT_INIT WARDLOCK2_PERMIT_INIT
#define WARDLOCK_PERMIT_SCOPED WARDLOCK2_PERMIT_SCOPED
#define WARDLOCK_WAITING WARDLOCK2_WAITING
#define WARDLOCK_GRANTED WARDLOCK2_GRANTED
#define WARDLOCK_FAILED WARDLOCK2_FAILED

#define wardlock_error_kind wardlock2_error_kind
#define wardlock_errno wardlock2_errno
#define wardlock_error_detail wardlock2_error_detail
#define wardlock_error_text wardlock2_error_text
#define wardlock_error_free wardlock2_error_free
#define wardlock_wait wardlock2_wait
#define wardlock_wait_and_drop wardlock2_wait_and_drop
#define wardlock_drop wardlock2_drop
#define wardlock_acquire wardlock2_acquire
#define wardlock_try_acquire wardlock2_try_acquire
#define wardlock_release wardlock2_release
#define wardlock_token wardlock2_token
#define wardlock_status wardlock2_status
#define wardlock_check wardlock2_check
#define wardlock_status_name wardlock2_status_name
#define wardlock_subscribe wardlock2_subscribe
#define wardlock_wait_lost wardlock2_wait_lost
#define wardlock_revocation_requested wardlock2_revocation_requested
#define wardlock_subscribe_revocation wardlock2_subscribe_revocation
#define wardlock_wait_revocation wardlock2_wait_revocation
#define wardlock_request_revocation wardlock2_request_revocation
#define wardlock_contenders wardlock2_contenders
#define wardlock_queue_free wardlock2_queue_free
#ifndef WARDLOCK2_NO_GUARDED
typedef wardlock2_entry_t wardlock_entry_t;
typedef wardlock2_keys_t wardlock_keys_t;
#define wardlock_put wardlock2_put
#define wardlock_delete wardlock2_delete
#define wardlock_get wardlock2_get
#define wardlock_entry_free wardlock2_entry_free
#define wardlock_keys wardlock2_keys
#define wardlock_keys_free wardlock2_keys_free
#endif
#ifndef WARDLOCK2_NO_ELECTION
typedef wardlock2_leadership_t wardlock_leadership_t;
typedef wardlock2_leader_info_t wardlock_leader_info_t;
typedef wardlock2_observer_t wardlock_observer_t;
#define WARDLOCK_LEADERSHIP_INIT WARDLOCK2_LEADERSHIP_INIT
#define WARDLOCK_LEADERSHIP_SCOPED WARDLOCK2_LEADERSHIP_SCOPED
#define WARDLOCK_OBSERVER_INIT WARDLOCK2_OBSERVER_INIT
#define WARDLOCK_OBSERVER_SCOPED WARDLOCK2_OBSERVER_SCOPED
#define wardlock_campaign wardlock2_campaign
#define wardlock_leadership_drop wardlock2_leadership_drop
#define wardlock_leadership_term wardlock2_leadership_term
#define wardlock_leadership_status wardlock2_leadership_status
#define wardlock_leadership_subscribe wardlock2_leadership_subscribe
#define wardlock_leadership_wait_lost wardlock2_leadership_wait_lost
#define wardlock_leadership_proclaim wardlock2_leadership_proclaim
#define wardlock_leadership_put wardlock2_leadership_put
#define wardlock_leadership_resign wardlock2_leadership_resign
#define wardlock_leader wardlock2_leader
#define wardlock_leader_info_free wardlock2_leader_info_free
#define wardlock_observe wardlock2_observe
#define wardlock_observer_drop wardlock2_observer_drop
#define wardlock_observer_leader wardlock2_observer_leader
#define wardlock_observer_subscribe wardlock2_observer_subscribe
#define wardlock_observer_wait wardlock2_observer_wait
#endif
#define wardlock_drop_all wardlock2_drop_all
#define wardlock_acquire_many wardlock2_acquire_many
#define wardlock_release_all wardlock2_release_all
#define wardlock_pending_drop wardlock2_pending_drop
#define wardlock_acquire_async wardlock2_acquire_async
#define wardlock_pending_subscribe wardlock2_pending_subscribe
#define wardlock_pending_wait wardlock2_pending_wait
#define wardlock_pending_get wardlock2_pending_get
#define wardlock_permit_drop wardlock2_permit_drop
#define wardlock_acquire_permit wardlock2_acquire_permit
#define wardlock_try_acquire_permit wardlock2_try_acquire_permit
#define wardlock_permit_release wardlock2_permit_release
#define wardlock_permit_token wardlock2_permit_token
#define wardlock_permit_status wardlock2_permit_status
#define wardlock_permit_wait_lost wardlock2_permit_wait_lost

#else /* a world of 0.1.0 alone: the 0.1.0 API */

#ifdef __cplusplus
extern "C" {
#endif

typedef wardlock_lock_types_mode_t wardlock_mode_t;
typedef wardlock_lock_types_status_t wardlock_status_t;
/* A failed call's reason: `tag` is a WARDLOCK_ERROR_* value; free it with
 * wardlock_error_free (the cases with a text own a string). */
typedef wardlock_lock_types_error_t wardlock_error_t;

#define WARDLOCK_EXCLUSIVE WARDLOCK_LOCK_TYPES_MODE_EXCLUSIVE
#define WARDLOCK_SHARED WARDLOCK_LOCK_TYPES_MODE_SHARED

#define WARDLOCK_HELD WARDLOCK_LOCK_TYPES_STATUS_HELD
#define WARDLOCK_SUSPENDED WARDLOCK_LOCK_TYPES_STATUS_SUSPENDED
#define WARDLOCK_LOST WARDLOCK_LOCK_TYPES_STATUS_LOST
#define WARDLOCK_RELEASED WARDLOCK_LOCK_TYPES_STATUS_RELEASED

#define WARDLOCK_ERROR_INVALID_NAME WARDLOCK_LOCK_TYPES_ERROR_INVALID_NAME
#define WARDLOCK_ERROR_DENIED WARDLOCK_LOCK_TYPES_ERROR_DENIED
#define WARDLOCK_ERROR_TIMEOUT WARDLOCK_LOCK_TYPES_ERROR_TIMEOUT
#define WARDLOCK_ERROR_WOULD_BLOCK WARDLOCK_LOCK_TYPES_ERROR_WOULD_BLOCK
#define WARDLOCK_ERROR_WOULD_DEADLOCK WARDLOCK_LOCK_TYPES_ERROR_WOULD_DEADLOCK
#define WARDLOCK_ERROR_LOST WARDLOCK_LOCK_TYPES_ERROR_LOST
#define WARDLOCK_ERROR_RELEASED WARDLOCK_LOCK_TYPES_ERROR_RELEASED
#define WARDLOCK_ERROR_LIMIT_EXCEEDED WARDLOCK_LOCK_TYPES_ERROR_LIMIT_EXCEEDED
#define WARDLOCK_ERROR_UNAVAILABLE WARDLOCK_LOCK_TYPES_ERROR_UNAVAILABLE

/* timeout_ms for waiting until granted (or the instance's deadline). */
#define WARDLOCK_NO_TIMEOUT (-1)

/* A granted lock: `held` until released or dropped. */
typedef struct {
    wardlock_lock_locks_own_lock_t handle;
    bool held;
} wardlock_guard_t;

#define WARDLOCK_GUARD_INIT {.held = false}

/* Drops the guard's handle, which releases the lock without an answer; a
 * no-op on a guard not held. */
static inline void wardlock_drop(wardlock_guard_t *guard) {
    if (guard->held) {
        guard->held = false;
        wardlock_lock_locks_lock_drop_own(guard->handle);
    }
}

/* Declares `wardlock_guard_t NAME`, dropped when its block is left. */
#define WARDLOCK_SCOPED(name) \
    __attribute__((cleanup(wardlock_drop))) wardlock_guard_t name = WARDLOCK_GUARD_INIT

/* Waits until `name` is granted in `mode`, at most `timeout_ms` milliseconds
 * (WARDLOCK_NO_TIMEOUT: no limit). True with `*guard` held; false with `*err`
 * set (free it) and `*guard` not held. */
static inline bool wardlock_acquire(const char *name, wardlock_mode_t mode, int64_t timeout_ms,
                                    wardlock_guard_t *guard, wardlock_error_t *err) {
    WARDLOCK_STRING_T wit_name;
    WARDLOCK_STRING_SET(&wit_name, name);
    wardlock_lock_locks_options_t opts = {
        .mode = mode,
        .timeout_ms = {.is_some = timeout_ms >= 0, .val = timeout_ms >= 0 ? (uint64_t)timeout_ms : 0},
    };
    guard->held = wardlock_lock_locks_acquire(&wit_name, &opts, &guard->handle, err);
    return guard->held;
}

/* Takes `name` only if it can be granted without waiting. True unless the
 * call failed (`*err` set); then `guard->held` says whether it was taken. */
static inline bool wardlock_try_acquire(const char *name, wardlock_mode_t mode, wardlock_guard_t *guard,
                                        wardlock_error_t *err) {
    WARDLOCK_STRING_T wit_name;
    WARDLOCK_STRING_SET(&wit_name, name);
    wardlock_lock_locks_option_own_lock_t taken;
    guard->held = false;
    if (!wardlock_lock_locks_try_acquire(&wit_name, mode, &taken, err))
        return false;
    guard->held = taken.is_some;
    guard->handle = taken.val;
    return true;
}

/* Releases and drops the guard. False with `*err` set when the lock had been
 * lost meanwhile (WARDLOCK_ERROR_LOST) or was not held
 * (WARDLOCK_ERROR_RELEASED); the guard is not held afterwards either way. */
static inline bool wardlock_release(wardlock_guard_t *guard, wardlock_error_t *err) {
    if (!guard->held) {
        err->tag = WARDLOCK_ERROR_RELEASED;
        return false;
    }
    bool ok = wardlock_lock_locks_method_lock_release(wardlock_lock_locks_borrow_lock(guard->handle), err);
    wardlock_drop(guard);
    return ok;
}

/* The grant's fencing token: strictly greater for every later conflicting
 * grant of the name, so the resource you protect can refuse stale writers;
 * 0 (no grant's token) once the guard is not held. */
static inline uint64_t wardlock_token(const wardlock_guard_t *guard) {
    if (!guard->held)
        return 0;
    return wardlock_lock_locks_method_lock_fencing_token(wardlock_lock_locks_borrow_lock(guard->handle));
}

/* What the guard guarantees now; WARDLOCK_RELEASED once not held. */
static inline wardlock_status_t wardlock_status(const wardlock_guard_t *guard) {
    if (!guard->held)
        return WARDLOCK_RELEASED;
    return wardlock_lock_locks_method_lock_status(wardlock_lock_locks_borrow_lock(guard->handle));
}

/* True while the lock is safely held; otherwise false with `*err` saying
 * why (free it): WARDLOCK_ERROR_LOST (taken away: another holder may own it),
 * WARDLOCK_ERROR_UNAVAILABLE (suspended: the host lost contact with the lock
 * service) or WARDLOCK_ERROR_RELEASED. Call it between the steps of the work
 * done under the lock, so a loss stops the work at its next step. */
static inline bool wardlock_check(const wardlock_guard_t *guard, wardlock_error_t *err) {
    switch (wardlock_status(guard)) {
    case WARDLOCK_HELD:
        return true;
    case WARDLOCK_SUSPENDED:
        err->tag = WARDLOCK_ERROR_UNAVAILABLE;
        WARDLOCK_STRING_DUP(&err->val.unavailable,
                "the lock is suspended: the host lost contact with the lock service");
        return false;
    case WARDLOCK_LOST:
        err->tag = WARDLOCK_ERROR_LOST;
        return false;
    default:
        err->tag = WARDLOCK_ERROR_RELEASED;
        return false;
    }
}

/* The WIT name of the error's case: "invalid-name", "timeout", ... */
static inline const char *wardlock_error_kind(const wardlock_error_t *err) {
    static const char *const kinds[] = {
        "invalid-name", "denied", "timeout", "would-block", "would-deadlock",
        "lost", "released", "limit-exceeded", "unavailable",
    };
    return err->tag < sizeof kinds / sizeof *kinds ? kinds[err->tag] : "unknown";
}

/* The error's case as an errno value, for C code that reports errors that
 * way (the WIT case stays in `err->tag`, its text in wardlock_error_detail):
 * EINVAL a bad name or request, EACCES denied, ETIMEDOUT timeout,
 * EDEADLK would-deadlock, EOWNERDEAD lost (another holder may own the lock),
 * EBADF released, EMFILE limit-exceeded, EAGAIN unavailable (retry later). */
static inline int wardlock_errno(const wardlock_error_t *err) {
    switch (err->tag) {
    case WARDLOCK_ERROR_INVALID_NAME: return EINVAL;
    case WARDLOCK_ERROR_DENIED: return EACCES;
    case WARDLOCK_ERROR_TIMEOUT: return ETIMEDOUT;
    case WARDLOCK_ERROR_WOULD_BLOCK: return EWOULDBLOCK;
    case WARDLOCK_ERROR_WOULD_DEADLOCK: return EDEADLK;
    case WARDLOCK_ERROR_LOST: return EOWNERDEAD;
    case WARDLOCK_ERROR_RELEASED: return EBADF;
    case WARDLOCK_ERROR_LIMIT_EXCEEDED: return EMFILE;
    case WARDLOCK_ERROR_UNAVAILABLE: return EAGAIN;
    default: return EIO;
    }
}

/* The host's text for the cases that carry one (invalid-name, denied,
 * limit-exceeded, unavailable), else NULL. Not NUL-terminated: see `len`. */
static inline const WARDLOCK_STRING_T *wardlock_error_detail(const wardlock_error_t *err) {
    switch (err->tag) {
    case WARDLOCK_ERROR_INVALID_NAME: return &err->val.invalid_name;
    case WARDLOCK_ERROR_DENIED: return &err->val.denied;
    case WARDLOCK_ERROR_LIMIT_EXCEEDED: return &err->val.limit_exceeded;
    case WARDLOCK_ERROR_UNAVAILABLE: return &err->val.unavailable;
    default: return NULL;
    }
}

/* Writes `kind` or `kind: detail` into `buf` (truncated to `size`) and
 * returns `buf`. */
static inline const char *wardlock_error_text(const wardlock_error_t *err, char *buf, size_t size) {
    const WARDLOCK_STRING_T *detail = wardlock_error_detail(err);
    if (detail)
        snprintf(buf, size, "%s: %.*s", wardlock_error_kind(err), (int)detail->len, (const char *)detail->ptr);
    else
        snprintf(buf, size, "%s", wardlock_error_kind(err));
    return buf;
}

/* Frees the text an error owns; the error must not be used afterwards. */
static inline void wardlock_error_free(wardlock_error_t *err) {
    wardlock_lock_types_error_free(err);
}

#ifdef __cplusplus
}
#endif

#endif /* 0.2 or 0.1.0 */

#endif
