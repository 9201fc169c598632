// PARS (chapter 15), kernels/pars_kernels.cu: the fused ensemble layer, the TD target and the infeasible-action sampler.
//
// Contract (ensemble_layer): x float32 (E, B, I), W float32 (E, I, H), b float32 (E, H), g and
// beta float32 (E, H) (LayerNorm gain and shift), use_ln in {0, 1}.  For each member e and row b
//     z[h] = b[e, h] + sum_i x[e, b, i] W[e, i, h]
//     y[e, b, h] = relu(LN(z)[h])   with LN(z) = g (z - mean z) / sqrt(var z + eps) + beta
// (var the biased variance over h, as torch.nn.functional.layer_norm), or relu(z) when use_ln == 0.
// One block per (e, b) row, threads over h; the mean and variance are block reductions in shared
// memory (2 * blockDim.x floats; blockDim.x a power of two).  Reference: torch einsum +
// F.layer_norm (kernels/pars_kernels.py), equal to 1e-4 in float32.
//
// Contract (td_target): q float32 (E, B) target-critic values at (s', a'), members int32 (k,) the
// random subset K, r, d float32 (B,) rewards and true-terminal flags (time-outs are not terminals).
//     y[b] = c r[b] + gamma (1 - d[b]) min_{e in K} q[e, b]
// One thread per b (grid-stride).
//
// Contract (infeasible_actions): out float32 (n,) with n = B * act_dim, row-major (B, act_dim).
// For index i: h = splitmix64(splitmix64(seed) ^ i); sign = h & 1 (1 -> negative);
// u = (h >> 11) 2^-53 in [0, 1); out[i] = (+-) U (1 + u), so every |out[i]| lies in [U, 2U).
// The NumPy reference uses the same hash, so the two paths agree to float32 rounding.

typedef unsigned long long u64;

// splitmix64, the same function as contraction.cu's and icml25.kernels._splitmix64.
__device__ __forceinline__ u64 splitmix64(u64 z) {
    z += 0x9E3779B97F4A7C15ULL;
    z ^= z >> 30; z *= 0xBF58476D1CE4E5B9ULL;
    z ^= z >> 27; z *= 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

// tree sum of buf[0 .. blockDim.x) into buf[0] (blockDim.x a power of two)
__device__ __forceinline__ float block_sum(float* buf) {
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
        __syncthreads();
    }
    float total = buf[0];
    __syncthreads();
    return total;
}

extern "C" __global__ void ensemble_layer(const float* __restrict__ x, const float* __restrict__ W,
                                          const float* __restrict__ bias, const float* __restrict__ g,
                                          const float* __restrict__ beta, float* __restrict__ y,
                                          long long E, long long B, long long I, long long H,
                                          int use_ln, float eps) {
    extern __shared__ float buf[];
    long long row = blockIdx.x;            // row = e * B + b
    if (row >= E * B) return;
    long long e = row / B;
    const float* xr = x + row * I;
    const float* We = W + e * I * H;
    // each thread keeps up to 8 of its features in registers (H <= 8 blockDim.x)
    float z[8];
    int n_mine = 0;
    float part = 0.0f;
    for (long long h = threadIdx.x; h < H; h += blockDim.x) {
        float acc = bias[e * H + h];
        for (long long i = 0; i < I; ++i) acc += xr[i] * We[i * H + h];
        z[n_mine++] = acc;
        part += acc;
    }
    if (use_ln) {
        buf[threadIdx.x] = part;
        __syncthreads();
        float mean = block_sum(buf) / (float)H;
        float sq = 0.0f;
        for (int j = 0; j < n_mine; ++j) { float d = z[j] - mean; sq += d * d; }
        buf[threadIdx.x] = sq;
        __syncthreads();
        float inv = rsqrtf(block_sum(buf) / (float)H + eps);
        int j = 0;
        for (long long h = threadIdx.x; h < H; h += blockDim.x, ++j) {
            float v = g[e * H + h] * (z[j] - mean) * inv + beta[e * H + h];
            y[row * H + h] = v > 0.0f ? v : 0.0f;
        }
    } else {
        int j = 0;
        for (long long h = threadIdx.x; h < H; h += blockDim.x, ++j) {
            y[row * H + h] = z[j] > 0.0f ? z[j] : 0.0f;
        }
    }
}

extern "C" __global__ void td_target(const float* __restrict__ q, const int* __restrict__ members,
                                     const float* __restrict__ r, const float* __restrict__ d,
                                     float* __restrict__ out, long long B, int k, float c, float gamma) {
    for (long long b = (long long)blockIdx.x * blockDim.x + threadIdx.x; b < B;
         b += (long long)gridDim.x * blockDim.x) {
        float m = q[(long long)members[0] * B + b];
        for (int j = 1; j < k; ++j) m = fminf(m, q[(long long)members[j] * B + b]);
        out[b] = c * r[b] + gamma * (1.0f - d[b]) * m;
    }
}

extern "C" __global__ void infeasible_actions(float* __restrict__ out, long long n, u64 seed, float U) {
    u64 mixed = splitmix64(seed);
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        u64 h = splitmix64(mixed ^ (u64)i);
        double u = (double)(h >> 11) * (1.0 / 9007199254740992.0);
        float mag = (float)((double)U * (1.0 + u));
        out[i] = (h & 1ULL) ? -mag : mag;
    }
}
