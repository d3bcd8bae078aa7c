/*
 * snd's clocks: wall time in seconds and milliseconds (timestamps written
 * to the store, shown to users, compared with tokens' expiry) and the
 * monotonic clock in milliseconds (timers, pacing, ages). A leaf of snd:
 * every other file may call it, it calls none of them; lib/control takes
 * the time as an argument instead.
 */
#include "snd.h"

#include <time.h>

int64_t snd_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec;
}

int64_t snd_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t snd_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
