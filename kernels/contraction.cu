// Batched random edge contraction (Karger trials) as a random minimum spanning forest.
//
// Contract: R independent trials on one undirected simple graph with n vertices and m edges
// (eu[e], ev[e]), 0 <= eu, ev < n, int32.  Trial r gives every edge an exponential clock
//     key[r, e] = -log(u[r, e]) / wc[e],   u[r, e] uniform in (0, 1)        (exp_clock_keys)
// and contracts edges in increasing key order, skipping edges inside a super-vertex, until
// `stop_at` super-vertices remain (Kruskal order = sequential contraction with probability
// proportional to wc, by memorylessness).  The accepted edges are exactly the minimum spanning
// forest (MSF) of the keys minus its (stop_at - #components) largest-key edges, so one trial is
//   (1) Boruvka MSF of the keys                                         (contract_by_keys)
//   (2) drop the largest forest edges, (3) label the components of what is left.
// Edges are ordered by the pair (key, edge id): float32 keys are non-negative, so their bit
// patterns compare like the floats, and packing (key bits << 32 | e) into one 64-bit word gives
// a strict total order that atomicMin / atomicMax respect.  The CPU reference in contraction.py
// uses the same order, so given the same keys the partitions agree exactly.
//
// Uniforms come from a counter-based hash (splitmix64 of (seed, r * m + e)), no curand: the
// NumPy reference computes the same 53-bit uniforms bit for bit.
//
// Layouts: keys float32 (R, m) row-major; labels int32 (R, n): the smallest vertex id of each
// vertex's component (canonical, so CPU and GPU labels compare with ==); cut float64 (R,).
// One thread block per trial in contract_by_keys; scratch arrays are global, one slice per trial.

typedef unsigned long long u64;

__device__ __forceinline__ u64 splitmix64(u64 x) {
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

// key[r, e] = float32(-log(u) / wc[e]) with u = ((h >> 11) + 0.5) * 2^-53, h = splitmix64(
// splitmix64(seed) ^ (trial_offset + r) * m + e).  One thread per (r, e).
extern "C" __global__ void exp_clock_keys(const double* __restrict__ wc, float* __restrict__ key,
                                          long long R, long long m, u64 seed, long long trial_offset) {
    long long total = R * m;
    u64 mixed_seed = splitmix64(seed);
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        long long r = i / m;
        long long e = i - r * m;
        u64 counter = (u64)(trial_offset + r) * (u64)m + (u64)e;
        u64 h = splitmix64(mixed_seed ^ counter);
        double u = ((double)(h >> 11) + 0.5) * 1.1102230246251565e-16;  // 2^-53
        key[i] = (float)(-log(u) / wc[e]);
    }
}

__device__ __forceinline__ u64 pack_edge(const float* key, int e) {
    return ((u64)__float_as_uint(key[e]) << 32) | (u64)(unsigned int)e;
}

// Boruvka over the edges with use[e] != 0 (or all edges when use == nullptr); comp[v] ends as
// the root of v's tree.  When tree != nullptr, tree[e] = 1 marks the chosen forest edges.
__device__ void boruvka(const int* eu, const int* ev, const float* key, const unsigned char* use,
                        int n, int m, int* comp, int* nxt, u64* best, unsigned char* tree) {
    __shared__ int changed;
    __shared__ int jumped;
    for (int v = threadIdx.x; v < n; v += blockDim.x) comp[v] = v;
    __syncthreads();
    while (true) {
        for (int v = threadIdx.x; v < n; v += blockDim.x) best[v] = ~0ULL;
        if (threadIdx.x == 0) changed = 0;
        __syncthreads();
        // every edge between two components bids for both: the lightest (key, id) wins
        for (int e = threadIdx.x; e < m; e += blockDim.x) {
            if (use != nullptr && !use[e]) continue;
            int cu = comp[eu[e]], cv = comp[ev[e]];
            if (cu != cv) {
                u64 packed = pack_edge(key, e);
                atomicMin(&best[cu], packed);
                atomicMin(&best[cv], packed);
            }
        }
        __syncthreads();
        // each root hooks onto the other end of its lightest edge; a mutual pair (both chose the
        // same edge) keeps the smaller id as root, so no cycle forms
        for (int v = threadIdx.x; v < n; v += blockDim.x) {
            nxt[v] = comp[v];
            if (comp[v] != v || best[v] == ~0ULL) continue;
            int e = (int)(best[v] & 0xffffffffULL);
            int cu = comp[eu[e]], cv = comp[ev[e]];
            int other = (cu == v) ? cv : cu;
            if (tree != nullptr) tree[e] = 1;
            changed = 1;
            if (best[other] == best[v] && v < other) continue;
            nxt[v] = other;
        }
        __syncthreads();
        for (int v = threadIdx.x; v < n; v += blockDim.x) comp[v] = nxt[v];
        __syncthreads();
        if (!changed) break;
        // pointer jumping until every vertex points at its root
        while (true) {
            if (threadIdx.x == 0) jumped = 0;
            __syncthreads();
            for (int v = threadIdx.x; v < n; v += blockDim.x) {
                int c = comp[v];
                int cc = comp[c];
                if (c != cc) { comp[v] = cc; jumped = 1; }
            }
            __syncthreads();
            int done = !jumped;
            __syncthreads();
            if (done) break;
        }
    }
}

// One block per trial.  Scratch: comp, nxt int32 (R, n); best u64 (R, n); tree uint8 (R, m).
extern "C" __global__ void contract_by_keys(const int* __restrict__ eu, const int* __restrict__ ev,
                                            const float* __restrict__ keys, int n, int m, int R, int stop_at,
                                            int* comp_all, int* nxt_all, u64* best_all,
                                            unsigned char* tree_all, int* labels) {
    int r = blockIdx.x;
    if (r >= R) return;
    const float* key = keys + (size_t)r * m;
    int* comp = comp_all + (size_t)r * n;
    int* nxt = nxt_all + (size_t)r * n;
    u64* best = best_all + (size_t)r * n;
    unsigned char* tree = tree_all + (size_t)r * m;
    int* lab = labels + (size_t)r * n;
    __shared__ int n_tree;
    __shared__ u64 largest;

    for (int e = threadIdx.x; e < m; e += blockDim.x) tree[e] = 0;
    if (threadIdx.x == 0) n_tree = 0;
    __syncthreads();
    // (1) the minimum spanning forest of the keys
    boruvka(eu, ev, key, nullptr, n, m, comp, nxt, best, tree);
    for (int e = threadIdx.x; e < m; e += blockDim.x)
        if (tree[e]) atomicAdd(&n_tree, 1);
    __syncthreads();
    // (2) Kruskal stops after n - stop_at accepted edges: drop the largest forest edges
    int n_drop = n_tree - (n - stop_at);
    for (int k = 0; k < n_drop; ++k) {
        if (threadIdx.x == 0) largest = 0ULL;
        __syncthreads();
        for (int e = threadIdx.x; e < m; e += blockDim.x)
            if (tree[e]) atomicMax(&largest, pack_edge(key, e) | (1ULL << 63));  // bit 63: valid
        __syncthreads();
        if (threadIdx.x == 0 && (largest >> 63)) tree[(int)(largest & 0xffffffffULL)] = 0;
        __syncthreads();
    }
    // (3) components of the remaining forest, labelled by their smallest vertex
    boruvka(eu, ev, key, tree, n, m, comp, nxt, best, nullptr);
    for (int v = threadIdx.x; v < n; v += blockDim.x) nxt[v] = n;
    __syncthreads();
    for (int v = threadIdx.x; v < n; v += blockDim.x) atomicMin(&nxt[comp[v]], v);
    __syncthreads();
    for (int v = threadIdx.x; v < n; v += blockDim.x) lab[v] = nxt[comp[v]];
}

// cut[r] = sum_e w[e] * (labels[r, eu[e]] != labels[r, ev[e]]); cut must be zeroed.
extern "C" __global__ void cut_values(const int* __restrict__ eu, const int* __restrict__ ev,
                                      const double* __restrict__ w, const int* __restrict__ labels,
                                      long long R, long long n, long long m, double* cut) {
    long long total = R * m;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        long long r = i / m;
        long long e = i - r * m;
        const int* lab = labels + r * n;
        if (lab[eu[e]] != lab[ev[e]]) atomicAdd(&cut[r], w[e]);
    }
}
