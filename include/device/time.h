/* time.h for device objects: the types, for the C++ library; a Pool core has no clock or
 * calendar (neuron_unavailable.h). */
#pragma once
#include <stddef.h>
#include "neuron_unavailable.h"
#ifdef __cplusplus
extern "C" {
#endif
typedef long long time_t;
typedef long clock_t;
struct tm {
    int tm_sec, tm_min, tm_hour, tm_mday, tm_mon, tm_year, tm_wday, tm_yday, tm_isdst;
};
struct timespec {
    time_t tv_sec;
    long tv_nsec;
};
#define CLOCKS_PER_SEC ((clock_t)1000000)
#define TIME_UTC 1
__NEURON_UNAVAILABLE("clock") clock_t clock(void);
__NEURON_UNAVAILABLE("time") time_t time(time_t *t);
__NEURON_UNAVAILABLE("difftime") double difftime(time_t a, time_t b);
__NEURON_UNAVAILABLE("mktime") time_t mktime(struct tm *t);
__NEURON_UNAVAILABLE("timespec_get") int timespec_get(struct timespec *ts, int base);
__NEURON_UNAVAILABLE("asctime") char *asctime(const struct tm *t);
__NEURON_UNAVAILABLE("ctime") char *ctime(const time_t *t);
__NEURON_UNAVAILABLE("gmtime") struct tm *gmtime(const time_t *t);
__NEURON_UNAVAILABLE("localtime") struct tm *localtime(const time_t *t);
__NEURON_UNAVAILABLE("strftime")
size_t strftime(char *s, size_t n, const char *fmt, const struct tm *t);
#ifdef __cplusplus
}
#endif
