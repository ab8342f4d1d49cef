/*
 * Threads the host makes itself, attached as guest threads: their virtual core, handle and
 * priority, their detach (by call, or by exiting without one), the shutdown that waits for
 * them, and the kick flag that a JIT's loop tests inline. Run by capi/tests/c_hosts.rs with
 * one virtual core and no escape within the run: a kick flag that never rises hangs the JIT
 * loop below, and the harness fails the test at its time limit.
 */
#include "check.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

static hos_runtime *rt;
static atomic_int better_ran;

static void better(void *arg) {
    (void)arg;
    atomic_store(&better_ran, 1);
}

/* A JIT's thread: attached, it spins in "generated code" that tests its kick flag at each
 * back-edge; a better thread needs the one core, so the flag rises and the checkpoint hands
 * the core over. */
static void *jit_thread(void *arg) {
    hos_handle *self = arg;
    hos_thread_params p = {.size = sizeof p, .name = "JitThread0", .priority = 44,
                           .ideal_core = 0, .core_mask = 0x1};
    EXPECT(hos_thread_attach(rt, &p, NULL), HOS_RESULT_INVALID_POINTER);
    hos_thread_params bad = p;
    bad.priority = 64;
    EXPECT(hos_thread_attach(rt, &bad, self), HOS_RESULT_INVALID_PRIORITY);
    EXPECT(hos_thread_detach(), HOS_RESULT_INVALID_STATE);
    OK(hos_thread_attach(rt, &p, self));
    EXPECT(hos_thread_attach(rt, &p, self), HOS_RESULT_INVALID_STATE);

    int32_t prio = -1;
    OK(hos_svc_get_thread_priority(HOS_CURRENT_THREAD, &prio));
    TRUE(prio == 44);
    const volatile uint32_t *kick = hos_thread_kick_flag();
    TRUE(kick == hos_thread_kick_flag()); /* stable */
    TRUE(*kick == 0);

    hos_handle b;
    hos_thread_params bp = {.size = sizeof bp, .name = "Better", .priority = 10,
                            .ideal_core = 0, .core_mask = 0x1};
    OK(hos_thread_spawn(rt, &bp, better, NULL, &b));
    uint64_t checkpoints = 0;
    while (!atomic_load(&better_ran)) {
        if (*kick) { /* the inline test of generated code */
            hos_checkpoint();
            checkpoints++;
        }
    }
    TRUE(checkpoints > 0);
    OK(hos_thread_join(b, -1));
    OK(hos_svc_close_handle(b));
    TRUE(*kick == 0);
    OK(hos_thread_detach());
    EXPECT(hos_thread_detach(), HOS_RESULT_INVALID_STATE);
    return NULL;
}

/* Attaches and exits without detaching: its thread-local teardown detaches it. */
static void *forgetful_thread(void *arg) {
    hos_thread_params p = {.size = sizeof p, .name = "Forgetful", .priority = 44,
                           .ideal_core = 0, .core_mask = 0x1};
    OK(hos_thread_attach(rt, &p, arg));
    return NULL;
}

/* Attaches and stays until told: a shutdown names it. */
static atomic_int stayer_attached, release_stayer;
static void *stayer_thread(void *arg) {
    hos_thread_params p = {.size = sizeof p, .name = "Stayer", .priority = 44,
                           .ideal_core = 0, .core_mask = 0x1};
    OK(hos_thread_attach(rt, &p, arg));
    atomic_store(&stayer_attached, 1);
    while (!atomic_load(&release_stayer)) {
    }
    OK(hos_thread_detach());
    return NULL;
}

int main(void) {
    const volatile uint32_t *none = hos_thread_kick_flag();
    TRUE(none != NULL && *none == 0); /* no guest thread: a word that stays 0 */

    hos_config *cfg;
    OK(hos_config_new(&cfg));
    OK(hos_config_set(cfg, "HOS_CORES", "1"));
    OK(hos_config_set(cfg, "HOS_VCORE_ESCAPE_MS", "3600000"));
    OK(hos_runtime_new(cfg, &rt));
    hos_config_free(cfg);

    pthread_t t;
    hos_handle jit = 0, forgetful = 0, stayer = 0;
    pthread_create(&t, NULL, jit_thread, &jit);
    pthread_join(t, NULL);
    OK(hos_thread_join(jit, 0)); /* detached: its handle is ready */
    OK(hos_svc_close_handle(jit));

    pthread_create(&t, NULL, forgetful_thread, &forgetful);
    pthread_join(t, NULL);
    OK(hos_thread_join(forgetful, -1)); /* detached when its OS thread ended */
    OK(hos_svc_close_handle(forgetful));

    /* The one core is free again: a thread takes it at once (no escape within the run). */
    hos_handle b;
    OK(hos_thread_spawn(rt, NULL, better, NULL, &b));
    OK(hos_thread_join(b, -1));
    OK(hos_svc_close_handle(b));

    pthread_create(&t, NULL, stayer_thread, &stayer);
    while (!atomic_load(&stayer_attached)) {
    }
    EXPECT(hos_runtime_shutdown(rt, 50000000), HOS_RESULT_TIMED_OUT);
    TRUE(strstr(hos_last_error_message(), "Stayer") != NULL);
    atomic_store(&release_stayer, 1);
    pthread_join(t, NULL);
    OK(hos_svc_close_handle(stayer));
    hos_stats s = {.size = sizeof s};
    OK(hos_stats_get(rt, &s));
    TRUE(s.vcore_escapes == 0);
    TRUE(s.vcore_kicks_priority >= 1);
    /* After the shutdown: the threads and the reactor's CPU as it began (where the OS layer
     * reads CPU clocks: the std fallback reads 0 for the process too). */
    TRUE(s.threads >= 1);
    TRUE(s.process_user_ns + s.process_kernel_ns == 0 || s.reactor_user_ns + s.reactor_kernel_ns > 0);
    hos_runtime_free(rt);

    return finish("attached threads checked");
}
