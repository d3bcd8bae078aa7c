/*
 * A fake cuBLAS (libcublas.so.12), built only for the tests of sn-agent's
 * GEMM/HBM probe (cmd/sn-agent/cuda_probe.c); see fake_cudart.c. It checks
 * the arguments the probe passes (BF16 A and B, BF16 C, FP32 compute, the
 * leading dimensions, buffers of the fake runtime big enough for them) and
 * computes C[0][0..63] of C = alpha * A * B + beta * C (column-major), so that
 * the elapsed time the probe measures is that of real (small) work: the
 * figures through the fake are wiring checks, not measurements of a GPU.
 * Prototypes and enum values are those of the cuBLAS Library reference
 * (CUDA 12): cublasCreate_v2, cublasDestroy_v2, cublasGemmEx,
 * cublasGetStatusString.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int fake_cuda_fails(const char *func);
size_t fake_cuda_size(const void *p);

int cublasCreate_v2(void **handle);
int cublasDestroy_v2(void *handle);
int cublasGemmEx(void *handle, int transa, int transb, int m, int n, int k, const void *alpha,
                 const void *A, int Atype, int lda, const void *B, int Btype, int ldb,
                 const void *beta, void *C, int Ctype, int ldc, int computeType, int algo);
const char *cublasGetStatusString(int status);

#define CUDA_R_16BF 14
#define CUBLAS_COMPUTE_32F 68

int cublasCreate_v2(void **handle)
{
    if (fake_cuda_fails("cublasCreate"))
        return 1; /* CUBLAS_STATUS_NOT_INITIALIZED */
    *handle = malloc(1);
    return *handle ? 0 : 3;
}

int cublasDestroy_v2(void *handle)
{
    free(handle);
    return 0;
}

static float bf16(const void *base, size_t i)
{
    uint16_t h;
    memcpy(&h, (const char *)base + 2 * i, 2);
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

int cublasGemmEx(void *handle, int transa, int transb, int m, int n, int k, const void *alpha,
                 const void *A, int Atype, int lda, const void *B, int Btype, int ldb,
                 const void *beta, void *C, int Ctype, int ldc, int computeType, int algo)
{
    (void)algo;
    if (!handle)
        return 1;
    if (fake_cuda_fails("cublasGemmEx"))
        return 13; /* CUBLAS_STATUS_EXECUTION_FAILED */
    size_t need_a = (size_t)lda * (size_t)k * 2, need_b = (size_t)ldb * (size_t)n * 2,
           need_c = (size_t)ldc * (size_t)n * 2;
    if (transa != 0 || transb != 0 || m <= 0 || n <= 0 || k <= 0 || lda < m || ldb < k || ldc < m ||
        Atype != CUDA_R_16BF || Btype != CUDA_R_16BF || Ctype != CUDA_R_16BF ||
        computeType != CUBLAS_COMPUTE_32F || !alpha || !beta || fake_cuda_size(A) < need_a ||
        fake_cuda_size(B) < need_b || fake_cuda_size(C) < need_c)
        return 7; /* CUBLAS_STATUS_INVALID_VALUE */
    float al, be;
    memcpy(&al, alpha, 4);
    memcpy(&be, beta, 4);
    for (int j = 0; j < n && j < 64; j++) {
        float acc = 0;
        for (int p = 0; p < k; p++)
            acc += bf16(A, (size_t)p * (size_t)lda) * bf16(B, (size_t)j * (size_t)ldb + (size_t)p);
        float c = al * acc + be * bf16(C, (size_t)j * (size_t)ldc);
        uint32_t bits;
        memcpy(&bits, &c, 4);
        uint16_t h = (uint16_t)(bits >> 16);
        memcpy((char *)C + 2 * (size_t)j * (size_t)ldc, &h, 2);
    }
    return 0;
}

const char *cublasGetStatusString(int status)
{
    switch (status) {
    case 0:
        return "CUBLAS_STATUS_SUCCESS";
    case 1:
        return "CUBLAS_STATUS_NOT_INITIALIZED";
    case 3:
        return "CUBLAS_STATUS_ALLOC_FAILED";
    case 7:
        return "CUBLAS_STATUS_INVALID_VALUE";
    case 13:
        return "CUBLAS_STATUS_EXECUTION_FAILED";
    default:
        return "CUBLAS_STATUS_UNKNOWN";
    }
}
