/*
 * A guided schedule from C (HOS_DET=guided:PREFIX:DROP:PATH): a run recorded under
 * random:7 with HOS_DET_RECORD_DECISIONS, guided past its end, gives the recording's figures
 * again; guided for 0 decisions gives stable's; a dropped decision that is no deviation, and
 * a recording without its decisions, fail the build naming why; a guided value that does not
 * parse is InvalidValue naming HOS_DET. Run by capi/tests/c_hosts.rs.
 */
#include "check.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

enum { STEPS = 30 };

static void worker(void *arg) {
    (void)arg;
    for (int i = 0; i < STEPS; i++) {
        hos_checkpoint();
    }
}

/* Two workers on cores 0 and 1, each checkpointing: the selector decides who goes first. */
static void main_thread(void *arg) {
    hos_runtime *rt = arg;
    hos_handle t[2];
    for (int c = 0; c < 2; c++) {
        hos_thread_params p = {
            .size = sizeof p, .name = "Worker", .priority = 44, .ideal_core = c, .core_mask = 7};
        OK(hos_thread_spawn(rt, &p, worker, NULL, &t[c]));
    }
    for (int c = 0; c < 2; c++) {
        OK(hos_thread_join(t[c], -1));
        OK(hos_svc_close_handle(t[c]));
    }
}

static hos_config *config(const char *det, const char *record, const char *decisions) {
    hos_config *cfg;
    OK(hos_config_new(&cfg));
    OK(hos_config_set(cfg, "HOS_CORES", "3"));
    OK(hos_config_set(cfg, "HOS_DET", det));
    OK(hos_config_set(cfg, "HOS_DET_PACE", "free"));
    OK(hos_config_set(cfg, "HOS_DET_QUANTUM", "1"));
    if (record) {
        OK(hos_config_set(cfg, "HOS_DET_RECORD", record));
        OK(hos_config_set(cfg, "HOS_DET_RECORD_DECISIONS", decisions));
    }
    return cfg;
}

/* One run of the program under `det`, recorded to `record` if not NULL; its figures. */
static hos_det_stats run(const char *det, const char *record, const char *decisions) {
    hos_config *cfg = config(det, record, decisions);
    hos_runtime *rt;
    OK(hos_runtime_new(cfg, &rt));
    hos_config_free(cfg);
    hos_thread_params p = {
        .size = sizeof p, .name = "GuidedMain", .priority = 44, .ideal_core = 2, .core_mask = 7};
    hos_handle main;
    OK(hos_thread_spawn(rt, &p, main_thread, rt, &main));
    OK(hos_thread_join(main, -1));
    OK(hos_svc_close_handle(main));
    hos_det_stats s = {.size = sizeof s};
    OK(hos_det_stats_get(rt, &s));
    OK(hos_runtime_shutdown(rt, -1));
    hos_runtime_free(rt);
    return s;
}

static int same(hos_det_stats a, hos_det_stats b) {
    return a.decisions == b.decisions && a.hash == b.hash && a.vt_ns == b.vt_ns;
}

/* A build that fails with InvalidState, its message holding `why`. */
static void refused(const char *det, const char *why) {
    hos_config *cfg = config(det, NULL, NULL);
    hos_runtime *rt = NULL;
    EXPECT(hos_runtime_new(cfg, &rt), HOS_RESULT_INVALID_STATE);
    TRUE(strstr(hos_last_error_message(), why) != NULL);
    hos_config_free(cfg);
}

int main(void) {
    char path[128], det[192];
    snprintf(path, sizeof path, "/tmp/hos-det-guided-%d.hosrec", (int)getpid());

    hos_det_stats recorded = run("random:7", path, "1");
    hos_det_stats stable = run("stable", NULL, NULL);
    TRUE(recorded.decisions > 2 * STEPS && !same(recorded, stable));

    snprintf(det, sizeof det, "guided:1000000:-:%s", path);
    TRUE(same(run(det, NULL, NULL), recorded));
    snprintf(det, sizeof det, "guided:0:-:%s", path);
    TRUE(same(run(det, NULL, NULL), stable));

    /* Decision 0 starts the main thread, the only candidate: stable's pick, no deviation. */
    snprintf(det, sizeof det, "guided:40:0:%s", path);
    refused(det, "dropped decision 0 is not one of the guide's");

    hos_config *cfg;
    OK(hos_config_new(&cfg));
    EXPECT(hos_config_set(cfg, "HOS_DET", "guided:x:-:run.hosrec"), HOS_RESULT_INVALID_VALUE);
    TRUE(strstr(hos_last_error_message(), "HOS_DET") != NULL);
    TRUE(strstr(hos_last_error_message(), "guided:x:-:run.hosrec") != NULL);
    hos_config_free(cfg);

    /* Recorded without its decisions: nothing to guide by. */
    run("random:7", path, "0");
    snprintf(det, sizeof det, "guided:40:-:%s", path);
    refused(det, "HOS_DET_RECORD_DECISIONS");
    unlink(path);
    return finish("deterministic guided schedule checked");
}
