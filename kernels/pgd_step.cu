// Kernels of chapter 03 (Yang et al., "Variance as a Catalyst", ICML 2025): the PGD step of a
// protective perturbation and the per-image posterior statistics its trace records.
//
// pgd_step (elementwise, one thread per pixel value, grid-stride loop):
//   in:  delta[n], grad[n], x[n] (float32, same layout), eps, alpha (float32), n
//   out: out[n] = clip(clip(delta + alpha * sign(grad), -eps, eps), -x, 1 - x)
//   sign(0) = 0; the same float32 operations in the same order as the torch reference, so the
//   result is bitwise equal.
//
// posterior_stats (one block per image b, blockDim threads, shared-memory tree reduction in double):
//   in:  logvar[B * n_lat] (clamped log sigma^2), g1[B * n_pix], g2[B * n_pix] (two gradients
//        w.r.t. the same pixels, e.g. grad L and grad V), has_g2 (0/1), lo, hi (the clamp)
//   out: stats[B * 4] (double): V_b = sum exp(logvar), S_b = sum 0.5 * logvar (= sum log sigma),
//        the number of entries with logvar <= lo or logvar >= hi (clamped), and the number of
//        pixels with sign(g1) == sign(g2) (0 when has_g2 == 0).

extern "C" {

__device__ __forceinline__ float sgnf(float g) {
    return (g > 0.0f) ? 1.0f : ((g < 0.0f) ? -1.0f : 0.0f);
}

__global__ void pgd_step(const float* __restrict__ delta, const float* __restrict__ grad,
                         const float* __restrict__ x, const float eps, const float alpha,
                         float* __restrict__ out, const long long n) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        float d = delta[i] + alpha * sgnf(grad[i]);
        d = fminf(fmaxf(d, -eps), eps);
        const float xi = x[i];
        d = fminf(fmaxf(d, -xi), 1.0f - xi);
        out[i] = d;
    }
}

__global__ void posterior_stats(const float* __restrict__ logvar, const float* __restrict__ g1,
                                const float* __restrict__ g2, const int has_g2,
                                const long long n_lat, const long long n_pix,
                                const float lo, const float hi, double* __restrict__ stats) {
    extern __shared__ double sh[];               // 4 * blockDim.x doubles
    const int t = threadIdx.x;
    const long long b = blockIdx.x;
    double v = 0.0, s = 0.0, c = 0.0, a = 0.0;
    const float* lv = logvar + b * n_lat;
    for (long long j = t; j < n_lat; j += blockDim.x) {
        const float l = lv[j];
        v += exp((double)l);
        s += 0.5 * (double)l;
        c += (l <= lo || l >= hi) ? 1.0 : 0.0;
    }
    if (has_g2) {
        const float* p = g1 + b * n_pix;
        const float* q = g2 + b * n_pix;
        for (long long j = t; j < n_pix; j += blockDim.x) {
            a += (sgnf(p[j]) == sgnf(q[j])) ? 1.0 : 0.0;
        }
    }
    sh[t] = v;
    sh[blockDim.x + t] = s;
    sh[2 * blockDim.x + t] = c;
    sh[3 * blockDim.x + t] = a;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w >>= 1) {
        if (t < w) {
            for (int k = 0; k < 4; ++k) sh[k * blockDim.x + t] += sh[k * blockDim.x + t + w];
        }
        __syncthreads();
    }
    if (t == 0) {
        for (int k = 0; k < 4; ++k) stats[b * 4 + k] = sh[k * blockDim.x];
    }
}

}  // extern "C"
