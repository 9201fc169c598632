// kNN search and fused neighbour attention (chapter 08, UniVLG, Jain et al., ICML 2025).
//
// knn_topk: for each query i (N queries, xyz float32 row-major (N,3)) the k nearest reference
// points (float32 (M,3)) inside the query's own scene, i.e. among ref indices [lo[i], hi[i]).
// One thread per query; the block loads tiles of TILE reference points into shared memory
// (the union of its queries' ranges) and each thread keeps a sorted list of its k best
// (squared distance, index) pairs by insertion.  References are scanned in increasing index and
// a candidate is inserted only if strictly closer than the current k-th, after every entry it
// ties with, so ties go to the lower index (the reference's stable sort).  k <= 16.
// Output: idx int64 (N,k), nearest first; dist float32 (N,k) squared distances.
//
// neighbour_attention: for each point i and head h (c = H*dh channels), with neighbours
// j = idx[i,0..k-1] and relative encodings pe[i,j,:] (float32 (N,k,c)),
//   a_ij = softmax_j( q_i,h . (k_j,h + pe_ij,h) / sqrt(dh) ),
//   out_i,h = sum_j a_ij (v_j,h + pe_ij,h).
// One thread per (i, h); q, k, v float32 (N,c) row-major; out float32 (N,c).

#define KNN_TILE 256
#define KNN_MAXK 16

extern "C" __global__ void knn_topk(const float* __restrict__ q, const float* __restrict__ ref,
                                    const long long* __restrict__ lo, const long long* __restrict__ hi,
                                    long long* __restrict__ idx, float* __restrict__ dist,
                                    const long long N, const int k)
{
    __shared__ float sx[KNN_TILE], sy[KNN_TILE], sz[KNN_TILE];
    __shared__ long long blo, bhi;
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const bool active = i < N;
    float qx = 0.f, qy = 0.f, qz = 0.f;
    long long mylo = 0, myhi = 0;
    if (active) { qx = q[3 * i]; qy = q[3 * i + 1]; qz = q[3 * i + 2]; mylo = lo[i]; myhi = hi[i]; }
    if (threadIdx.x == 0) { blo = 0x7fffffffffffffffLL; bhi = 0; }
    __syncthreads();
    if (active) { atomicMin((unsigned long long*)&blo, (unsigned long long)mylo);
                  atomicMax((unsigned long long*)&bhi, (unsigned long long)myhi); }
    __syncthreads();
    float bd[KNN_MAXK];
    long long bi[KNN_MAXK];
    for (int t = 0; t < KNN_MAXK; ++t) { bd[t] = 3.4e38f; bi[t] = -1; }
    for (long long base = blo; base < bhi; base += KNN_TILE) {
        for (int t = threadIdx.x; t < KNN_TILE; t += blockDim.x) {
            long long r = base + t;
            if (r < bhi) { sx[t] = ref[3 * r]; sy[t] = ref[3 * r + 1]; sz[t] = ref[3 * r + 2]; }
        }
        __syncthreads();
        if (active) {
            for (int t = 0; t < KNN_TILE; ++t) {
                long long r = base + t;
                if (r < mylo || r >= myhi) continue;
                float dx = sx[t] - qx, dy = sy[t] - qy, dz = sz[t] - qz;
                float d = dx * dx + dy * dy + dz * dz;
                if (d < bd[k - 1]) {
                    int p = k - 1;
                    while (p > 0 && bd[p - 1] > d) { bd[p] = bd[p - 1]; bi[p] = bi[p - 1]; --p; }
                    bd[p] = d; bi[p] = r;
                }
            }
        }
        __syncthreads();
    }
    if (active) {
        for (int t = 0; t < k; ++t) { idx[i * k + t] = bi[t]; dist[i * k + t] = bd[t]; }
    }
}

extern "C" __global__ void neighbour_attention(const float* __restrict__ q, const float* __restrict__ kf,
                                               const float* __restrict__ v, const long long* __restrict__ idx,
                                               const float* __restrict__ pe, float* __restrict__ out,
                                               const long long N, const int k, const int c, const int heads)
{
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (tid >= N * heads) return;
    const long long i = tid / heads;
    const int h = (int)(tid % heads);
    const int dh = c / heads;
    const float scale = rsqrtf((float)dh);
    float logit[KNN_MAXK];
    float mx = -3.4e38f;
    for (int j = 0; j < k; ++j) {
        const long long n = idx[i * k + j];
        float s = 0.f;
        for (int e = 0; e < dh; ++e) {
            const int ch = h * dh + e;
            s += q[i * c + ch] * (kf[n * c + ch] + pe[(i * k + j) * c + ch]);
        }
        s *= scale;
        logit[j] = s;
        mx = fmaxf(mx, s);
    }
    float z = 0.f;
    for (int j = 0; j < k; ++j) { logit[j] = __expf(logit[j] - mx); z += logit[j]; }
    for (int e = 0; e < dh; ++e) {
        const int ch = h * dh + e;
        float acc = 0.f;
        for (int j = 0; j < k; ++j) {
            const long long n = idx[i * k + j];
            acc += logit[j] * (v[n * c + ch] + pe[(i * k + j) * c + ch]);
        }
        out[i * c + ch] = acc / z;
    }
}
