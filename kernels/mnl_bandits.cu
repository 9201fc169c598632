// Chapter 11 kernels: batched optimism and batched capacitated-MNL assortment oracle for R
// replicate runs of OFU-MNL++ (Lee & Oh, ICML 2025). float64 throughout, row-major layouts.
// Compiled by NVRTC; no headers.

// ---------------------------------------------------------------------------------------------
// optimistic_utilities
//   inputs : X (R, N, d), w (R, d), Hinv (R, d, d) symmetric, beta (R)
//   output : alpha (R, N) with alpha[r, i] = x_ri^T w_r + beta_r * sqrt(max(x_ri^T Hinv_r x_ri, 0))
//   threads: one thread per (r, i); grid-stride loop over R * N.
// ---------------------------------------------------------------------------------------------
extern "C" __global__ void optimistic_utilities(const double* __restrict__ X,
                                                const double* __restrict__ w,
                                                const double* __restrict__ Hinv,
                                                const double* __restrict__ beta,
                                                double* __restrict__ alpha,
                                                const int R, const int N, const int d) {
    const long long total = (long long)R * N;
    for (long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (long long)gridDim.x * blockDim.x) {
        const int rep = (int)(idx / N);
        const double* x = X + idx * d;
        const double* wr = w + (long long)rep * d;
        const double* M = Hinv + (long long)rep * d * d;
        double mean = 0.0, quad = 0.0;
        for (int j = 0; j < d; ++j) {
            mean += x[j] * wr[j];
            double mx = 0.0;
            for (int k = 0; k < d; ++k) mx += M[j * d + k] * x[k];
            quad += x[j] * mx;
        }
        alpha[idx] = mean + beta[rep] * sqrt(quad > 0.0 ? quad : 0.0);
    }
}

// ---------------------------------------------------------------------------------------------
// assortment_bisection
//   inputs : v (R, N) > 0 attraction weights, rev (R, N) revenues, v0 (R) outside weights,
//            K (max size), tol (relative bisection tolerance), max_iter, max_polish
//   outputs: mask (R, N) uint8, 1 for the items of the chosen assortment; revenue (R)
//   threads: one block per replicate (blockDim = THREADS = 256); dynamic shared memory holds
//            N doubles (scores), 3 * THREADS doubles (reductions) and N chars (selection).
//   method : select(z) = the (at most) K largest strictly positive scores v_i (r_i - z), ties
//            to the lower index (rank by counting: O(N^2 / THREADS) per call); bisection on z
//            with R(S) >= z  <=>  sum_S v_i (r_i - z) >= v0 z, then a Dinkelbach polish
//            z <- R(S(z)). Every branch depends only on block-reduced values, so all threads
//            take it together (the __syncthreads are uniform).
// ---------------------------------------------------------------------------------------------
#define THREADS 256

__device__ void block_sum3(double* red, double a, double b, double c, double* out) {
    const int tid = threadIdx.x;
    red[tid] = a;
    red[THREADS + tid] = b;
    red[2 * THREADS + tid] = c;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (tid < s) {
            red[tid] += red[tid + s];
            red[THREADS + tid] += red[THREADS + tid + s];
            red[2 * THREADS + tid] += red[2 * THREADS + tid + s];
        }
        __syncthreads();
    }
    out[0] = red[0];
    out[1] = red[THREADS];
    out[2] = red[2 * THREADS];
    __syncthreads();
}

// Computes the selection for threshold z into sel[]; returns (sum of selected scores,
// sum of selected v, sum of selected v * r) through out[3] and the count through *count.
__device__ void select_top_k(const double* v, const double* rv, double z, int N, int K,
                             double* score, char* sel, double* red, double* out, int* count) {
    const int tid = threadIdx.x;
    for (int i = tid; i < N; i += THREADS) score[i] = v[i] * (rv[i] - z);
    __syncthreads();
    double s_score = 0.0, s_v = 0.0, s_vr = 0.0, s_n = 0.0;
    for (int i = tid; i < N; i += THREADS) {
        const double si = score[i];
        char take = 0;
        if (si > 0.0) {
            int rank = 0;
            for (int j = 0; j < N && rank < K; ++j) {
                const double sj = score[j];
                rank += (sj > si || (sj == si && j < i)) ? 1 : 0;
            }
            take = rank < K ? 1 : 0;
        }
        sel[i] = take;
        if (take) {
            s_score += si;
            s_v += v[i];
            s_vr += v[i] * rv[i];
            s_n += 1.0;
        }
    }
    double sums[3];
    block_sum3(red, s_score, s_v, s_vr, sums);
    double cnt[3];
    block_sum3(red, s_n, 0.0, 0.0, cnt);
    out[0] = sums[0];
    out[1] = sums[1];
    out[2] = sums[2];
    *count = (int)(cnt[0] + 0.5);
}

extern "C" __global__ void assortment_bisection(const double* __restrict__ v_all,
                                                const double* __restrict__ r_all,
                                                const double* __restrict__ v0_all,
                                                const int R, const int N, const int K,
                                                const double tol, const int max_iter,
                                                const int max_polish,
                                                unsigned char* __restrict__ mask,
                                                double* __restrict__ revenue) {
    extern __shared__ double shmem[];
    double* score = shmem;                       // N
    double* red = shmem + N;                     // 3 * THREADS
    char* sel = (char*)(shmem + N + 3 * THREADS);  // N
    const int rep = blockIdx.x;
    if (rep >= R) return;
    const int tid = threadIdx.x;
    const double* v = v_all + (long long)rep * N;
    const double* rv = r_all + (long long)rep * N;
    unsigned char* m = mask + (long long)rep * N;
    const double v0 = v0_all[rep];

    // hi = max(max_i r_i, 0)
    double local_max = 0.0;
    for (int i = tid; i < N; i += THREADS) local_max = rv[i] > local_max ? rv[i] : local_max;
    red[tid] = local_max;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (tid < s && red[tid + s] > red[tid]) red[tid] = red[tid + s];
        __syncthreads();
    }
    double hi = red[0];
    __syncthreads();

    double sums[3];
    int count = 0;
    // start: best = select(0), lo = R(best)
    select_top_k(v, rv, 0.0, N, K, score, sel, red, sums, &count);
    double best_rev = count > 0 ? sums[2] / (v0 + sums[1]) : 0.0;
    for (int i = tid; i < N; i += THREADS) m[i] = (unsigned char)sel[i];
    double lo = best_rev;

    for (int it = 0; it < max_iter; ++it) {
        const double scale = hi > 1.0 ? hi : 1.0;
        if (hi - lo <= tol * scale) break;
        const double z = 0.5 * (lo + hi);
        select_top_k(v, rv, z, N, K, score, sel, red, sums, &count);
        if (count > 0 && sums[0] >= v0 * z) {
            const double rv_s = sums[2] / (v0 + sums[1]);
            if (rv_s > best_rev) {
                best_rev = rv_s;
                for (int i = tid; i < N; i += THREADS) m[i] = (unsigned char)sel[i];
            }
            lo = z > rv_s ? z : rv_s;
        } else {
            hi = z;
        }
    }
    for (int it = 0; it < max_polish; ++it) {
        select_top_k(v, rv, best_rev, N, K, score, sel, red, sums, &count);
        if (count == 0) break;
        const double rv_s = sums[2] / (v0 + sums[1]);
        if (rv_s <= best_rev * (1.0 + 1e-15) + 1e-300) break;
        best_rev = rv_s;
        for (int i = tid; i < N; i += THREADS) m[i] = (unsigned char)sel[i];
    }
    if (tid == 0) revenue[rep] = best_rev;
}
