// mips.cu: maximum-inner-product kernels of chapter 02 (vMF exploration).
//
// Launchers, CPU references and dispatchers: kernels/mips.py. Compiled by NVRTC through CuPy;
// no CUDA headers (NVRTC's built-ins only), so it compiles without a GPU.
//
// Shared conventions
//   Q       queries / states, (B, d) float32, row-major (row b at Q + b*d), C-contiguous.
//   X       action table, (n, d) float32, row-major, C-contiguous; 1 <= n <= 2^32 - 2.
//   Launch  blockDim = (TILE_N, 1, 1) = 256 threads (required: thread t owns row t of a tile);
//           gridDim.y = ceil(B / TQ): block row y owns the TQ = 8 queries q0 = y*TQ .. q0+7;
//           gridDim.x = any >= 1: block x walks the action tiles x, x + gridDim.x, ... in
//           increasing order (tile t = actions t*TILE_N .. t*TILE_N + 255).
//   Dots    each block computes the TQ x TILE_N inner products of its queries with one action
//           tile at a time (tile_dots): both are staged in shared memory TILE_K = 32 dimensions
//           at a time, and thread t accumulates <q, x_t> for its TQ queries in registers, summing
//           over the dimensions in increasing order with fmaf.
//   Keys    the argmax-type kernels combine (score, index) pairs as one 64-bit key:
//           high word = order-preserving image of the float32 score, low word = 0xFFFFFFFF - index,
//           so that the larger key has the larger score and, on equal scores, the LOWER index.
//           Reduction is then max over keys: per thread, across the block (warp shuffles, then
//           shared memory) and across blocks (one atomicMax per block and query on keys[b],
//           which the launcher zero-initialises: 0 is below every packed key).
//           mips_decode_keys turns keys back into (index int64, score float32).

#define TILE_N 256  // actions per tile == threads per block
#define TILE_K 32   // dimensions staged in shared memory at a time (tile_dots assumes 32: e >> 5)
#define TQ 8        // queries per block
#define NWARPS (TILE_N / 32)

typedef unsigned int u32;
typedef unsigned long long u64;

// ---------------------------------------------------------------------------------------------
// Philox-4x32-10 (Salmon, Moraes, Dror, Shaw, SC'11; Random123's philox4x32 with 10 rounds).
// One round: (c0, c1, c2, c3) -> (hi(M1*c2) ^ c1 ^ k0, lo(M1*c2), hi(M0*c0) ^ c3 ^ k1, lo(M0*c0));
// the key (k0, k1) is bumped by the Weyl constants (W0, W1) before every round but the first.
// Known answer: counter 0, key 0 -> 6627e8d5 e169c58d bc57ac4c 9b00dbd8 (tested in NumPy on the
// identical function kernels/mips.py:philox4x32_10).
// ---------------------------------------------------------------------------------------------
__device__ __forceinline__ void philox4x32_10(u32 c[4], u32 k0, u32 k1) {
#pragma unroll
    for (int r = 0; r < 10; ++r) {
        if (r > 0) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        const u32 hi0 = __umulhi(0xD2511F53u, c[0]);
        const u32 lo0 = 0xD2511F53u * c[0];
        const u32 hi1 = __umulhi(0xCD9E8D57u, c[2]);
        const u32 lo1 = 0xCD9E8D57u * c[2];
        const u32 n0 = hi1 ^ c[1] ^ k0;
        const u32 n2 = hi0 ^ c[3] ^ k1;
        c[0] = n0;
        c[1] = lo1;
        c[2] = n2;
        c[3] = lo0;
    }
}

// Standard Gumbel noise G_{b,i} = -log(-log U): key = (seed lo, seed hi), counter = (i, b, offset lo,
// offset hi); U = (2*(w0 >> 9) + 1) * 2^-24 from the first output word w0 (23 random bits, exact in
// float32, strictly inside (0, 1)). Same formula as kernels/mips.py:gumbel_noise_reference.
__device__ __forceinline__ float gumbel_noise(u64 seed, u64 offset, u32 b, u32 i) {
    u32 c[4] = {i, b, (u32)offset, (u32)(offset >> 32)};
    philox4x32_10(c, (u32)seed, (u32)(seed >> 32));
    const float u = (float)(2u * (c[0] >> 9) + 1u) * 5.9604644775390625e-8f;  // * 2^-24, exact
    return -logf(-logf(u));
}

// ---------------------------------------------------------------------------------------------
// (score, index) keys
// ---------------------------------------------------------------------------------------------
__device__ __forceinline__ u64 pack_key(float score, u32 index) {
    u32 bits = __float_as_uint(score);
    if (bits == 0x80000000u) bits = 0u;  // -0.0 -> +0.0: the two zeros must tie
    // Order-preserving map float -> u32: flip all bits of negatives, set the sign bit of positives.
    bits = (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
    return ((u64)bits << 32) | (u64)(0xFFFFFFFFu - index);
}

__device__ __forceinline__ u64 max_u64(u64 a, u64 b) { return a > b ? a : b; }

// ---------------------------------------------------------------------------------------------
// Tile of inner products. On return, for thread t and q < TQ:
//   acc[q] = sum_{k < d} Q[q0 + q, k] * X[a0 + t, k]   (0 for rows past B or actions past n).
// Every thread of the block must call it (it synchronises); Qs and Xs are the block's staging
// buffers. Xs rows are padded to TILE_K + 1 floats so that thread t reading Xs[t][c] hits bank
// (t + c) mod 32: no bank conflicts. Qs[q][c] is a broadcast read.
// ---------------------------------------------------------------------------------------------
__device__ __forceinline__ void tile_dots(const float* __restrict__ Q, const float* __restrict__ X,
                                          long long B, long long n, int d, long long q0, long long a0,
                                          float (*Qs)[TILE_K], float (*Xs)[TILE_K + 1], float acc[TQ]) {
#pragma unroll
    for (int q = 0; q < TQ; ++q) acc[q] = 0.0f;
    for (int k0 = 0; k0 < d; k0 += TILE_K) {
        const int kw = min(TILE_K, d - k0);  // dimensions in this chunk
        __syncthreads();                     // everyone is done reading the previous chunk
        // Stage Q[q0 .. q0+TQ-1, k0 .. k0+kw-1] and X[a0 .. a0+TILE_N-1, k0 .. k0+kw-1]; consecutive
        // threads read consecutive addresses of a row segment (coalesced).
        // Element e of a chunk is (row e / kw, column e % kw); full chunks (kw == TILE_K, a uniform
        // branch) use shifts instead of a run-time integer division.
        for (int e = threadIdx.x; e < TQ * kw; e += TILE_N) {
            const int r = (kw == TILE_K) ? (e >> 5) : (e / kw), c = e - r * kw;
            Qs[r][c] = (q0 + r < B) ? Q[(q0 + r) * d + k0 + c] : 0.0f;
        }
        for (int e = threadIdx.x; e < TILE_N * kw; e += TILE_N) {
            const int r = (kw == TILE_K) ? (e >> 5) : (e / kw), c = e - r * kw;
            Xs[r][c] = (a0 + r < n) ? X[(a0 + r) * d + k0 + c] : 0.0f;
        }
        __syncthreads();
        const int t = threadIdx.x;
        for (int c = 0; c < kw; ++c) {
            const float x = Xs[t][c];
#pragma unroll
            for (int q = 0; q < TQ; ++q) acc[q] = fmaf(Qs[q][c], x, acc[q]);
        }
    }
}

// Block-wide max of each thread's best[q], then one atomicMax per valid query into keys[q0 + q].
// Every thread of the block must call it.
__device__ __forceinline__ void block_max_publish(const u64 best[TQ], u64 (*red)[NWARPS], long long q0, long long B,
                                                  u64* __restrict__ keys) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int q = 0; q < TQ; ++q) {
        u64 v = best[q];
        for (int s = 16; s > 0; s >>= 1) v = max_u64(v, __shfl_down_sync(0xFFFFFFFFu, v, s));
        if (lane == 0) red[q][warp] = v;
    }
    __syncthreads();
    if (threadIdx.x < TQ) {
        const int q = threadIdx.x;
        u64 v = 0ull;
        for (int w = 0; w < NWARPS; ++w) v = max_u64(v, red[q][w]);
        if (q0 + q < B && v != 0ull) atomicMax(keys + q0 + q, v);
    }
}

// ---------------------------------------------------------------------------------------------
// argmax_keys: the tile loop of the argmax-type kernels.
//   Thread t of block (x, y) keeps, for each of the block's TQ queries, the best key
//   score(b, i, <q_b, x_i>) over the actions i = a0 + t of the tiles it visits; the block reduces
//   them and publishes with atomicMax (block_max_publish). A key of 0 changes nothing.
// ---------------------------------------------------------------------------------------------
template <class Score>
__device__ __forceinline__ void argmax_keys(const float* __restrict__ Q, const float* __restrict__ X, long long B,
                                            long long n, int d, Score score, u64* __restrict__ keys) {
    __shared__ float Qs[TQ][TILE_K];
    __shared__ float Xs[TILE_N][TILE_K + 1];
    __shared__ u64 red[TQ][NWARPS];
    const long long q0 = (long long)blockIdx.y * TQ;
    const long long num_tiles = (n + TILE_N - 1) / TILE_N;
    u64 best[TQ];
#pragma unroll
    for (int q = 0; q < TQ; ++q) best[q] = 0ull;
    float acc[TQ];
    for (long long tile = blockIdx.x; tile < num_tiles; tile += gridDim.x) {
        const long long a0 = tile * TILE_N;
        tile_dots(Q, X, B, n, d, q0, a0, Qs, Xs, acc);
        const long long i = a0 + threadIdx.x;
        if (i < n) {
#pragma unroll
            for (int q = 0; q < TQ; ++q) best[q] = max_u64(best[q], score(q0 + q, i, acc[q]));
        }
    }
    block_max_publish(best, red, q0, B, keys);
}

// ---------------------------------------------------------------------------------------------
// mips_argmax_keys: fused maximum-inner-product argmax (vMF-exp step 3).
//   in   Q (B, d), X (n, d) float32 row-major; B, n, d.
//   out  keys (B,) u64, zero-initialised by the caller; on exit keys[b] = packed
//        (max_i <q_b, x_i>, smallest such i). Decode with mips_decode_keys.
//   The tile loop and reduction of argmax_keys, with the inner product itself as the score.
// ---------------------------------------------------------------------------------------------
extern "C" __global__ void __launch_bounds__(TILE_N)
    mips_argmax_keys(const float* __restrict__ Q, const float* __restrict__ X, long long B, long long n, int d,
                     u64* __restrict__ keys) {
    argmax_keys(Q, X, B, n, d, [](long long, long long i, float dot) { return pack_key(dot, (u32)i); }, keys);
}

// ---------------------------------------------------------------------------------------------
// gumbel_max_keys: fused Gumbel-max sampling of the Boltzmann policy P(i | v_b) ∝ exp(kappa <v_b, x_i>).
//   in   Q = V (B, d), X (n, d) float32 row-major; B, n, d; kappa >= 0; seed, offset (Philox key and
//        high counter words); b_base = global index of row 0 of Q (the launcher splits huge B).
//   out  keys (B,) u64, zero-initialised; keys[b] = packed (max_i s_{b,i}, smallest such i) with
//        s_{b,i} = fl(fl(kappa * <v_b, x_i>) + G_{b_base + b, i})   (no FMA contraction, so that the
//        NumPy reference rounds identically), G from gumbel_noise. Decode with mips_decode_keys.
//   The tile loop and reduction of argmax_keys; each thread draws the noise of its own (b, i), and
//   only for queries b < B.
// ---------------------------------------------------------------------------------------------
extern "C" __global__ void __launch_bounds__(TILE_N)
    gumbel_max_keys(const float* __restrict__ Q, const float* __restrict__ X, long long B, long long n, int d,
                    float kappa, u64 seed, u64 offset, long long b_base, u64* __restrict__ keys) {
    auto score = [=](long long b, long long i, float dot) -> u64 {
        if (b >= B) return 0ull;
        const float g = gumbel_noise(seed, offset, (u32)(b_base + b), (u32)i);
        return pack_key(__fadd_rn(__fmul_rn(kappa, dot), g), (u32)i);
    };
    argmax_keys(Q, X, B, n, d, score, keys);
}

// ---------------------------------------------------------------------------------------------
// mips_decode_keys: keys (B,) u64 -> index (B,) int64, score (B,) float32 (inverse of pack_key).
//   One thread per query; any 1-D launch covering B.
// ---------------------------------------------------------------------------------------------
extern "C" __global__ void mips_decode_keys(const u64* __restrict__ keys, long long B, long long* __restrict__ index,
                                            float* __restrict__ score) {
    const long long b = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= B) return;
    const u64 key = keys[b];
    const u32 hi = (u32)(key >> 32);
    const u32 bits = (hi & 0x80000000u) ? (hi & 0x7FFFFFFFu) : ~hi;
    score[b] = __uint_as_float(bits);
    index[b] = (long long)(0xFFFFFFFFu - (u32)(key & 0xFFFFFFFFull));
}

// ---------------------------------------------------------------------------------------------
// first_beater: prefix-survival counter of the Monte Carlo curve (note, step 8).
//   in   Q (B, d), X (n, d) float32 row-major; threshold (B,) float32; B, n, d.
//   out  out (B,) int64, initialised to n by the caller; on exit
//        out[b] = min { j : <q_b, x_j> > threshold[b] }  (n when no action beats the threshold).
//   Per tile and query, each warp ballots its hits and the lowest hitting lane (smallest j of the
//   warp) does atomicMin(out[b], j). Before each tile, thread 0 reads out[] of the block's queries;
//   if every one already holds an index <= the tile's first action, no action of this or any later
//   tile of the block can lower it, and the whole block stops (tiles are visited in increasing
//   order). Reading a stale out[] only delays that exit; results do not depend on it.
// ---------------------------------------------------------------------------------------------
extern "C" __global__ void __launch_bounds__(TILE_N)
    first_beater(const float* __restrict__ Q, const float* __restrict__ X, const float* __restrict__ threshold,
                 long long B, long long n, int d, long long* out) {
    __shared__ float Qs[TQ][TILE_K];
    __shared__ float Xs[TILE_N][TILE_K + 1];
    __shared__ int s_done;
    const long long q0 = (long long)blockIdx.y * TQ;
    const long long num_tiles = (n + TILE_N - 1) / TILE_N;
    const int lane = threadIdx.x & 31;
    float thr[TQ];
#pragma unroll
    for (int q = 0; q < TQ; ++q) thr[q] = (q0 + q < B) ? threshold[q0 + q] : 0.0f;
    float acc[TQ];
    for (long long tile = blockIdx.x; tile < num_tiles; tile += gridDim.x) {
        const long long a0 = tile * TILE_N;
        if (threadIdx.x == 0) {
            int done = 1;
            for (int q = 0; q < TQ; ++q) {
                if (q0 + q < B && ((volatile long long*)out)[q0 + q] > a0) done = 0;
            }
            s_done = done;
        }
        __syncthreads();
        if (s_done) break;  // uniform across the block: everyone read the same s_done
        tile_dots(Q, X, B, n, d, q0, a0, Qs, Xs, acc);  // its first __syncthreads orders s_done reuse
        const long long i = a0 + threadIdx.x;
#pragma unroll
        for (int q = 0; q < TQ; ++q) {
            const bool hit = (i < n) && (q0 + q < B) && (acc[q] > thr[q]);
            const u32 mask = __ballot_sync(0xFFFFFFFFu, hit);
            if (mask != 0u && lane == __ffs(mask) - 1)
                atomicMin((u64*)out + q0 + q, (u64)i);  // out >= 0, so the unsigned order is the signed one
        }
    }
}
