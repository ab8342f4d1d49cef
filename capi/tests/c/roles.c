/*
 * Thread roles from C: hos_thread_params.role decides whatever the thread is named, 0 keeps
 * the name rule (a zeroed field, or a caller built before the field), a bad value is
 * InvalidEnumValue and starts nothing (spawned or attached); hos_thread_get_role and
 * hos_thread_set_role by handle and by the pseudo-handle; and HOS_ROLE_SERIAL_FIRST ranks
 * first on the one virtual core: a thread of the holder's priority named like nothing kicks
 * it. Run by capi/tests/c_hosts.rs.
 */
#include "check.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

static hos_runtime *rt;
static hos_handle hold; /* a manual-clear event the parked threads wait for */
static atomic_int entered, lead_ran;

static void parked(void *arg) {
    (void)arg;
    atomic_fetch_add(&entered, 1);
    OK(hos_event_wait(hold, -1));
}

static void lead(void *arg) {
    (void)arg;
    atomic_store(&lead_ran, 1);
}

/* Holds the one virtual core, spinning in "guest code" with a checkpoint at each kick, until
 * the thread that kicked it ran. */
static void holder(void *arg) {
    (void)arg;
    const volatile uint32_t *kick = hos_thread_kick_flag();
    atomic_store(&entered, 1);
    while (!atomic_load(&lead_ran)) {
        if (*kick) {
            hos_checkpoint();
        }
    }
}

static int serial_of(const char *name);

/* A host's own thread, attached with an explicit role: its name matches nothing, it is
 * serial, it reads its role through the pseudo-handle and hands the decision back. */
static void *attached(void *arg) {
    (void)arg;
    hos_thread_params p = {.size = sizeof p, .name = "JitThread0", .priority = 44,
                           .ideal_core = -2, .core_mask = 0x1, .role = HOS_ROLE_SERIAL};
    hos_handle me = 0;
    OK(hos_thread_attach(rt, &p, &me));
    hos_role r = 99;
    OK(hos_thread_get_role(HOS_CURRENT_THREAD, &r));
    TRUE(r == HOS_ROLE_SERIAL);
    TRUE(serial_of("JitThread0") == 1);
    OK(hos_thread_set_role(HOS_CURRENT_THREAD, HOS_ROLE_AUTO));
    TRUE(serial_of("JitThread0") == 0);
    OK(hos_thread_detach());
    OK(hos_svc_close_handle(me));
    hos_thread_params bad = p;
    bad.role = 5;
    EXPECT(hos_thread_attach(rt, &bad, &me), HOS_RESULT_INVALID_ENUM_VALUE);
    return NULL;
}

static hos_handle spawn(const char *name, hos_role role, void (*entry)(void *)) {
    hos_thread_params p = {.size = sizeof p, .name = name, .priority = 44, .ideal_core = -2,
                           .core_mask = 0x1, .role = role};
    hos_handle h = 0;
    OK(hos_thread_spawn(rt, &p, entry, NULL, &h));
    return h;
}

/* The serial flag hos_stats_threads reports for the live thread named `name` (-1: none). */
static int serial_of(const char *name) {
    hos_thread_stats t[16];
    memset(t, 0, sizeof t);
    t[0].size = sizeof t[0];
    uint32_t n = 0;
    OK(hos_stats_threads(rt, t, 16, &n));
    for (uint32_t i = 0; i < n && i < 16; i++) {
        if (strcmp((const char *)t[i].name, name) == 0) {
            return (int)t[i].serial;
        }
    }
    return -1;
}

static hos_role role_of(hos_handle h) {
    hos_role r = 99;
    OK(hos_thread_get_role(h, &r));
    return r;
}

int main(void) {
    hos_config *cfg;
    OK(hos_config_new(&cfg));
    OK(hos_config_set(cfg, "HOS_CORES", "1"));
    OK(hos_config_set(cfg, "HOS_VCORE_FIRST", "Presentation"));
    OK(hos_config_set(cfg, "HOS_VCORE_SLICE_US", "1000000"));
    OK(hos_config_set(cfg, "HOS_VCORE_ESCAPE_MS", "3600000"));
    OK(hos_runtime_new(cfg, &rt));
    hos_config_free(cfg);
    OK(hos_event_create(0, &hold));

    /* An explicit role beats the name; auto keeps the name rule. */
    hos_handle render = spawn("RenderLoop", HOS_ROLE_SERIAL, parked);
    hos_handle fake = spawn("MainThreadPool", HOS_ROLE_WORKER, parked);
    hos_handle job = spawn("Job", HOS_ROLE_AUTO, parked);
    hos_handle main_thread = spawn("MainThread", HOS_ROLE_AUTO, parked);
    /* A caller built before the role field: its size stops at core_mask, so the role past
     * it is not read (the name decides) whatever lies there. */
    hos_thread_params old = {.size = offsetof(hos_thread_params, role), .name = "OldHeader",
                             .priority = 44, .ideal_core = -2, .core_mask = 0x1, .role = 77};
    hos_handle legacy = 0;
    OK(hos_thread_spawn(rt, &old, parked, NULL, &legacy));
    while (atomic_load(&entered) < 5) {
    }
    TRUE(serial_of("RenderLoop") == 1);
    TRUE(serial_of("MainThreadPool") == 0);
    TRUE(serial_of("Job") == 0);
    TRUE(serial_of("MainThread") == 1);
    TRUE(serial_of("OldHeader") == 0);
    TRUE(role_of(render) == HOS_ROLE_SERIAL);
    TRUE(role_of(fake) == HOS_ROLE_WORKER);
    TRUE(role_of(job) == HOS_ROLE_AUTO);
    TRUE(role_of(legacy) == HOS_ROLE_AUTO);

    /* Declared later, and handed back to the name. */
    OK(hos_thread_set_role(job, HOS_ROLE_SERIAL));
    TRUE(serial_of("Job") == 1 && role_of(job) == HOS_ROLE_SERIAL);
    OK(hos_thread_set_role(job, HOS_ROLE_AUTO));
    TRUE(serial_of("Job") == 0 && role_of(job) == HOS_ROLE_AUTO);

    /* Bad input: a code naming it, nothing changed, nothing started. */
    EXPECT(hos_thread_set_role(job, 4), HOS_RESULT_INVALID_ENUM_VALUE);
    TRUE(strstr(hos_last_error_message(), "4") != NULL);
    TRUE(role_of(job) == HOS_ROLE_AUTO);
    EXPECT(hos_thread_set_role(0, HOS_ROLE_SERIAL), HOS_RESULT_INVALID_HANDLE);
    EXPECT(hos_thread_get_role(0, &(hos_role){0}), HOS_RESULT_INVALID_HANDLE);
    EXPECT(hos_thread_get_role(job, NULL), HOS_RESULT_INVALID_POINTER);
    hos_thread_params bad = {.size = sizeof bad, .name = "Bad", .priority = 44,
                             .ideal_core = -2, .core_mask = 0x1, .role = 0xFFFFFFFFu};
    hos_handle none = 0;
    EXPECT(hos_thread_spawn(rt, &bad, lead, NULL, &none), HOS_RESULT_INVALID_ENUM_VALUE);
    TRUE(strstr(hos_last_error_message(), "p->role is 4294967295") != NULL);
    TRUE(none == 0 && !atomic_load(&lead_ran));

    pthread_t jit;
    pthread_create(&jit, NULL, attached, NULL);
    pthread_join(jit, NULL);

    OK(hos_event_signal(hold));
    hos_handle all[5] = {render, fake, job, main_thread, legacy};
    for (int i = 0; i < 5; i++) {
        OK(hos_thread_join(all[i], -1));
        OK(hos_svc_close_handle(all[i]));
    }

    /* First on the one core by role: a thread of the holder's priority, named like nothing
     * HOS_VCORE_FIRST names, kicks the holder as a first thread does. */
    atomic_store(&entered, 0);
    hos_handle h = spawn("Holder", HOS_ROLE_AUTO, holder);
    while (!atomic_load(&entered)) {
    }
    hos_handle l = spawn("Lead", HOS_ROLE_SERIAL_FIRST, lead);
    OK(hos_thread_join(l, -1));
    OK(hos_thread_join(h, -1));
    OK(hos_svc_close_handle(l));
    OK(hos_svc_close_handle(h));
    hos_stats s = {.size = sizeof s};
    OK(hos_stats_get(rt, &s));
    /* One kick a core wait of Lead's: its start, and again after its start gate if it
     * reached the gate before this thread opened it (a guest wait gives the core back). */
    TRUE(s.vcore_kicks_first >= 1 && s.vcore_kicks_first <= 2);
    TRUE(s.vcore_escapes == 0);

    OK(hos_svc_close_handle(hold));
    OK(hos_runtime_shutdown(rt, -1));
    hos_runtime_free(rt);
    return finish("thread roles checked");
}
