/*
 * A fake CUDA runtime (libcudart.so.12), built only for the tests of
 * sn-agent's GEMM/HBM probe (cmd/sn-agent/cuda_probe.c), which loads it
 * through --cuda-lib DIR. It checks the probe's wiring, not a GPU: "device
 * memory" is host memory (calloc), cudaMemcpy is memcpy, and an event
 * records CLOCK_MONOTONIC, so that cudaEventElapsedTime is the real
 * elapsed time of what the fake did between two events. Every entry point
 * has the prototype of the CUDA Runtime API reference (CUDA 12), with
 * int for cudaError_t and void * for the opaque handles.
 *
 * Controls (environment):
 *   FAKE_CUDA_DEVICES=N      devices (default 2); 0: cudaGetDeviceCount
 *                            fails with cudaErrorNoDevice (100)
 *   FAKE_CUDA_FREE_MIB=N     free memory cudaMemGetInfo reports (default 16)
 *   FAKE_CUDA_FAIL=DEV:FUNC  FUNC (e.g. cudaMalloc, cublasGemmEx) fails on
 *                            device DEV: cudaErrorMemoryAllocation (2) for
 *                            cudaMalloc, cudaErrorInvalidValue (1) otherwise
 *   FAKE_CUDA_EVENT_MS=X     cudaEventElapsedTime answers X instead of the
 *                            measured time (exact unit-conversion checks)
 * fake_cuda_fails() and fake_cuda_size() are for the fake cuBLAS.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Not a public API: the fake cuBLAS (fake_cublas.c) uses these. */
int fake_cuda_fails(const char *func);
size_t fake_cuda_size(const void *p);
int fake_cuda_device(void);

int cudaGetDeviceCount(int *count);
int cudaSetDevice(int device);
int cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes);
int cudaMalloc(void **ptr, size_t size);
int cudaFree(void *ptr);
int cudaMemset(void *ptr, int value, size_t count);
int cudaMemcpy(void *dst, const void *src, size_t count, int kind);
int cudaEventCreate(void **event);
int cudaEventRecord(void *event, void *stream);
int cudaEventSynchronize(void *event);
int cudaEventElapsedTime(float *ms, void *start, void *end);
int cudaEventDestroy(void *event);
int cudaDeviceSynchronize(void);
const char *cudaGetErrorString(int error);

#define MAX_ALLOCS 64

static int current;
static struct {
    void *p;
    size_t size;
} allocs[MAX_ALLOCS];

static int env_int(const char *name, int dflt)
{
    const char *v = getenv(name);
    return v && *v ? (int)strtol(v, NULL, 10) : dflt;
}

int fake_cuda_device(void)
{
    return current;
}

int fake_cuda_fails(const char *func)
{
    const char *v = getenv("FAKE_CUDA_FAIL");
    char want[96];
    snprintf(want, sizeof(want), "%d:%s", current, func);
    return v && strcmp(v, want) == 0;
}

size_t fake_cuda_size(const void *p)
{
    for (int i = 0; i < MAX_ALLOCS; i++)
        if (allocs[i].p == p)
            return allocs[i].size;
    return 0;
}

int cudaGetDeviceCount(int *count)
{
    int n = env_int("FAKE_CUDA_DEVICES", 2);
    if (n <= 0)
        return 100; /* cudaErrorNoDevice */
    *count = n;
    return 0;
}

int cudaSetDevice(int device)
{
    if (device < 0 || device >= env_int("FAKE_CUDA_DEVICES", 2))
        return 101; /* cudaErrorInvalidDevice */
    current = device;
    return fake_cuda_fails("cudaSetDevice") ? 1 : 0;
}

int cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
    if (fake_cuda_fails("cudaMemGetInfo"))
        return 1;
    *free_bytes = (size_t)env_int("FAKE_CUDA_FREE_MIB", 16) << 20;
    *total_bytes = *free_bytes * 2;
    return 0;
}

int cudaMalloc(void **ptr, size_t size)
{
    size_t free_bytes, total;
    cudaMemGetInfo(&free_bytes, &total);
    if (fake_cuda_fails("cudaMalloc") || size > free_bytes)
        return 2; /* cudaErrorMemoryAllocation */
    for (int i = 0; i < MAX_ALLOCS; i++) {
        if (!allocs[i].p) {
            allocs[i].p = calloc(1, size ? size : 1);
            if (!allocs[i].p)
                return 2;
            allocs[i].size = size;
            *ptr = allocs[i].p;
            return 0;
        }
    }
    return 2;
}

int cudaFree(void *ptr)
{
    if (!ptr)
        return 0;
    for (int i = 0; i < MAX_ALLOCS; i++) {
        if (allocs[i].p == ptr) {
            free(ptr);
            allocs[i].p = NULL;
            allocs[i].size = 0;
            return 0;
        }
    }
    return 1; /* not allocated here */
}

int cudaMemset(void *ptr, int value, size_t count)
{
    if (fake_cuda_fails("cudaMemset") || fake_cuda_size(ptr) < count)
        return 1;
    memset(ptr, value, count);
    return 0;
}

int cudaMemcpy(void *dst, const void *src, size_t count, int kind)
{
    /* Only device-to-device (cudaMemcpyDeviceToDevice = 3) of buffers this
     * fake allocated is what the probe should ask for. */
    if (fake_cuda_fails("cudaMemcpy") || kind != 3 || fake_cuda_size(dst) < count ||
        fake_cuda_size(src) < count)
        return 1;
    memcpy(dst, src, count);
    return 0;
}

int cudaEventCreate(void **event)
{
    *event = calloc(1, sizeof(struct timespec));
    return *event ? 0 : 2;
}

int cudaEventRecord(void *event, void *stream)
{
    (void)stream;
    if (!event)
        return 400; /* cudaErrorInvalidResourceHandle */
    clock_gettime(CLOCK_MONOTONIC, (struct timespec *)event);
    return 0;
}

int cudaEventSynchronize(void *event)
{
    return event ? 0 : 400;
}

int cudaEventElapsedTime(float *ms, void *start, void *end)
{
    if (!start || !end)
        return 400;
    const struct timespec *a = start, *b = end;
    const char *fixed = getenv("FAKE_CUDA_EVENT_MS");
    *ms = fixed && *fixed ? strtof(fixed, NULL)
                          : (float)((double)(b->tv_sec - a->tv_sec) * 1e3 +
                                    (double)(b->tv_nsec - a->tv_nsec) / 1e6);
    return 0;
}

int cudaEventDestroy(void *event)
{
    free(event);
    return 0;
}

int cudaDeviceSynchronize(void)
{
    return 0;
}

/* The strings of the real runtime for the codes the fake returns. */
const char *cudaGetErrorString(int error)
{
    switch (error) {
    case 0:
        return "no error";
    case 1:
        return "invalid argument";
    case 2:
        return "out of memory";
    case 100:
        return "no CUDA-capable device is detected";
    case 101:
        return "invalid device ordinal";
    case 400:
        return "invalid resource handle";
    default:
        return "unrecognized error code";
    }
}
