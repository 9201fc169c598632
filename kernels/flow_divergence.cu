// Velocity MLP with its exact Jacobian trace in one forward-mode pass, and the Euler integrator
// of the likelihood ODE built on it; chapter 07 (Flow and Divergence Matching, Huang et al., ICML 2025).
//
// Network (the contract of icml25.flow_divergence.VelocityMLP, act = SiLU):
//   z = [x, t] (d+1,) -> Linear -> SiLU -> ... -> Linear -> v (d,)   (L >= 1 Linear layers, no
//   activation after the last). Forward-mode: the input carries the d unit tangents e_1..e_d
//   (the t row carries 0); a Linear maps the tangent matrix T (in, d) to W T, SiLU scales row j by
//   silu'(a_j) = s_j (1 + a_j (1 - s_j)), s = sigmoid(a). At the output T = dv/dx (d, d) and
//   div = trace(T).
//
// Packed weights (float32, built by kernels/flow_divergence.py::pack_params):
//   layer l (0..L-1) starts at params[offsets[l]]: Wt (in_l, out_l) row-major with
//   Wt[i * out_l + j] = W_l[j, i] (transposed so that threads over j read consecutive floats),
//   followed by the bias b_l (out_l,). widths (L+1,) = [d+1, hidden..., d].
//
// Block layout (one block per group of S samples, S = samples_per_block; grid-stride over groups;
// blockDim any multiple of 32):
//   shared memory holds two "column buffers" of C x LD floats, C = S * NCOLS (column c at offset
//   c * LD). Sample s of the group owns columns s*NCOLS .. s*NCOLS + NCOLS-1: its values, its d
//   tangent columns, then zero padding (NCOLS = d+1 rounded up to a multiple of TILE; LD = max
//   layer width). The weights are shared by all samples, so a layer is one product
//   W [columns of all S samples]: every weight read from L1/L2 feeds TILE FMAs, and S samples
//   share the block's weight traffic. Then x (S, d), t (S,) and the divergence integrals (S,):
//     shared floats = 2 * S * NCOLS * LD + S * (d + 2)   (bytes: 4x; the launcher opts in above 48 KiB).
//   A layer: work item e -> (row j = e % out, column tile c0 = (e / out) * TILE) computes
//   TILE dot products of length `in`; the bias goes to value columns only (c0 % NCOLS == 0,
//   u == 0); then one thread per (sample, row j) applies SiLU to the value and scales that
//   sample's other columns by silu'. Padded columns start at zero and stay zero (W 0 = 0, no
//   bias, 0 * silu' = 0). Slots of a group past the last sample (B not a multiple of S) compute
//   on x = 0, t = 0 and write nothing.
//
// Kernels:
//   mlp_velocity_divergence_kernel(params, offsets, widths, L, x (B,d), t (B,), v (B,d), div (B,),
//                                  B, d, NCOLS, LD, S)
//   euler_log_likelihood_kernel(params, offsets, widths, L, x1 (B,d), n_steps, x0 (B,d),
//                               div_int (B,), logp (B,), B, d, NCOLS, LD, S)
//     Reverse-time explicit Euler from t = 1 to t = 0, h = 1/n_steps, t_k = 1 - k h:
//       div_int += h * div v(x, t_k);  x -= h * v(x, t_k)      (k = 0..n_steps-1)
//     logp = log N(x0; 0, I) - div_int  (log p_1(x1) = log p_0(x0) - int_0^1 div v dt).
//     All steps run inside one launch: samples are independent, so no grid-wide barrier is
//     needed between steps and x never leaves shared memory.

#define TILE 4

extern "C" {

// Writes, for each sample s of the group, [x_s, t_s] into its value column (rows 0..d) and the
// unit tangents into its columns 1..d; zero elsewhere in rows 0..d (row d is the t input, whose
// tangent is 0). xs is (S, d), ts is (S,).
__device__ void fdm_set_input(float* cur, const float* xs, const float* ts, int d, int ncols, int ld,
                              int nsamp) {
    const int rows = d + 1;
    for (int idx = threadIdx.x; idx < nsamp * ncols * rows; idx += blockDim.x) {
        const int c = idx / rows, i = idx % rows;
        const int s = c / ncols, k = c % ncols;
        float val;
        if (k == 0) val = (i < d) ? xs[s * d + i] : ts[s];
        else val = (k <= d && i == k - 1) ? 1.0f : 0.0f;
        cur[c * ld + i] = val;
    }
}

// Runs the L layers on the column buffer `cur` (input set by fdm_set_input), using `nxt` as the
// other buffer; returns the buffer holding the output: column s*NCOLS = v of sample s, column
// s*NCOLS + k = dv/dx_k of sample s. Must be called by all threads of the block; ends with a
// __syncthreads.
__device__ float* fdm_forward(const float* __restrict__ params, const int* __restrict__ offsets,
                              const int* __restrict__ widths, int n_layers, float* cur, float* nxt,
                              int ncols, int ld, int nsamp) {
    const int ntiles = nsamp * ncols / TILE;
    for (int l = 0; l < n_layers; ++l) {
        const int nin = widths[l], nout = widths[l + 1];
        const float* Wt = params + offsets[l];
        const float* bias = Wt + (size_t)nin * nout;
        for (int e = threadIdx.x; e < nout * ntiles; e += blockDim.x) {
            const int j = e % nout;
            const int c0 = (e / nout) * TILE;
            float acc[TILE];
#pragma unroll
            for (int u = 0; u < TILE; ++u) acc[u] = 0.0f;
            for (int i = 0; i < nin; ++i) {
                const float w = Wt[(size_t)i * nout + j];
#pragma unroll
                for (int u = 0; u < TILE; ++u) acc[u] = fmaf(w, cur[(c0 + u) * ld + i], acc[u]);
            }
            if (c0 % ncols == 0) acc[0] += bias[j];  // value column of a sample
#pragma unroll
            for (int u = 0; u < TILE; ++u) nxt[(c0 + u) * ld + j] = acc[u];
        }
        __syncthreads();
        if (l < n_layers - 1) {
            for (int e = threadIdx.x; e < nsamp * nout; e += blockDim.x) {
                const int s = e / nout, j = e % nout;
                float* col = nxt + (size_t)s * ncols * ld + j;  // sample s, row j, column 0
                const float a = col[0];
                const float sg = 1.0f / (1.0f + expf(-a));
                const float ds = sg * (1.0f + a * (1.0f - sg));  // silu'(a)
                for (int k = 1; k < ncols; ++k) col[k * ld] *= ds;
                col[0] = a * sg;  // silu(a)
            }
            __syncthreads();
        }
        float* tmp = cur;
        cur = nxt;
        nxt = tmp;
    }
    return cur;
}

// trace of sample s's Jacobian in the output buffer
__device__ __forceinline__ float fdm_trace(const float* out, int s, int d, int ncols, int ld) {
    const float* base = out + (size_t)s * ncols * ld;
    float tr = 0.0f;
    for (int j = 0; j < d; ++j) tr += base[(j + 1) * ld + j];
    return tr;
}

__global__ void mlp_velocity_divergence_kernel(const float* __restrict__ params,
                                               const int* __restrict__ offsets,
                                               const int* __restrict__ widths, int n_layers,
                                               const float* __restrict__ x, const float* __restrict__ t,
                                               float* __restrict__ v, float* __restrict__ div,
                                               int B, int d, int ncols, int ld, int nsamp) {
    extern __shared__ float smem[];
    float* bufA = smem;
    float* bufB = bufA + (size_t)nsamp * ncols * ld;
    float* xs = bufB + (size_t)nsamp * ncols * ld;  // (S, d)
    float* ts = xs + nsamp * d;                      // (S,)
    const int n_groups = (B + nsamp - 1) / nsamp;
    for (int g = blockIdx.x; g < n_groups; g += gridDim.x) {
        const int b0 = g * nsamp;
        for (int i = threadIdx.x; i < nsamp * d; i += blockDim.x) {
            const int b = b0 + i / d;
            xs[i] = b < B ? x[(size_t)b * d + i % d] : 0.0f;
        }
        for (int s = threadIdx.x; s < nsamp; s += blockDim.x) ts[s] = b0 + s < B ? t[b0 + s] : 0.0f;
        __syncthreads();
        fdm_set_input(bufA, xs, ts, d, ncols, ld, nsamp);
        __syncthreads();
        const float* out = fdm_forward(params, offsets, widths, n_layers, bufA, bufB, ncols, ld, nsamp);
        for (int i = threadIdx.x; i < nsamp * d; i += blockDim.x) {
            const int s = i / d, j = i % d;
            if (b0 + s < B) v[(size_t)(b0 + s) * d + j] = out[(size_t)s * ncols * ld + j];
        }
        for (int s = threadIdx.x; s < nsamp; s += blockDim.x)
            if (b0 + s < B) div[b0 + s] = fdm_trace(out, s, d, ncols, ld);
        __syncthreads();  // before the next group overwrites xs and the buffers
    }
}

__global__ void euler_log_likelihood_kernel(const float* __restrict__ params,
                                            const int* __restrict__ offsets,
                                            const int* __restrict__ widths, int n_layers,
                                            const float* __restrict__ x1, int n_steps,
                                            float* __restrict__ x0, float* __restrict__ div_int,
                                            float* __restrict__ logp, int B, int d, int ncols, int ld,
                                            int nsamp) {
    extern __shared__ float smem[];
    float* bufA = smem;
    float* bufB = bufA + (size_t)nsamp * ncols * ld;
    float* xs = bufB + (size_t)nsamp * ncols * ld;  // (S, d)
    float* ts = xs + nsamp * d;                      // (S,): the current time, same for all
    float* acc = ts + nsamp;                         // (S,): the divergence integrals
    const float h = (float)(1.0 / (double)n_steps);
    const int n_groups = (B + nsamp - 1) / nsamp;
    for (int g = blockIdx.x; g < n_groups; g += gridDim.x) {
        const int b0 = g * nsamp;
        for (int i = threadIdx.x; i < nsamp * d; i += blockDim.x) {
            const int b = b0 + i / d;
            xs[i] = b < B ? x1[(size_t)b * d + i % d] : 0.0f;
        }
        for (int s = threadIdx.x; s < nsamp; s += blockDim.x) acc[s] = 0.0f;
        for (int k = 0; k < n_steps; ++k) {
            const float tk = (float)(1.0 - (double)k / (double)n_steps);
            for (int s = threadIdx.x; s < nsamp; s += blockDim.x) ts[s] = tk;
            __syncthreads();
            fdm_set_input(bufA, xs, ts, d, ncols, ld, nsamp);
            __syncthreads();
            const float* out = fdm_forward(params, offsets, widths, n_layers, bufA, bufB, ncols, ld, nsamp);
            for (int s = threadIdx.x; s < nsamp; s += blockDim.x) acc[s] += h * fdm_trace(out, s, d, ncols, ld);
            for (int i = threadIdx.x; i < nsamp * d; i += blockDim.x)
                xs[i] -= h * out[(size_t)(i / d) * ncols * ld + i % d];
            __syncthreads();  // x updated and `out` read before the next step rewrites the buffers
        }
        for (int i = threadIdx.x; i < nsamp * d; i += blockDim.x) {
            const int b = b0 + i / d;
            if (b < B) x0[(size_t)b * d + i % d] = xs[i];
        }
        for (int s = threadIdx.x; s < nsamp; s += blockDim.x) {
            if (b0 + s >= B) continue;
            float sq = 0.0f;
            for (int j = 0; j < d; ++j) sq += xs[s * d + j] * xs[s * d + j];
            div_int[b0 + s] = acc[s];
            logp[b0 + s] = -0.5f * sq - 0.91893853320467274f * (float)d - acc[s];  // 0.9189... = log(2 pi) / 2
        }
        __syncthreads();
    }
}

}  // extern "C"
