// Pareto dominance (shared: chapter 14 CombiMOTS, chapter 18 PepTune), kernels/dominance.cu.
//
// All objectives are MAXIMISED.  Row j dominates row i of F (float64, (n, D) row-major) when
//     F[j, d] >= F[i, d] for every d   and   F[j, d] > F[i, d] for some d,
// so exact duplicates do not dominate each other.
//
// Contract (pareto_mask): mask uint8 (n,), mask[i] = 1 iff no row of F dominates row i.
// One thread per i (grid-stride), a loop over all j with an early exit at the first dominator.
//
// Contract (dominator_count): count int32 (n,), count[i] = #{j : j dominates i}.  One thread per i.
// Contract (release_front): given the rows of the front just removed (front int64 (k,)), for every i with
// rank[i] < 0 (not yet ranked): count[i] -= #{j in front : j dominates i}.  Together they are Deb's fast
// non-dominated sort: front 0 = {count == 0}; after releasing front r, front r + 1 = the unranked rows whose
// count fell to 0.  Every pair (j, i) is tested once in dominator_count and at most once in release_front,
// so the total work is O(n^2 D) whatever the number of fronts, with O(n) memory (no dominance matrix).
// The host loop (kernels/dominance.py: non_dominated_sort_gpu) finds each front with CuPy.

__device__ __forceinline__ bool dominates(const double* __restrict__ fj, const double* __restrict__ fi, int D) {
    bool strictly = false;
    for (int d = 0; d < D; ++d) {
        double a = fj[d], b = fi[d];
        if (a < b) return false;
        if (a > b) strictly = true;
    }
    return strictly;
}

extern "C" __global__ void pareto_mask(const double* __restrict__ F, unsigned char* __restrict__ mask,
                                       long long n, int D) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        const double* fi = F + i * D;
        unsigned char keep = 1;
        for (long long j = 0; j < n; ++j) {
            if (dominates(F + j * D, fi, D)) { keep = 0; break; }
        }
        mask[i] = keep;
    }
}

extern "C" __global__ void dominator_count(const double* __restrict__ F, int* __restrict__ count,
                                           long long n, int D) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        const double* fi = F + i * D;
        int c = 0;
        for (long long j = 0; j < n; ++j) c += dominates(F + j * D, fi, D) ? 1 : 0;
        count[i] = c;
    }
}

extern "C" __global__ void release_front(const double* __restrict__ F, const long long* __restrict__ front,
                                         long long k, const long long* __restrict__ rank,
                                         int* __restrict__ count, long long n, int D) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        if (rank[i] >= 0) continue;
        const double* fi = F + i * D;
        int c = 0;
        for (long long t = 0; t < k; ++t) c += dominates(F + front[t] * D, fi, D) ? 1 : 0;
        count[i] -= c;
    }
}
