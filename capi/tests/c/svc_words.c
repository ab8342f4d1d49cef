/*
 * The kernel's svcs from C as the SDK uses them: libnx's Mutex and CondVar
 * (nx/source/kernel/mutex.c, condvar.c) ported to GCC atomics over hos_svc_arbitrate_lock/
 * unlock and hos_svc_wait_process_wide_key_atomic/signal_process_wide_key, between C guest
 * threads (one of them a host thread attached as one); a light event's ping-pong on address
 * words; a kernel event; a cancelled wait; thread ids; a host thread's wait on a guest word
 * ranked above a guest's. Run by capi/tests/c_hosts.rs; a lost wakeup hangs it and the
 * harness fails the test at its time limit.
 */
#include "check.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>

static hos_runtime *rt;

/* Times a lock went to the kernel (the owner held it, the waiters bit set). */
static atomic_int arbitrations;

/* libnx's mutexLock: take a free word with a CAS; else set the waiters bit and wait in the
 * kernel for the owner the word names, until the unlock hands the word over. */
static void mutex_lock(uint32_t *m) {
    uint32_t self = hos_svc_get_current_thread_handle();
    uint32_t v = __atomic_load_n(m, __ATOMIC_ACQUIRE);
    for (;;) {
        if (v == 0) {
            if (__atomic_compare_exchange_n(m, &v, self, 1, __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE)) {
                return;
            }
            continue;
        }
        if ((v & HOS_MUTEX_WAITERS) == 0 &&
            !__atomic_compare_exchange_n(m, &v, v | HOS_MUTEX_WAITERS, 1, __ATOMIC_ACQUIRE,
                                         __ATOMIC_ACQUIRE)) {
            continue;
        }
        atomic_fetch_add(&arbitrations, 1);
        OK(hos_svc_arbitrate_lock(v & ~(uint32_t)HOS_MUTEX_WAITERS, m, self));
        v = __atomic_load_n(m, __ATOMIC_ACQUIRE);
        if ((v & ~(uint32_t)HOS_MUTEX_WAITERS) == self) {
            return; /* handed over */
        }
    }
}

/* libnx's mutexUnlock: free the word with a CAS if nobody waits, else the kernel hands it to
 * the best waiter. */
static void mutex_unlock(uint32_t *m) {
    uint32_t self = hos_svc_get_current_thread_handle();
    uint32_t v = __atomic_load_n(m, __ATOMIC_RELAXED);
    while (v == self &&
           !__atomic_compare_exchange_n(m, &v, 0, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
    }
    if (v & HOS_MUTEX_WAITERS) {
        OK(hos_svc_arbitrate_unlock(m));
    }
}

static int mutex_is_mine(const uint32_t *m) {
    return (__atomic_load_n(m, __ATOMIC_RELAXED) & ~(uint32_t)HOS_MUTEX_WAITERS) ==
           hos_svc_get_current_thread_handle();
}

/* libnx's condvarWaitTimeout: on TimedOut the kernel did not take the mutex back; libnx
 * does. */
static hos_result condvar_wait(uint32_t *cv, uint32_t *m, int64_t timeout_ns) {
    hos_result r = hos_svc_wait_process_wide_key_atomic(m, cv, hos_svc_get_current_thread_handle(),
                                                        timeout_ns);
    if (r == HOS_RESULT_TIMED_OUT) {
        mutex_lock(m);
    }
    return r;
}

static hos_handle spawn(void (*entry)(void *), void *arg, const char *name, int32_t priority) {
    hos_thread_params p = {.size = sizeof p, .name = name, .priority = priority,
                           .ideal_core = -2, .core_mask = 0x3};
    hos_handle t = 0;
    OK(hos_thread_spawn(rt, &p, entry, arg, &t));
    return t;
}

static void join_and_close(hos_handle t) {
    OK(hos_thread_join(t, -1));
    OK(hos_svc_close_handle(t));
}

/* 1. A lock held by a host thread attached as a guest thread, handed over by the kernel to a
 * spawned one waiting for it: the word names the attached thread's real handle. */
static uint32_t handover_word;
static atomic_int holder_locked, waiter_got_it;
static hos_handle holder_handle;

static void *attached_holder(void *arg) {
    (void)arg;
    hos_thread_params p = {.size = sizeof p, .name = "AttachedHolder", .priority = 44,
                           .ideal_core = -2, .core_mask = 0x3};
    OK(hos_thread_attach(rt, &p, &holder_handle));
    TRUE(hos_svc_get_current_thread_handle() == holder_handle);
    mutex_lock(&handover_word);
    TRUE(handover_word == holder_handle); /* the SDK's tag: the real handle */
    atomic_store(&holder_locked, 1);
    while (!(__atomic_load_n(&handover_word, __ATOMIC_ACQUIRE) & HOS_MUTEX_WAITERS)) {
        hos_svc_sleep_thread(100000);
    }
    hos_svc_sleep_thread(1000000); /* the waiter is in the kernel by now, or about to be */
    mutex_unlock(&handover_word);
    OK(hos_thread_detach());
    return NULL;
}

static void handover_waiter(void *arg) {
    (void)arg;
    while (!atomic_load(&holder_locked)) {
        hos_svc_sleep_thread(100000);
    }
    mutex_lock(&handover_word);
    TRUE(mutex_is_mine(&handover_word));
    atomic_store(&waiter_got_it, 1);
    mutex_unlock(&handover_word);
}

static void handover(void) {
    pthread_t holder;
    pthread_create(&holder, NULL, attached_holder, NULL);
    hos_handle w = spawn(handover_waiter, NULL, "Waiter", 28);
    pthread_join(holder, NULL);
    join_and_close(w);
    TRUE(atomic_load(&waiter_got_it) == 1);
    TRUE(atomic_load(&arbitrations) >= 1);
    TRUE(handover_word == 0);
    int32_t prio = -1;
    OK(hos_svc_get_thread_priority(holder_handle, &prio)); /* open after the detach */
    TRUE(prio == 44);
    OK(hos_svc_close_handle(holder_handle));
}

/* 2. A counter four threads of three priorities increment under one mutex word, yielding
 * inside the lock now and then so that the others queue in the kernel. */
#define INCREMENTS 2000
static uint32_t counter_word;
static uint64_t counter;

static void incrementer(void *arg) {
    (void)arg;
    for (int i = 0; i < INCREMENTS; i++) {
        mutex_lock(&counter_word);
        uint64_t c = counter;
        if (i % 64 == 0) {
            hos_svc_sleep_thread(0); /* a yield, holding the lock */
        }
        counter = c + 1;
        mutex_unlock(&counter_word);
    }
}

static void contention(void) {
    int before = atomic_load(&arbitrations);
    int32_t prios[4] = {28, 44, 44, 59};
    hos_handle t[4];
    for (int i = 0; i < 4; i++) {
        t[i] = spawn(incrementer, NULL, "Incrementer", prios[i]);
    }
    for (int i = 0; i < 4; i++) {
        join_and_close(t[i]);
    }
    TRUE(counter == 4 * INCREMENTS);
    TRUE(counter_word == 0);
    printf("contention: %d arbitrated locks\n", atomic_load(&arbitrations) - before);
}

/* 3. A producer and two consumers on a mutex word and a condition-variable word. */
#define ITEMS 1000
static uint32_t queue_lock, queue_cv, timed_cv;
static int items, produced_all, consumed;

static void consumer(void *arg) {
    (void)arg;
    mutex_lock(&queue_lock);
    for (;;) {
        while (items == 0 && !produced_all) {
            OK(condvar_wait(&queue_cv, &queue_lock, -1));
            TRUE(mutex_is_mine(&queue_lock));
        }
        if (items == 0) {
            break;
        }
        items--;
        consumed++;
    }
    mutex_unlock(&queue_lock);
}

static void producer(void *arg) {
    (void)arg;
    for (int i = 0; i < ITEMS; i++) {
        mutex_lock(&queue_lock);
        items++;
        OK(hos_svc_signal_process_wide_key(&queue_cv, 1));
        mutex_unlock(&queue_lock);
        if (i % 100 == 0) {
            hos_svc_sleep_thread(20000);
        }
    }
    mutex_lock(&queue_lock);
    produced_all = 1;
    OK(hos_svc_signal_process_wide_key(&queue_cv, -1));
    mutex_unlock(&queue_lock);
}

static void timed_wait(void *arg) {
    (void)arg;
    mutex_lock(&queue_lock);
    EXPECT(condvar_wait(&timed_cv, &queue_lock, 1000000), HOS_RESULT_TIMED_OUT);
    TRUE(mutex_is_mine(&queue_lock)); /* libnx took it back */
    mutex_unlock(&queue_lock);
}

static void condition_variable(void) {
    hos_handle c1 = spawn(consumer, NULL, "Consumer", 44);
    hos_handle c2 = spawn(consumer, NULL, "Consumer", 50);
    hos_handle p = spawn(producer, NULL, "Producer", 44);
    hos_handle t = spawn(timed_wait, NULL, "TimedWaiter", 44);
    join_and_close(p);
    join_and_close(c1);
    join_and_close(c2);
    join_and_close(t);
    TRUE(consumed == ITEMS && items == 0);
    TRUE(queue_lock == 0);
}

/* 4. A light event's ping-pong on two address words: each side signals by incrementing the
 * other's word if it still holds the round, and waits while its own word equals the round.
 * The 64-bit wait is woken by a signal on its address. */
#define ROUNDS 200
static int32_t ping, pong;
static int64_t wide;

static void ponger(void *arg) {
    (void)arg;
    for (int32_t i = 0; i < ROUNDS; i++) {
        hos_result r = hos_svc_wait_for_address(&ping, HOS_ARBITRATION_WAIT_IF_EQUAL, i, -1);
        TRUE(r == HOS_RESULT_SUCCESS || r == HOS_RESULT_INVALID_STATE); /* woken, or moved on */
        OK(hos_svc_signal_to_address(&pong, HOS_SIGNAL_AND_INCREMENT_IF_EQUAL, i, -1));
    }
    hos_result r = hos_svc_wait_for_address64(&wide, 0, -1);
    TRUE(r == HOS_RESULT_SUCCESS || r == HOS_RESULT_INVALID_STATE);
    TRUE(__atomic_load_n(&wide, __ATOMIC_ACQUIRE) == INT64_C(1) << 40);
}

static void address_arbitration(void) {
    hos_handle t = spawn(ponger, NULL, "Ponger", 44);
    for (int32_t i = 0; i < ROUNDS; i++) {
        OK(hos_svc_signal_to_address(&ping, HOS_SIGNAL_AND_INCREMENT_IF_EQUAL, i, -1));
        hos_result r = hos_svc_wait_for_address(&pong, HOS_ARBITRATION_WAIT_IF_EQUAL, i, -1);
        TRUE(r == HOS_RESULT_SUCCESS || r == HOS_RESULT_INVALID_STATE);
    }
    TRUE(ping == ROUNDS && pong == ROUNDS);
    __atomic_store_n(&wide, INT64_C(1) << 40, __ATOMIC_RELEASE);
    OK(hos_svc_signal_to_address((int32_t *)&wide, HOS_SIGNAL, 0, -1));
    join_and_close(t);
}

/* 5. A kernel event waited on by a guest thread, and a guest thread's wait cancelled. */
struct waiter {
    hos_handle handle;
    hos_result got;
    uint64_t id;
};

static void wait_on(void *arg) {
    struct waiter *w = arg;
    int32_t index = -1;
    w->got = hos_svc_wait_synchronization(&index, &w->handle, 1, -1);
    OK(hos_svc_get_thread_id(HOS_CURRENT_THREAD, &w->id));
    int32_t core = hos_svc_get_current_processor_number();
    TRUE(core == 0 || core == 1);
}

static void kernel_event_and_cancel(void) {
    hos_handle write, read;
    OK(hos_svc_create_event(&write, &read));
    struct waiter a = {.handle = read, .got = 1}, b = {.handle = read, .got = 1};
    hos_handle ta = spawn(wait_on, &a, "EventWaiter", 44);
    hos_svc_sleep_thread(1000000);
    OK(hos_svc_signal_event(write));
    join_and_close(ta);
    EXPECT(a.got, HOS_RESULT_SUCCESS);
    OK(hos_svc_reset_signal(read)); /* the wait consumed nothing */

    hos_handle tb = spawn(wait_on, &b, "Cancelled", 44);
    OK(hos_svc_cancel_synchronization(tb)); /* in its wait, or before it: the next one ends */
    OK(hos_thread_join(tb, -1));
    EXPECT(b.got, HOS_RESULT_CANCELLED);
    uint64_t id = 0;
    OK(hos_svc_get_thread_id(tb, &id));
    TRUE(id == b.id && id != a.id);
    uint64_t ticks = 0;
    OK(hos_svc_get_info(HOS_INFO_TYPE_THREAD_TICK_COUNT, tb, UINT64_MAX, &ticks));
    OK(hos_svc_close_handle(tb));
    OK(hos_svc_close_handle(write));
    OK(hos_svc_close_handle(read));
}

/* 6. A host thread (a plain pthread) waiting on a guest word ranks at priority 0: a signal
 * of one waiter wakes it before a guest thread of priority 1 that came first. */
static int32_t ranked_word;
static atomic_int host_done, guest_done;
static hos_result host_got;

static void *host_word_waiter(void *arg) {
    (void)arg;
    host_got = hos_svc_wait_for_address(&ranked_word, HOS_ARBITRATION_WAIT_IF_EQUAL, 5, -1);
    atomic_store(&host_done, 1);
    return NULL;
}

static void guest_word_waiter(void *arg) {
    (void)arg;
    OK(hos_svc_wait_for_address(&ranked_word, HOS_ARBITRATION_WAIT_IF_EQUAL, 5, -1));
    atomic_store(&guest_done, 1);
}

/* One round: 1 if it decided (both were waiting at the signal), 0 if the host thread had not
 * begun its wait yet (the signal, finding one waiter, wrote 4: its wait then answers
 * InvalidState). */
static int host_ranking_round(void) {
    __atomic_store_n(&ranked_word, 5, __ATOMIC_RELEASE);
    atomic_store(&host_done, 0);
    atomic_store(&guest_done, 0);
    hos_handle g = spawn(guest_word_waiter, NULL, "GuestWordWaiter", 1);
    uint64_t id = 0;
    OK(hos_svc_get_thread_id(g, &id));
    for (int waiting = 0; !waiting;) { /* until the wait tree shows the guest's wait */
        hos_wait_node nodes[4] = {{.size = sizeof(hos_wait_node)}};
        uint32_t n = 0;
        OK(hos_wait_tree(rt, nodes, 4, &n));
        for (uint32_t i = 0; i < n && i < 4; i++) {
            waiting |= nodes[i].id == id && nodes[i].state == HOS_WAIT_STATE_WAITING;
        }
        OK(hos_host_sleep(rt, 100000));
    }
    pthread_t host;
    TRUE(pthread_create(&host, NULL, host_word_waiter, NULL) == 0);
    OK(hos_host_sleep(rt, 20000000)); /* time to begin its wait; the signal below checks */
    /* Type 2 with count 1 leaves the word at 5 only if two threads wait, and wakes one. */
    OK(hos_svc_signal_to_address(&ranked_word, HOS_SIGNAL_AND_MODIFY_BY_WAITING_COUNT_IF_EQUAL,
                                 5, 1));
    int decided = __atomic_load_n(&ranked_word, __ATOMIC_ACQUIRE) == 5;
    if (decided) {
        while (!atomic_load(&host_done) && !atomic_load(&guest_done)) {
            OK(hos_host_sleep(rt, 100000));
        }
        TRUE(atomic_load(&host_done) && !atomic_load(&guest_done)); /* the host first */
        EXPECT(host_got, HOS_RESULT_SUCCESS);
        OK(hos_svc_signal_to_address(&ranked_word, HOS_SIGNAL, 0, -1)); /* the guest's turn */
    }
    join_and_close(g);
    TRUE(pthread_join(host, NULL) == 0);
    TRUE(decided || host_got == HOS_RESULT_INVALID_STATE);
    return decided;
}

static void host_thread_ranks_first(void) {
    int decided = 0;
    for (int round = 0; round < 20 && !decided; round++) {
        decided = host_ranking_round();
    }
    TRUE(decided);
}

/* 7. Lock heirs, counted: a condition-variable waiter that a signal moves first onto a held
 * mutex is woken ahead of its hand-off and spins for it (a 1 s spin here, so it sees the
 * hand-off 5 ms later); the runtime's stats count it caught (late if the OS ran it only
 * after). Decided by the processor count the runtime sees (pinned): heirs from 3 processors
 * up, none at 2 or an unknown count. */
static uint32_t heir_lock, heir_cv;
static int heir_ready;
static atomic_int heir_started;

static void heir_consumer(void *arg) {
    (void)arg;
    mutex_lock(&heir_lock);
    atomic_store(&heir_started, 1);
    while (!heir_ready) {
        OK(condvar_wait(&heir_cv, &heir_lock, -1));
    }
    TRUE(mutex_is_mine(&heir_lock));
    mutex_unlock(&heir_lock);
}

static void heir_producer(void *arg) {
    (void)arg;
    /* Free only once the consumer's wait released it: the consumer is in the key's queue. */
    mutex_lock(&heir_lock);
    heir_ready = 1;
    OK(hos_svc_signal_process_wide_key(&heir_cv, 1));
    hos_svc_sleep_thread(5000000);
    mutex_unlock(&heir_lock);
}

static hos_stats heirs_with(uint32_t processors) {
    hos_config *cfg;
    OK(hos_config_new(&cfg));
    OK(hos_config_set(cfg, "HOS_CORES", "2"));
    OK(hos_config_set(cfg, "HOS_SPIN_US", "1000000"));
    OK(hos_config_set(cfg, "HOS_SPIN_OTHER_US", "1000000"));
    OK(hos_config_logical_processors(cfg, processors));
    hos_runtime *heir_rt;
    OK(hos_runtime_new(cfg, &heir_rt));
    hos_config_free(cfg);
    heir_ready = 0;
    atomic_store(&heir_started, 0);
    hos_thread_params p = {.size = sizeof p, .name = "HeirConsumer", .priority = 44,
                           .ideal_core = -2, .core_mask = 0x3};
    hos_handle c = 0, t = 0;
    OK(hos_thread_spawn(heir_rt, &p, heir_consumer, NULL, &c));
    while (!atomic_load(&heir_started)) {
        sched_yield(); /* until the consumer holds the lock */
    }
    p.name = "HeirProducer";
    OK(hos_thread_spawn(heir_rt, &p, heir_producer, NULL, &t));
    join_and_close(t);
    join_and_close(c);
    TRUE(heir_lock == 0);
    hos_stats s = {.size = sizeof s};
    OK(hos_stats_get(heir_rt, &s));
    OK(hos_runtime_shutdown(heir_rt, -1));
    hos_runtime_free(heir_rt);
    return s;
}

static void lock_heirs(void) {
    hos_stats on = heirs_with(16);
    /* Caught, or late where a loaded machine ran the heir only after the 5 ms hold. */
    TRUE(on.heir_caught + on.heir_late == 1 && on.heir_missed == 0);
    hos_stats off = heirs_with(2);
    TRUE(off.heir_caught == 0 && off.heir_missed == 0 && off.heir_late == 0);
    hos_stats unknown = heirs_with(0); /* an unknown count: no room known for the spin */
    TRUE(unknown.heir_caught == 0 && unknown.heir_missed == 0 && unknown.heir_late == 0);
    EXPECT(hos_config_logical_processors(NULL, 4), HOS_RESULT_INVALID_POINTER);
}

int main(void) {
    hos_config *cfg;
    OK(hos_config_new(&cfg));
    OK(hos_config_set(cfg, "HOS_CORES", "2"));
    OK(hos_runtime_new(cfg, &rt));
    hos_config_free(cfg);

    handover();
    contention();
    condition_variable();
    address_arbitration();
    kernel_event_and_cancel();
    host_thread_ranks_first();
    lock_heirs();

    OK(hos_runtime_shutdown(rt, -1));
    hos_runtime_free(rt);
    return finish("the SDK's words checked");
}
