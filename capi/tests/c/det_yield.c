/*
 * Horizon's three yields in the deterministic mode, from C (docs/determinism.md section 0):
 * a priority-40 thread that yield-loops with hos_svc_sleep_thread(0) or (-1) for a flag its
 * core's priority-50 thread sets never lets that thread run; with (-2) it does at once, and
 * sees the flag after one yield. Run by capi/tests/c_hosts.rs.
 */
#include "check.h"

#include <stdatomic.h>

enum { SPINS = 50 };

static atomic_int flag;
static int yields;
static int64_t kind;
static hos_handle go;

static void spinner(void *arg) {
    (void)arg;
    OK(hos_event_wait(go, -1));
    yields = SPINS;
    for (int n = 0; n < SPINS; n++) {
        if (atomic_load(&flag)) {
            yields = n;
            return;
        }
        hos_svc_sleep_thread(kind);
    }
}

static void setter(void *arg) {
    (void)arg;
    OK(hos_event_wait(go, -1));
    atomic_store(&flag, 1);
}

static void main_thread(void *arg) {
    hos_runtime *rt = arg;
    hos_thread_params p = {.size = sizeof p, .ideal_core = 0, .core_mask = 0x1};
    hos_handle workers[2];
    p.name = "Spinner";
    p.priority = 40;
    OK(hos_thread_spawn(rt, &p, spinner, NULL, &workers[0]));
    p.name = "Setter";
    p.priority = 50;
    OK(hos_thread_spawn(rt, &p, setter, NULL, &workers[1]));
    /* Both become ready at one decision: core 0's better thread runs first. */
    OK(hos_event_signal(go));
    for (int i = 0; i < 2; i++) {
        OK(hos_thread_join(workers[i], -1));
        OK(hos_svc_close_handle(workers[i]));
    }
}

/* The spinner's yields before it saw the flag under `spec`, yielding by `k`. */
static int run(const char *spec, int64_t k) {
    hos_config *cfg;
    OK(hos_config_new(&cfg));
    OK(hos_config_set(cfg, "HOS_DET", spec));
    OK(hos_config_set(cfg, "HOS_DET_PACE", "free"));
    OK(hos_config_set(cfg, "HOS_DET_QUANTUM", "1"));
    OK(hos_config_set(cfg, "HOS_CORES", "3"));
    hos_runtime *rt;
    OK(hos_runtime_new(cfg, &rt));
    hos_config_free(cfg);
    atomic_store(&flag, 0);
    kind = k;
    OK(hos_event_create(0, &go));
    hos_thread_params p = {.size = sizeof p, .name = "MainThread", .priority = 44,
                           .ideal_core = 1, .core_mask = 0x7};
    hos_handle main;
    OK(hos_thread_spawn(rt, &p, main_thread, rt, &main));
    OK(hos_thread_join(main, -1));
    OK(hos_svc_close_handle(main));
    OK(hos_svc_close_handle(go));
    OK(hos_runtime_shutdown(rt, -1));
    hos_runtime_free(rt);
    return yields;
}

int main(void) {
    const char *specs[] = {"stable", "random:1"};
    for (int i = 0; i < 2; i++) {
        TRUE(run(specs[i], 0) == SPINS);
        TRUE(run(specs[i], -1) == SPINS);
        TRUE(run(specs[i], -2) == 1);
    }
    return finish("deterministic yields checked");
}
