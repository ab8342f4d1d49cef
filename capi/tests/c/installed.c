/*
 * A host built against an installed hos (capi/install.sh PREFIX), through its pkg-config file
 * or its CMake package: the header and the library agree on the ABI's version, a runtime
 * boots, a guest thread runs, and the shutdown leaves nothing behind. Run by
 * capi/tests/install.rs; exit status 0 when every check holds.
 */
#include "check.h"

static void count(void *arg) { (*(int *)arg)++; }

int main(void) {
    TRUE(hos_abi_version() == HOS_ABI_VERSION);
    hos_runtime *rt;
    OK(hos_runtime_new(NULL, &rt));
    int runs = 0;
    hos_handle t;
    OK(hos_thread_spawn(rt, NULL, count, &runs, &t));
    OK(hos_thread_join(t, -1));
    OK(hos_svc_close_handle(t));
    TRUE(runs == 1);
    OK(hos_runtime_shutdown(rt, -1));
    hos_shutdown_report r = {.size = sizeof r};
    OK(hos_runtime_shutdown_report(rt, &r));
    TRUE(r.stragglers == 0);
    hos_runtime_free(rt);
    return finish("the installed hos works");
}
