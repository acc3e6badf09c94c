/* C guest SDK for `wardlock:lock@0.2.2`: header-only helpers over the bindings
 * `wit-bindgen c plugins/wit --world c-guest2` generates (c_guest2.h,
 * c_guest2.c, c_guest2_component_type.o: the 0.2.2 locks, guarded store and
 * election, plus the `wasi:clocks/monotonic-clock` the timed waits use). A guest includes this
 * header instead of wardlock.h (0.1.0); the names start with `wardlock2_`.
 *
 * Every acquiring call returns true on success, or false with `*err` set
 * (free it with wardlock2_error_free). Guards, permits and pending locks are
 * plain structs; declare them with the *_SCOPED macros (clang and GCC's
 * `cleanup` attribute) and every way out of the block drops them: a guard or
 * permit is released, a pending lock's wait withdrawn.
 *
 *     WARDLOCK2_SCOPED(lock);
 *     if (!wardlock2_acquire("orders", WARDLOCK2_EXCLUSIVE, 5000, &lock, &err))
 *         return fail(&err);
 *     if (wardlock2_wait_lost(&lock, 500))        // held no more within 0.5 s?
 *         ...
 *
 *     wardlock2_request_t names[] = {{"a", WARDLOCK2_EXCLUSIVE}, {"b", WARDLOCK2_SHARED}};
 *     WARDLOCK2_SCOPED_MANY(both, 2);             // wardlock2_guard_t both[2]
 *     if (!wardlock2_acquire_many(names, 2, 5000, both, &err)) ...
 *     if (!wardlock2_release_all(both, 2, &err)) ...   // or leave the block
 *
 *     WARDLOCK2_PENDING_SCOPED(pending);
 *     wardlock2_acquire_async("orders", WARDLOCK2_EXCLUSIVE, WARDLOCK2_NO_TIMEOUT, &pending, &err);
 *     if (wardlock2_pending_wait(&pending, 1000))  // or poll its pollable with others
 *         switch (wardlock2_pending_get(&pending, &lock, &err)) { ... }
 *
 *     uint64_t revision;                           // the guarded store (0.2.2): written
 *     if (!wardlock2_put(&lock, "count", "7", 1, &revision, &err))  // only while the lock
 *         ...                                      // stands (WARDLOCK2_ERROR_LOST: nothing written)
 *
 *     WARDLOCK2_LEADERSHIP_SCOPED(leadership);     // leader election (0.2.2)
 *     if (!wardlock2_campaign("jobs/compactor", "host-a:8080", WARDLOCK2_NO_TIMEOUT, &leadership, &err))
 *         return fail(&err);
 *     while (wardlock2_leadership_status(&leadership) == WARDLOCK2_HELD)
 *         ...                                      // lead; leaving the block resigns
 *
 * Without the cleanup attribute: `goto cleanup;` on every failure and
 * `cleanup: wardlock2_drop(&lock);` (a no-op on a guard not held). Anything
 * never dropped is released by the host when the instance ends. */
#ifndef WARDLOCK_V2_H
#define WARDLOCK_V2_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* The header `wit-bindgen c` wrote for your world, and that world's name, the
 * prefix of its string helpers. The defaults are the world this project's
 * build uses ("c_guest2.h", c_guest2_string_*); a guest of a world of its own that
 * imports wardlock's interface defines both before including this header:
 *
 *     #define WARDLOCK2_BINDINGS "my_plugin.h"
 *     #define WARDLOCK2_WORLD my_plugin
 *     #include "wardlock_v2.h"
 */
#ifndef WARDLOCK2_BINDINGS
#define WARDLOCK2_BINDINGS "c_guest2.h"
#endif
#ifndef WARDLOCK2_WORLD
#define WARDLOCK2_WORLD c_guest2
#endif
#define WARDLOCK2_PASTE_(a, b) a##b
#define WARDLOCK2_PASTE(a, b) WARDLOCK2_PASTE_(a, b)
#define WARDLOCK2_STRING_T WARDLOCK2_PASTE(WARDLOCK2_WORLD, _string_t)
#define WARDLOCK2_STRING_SET WARDLOCK2_PASTE(WARDLOCK2_WORLD, _string_set)
#define WARDLOCK2_STRING_DUP WARDLOCK2_PASTE(WARDLOCK2_WORLD, _string_dup)
#define WARDLOCK2_LIST_U8_T WARDLOCK2_PASTE(WARDLOCK2_WORLD, _list_u8_t)
#define WARDLOCK2_LIST_STRING_T WARDLOCK2_PASTE(WARDLOCK2_WORLD, _list_string_t)
#define WARDLOCK2_LIST_STRING_FREE WARDLOCK2_PASTE(WARDLOCK2_WORLD, _list_string_free)

#include WARDLOCK2_BINDINGS

#ifdef __cplusplus
extern "C" {
#endif

typedef wardlock_lock_0_2_2_types_mode_t wardlock2_mode_t;
typedef wardlock_lock_0_2_2_types_status_t wardlock2_status_t;
/* A failed call's reason: `tag` is a WARDLOCK2_ERROR_* value; free it with
 * wardlock2_error_free (the cases with a text own a string). */
typedef wardlock_lock_0_2_2_types_error_t wardlock2_error_t;
typedef wasi_io_poll_own_pollable_t wardlock2_pollable_t;

#define WARDLOCK2_EXCLUSIVE WARDLOCK_LOCK_0_2_2_TYPES_MODE_EXCLUSIVE
#define WARDLOCK2_SHARED WARDLOCK_LOCK_0_2_2_TYPES_MODE_SHARED

#define WARDLOCK2_HELD WARDLOCK_LOCK_0_2_2_TYPES_STATUS_HELD
#define WARDLOCK2_SUSPENDED WARDLOCK_LOCK_0_2_2_TYPES_STATUS_SUSPENDED
#define WARDLOCK2_LOST WARDLOCK_LOCK_0_2_2_TYPES_STATUS_LOST
#define WARDLOCK2_RELEASED WARDLOCK_LOCK_0_2_2_TYPES_STATUS_RELEASED

#define WARDLOCK2_ERROR_INVALID_NAME WARDLOCK_LOCK_0_2_2_TYPES_ERROR_INVALID_NAME
#define WARDLOCK2_ERROR_DENIED WARDLOCK_LOCK_0_2_2_TYPES_ERROR_DENIED
#define WARDLOCK2_ERROR_TIMEOUT WARDLOCK_LOCK_0_2_2_TYPES_ERROR_TIMEOUT
#define WARDLOCK2_ERROR_WOULD_DEADLOCK WARDLOCK_LOCK_0_2_2_TYPES_ERROR_WOULD_DEADLOCK
#define WARDLOCK2_ERROR_LOST WARDLOCK_LOCK_0_2_2_TYPES_ERROR_LOST
#define WARDLOCK2_ERROR_RELEASED WARDLOCK_LOCK_0_2_2_TYPES_ERROR_RELEASED
#define WARDLOCK2_ERROR_LIMIT_EXCEEDED WARDLOCK_LOCK_0_2_2_TYPES_ERROR_LIMIT_EXCEEDED
#define WARDLOCK2_ERROR_UNAVAILABLE WARDLOCK_LOCK_0_2_2_TYPES_ERROR_UNAVAILABLE
#define WARDLOCK2_ERROR_INVALID_REQUEST WARDLOCK_LOCK_0_2_2_TYPES_ERROR_INVALID_REQUEST

/* timeout_ms for waiting without limit (or until the instance's deadline). */
#define WARDLOCK2_NO_TIMEOUT (-1)

/* ---- errors ------------------------------------------------------------ */

/* The WIT name of the error's case: "invalid-name", "timeout", ... */
static inline const char *wardlock2_error_kind(const wardlock2_error_t *err) {
    static const char *const kinds[] = {
        "invalid-name", "denied", "timeout", "would-deadlock", "lost",
        "released", "limit-exceeded", "unavailable", "invalid-request",
    };
    return err->tag < sizeof kinds / sizeof *kinds ? kinds[err->tag] : "unknown";
}

/* The error's case as an errno value, for C code that reports errors that
 * way (the WIT case stays in `err->tag`, its text in wardlock2_error_detail):
 * EINVAL a bad name or request, EACCES denied, ETIMEDOUT timeout,
 * EDEADLK would-deadlock, EOWNERDEAD lost (another holder may own the lock),
 * EBADF released, EMFILE limit-exceeded, EAGAIN unavailable (retry later). */
static inline int wardlock2_errno(const wardlock2_error_t *err) {
    switch (err->tag) {
    case WARDLOCK2_ERROR_INVALID_NAME: return EINVAL;
    case WARDLOCK2_ERROR_DENIED: return EACCES;
    case WARDLOCK2_ERROR_TIMEOUT: return ETIMEDOUT;
    case WARDLOCK2_ERROR_WOULD_DEADLOCK: return EDEADLK;
    case WARDLOCK2_ERROR_LOST: return EOWNERDEAD;
    case WARDLOCK2_ERROR_RELEASED: return EBADF;
    case WARDLOCK2_ERROR_LIMIT_EXCEEDED: return EMFILE;
    case WARDLOCK2_ERROR_UNAVAILABLE: return EAGAIN;
    case WARDLOCK2_ERROR_INVALID_REQUEST: return EINVAL;
    default: return EIO;
    }
}

/* The host's text for the cases that carry one, else NULL. Not
 * NUL-terminated: see `len`. */
static inline const WARDLOCK2_STRING_T *wardlock2_error_detail(const wardlock2_error_t *err) {
    switch (err->tag) {
    case WARDLOCK2_ERROR_INVALID_NAME: return &err->val.invalid_name;
    case WARDLOCK2_ERROR_DENIED: return &err->val.denied;
    case WARDLOCK2_ERROR_LIMIT_EXCEEDED: return &err->val.limit_exceeded;
    case WARDLOCK2_ERROR_UNAVAILABLE: return &err->val.unavailable;
    case WARDLOCK2_ERROR_INVALID_REQUEST: return &err->val.invalid_request;
    default: return NULL;
    }
}

/* Writes `kind` or `kind: detail` into `buf` (truncated to `size`); returns `buf`. */
static inline const char *wardlock2_error_text(const wardlock2_error_t *err, char *buf, size_t size) {
    const WARDLOCK2_STRING_T *detail = wardlock2_error_detail(err);
    if (detail)
        snprintf(buf, size, "%s: %.*s", wardlock2_error_kind(err), (int)detail->len, (const char *)detail->ptr);
    else
        snprintf(buf, size, "%s", wardlock2_error_kind(err));
    return buf;
}

/* Frees the text an error owns; the error must not be used afterwards. */
static inline void wardlock2_error_free(wardlock2_error_t *err) {
    wardlock_lock_0_2_2_types_error_free(err);
}

/* ---- pollables --------------------------------------------------------- */

/* Waits until `pollable` is ready (true) or `timeout_ms` passed (false;
 * WARDLOCK2_NO_TIMEOUT: no limit), on a monotonic-clock timer beside it:
 * nothing spins. The pollable stays the caller's. */
static inline bool wardlock2_wait(wardlock2_pollable_t pollable, int64_t timeout_ms) {
    wasi_io_poll_borrow_pollable_t set[2] = {wasi_io_poll_borrow_pollable(pollable)};
    if (timeout_ms < 0) {
        wasi_io_poll_method_pollable_block(set[0]);
        return true;
    }
    wardlock2_pollable_t timer = wasi_clocks_monotonic_clock_subscribe_duration((uint64_t)timeout_ms * 1000000u);
    set[1] = wasi_io_poll_borrow_pollable(timer);
    wasi_io_poll_list_borrow_pollable_t list = {set, 2};
    c_guest2_list_u32_t ready;
    wasi_io_poll_poll(&list, &ready);
    bool first = false;
    for (size_t i = 0; i < ready.len; i++)
        first |= ready.ptr[i] == 0;
    c_guest2_list_u32_free(&ready);
    wasi_io_poll_pollable_drop_own(timer);
    return first;
}

/* wardlock2_wait on `pollable`, which it then drops. */
static inline bool wardlock2_wait_and_drop(wardlock2_pollable_t pollable, int64_t timeout_ms) {
    bool ready = wardlock2_wait(pollable, timeout_ms);
    wasi_io_poll_pollable_drop_own(pollable);
    return ready;
}

/* ---- locks ------------------------------------------------------------- */

/* A granted lock: `held` until released or dropped. */
typedef struct {
    wardlock_lock_0_2_2_locks_own_lock_t handle;
    bool held;
} wardlock2_guard_t;

#define WARDLOCK2_GUARD_INIT {.held = false}

/* Drops the guard's handle, which releases the lock without an answer; a
 * no-op on a guard not held. */
static inline void wardlock2_drop(wardlock2_guard_t *guard) {
    if (guard->held) {
        guard->held = false;
        wardlock_lock_0_2_2_locks_lock_drop_own(guard->handle);
    }
}

/* Declares `wardlock2_guard_t NAME`, dropped when its block is left. */
#define WARDLOCK2_SCOPED(name) \
    __attribute__((cleanup(wardlock2_drop))) wardlock2_guard_t name = WARDLOCK2_GUARD_INIT

static inline wardlock_lock_0_2_2_locks_borrow_lock_t wardlock2_borrow(const wardlock2_guard_t *guard) {
    return wardlock_lock_0_2_2_locks_borrow_lock(guard->handle);
}

static inline wardlock_lock_0_2_2_locks_options_t wardlock2_options(wardlock2_mode_t mode, int64_t timeout_ms) {
    wardlock_lock_0_2_2_locks_options_t opts = {
        .mode = mode,
        .timeout_ms = {.is_some = timeout_ms >= 0, .val = timeout_ms >= 0 ? (uint64_t)timeout_ms : 0},
    };
    return opts;
}

/* Waits until `name` is granted in `mode`, at most `timeout_ms` (or
 * WARDLOCK2_NO_TIMEOUT). True with `*guard` held; false with `*err` set. */
static inline bool wardlock2_acquire(const char *name, wardlock2_mode_t mode, int64_t timeout_ms,
                                     wardlock2_guard_t *guard, wardlock2_error_t *err) {
    WARDLOCK2_STRING_T wit_name;
    WARDLOCK2_STRING_SET(&wit_name, name);
    wardlock_lock_0_2_2_locks_options_t opts = wardlock2_options(mode, timeout_ms);
    guard->held = wardlock_lock_0_2_2_locks_acquire(&wit_name, &opts, &guard->handle, err);
    return guard->held;
}

/* Takes `name` only if that needs no waiting. True unless the call failed
 * (`*err` set); then `guard->held` says whether it was taken. */
static inline bool wardlock2_try_acquire(const char *name, wardlock2_mode_t mode, wardlock2_guard_t *guard,
                                         wardlock2_error_t *err) {
    WARDLOCK2_STRING_T wit_name;
    WARDLOCK2_STRING_SET(&wit_name, name);
    wardlock_lock_0_2_2_locks_option_own_lock_t taken;
    guard->held = false;
    if (!wardlock_lock_0_2_2_locks_try_acquire(&wit_name, mode, &taken, err))
        return false;
    guard->held = taken.is_some;
    guard->handle = taken.val;
    return true;
}

/* Releases and drops the guard. False with `*err` set when the lock had been
 * lost (WARDLOCK2_ERROR_LOST) or was not held (WARDLOCK2_ERROR_RELEASED). */
static inline bool wardlock2_release(wardlock2_guard_t *guard, wardlock2_error_t *err) {
    if (!guard->held) {
        err->tag = WARDLOCK2_ERROR_RELEASED;
        return false;
    }
    bool ok = wardlock_lock_0_2_2_locks_method_lock_release(wardlock2_borrow(guard), err);
    wardlock2_drop(guard);
    return ok;
}

/* The grant's fencing token; 0 (no grant's token) once the guard is not held. */
static inline uint64_t wardlock2_token(const wardlock2_guard_t *guard) {
    if (!guard->held)
        return 0;
    return wardlock_lock_0_2_2_locks_method_lock_fencing_token(wardlock2_borrow(guard));
}

/* What the guard guarantees now; WARDLOCK2_RELEASED once not held. */
static inline wardlock2_status_t wardlock2_status(const wardlock2_guard_t *guard) {
    if (!guard->held)
        return WARDLOCK2_RELEASED;
    return wardlock_lock_0_2_2_locks_method_lock_status(wardlock2_borrow(guard));
}

/* True while the lock is safely held; otherwise false with `*err` saying
 * why (free it): WARDLOCK2_ERROR_LOST (taken away: another holder may own it),
 * WARDLOCK2_ERROR_UNAVAILABLE (suspended: the host lost contact with the lock
 * service) or WARDLOCK2_ERROR_RELEASED. Call it between the steps of the work
 * done under the lock, so a loss stops the work at its next step. */
static inline bool wardlock2_check(const wardlock2_guard_t *guard, wardlock2_error_t *err) {
    switch (wardlock2_status(guard)) {
    case WARDLOCK2_HELD:
        return true;
    case WARDLOCK2_SUSPENDED:
        err->tag = WARDLOCK2_ERROR_UNAVAILABLE;
        WARDLOCK2_STRING_DUP(&err->val.unavailable,
                "the lock is suspended: the host lost contact with the lock service");
        return false;
    case WARDLOCK2_LOST:
        err->tag = WARDLOCK2_ERROR_LOST;
        return false;
    default:
        err->tag = WARDLOCK2_ERROR_RELEASED;
        return false;
    }
}

/* The WIT name of a status: "held", "suspended", "lost" or "released". */
static inline const char *wardlock2_status_name(wardlock2_status_t status) {
    static const char *const names[] = {"held", "suspended", "lost", "released"};
    return status < sizeof names / sizeof *names ? names[status] : "unknown";
}

/* A pollable ready once the lock is no longer held (the guard must be held);
 * drop it (wasi_io_poll_pollable_drop_own) before the guard. */
static inline wardlock2_pollable_t wardlock2_subscribe(const wardlock2_guard_t *guard) {
    return wardlock_lock_0_2_2_locks_method_lock_subscribe(wardlock2_borrow(guard));
}

/* Waits until the lock is no longer held (true; wardlock2_status says what
 * it is now) or `timeout_ms` passed (false). True at once if not held. */
static inline bool wardlock2_wait_lost(const wardlock2_guard_t *guard, int64_t timeout_ms) {
    return !guard->held || wardlock2_wait_and_drop(wardlock2_subscribe(guard), timeout_ms);
}

/* Whether someone asked this holder to give the lock up; false once the
 * guard is not held. */
static inline bool wardlock2_revocation_requested(const wardlock2_guard_t *guard) {
    if (!guard->held)
        return false;
    return wardlock_lock_0_2_2_locks_method_lock_revocation_requested(wardlock2_borrow(guard));
}

/* A pollable ready once a revocation was requested; drop it before the guard. */
static inline wardlock2_pollable_t wardlock2_subscribe_revocation(const wardlock2_guard_t *guard) {
    return wardlock_lock_0_2_2_locks_method_lock_subscribe_revocation(wardlock2_borrow(guard));
}

/* Waits until a revocation is requested (true) or `timeout_ms` passed
 * (false); false at once if the guard is not held. */
static inline bool wardlock2_wait_revocation(const wardlock2_guard_t *guard, int64_t timeout_ms) {
    return guard->held && wardlock2_wait_and_drop(wardlock2_subscribe_revocation(guard), timeout_ms);
}

/* Asks every holder of `name` to give it up; `*asked` is how many were asked. */
static inline bool wardlock2_request_revocation(const char *name, uint32_t *asked, wardlock2_error_t *err) {
    WARDLOCK2_STRING_T wit_name;
    WARDLOCK2_STRING_SET(&wit_name, name);
    return wardlock_lock_0_2_2_locks_request_revocation(&wit_name, asked, err);
}

/* ---- who holds, who waits (0.2.1) -------------------------------------- */

/* A lock's contenders: `contenders.ptr[0 .. contenders.len]`, holders first
 * then waiters in arrival order, and `total`, how many the lock has in all.
 * Each wardlock2_contender_t has `owner` (a string: `.ptr`, `.len`, not
 * NUL-terminated; may be empty), `mode`, `holds` (true for a holder) and
 * `fencing_token` (`.is_some`, `.val`: a holder's token where the lock service
 * records one). Free with wardlock2_queue_free. */
typedef wardlock_lock_0_2_2_locks_lock_queue_t wardlock2_queue_t;
typedef wardlock_lock_0_2_2_locks_contender_t wardlock2_contender_t;

/* Who holds the lock `name` and who waits for it: the first `limit`
 * contenders (the host lists at most 1024) into `*queue`, which the caller
 * frees with wardlock2_queue_free. A snapshot, stale as soon as it returns.
 * The name must be granted to this guest (WARDLOCK2_ERROR_DENIED otherwise). */
static inline bool wardlock2_contenders(const char *name, uint32_t limit, wardlock2_queue_t *queue,
                                        wardlock2_error_t *err) {
    WARDLOCK2_STRING_T wit_name;
    WARDLOCK2_STRING_SET(&wit_name, name);
    return wardlock_lock_0_2_2_locks_contenders(&wit_name, limit, queue, err);
}

/* Frees what wardlock2_contenders filled in. */
static inline void wardlock2_queue_free(wardlock2_queue_t *queue) {
    wardlock_lock_0_2_2_locks_lock_queue_free(queue);
}

/* ---- the guarded store (0.2.2) ----------------------------------------- */

/* Data that belongs to a lock name, written only while the writer's
 * exclusive lock still stands on the lock service (checked and written in
 * one atomic operation there). Keys are 1 to 512 bytes of text without
 * control characters, values at most 65,536 bytes. A guest whose world
 * imports `locks` but not `guarded` defines WARDLOCK2_NO_GUARDED first. */
#ifndef WARDLOCK2_NO_GUARDED

/* One entry of a lock's store: `value` (`.ptr`, `.len` bytes), `token` (the
 * fencing token of the lock whose write made it) and `revision` (the lock
 * service's revision of that write: it rises with every write). Free with
 * wardlock2_entry_free. */
typedef wardlock_lock_0_2_2_guarded_entry_t wardlock2_entry_t;
/* Keys: `ptr[0 .. len]`, each a string (`.ptr`, `.len`, not NUL-terminated).
 * Free with wardlock2_keys_free. */
typedef WARDLOCK2_LIST_STRING_T wardlock2_keys_t;

/* Writes `value[0..len]` under `key` in the store of `guard`'s lock, only if
 * that lock (exclusive) still stands on the lock service at the moment of
 * the write; `*revision` is the write's. False with `*err` set:
 * WARDLOCK2_ERROR_LOST when the lock no longer stands (nothing was written),
 * WARDLOCK2_ERROR_RELEASED for a guard not held, WARDLOCK2_ERROR_INVALID_REQUEST
 * for a shared guard or a bad key, WARDLOCK2_ERROR_LIMIT_EXCEEDED for a key
 * or value too large, WARDLOCK2_ERROR_UNAVAILABLE. */
static inline bool wardlock2_put(const wardlock2_guard_t *guard, const char *key, const void *value, size_t len,
                                 uint64_t *revision, wardlock2_error_t *err) {
    if (!guard->held) {
        err->tag = WARDLOCK2_ERROR_RELEASED;
        return false;
    }
    WARDLOCK2_STRING_T wit_key;
    WARDLOCK2_STRING_SET(&wit_key, key);
    WARDLOCK2_LIST_U8_T wit_value = {(uint8_t *)value, len};
    return wardlock_lock_0_2_2_guarded_put(wardlock2_borrow(guard), &wit_key, &wit_value, revision, err);
}

/* Deletes `key` from the store of `guard`'s lock under the rules of
 * wardlock2_put; `*existed` says whether there was an entry. */
static inline bool wardlock2_delete(const wardlock2_guard_t *guard, const char *key, bool *existed,
                                    wardlock2_error_t *err) {
    if (!guard->held) {
        err->tag = WARDLOCK2_ERROR_RELEASED;
        return false;
    }
    WARDLOCK2_STRING_T wit_key;
    WARDLOCK2_STRING_SET(&wit_key, key);
    return wardlock_lock_0_2_2_guarded_delete(wardlock2_borrow(guard), &wit_key, existed, err);
}

/* The entry `key` of lock `name`'s store: true with `*found` saying whether
 * there is one (then `*entry` is it: free it with wardlock2_entry_free).
 * Needs no lock (the name must be granted: WARDLOCK2_ERROR_DENIED
 * otherwise): without one, a snapshot that may be stale at once. */
static inline bool wardlock2_get(const char *name, const char *key, wardlock2_entry_t *entry, bool *found,
                                 wardlock2_error_t *err) {
    WARDLOCK2_STRING_T wit_name, wit_key;
    WARDLOCK2_STRING_SET(&wit_name, name);
    WARDLOCK2_STRING_SET(&wit_key, key);
    wardlock_lock_0_2_2_guarded_option_entry_t got;
    *found = false;
    if (!wardlock_lock_0_2_2_guarded_get(&wit_name, &wit_key, &got, err))
        return false;
    *found = got.is_some;
    if (got.is_some)
        *entry = got.val;
    return true;
}

/* Frees what wardlock2_get filled in (when it found an entry). */
static inline void wardlock2_entry_free(wardlock2_entry_t *entry) {
    wardlock_lock_0_2_2_guarded_entry_free(entry);
}

/* The keys of lock `name`'s store starting with `prefix` ("" for all),
 * sorted, at most `limit` (the host lists at most 1024) into `*keys`, which
 * the caller frees with wardlock2_keys_free. Errors as wardlock2_get. */
static inline bool wardlock2_keys(const char *name, const char *prefix, uint32_t limit, wardlock2_keys_t *keys,
                                  wardlock2_error_t *err) {
    WARDLOCK2_STRING_T wit_name, wit_prefix;
    WARDLOCK2_STRING_SET(&wit_name, name);
    WARDLOCK2_STRING_SET(&wit_prefix, prefix);
    return wardlock_lock_0_2_2_guarded_keys(&wit_name, &wit_prefix, limit, keys, err);
}

/* Frees what wardlock2_keys filled in. */
static inline void wardlock2_keys_free(wardlock2_keys_t *keys) {
    WARDLOCK2_LIST_STRING_FREE(keys);
}

#endif /* WARDLOCK2_NO_GUARDED */

/* ---- leader election (0.2.2) -------------------------------------------- */

/* "Run this on exactly one host": wardlock2_campaign waits until this
 * instance leads an election; the leadership follows a lock's loss rules
 * (WARDLOCK2_LOST no later than another candidate can win) and its term is a
 * fencing token, strictly greater than every earlier leader's.
 * Interoperable with Curator's `LeaderLatch` on ZooKeeper and `etcdctl elect`
 * on etcd. A guest whose world imports `locks` but not `election` defines
 * WARDLOCK2_NO_ELECTION first. */
#ifndef WARDLOCK2_NO_ELECTION

/* This instance's leadership: `held` until resigned or dropped. */
typedef struct {
    wardlock_lock_0_2_2_election_own_leadership_t handle;
    bool held;
} wardlock2_leadership_t;

#define WARDLOCK2_LEADERSHIP_INIT {.held = false}

/* Who leads an election: `owner` (who, as the lock service records it) and
 * `value` (what the leader proclaimed), strings (`.ptr`, `.len`, not
 * NUL-terminated), and `term` (its fencing token). Free with
 * wardlock2_leader_info_free. */
typedef wardlock_lock_0_2_2_election_leader_info_t wardlock2_leader_info_t;

/* Drops the leadership, which resigns without an answer; a no-op once not held. */
static inline void wardlock2_leadership_drop(wardlock2_leadership_t *leadership) {
    if (leadership->held) {
        leadership->held = false;
        wardlock_lock_0_2_2_election_leadership_drop_own(leadership->handle);
    }
}

/* Declares `wardlock2_leadership_t NAME`, resigned when its block is left. */
#define WARDLOCK2_LEADERSHIP_SCOPED(name) \
    __attribute__((cleanup(wardlock2_leadership_drop))) wardlock2_leadership_t name = WARDLOCK2_LEADERSHIP_INIT

static inline wardlock_lock_0_2_2_election_borrow_leadership_t
wardlock2_leadership_borrow(const wardlock2_leadership_t *leadership) {
    return wardlock_lock_0_2_2_election_borrow_leadership(leadership->handle);
}

/* Campaigns for election `name` with `value`: waits until this instance
 * leads, at most `timeout_ms` (or WARDLOCK2_NO_TIMEOUT). True with
 * `*leadership` held; false with `*err` set: WARDLOCK2_ERROR_TIMEOUT,
 * WARDLOCK2_ERROR_INVALID_NAME and WARDLOCK2_ERROR_DENIED as for locks,
 * WARDLOCK2_ERROR_LIMIT_EXCEEDED, WARDLOCK2_ERROR_UNAVAILABLE. */
static inline bool wardlock2_campaign(const char *name, const char *value, int64_t timeout_ms,
                                      wardlock2_leadership_t *leadership, wardlock2_error_t *err) {
    WARDLOCK2_STRING_T wit_name, wit_value;
    WARDLOCK2_STRING_SET(&wit_name, name);
    WARDLOCK2_STRING_SET(&wit_value, value);
    uint64_t timeout = timeout_ms >= 0 ? (uint64_t)timeout_ms : 0;
    leadership->held = wardlock_lock_0_2_2_election_campaign(&wit_name, &wit_value, timeout_ms >= 0 ? &timeout : NULL,
                                                             &leadership->handle, err);
    return leadership->held;
}

/* The term: strictly greater than every earlier leader's (a fencing token);
 * 0 (no leader's term) once the leadership is not held. */
static inline uint64_t wardlock2_leadership_term(const wardlock2_leadership_t *leadership) {
    if (!leadership->held)
        return 0;
    return wardlock_lock_0_2_2_election_method_leadership_term(wardlock2_leadership_borrow(leadership));
}

/* What the leadership guarantees now (WARDLOCK2_HELD while it leads);
 * WARDLOCK2_RELEASED once not held. */
static inline wardlock2_status_t wardlock2_leadership_status(const wardlock2_leadership_t *leadership) {
    if (!leadership->held)
        return WARDLOCK2_RELEASED;
    return wardlock_lock_0_2_2_election_method_leadership_status(wardlock2_leadership_borrow(leadership));
}

/* A pollable ready once this no longer leads (the leadership must be held);
 * drop it (wasi_io_poll_pollable_drop_own) before the leadership. */
static inline wardlock2_pollable_t wardlock2_leadership_subscribe(const wardlock2_leadership_t *leadership) {
    return wardlock_lock_0_2_2_election_method_leadership_subscribe(wardlock2_leadership_borrow(leadership));
}

/* Waits until this no longer leads (true; wardlock2_leadership_status says
 * what it is now) or `timeout_ms` passed (false). True at once if not held. */
static inline bool wardlock2_leadership_wait_lost(const wardlock2_leadership_t *leadership, int64_t timeout_ms) {
    return !leadership->held || wardlock2_wait_and_drop(wardlock2_leadership_subscribe(leadership), timeout_ms);
}

/* Replaces the proclaimed value, while this leads (observers see it). False
 * with `*err` set: WARDLOCK2_ERROR_LOST when it no longer leads,
 * WARDLOCK2_ERROR_RELEASED once not held, WARDLOCK2_ERROR_LIMIT_EXCEEDED for
 * a value over 4096 bytes. */
static inline bool wardlock2_leadership_proclaim(const wardlock2_leadership_t *leadership, const char *value,
                                                 wardlock2_error_t *err) {
    if (!leadership->held) {
        err->tag = WARDLOCK2_ERROR_RELEASED;
        return false;
    }
    WARDLOCK2_STRING_T wit_value;
    WARDLOCK2_STRING_SET(&wit_value, value);
    return wardlock_lock_0_2_2_election_method_leadership_proclaim(wardlock2_leadership_borrow(leadership),
                                                                   &wit_value, err);
}

/* Writes `value[0..len]` under `key` in the election name's guarded store,
 * only while this leads; `*revision` is the write's. Errors as wardlock2_put. */
static inline bool wardlock2_leadership_put(const wardlock2_leadership_t *leadership, const char *key,
                                            const void *value, size_t len, uint64_t *revision,
                                            wardlock2_error_t *err) {
    if (!leadership->held) {
        err->tag = WARDLOCK2_ERROR_RELEASED;
        return false;
    }
    WARDLOCK2_STRING_T wit_key;
    WARDLOCK2_STRING_SET(&wit_key, key);
    WARDLOCK2_LIST_U8_T wit_value = {(uint8_t *)value, len};
    return wardlock_lock_0_2_2_election_method_leadership_put(wardlock2_leadership_borrow(leadership), &wit_key,
                                                              &wit_value, revision, err);
}

/* Steps down and drops the leadership: the next candidate leads. False with
 * `*err` set when it had been lost (WARDLOCK2_ERROR_LOST) or was not held
 * (WARDLOCK2_ERROR_RELEASED). */
static inline bool wardlock2_leadership_resign(wardlock2_leadership_t *leadership, wardlock2_error_t *err) {
    if (!leadership->held) {
        err->tag = WARDLOCK2_ERROR_RELEASED;
        return false;
    }
    bool ok = wardlock_lock_0_2_2_election_method_leadership_resign(wardlock2_leadership_borrow(leadership), err);
    wardlock2_leadership_drop(leadership);
    return ok;
}

/* Frees what wardlock2_leader or wardlock2_observer_leader filled in (when
 * they found a leader). */
static inline void wardlock2_leader_info_free(wardlock2_leader_info_t *info) {
    wardlock_lock_0_2_2_election_leader_info_free(info);
}

/* An option<leader-info> into `*info`/`*found`. */
static inline void wardlock2_leader_found(wardlock_lock_0_2_2_election_option_leader_info_t *got,
                                          wardlock2_leader_info_t *info, bool *found) {
    *found = got->is_some;
    if (got->is_some)
        *info = got->val;
}

/* Who leads election `name` now: true with `*found` saying whether anyone
 * does (then `*info` is who: free it with wardlock2_leader_info_free).
 * False with `*err` set: WARDLOCK2_ERROR_INVALID_NAME, WARDLOCK2_ERROR_DENIED,
 * WARDLOCK2_ERROR_UNAVAILABLE. */
static inline bool wardlock2_leader(const char *name, wardlock2_leader_info_t *info, bool *found,
                                    wardlock2_error_t *err) {
    WARDLOCK2_STRING_T wit_name;
    WARDLOCK2_STRING_SET(&wit_name, name);
    wardlock_lock_0_2_2_election_option_leader_info_t got;
    *found = false;
    if (!wardlock_lock_0_2_2_election_leader(&wit_name, &got, err))
        return false;
    wardlock2_leader_found(&got, info, found);
    return true;
}

/* An observer of an election: `live` until dropped. */
typedef struct {
    wardlock_lock_0_2_2_election_own_observer_t handle;
    bool live;
} wardlock2_observer_t;

#define WARDLOCK2_OBSERVER_INIT {.live = false}

/* Drops the observer; a no-op once dropped. */
static inline void wardlock2_observer_drop(wardlock2_observer_t *observer) {
    if (observer->live) {
        observer->live = false;
        wardlock_lock_0_2_2_election_observer_drop_own(observer->handle);
    }
}

/* Declares `wardlock2_observer_t NAME`, dropped when its block is left. */
#define WARDLOCK2_OBSERVER_SCOPED(name) \
    __attribute__((cleanup(wardlock2_observer_drop))) wardlock2_observer_t name = WARDLOCK2_OBSERVER_INIT

/* An observer of election `name`. False with `*err` set:
 * WARDLOCK2_ERROR_INVALID_NAME, WARDLOCK2_ERROR_DENIED,
 * WARDLOCK2_ERROR_LIMIT_EXCEEDED. */
static inline bool wardlock2_observe(const char *name, wardlock2_observer_t *observer, wardlock2_error_t *err) {
    WARDLOCK2_STRING_T wit_name;
    WARDLOCK2_STRING_SET(&wit_name, name);
    observer->live = wardlock_lock_0_2_2_election_observe(&wit_name, &observer->handle, err);
    return observer->live;
}

/* The leader now, as wardlock2_leader (the observer must be live);
 * wardlock2_observer_subscribe compares against it from then on. */
static inline bool wardlock2_observer_leader(const wardlock2_observer_t *observer, wardlock2_leader_info_t *info,
                                             bool *found, wardlock2_error_t *err) {
    wardlock_lock_0_2_2_election_option_leader_info_t got;
    *found = false;
    if (!wardlock_lock_0_2_2_election_method_observer_leader(
            wardlock_lock_0_2_2_election_borrow_observer(observer->handle), &got, err))
        return false;
    wardlock2_leader_found(&got, info, found);
    return true;
}

/* A pollable ready once the leader (or its value or term) differs from the
 * one wardlock2_observer_leader last returned; drop it before the observer. */
static inline wardlock2_pollable_t wardlock2_observer_subscribe(const wardlock2_observer_t *observer) {
    return wardlock_lock_0_2_2_election_method_observer_subscribe(
        wardlock_lock_0_2_2_election_borrow_observer(observer->handle));
}

/* Waits until the leader differs from the one wardlock2_observer_leader last
 * returned (true) or `timeout_ms` passed (false). */
static inline bool wardlock2_observer_wait(const wardlock2_observer_t *observer, int64_t timeout_ms) {
    return wardlock2_wait_and_drop(wardlock2_observer_subscribe(observer), timeout_ms);
}

#endif /* WARDLOCK2_NO_ELECTION */

/* ---- several locks at once --------------------------------------------- */

/* One lock of a wardlock2_acquire_many request. */
typedef struct {
    const char *name;
    wardlock2_mode_t mode;
} wardlock2_request_t;

/* Drops every guard of `guards[0..n]` still held. */
static inline void wardlock2_drop_all(wardlock2_guard_t *guards, size_t n) {
    for (size_t i = 0; i < n; i++)
        wardlock2_drop(&guards[i]);
}

/* Guards dropped together when their block is left (WARDLOCK2_SCOPED_MANY). */
typedef struct {
    wardlock2_guard_t *guards;
    size_t n;
} wardlock2_many_t;

static inline void wardlock2_many_drop(wardlock2_many_t *many) {
    wardlock2_drop_all(many->guards, many->n);
}

/* Declares `wardlock2_guard_t NAME[N]`, every guard dropped when its block
 * is left (through a `NAME_scope` declared after it, so cleaned up first). */
#define WARDLOCK2_SCOPED_MANY(name, n)          \
    wardlock2_guard_t name[n] = {0};            \
    __attribute__((cleanup(wardlock2_many_drop), unused)) wardlock2_many_t name##_scope = {name, n}

/* Takes every lock of `requests[0..n]` as one all-or-nothing request within
 * one deadline (`timeout_ms`, or WARDLOCK2_NO_TIMEOUT), in a canonical order
 * on the host: two guests listing the same names in any order never
 * deadlock. True with `guards[i]` held for `requests[i]`; false with `*err`
 * set and nothing held or queued (n == 0 or a duplicate name:
 * WARDLOCK2_ERROR_INVALID_REQUEST). */
static inline bool wardlock2_acquire_many(const wardlock2_request_t *requests, size_t n, int64_t timeout_ms,
                                          wardlock2_guard_t *guards, wardlock2_error_t *err) {
    wardlock_lock_0_2_2_locks_request_t *wit = n ? calloc(n, sizeof *wit) : NULL;
    if (n && !wit)
        abort(); /* out of memory: nothing sensible to report through the WIT error */
    for (size_t i = 0; i < n; i++) {
        WARDLOCK2_STRING_SET(&wit[i].name, requests[i].name);
        wit[i].mode = requests[i].mode;
        guards[i].held = false;
    }
    wardlock_lock_0_2_2_locks_list_request_t list = {wit, n};
    wardlock_lock_0_2_2_locks_list_own_lock_t locks;
    uint64_t timeout = timeout_ms >= 0 ? (uint64_t)timeout_ms : 0;
    bool ok = wardlock_lock_0_2_2_locks_acquire_many(&list, timeout_ms >= 0 ? &timeout : NULL, &locks, err);
    free(wit);
    if (!ok)
        return false;
    for (size_t i = 0; i < locks.len && i < n; i++) {
        guards[i].handle = locks.ptr[i];
        guards[i].held = true;
    }
    free(locks.ptr);
    return true;
}

/* Releases every guard of `guards[0..n]` still held. False when one failed:
 * `*err` is the first failure (free it); all are released either way. */
static inline bool wardlock2_release_all(wardlock2_guard_t *guards, size_t n, wardlock2_error_t *err) {
    bool ok = true;
    for (size_t i = 0; i < n; i++) {
        if (!guards[i].held)
            continue;
        wardlock2_error_t failure;
        if (wardlock2_release(&guards[i], &failure))
            continue;
        if (ok)
            *err = failure;
        else
            wardlock2_error_free(&failure);
        ok = false;
    }
    return ok;
}

/* ---- acquiring without blocking ---------------------------------------- */

/* An acquisition waiting in the lock's queue (wardlock2_acquire_async). */
typedef struct {
    wardlock_lock_0_2_2_locks_own_pending_lock_t handle;
    bool live;
} wardlock2_pending_t;

#define WARDLOCK2_PENDING_INIT {.live = false}

/* Drops the pending lock: withdraws its wait (nothing stays queued), or
 * releases the lock if it was granted and not taken. A no-op once dropped. */
static inline void wardlock2_pending_drop(wardlock2_pending_t *pending) {
    if (pending->live) {
        pending->live = false;
        wardlock_lock_0_2_2_locks_pending_lock_drop_own(pending->handle);
    }
}

/* Declares `wardlock2_pending_t NAME`, dropped (its wait withdrawn) when its
 * block is left. */
#define WARDLOCK2_PENDING_SCOPED(name) \
    __attribute__((cleanup(wardlock2_pending_drop))) wardlock2_pending_t name = WARDLOCK2_PENDING_INIT

/* Queues for `name` in `mode` and returns at once. Bad names, denied,
 * would-deadlock and the handle cap fail here; a timeout (counted from now)
 * or a backend failure comes from wardlock2_pending_get. */
static inline bool wardlock2_acquire_async(const char *name, wardlock2_mode_t mode, int64_t timeout_ms,
                                           wardlock2_pending_t *pending, wardlock2_error_t *err) {
    WARDLOCK2_STRING_T wit_name;
    WARDLOCK2_STRING_SET(&wit_name, name);
    wardlock_lock_0_2_2_locks_options_t opts = wardlock2_options(mode, timeout_ms);
    pending->live = wardlock_lock_0_2_2_locks_acquire_async(&wit_name, &opts, &pending->handle, err);
    return pending->live;
}

/* A pollable ready once the acquisition finished, to poll beside timers and
 * other pollables; drop it before the pending lock. */
static inline wardlock2_pollable_t wardlock2_pending_subscribe(const wardlock2_pending_t *pending) {
    return wardlock_lock_0_2_2_locks_method_pending_lock_subscribe(
        wardlock_lock_0_2_2_locks_borrow_pending_lock(pending->handle));
}

/* Waits until the acquisition finished (true) or `timeout_ms` passed (false). */
static inline bool wardlock2_pending_wait(const wardlock2_pending_t *pending, int64_t timeout_ms) {
    return wardlock2_wait_and_drop(wardlock2_pending_subscribe(pending), timeout_ms);
}

/* What wardlock2_pending_get found. */
typedef enum {
    WARDLOCK2_WAITING, /* still queued */
    WARDLOCK2_GRANTED, /* `*guard` holds the lock */
    WARDLOCK2_FAILED,  /* `*err` is why (taken twice: WARDLOCK2_ERROR_INVALID_REQUEST) */
} wardlock2_outcome_t;

/* The acquisition's result, once; the pending lock must be live. */
static inline wardlock2_outcome_t wardlock2_pending_get(const wardlock2_pending_t *pending, wardlock2_guard_t *guard,
                                                        wardlock2_error_t *err) {
    wardlock_lock_0_2_2_locks_result_own_lock_error_t result;
    guard->held = false;
    if (!wardlock_lock_0_2_2_locks_method_pending_lock_get(
            wardlock_lock_0_2_2_locks_borrow_pending_lock(pending->handle), &result))
        return WARDLOCK2_WAITING;
    if (result.is_err) {
        *err = result.val.err;
        return WARDLOCK2_FAILED;
    }
    guard->handle = result.val.ok;
    guard->held = true;
    return WARDLOCK2_GRANTED;
}

/* ---- semaphores -------------------------------------------------------- */

/* One permit of a counting semaphore: `held` until released or dropped. */
typedef struct {
    wardlock_lock_0_2_2_locks_own_permit_t handle;
    bool held;
} wardlock2_permit_t;

#define WARDLOCK2_PERMIT_INIT {.held = false}

/* Drops the permit, which releases it; a no-op on a permit not held. */
static inline void wardlock2_permit_drop(wardlock2_permit_t *permit) {
    if (permit->held) {
        permit->held = false;
        wardlock_lock_0_2_2_locks_permit_drop_own(permit->handle);
    }
}

/* Declares `wardlock2_permit_t NAME`, dropped when its block is left. */
#define WARDLOCK2_PERMIT_SCOPED(name) \
    __attribute__((cleanup(wardlock2_permit_drop))) wardlock2_permit_t name = WARDLOCK2_PERMIT_INIT

static inline wardlock_lock_0_2_2_locks_borrow_permit_t wardlock2_permit_borrow(const wardlock2_permit_t *permit) {
    return wardlock_lock_0_2_2_locks_borrow_permit(permit->handle);
}

/* Waits for one of the `permits` permits of semaphore `name`, at most
 * `timeout_ms`. 0 permits: WARDLOCK2_ERROR_INVALID_REQUEST. */
static inline bool wardlock2_acquire_permit(const char *name, uint32_t permits, int64_t timeout_ms,
                                            wardlock2_permit_t *permit, wardlock2_error_t *err) {
    WARDLOCK2_STRING_T wit_name;
    WARDLOCK2_STRING_SET(&wit_name, name);
    uint64_t timeout = timeout_ms >= 0 ? (uint64_t)timeout_ms : 0;
    permit->held = wardlock_lock_0_2_2_locks_acquire_permit(&wit_name, permits, timeout_ms >= 0 ? &timeout : NULL,
                                                            &permit->handle, err);
    return permit->held;
}

/* A permit if one is free now. True unless the call failed; then
 * `permit->held` says whether one was taken. */
static inline bool wardlock2_try_acquire_permit(const char *name, uint32_t permits, wardlock2_permit_t *permit,
                                                wardlock2_error_t *err) {
    WARDLOCK2_STRING_T wit_name;
    WARDLOCK2_STRING_SET(&wit_name, name);
    wardlock_lock_0_2_2_locks_option_own_permit_t taken;
    permit->held = false;
    if (!wardlock_lock_0_2_2_locks_try_acquire_permit(&wit_name, permits, &taken, err))
        return false;
    permit->held = taken.is_some;
    permit->handle = taken.val;
    return true;
}

/* Releases and drops the permit (errors as wardlock2_release). */
static inline bool wardlock2_permit_release(wardlock2_permit_t *permit, wardlock2_error_t *err) {
    if (!permit->held) {
        err->tag = WARDLOCK2_ERROR_RELEASED;
        return false;
    }
    bool ok = wardlock_lock_0_2_2_locks_method_permit_release(wardlock2_permit_borrow(permit), err);
    wardlock2_permit_drop(permit);
    return ok;
}

/* The permit's fencing token (the permit must be held). */
static inline uint64_t wardlock2_permit_token(const wardlock2_permit_t *permit) {
    return wardlock_lock_0_2_2_locks_method_permit_fencing_token(wardlock2_permit_borrow(permit));
}

/* What the permit guarantees now; WARDLOCK2_RELEASED once not held. */
static inline wardlock2_status_t wardlock2_permit_status(const wardlock2_permit_t *permit) {
    if (!permit->held)
        return WARDLOCK2_RELEASED;
    return wardlock_lock_0_2_2_locks_method_permit_status(wardlock2_permit_borrow(permit));
}

/* Waits until the permit is no longer held (true) or `timeout_ms` passed. */
static inline bool wardlock2_permit_wait_lost(const wardlock2_permit_t *permit, int64_t timeout_ms) {
    return !permit->held ||
           wardlock2_wait_and_drop(
               wardlock_lock_0_2_2_locks_method_permit_subscribe(wardlock2_permit_borrow(permit)), timeout_ms);
}

#ifdef __cplusplus
}
#endif

#endif
