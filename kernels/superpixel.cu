// Kernels of chapter 09 (P2P): superpixel pooling and group -> pixel masking.
//
// segment_sums: one thread per (image, pixel); for each of the C channels it adds the pixel's
//   value to sums[b, c, g(p)] with atomicAdd, and adds 1 to counts[b, g(p)]. The launcher then
//   divides (empty groups stay 0, as torch's scatter_reduce(mean, include_self=False) leaves them).
// masked_fill: one thread per (image, channel, pixel): out = m[b, g(p)] x + (1 - m[b, g(p)]) fill[c],
//   the fused gather of the group mask and the blend with the fill value (black after
//   normalisation in the paper's code).
// No headers: NVRTC's built-ins only.

extern "C" __global__ void segment_sums(const float* __restrict__ values,   // (B, C, N)
                                        const long long* __restrict__ labels,  // (B, N)
                                        float* __restrict__ sums,           // (B, C, G), zeroed
                                        float* __restrict__ counts,         // (B, G), zeroed
                                        const long long B, const long long C, const long long N,
                                        const long long G) {
    const long long total = B * N;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (long long)blockDim.x * gridDim.x) {
        const long long b = i / N;
        const long long p = i - b * N;
        const long long g = labels[i];
        if (g < 0 || g >= G) continue;  // validated on the host; never written out of bounds
        atomicAdd(&counts[b * G + g], 1.0f);
        for (long long c = 0; c < C; ++c) {
            atomicAdd(&sums[(b * C + c) * G + g], values[(b * C + c) * N + p]);
        }
    }
}

extern "C" __global__ void divide_counts(float* __restrict__ sums, const float* __restrict__ counts,
                                         const long long B, const long long C, const long long G) {
    const long long total = B * C * G;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (long long)blockDim.x * gridDim.x) {
        const long long g = i % G;
        const long long b = i / (C * G);
        const float n = counts[b * G + g];
        sums[i] = n > 0.0f ? sums[i] / n : 0.0f;
    }
}

extern "C" __global__ void masked_fill(const float* __restrict__ x,          // (B, C, N)
                                       const long long* __restrict__ labels,  // (B, N)
                                       const float* __restrict__ m,           // (B, G)
                                       const float* __restrict__ fill,        // (C,)
                                       float* __restrict__ out,               // (B, C, N)
                                       const long long B, const long long C, const long long N,
                                       const long long G) {
    const long long total = B * C * N;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (long long)blockDim.x * gridDim.x) {
        const long long p = i % N;
        const long long bc = i / N;
        const long long c = bc % C;
        const long long b = bc / C;
        const long long g = labels[b * N + p];
        const float w = (g >= 0 && g < G) ? m[b * G + g] : 0.0f;
        out[i] = w * x[i] + (1.0f - w) * fill[c];
    }
}
