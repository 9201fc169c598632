// PepTune (chapter 18): fused MDLM reverse step and the MCTG Pareto reward.
// Compiled by NVRTC through CuPy; no headers.

extern "C" {

// One reverse step of absorbing diffusion (DDPM with caching, Sec. 3.4).
// p_x0: (B, L, V) float32, the denoiser's probabilities (SUBS: p[mask] = 0);
// z_t: (B, L) int32; gumbel: (B, L, V) float32 standard Gumbel noise; out z_s: (B, L) int32.
// Visible tokens are copied; a masked position takes
//   argmax_v  { log(p_v) + log(t - s) + g_v  (v != mask),  log(s) + g_mask }.
// One thread per position. log(0) = -inf never wins over a finite score.
__global__ void reverse_step(const float* __restrict__ p_x0, const int* __restrict__ z_t,
                             const float* __restrict__ gumbel, int* __restrict__ z_s,
                             const long long BL, const int V, const int mask_id,
                             const float log_dt, const float log_s) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= BL) return;
    int z = z_t[i];
    if (z != mask_id) { z_s[i] = z; return; }
    const float* p = p_x0 + i * V;
    const float* g = gumbel + i * V;
    int best = mask_id;
    float best_score = log_s + g[mask_id];
    for (int v = 0; v < V; ++v) {
        if (v == mask_id) continue;
        float pv = p[v];
        if (!(pv > 0.0f)) continue;
        float sc = logf(pv) + log_dt + g[v];
        if (sc > best_score || (sc == best_score && v < best)) { best_score = sc; best = v; }
    }
    z_s[i] = best;
}

// Pareto reward of MCTG (Sec. 3.5): r[i, k] = (1/f) sum_j [S[i, k] >= F[j, k]]; 1 when f = 0.
// Also dominated[i] = 1 when some front member is >= S[i] in every objective and > in one.
// S: (n, K) float32, F: (f, K) float32; one thread per candidate.
__global__ void pareto_reward(const float* __restrict__ S, const float* __restrict__ F,
                              float* __restrict__ R, int* __restrict__ dominated,
                              const int n, const int f, const int K) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float* s = S + (long long)i * K;
    int dom = 0;
    for (int k = 0; k < K; ++k) R[(long long)i * K + k] = 0.0f;
    for (int j = 0; j < f; ++j) {
        const float* q = F + (long long)j * K;
        int all_ge = 1, any_gt = 0;
        for (int k = 0; k < K; ++k) {
            if (s[k] >= q[k]) R[(long long)i * K + k] += 1.0f;
            if (q[k] < s[k]) all_ge = 0;
            if (q[k] > s[k]) any_gt = 1;
        }
        if (all_ge && any_gt) dom = 1;
    }
    for (int k = 0; k < K; ++k) R[(long long)i * K + k] = (f > 0) ? R[(long long)i * K + k] / (float)f : 1.0f;
    dominated[i] = dom;
}

}
