// Chapter 01 kernels: LowRA's packed mixed-precision weights (Zhou et al., ICML 2025).
// Compiled by NVRTC; no headers (fp16 conversion by inline PTX).
//
// Format of a quantized W (m, n), group size g dividing n (see kernels/lowbit.py):
//   bits    (m)     int32   per-row precision b_c in {1, 2, 4}
//   offsets (m+1)   int64   row c owns bytes [offsets[c], offsets[c+1]) of packed,
//                           offsets[c+1] - offsets[c] = ceil(n b_c / 8)
//   packed  (offsets[m]) uint8  code j of row c: byte offsets[c] + (j b_c) / 8, bit shift
//                           (j b_c) % 8, b_c bits wide, LSB-first; unused high bits are 0
//   lut     (m, 16) float32 row c's levels, zero-padded beyond 2^b_c
//   thr     (m, 15) float32 row c's thresholds t_0 <= ... <= t_{2^b_c - 2}; the rest ignored
//   absmax  (m, n/g) float32 max |w| over each group of g consecutive weights of a row
// All arrays C-contiguous, row-major.
//
// Work split shared by quantize_pack and the dequantize kernels: a 2-D grid, blockIdx.y walks
// the rows (grid-stride over m), t = blockIdx.x * blockDim.x + threadIdx.x is a chunk of 8
// consecutive weights j = 8t ... 8t+7 of that row. Eight b-bit codes fill exactly b bytes
// (bytes t*b ... t*b + b - 1 of the row), so every row has the same number of threads whatever
// its precision (no idle blocks for low-bit rows), a thread reads or writes its b bytes alone
// (packing needs no atomics) and every output element is written by exactly one thread.
// When 8 does not divide n, a row's last chunk holds fewer weights and touches only the bytes
// they fill. The block first stages row c's 16 levels (or 15 thresholds) in shared memory.
//
// Rounding: w~ = w / s is one IEEE float32 division (__fdiv_rn, whatever the flags), code =
// #{k < 2^b - 1 : t_k < w~} (strict, so a value on a threshold goes to the lower bin), and
// W_hat = lut[c, code] * s is one float32 product (__fmul_rn, never contracted), then
// cvt.rn.f16.f32 for half output: bit-for-bit the NumPy reference.

#define LUT_WIDTH 16
#define THR_WIDTH 15

__device__ __forceinline__ unsigned short f32_to_f16_bits(float x) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
    return h;
}

// ---------------------------------------------------------------------------------------------
// group_absmax
//   inputs : W (m, n) float32, g
//   output : absmax (m, n/g) float32, absmax[c, q] = max_{j in [qg, (q+1)g)} |W[c, j]|
//   threads: one warp per (row, group), grid-stride over m * n/g; lanes stride over the group
//            and reduce with shuffles (max is exact, so the order does not matter).
// ---------------------------------------------------------------------------------------------
extern "C" __global__ void group_absmax(const float* __restrict__ W, float* __restrict__ absmax,
                                        const long long m, const int n, const int g) {
    const int lane = threadIdx.x & 31;
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const long long n_warps = ((long long)gridDim.x * blockDim.x) >> 5;
    const int groups_per_row = n / g;
    const long long total = m * groups_per_row;
    for (long long q = warp; q < total; q += n_warps) {
        const long long c = q / groups_per_row;
        const int qq = (int)(q - c * groups_per_row);
        const float* w = W + c * n + (long long)qq * g;
        float s = 0.0f;
        for (int j = lane; j < g; j += 32) s = fmaxf(s, fabsf(w[j]));
        for (int off = 16; off > 0; off >>= 1) s = fmaxf(s, __shfl_xor_sync(0xffffffffu, s, off));
        if (lane == 0) absmax[q] = s;
    }
}

// ---------------------------------------------------------------------------------------------
// quantize_pack
//   inputs : W (m, n) float32, absmax (m, n/g), thr (m, 15), bits (m), offsets (m+1)
//   output : packed (offsets[m]) uint8
//   threads: the 2-D grid above; thread t of row c normalises w_j, j = 8t .. 8t+7 (those < n),
//            counts the thresholds strictly below each (15 comparisons unrolled, masked to the
//            2^b - 1 that exist), ORs code_i << (i b) into a 32-bit word and stores its
//            ceil(min(8, n - 8t) b / 8) bytes.
// ---------------------------------------------------------------------------------------------
extern "C" __global__ void quantize_pack(const float* __restrict__ W, const float* __restrict__ absmax,
                                         const float* __restrict__ thr, const int* __restrict__ bits,
                                         const long long* __restrict__ offsets,
                                         unsigned char* __restrict__ packed, const long long m,
                                         const int n, const int g) {
    __shared__ float t_s[THR_WIDTH];
    const int groups_per_row = n / g;
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long j0 = 8 * t;
    for (long long c = blockIdx.y; c < m; c += gridDim.y) {
        if (threadIdx.x < THR_WIDTH) t_s[threadIdx.x] = thr[c * THR_WIDTH + threadIdx.x];
        __syncthreads();
        if (j0 < n) {
            const int b = bits[c];
            const int n_thr = (1 << b) - 1;
            float th[THR_WIDTH];
#pragma unroll
            for (int q = 0; q < THR_WIDTH; ++q) th[q] = t_s[q];
            const float* w = W + c * n;
            const float* s_row = absmax + c * groups_per_row;
            unsigned int word = 0;
#pragma unroll
            for (int i = 0; i < 8; ++i) {
                const long long j = j0 + i;
                if (j < n) {
                    const float s = s_row[j / g];
                    const float x = __fdiv_rn(w[j], s > 0.0f ? s : 1.0f);  // w~ = w / s, 0 if s == 0
                    unsigned int code = 0;
#pragma unroll
                    for (int q = 0; q < THR_WIDTH; ++q) code += (q < n_thr) & (x > th[q]);
                    word |= code << (i * b);
                }
            }
            const long long valid = n - j0 < 8 ? n - j0 : 8;
            const int n_bytes = (int)((valid * b + 7) / 8);
            unsigned char* dst = packed + offsets[c] + t * b;
            for (int i = 0; i < n_bytes; ++i) dst[i] = (unsigned char)(word >> (8 * i));
        }
        __syncthreads();  // t_s is rewritten for the next row
    }
}

// ---------------------------------------------------------------------------------------------
// dequantize_mixed_f32 / dequantize_mixed_f16
//   inputs : packed, offsets, bits, lut (m, 16), absmax (m, n/g)
//   output : out (m, n) float32, or float16 as raw 16-bit words
//   threads: the 2-D grid above; thread t of row c loads its b bytes (only those inside the row)
//            into one word and writes out[c, j] = lut[c, code_j] * absmax[c, j / g] for
//            j = 8t .. 8t+7: as two float4 (f32) or one 16-byte store (f16) when n % 8 == 0
//            (then every row start and every thread's slice is aligned), else element by element.
// ---------------------------------------------------------------------------------------------
template <bool HALF>
__device__ __forceinline__ void dequant_body(const unsigned char* __restrict__ packed,
                                             const long long* __restrict__ offsets,
                                             const int* __restrict__ bits, const float* __restrict__ lut,
                                             const float* __restrict__ absmax, void* __restrict__ out,
                                             const long long m, const int n, const int g) {
    __shared__ float q_s[LUT_WIDTH];
    const int groups_per_row = n / g;
    const bool full = (n % 8) == 0;
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long j0 = 8 * t;
    for (long long c = blockIdx.y; c < m; c += gridDim.y) {
        if (threadIdx.x < LUT_WIDTH) q_s[threadIdx.x] = lut[c * LUT_WIDTH + threadIdx.x];
        __syncthreads();
        if (j0 < n) {
            const int b = bits[c];
            const unsigned int mask = (1u << b) - 1u;
            const long long valid = n - j0 < 8 ? n - j0 : 8;
            const int n_bytes = (int)((valid * b + 7) / 8);  // never read past the row's last byte
            const unsigned char* src = packed + offsets[c] + t * b;
            unsigned int word = 0;
            for (int i = 0; i < n_bytes; ++i) word |= (unsigned int)src[i] << (8 * i);
            const float* s_row = absmax + c * groups_per_row;
            float v[8];
            if (full && (g % 8) == 0) {  // the 8 weights share one group
                const float s = s_row[j0 / g];
#pragma unroll
                for (int i = 0; i < 8; ++i) v[i] = __fmul_rn(q_s[(word >> (i * b)) & mask], s);
            } else {
#pragma unroll
                for (int i = 0; i < 8; ++i) {
                    const long long j = j0 + i < n ? j0 + i : n - 1;  // padding codes read a real scale
                    v[i] = __fmul_rn(q_s[(word >> (i * b)) & mask], s_row[j / g]);
                }
            }
            const long long base = c * n + j0;
            if (!HALF) {
                float* o = (float*)out + base;
                if (full) {
                    ((float4*)o)[0] = make_float4(v[0], v[1], v[2], v[3]);
                    ((float4*)o)[1] = make_float4(v[4], v[5], v[6], v[7]);
                } else {
#pragma unroll
                    for (int i = 0; i < 8; ++i)
                        if (i < valid) o[i] = v[i];
                }
            } else {
                unsigned short* o = (unsigned short*)out + base;
                unsigned short h[8];
#pragma unroll
                for (int i = 0; i < 8; ++i) h[i] = f32_to_f16_bits(v[i]);
                if (full) {
                    ((uint4*)o)[0] = make_uint4(h[0] | ((unsigned)h[1] << 16), h[2] | ((unsigned)h[3] << 16),
                                                h[4] | ((unsigned)h[5] << 16), h[6] | ((unsigned)h[7] << 16));
                } else {
#pragma unroll
                    for (int i = 0; i < 8; ++i)
                        if (i < valid) o[i] = h[i];
                }
            }
        }
        __syncthreads();  // q_s is rewritten for the next row
    }
}

extern "C" __global__ void dequantize_mixed_f32(const unsigned char* __restrict__ packed,
                                                const long long* __restrict__ offsets,
                                                const int* __restrict__ bits, const float* __restrict__ lut,
                                                const float* __restrict__ absmax, float* __restrict__ out,
                                                const long long m, const int n, const int g) {
    dequant_body<false>(packed, offsets, bits, lut, absmax, out, m, n, g);
}

extern "C" __global__ void dequantize_mixed_f16(const unsigned char* __restrict__ packed,
                                                const long long* __restrict__ offsets,
                                                const int* __restrict__ bits, const float* __restrict__ lut,
                                                const float* __restrict__ absmax,
                                                unsigned short* __restrict__ out, const long long m,
                                                const int n, const int g) {
    dequant_body<true>(packed, offsets, bits, lut, absmax, out, m, n, g);
}

// ---------------------------------------------------------------------------------------------
// dequant_matmul_f32 (fused y = x @ W_hat^T, for small batches)
//   inputs : x (B, n) float32, the packed weight (m, n)
//   output : y (B, m) float32
//   threads: one block per output channel c (grid-stride over m); dynamic shared memory holds
//            row c decoded once (n floats, each lut[c, code] * absmax[c, j / g] rounded as in
//            dequantize) and blockDim.x / 32 floats for the reduction; then for each batch row
//            the block forms sum_j x[bi, j] w[j] (thread-strided partial sums, warp shuffles,
//            one add per warp). The summation order differs from BLAS: agree within rounding.
// ---------------------------------------------------------------------------------------------
extern "C" __global__ void dequant_matmul_f32(const float* __restrict__ x, const unsigned char* __restrict__ packed,
                                              const long long* __restrict__ offsets,
                                              const int* __restrict__ bits, const float* __restrict__ lut,
                                              const float* __restrict__ absmax, float* __restrict__ y,
                                              const int B, const long long m, const int n, const int g) {
    extern __shared__ float smem[];
    float* w = smem;       // n decoded weights
    float* red = smem + n; // one partial per warp
    const int groups_per_row = n / g;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
    for (long long c = blockIdx.x; c < m; c += gridDim.x) {
        const int b = bits[c];
        const unsigned int mask = (1u << b) - 1u;
        const unsigned char* row = packed + offsets[c];
        const float* q = lut + c * LUT_WIDTH;
        const float* s_row = absmax + c * groups_per_row;
        for (int j = threadIdx.x; j < n; j += blockDim.x) {
            const long long bit = (long long)j * b;
            const unsigned int code = (row[bit >> 3] >> (bit & 7)) & mask;
            w[j] = __fmul_rn(q[code], s_row[j / g]);
        }
        __syncthreads();
        for (int bi = 0; bi < B; ++bi) {
            const float* xr = x + (long long)bi * n;
            float acc = 0.0f;
            for (int j = threadIdx.x; j < n; j += blockDim.x) acc = fmaf(xr[j], w[j], acc);
            for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
            if (lane == 0) red[warp] = acc;
            __syncthreads();
            if (threadIdx.x == 0) {
                float total = 0.0f;
                for (int i = 0; i < n_warps; ++i) total += red[i];
                y[(long long)bi * m + c] = total;
            }
            __syncthreads();
        }
        __syncthreads();  // w is rewritten for the next row (also when B == 0)
    }
}
