// Batched (sub)gradient descent for sparse recovery, chapter 16 (Tikeng Notsawo et al., ICML 2025).
//
// Contract of grok_steps (one thread block per configuration b = 0..B-1, float64 throughout):
//   inputs   X       (N, n) row-major, or (B, N, n) when x_batched != 0: measurement matrix
//            y       (B, N) targets, a_star (B, n) the sparse signal (for the recovery error)
//            P       (n, N) or (B, n, N): X^T (X X^T)^{-1}, read only when method == 2 (projection)
//            alpha, beta1, beta2 (B,): step size and l1 / l2 penalty weights of each configuration
//            steps, eval_every (>= 1), method: 0 subgradient, 1 ISTA (soft-threshold), 2 projected
//            l0_threshold: an entry counts as non-zero when |a_i| > l0_threshold
//   in/out   a       (B, n): the iterate, updated in place for `steps` steps
//   output   rec     (T, B, 5), T = steps / eval_every + 1, row t holds the state after t*eval_every
//            steps: [||Xa-y||/||y||, ||a-a*||/||a*||, #{|a_i|>thr}, ||a||_1, ||a||_2]
//   One step (same order of operations as kernels/grokking.py::grok_steps_reference):
//     R = X a - y;  G = X^T R
//     method 0/2: a <- a - alpha (G + beta2 a + beta1 sign(a))
//     method 1  : a <- soft(a - alpha (G + beta2 a), alpha beta1)
//     method 2  : then a <- a - P (X a - y)
//   Threads: thread j < N computes residual j (a dot product of length n), thread i < n updates
//   coordinate i; the error norms are block reductions in shared memory every eval_every steps.
// Shared memory (dynamic): a (n) + R (N) + scratch (blockDim.x) doubles.

extern "C" {

__device__ __forceinline__ double sgn(double v) { return (v > 0.0) - (v < 0.0); }

__device__ void residual(const double* __restrict__ Xb, const double* __restrict__ yb,
                         const double* a, double* R, int N, int n) {
    for (int j = threadIdx.x; j < N; j += blockDim.x) {
        double acc = 0.0;
        const double* row = Xb + (size_t)j * n;
        for (int i = 0; i < n; ++i) acc += row[i] * a[i];
        R[j] = acc - yb[j];
    }
}

__device__ void record(const double* a, const double* R, const double* __restrict__ yb,
                       const double* __restrict__ sb, double* scratch, double* out,
                       int N, int n, double thr) {
    double r2 = 0.0, y2 = 0.0, e2 = 0.0, s2 = 0.0, l0 = 0.0, l1 = 0.0, a2 = 0.0;
    for (int j = threadIdx.x; j < N; j += blockDim.x) { r2 += R[j] * R[j]; y2 += yb[j] * yb[j]; }
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        double d = a[i] - sb[i];
        e2 += d * d; s2 += sb[i] * sb[i];
        l0 += fabs(a[i]) > thr ? 1.0 : 0.0; l1 += fabs(a[i]); a2 += a[i] * a[i];
    }
    double vals[7] = {r2, y2, e2, s2, l0, l1, a2};
    for (int k = 0; k < 7; ++k) {
        scratch[threadIdx.x] = vals[k];
        __syncthreads();
        for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
            if (threadIdx.x < stride) scratch[threadIdx.x] += scratch[threadIdx.x + stride];
            __syncthreads();
        }
        vals[k] = scratch[0];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        out[0] = sqrt(vals[0]) / sqrt(vals[1]);
        out[1] = sqrt(vals[2]) / sqrt(vals[3]);
        out[2] = vals[4];
        out[3] = vals[5];
        out[4] = sqrt(vals[6]);
    }
    __syncthreads();
}

// blockDim.x must be a power of two (the launcher uses 128).
__global__ void grok_steps(const double* __restrict__ X, const double* __restrict__ y,
                           const double* __restrict__ a_star, const double* __restrict__ P,
                           double* a_io, const double* __restrict__ alpha,
                           const double* __restrict__ beta1, const double* __restrict__ beta2,
                           double* rec, int B, int N, int n, int steps, int eval_every,
                           int method, int x_batched, double l0_threshold) {
    extern __shared__ double smem[];
    const int b = blockIdx.x;
    if (b >= B) return;
    double* a = smem;
    double* R = smem + n;
    double* scratch = R + N;
    const double* Xb = X + (x_batched ? (size_t)b * N * n : 0);
    const double* Pb = P + (x_batched ? (size_t)b * n * N : 0);
    const double* yb = y + (size_t)b * N;
    const double* sb = a_star + (size_t)b * n;
    const double al = alpha[b], b1 = beta1[b], b2 = beta2[b];
    const int T = steps / eval_every + 1;

    for (int i = threadIdx.x; i < n; i += blockDim.x) a[i] = a_io[(size_t)b * n + i];
    __syncthreads();
    residual(Xb, yb, a, R, N, n);
    __syncthreads();
    record(a, R, yb, sb, scratch, rec + (size_t)b * 5, N, n, l0_threshold);

    for (int t = 1; t <= steps; ++t) {
        // R = X a - y is current here (computed after the previous update).
        for (int i = threadIdx.x; i < n; i += blockDim.x) {
            double g = 0.0;
            for (int j = 0; j < N; ++j) g += Xb[(size_t)j * n + i] * R[j];
            double ai = a[i];
            if (method == 1) {
                double v = ai - al * (g + b2 * ai);
                double m = fabs(v) - al * b1;
                a[i] = m > 0.0 ? sgn(v) * m : 0.0;
            } else {
                a[i] = ai - al * (g + b2 * ai + b1 * sgn(ai));
            }
        }
        __syncthreads();
        residual(Xb, yb, a, R, N, n);
        __syncthreads();
        if (method == 2) {
            for (int i = threadIdx.x; i < n; i += blockDim.x) {
                double c = 0.0;
                for (int j = 0; j < N; ++j) c += Pb[(size_t)i * N + j] * R[j];
                a[i] -= c;
            }
            __syncthreads();
            residual(Xb, yb, a, R, N, n);
            __syncthreads();
        }
        if (t % eval_every == 0) {
            const int k = t / eval_every;
            if (k < T) record(a, R, yb, sb, scratch, rec + ((size_t)k * B + b) * 5, N, n, l0_threshold);
        }
    }
    for (int i = threadIdx.x; i < n; i += blockDim.x) a_io[(size_t)b * n + i] = a[i];
}

}  // extern "C"
