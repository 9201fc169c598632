// Safety-polytope kernels (chapter 05, SaP: Chen, As, Krause, ICML 2025).
//
// polytope_violations: the fused per-row part of the SaP loss. Input C = E(H) Phi^T, (N, K)
//   float32 row-major (a GEMM done by cuBLAS), offsets xi (K,), labels y (N,) int32 (1 safe,
//   0 unsafe), margin m, unsafe weight w_u. One warp per row: each lane strides over the K
//   facets, computing v_k = C[i, k] - xi[k]; the warp then reduces
//     safe_hinge[i]   = sum_k max(0, m + v_k)         (used when y = 1)
//     max_v[i]        = max_k v_k, argmax[i] = first k attaining it
//     unsafe_hinge[i] = w_u max(0, m - max_v[i])       (used when y = 0)
//   and lane 0 writes them. loss_row[i] = y ? safe_hinge : unsafe_hinge.
//
// dykstra_project: Euclidean projection of each row of X (N, d) onto the linear polytope
//   {x : Phi x <= xi} (Phi (K, d), E = Id) by cyclic Dykstra over the K half-spaces, n_sweeps
//   sweeps. One thread block per point; threads stride over d. Scratch Y (N, K, d) float32 holds
//   Dykstra's increments (zeroed by the launcher). Per facet k:
//     z = x + y_k;  s = (phi_k . z - xi_k) / |phi_k|^2;  x = z - max(s, 0) phi_k;  y_k = z - x.
//   The dot products are block reductions in shared memory (blockDim.x a power of two <= 1024).
//   sqnorm (K,) holds |phi_k|^2 (computed by the launcher).

extern "C" __global__ void polytope_violations(const float* __restrict__ C, const float* __restrict__ xi,
                                               const int* __restrict__ y, long long N, int K, float margin,
                                               float unsafe_weight, float* __restrict__ safe_hinge,
                                               float* __restrict__ max_v, int* __restrict__ argmax,
                                               float* __restrict__ loss_row) {
    const int lane = threadIdx.x & 31;
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (warp >= N) return;
    const float* row = C + warp * (long long)K;
    float s = 0.0f;
    float best = -3.402823466e38f;
    int best_k = 0x7fffffff;
    for (int k = lane; k < K; k += 32) {
        float v = row[k] - xi[k];
        float h = margin + v;
        s += h > 0.0f ? h : 0.0f;
        if (v > best) { best = v; best_k = k; }
    }
    for (int off = 16; off > 0; off >>= 1) {
        s += __shfl_down_sync(0xffffffffu, s, off);
        float ob = __shfl_down_sync(0xffffffffu, best, off);
        int ok = __shfl_down_sync(0xffffffffu, best_k, off);
        if (ob > best || (ob == best && ok < best_k)) { best = ob; best_k = ok; }
    }
    if (lane == 0) {
        float u = margin - best;
        float uh = unsafe_weight * (u > 0.0f ? u : 0.0f);
        safe_hinge[warp] = s;
        max_v[warp] = best;
        argmax[warp] = best_k;
        loss_row[warp] = y[warp] == 1 ? s : uh;
    }
}

extern "C" __global__ void dykstra_project(const float* __restrict__ X, const float* __restrict__ Phi,
                                           const float* __restrict__ xi, const float* __restrict__ sqnorm,
                                           long long N, int d, int K, int n_sweeps,
                                           float* __restrict__ Y, float* __restrict__ P) {
    extern __shared__ float red[];  // blockDim.x floats
    const long long i = blockIdx.x;
    if (i >= N) return;
    float* x = P + i * (long long)d;
    float* Yi = Y + i * (long long)K * d;
    for (int j = threadIdx.x; j < d; j += blockDim.x) x[j] = X[i * (long long)d + j];
    __syncthreads();
    for (int sweep = 0; sweep < n_sweeps; ++sweep) {
        for (int k = 0; k < K; ++k) {
            const float* phi = Phi + (long long)k * d;
            float* yk = Yi + (long long)k * d;
            float part = 0.0f;
            for (int j = threadIdx.x; j < d; j += blockDim.x) part += phi[j] * (x[j] + yk[j]);
            red[threadIdx.x] = part;
            __syncthreads();
            for (int w = blockDim.x >> 1; w > 0; w >>= 1) {
                if (threadIdx.x < w) red[threadIdx.x] += red[threadIdx.x + w];
                __syncthreads();
            }
            float s = (red[0] - xi[k]) / sqnorm[k];
            s = s > 0.0f ? s : 0.0f;
            __syncthreads();
            for (int j = threadIdx.x; j < d; j += blockDim.x) {
                float z = x[j] + yk[j];
                float nx = z - s * phi[j];
                yk[j] = z - nx;
                x[j] = nx;
            }
            __syncthreads();
        }
    }
}
