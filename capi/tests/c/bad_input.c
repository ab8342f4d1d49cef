/*
 * Every call of hos.h fed its bad inputs: NULL and misaligned pointers, strings that are not
 * UTF-8, closed, garbage and wrong-kind handles, priorities and masks out of range, counts
 * of 0, sizes too small, config keys that are no switch and values a switch refuses, guest
 * words that are NULL or misaligned and raw svc types out of their enumerations. Each
 * must return its documented code, never crash, and never run a host callback it refused.
 * Run by capi/tests/c_hosts.rs; exit status 0 when every check holds.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "check.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A handle value no table ever made (index 0x7FFF, past the 1024 slots). */
#define GARBAGE ((hos_handle)0x12347FFF)

static atomic_int entries_run;

static void count_entry(void *arg) {
    (void)arg;
    atomic_fetch_add(&entries_run, 1);
}

static void hold_forever(void *arg) {
    hos_handle ev = *(hos_handle *)arg;
    hos_event_wait(ev, -1); /* until the event or the shutdown */
}

static void lock_and_leave(void *arg) {
    hos_handle m = *(hos_handle *)arg;
    hos_mutex_lock(m, -1); /* and return holding it: the lock is abandoned */
}

/* Waits on a condition variable while another thread takes its mutex and ends holding it. */
struct cv_case {
    hos_handle m, cv, ready;
    hos_result got;
};

static void wait_for_abandon(void *arg) {
    struct cv_case *c = arg;
    hos_mutex_lock(c->m, -1);
    hos_event_signal(c->ready);
    c->got = hos_condvar_wait(c->cv, c->m, -1);
    hos_mutex_unlock(c->m);
}

static void config_calls(void) {
    EXPECT(hos_config_new(NULL), HOS_RESULT_INVALID_POINTER);
    hos_config *cfg;
    OK(hos_config_new(&cfg));
    EXPECT(hos_config_set(NULL, "HOS_CORES", "4"), HOS_RESULT_INVALID_POINTER);
    EXPECT(hos_config_set(cfg, NULL, "4"), HOS_RESULT_INVALID_POINTER);
    EXPECT(hos_config_set(cfg, "HOS_NO_SUCH_SWITCH", "1"), HOS_RESULT_UNKNOWN_KEY);
    EXPECT(hos_config_set(cfg, "hos_cores", "4"), HOS_RESULT_UNKNOWN_KEY);
    EXPECT(hos_config_set(cfg, "HOS_SPIN_US", "fast"), HOS_RESULT_INVALID_VALUE);
    TRUE(strstr(hos_last_error_message(), "HOS_SPIN_US") != NULL);
    TRUE(strstr(hos_last_error_message(), "fast") != NULL);
    EXPECT(hos_config_set(cfg, "HOS_SPIN_US", "-7"), HOS_RESULT_INVALID_VALUE);
    EXPECT(hos_config_set(cfg, "HOS_CORES", "9"), HOS_RESULT_INVALID_VALUE);
    EXPECT(hos_config_set(cfg, "HOS_SHORT_SLEEP", "sometimes"), HOS_RESULT_INVALID_VALUE);
    EXPECT(hos_config_set(cfg, "HOS_\xff", "1"), HOS_RESULT_INVALID_UTF8);
    EXPECT(hos_config_set(cfg, "HOS_SERIAL", "Main\xffThread"), HOS_RESULT_INVALID_UTF8);
    OK(hos_config_set(cfg, "HOS_CORES", "4"));
    OK(hos_config_set(cfg, "HOS_CORES", NULL)); /* back to the default */
    EXPECT(hos_config_read_env(NULL), HOS_RESULT_INVALID_POINTER);
    setenv("HOS_VCORE_SLICE_US", "zero", 1);
    EXPECT(hos_config_read_env(cfg), HOS_RESULT_INVALID_VALUE);
    unsetenv("HOS_VCORE_SLICE_US");
    OK(hos_config_read_env(cfg));
    EXPECT(hos_runtime_new(cfg, NULL), HOS_RESULT_INVALID_POINTER);
    hos_config_free(cfg);
    hos_config_free(NULL);
}

static void stats_calls(hos_runtime *rt) {
    hos_stats s = {.size = sizeof s};
    EXPECT(hos_stats_get(NULL, &s), HOS_RESULT_INVALID_POINTER);
    EXPECT(hos_stats_get(rt, NULL), HOS_RESULT_INVALID_POINTER);
    s.size = 0;
    EXPECT(hos_stats_get(rt, &s), HOS_RESULT_INVALID_SIZE);
    _Alignas(8) unsigned char buf[sizeof(hos_stats) + 16];
    EXPECT(hos_stats_get(rt, (hos_stats *)(buf + 4)), HOS_RESULT_INVALID_POINTER);
    /* A caller built against a newer, larger struct: the fields this library lacks read 0. */
    memset(buf, 0xAA, sizeof buf);
    uint32_t big = sizeof buf;
    memcpy(buf, &big, sizeof big);
    OK(hos_stats_get(rt, (hos_stats *)buf));
    for (size_t i = sizeof(hos_stats); i < sizeof buf; i++) {
        TRUE(buf[i] == 0);
    }
    uint32_t count;
    EXPECT(hos_stats_threads(NULL, NULL, 0, &count), HOS_RESULT_INVALID_POINTER);
    EXPECT(hos_stats_threads(rt, NULL, 0, NULL), HOS_RESULT_INVALID_POINTER);
    EXPECT(hos_stats_threads(rt, NULL, 1, &count), HOS_RESULT_INVALID_POINTER);
    hos_thread_stats ts[2] = {{.size = 3}};
    EXPECT(hos_stats_threads(rt, ts, 2, &count), HOS_RESULT_INVALID_SIZE);
    OK(hos_stats_threads(rt, NULL, 0, &count));
    /* Misaligned is refused with no capacity too (found by the fuzzer: it was Success). */
    EXPECT(hos_stats_threads(rt, (hos_thread_stats *)(buf + 4), 0, &count),
           HOS_RESULT_INVALID_POINTER);
    uint32_t cores;
    EXPECT(hos_runtime_cores(NULL, &cores), HOS_RESULT_INVALID_POINTER);
    EXPECT(hos_runtime_cores(rt, NULL), HOS_RESULT_INVALID_POINTER);
    OK(hos_runtime_cores(rt, &cores));
    TRUE(cores == 2);
    EXPECT(hos_host_sleep(NULL, 1000), HOS_RESULT_INVALID_POINTER);
    OK(hos_host_sleep(rt, -7)); /* returns at once */
}

static void spawn_calls(hos_runtime *rt) {
    hos_handle t;
    hos_thread_params p = {.size = sizeof p, .name = "Bad", .priority = 44, .ideal_core = 0,
                           .core_mask = 0x3};
    EXPECT(hos_thread_spawn(NULL, &p, count_entry, NULL, &t), HOS_RESULT_INVALID_POINTER);
    EXPECT(hos_thread_spawn(rt, &p, NULL, NULL, &t), HOS_RESULT_INVALID_POINTER);
    EXPECT(hos_thread_spawn(rt, &p, count_entry, NULL, NULL), HOS_RESULT_INVALID_POINTER);
    _Alignas(8) unsigned char buf[sizeof(hos_thread_params) + 8];
    memcpy(buf + 4, &p, sizeof p);
    EXPECT(hos_thread_spawn(rt, (hos_thread_params *)(buf + 4), count_entry, NULL, &t),
           HOS_RESULT_INVALID_POINTER);
    hos_thread_params bad = p;
    bad.size = 4;
    EXPECT(hos_thread_spawn(rt, &bad, count_entry, NULL, &t), HOS_RESULT_INVALID_SIZE);
    bad = p;
    bad.priority = 64;
    EXPECT(hos_thread_spawn(rt, &bad, count_entry, NULL, &t), HOS_RESULT_INVALID_PRIORITY);
    bad.priority = -1;
    EXPECT(hos_thread_spawn(rt, &bad, count_entry, NULL, &t), HOS_RESULT_INVALID_PRIORITY);
    bad = p;
    bad.core_mask = 0;
    EXPECT(hos_thread_spawn(rt, &bad, count_entry, NULL, &t), HOS_RESULT_INVALID_CORE_ID);
    bad.core_mask = 0x4; /* core 2 of a 2-core runtime */
    EXPECT(hos_thread_spawn(rt, &bad, count_entry, NULL, &t), HOS_RESULT_INVALID_CORE_ID);
    bad = p;
    bad.ideal_core = 7;
    EXPECT(hos_thread_spawn(rt, &bad, count_entry, NULL, &t), HOS_RESULT_INVALID_CORE_ID);
    bad = p;
    bad.core_mask = 0x1;
    bad.ideal_core = 1;
    EXPECT(hos_thread_spawn(rt, &bad, count_entry, NULL, &t), HOS_RESULT_INVALID_COMBINATION);
    bad = p;
    bad.name = "Bad\xc3";
    EXPECT(hos_thread_spawn(rt, &bad, count_entry, NULL, &t), HOS_RESULT_INVALID_UTF8);
    TRUE(atomic_load(&entries_run) == 0); /* no refused spawn ran its entry */

    OK(hos_thread_spawn(rt, NULL, count_entry, NULL, &t)); /* NULL params: the defaults */
    OK(hos_thread_join(t, -1));
    OK(hos_thread_join(t, 0)); /* twice is fine */
    TRUE(atomic_load(&entries_run) == 1);
    int32_t prio;
    OK(hos_svc_get_thread_priority(t, &prio));
    TRUE(prio == 44);
    OK(hos_svc_close_handle(t));
    EXPECT(hos_thread_join(t, 0), HOS_RESULT_INVALID_HANDLE);
    EXPECT(hos_thread_join(GARBAGE, 0), HOS_RESULT_INVALID_HANDLE);
    EXPECT(hos_thread_join(0, 0), HOS_RESULT_INVALID_HANDLE);
}

static void thread_calls(hos_runtime *rt) {
    hos_handle ev, t;
    OK(hos_event_create(0, &ev));
    hos_thread_params p = {.size = sizeof p, .name = "Holder", .priority = 44, .ideal_core = -2,
                           .core_mask = 0x3};
    OK(hos_thread_spawn(rt, &p, hold_forever, &ev, &t));
    EXPECT(hos_thread_join(t, 0), HOS_RESULT_TIMED_OUT);
    EXPECT(hos_thread_join(t, 1000000), HOS_RESULT_TIMED_OUT);
    EXPECT(hos_thread_join(ev, 0), HOS_RESULT_INVALID_HANDLE);

    int32_t prio;
    EXPECT(hos_svc_get_thread_priority(GARBAGE, &prio), HOS_RESULT_INVALID_HANDLE);
    EXPECT(hos_svc_get_thread_priority(ev, &prio), HOS_RESULT_INVALID_HANDLE);
    EXPECT(hos_svc_get_thread_priority(t, NULL), HOS_RESULT_INVALID_POINTER);
    EXPECT(hos_svc_get_thread_priority(HOS_CURRENT_THREAD, &prio), HOS_RESULT_INVALID_HANDLE);
    EXPECT(hos_svc_set_thread_priority(t, 64), HOS_RESULT_INVALID_PRIORITY);
    EXPECT(hos_svc_set_thread_priority(t, -1), HOS_RESULT_INVALID_PRIORITY);
    EXPECT(hos_svc_set_thread_priority(GARBAGE, 10), HOS_RESULT_INVALID_HANDLE);
    OK(hos_svc_set_thread_priority(t, 10));
    OK(hos_svc_get_thread_priority(t, &prio));
    TRUE(prio == 10);

    int32_t ideal;
    uint64_t mask;
    EXPECT(hos_svc_get_thread_core_mask(t, NULL, &mask), HOS_RESULT_INVALID_POINTER);
    EXPECT(hos_svc_get_thread_core_mask(t, &ideal, NULL), HOS_RESULT_INVALID_POINTER);
    EXPECT(hos_svc_set_thread_core_mask(t, 0, 0), HOS_RESULT_INVALID_CORE_ID);
    EXPECT(hos_svc_set_thread_core_mask(t, 1, 0x1), HOS_RESULT_INVALID_COMBINATION);
    EXPECT(hos_svc_set_thread_core_mask(ev, 0, 0x1), HOS_RESULT_INVALID_HANDLE);
    OK(hos_svc_set_thread_core_mask(t, -2, 0x2));
    OK(hos_svc_get_thread_core_mask(t, &ideal, &mask));
    TRUE(ideal == 1 && mask == 0x2);

    OK(hos_event_signal(ev));
    OK(hos_thread_join(t, -1));
    OK(hos_svc_close_handle(t));
    OK(hos_svc_close_handle(ev));
}

static void wait_calls(void) {
    hos_handle ev, m;
    int32_t index = -1;
    OK(hos_event_create(1, &ev));
    OK(hos_mutex_create(0, &m));
    hos_handle list[65];
    for (int i = 0; i < 65; i++) {
        list[i] = ev;
    }
    EXPECT(hos_svc_wait_synchronization(&index, list, 65, 0), HOS_RESULT_OUT_OF_RANGE);
    EXPECT(hos_svc_wait_synchronization(&index, list, -1, 0), HOS_RESULT_OUT_OF_RANGE);
    EXPECT(hos_svc_wait_synchronization(&index, NULL, 1, 0), HOS_RESULT_INVALID_POINTER);
    EXPECT(hos_svc_wait_synchronization(NULL, list, 1, 0), HOS_RESULT_INVALID_POINTER);
    _Alignas(4) unsigned char buf[16];
    memcpy(buf + 1, &ev, sizeof ev);
    EXPECT(hos_svc_wait_synchronization(&index, (hos_handle *)(buf + 1), 1, 0),
           HOS_RESULT_INVALID_POINTER);
    EXPECT(hos_svc_wait_synchronization(&index, (hos_handle[]){ev, m}, 2, 0),
           HOS_RESULT_INVALID_HANDLE); /* a mutex cannot be waited for */
    EXPECT(hos_svc_wait_synchronization(&index, (hos_handle[]){GARBAGE}, 1, 0),
           HOS_RESULT_INVALID_HANDLE);
    EXPECT(hos_svc_wait_synchronization(&index, list, 64, 0), HOS_RESULT_TIMED_OUT);
    EXPECT(hos_svc_wait_synchronization(&index, NULL, 0, 1000000), HOS_RESULT_TIMED_OUT);
    TRUE(index == -1); /* a failed call wrote nothing */
    OK(hos_event_signal(ev));
    OK(hos_svc_wait_synchronization(&index, list, 64, -1));
    TRUE(index == 0);

    EXPECT(hos_svc_close_handle(GARBAGE), HOS_RESULT_INVALID_HANDLE);
    EXPECT(hos_svc_close_handle(0), HOS_RESULT_INVALID_HANDLE);
    OK(hos_svc_close_handle(ev));
    EXPECT(hos_svc_close_handle(ev), HOS_RESULT_INVALID_HANDLE);
    EXPECT(hos_event_signal(ev), HOS_RESULT_INVALID_HANDLE);
    EXPECT(hos_event_wait(ev, 0), HOS_RESULT_INVALID_HANDLE);
    EXPECT(hos_svc_wait_synchronization(&index, &ev, 1, 0), HOS_RESULT_INVALID_HANDLE);
    OK(hos_svc_close_handle(m));
}

static void object_calls(hos_runtime *rt) {
    hos_handle ev, q, s, m, cv, timer;
    EXPECT(hos_event_create(1, NULL), HOS_RESULT_INVALID_POINTER);
    OK(hos_event_create(1, &ev));
    EXPECT(hos_event_wait(ev, 0), HOS_RESULT_TIMED_OUT);
    EXPECT(hos_event_wait(ev, 100000), HOS_RESULT_TIMED_OUT);
    EXPECT(hos_event_wait(GARBAGE, 0), HOS_RESULT_INVALID_HANDLE);
    EXPECT(hos_event_clear(GARBAGE), HOS_RESULT_INVALID_HANDLE);

    EXPECT(hos_queue_create(0, &q), HOS_RESULT_OUT_OF_RANGE);
    EXPECT(hos_queue_create(HOS_QUEUE_CAPACITY_MAX + 1, &q), HOS_RESULT_OUT_OF_RANGE);
    EXPECT(hos_queue_create(UINT32_MAX, &q), HOS_RESULT_OUT_OF_RANGE);
    EXPECT(hos_queue_create(1, NULL), HOS_RESULT_INVALID_POINTER);
    OK(hos_queue_create(1, &q));
    uint64_t msg = 7;
    EXPECT(hos_queue_receive(q, &msg, 0), HOS_RESULT_TIMED_OUT);
    TRUE(msg == 7);
    OK(hos_queue_send(q, 1, 0));
    EXPECT(hos_queue_send(q, 2, 0), HOS_RESULT_TIMED_OUT); /* full */
    EXPECT(hos_queue_send(q, 2, 100000), HOS_RESULT_TIMED_OUT);
    EXPECT(hos_queue_receive(q, NULL, 0), HOS_RESULT_INVALID_POINTER);
    _Alignas(8) unsigned char buf[16];
    EXPECT(hos_queue_receive(q, (uint64_t *)(buf + 4), 0), HOS_RESULT_INVALID_POINTER);
    EXPECT(hos_queue_send(ev, 1, 0), HOS_RESULT_INVALID_HANDLE);
    EXPECT(hos_event_wait(q, 0), HOS_RESULT_INVALID_HANDLE);
    OK(hos_queue_receive(q, &msg, 0));
    TRUE(msg == 1); /* the message the failed calls did not take */

    EXPECT(hos_semaphore_create(0, 0, &s), HOS_RESULT_OUT_OF_RANGE);
    EXPECT(hos_semaphore_create(2, 1, &s), HOS_RESULT_OUT_OF_RANGE);
    EXPECT(hos_semaphore_create(0, 1, NULL), HOS_RESULT_INVALID_POINTER);
    OK(hos_semaphore_create(0, 1, &s));
    EXPECT(hos_semaphore_acquire(s, 0), HOS_RESULT_TIMED_OUT);
    EXPECT(hos_semaphore_release(s, 2), HOS_RESULT_OUT_OF_RANGE);
    OK(hos_semaphore_release(s, 1));
    EXPECT(hos_semaphore_release(s, 1), HOS_RESULT_OUT_OF_RANGE);
    OK(hos_semaphore_acquire(s, -1));
    EXPECT(hos_semaphore_acquire(q, 0), HOS_RESULT_INVALID_HANDLE);

    EXPECT(hos_mutex_create(0, NULL), HOS_RESULT_INVALID_POINTER);
    OK(hos_mutex_create(0, &m));
    EXPECT(hos_mutex_unlock(m), HOS_RESULT_INVALID_STATE);
    OK(hos_mutex_lock(m, -1));
    EXPECT(hos_mutex_lock(m, 0), HOS_RESULT_INVALID_STATE); /* not recursive */
    EXPECT(hos_mutex_lock(ev, 0), HOS_RESULT_INVALID_HANDLE);
    OK(hos_condvar_create(&cv));
    EXPECT(hos_condvar_create(NULL), HOS_RESULT_INVALID_POINTER);
    EXPECT(hos_condvar_wait(cv, ev, 0), HOS_RESULT_INVALID_HANDLE);
    EXPECT(hos_condvar_wait(m, m, 0), HOS_RESULT_INVALID_HANDLE);
    EXPECT(hos_condvar_wait(cv, m, 100000), HOS_RESULT_TIMED_OUT);
    OK(hos_mutex_unlock(m)); /* held again after the timed-out wait */
    EXPECT(hos_condvar_wait(cv, m, 0), HOS_RESULT_INVALID_STATE); /* not held */
    EXPECT(hos_condvar_signal(GARBAGE), HOS_RESULT_INVALID_HANDLE);
    EXPECT(hos_condvar_broadcast(m), HOS_RESULT_INVALID_HANDLE);

    hos_handle r, t;
    OK(hos_mutex_create(1, &r));
    OK(hos_mutex_lock(r, -1));
    OK(hos_mutex_lock(r, 0)); /* recursive */
    OK(hos_mutex_unlock(r));
    OK(hos_mutex_unlock(r));
    EXPECT(hos_mutex_unlock(r), HOS_RESULT_INVALID_STATE);
    OK(hos_thread_spawn(rt, NULL, lock_and_leave, &r, &t));
    OK(hos_thread_join(t, -1));
    EXPECT(hos_mutex_lock(r, -1), HOS_RESULT_ABANDONED);
    OK(hos_mutex_unlock(r)); /* the abandoned lock was taken over */
    OK(hos_svc_close_handle(t));

    /* A condition variable's waiter takes back a mutex abandoned while it waited. */
    struct cv_case c = {.got = 0};
    hos_handle waiter, leaver;
    OK(hos_mutex_create(0, &c.m));
    OK(hos_condvar_create(&c.cv));
    OK(hos_event_create(1, &c.ready));
    OK(hos_thread_spawn(rt, NULL, wait_for_abandon, &c, &waiter));
    OK(hos_event_wait(c.ready, -1));
    OK(hos_thread_spawn(rt, NULL, lock_and_leave, &c.m, &leaver)); /* once the wait let go */
    OK(hos_thread_join(leaver, -1));
    OK(hos_condvar_signal(c.cv));
    OK(hos_thread_join(waiter, -1));
    EXPECT(c.got, HOS_RESULT_ABANDONED);
    hos_handle cv_all[] = {c.m, c.cv, c.ready, waiter, leaver};
    for (size_t i = 0; i < sizeof cv_all / sizeof cv_all[0]; i++) {
        OK(hos_svc_close_handle(cv_all[i]));
    }

    EXPECT(hos_timer_event_create(1, NULL), HOS_RESULT_INVALID_POINTER);
    OK(hos_timer_event_create(1, &timer));
    EXPECT(hos_timer_event_start_one_shot(timer, -7), HOS_RESULT_OUT_OF_RANGE);
    EXPECT(hos_timer_event_start_periodic(timer, 0, 0), HOS_RESULT_OUT_OF_RANGE);
    EXPECT(hos_timer_event_start_periodic(timer, -1, 1000), HOS_RESULT_OUT_OF_RANGE);
    EXPECT(hos_timer_event_start_one_shot(ev, 1000), HOS_RESULT_INVALID_HANDLE);
    EXPECT(hos_timer_event_stop(q), HOS_RESULT_INVALID_HANDLE);
    OK(hos_timer_event_start_one_shot(timer, 100000));
    OK(hos_event_wait(timer, -1)); /* a timer event is an event */
    OK(hos_timer_event_stop(timer));

    hos_handle all[] = {ev, q, s, m, cv, r, timer};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        OK(hos_svc_close_handle(all[i]));
    }
}

/* The svcs on guest words: a NULL word is InvalidCurrentMemory, a misaligned one
 * InvalidAddress, a raw type outside its enumeration InvalidEnumValue (the kernel's codes);
 * a word that does not call for a wait InvalidState, a poll TimedOut. */
static void word_calls(hos_handle thread) {
    _Alignas(8) unsigned char buf[16] = {0};
    uint32_t *odd = (uint32_t *)(buf + 2);
    int32_t *odd32 = (int32_t *)(buf + 1);
    int64_t *odd64 = (int64_t *)(buf + 4); /* 4-aligned, not 8 */
    uint32_t m = 0, key = 0;
    EXPECT(hos_svc_arbitrate_lock(thread, NULL, 1), HOS_RESULT_INVALID_CURRENT_MEMORY);
    EXPECT(hos_svc_arbitrate_lock(thread, odd, 1), HOS_RESULT_INVALID_ADDRESS);
    m = thread; /* held, no waiters bit: nothing to wait for */
    OK(hos_svc_arbitrate_lock(thread, &m, 1));
    TRUE(m == thread);
    m = GARBAGE | HOS_MUTEX_WAITERS;
    EXPECT(hos_svc_arbitrate_lock(GARBAGE, &m, 1), HOS_RESULT_INVALID_HANDLE);
    hos_handle ev;
    OK(hos_event_create(0, &ev));
    m = ev | HOS_MUTEX_WAITERS;
    EXPECT(hos_svc_arbitrate_lock(ev, &m, 1), HOS_RESULT_INVALID_HANDLE); /* no thread */
    m = HOS_CURRENT_THREAD | HOS_MUTEX_WAITERS;
    EXPECT(hos_svc_arbitrate_lock(HOS_CURRENT_THREAD, &m, 1), HOS_RESULT_INVALID_HANDLE);
    OK(hos_svc_close_handle(ev));
    EXPECT(hos_svc_arbitrate_unlock(NULL), HOS_RESULT_INVALID_CURRENT_MEMORY);
    EXPECT(hos_svc_arbitrate_unlock(odd), HOS_RESULT_INVALID_ADDRESS);
    m = 0x1234;
    OK(hos_svc_arbitrate_unlock(&m)); /* nobody waits: the word is freed */
    TRUE(m == 0);

    EXPECT(hos_svc_wait_process_wide_key_atomic(NULL, &key, 1, 0),
           HOS_RESULT_INVALID_CURRENT_MEMORY);
    EXPECT(hos_svc_wait_process_wide_key_atomic(&m, NULL, 1, 0),
           HOS_RESULT_INVALID_CURRENT_MEMORY);
    EXPECT(hos_svc_wait_process_wide_key_atomic(odd, &key, 1, 0), HOS_RESULT_INVALID_ADDRESS);
    EXPECT(hos_svc_wait_process_wide_key_atomic(&m, odd, 1, 0), HOS_RESULT_INVALID_ADDRESS);
    m = 0x1234;
    EXPECT(hos_svc_wait_process_wide_key_atomic(&m, &key, 0x1234, 0), HOS_RESULT_TIMED_OUT);
    TRUE(m == 0); /* released, and not taken back: the caller locks it again itself */
    EXPECT(hos_svc_signal_process_wide_key(NULL, 1), HOS_RESULT_INVALID_CURRENT_MEMORY);
    EXPECT(hos_svc_signal_process_wide_key(odd, 1), HOS_RESULT_INVALID_ADDRESS);
    key = 1;
    OK(hos_svc_signal_process_wide_key(&key, -1));
    TRUE(key == 0); /* nobody waits on it */

    int32_t word = 5;
    int64_t word64 = 5;
    EXPECT(hos_svc_wait_for_address(NULL, HOS_ARBITRATION_WAIT_IF_EQUAL, 5, 0),
           HOS_RESULT_INVALID_CURRENT_MEMORY);
    EXPECT(hos_svc_wait_for_address(odd32, HOS_ARBITRATION_WAIT_IF_EQUAL, 0, 0),
           HOS_RESULT_INVALID_ADDRESS);
    EXPECT(hos_svc_wait_for_address(&word, 3, 5, 0), HOS_RESULT_INVALID_ENUM_VALUE);
    EXPECT(hos_svc_wait_for_address(&word, UINT32_MAX, 5, 0), HOS_RESULT_INVALID_ENUM_VALUE);
    EXPECT(hos_svc_wait_for_address(&word, HOS_ARBITRATION_WAIT_IF_EQUAL, 4, -1),
           HOS_RESULT_INVALID_STATE);
    EXPECT(hos_svc_wait_for_address(&word, HOS_ARBITRATION_WAIT_IF_LESS_THAN, 5, -1),
           HOS_RESULT_INVALID_STATE);
    EXPECT(hos_svc_wait_for_address(&word, HOS_ARBITRATION_WAIT_IF_EQUAL, 5, 0),
           HOS_RESULT_TIMED_OUT);
    EXPECT(hos_svc_wait_for_address(&word, HOS_ARBITRATION_DECREMENT_AND_WAIT_IF_LESS_THAN, 6,
                                    100000),
           HOS_RESULT_TIMED_OUT);
    TRUE(word == 4); /* decremented, although it timed out */
    EXPECT(hos_svc_wait_for_address64(NULL, 5, 0), HOS_RESULT_INVALID_CURRENT_MEMORY);
    EXPECT(hos_svc_wait_for_address64(odd64, 0, 0), HOS_RESULT_INVALID_ADDRESS);
    EXPECT(hos_svc_wait_for_address64(&word64, 6, -1), HOS_RESULT_INVALID_STATE);
    EXPECT(hos_svc_wait_for_address64(&word64, 5, 100000), HOS_RESULT_TIMED_OUT);
    EXPECT(hos_svc_signal_to_address(NULL, HOS_SIGNAL, 0, 1), HOS_RESULT_INVALID_CURRENT_MEMORY);
    EXPECT(hos_svc_signal_to_address(odd32, HOS_SIGNAL, 0, 1), HOS_RESULT_INVALID_ADDRESS);
    EXPECT(hos_svc_signal_to_address(&word, 3, 4, 1), HOS_RESULT_INVALID_ENUM_VALUE);
    EXPECT(hos_svc_signal_to_address(&word, HOS_SIGNAL_AND_INCREMENT_IF_EQUAL, 3, 1),
           HOS_RESULT_INVALID_STATE);
    EXPECT(hos_svc_signal_to_address(&word, HOS_SIGNAL_AND_MODIFY_BY_WAITING_COUNT_IF_EQUAL, 3,
                                     1),
           HOS_RESULT_INVALID_STATE);
    TRUE(word == 4); /* untouched by the refused signals */
    OK(hos_svc_signal_to_address(&word, HOS_SIGNAL_AND_INCREMENT_IF_EQUAL, 4, 1));
    TRUE(word == 5);
}

/* Kernel events, the cancel, and what a thread asks about threads. */
static void kernel_calls(hos_handle thread) {
    hos_handle w, r, ev;
    _Alignas(8) unsigned char buf[16];
    EXPECT(hos_svc_create_event(NULL, &r), HOS_RESULT_INVALID_POINTER);
    EXPECT(hos_svc_create_event(&w, NULL), HOS_RESULT_INVALID_POINTER);
    EXPECT(hos_svc_create_event(&w, (hos_handle *)(buf + 1)), HOS_RESULT_INVALID_POINTER);
    OK(hos_svc_create_event(&w, &r));
    OK(hos_event_create(0, &ev));
    EXPECT(hos_svc_signal_event(r), HOS_RESULT_INVALID_HANDLE); /* the readable side */
    EXPECT(hos_svc_signal_event(ev), HOS_RESULT_INVALID_HANDLE); /* an nn::os event */
    EXPECT(hos_svc_signal_event(GARBAGE), HOS_RESULT_INVALID_HANDLE);
    EXPECT(hos_svc_clear_event(thread), HOS_RESULT_INVALID_HANDLE);
    EXPECT(hos_svc_reset_signal(w), HOS_RESULT_INVALID_HANDLE); /* the writable side */
    EXPECT(hos_svc_reset_signal(r), HOS_RESULT_INVALID_STATE);  /* not signalled */
    EXPECT(hos_event_signal(w), HOS_RESULT_INVALID_HANDLE);     /* no nn::os event */
    int32_t index = -1;
    EXPECT(hos_svc_wait_synchronization(&index, &w, 1, 0), HOS_RESULT_INVALID_HANDLE);
    EXPECT(hos_svc_wait_synchronization(&index, &r, 1, 0), HOS_RESULT_TIMED_OUT);
    OK(hos_svc_signal_event(w));
    OK(hos_svc_wait_synchronization(&index, &r, 1, 0));
    OK(hos_svc_wait_synchronization(&index, &r, 1, 0)); /* a wait consumes nothing */
    OK(hos_svc_reset_signal(r));
    EXPECT(hos_svc_reset_signal(r), HOS_RESULT_INVALID_STATE);
    OK(hos_svc_clear_event(w));
    OK(hos_svc_clear_event(r));
    OK(hos_svc_close_handle(w));
    EXPECT(hos_svc_signal_event(w), HOS_RESULT_INVALID_HANDLE);
    OK(hos_svc_close_handle(r));

    EXPECT(hos_svc_cancel_synchronization(GARBAGE), HOS_RESULT_INVALID_HANDLE);
    EXPECT(hos_svc_cancel_synchronization(ev), HOS_RESULT_INVALID_HANDLE);
    EXPECT(hos_svc_cancel_synchronization(HOS_CURRENT_THREAD), HOS_RESULT_INVALID_HANDLE);
    OK(hos_svc_close_handle(ev));

    TRUE(hos_svc_get_current_thread_handle() == 0); /* no guest thread */
    TRUE(hos_svc_get_current_processor_number() == 0);
    uint64_t id = 7, ticks = 7;
    EXPECT(hos_svc_get_thread_id(thread, NULL), HOS_RESULT_INVALID_POINTER);
    EXPECT(hos_svc_get_thread_id(thread, (uint64_t *)(buf + 4)), HOS_RESULT_INVALID_POINTER);
    EXPECT(hos_svc_get_thread_id(GARBAGE, &id), HOS_RESULT_INVALID_HANDLE);
    EXPECT(hos_svc_get_thread_id(HOS_CURRENT_THREAD, &id), HOS_RESULT_INVALID_HANDLE);
    TRUE(id == 7);
    OK(hos_svc_get_thread_id(thread, &id));
    EXPECT(hos_svc_get_info(HOS_INFO_TYPE_THREAD_TICK_COUNT, thread, UINT64_MAX, NULL),
           HOS_RESULT_INVALID_POINTER);
    EXPECT(hos_svc_get_info(0, thread, UINT64_MAX, &ticks), HOS_RESULT_INVALID_ENUM_VALUE);
    EXPECT(hos_svc_get_info(HOS_INFO_TYPE_THREAD_TICK_COUNT, thread, 64, &ticks),
           HOS_RESULT_INVALID_COMBINATION);
    EXPECT(hos_svc_get_info(HOS_INFO_TYPE_THREAD_TICK_COUNT, GARBAGE, UINT64_MAX, &ticks),
           HOS_RESULT_INVALID_HANDLE);
    TRUE(ticks == 7);
    OK(hos_svc_get_info(HOS_INFO_TYPE_THREAD_TICK_COUNT, thread, UINT64_MAX, &ticks));
    OK(hos_svc_get_info(HOS_INFO_TYPE_THREAD_TICK_COUNT, thread, 0, &ticks));
    TRUE(ticks == 0); /* not the caller's own time */
}

static void svc_calls(hos_runtime *rt) {
    hos_handle ev, t;
    OK(hos_event_create(0, &ev));
    OK(hos_thread_spawn(rt, NULL, hold_forever, &ev, &t));
    word_calls(t);
    kernel_calls(t);
    OK(hos_event_signal(ev));
    OK(hos_thread_join(t, -1));
    OK(hos_svc_close_handle(t));
    OK(hos_svc_close_handle(ev));
}

static void misc_calls(hos_runtime *rt) {
    TRUE(strcmp(hos_result_name(HOS_RESULT_TIMED_OUT), "TimedOut") == 0);
    TRUE(strcmp(hos_result_name(0xEA01), "TimedOut") == 0);
    TRUE(strcmp(hos_result_name(0xE401), "InvalidHandle") == 0);
    TRUE(strcmp(hos_result_name(0x12345), "Unknown") == 0);
    OK(hos_set_log_sink(NULL, NULL));
    hos_stats before = {.size = sizeof before}, after = {.size = sizeof after};
    OK(hos_stats_get(rt, &before));
    hos_svc_sleep_thread(-7); /* returns at once, counted as bad input */
    hos_checkpoint();         /* nothing on a thread that is no guest thread */
    OK(hos_stats_get(rt, &after));
    TRUE(after.bad_sleeps == before.bad_sleeps + 1);
}

int main(void) {
    config_calls();

    hos_config *cfg;
    OK(hos_config_new(&cfg));
    OK(hos_config_set(cfg, "HOS_CORES", "2"));
    hos_runtime *rt;
    OK(hos_runtime_new(cfg, &rt));
    hos_config_free(cfg);

    stats_calls(rt);
    spawn_calls(rt);
    thread_calls(rt);
    wait_calls();
    object_calls(rt);
    svc_calls(rt);
    misc_calls(rt);

    /* A guest thread that never leaves its wait until the shutdown cancels it. */
    hos_handle ev, t;
    OK(hos_event_create(0, &ev));
    OK(hos_thread_spawn(rt, NULL, hold_forever, &ev, &t));
    EXPECT(hos_runtime_shutdown(NULL, 0), HOS_RESULT_INVALID_POINTER);
    OK(hos_runtime_shutdown(rt, -1));
    OK(hos_runtime_shutdown(rt, 0)); /* a second shutdown joins nothing more */
    hos_runtime_free(rt);
    hos_runtime_free(NULL);
    OK(hos_svc_close_handle(t));
    OK(hos_svc_close_handle(ev));

    return finish("every bad input answered with its code");
}
