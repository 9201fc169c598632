// Batched Pfeife cost model (chapter 13; Jhoo, Hur and Lopes, ICML 2025).
//
// Contract: kernels/pipeline_sim.py::batched_makespan_reference.
// One thread per candidate split vector k (K threads):
//   inputs  fp, bp, op   (n+1) double  prefix sums of forward / backward / optimizer ms, linear order
//           ap, wp       (n+1) int64   prefix sums of saved-activation / weight bytes
//           tmp          (n)   int64   transient bytes in linear order
//           es, ed, eb   (m)           edges: producer / consumer linear positions (int32, sorted by
//                                      producer) and the producer's output bytes (int64)
//           cand         (K, S-1) int32 split points
//           ev           (E, 5) int32  (rank, stage, mb, kind 0=F/1=B, prev) in a static topological order
//           c, mm, x0    biased-ReLU transfer time t(x) = c + mm max(x - x0, 0) ms, x in bytes
//   outputs makespan (K) double, peak (K, D) int64.
// The thread forms stage sums from the prefix sums, the (S, S) cut-byte matrix (each producer's
// output counted once per consumer stage), relaxes the events in the static order and walks each
// rank's events for the memory model. Products and sums use explicit _rn intrinsics so that no FMA
// contraction changes the rounding: the result equals the float64 reference bit for bit.

#define MAX_S 32
#define MAX_EVENTS 4096

__device__ __forceinline__ int stage_of(const int* sp, int nsplit, int p) {
    int s = 0;
    while (s < nsplit && sp[s] <= p) ++s;     // number of splits <= p
    return s;
}

extern "C" __global__ void batched_makespan(
    const double* __restrict__ fp, const double* __restrict__ bp, const double* __restrict__ op,
    const long long* __restrict__ ap, const long long* __restrict__ wp, const long long* __restrict__ tmp,
    const int* __restrict__ es, const int* __restrict__ ed, const long long* __restrict__ eb, int m,
    const int* __restrict__ cand, int K, int S, int n,
    const int* __restrict__ ev, int E, int D, int M,
    double c, double mm, double x0,
    double* __restrict__ makespan, long long* __restrict__ peak)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= K) return;
    const int* sp = cand + (long long)k * (S - 1);
    int lo[MAX_S], hi[MAX_S];
    double F[MAX_S], B[MAX_S];
    long long A[MAX_S], T[MAX_S];
    long long C[MAX_S * MAX_S];
    double fin[MAX_EVENTS];
    double t_rank[MAX_S], opt[MAX_S];
    long long cur[MAX_S], pk[MAX_S];
    for (int j = 0; j < S; ++j) {
        lo[j] = j == 0 ? 0 : sp[j - 1];
        hi[j] = j == S - 1 ? n : sp[j];
        F[j] = __dsub_rn(fp[hi[j]], fp[lo[j]]);
        B[j] = __dsub_rn(bp[hi[j]], bp[lo[j]]);
        A[j] = ap[hi[j]] - ap[lo[j]];
        long long t = 0;
        for (int p = lo[j]; p < hi[j]; ++p) t = tmp[p] > t ? tmp[p] : t;
        T[j] = t;
    }
    for (int r = 0; r < D; ++r) { opt[r] = 0.0; cur[r] = 0; t_rank[r] = 0.0; }
    for (int j = 0; j < S; ++j) {
        opt[j % D] = __dadd_rn(opt[j % D], __dsub_rn(op[hi[j]], op[lo[j]]));
        cur[j % D] += wp[hi[j]] - wp[lo[j]];
    }
    for (int i = 0; i < S * S; ++i) C[i] = 0;
    for (int a = 0; a < m;) {
        int b = a;
        unsigned long long seen = 0ull;
        int su = stage_of(sp, S - 1, es[a]);
        while (b < m && es[b] == es[a]) {
            int sv = stage_of(sp, S - 1, ed[b]);
            if (sv != su && !(seen & (1ull << sv))) { seen |= 1ull << sv; C[su * S + sv] += eb[a]; }
            ++b;
        }
        a = b;
    }
    for (int e = 0; e < E; ++e) {
        int r = ev[5 * e], j = ev[5 * e + 1], mb = ev[5 * e + 2], kd = ev[5 * e + 3];
        double start = t_rank[r];
        int i0 = kd == 0 ? 0 : j + 1, i1 = kd == 0 ? j : S;
        if (kd == 1) { double f0 = fin[j * M + mb]; start = f0 > start ? f0 : start; }
        for (int i = i0; i < i1; ++i) {
            long long nb = kd == 0 ? C[i * S + j] : C[j * S + i];
            if (nb <= 0) continue;
            double src = fin[(kd * S + i) * M + mb];
            double arrive;
            if (i % D == r) arrive = src;
            else {
                double x = (double)nb;
                double tc = x > x0 ? __dadd_rn(c, __dmul_rn(mm, __dsub_rn(x, x0))) : c;
                arrive = __dadd_rn(src, tc);
            }
            start = arrive > start ? arrive : start;
        }
        double f = __dadd_rn(start, kd == 0 ? F[j] : B[j]);
        fin[(kd * S + j) * M + mb] = f;
        t_rank[r] = f;
    }
    double best = 0.0;
    for (int r = 0; r < D; ++r) {
        double v = __dadd_rn(t_rank[r], opt[r]);
        best = (r == 0 || v > best) ? v : best;
        pk[r] = cur[r];
    }
    makespan[k] = best;
    // memory model: events of each rank in table order are that rank's program order
    for (int e = 0; e < E; ++e) {
        int r = ev[5 * e], j = ev[5 * e + 1], kd = ev[5 * e + 3];
        if (kd == 0) {
            cur[r] += A[j];
            long long v = cur[r] + T[j];
            pk[r] = v > pk[r] ? v : pk[r];
        } else {
            long long v = cur[r] + T[j];
            pk[r] = v > pk[r] ? v : pk[r];
            cur[r] -= A[j];
        }
    }
    for (int r = 0; r < D; ++r) peak[(long long)k * D + r] = pk[r];
}
