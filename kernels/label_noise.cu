// Label corruption for predictive consistency learning (chapter 19, Li et al., ICML 2025).
//
// Contract (kernels/label_noise.py holds the PyTorch references these must match):
//
// categorical_corrupt_labels: y (B, P) int32 labels in [0, K), alpha_bar_t (B,) float32,
//   u (B, 2, P) float32 uniforms in [0, 1), out (B, K, P) float32 one-hot. One thread per
//   (b, p): keep the label when u[b, 0, p] < alpha_bar_t[b], else the class floor(u[b, 1, p] K)
//   (clamped to K - 1). P = H W for a segmentation map.
// categorical_corrupt_probs: the same with probabilities probs (B, K, P) float32 in place of
//   labels: when kept, the class is drawn from probs[b, :, p] by the inverse CDF at u[b, 1, p]
//   (the first k whose running sum exceeds u; K - 1 if none), so a one-hot probs row gives the
//   labels kernel's answer. Used for soft re-corruption in multistep inference.
// gaussian_corrupt: y, eps (B, P) float32, alpha_bar_t (B,) -> out = sqrt(a) y + sqrt(1 - a) eps.
// pcl_terms: a, b, y (n,) float32 -> partial (gridDim.x, 3) float64 per-block sums of
//   (a - y)^2, (b - y)^2, (a - b)^2; the host adds the partials (deterministic, no atomics).

// The class a corrupted position takes when its label is not kept: floor(u K), clamped to K - 1.
__device__ __forceinline__ int uniform_class(float cls_u, int K) {
    int c = (int)(cls_u * (float)K);
    return c > K - 1 ? K - 1 : c;
}

// Writes class c of position p of sample b as a one-hot column of out (B, K, P).
__device__ __forceinline__ void write_one_hot(float* __restrict__ out, long long b, long long p, int K,
                                              long long P, int c) {
    for (int k = 0; k < K; ++k) out[(b * K + k) * P + p] = (k == c) ? 1.0f : 0.0f;
}

extern "C" __global__ void categorical_corrupt_labels(const int* __restrict__ y,
                                                      const float* __restrict__ alpha_bar_t,
                                                      const float* __restrict__ u,
                                                      float* __restrict__ out,
                                                      int B, int K, long long P) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long long)B * P) return;
    long long b = idx / P;
    long long p = idx - b * P;
    float keep_u = u[(2 * b) * P + p];
    float cls_u = u[(2 * b + 1) * P + p];
    int c;
    if (keep_u < alpha_bar_t[b]) {
        c = y[idx];
    } else {
        c = uniform_class(cls_u, K);
    }
    write_one_hot(out, b, p, K, P, c);
}

extern "C" __global__ void categorical_corrupt_probs(const float* __restrict__ probs,
                                                     const float* __restrict__ alpha_bar_t,
                                                     const float* __restrict__ u,
                                                     float* __restrict__ out,
                                                     int B, int K, long long P) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long long)B * P) return;
    long long b = idx / P;
    long long p = idx - b * P;
    float keep_u = u[(2 * b) * P + p];
    float cls_u = u[(2 * b + 1) * P + p];
    int c;
    if (keep_u < alpha_bar_t[b]) {
        float acc = 0.0f;
        c = K - 1;
        for (int k = 0; k < K; ++k) {
            acc += probs[(b * K + k) * P + p];
            if (cls_u < acc) { c = k; break; }
        }
    } else {
        c = uniform_class(cls_u, K);
    }
    write_one_hot(out, b, p, K, P, c);
}

extern "C" __global__ void gaussian_corrupt(const float* __restrict__ y, const float* __restrict__ eps,
                                            const float* __restrict__ alpha_bar_t, float* __restrict__ out,
                                            int B, long long P) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long long)B * P) return;
    float a = alpha_bar_t[idx / P];
    out[idx] = sqrtf(a) * y[idx] + sqrtf(1.0f - a) * eps[idx];
}

extern "C" __global__ void pcl_terms(const float* __restrict__ a, const float* __restrict__ b,
                                     const float* __restrict__ y, long long n, double* __restrict__ partial) {
    __shared__ double s[3][256];
    int tid = threadIdx.x;
    double t0 = 0.0, t1 = 0.0, t2 = 0.0;
    for (long long i = (long long)blockIdx.x * blockDim.x + tid; i < n; i += (long long)gridDim.x * blockDim.x) {
        double da = (double)a[i] - (double)y[i];
        double db = (double)b[i] - (double)y[i];
        double dab = (double)a[i] - (double)b[i];
        t0 += da * da;
        t1 += db * db;
        t2 += dab * dab;
    }
    s[0][tid] = t0; s[1][tid] = t1; s[2][tid] = t2;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (tid < stride) {
            s[0][tid] += s[0][tid + stride];
            s[1][tid] += s[1][tid + stride];
            s[2][tid] += s[2][tid + stride];
        }
        __syncthreads();
    }
    if (tid == 0) {
        partial[3 * blockIdx.x] = s[0][0];
        partial[3 * blockIdx.x + 1] = s[1][0];
        partial[3 * blockIdx.x + 2] = s[2][0];
    }
}
