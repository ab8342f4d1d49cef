/*
 * The deterministic mode's softlock report from C: HOS_DET_WATCHDOG_MS is a switch of
 * hos_config (a bad value is InvalidValue naming it); a lock-order deadlock of two guest
 * threads (each holds one mutex and waits for the other's) is reported at virtual
 * quiescence, read as figures (hos_det_softlock_get: the cause, the decision, the threads,
 * the cycle) and as text (hos_det_softlock_text: each thread, its mutex and its holder, the
 * cycle); pausing and resuming the stuck threads makes no new report; a run with the mode
 * off reports nothing. Run by capi/tests/c_hosts.rs.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include "check.h"

#include <string.h>
#include <time.h>

static hos_handle m1, m2, a_has, b_has, never, a, b;

static void locker(hos_handle first, hos_handle second, hos_handle mine, hos_handle theirs) {
    OK(hos_mutex_lock(first, -1));
    OK(hos_event_signal(mine));
    OK(hos_event_wait(theirs, -1));
    /* Waits for the mutex the other holds: the shutdown ends it (Cancelled), or the other,
     * cancelled first, ends holding it and leaves it to this one (Abandoned). */
    hos_result r = hos_mutex_lock(second, -1);
    TRUE(r == HOS_RESULT_CANCELLED || r == HOS_RESULT_ABANDONED);
}

static void locker_a(void *arg) {
    (void)arg;
    locker(m1, m2, a_has, b_has);
}

static void locker_b(void *arg) {
    (void)arg;
    locker(m2, m1, b_has, a_has);
}

static hos_handle spawn(hos_runtime *rt, const char *name, int32_t core, hos_thread_entry f) {
    hos_thread_params p = {.size = sizeof p, .name = name, .priority = 44, .ideal_core = core,
                           .core_mask = 0x3};
    hos_handle t = 0;
    OK(hos_thread_spawn(rt, &p, f, rt, &t));
    return t;
}

/* The guest main thread: starts both lockers (a guest's spawn is a decision), then waits for
 * what never comes, until the shutdown. */
static void main_thread(void *arg) {
    hos_runtime *rt = arg;
    a = spawn(rt, "A", 0, locker_a);
    b = spawn(rt, "B", 1, locker_b);
    EXPECT(hos_event_wait(never, -1), HOS_RESULT_CANCELLED);
}

/* The runtime's last softlock, once reported (a failsafe bound, not a timing: the decision
 * that finds the deadlock reports it). */
static hos_det_softlock reported(hos_runtime *rt) {
    hos_det_softlock s = {.size = sizeof s};
    for (int i = 0; i < 20000; i++) {
        OK(hos_det_softlock_get(rt, &s));
        if (s.cause != HOS_DET_SOFTLOCK_NONE) {
            break;
        }
        struct timespec t = {0, 1000000L};
        nanosleep(&t, NULL);
    }
    return s;
}

int main(void) {
    hos_config *cfg;
    OK(hos_config_new(&cfg));
    EXPECT(hos_config_set(cfg, "HOS_DET_WATCHDOG_MS", "-1"), HOS_RESULT_INVALID_VALUE);
    TRUE(strstr(hos_last_error_message(), "HOS_DET_WATCHDOG_MS") != NULL);
    OK(hos_config_set(cfg, "HOS_DET_WATCHDOG_MS", "0"));
    OK(hos_config_set(cfg, "HOS_DET", "stable"));
    OK(hos_config_set(cfg, "HOS_DET_PACE", "free"));
    hos_runtime *rt;
    OK(hos_runtime_new(cfg, &rt));
    hos_config_free(cfg);
    OK(hos_mutex_create(0, &m1));
    OK(hos_mutex_create(0, &m2));
    OK(hos_event_create(0, &a_has));
    OK(hos_event_create(0, &b_has));
    OK(hos_event_create(0, &never));
    hos_thread_params mp = {.size = sizeof mp, .name = "MainThread", .priority = 44,
                            .ideal_core = 0, .core_mask = 0x3};
    hos_handle main_t;
    OK(hos_thread_spawn(rt, &mp, main_thread, rt, &main_t));

    hos_det_softlock s = reported(rt);
    TRUE(s.cause == HOS_DET_SOFTLOCK_DEADLOCK);
    TRUE(s.decision > 0);
    TRUE(s.threads == 3);
    TRUE(s.cycles == 1);
    TRUE(s.holder == 0 && s.held_ms == 0);
    size_t len = 0;
    OK(hos_det_softlock_text(rt, NULL, 0, &len));
    TRUE(len > 0);
    char text[4096];
    OK(hos_det_softlock_text(rt, text, sizeof text, &len));
    TRUE(len < sizeof text);
    uint64_t ida = 0, idb = 0;
    OK(hos_svc_get_thread_id(a, &ida));
    OK(hos_svc_get_thread_id(b, &idb));
    char want[64];
    snprintf(want, sizeof want, "A (id %" PRIu64 ", priority 44, core 0) waits on mutex", ida);
    TRUE(strstr(text, want) != NULL);
    snprintf(want, sizeof want, "B (id %" PRIu64 ", priority 44, core 1) waits on mutex", idb);
    TRUE(strstr(text, want) != NULL);
    TRUE(strstr(text, "held by B") != NULL);
    TRUE(strstr(text, "held by A") != NULL);
    TRUE(strstr(text, "deadlock: cycle") != NULL);
    TRUE(strstr(text, "selector stable") != NULL);
    /* Every thread waits: each is stopped at once; a pause is no new report. */
    uint32_t paused = 0, resumed = 0;
    OK(hos_pause_guests(rt, -1, &paused));
    TRUE(paused == 3);
    OK(hos_resume_guests(rt, &resumed));
    TRUE(resumed == 3);
    hos_det_softlock again = {.size = sizeof again};
    OK(hos_det_softlock_get(rt, &again));
    TRUE(again.decision == s.decision);

    OK(hos_runtime_shutdown(rt, -1));
    OK(hos_thread_join(main_t, -1));
    OK(hos_thread_join(a, -1));
    OK(hos_thread_join(b, -1));
    hos_handle all[] = {main_t, a, b, m1, m2, a_has, b_has, never};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        OK(hos_svc_close_handle(all[i]));
    }
    hos_runtime_free(rt);

    /* The mode off: no report, and the text is empty. */
    OK(hos_runtime_new(NULL, &rt));
    hos_det_softlock off = {.size = sizeof off};
    OK(hos_det_softlock_get(rt, &off));
    TRUE(off.cause == HOS_DET_SOFTLOCK_NONE && off.decision == 0 && off.threads == 0);
    OK(hos_det_softlock_text(rt, text, sizeof text, &len));
    TRUE(len == 0 && text[0] == '\0');
    OK(hos_runtime_shutdown(rt, -1));
    hos_runtime_free(rt);
    return finish("deterministic softlock checked");
}
