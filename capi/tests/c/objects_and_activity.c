/*
 * From C: the reader-writer lock (writers first, the writer's recursion and reads, bad
 * releases), the barrier (rounds, a timed-out arrival taken back), svcGetSystemTick,
 * svcExitThread (unwinding C frames: the join completes, nothing after it runs), and
 * svcSetThreadActivity with the pause of every guest thread (a spinning guest stops at its
 * checkpoint and goes on when resumed), and deferred claim wakes (HOS_VCORE_CLAIM_DEFER: a
 * guest woken behind a worse holder runs once the holder hands the one core over at its
 * checkpoint). Run by capi/tests/c_hosts.rs; a hang fails it at the harness's time limit.
 */
#include "check.h"

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

static hos_runtime *rt;

static void sleep_ms(int ms) {
    struct timespec t = {.tv_sec = 0, .tv_nsec = (long)ms * 1000000L};
    nanosleep(&t, NULL);
}

static hos_handle spawn(const char *name, void (*entry)(void *), void *arg) {
    hos_thread_params p = {.size = sizeof p, .name = name, .priority = 44,
                           .ideal_core = -2, .core_mask = 0x3};
    hos_handle h = 0;
    OK(hos_thread_spawn(rt, &p, entry, arg, &h));
    return h;
}

/* ---- reader-writer lock ---- */

static hos_handle rw;
static atomic_int order;
static atomic_int writer_at, reader_at;

static void writer(void *arg) {
    (void)arg;
    OK(hos_rwlock_acquire_write(rw, -1));
    atomic_store(&writer_at, atomic_fetch_add(&order, 1));
    OK(hos_rwlock_release_write(rw));
}

static void reader(void *arg) {
    (void)arg;
    OK(hos_rwlock_acquire_read(rw, -1));
    atomic_store(&reader_at, atomic_fetch_add(&order, 1));
    OK(hos_rwlock_release_read(rw));
}

static void rwlock(void) {
    OK(hos_rwlock_create(&rw));
    int32_t r = -1, w = -1, o = -1;
    EXPECT(hos_rwlock_release_read(rw), HOS_RESULT_INVALID_STATE);
    EXPECT(hos_rwlock_release_write(rw), HOS_RESULT_INVALID_STATE);
    EXPECT(hos_rwlock_held(rw, &r, NULL, &o), HOS_RESULT_INVALID_POINTER);
    OK(hos_rwlock_acquire_write(rw, -1));
    OK(hos_rwlock_acquire_write(rw, 0)); /* the writer again */
    OK(hos_rwlock_acquire_read(rw, 0));  /* and it reads */
    OK(hos_rwlock_held(rw, &r, &w, &o));
    TRUE(r == 1 && w == 1 && o == 1);
    OK(hos_rwlock_release_write(rw));
    OK(hos_rwlock_release_write(rw));
    OK(hos_rwlock_held(rw, &r, &w, &o));
    TRUE(r == 1 && w == 0 && o == 1); /* it still reads: it keeps the lock */
    OK(hos_rwlock_release_read(rw));
    OK(hos_rwlock_held(rw, &r, &w, &o));
    TRUE(r == 0 && w == 0 && o == 0);

    /* Writers first: a reader that comes after a waiting writer goes after it. */
    OK(hos_rwlock_acquire_read(rw, -1));
    hos_handle wt = spawn("CWriter", writer, NULL);
    EXPECT(hos_rwlock_acquire_write(rw, 1000000), HOS_RESULT_TIMED_OUT);
    for (int i = 0; i < 2000; i++) {
        /* The writer waits once a new read is refused. */
        if (hos_rwlock_acquire_read(rw, 0) == HOS_RESULT_TIMED_OUT) break;
        OK(hos_rwlock_release_read(rw));
        sleep_ms(1);
    }
    hos_handle rd = spawn("CReader", reader, NULL);
    sleep_ms(10);
    OK(hos_rwlock_release_read(rw));
    OK(hos_thread_join(wt, -1));
    OK(hos_thread_join(rd, -1));
    TRUE(atomic_load(&writer_at) == 0 && atomic_load(&reader_at) == 1);
    OK(hos_svc_close_handle(wt));
    OK(hos_svc_close_handle(rd));
    OK(hos_svc_close_handle(rw));
}

/* ---- barrier ---- */

enum { ROUNDS = 50 };
static hos_handle bar;
static atomic_int arrived;

static void rounds(void *arg) {
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        atomic_fetch_add(&arrived, 1);
        OK(hos_barrier_wait(bar, -1));
        TRUE(atomic_load(&arrived) >= 3 * (i + 1));
    }
}

static void barrier(void) {
    hos_handle b;
    EXPECT(hos_barrier_create(0, &b), HOS_RESULT_OUT_OF_RANGE);
    OK(hos_barrier_create(2, &b));
    EXPECT(hos_barrier_wait(b, 1000000), HOS_RESULT_TIMED_OUT);
    /* Had the timed-out arrival stayed, this one would end the round. */
    EXPECT(hos_barrier_wait(b, 0), HOS_RESULT_TIMED_OUT);
    OK(hos_svc_close_handle(b));

    OK(hos_barrier_create(3, &bar));
    hos_handle a = spawn("CRounds0", rounds, NULL);
    hos_handle c = spawn("CRounds1", rounds, NULL);
    rounds(NULL);
    OK(hos_thread_join(a, -1));
    OK(hos_thread_join(c, -1));
    TRUE(atomic_load(&arrived) == 3 * ROUNDS);
    OK(hos_svc_close_handle(a));
    OK(hos_svc_close_handle(c));
    OK(hos_svc_close_handle(bar));
}

/* ---- svcGetSystemTick, svcExitThread ---- */

static atomic_int after_exit;

static void exits_deep(int depth) {
    if (depth == 0) {
        hos_svc_exit_thread();
        atomic_store(&after_exit, 1); /* never */
        return;
    }
    exits_deep(depth - 1);
    atomic_store(&after_exit, 2); /* never */
}

static void exits(void *arg) {
    (void)arg;
    exits_deep(3);
    atomic_store(&after_exit, 3); /* never */
}

static void tick_and_exit(void) {
    uint64_t a = hos_svc_get_system_tick();
    sleep_ms(10);
    uint64_t b = hos_svc_get_system_tick();
    TRUE(b - a >= HOS_TICKS_PER_SECOND / 100); /* 10 ms is 192000 ticks */

    EXPECT(hos_svc_exit_thread(), HOS_RESULT_INVALID_STATE); /* not a guest thread */
    hos_handle t = spawn("CExits", exits, NULL);
    OK(hos_thread_join(t, -1)); /* a wait on its handle */
    TRUE(atomic_load(&after_exit) == 0);
    OK(hos_svc_close_handle(t));
}

/* ---- svcSetThreadActivity, pause of every guest ---- */

static atomic_ullong count;
static atomic_int stop;

static void spinner(void *arg) {
    (void)arg;
    while (!atomic_load(&stop)) {
        atomic_fetch_add(&count, 1);
        hos_checkpoint(); /* a loop head of guest code */
    }
}

static int advances(void) {
    unsigned long long at = atomic_load(&count);
    sleep_ms(5);
    return atomic_load(&count) != at;
}

/* Whether it counts again within 10 s (a loaded machine may not run it for a while). */
static int goes_on(void) {
    for (int i = 0; i < 2000; i++) {
        if (advances()) return 1;
    }
    return 0;
}

static void activity(void) {
    hos_handle s = spawn("CSpinner", spinner, NULL);
    while (atomic_load(&count) == 0) sleep_ms(1);
    EXPECT(hos_svc_set_thread_activity(s, 2), HOS_RESULT_INVALID_ENUM_VALUE);
    EXPECT(hos_svc_set_thread_activity(0x12345678, HOS_THREAD_ACTIVITY_PAUSED),
           HOS_RESULT_INVALID_HANDLE);
    EXPECT(hos_svc_set_thread_activity(s, HOS_THREAD_ACTIVITY_RUNNABLE), HOS_RESULT_INVALID_STATE);
    OK(hos_svc_set_thread_activity(s, HOS_THREAD_ACTIVITY_PAUSED));
    EXPECT(hos_svc_set_thread_activity(s, HOS_THREAD_ACTIVITY_PAUSED), HOS_RESULT_INVALID_STATE);
    TRUE(!advances());
    OK(hos_svc_set_thread_activity(s, HOS_THREAD_ACTIVITY_RUNNABLE));
    TRUE(goes_on());

    uint32_t n = 0;
    EXPECT(hos_pause_guests(NULL, -1, &n), HOS_RESULT_INVALID_POINTER);
    OK(hos_pause_guests(rt, -1, &n));
    TRUE(n == 1);
    TRUE(!advances());
    OK(hos_resume_guests(rt, &n));
    TRUE(n == 1);
    TRUE(goes_on());
    atomic_store(&stop, 1);
    OK(hos_thread_join(s, -1));
    EXPECT(hos_svc_set_thread_activity(s, HOS_THREAD_ACTIVITY_PAUSED), HOS_RESULT_INVALID_STATE);
    OK(hos_svc_close_handle(s));
}

/* ---- deferred claim wakes ---- */

static hos_runtime *one;
static hos_handle go;
static atomic_int woke, holding;

static void better(void *arg) {
    (void)arg;
    OK(hos_event_wait(go, -1));
    atomic_store(&woke, 1);
}

static void worse(void *arg) {
    (void)arg;
    atomic_store(&holding, 1);
    while (!atomic_load(&woke)) hos_checkpoint(); /* hands the core over when kicked */
}

static hos_handle spawn_on(const char *name, int32_t priority, void (*entry)(void *)) {
    hos_thread_params p = {.size = sizeof p, .name = name, .priority = priority,
                           .ideal_core = 0, .core_mask = 0x1};
    hos_handle h = 0;
    OK(hos_thread_spawn(one, &p, entry, NULL, &h));
    return h;
}

static void deferred(void) {
    hos_config *cfg;
    OK(hos_config_new(&cfg));
    OK(hos_config_set(cfg, "HOS_CORES", "1"));
    OK(hos_config_set(cfg, "HOS_VCORE_CLAIM_DEFER", "1"));
    OK(hos_runtime_new(cfg, &one));
    hos_config_free(cfg);
    OK(hos_event_create(0, &go));
    hos_handle b = spawn_on("CBetter", 44, better);
    for (int i = 0; i < 5000; i++) { /* until it waits on the event, its core given back */
        hos_stats s = {.size = sizeof s};
        OK(hos_stats_get(one, &s));
        if (s.parks > 0) break;
        sleep_ms(1);
    }
    hos_handle w = spawn_on("CWorse", 45, worse);
    while (!atomic_load(&holding)) sleep_ms(1);
    OK(hos_event_signal(go)); /* the claim queues it behind the holder and kicks it */
    OK(hos_thread_join(b, -1));
    OK(hos_thread_join(w, -1));
    hos_stats s = {.size = sizeof s};
    OK(hos_stats_get(one, &s));
    TRUE(atomic_load(&woke) == 1 && s.vcore_kicks_priority >= 1 && s.vcore_escapes == 0);
    OK(hos_svc_close_handle(b));
    OK(hos_svc_close_handle(w));
    OK(hos_svc_close_handle(go));
    OK(hos_runtime_shutdown(one, -1));
    hos_runtime_free(one);
}

int main(void) {
    hos_config *cfg;
    OK(hos_config_new(&cfg));
    OK(hos_config_set(cfg, "HOS_CORES", "2"));
    OK(hos_runtime_new(cfg, &rt));
    hos_config_free(cfg);

    rwlock();
    barrier();
    tick_and_exit();
    activity();
    deferred();

    OK(hos_runtime_shutdown(rt, -1));
    hos_runtime_free(rt);
    return finish("objects and activity checked");
}
