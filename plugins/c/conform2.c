/* `conform2 COMMAND...`: `lockctl2`'s command language (plugins/lockctl2) in
 * C, through the 0.2.0 SDK (guest-sdk/c/wardlock_v2.h), so one scenario table
 * drives the Rust, C, Python and JavaScript guests alike
 * (tests/e2e/conform2.rs).
 *
 * Each argument is one command; each prints one line, as lockctl2 prints it:
 * `acquire MODE TIMEOUT NAME`, `many TIMEOUT [MODE:NAME]...`,
 * `loop-many COUNT TIMEOUT FILE [MODE:NAME]...`, `release N`, `drop N`,
 * `status N`, `notify N ACK`, `check-until N ACK MS`, `async MODE TIMEOUT NAME`, `race P MS`,
 * `get P`, `drop-pending P`; permits (`permit PERMITS TIMEOUT NAME`,
 * `try-permit PERMITS NAME`, `release-permit Q`, `permit-status Q`,
 * `loop-permit COUNT PERMITS TIMEOUT HOLD_MS NAME`) and revocation (`revoke
 * NAME`, `revoked N`, `await-revocation N ACK MS`), `contenders NAME LIMIT`;
 * the guarded store (`put N KEY VALUE`, `del N KEY`, `read NAME KEY`, `keys
 * NAME PREFIX LIMIT`, lockctl2's guarded.rs); leader election (`campaign
 * NAME VALUE TIMEOUT`, `leader NAME`, `lstatus L`, `proclaim L VALUE`, `lput
 * L KEY VALUE`, `resign L`, `observe NAME`, `oleader O`, `owait O MS`,
 * lockctl2's election.rs). An error line is `err <kind>` or `err <kind>:
 * <text>`. A malformed command prints `bad-command: ...` and exits with code
 * 2. At most MAX_HANDLES handles, MAX_PENDING pending locks, MAX_SPECS locks
 * per `many`, MAX_ELECTIONS leaderships and as many observers. */

#include "wardlock_v2.h"

#include "common.h"

#include <time.h>

#define MAX_HANDLES 256
#define MAX_PENDING 64
#define MAX_SPECS 16
#define MAX_PERMITS 64
#define MAX_ELECTIONS 64
#define MAX_WORDS (MAX_SPECS + 4)

static const char WHO[] = "conform2";

static wardlock2_guard_t guards[MAX_HANDLES];
static size_t handles;
static wardlock2_pending_t pendings[MAX_PENDING];
static size_t pending_count;
static wardlock2_permit_t permits[MAX_PERMITS];
static size_t permit_count;
static wardlock2_leadership_t leaderships[MAX_ELECTIONS];
static size_t leadership_count;
static wardlock2_observer_t observers[MAX_ELECTIONS];
static size_t observer_count;

/* One output line. */
static char line[4096];

/* Sets `line` to the error's line and frees the error. */
static void error_line(wardlock2_error_t *err) {
    char text[3000];
    snprintf(line, sizeof line, "err %s", wardlock2_error_text(err, text, sizeof text));
    wardlock2_error_free(err);
}

static bool mode_of(const char *word, wardlock2_mode_t *mode) {
    if (!strcmp(word, "x") || !strcmp(word, "exclusive"))
        *mode = WARDLOCK2_EXCLUSIVE;
    else if (!strcmp(word, "s") || !strcmp(word, "shared"))
        *mode = WARDLOCK2_SHARED;
    else
        return false;
    return true;
}

/* Milliseconds, or WARDLOCK2_NO_TIMEOUT for `-`. */
static bool timeout_of(const char *word, int64_t *timeout) {
    uint64_t millis;
    if (!strcmp(word, "-")) {
        *timeout = WARDLOCK2_NO_TIMEOUT;
        return true;
    }
    if (!parse_u64(word, &millis) || millis > INT64_MAX)
        return false;
    *timeout = (int64_t)millis;
    return true;
}

/* `hN`/`pN` (or N) to an index below `count`. */
static bool index_of(const char *word, size_t count, size_t *at) {
    uint64_t n;
    if (*word == 'h' || *word == 'p' || *word == 'q')
        word++;
    if (!parse_u64(word, &n) || n < 1 || n > count)
        return false;
    *at = (size_t)(n - 1);
    return true;
}

/* `MODE:NAME` words; the names point into `words`, which is modified. */
static bool requests_of(char **words, size_t n, wardlock2_request_t *requests) {
    for (size_t i = 0; i < n; i++) {
        char *colon = strchr(words[i], ':');
        if (!colon)
            return false;
        *colon = '\0';
        if (!mode_of(words[i], &requests[i].mode))
            return false;
        requests[i].name = colon + 1;
    }
    return true;
}

/* Keeps `guard` as the next handle; its number, or 0 when full (then it is dropped). */
static size_t push(wardlock2_guard_t *guard) {
    if (handles == MAX_HANDLES) {
        wardlock2_drop(guard);
        return 0;
    }
    guards[handles] = *guard;
    guard->held = false;
    return ++handles;
}

static void granted(wardlock2_guard_t *guard) {
    uint64_t token = wardlock2_token(guard);
    snprintf(line, sizeof line, "h%zu token=%" PRIu64, push(guard), token);
}

/* `loop-many`: COUNT rounds of take all, bump FILE, release all. */
static bool loop_many(uint64_t count, int64_t timeout, const char *path, const wardlock2_request_t *requests,
                      size_t n) {
    wardlock2_error_t err;
    for (uint64_t round = 0; round < count; round++) {
        WARDLOCK2_SCOPED_MANY(held, MAX_SPECS);
        uint64_t value;
        if (!wardlock2_acquire_many(requests, n, timeout, held, &err)) {
            char text[3000];
            snprintf(line, sizeof line, "failed at %" PRIu64 ": err %s", round,
                     wardlock2_error_text(&err, text, sizeof text));
            wardlock2_error_free(&err);
            return true;
        }
        if (!read_value(WHO, path, &value) || !write_value(WHO, path, value + 1)) {
            snprintf(line, sizeof line, "failed at %" PRIu64 ": file %s", round, path);
            return true;
        }
        if (!wardlock2_release_all(held, n, &err)) {
            char text[3000];
            snprintf(line, sizeof line, "failed at %" PRIu64 ": err %s", round,
                     wardlock2_error_text(&err, text, sizeof text));
            wardlock2_error_free(&err);
            return true;
        }
    }
    snprintf(line, sizeof line, "looped %" PRIu64, count);
    return true;
}

static bool many(int64_t timeout, const wardlock2_request_t *requests, size_t n) {
    wardlock2_error_t err;
    WARDLOCK2_SCOPED_MANY(held, MAX_SPECS);
    if (!wardlock2_acquire_many(requests, n, timeout, held, &err)) {
        error_line(&err);
        return true;
    }
    size_t used = 0;
    line[0] = '\0';
    for (size_t i = 0; i < n && used < sizeof line; i++)
        used += (size_t)snprintf(line + used, sizeof line - used, "%sh%zu", i ? " " : "", push(&held[i]));
    return true;
}

/* Runs one command (split into `words[0..n]`) into `line`; false when malformed. */
/* Keeps `permit` as the next permit qN and prints it (dropped when full). */
static void permit_granted(wardlock2_permit_t *permit) {
    uint64_t token = wardlock2_permit_token(permit);
    if (permit_count == MAX_PERMITS) {
        wardlock2_permit_drop(permit);
        snprintf(line, sizeof line, "err too-many-permits");
        return;
    }
    permits[permit_count] = *permit;
    permit->held = false;
    snprintf(line, sizeof line, "q%zu token=%" PRIu64, ++permit_count, token);
}

/* One `loop-permit` round: take a permit, check its token (above `*last`)
 * and status, hold it HOLD_MS, release it; false with the reason in `line`. */
static bool permit_round(uint32_t n, int64_t timeout, uint64_t hold_ms, const char *name, uint64_t *last) {
    wardlock2_error_t err;
    WARDLOCK2_PERMIT_SCOPED(permit);
    if (!wardlock2_acquire_permit(name, n, timeout, &permit, &err)) {
        error_line(&err);
        return false;
    }
    uint64_t token = wardlock2_permit_token(&permit);
    if (token <= *last) {
        snprintf(line, sizeof line, "token %" PRIu64 " after %" PRIu64, token, *last);
        return false;
    }
    *last = token;
    if (wardlock2_permit_status(&permit) != WARDLOCK2_HELD) {
        snprintf(line, sizeof line, "%s", wardlock2_status_name(wardlock2_permit_status(&permit)));
        return false;
    }
    struct timespec hold = {.tv_sec = (time_t)(hold_ms / 1000), .tv_nsec = (long)(hold_ms % 1000) * 1000000L};
    nanosleep(&hold, NULL);
    if (!wardlock2_permit_release(&permit, &err)) {
        error_line(&err);
        return false;
    }
    return true;
}

/* `loop-permit`: COUNT rounds of `permit_round`. */
static void loop_permit(uint64_t count, uint32_t n, int64_t timeout, uint64_t hold_ms, const char *name) {
    uint64_t last = 0;
    for (uint64_t round = 0; round < count; round++) {
        if (!permit_round(n, timeout, hold_ms, name, &last)) {
            char reason[sizeof line];
            snprintf(reason, sizeof reason, "%s", line);
            snprintf(line, sizeof line, "failed at %" PRIu64 ": %s", round, reason);
            return;
        }
    }
    snprintf(line, sizeof line, "looped %" PRIu64, count);
}

/* Parses a u32: a permit count or a listing limit. */
static bool u32_of(const char *word, uint32_t *n) {
    uint64_t value;
    if (!parse_u64(word, &value) || value > UINT32_MAX)
        return false;
    *n = (uint32_t)value;
    return true;
}

/* The permit and revocation commands (lockctl2's permits.rs, revoke.rs);
 * false when `words` is none of them or malformed. */
static bool execute_permit(char **words, size_t n) {
    wardlock2_error_t err;
    int64_t timeout;
    uint32_t count;
    size_t at;
    const char *command = words[0];
    if (!strcmp(command, "permit") && n == 4) {
        if (!u32_of(words[1], &count) || !timeout_of(words[2], &timeout))
            return false;
        WARDLOCK2_PERMIT_SCOPED(permit);
        if (wardlock2_acquire_permit(words[3], count, timeout, &permit, &err))
            permit_granted(&permit);
        else
            error_line(&err);
        return true;
    }
    if (!strcmp(command, "try-permit") && n == 3) {
        if (!u32_of(words[1], &count))
            return false;
        WARDLOCK2_PERMIT_SCOPED(permit);
        if (!wardlock2_try_acquire_permit(words[2], count, &permit, &err))
            error_line(&err);
        else if (permit.held)
            permit_granted(&permit);
        else
            snprintf(line, sizeof line, "none");
        return true;
    }
    if (!strcmp(command, "release-permit") && n == 2) {
        if (!index_of(words[1], permit_count, &at))
            snprintf(line, sizeof line, "err no-such-permit");
        else if (wardlock2_permit_release(&permits[at], &err)) /* `released` once not held */
            snprintf(line, sizeof line, "ok");
        else
            error_line(&err);
        return true;
    }
    if (!strcmp(command, "permit-status") && n == 2) {
        if (!index_of(words[1], permit_count, &at))
            snprintf(line, sizeof line, "err no-such-permit");
        else
            snprintf(line, sizeof line, "%s", wardlock2_status_name(wardlock2_permit_status(&permits[at])));
        return true;
    }
    if (!strcmp(command, "loop-permit") && n == 6) {
        uint64_t rounds, hold_ms;
        if (!parse_u64(words[1], &rounds) || !u32_of(words[2], &count) || !timeout_of(words[3], &timeout) ||
            !parse_u64(words[4], &hold_ms))
            return false;
        loop_permit(rounds, count, timeout, hold_ms, words[5]);
        return true;
    }
    if (!strcmp(command, "revoke") && n == 2) {
        uint32_t asked;
        if (wardlock2_request_revocation(words[1], &asked, &err))
            snprintf(line, sizeof line, "asked %" PRIu32, asked);
        else
            error_line(&err);
        return true;
    }
    if (!strcmp(command, "contenders") && n == 3) {
        uint32_t limit;
        if (!u32_of(words[2], &limit))
            return false;
        wardlock2_queue_t queue;
        if (!wardlock2_contenders(words[1], limit, &queue, &err)) {
            error_line(&err);
            return true;
        }
        size_t used = (size_t)snprintf(line, sizeof line, "%" PRIu32, queue.total);
        for (size_t i = 0; i < queue.contenders.len && used < sizeof line; i++) {
            const wardlock2_contender_t *c = &queue.contenders.ptr[i];
            char token[24] = "-";
            if (c->fencing_token.is_some)
                snprintf(token, sizeof token, "%" PRIu64, c->fencing_token.val);
            used += (size_t)snprintf(line + used, sizeof line - used, " | %s %s %s %.*s",
                                     c->holds ? "held" : "waits", c->mode == WARDLOCK2_EXCLUSIVE ? "x" : "s",
                                     token, (int)c->owner.len, (const char *)c->owner.ptr);
        }
        wardlock2_queue_free(&queue);
        return true;
    }
    if (!strcmp(command, "revoked") && n == 2) {
        if (!index_of(words[1], handles, &at) || !guards[at].held)
            snprintf(line, sizeof line, "err no-such-handle");
        else
            snprintf(line, sizeof line, "%s", wardlock2_revocation_requested(&guards[at]) ? "true" : "false");
        return true;
    }
    if (!strcmp(command, "await-revocation") && n == 4) {
        if (!timeout_of(words[3], &timeout) || timeout < 0)
            return false;
        if (!index_of(words[1], handles, &at) || !guards[at].held) {
            snprintf(line, sizeof line, "err no-such-handle");
            return true;
        }
        if (!wardlock2_wait_revocation(&guards[at], timeout)) {
            snprintf(line, sizeof line, "timer");
            return true;
        }
        /* Tell the host at once: it watches for ACK being taken. */
        WARDLOCK2_SCOPED(ack);
        if (!wardlock2_try_acquire(words[2], WARDLOCK2_EXCLUSIVE, &ack, &err))
            wardlock2_error_free(&err);
        if (ack.held)
            push(&ack);
        snprintf(line, sizeof line, "revoked");
        return true;
    }
    return false;
}

/* The guarded store's commands (lockctl2's guarded.rs); false when `words`
 * is none of them or malformed. */
static bool execute_guarded(char **words, size_t n) {
    wardlock2_error_t err;
    size_t at;
    const char *command = words[0];
    if (!strcmp(command, "put") && n == 4) {
        uint64_t revision;
        if (!index_of(words[1], handles, &at))
            snprintf(line, sizeof line, "err no-such-handle");
        else if (wardlock2_put(&guards[at], words[2], words[3], strlen(words[3]), &revision, &err))
            snprintf(line, sizeof line, "rev=%" PRIu64, revision);
        else
            error_line(&err); /* `released` once not held */
        return true;
    }
    if (!strcmp(command, "del") && n == 3) {
        bool existed;
        if (!index_of(words[1], handles, &at))
            snprintf(line, sizeof line, "err no-such-handle");
        else if (wardlock2_delete(&guards[at], words[2], &existed, &err))
            snprintf(line, sizeof line, "%s", existed ? "true" : "false");
        else
            error_line(&err);
        return true;
    }
    if (!strcmp(command, "read") && n == 3) {
        wardlock2_entry_t entry;
        bool found;
        if (!wardlock2_get(words[1], words[2], &entry, &found, &err)) {
            error_line(&err);
        } else if (!found) {
            snprintf(line, sizeof line, "none");
        } else {
            snprintf(line, sizeof line, "%.*s token=%" PRIu64 " rev=%" PRIu64, (int)entry.value.len,
                     (const char *)entry.value.ptr, entry.token, entry.revision);
            wardlock2_entry_free(&entry);
        }
        return true;
    }
    if (!strcmp(command, "keys") && n == 4) {
        uint32_t limit;
        if (!u32_of(words[3], &limit))
            return false;
        wardlock2_keys_t keys;
        if (!wardlock2_keys(words[1], strcmp(words[2], "-") ? words[2] : "", limit, &keys, &err)) {
            error_line(&err);
            return true;
        }
        size_t used = 0;
        for (size_t i = 0; i < keys.len && used < sizeof line; i++)
            used += (size_t)snprintf(line + used, sizeof line - used, "%.*s ", (int)keys.ptr[i].len,
                                     (const char *)keys.ptr[i].ptr);
        if (used < sizeof line)
            snprintf(line + used, sizeof line - used, ".");
        wardlock2_keys_free(&keys);
        return true;
    }
    return false;
}

/* `lN` or `oN` (the letter `prefix`) to an index below `count`. */
static bool election_index(const char *word, char prefix, size_t count, size_t *at) {
    return *word == prefix && index_of(word + 1, count, at);
}

/* `none` or `<VALUE> term=<T>` for a leader call's outcome, as lockctl2
 * prints it; frees what the call filled in. */
static void leader_line(bool ok, bool found, wardlock2_leader_info_t *info, wardlock2_error_t *err) {
    if (!ok) {
        error_line(err);
    } else if (!found) {
        snprintf(line, sizeof line, "none");
    } else {
        snprintf(line, sizeof line, "%.*s term=%" PRIu64, (int)info->value.len, (const char *)info->value.ptr,
                 info->term);
        wardlock2_leader_info_free(info);
    }
}

/* Leader election's commands (lockctl2's election.rs); false when `words`
 * is none of them or malformed. */
static bool execute_election(char **words, size_t n) {
    wardlock2_error_t err;
    wardlock2_leader_info_t info;
    bool found, ok;
    size_t at;
    int64_t timeout;
    const char *command = words[0];
    if (!strcmp(command, "campaign") && n == 4) {
        if (!timeout_of(words[3], &timeout))
            return false;
        if (leadership_count == MAX_ELECTIONS) {
            snprintf(line, sizeof line, "err too-many-leaderships");
            return true;
        }
        wardlock2_leadership_t *leadership = &leaderships[leadership_count];
        if (wardlock2_campaign(words[1], words[2], timeout, leadership, &err))
            snprintf(line, sizeof line, "l%zu term=%" PRIu64, ++leadership_count,
                     wardlock2_leadership_term(leadership));
        else
            error_line(&err);
        return true;
    }
    if (!strcmp(command, "leader") && n == 2) {
        ok = wardlock2_leader(words[1], &info, &found, &err);
        leader_line(ok, found, &info, &err);
        return true;
    }
    bool leadership_command = (!strcmp(command, "lstatus") && n == 2) || (!strcmp(command, "proclaim") && n == 3) ||
                              (!strcmp(command, "lput") && n == 4) || (!strcmp(command, "resign") && n == 2);
    if (leadership_command) {
        if (!election_index(words[1], 'l', leadership_count, &at)) {
            snprintf(line, sizeof line, "err no-such-leadership");
            return true;
        }
        wardlock2_leadership_t *leadership = &leaderships[at];
        uint64_t revision = 0;
        if (!strcmp(command, "lstatus")) {
            snprintf(line, sizeof line, "%s", wardlock2_status_name(wardlock2_leadership_status(leadership)));
            return true;
        }
        if (!strcmp(command, "lput"))
            ok = wardlock2_leadership_put(leadership, words[2], words[3], strlen(words[3]), &revision, &err);
        else if (!strcmp(command, "proclaim"))
            ok = wardlock2_leadership_proclaim(leadership, words[2], &err);
        else
            ok = wardlock2_leadership_resign(leadership, &err);
        if (!ok)
            error_line(&err); /* `released` once resigned */
        else if (!strcmp(command, "lput"))
            snprintf(line, sizeof line, "rev=%" PRIu64, revision);
        else
            snprintf(line, sizeof line, "ok");
        return true;
    }
    if (!strcmp(command, "observe") && n == 2) {
        if (observer_count == MAX_ELECTIONS) {
            snprintf(line, sizeof line, "err too-many-observers");
            return true;
        }
        if (wardlock2_observe(words[1], &observers[observer_count], &err))
            snprintf(line, sizeof line, "o%zu", ++observer_count);
        else
            error_line(&err);
        return true;
    }
    if (!strcmp(command, "oleader") && n == 2) {
        if (!election_index(words[1], 'o', observer_count, &at)) {
            snprintf(line, sizeof line, "err no-such-observer");
            return true;
        }
        ok = wardlock2_observer_leader(&observers[at], &info, &found, &err);
        leader_line(ok, found, &info, &err);
        return true;
    }
    if (!strcmp(command, "owait") && n == 3) {
        if (!timeout_of(words[2], &timeout) || timeout < 0)
            return false;
        if (!election_index(words[1], 'o', observer_count, &at))
            snprintf(line, sizeof line, "err no-such-observer");
        else
            snprintf(line, sizeof line, "%s", wardlock2_observer_wait(&observers[at], timeout) ? "changed" : "timer");
        return true;
    }
    return false;
}

static bool execute(char **words, size_t n) {
    if (execute_permit(words, n) || execute_guarded(words, n) || execute_election(words, n))
        return true;
    wardlock2_error_t err;
    wardlock2_mode_t mode;
    int64_t timeout;
    size_t at;
    const char *command = words[0];
    if (!strcmp(command, "acquire") && n == 4) {
        if (!mode_of(words[1], &mode) || !timeout_of(words[2], &timeout))
            return false;
        WARDLOCK2_SCOPED(guard);
        if (wardlock2_acquire(words[3], mode, timeout, &guard, &err))
            granted(&guard);
        else
            error_line(&err);
        return true;
    }
    if (!strcmp(command, "many") && n >= 2 && n - 2 <= MAX_SPECS) {
        wardlock2_request_t requests[MAX_SPECS];
        if (!timeout_of(words[1], &timeout) || !requests_of(words + 2, n - 2, requests))
            return false;
        return many(timeout, requests, n - 2);
    }
    if (!strcmp(command, "loop-many") && n >= 4 && n - 4 <= MAX_SPECS) {
        wardlock2_request_t requests[MAX_SPECS];
        uint64_t count;
        if (!parse_u64(words[1], &count) || !timeout_of(words[2], &timeout) ||
            !requests_of(words + 4, n - 4, requests))
            return false;
        return loop_many(count, timeout, words[3], requests, n - 4);
    }
    if (!strcmp(command, "release") && n == 2) {
        if (!index_of(words[1], handles, &at))
            snprintf(line, sizeof line, "err no-such-handle");
        else if (wardlock2_release(&guards[at], &err)) /* `released` once not held */
            snprintf(line, sizeof line, "ok");
        else
            error_line(&err);
        return true;
    }
    if (!strcmp(command, "drop") && n == 2) {
        if (index_of(words[1], handles, &at))
            wardlock2_drop(&guards[at]);
        snprintf(line, sizeof line, "dropped");
        return true;
    }
    if (!strcmp(command, "status") && n == 2) {
        if (!index_of(words[1], handles, &at) || !guards[at].held)
            snprintf(line, sizeof line, "err no-such-handle");
        else
            snprintf(line, sizeof line, "%s", wardlock2_status_name(wardlock2_status(&guards[at])));
        return true;
    }
    if (!strcmp(command, "notify") && n == 3) {
        if (!index_of(words[1], handles, &at) || !guards[at].held) {
            snprintf(line, sizeof line, "err no-such-handle");
            return true;
        }
        wardlock2_wait_lost(&guards[at], WARDLOCK2_NO_TIMEOUT);
        /* Tell the host at once: it watches for ACK being taken. */
        WARDLOCK2_SCOPED(ack);
        if (!wardlock2_try_acquire(words[2], WARDLOCK2_EXCLUSIVE, &ack, &err))
            wardlock2_error_free(&err);
        snprintf(line, sizeof line, "woke %s", wardlock2_status_name(wardlock2_status(&guards[at])));
        if (ack.held)
            push(&ack);
        return true;
    }
    if (!strcmp(command, "check-until") && n == 4) {
        /* wardlock2_check every millisecond, at most MS ms, as work under a
         * lock would between its steps; once it fails, take ACK (the host
         * watches for it) and name the error. */
        uint64_t ms;
        if (!parse_u64(words[3], &ms))
            return false;
        if (!index_of(words[1], handles, &at) || !guards[at].held) {
            snprintf(line, sizeof line, "err no-such-handle");
            return true;
        }
        struct timespec start, now;
        const struct timespec tick = {.tv_sec = 0, .tv_nsec = 1000000};
        clock_gettime(CLOCK_MONOTONIC, &start);
        while (wardlock2_check(&guards[at], &err)) {
            clock_gettime(CLOCK_MONOTONIC, &now);
            int64_t waited = (int64_t)(now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
            if (waited >= 0 && (uint64_t)waited >= ms) {
                snprintf(line, sizeof line, "still held");
                return true;
            }
            nanosleep(&tick, NULL);
        }
        const char *kind = wardlock2_error_kind(&err);
        wardlock2_error_free(&err);
        WARDLOCK2_SCOPED(ack);
        if (!wardlock2_try_acquire(words[2], WARDLOCK2_EXCLUSIVE, &ack, &err))
            wardlock2_error_free(&err);
        snprintf(line, sizeof line, "checked %s", kind);
        if (ack.held)
            push(&ack);
        return true;
    }
    if (!strcmp(command, "async") && n == 4) {
        if (!mode_of(words[1], &mode) || !timeout_of(words[2], &timeout))
            return false;
        if (pending_count == MAX_PENDING) {
            snprintf(line, sizeof line, "err too-many-pending");
            return true;
        }
        if (wardlock2_acquire_async(words[3], mode, timeout, &pendings[pending_count], &err))
            snprintf(line, sizeof line, "p%zu", ++pending_count);
        else
            error_line(&err);
        return true;
    }
    if (!strcmp(command, "race") && n == 3) {
        if (!timeout_of(words[2], &timeout) || timeout < 0)
            return false;
        if (!index_of(words[1], pending_count, &at) || !pendings[at].live)
            snprintf(line, sizeof line, "err no-such-pending");
        else
            snprintf(line, sizeof line, "%s", wardlock2_pending_wait(&pendings[at], timeout) ? "pending" : "timer");
        return true;
    }
    if (!strcmp(command, "get") && n == 2) {
        if (!index_of(words[1], pending_count, &at) || !pendings[at].live) {
            snprintf(line, sizeof line, "err no-such-pending");
            return true;
        }
        WARDLOCK2_SCOPED(guard);
        switch (wardlock2_pending_get(&pendings[at], &guard, &err)) {
        case WARDLOCK2_WAITING: snprintf(line, sizeof line, "none"); break;
        case WARDLOCK2_GRANTED: granted(&guard); break;
        case WARDLOCK2_FAILED: error_line(&err); break;
        }
        return true;
    }
    if (!strcmp(command, "drop-pending") && n == 2) {
        if (index_of(words[1], pending_count, &at))
            wardlock2_pending_drop(&pendings[at]);
        snprintf(line, sizeof line, "dropped");
        return true;
    }
    return false;
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        char copy[4096];
        char *words[MAX_WORDS];
        size_t n = 0;
        snprintf(copy, sizeof copy, "%s", argv[i]);
        for (char *word = strtok(copy, " "); word && n < MAX_WORDS; word = strtok(NULL, " "))
            words[n++] = word;
        if (n == 0 || n == MAX_WORDS || !execute(words, n)) {
            printf("bad-command: %s\n", argv[i]);
            return 2;
        }
        puts(line);
        fflush(stdout);
    }
    return 0;
}
