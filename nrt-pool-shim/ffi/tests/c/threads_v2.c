/* 8 threads sharing the one engine, each making 300 op-output + launch pairs of
 * mlp_ops::axpb on inputs of its own (argv[1]: the library built from examples/mlp). Every
 * call must succeed and every element be exact (issue #31: 2-3 of 2,400 calls failed with
 * "killed by SIGKILL" when a core forked by a thread that had ended was killed with it).
 * Afterwards the engine is closed and no file descriptor, thread or child process of its
 * is left. */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nrt_pool.h"
#include "check.h"

enum { THREADS = 8, CALLS = 300, R = 7, C = 9 };

static int failures[THREADS];
static int wrong[THREADS];

static int count_dir(const char *path) {
    DIR *d = opendir(path);
    int n = 0;
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n;
}

/* Children of this process: the words of /proc/self/task/<tid>/children for every task. */
static int children(void) {
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char path[300];
        snprintf(path, sizeof path, "/proc/self/task/%s/children", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        int pid;
        while (fscanf(f, "%d", &pid) == 1) n++;
        fclose(f);
    }
    closedir(d);
    return n;
}

static void *worker(void *arg) {
    int t = (int)(long)arg;
    float x[R * C], y[R * C];
    for (int call = 0; call < CALLS; call++) {
        for (int i = 0; i < R * C; i++) x[i] = (float)((i * 7 + t * 13 + call) % 23) - 11.0f;
        double a = 1.0 + t, b = 0.25 * call;
        nrt_pool_tensor tx = {x, {R, C}, 2, 10, NRT_POOL_LOCATION_HBM, {0, 0}};
        void *inputs[] = {&tx, &a, &b};
        nrt_pool_tensor out;
        memset(&out, 0, sizeof out);
        if (nrt_pool_op_output_v2("mlp_ops::axpb", inputs, &out) != NRT_POOL_OK) {
            fprintf(stderr, "thread %d call %d: output: %s\n", t, call, nrt_pool_last_error());
            failures[t]++;
            continue;
        }
        out.data = y;
        out.location = NRT_POOL_LOCATION_HBM;
        void *args[] = {&tx, &a, &b, &out};
        if (nrt_pool_launch_v2("mlp_ops::axpb", 0, args, 0, -1) != NRT_POOL_OK) {
            fprintf(stderr, "thread %d call %d: launch: %s\n", t, call, nrt_pool_last_error());
            failures[t]++;
            continue;
        }
        for (int i = 0; i < R * C; i++)
            if (y[i] != x[i] * (float)a + (float)b) wrong[t]++;
    }
    return NULL;
}

int main(int argc, char **argv) {
    CHECK(argc == 2, "usage: threads_v2 LIBmlp_ops.so");
    int fds = count_dir("/proc/self/fd"), tasks = count_dir("/proc/self/task");
    CHECK(nrt_pool_init() == 0, "init");
    CHECK(nrt_pool_register_library(argv[1]) == NRT_POOL_OK, "register %s", argv[1]);
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; t++) CHECK(pthread_create(&th[t], NULL, worker, (void *)t) == 0, "thread");
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    int failed = 0, bad = 0;
    for (int t = 0; t < THREADS; t++) failed += failures[t], bad += wrong[t];
    CHECK(failed == 0, "%d of %d calls failed", failed, THREADS * CALLS);
    CHECK(bad == 0, "%d wrong elements", bad);
    CHECK(nrt_pool_close() == 0, "close");
    /* The cores are gone once they are reaped; the engine's threads (the spawner) may stay. */
    for (int tries = 0; children() > 0 && tries < 200; tries++) usleep(10000);
    CHECK(children() == 0, "%d core processes left after close", children());
    CHECK(count_dir("/proc/self/fd") == fds, "descriptors: %d before, %d after", fds, count_dir("/proc/self/fd"));
    CHECK(count_dir("/proc/self/task") <= tasks + 1, "threads: %d before, %d after", tasks, count_dir("/proc/self/task"));
    printf("PASS: %d threads x %d launches, exact, nothing left\n", THREADS, CALLS);
    return 0;
}
