/*
 * The deterministic mode from C: HOS_DET, HOS_DET_QUANTUM and HOS_DET_PACE are switches of
 * hos_config (a bad value is InvalidValue naming the switch and the value), and a runtime in
 * the mode runs a main guest thread that ping-pongs two events with a second guest thread
 * and sleeps: two runs of one seed read the same hos_det_stats (decisions, hash, virtual
 * time), and a runtime with the mode off reads `on` 0. The trace (hos_write_trace) opens
 * each turn with its decision's index in the mode, and has none with the mode off. Run by
 * capi/tests/c_hosts.rs.
 */
#include "check.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { ROUNDS = 40 };

static hos_handle ping, pong;

static void ponger(void *arg) {
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        OK(hos_event_wait(ping, -1));
        hos_checkpoint();
        OK(hos_event_signal(pong));
    }
}

static void main_thread(void *arg) {
    hos_runtime *rt = arg;
    hos_handle other;
    OK(hos_thread_spawn(rt, NULL, ponger, NULL, &other));
    for (int i = 0; i < ROUNDS; i++) {
        OK(hos_event_signal(ping));
        OK(hos_event_wait(pong, -1));
        hos_svc_sleep_thread(i % 4 == 0 ? 1000000 : 0);
    }
    OK(hos_thread_join(other, -1));
    OK(hos_svc_close_handle(other));
}

/* Whether the file at `path` holds `text`. */
static int file_has(const char *path, const char *text) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    size_t got = fread(buf, 1, (size_t)n, f);
    buf[got] = 0;
    fclose(f);
    int has = strstr(buf, text) != NULL;
    free(buf);
    return has;
}

/* One run under `spec` (NULL: the mode off); its figures. */
static hos_det_stats run(const char *spec) {
    hos_config *cfg;
    OK(hos_config_new(&cfg));
    if (spec) {
        OK(hos_config_set(cfg, "HOS_DET", spec));
        OK(hos_config_set(cfg, "HOS_DET_PACE", "free"));
        OK(hos_config_set(cfg, "HOS_DET_QUANTUM", "5"));
    }
    hos_runtime *rt;
    OK(hos_runtime_new(cfg, &rt));
    hos_config_free(cfg);
    OK(hos_event_create(1, &ping));
    OK(hos_event_create(1, &pong));
    hos_handle main;
    OK(hos_thread_spawn(rt, NULL, main_thread, rt, &main));
    OK(hos_thread_join(main, -1));
    OK(hos_svc_close_handle(main));
    hos_det_stats s = {.size = sizeof s};
    OK(hos_det_stats_get(rt, &s));
    char path[64];
    snprintf(path, sizeof path, "/tmp/hos-det-c-%d.json", (int)getpid());
    OK(hos_write_trace(rt, path));
    TRUE(file_has(path, "\"decision 0 (vt 0 ns)\"") == (spec != NULL));
    TRUE(file_has(path, "\"decision ") == (spec != NULL));
    remove(path);
    OK(hos_svc_close_handle(ping));
    OK(hos_svc_close_handle(pong));
    OK(hos_runtime_shutdown(rt, -1));
    hos_runtime_free(rt);
    return s;
}

int main(void) {
    hos_config *cfg;
    OK(hos_config_new(&cfg));
    EXPECT(hos_config_set(cfg, "HOS_DET", "fast"), HOS_RESULT_INVALID_VALUE);
    TRUE(strstr(hos_last_error_message(), "HOS_DET") != NULL);
    TRUE(strstr(hos_last_error_message(), "fast") != NULL);
    EXPECT(hos_config_set(cfg, "HOS_DET", "pct:0:1"), HOS_RESULT_INVALID_VALUE);
    OK(hos_config_set(cfg, "HOS_DET", "replay:run.hosrec")); /* read when a runtime is built */
    EXPECT(hos_config_set(cfg, "HOS_DET_QUANTUM", "0"), HOS_RESULT_INVALID_VALUE);
    TRUE(strstr(hos_last_error_message(), "HOS_DET_QUANTUM") != NULL);
    EXPECT(hos_config_set(cfg, "HOS_DET_PACE", "fast"), HOS_RESULT_INVALID_VALUE);
    OK(hos_config_set(cfg, "HOS_DET", "off"));
    hos_config_free(cfg);

    const char *specs[] = {"stable", "random:0x2a"};
    for (int i = 0; i < 2; i++) {
        hos_det_stats a = run(specs[i]), b = run(specs[i]);
        TRUE(a.on == 1 && b.on == 1);
        TRUE(a.decisions > 2 * ROUNDS);
        TRUE(a.decisions == b.decisions);
        TRUE(a.hash == b.hash);
        TRUE(a.vt_ns == b.vt_ns);
        TRUE(a.vt_ns >= (ROUNDS / 4) * 1000000ull);
    }
    hos_det_stats off = run(NULL);
    TRUE(off.on == 0 && off.decisions == 0 && off.hash == 0);
    return finish("deterministic mode checked");
}
