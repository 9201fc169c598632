// Kernels of chapter 04 (generative intervention models), each the fast path of a CPU reference in
// kernels/gim_kernels.py. No CUDA headers: NVRTC built-ins only.
//
// context_loglik_{f32,f64}: the Gaussian log-likelihood of K contexts under S shift interventions
//   each, from per-context sufficient statistics of the residuals R = X - f(X) (n cells a context):
//     ll[k, s] = sum_j [ -(SR2[k,j] - 2 u SR[k,j] + n u^2) / (2 sigma_j^2) - n log sigma_j ]
//                - n d log(2 pi) / 2,                 u = shift[k, s, j] = I[k,s,j] psi[k,s,j].
//   Inputs: SR, SR2 (K, d), shift (K, S, d), sigma (d,), row-major. Output ll (K, S).
//   One thread per (k, s); it loops over the d variables.
//
// mmd_sums_{f32,f64}: the three RBF-kernel block sums of C pairs of samples,
//     out[c, 0] = sum_{i,i'} k(x_i, x_i'),  out[c, 1] = sum_{j,j'} k(y_j, y_j'),
//     out[c, 2] = sum_{i,j} k(x_i, y_j),    k(a, b) = exp(-|a - b|^2 / (2 h^2)),
//   X (C, n, d), Y (C, m, d), row-major; out (C, 3) float64. Grid (C, 3): one block per context and
//   block sum; the block stages tiles of 64 rows of the right-hand sample in shared memory (d <= 64),
//   each thread owns left rows i = tid, tid + blockDim, ... and accumulates in double; a shared-memory
//   tree reduction writes the block's sum. blockDim.x must be 256.

#define GIM_TILE 64
#define GIM_MAXD 64
#define GIM_THREADS 256

template <typename T>
__device__ void context_loglik_impl(const T* SR, const T* SR2, const T* shift, const T* sigma, int K, int S,
                                    int d, int n, T* ll) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= K * S) return;
    int k = idx / S;
    const T* u = shift + (long long)idx * d;
    const T* sr = SR + (long long)k * d;
    const T* sr2 = SR2 + (long long)k * d;
    T acc = (T)0;
    for (int j = 0; j < d; ++j) {
        T s = sigma[j];
        T q = sr2[j] - (T)2 * u[j] * sr[j] + (T)n * u[j] * u[j];
        acc += -q / ((T)2 * s * s) - (T)n * log(s);
    }
    ll[idx] = acc - (T)0.5 * (T)n * (T)d * (T)1.8378770664093454836;  // log(2 pi)
}

template <typename T>
__device__ void mmd_sums_impl(const T* X, const T* Y, int n, int m, int d, T h, double* out) {
    __shared__ T tile[GIM_TILE * GIM_MAXD];
    __shared__ double red[GIM_THREADS];
    int c = blockIdx.x, which = blockIdx.y, tid = threadIdx.x;
    const T* A = (which == 1) ? Y + (long long)c * m * d : X + (long long)c * n * d;  // left sample
    const T* B = (which == 0) ? X + (long long)c * n * d : Y + (long long)c * m * d;  // right sample
    int na = (which == 1) ? m : n;
    int nb = (which == 0) ? n : m;
    double inv = 1.0 / (2.0 * (double)h * (double)h);
    double acc = 0.0;
    for (int start = 0; start < nb; start += GIM_TILE) {
        int rows = min(GIM_TILE, nb - start);
        __syncthreads();
        for (int e = tid; e < rows * d; e += blockDim.x) tile[e] = B[(long long)start * d + e];
        __syncthreads();
        for (int i = tid; i < na; i += blockDim.x) {
            const T* a = A + (long long)i * d;
            for (int r = 0; r < rows; ++r) {
                double dist = 0.0;
                for (int t = 0; t < d; ++t) {
                    double diff = (double)a[t] - (double)tile[r * d + t];
                    dist += diff * diff;
                }
                acc += exp(-dist * inv);
            }
        }
    }
    red[tid] = acc;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (tid < stride) red[tid] += red[tid + stride];
        __syncthreads();
    }
    if (tid == 0) out[c * 3 + which] = red[0];
}

extern "C" {

__global__ void context_loglik_f32(const float* SR, const float* SR2, const float* shift, const float* sigma,
                                   int K, int S, int d, int n, float* ll) {
    context_loglik_impl<float>(SR, SR2, shift, sigma, K, S, d, n, ll);
}

__global__ void context_loglik_f64(const double* SR, const double* SR2, const double* shift, const double* sigma,
                                   int K, int S, int d, int n, double* ll) {
    context_loglik_impl<double>(SR, SR2, shift, sigma, K, S, d, n, ll);
}

__global__ void mmd_sums_f32(const float* X, const float* Y, int n, int m, int d, float h, double* out) {
    mmd_sums_impl<float>(X, Y, n, m, d, h, out);
}

__global__ void mmd_sums_f64(const double* X, const double* Y, int n, int m, int d, double h, double* out) {
    mmd_sums_impl<double>(X, Y, n, m, d, h, out);
}

}  // extern "C"
