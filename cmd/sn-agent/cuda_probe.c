/*
 * sn-agent's own GEMM and HBM-bandwidth probe (`sn-agent gemm-hbm-probe`,
 * docs/agent.md "GEMM and HBM probe"): the gemm-hbm-probe runner runs it
 * when no --probe-command is given. It loads the CUDA runtime and cuBLAS
 * with dlopen at run time (never at build time: there are no CUDA headers
 * in the build; the few prototypes and enum values it uses are declared
 * below with their reference) and, per GPU:
 *  - hbm: cudaMemcpy device-to-device of one buffer (1 GiB, at most a
 *    quarter of the free memory cudaMemGetInfo reports), WARMUP copies,
 *    then ITERS copies timed with two cudaEvents on the default stream;
 *    GB/s = 2 * bytes * ITERS / seconds / 1e9, counting the bytes read and
 *    the bytes written (the STREAM "copy" convention);
 *  - gemm: cublasGemmEx, A and B BF16, C BF16, FP32 compute
 *    (CUBLAS_COMPUTE_32F), M = N = K = 8192 (halved while the three
 *    matrices need more than half the free memory), timed likewise;
 *    TFLOP/s = 2 * M * N * K * ITERS / seconds / 1e12 (dense, no sparsity).
 * Output: sn-bench v1 rows (host,gpu,test,value,unit) on stdout, the
 * contract of --probe-command, with '#' comment lines (skipped by the
 * reader) that say how each figure was made and, per GPU, the CUDA or
 * cuBLAS error of a step that failed ("# gpu 1: failed: cudaMalloc: out of
 * memory"); no figure is printed for a step that failed. Exit status 0,
 * 1 when a GPU failed, 69 (EX_UNAVAILABLE) with "# not available: ..."
 * when the libraries or a CUDA device are missing.
 *
 * The GPU index is the CUDA device index with CUDA_DEVICE_ORDER=PCI_BUS_ID
 * (set here unless the environment sets it), the order of nvidia-smi and
 * NVML when CUDA_VISIBLE_DEVICES is not set.
 */
#include "agent.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the CUDA runtime and cuBLAS ABI used here ------------------------------
 * CUDA Runtime API reference (docs.nvidia.com/cuda/cuda-runtime-api):
 *   cudaError_t is an enum (int): cudaSuccess 0, cudaErrorInsufficientDriver
 *   35, cudaErrorNoDevice 100;
 *   enum cudaMemcpyKind: cudaMemcpyDeviceToDevice = 3;
 *   cudaEvent_t and cudaStream_t are pointers to opaque structs (NULL: the
 *   legacy default stream).
 * cuBLAS reference (docs.nvidia.com/cuda/cublas), library_types.h:
 *   cublasStatus_t is an enum (int): CUBLAS_STATUS_SUCCESS 0;
 *   cublasOperation_t: CUBLAS_OP_N = 0; cudaDataType_t: CUDA_R_16BF = 14;
 *   cublasComputeType_t: CUBLAS_COMPUTE_32F = 68;
 *   cublasGemmAlgo_t: CUBLAS_GEMM_DEFAULT = -1;
 *   cublasCreate/cublasDestroy are macros for the cublasCreate_v2 and
 *   cublasDestroy_v2 symbols of cublas_v2.h.
 * Checked against the headers of CUDA 13.0 (cuda_runtime_api.h,
 * driver_types.h, library_types.h, cublas_api.h); the same values hold
 * since CUDA 11 (CUBLAS_COMPUTE_32F appeared in 11.0). */
#define CUDA_SUCCESS_ 0
#define CUDA_ERROR_INSUFFICIENT_DRIVER 35 /* no driver, or one older than the runtime */
#define CUDA_ERROR_NO_DEVICE 100
#define CUDA_MEMCPY_D2D 3
#define CUBLAS_OP_N_ 0
#define CUDA_R_16BF_ 14
#define CUBLAS_COMPUTE_32F_ 68
#define CUBLAS_GEMM_DEFAULT_ (-1)

struct cuda_api {
    int (*get_device_count)(int *count);
    int (*set_device)(int device);
    int (*mem_get_info)(size_t *free_bytes, size_t *total_bytes);
    int (*malloc_)(void **ptr, size_t size);
    int (*free_)(void *ptr);
    int (*memset_)(void *ptr, int value, size_t count);
    int (*memcpy_)(void *dst, const void *src, size_t count, int kind);
    int (*event_create)(void **event);
    int (*event_record)(void *event, void *stream);
    int (*event_synchronize)(void *event);
    int (*event_elapsed)(float *ms, void *start, void *end);
    int (*event_destroy)(void *event);
    int (*device_synchronize)(void);
    const char *(*error_string)(int error);
    int (*blas_create)(void **handle);
    int (*blas_destroy)(void *handle);
    int (*gemm_ex)(void *handle, int transa, int transb, int m, int n, int k, const void *alpha,
                   const void *A, int Atype, int lda, const void *B, int Btype, int ldb,
                   const void *beta, void *C, int Ctype, int ldc, int compute, int algo);
    const char *(*blas_status_string)(int status); /* cuBLAS >= 11.4.2; may be NULL */
    void *cudart, *cublas;
    char cudart_name[512], cublas_name[512];
};

#define PROBE_HBM_BYTES_MAX (1ull << 30) /* one copy buffer */
#define PROBE_GEMM_N 8192                /* M = N = K */
#define PROBE_WARMUP 5
#define PROBE_ITERS 50
#define PROBE_EXIT_FAILED 1

/* dlopens the first of names found (in dir when given, else the loader's
 * search path and then /usr/local/cuda/lib64); the path into used. */
static void *open_first(const char *dir, const char *const *names, char *used, size_t cap)
{
    const char *dirs[2] = {dir, dir ? NULL : "/usr/local/cuda/lib64"};
    for (int pass = 0; pass < 2; pass++) {
        for (const char *const *n = names; *n; n++) {
            char path[512];
            if (pass == 0 && !dir)
                snprintf(path, sizeof(path), "%s", *n);
            else if (dirs[pass])
                snprintf(path, sizeof(path), "%s/%s", dirs[pass], *n);
            else
                continue;
            void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
            if (h) {
                snprintf(used, cap, "%s", path);
                return h;
            }
        }
        if (dir)
            break;
    }
    return NULL;
}

/* Resolves names[i] into slots[i]; the first missing name, or NULL. POSIX
 * guarantees that a dlsym result converts to a function pointer. */
static const char *resolve(void *lib, const char *const *names, void **slots[], size_t n,
                           size_t optional_from)
{
    for (size_t i = 0; i < n; i++) {
        void *f = dlsym(lib, names[i]);
        if (!f && i < optional_from)
            return names[i];
        memcpy(slots[i], &f, sizeof(f));
    }
    return NULL;
}

/* Loads both libraries; "not available: ..." in why when one is missing. */
static bool cuda_load(struct cuda_api *c, const char *dir, char *why, size_t cap)
{
    static const char *const rt_names[] = {"libcudart.so.13", "libcudart.so.12",
                                           "libcudart.so.11.0", "libcudart.so", NULL};
    static const char *const blas_names[] = {"libcublas.so.13", "libcublas.so.12",
                                             "libcublas.so.11", "libcublas.so", NULL};
    c->cudart = open_first(dir, rt_names, c->cudart_name, sizeof(c->cudart_name));
    if (!c->cudart) {
        snprintf(why, cap,
                 "not available: libcudart.so not found (libcudart.so.13, .12, .11.0 "
                 "or .so in %s)",
                 dir ? dir : "the library path or /usr/local/cuda/lib64");
        return false;
    }
    c->cublas = open_first(dir, blas_names, c->cublas_name, sizeof(c->cublas_name));
    if (!c->cublas) {
        snprintf(why, cap,
                 "not available: libcublas.so not found (libcublas.so.13, .12, .11 or "
                 ".so in %s)",
                 dir ? dir : "the library path or /usr/local/cuda/lib64");
        return false;
    }
    const char *const rt_syms[] = {"cudaGetDeviceCount",
                                   "cudaSetDevice",
                                   "cudaMemGetInfo",
                                   "cudaMalloc",
                                   "cudaFree",
                                   "cudaMemset",
                                   "cudaMemcpy",
                                   "cudaEventCreate",
                                   "cudaEventRecord",
                                   "cudaEventSynchronize",
                                   "cudaEventElapsedTime",
                                   "cudaEventDestroy",
                                   "cudaDeviceSynchronize",
                                   "cudaGetErrorString"};
    void **rt_slots[] = {(void **)&c->get_device_count,
                         (void **)&c->set_device,
                         (void **)&c->mem_get_info,
                         (void **)&c->malloc_,
                         (void **)&c->free_,
                         (void **)&c->memset_,
                         (void **)&c->memcpy_,
                         (void **)&c->event_create,
                         (void **)&c->event_record,
                         (void **)&c->event_synchronize,
                         (void **)&c->event_elapsed,
                         (void **)&c->event_destroy,
                         (void **)&c->device_synchronize,
                         (void **)&c->error_string};
    const char *const blas_syms[] = {"cublasCreate_v2", "cublasDestroy_v2", "cublasGemmEx",
                                     "cublasGetStatusString"};
    void **blas_slots[] = {(void **)&c->blas_create, (void **)&c->blas_destroy,
                           (void **)&c->gemm_ex, (void **)&c->blas_status_string};
    const char *missing = resolve(c->cudart, rt_syms, rt_slots, 14, 14);
    if (!missing)
        missing = resolve(c->cublas, blas_syms, blas_slots, 4, 3);
    if (missing) {
        snprintf(why, cap, "not available: %s lacks %s", c->cudart_name, missing);
        return false;
    }
    return true;
}

/* One GPU's run: the first failure wins (what failed and why). */
struct gpu_run {
    const struct cuda_api *c;
    char failed[256];
};

static bool cuda_ok(struct gpu_run *g, const char *what, int rc)
{
    if (rc == CUDA_SUCCESS_)
        return true;
    if (!g->failed[0])
        snprintf(g->failed, sizeof(g->failed), "%s: %s", what, g->c->error_string(rc));
    return false;
}

static bool blas_ok(struct gpu_run *g, const char *what, int rc)
{
    if (rc == 0)
        return true;
    if (!g->failed[0]) {
        if (g->c->blas_status_string)
            snprintf(g->failed, sizeof(g->failed), "%s: %s", what, g->c->blas_status_string(rc));
        else
            snprintf(g->failed, sizeof(g->failed), "%s: cuBLAS status %d", what, rc);
    }
    return false;
}

/* Milliseconds between two recorded events after waiting for the second. */
static bool elapsed_ms(struct gpu_run *g, void *start, void *stop, double *ms)
{
    float f = 0;
    if (!cuda_ok(g, "cudaEventSynchronize", g->c->event_synchronize(stop)) ||
        !cuda_ok(g, "cudaEventElapsedTime", g->c->event_elapsed(&f, start, stop)))
        return false;
    if (!(f > 0)) {
        snprintf(g->failed, sizeof(g->failed), "cudaEventElapsedTime: %g ms, not a duration",
                 (double)f);
        return false;
    }
    *ms = f;
    return true;
}

static double probe_hbm_gb_per_s(double bytes, unsigned iters, double ms)
{
    return 2.0 * bytes * iters / (ms / 1e3) / 1e9;
}

static double probe_gemm_tflop_per_s(double n, unsigned iters, double ms)
{
    return 2.0 * n * n * n * iters / (ms / 1e3) / 1e12;
}

/* The copy bandwidth; false with g->failed set. */
static bool run_hbm(struct gpu_run *g, void *ev[2], size_t free_bytes, size_t *bytes, double *ms)
{
    const struct cuda_api *c = g->c;
    void *src = NULL, *dst = NULL;
    size_t n = free_bytes / 4;
    n = (n > PROBE_HBM_BYTES_MAX ? PROBE_HBM_BYTES_MAX : n) & ~(size_t)((1u << 20) - 1);
    *bytes = n;
    bool ok = false;
    if (n == 0) {
        snprintf(g->failed, sizeof(g->failed), "hbm: %zu bytes free, too little to copy",
                 free_bytes);
        return false;
    }
    if (!cuda_ok(g, "cudaMalloc", c->malloc_(&src, n)) ||
        !cuda_ok(g, "cudaMalloc", c->malloc_(&dst, n)) ||
        !cuda_ok(g, "cudaMemset", c->memset_(src, 0x5a, n)))
        goto free_buffers;
    for (int i = 0; i < PROBE_WARMUP; i++)
        if (!cuda_ok(g, "cudaMemcpy", c->memcpy_(dst, src, n, CUDA_MEMCPY_D2D)))
            goto free_buffers;
    if (!cuda_ok(g, "cudaDeviceSynchronize", c->device_synchronize()) ||
        !cuda_ok(g, "cudaEventRecord", c->event_record(ev[0], NULL)))
        goto free_buffers;
    for (int i = 0; i < PROBE_ITERS; i++)
        if (!cuda_ok(g, "cudaMemcpy", c->memcpy_(dst, src, n, CUDA_MEMCPY_D2D)))
            goto free_buffers;
    ok = cuda_ok(g, "cudaEventRecord", c->event_record(ev[1], NULL)) &&
         elapsed_ms(g, ev[0], ev[1], ms);
free_buffers:
    if (dst)
        c->free_(dst);
    if (src)
        c->free_(src);
    return ok;
}

/* The GEMM rate; false with g->failed set. */
static bool run_gemm(struct gpu_run *g, void *ev[2], size_t free_bytes, int *n_out, double *ms)
{
    const struct cuda_api *c = g->c;
    int n = PROBE_GEMM_N;
    while (n > 256 && 3 * (size_t)n * (size_t)n * 2 > free_bytes / 2)
        n /= 2;
    *n_out = n;
    size_t bytes = (size_t)n * (size_t)n * 2; /* one BF16 matrix */
    void *a = NULL, *b = NULL, *cm = NULL, *h = NULL;
    const float alpha = 1.0f, beta = 0.0f;
    bool ok = false;
    if (!cuda_ok(g, "cudaMalloc", c->malloc_(&a, bytes)) ||
        !cuda_ok(g, "cudaMalloc", c->malloc_(&b, bytes)) ||
        !cuda_ok(g, "cudaMalloc", c->malloc_(&cm, bytes)) ||
        /* 0x3c3c: BF16 0.0115, so that the products are finite and non-zero */
        !cuda_ok(g, "cudaMemset", c->memset_(a, 0x3c, bytes)) ||
        !cuda_ok(g, "cudaMemset", c->memset_(b, 0x3c, bytes)) ||
        !cuda_ok(g, "cudaMemset", c->memset_(cm, 0, bytes)) ||
        !blas_ok(g, "cublasCreate", c->blas_create(&h)))
        goto free_matrices;
    for (int i = 0; i < PROBE_WARMUP + PROBE_ITERS; i++) {
        if (i == PROBE_WARMUP && (!cuda_ok(g, "cudaDeviceSynchronize", c->device_synchronize()) ||
                                  !cuda_ok(g, "cudaEventRecord", c->event_record(ev[0], NULL))))
            goto free_matrices;
        if (!blas_ok(g, "cublasGemmEx",
                     c->gemm_ex(h, CUBLAS_OP_N_, CUBLAS_OP_N_, n, n, n, &alpha, a, CUDA_R_16BF_, n,
                                b, CUDA_R_16BF_, n, &beta, cm, CUDA_R_16BF_, n, CUBLAS_COMPUTE_32F_,
                                CUBLAS_GEMM_DEFAULT_)))
            goto free_matrices;
    }
    ok = cuda_ok(g, "cudaEventRecord", c->event_record(ev[1], NULL)) &&
         elapsed_ms(g, ev[0], ev[1], ms);
free_matrices:
    if (h)
        c->blas_destroy(h);
    if (cm)
        c->free_(cm);
    if (b)
        c->free_(b);
    if (a)
        c->free_(a);
    return ok;
}

/* Probes one GPU and prints its rows; false when a step failed. */
static bool probe_gpu(const struct cuda_api *c, int dev, const char *node)
{
    struct gpu_run g = {.c = c};
    void *ev[2] = {NULL, NULL};
    size_t free_bytes = 0, total = 0, hbm_bytes = 0;
    double ms = 0;
    int n = 0;
    if (!cuda_ok(&g, "cudaSetDevice", c->set_device(dev)) ||
        !cuda_ok(&g, "cudaMemGetInfo", c->mem_get_info(&free_bytes, &total)) ||
        !cuda_ok(&g, "cudaEventCreate", c->event_create(&ev[0])) ||
        !cuda_ok(&g, "cudaEventCreate", c->event_create(&ev[1])))
        goto report;
    if (run_hbm(&g, ev, free_bytes, &hbm_bytes, &ms)) {
        printf("# gpu %d: hbm: %zu MiB copied %d times in %.3f ms\n", dev, hbm_bytes >> 20,
               PROBE_ITERS, ms);
        printf("%s,%d,hbm,%.6g,GB/s\n", node, dev,
               probe_hbm_gb_per_s((double)hbm_bytes, PROBE_ITERS, ms));
    }
    if (!g.failed[0] && run_gemm(&g, ev, free_bytes, &n, &ms)) {
        printf("# gpu %d: gemm: M=N=K=%d%s, %d GEMMs in %.3f ms\n", dev, n,
               n < PROBE_GEMM_N ? " (bounded by free memory)" : "", PROBE_ITERS, ms);
        printf("%s,%d,gemm,%.6g,TFLOP/s\n", node, dev, probe_gemm_tflop_per_s(n, PROBE_ITERS, ms));
    }
report:
    for (int i = 0; i < 2; i++)
        if (ev[i])
            c->event_destroy(ev[i]);
    if (g.failed[0])
        printf("# gpu %d: failed: %s\n", dev, g.failed);
    fflush(stdout);
    return !g.failed[0];
}

static void probe_usage(FILE *f)
{
    fprintf(f,
            "usage: sn-agent gemm-hbm-probe [--cuda-lib DIR] [NODE]\n\n"
            "Measures every GPU of this host with the CUDA runtime and cuBLAS, loaded at run\n"
            "time, and prints sn-bench v1 rows (host,gpu,test,value,unit):\n"
            "  hbm   cudaMemcpy device-to-device of min(1 GiB, free/4), %d warm-up and %d\n"
            "        timed copies; GB/s counts bytes read + written (STREAM copy)\n"
            "  gemm  cublasGemmEx BF16 in and out, FP32 compute, M=N=K=%d (halved while it\n"
            "        needs over half the free memory), %d warm-up and %d timed; TFLOP/s dense\n"
            "'#' lines say how each figure was made and which CUDA call failed on a GPU.\n"
            "Exit status 0; 1 when a GPU failed; 69 when CUDA is not available.\n\n"
            "  --cuda-lib DIR  load libcudart.so.13 (.12, .11.0, .so) and libcublas.so.13\n"
            "                  (.12, .11, .so) from DIR only; default\n"
            "                  $SN_CUDA_LIBRARY_PATH, else the loader's path and then\n"
            "                  /usr/local/cuda/lib64\n"
            "  NODE            the host column; default the host name\n",
            PROBE_WARMUP, PROBE_ITERS, PROBE_GEMM_N, PROBE_WARMUP, PROBE_ITERS);
}

int agent_gemm_hbm_probe(int argc, char **argv)
{
    char host[64];
    const char *node = NULL, *dir = getenv("SN_CUDA_LIBRARY_PATH");
    if (dir && !*dir)
        dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            probe_usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--") == 0 && i + 2 == argc && !node) {
            node = argv[++i];
        } else if (strcmp(argv[i], "--cuda-lib") == 0 && i + 1 < argc) {
            dir = argv[++i];
        } else if (argv[i][0] != '-' && !node) {
            node = argv[i];
        } else {
            fprintf(stderr,
                    "sn-agent gemm-hbm-probe: '%s': unknown option or extra argument "
                    "(--help)\n",
                    argv[i]);
            return 2;
        }
    }
    if (!node) {
        if (gethostname(host, sizeof(host) - 1) != 0)
            snprintf(host, sizeof(host), "localhost");
        host[sizeof(host) - 1] = '\0';
        node = host;
    }
    setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 0);
    struct cuda_api c = {0};
    char why[700];
    int rc = 0, count = 0;
    if (!cuda_load(&c, dir, why, sizeof(why))) {
        printf("# %s\n", why);
        rc = PROBE_EXIT_NOT_AVAILABLE;
        goto unload;
    }
    int e = c.get_device_count(&count);
    if (e == CUDA_ERROR_NO_DEVICE || e == CUDA_ERROR_INSUFFICIENT_DRIVER ||
        (e == CUDA_SUCCESS_ && count == 0)) {
        printf("# not available: cudaGetDeviceCount: %s\n",
               e ? c.error_string(e) : "no CUDA device");
        rc = PROBE_EXIT_NOT_AVAILABLE;
        goto unload;
    }
    if (e != CUDA_SUCCESS_) {
        printf("# failed: cudaGetDeviceCount: %s\n", c.error_string(e));
        rc = PROBE_EXIT_FAILED;
        goto unload;
    }
    printf("# sn-agent gemm-hbm-probe: %s, %s; %d GPUs; hbm: device-to-device cudaMemcpy, "
           "GB/s of bytes read + written; gemm: cublasGemmEx BF16, FP32 compute, dense "
           "TFLOP/s; %d warm-up + %d timed each\n",
           c.cudart_name, c.cublas_name, count, PROBE_WARMUP, PROBE_ITERS);
    printf("host,gpu,test,value,unit\n");
    for (int d = 0; d < count && d < 1024; d++)
        if (!probe_gpu(&c, d, node))
            rc = PROBE_EXIT_FAILED;
unload:
    /* The libraries stay loaded until the process exits, right after: the
     * CUDA runtime is not made to be unloaded (and unloading it would hide
     * its own and libstdc++'s allocations from leak checkers). */
    fflush(stdout);
    return rc;
}
