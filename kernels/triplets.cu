// Triplet counts of a noisy splitting oracle, and the Dasgupta cost / Moseley-Wang revenue sums.
//
// Contract (triplet_counts): S int32 (n, n) row-major holds the LCA sizes |T[u v v]| of the
// oracle's binary tree T* (S[u, u] unused).  For a sorted triple a < b < c the true answer of
// the splitting oracle is the vertex that splits away first: c if S[a,b] < S[a,c], b if
// S[a,c] < S[a,b], else a (in a binary tree exactly one pair of the three has the smallest LCA).
// Persistent noise: h = splitmix64(splitmix64(seed) ^ ((a n + b) n + c)); the answer is correct
// iff (h >> 11) < threshold, threshold = floor(p 2^53) (passed in, so CPU and GPU compare the
// same integers).  A wrong answer is vertex (a, b, c)[splitmix64(h) % 3] (uniform noise) or,
// when use_decoy != 0, the true answer of the decoy tree whose LCA sizes are D (decoy noise).
// Output C int32 (n, n): C[u, v] = #{x not in {u, v} : O(u, v, x) != x}, C[u, u] = 0.
// One thread per ordered pair (u, v) (grid-stride), looping over x: n^3 hash evaluations.
//
// Contract (lca_sums): W float64 (n, n) symmetric with zero diagonal; S int32 (n, n).  out[0] +=
// sum_{u<v} W[u,v] S[u,v] (Dasgupta cost), out[1] += sum_{u<v} W[u,v] (n - S[u,v]) (MW revenue).
// out float64 (2, gridDim.x): block b writes its partial sums to out[b] and out[gridDim.x + b]
// (no atomics: each thread sums its grid-stride share in a fixed order, the block reduces in a
// fixed tree order, and the host adds the partials in a fixed order, so the result is
// bit-reproducible from call to call).
//
// The NumPy reference (triplets.py) uses the same hash and the same integer comparison, so the
// counts agree exactly; the sums agree to float rounding (1e-9 relative).

typedef unsigned long long u64;

// splitmix64, the same function as contraction.cu's and icml25.kernels._splitmix64 (NVRTC sources
// include nothing, so each .cu carries its own copy).
__device__ __forceinline__ u64 splitmix64(u64 z) {
    z += 0x9E3779B97F4A7C15ULL;
    z ^= z >> 30; z *= 0xBF58476D1CE4E5B9ULL;
    z ^= z >> 27; z *= 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

__device__ __forceinline__ int true_answer(const int* S, long long n, int a, int b, int c) {
    int sab = S[(long long)a * n + b];
    int sac = S[(long long)a * n + c];
    if (sab < sac) return c;
    if (sac < sab) return b;
    return a;
}

extern "C" __global__ void triplet_counts(const int* __restrict__ S, const int* __restrict__ D,
                                          int use_decoy, int* __restrict__ C, long long n,
                                          u64 seed, u64 threshold) {
    u64 mixed = splitmix64(seed);
    long long total = n * n;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        int u = (int)(i / n);
        int v = (int)(i - (long long)u * n);
        if (u == v) { C[i] = 0; continue; }
        int count = 0;
        for (int x = 0; x < n; ++x) {
            if (x == u || x == v) continue;
            int lo = min(u, min(v, x));
            int hi = max(u, max(v, x));
            int mid = u + v + x - lo - hi;
            u64 key = ((u64)lo * (u64)n + (u64)mid) * (u64)n + (u64)hi;
            u64 h = splitmix64(mixed ^ key);
            int ans;
            if ((h >> 11) < threshold) {
                ans = true_answer(S, n, lo, mid, hi);
            } else if (use_decoy) {
                ans = true_answer(D, n, lo, mid, hi);
            } else {
                int k = (int)(splitmix64(h) % 3ULL);
                ans = k == 0 ? lo : (k == 1 ? mid : hi);
            }
            count += (ans != x);
        }
        C[i] = count;
    }
}

extern "C" __global__ void lca_sums(const double* __restrict__ W, const int* __restrict__ S,
                                    long long n, double* __restrict__ out) {
    __shared__ double cost_s[256];
    __shared__ double rev_s[256];
    double cost = 0.0, rev = 0.0;
    long long total = n * n;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        long long u = i / n;
        long long v = i - u * n;
        if (u < v) {
            double w = W[i];
            cost += w * (double)S[i];
            rev += w * (double)(n - S[i]);
        }
    }
    cost_s[threadIdx.x] = cost;
    rev_s[threadIdx.x] = rev;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) {
            cost_s[threadIdx.x] += cost_s[threadIdx.x + stride];
            rev_s[threadIdx.x] += rev_s[threadIdx.x + stride];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        out[blockIdx.x] = cost_s[0];
        out[gridDim.x + blockIdx.x] = rev_s[0];
    }
}
