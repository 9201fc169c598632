// AdaEnt landscape test and grid soft values (chapter 17, "When Maximum Entropy Misleads Policy
// Optimization", Zhang, Chang and Gao, ICML 2025).
//
// adaent_similarity: one block per state b (gridDim.x = B), blockDim.x a power of two <= 1024.
//   in : q_soft (B, M) float32 row-major, q_plain (B, M) float32 row-major: the soft and the plain
//        critic (min of each pair) at M actions sampled from the policy at state b.
//   out: cos_out (B,) float32: cosine similarity of the two rows after each row's minimum is
//        subtracted, dot / max(|x| |y|, 1e-8) (1e-8 guards a flat row, whose cosine is then 0);
//        mask_out (B,) int32: 1 where cos < threshold (the actor uses the plain critic there).
//   Each thread strides over the row: first a min reduction of both rows, then the three sums
//   x.y, x.x, y.y in shared memory (fixed tree order: deterministic).
//
// grid_soft_value: one block per row b (gridDim.x = B).
//   in : Q (B, A) float64, alpha >= 0, log_da = log of the grid spacing.
//   out: V (B,) float64, alpha * log(sum_a exp(Q[b, a] / alpha) da) computed as
//        m + alpha * (log(sum exp((Q - m) / alpha)) + log_da), m the row max; alpha == 0 gives m.

extern "C" {

__global__ void adaent_similarity(const float* __restrict__ q_soft, const float* __restrict__ q_plain,
                                  long long B, long long M, float threshold,
                                  float* __restrict__ cos_out, int* __restrict__ mask_out) {
    extern __shared__ float sh[];          // 3 * blockDim.x floats
    float* s0 = sh;
    float* s1 = sh + blockDim.x;
    float* s2 = sh + 2 * blockDim.x;
    long long b = blockIdx.x;
    if (b >= B) return;
    const float* x = q_soft + b * M;
    const float* y = q_plain + b * M;
    float mx = 3.402823466e38f, my = 3.402823466e38f;
    for (long long j = threadIdx.x; j < M; j += blockDim.x) {
        mx = fminf(mx, x[j]);
        my = fminf(my, y[j]);
    }
    s0[threadIdx.x] = mx;
    s1[threadIdx.x] = my;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            s0[threadIdx.x] = fminf(s0[threadIdx.x], s0[threadIdx.x + s]);
            s1[threadIdx.x] = fminf(s1[threadIdx.x], s1[threadIdx.x + s]);
        }
        __syncthreads();
    }
    mx = s0[0];
    my = s1[0];
    __syncthreads();
    float dxy = 0.f, dxx = 0.f, dyy = 0.f;
    for (long long j = threadIdx.x; j < M; j += blockDim.x) {
        float u = x[j] - mx, v = y[j] - my;
        dxy += u * v;
        dxx += u * u;
        dyy += v * v;
    }
    s0[threadIdx.x] = dxy;
    s1[threadIdx.x] = dxx;
    s2[threadIdx.x] = dyy;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            s0[threadIdx.x] += s0[threadIdx.x + s];
            s1[threadIdx.x] += s1[threadIdx.x + s];
            s2[threadIdx.x] += s2[threadIdx.x + s];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        float denom = fmaxf(sqrtf(s1[0]) * sqrtf(s2[0]), 1e-8f);
        float c = s0[0] / denom;
        cos_out[b] = c;
        mask_out[b] = c < threshold ? 1 : 0;
    }
}

__global__ void grid_soft_value(const double* __restrict__ Q, long long B, long long A, double alpha,
                                double log_da, double* __restrict__ V) {
    extern __shared__ double shd[];        // blockDim.x doubles
    long long b = blockIdx.x;
    if (b >= B) return;
    const double* q = Q + b * A;
    double m = -1.7976931348623157e308;
    for (long long j = threadIdx.x; j < A; j += blockDim.x) m = fmax(m, q[j]);
    shd[threadIdx.x] = m;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) shd[threadIdx.x] = fmax(shd[threadIdx.x], shd[threadIdx.x + s]);
        __syncthreads();
    }
    m = shd[0];
    __syncthreads();
    if (alpha == 0.0) {
        if (threadIdx.x == 0) V[b] = m;
        return;
    }
    double acc = 0.0;
    for (long long j = threadIdx.x; j < A; j += blockDim.x) acc += exp((q[j] - m) / alpha);
    shd[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) shd[threadIdx.x] += shd[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) V[b] = m + alpha * (log(shd[0]) + log_da);
}

}  // extern "C"
