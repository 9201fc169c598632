// Bulk Tanimoto similarity on packed binary fingerprints (shared: chapter 14 CombiMOTS, chapter 18 PepTune),
// kernels/tanimoto.cu.
//
// Layout: a fingerprint of n_bits bits is W = ceil(n_bits / 64) little-endian uint64 words; bit j lives in
// word j / 64 at position j % 64 (kernels/tanimoto.py: pack_bits).  Padding bits are zero.
//
// Contract (bulk_tanimoto): A uint64 (n, W), B uint64 (m, W), out float32 (n, m) row-major,
//     c = sum_w popcount(A[i, w] & B[j, w]),  a = popcount(A[i]),  b = popcount(B[j])
//     out[i, j] = c / (a + b - c),   and 0 when a + b - c == 0 (two empty fingerprints),
// which is RDKit's TanimotoSimilarity / BulkTanimotoSimilarity (0.0 for two empty vectors).  The division is
// done in double and rounded once to float32, so the value equals float32(RDKit's double) exactly.  One thread
// per (i, j) pair, grid-stride over n * m.
//
// Contract (max_tanimoto): out float32 (n,) with out[i] = max_j bulk_tanimoto(A, B)[i, j] (m >= 1).
// One block per row i (grid-stride over rows), threads stride over j, then a shared-memory max reduction
// (blockDim.x floats, blockDim.x a power of two).  The max of correctly rounded values is itself exact, so
// it equals the row max of bulk_tanimoto bit for bit.

typedef unsigned long long u64;

__device__ __forceinline__ float tanimoto_pair(const u64* __restrict__ a, const u64* __restrict__ b, long long W) {
    long long c = 0, na = 0, nb = 0;
    for (long long w = 0; w < W; ++w) {
        u64 x = a[w], y = b[w];
        c += __popcll(x & y);
        na += __popcll(x);
        nb += __popcll(y);
    }
    long long u = na + nb - c;
    return u == 0 ? 0.0f : (float)((double)c / (double)u);
}

extern "C" __global__ void bulk_tanimoto(const u64* __restrict__ A, const u64* __restrict__ B,
                                         float* __restrict__ out, long long n, long long m, long long W) {
    long long total = n * m;
    for (long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x; k < total;
         k += (long long)gridDim.x * blockDim.x) {
        long long i = k / m, j = k - i * m;
        out[k] = tanimoto_pair(A + i * W, B + j * W, W);
    }
}

extern "C" __global__ void max_tanimoto(const u64* __restrict__ A, const u64* __restrict__ B,
                                        float* __restrict__ out, long long n, long long m, long long W) {
    extern __shared__ float best[];
    for (long long i = blockIdx.x; i < n; i += gridDim.x) {
        float mine = 0.0f;   // every similarity is >= 0
        for (long long j = threadIdx.x; j < m; j += blockDim.x) {
            float s = tanimoto_pair(A + i * W, B + j * W, W);
            mine = s > mine ? s : mine;
        }
        best[threadIdx.x] = mine;
        __syncthreads();
        for (int s = blockDim.x / 2; s > 0; s >>= 1) {
            if (threadIdx.x < s && best[threadIdx.x + s] > best[threadIdx.x]) best[threadIdx.x] = best[threadIdx.x + s];
            __syncthreads();
        }
        if (threadIdx.x == 0) out[i] = best[0];
        __syncthreads();
    }
}
