// CoopGrid environment steps and roll-outs, and the fused implied reward + BT logit (chapter 10, O-MAPL).
//
// CoopGrid (the chapter's own environment, a reconstruction): E independent games on a size x size
// grid, N agents, L landmarks.  Actions 0 stay, 1 up (y+1), 2 down (y-1), 3 right (x+1), 4 left
// (x-1); a move that would leave the grid is unavailable (and, if taken, leaves the agent in
// place).  After the joint move the team reward is r = -(D / 10) - 0.5 C, float32, where D is the
// sum over landmarks of the Manhattan distance to the nearest agent (an integer) and C the number
// of agent pairs sharing a cell; covered = every landmark has an agent on it.  The float32
// expression is evaluated in the same order as the NumPy reference (one correctly rounded
// division, an exact product, one rounded subtraction), so the results are bit-identical.
//
// coopgrid_step: pos int32 (E, N, 2), actions int32 (E, N), landmarks int32 (E, L, 2) ->
//   new_pos int32 (E, N, 2), reward float32 (E), covered int32 (E).  One thread per game.
// coopgrid_rollout: the scripted eps-expert for `horizon` steps from pos0.  Agent i < L is
//   assigned landmark i (a fixed assignment, so a decentralised policy can represent the expert);
//   it moves along x first, then y, towards its landmark (agents i >= L stay).
//   With probability eps the agent's action is replaced by a uniform draw over its available
//   actions.  Random numbers are counter-based: h = splitmix64(splitmix64(seed) ^ key), key =
//   (e * horizon + t) * N + i; random iff (h >> 11) < threshold (threshold = floor(eps 2^53),
//   passed in); the draw is the (splitmix64(h) % n_avail)-th available action in action order.
//   Outputs: actions int32 (E, horizon, N), rewards float32 (E, horizon), positions int32
//   (E, horizon + 1, N, 2), success int32 (E) (covered after the last step).
//
// segment_logits: q (2, B, T, N) chosen local Q, w (2, B, T, N) >= 0 mixer weights, b (2, B, T),
//   v_next (2, B, T, N) target local V at t+1, w_next, b_next, dones (2, B, T) float32 in {0, 1},
//   gamma -> r (2, B, T) = (sum_i w q + b - gamma (1 - d)(sum_i w' v' + b')) * mask, mask = 1 up to
//   and including the first done, 0 after; logit (B) = sum_t r[0] - sum_t r[1].  One thread per
//   (segment, pair) for r and its sum; the logit is formed by thread 0 of each pair afterwards in
//   a second kernel (no atomics), so the sums are in a fixed order (1e-5 of the torch reference).

typedef unsigned long long u64;

// splitmix64, the same function as triplets.cu's and icml25.kernels._splitmix64.
__device__ __forceinline__ u64 splitmix64(u64 z) {
    z += 0x9E3779B97F4A7C15ULL;
    z ^= z >> 30; z *= 0xBF58476D1CE4E5B9ULL;
    z ^= z >> 27; z *= 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

__device__ __forceinline__ int avail_move(int a, int x, int y, int size) {
    if (a == 1) return y + 1 < size;
    if (a == 2) return y - 1 >= 0;
    if (a == 3) return x + 1 < size;
    if (a == 4) return x - 1 >= 0;
    return 1;
}

__device__ __forceinline__ void apply_move(int a, int* x, int* y, int size) {
    if (!avail_move(a, *x, *y, size)) return;
    if (a == 1) *y += 1;
    else if (a == 2) *y -= 1;
    else if (a == 3) *x += 1;
    else if (a == 4) *x -= 1;
}

// reward and covered flag of one game whose agent positions are px, py (N each)
__device__ float team_reward(const int* px, const int* py, const int* lm, int N, int L, int* covered) {
    int D = 0, cov = 1;
    for (int l = 0; l < L; ++l) {
        int best = 1 << 30;
        for (int i = 0; i < N; ++i) {
            int d = abs(px[i] - lm[2 * l]) + abs(py[i] - lm[2 * l + 1]);
            best = d < best ? d : best;
        }
        D += best;
        cov &= (best == 0);
    }
    int C = 0;
    for (int i = 0; i < N; ++i)
        for (int j = i + 1; j < N; ++j) C += (px[i] == px[j]) && (py[i] == py[j]);
    *covered = cov;
    float r = -((float)D) / 10.0f;
    return r - 0.5f * (float)C;
}

#define MAX_AGENTS 32

extern "C" __global__ void coopgrid_step(const int* __restrict__ pos, const int* __restrict__ actions,
                                         const int* __restrict__ landmarks, int* __restrict__ new_pos,
                                         float* __restrict__ reward, int* __restrict__ covered,
                                         long long E, int N, int L, int size) {
    int px[MAX_AGENTS], py[MAX_AGENTS];
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < E;
         e += (long long)gridDim.x * blockDim.x) {
        for (int i = 0; i < N; ++i) {
            px[i] = pos[(e * N + i) * 2];
            py[i] = pos[(e * N + i) * 2 + 1];
            apply_move(actions[e * N + i], &px[i], &py[i], size);
            new_pos[(e * N + i) * 2] = px[i];
            new_pos[(e * N + i) * 2 + 1] = py[i];
        }
        int cov;
        reward[e] = team_reward(px, py, landmarks + e * L * 2, N, L, &cov);
        covered[e] = cov;
    }
}

extern "C" __global__ void coopgrid_rollout(const int* __restrict__ pos0, const int* __restrict__ landmarks,
                                            int* __restrict__ actions, float* __restrict__ rewards,
                                            int* __restrict__ positions, int* __restrict__ success,
                                            long long E, int N, int L, int size, int horizon,
                                            u64 seed, u64 threshold) {
    int px[MAX_AGENTS], py[MAX_AGENTS], target[MAX_AGENTS];
    u64 mixed = splitmix64(seed);
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < E;
         e += (long long)gridDim.x * blockDim.x) {
        const int* lm = landmarks + e * L * 2;
        for (int i = 0; i < N; ++i) {
            px[i] = pos0[(e * N + i) * 2];
            py[i] = pos0[(e * N + i) * 2 + 1];
            positions[((e * (horizon + 1)) * N + i) * 2] = px[i];
            positions[((e * (horizon + 1)) * N + i) * 2 + 1] = py[i];
        }
        int cov = 0;
        for (int t = 0; t < horizon; ++t) {
            for (int i = 0; i < N; ++i) target[i] = i < L ? i : -1;
            for (int i = 0; i < N; ++i) {
                int a = 0;
                if (target[i] >= 0) {
                    int tx = lm[2 * target[i]], ty = lm[2 * target[i] + 1];
                    if (tx > px[i]) a = 3; else if (tx < px[i]) a = 4;
                    else if (ty > py[i]) a = 1; else if (ty < py[i]) a = 2;
                }
                u64 key = ((u64)e * (u64)horizon + (u64)t) * (u64)N + (u64)i;
                u64 h = splitmix64(mixed ^ key);
                if ((h >> 11) < threshold) {
                    int n_avail = 0;
                    for (int k = 0; k < 5; ++k) n_avail += avail_move(k, px[i], py[i], size);
                    int pick = (int)(splitmix64(h) % (u64)n_avail);
                    for (int k = 0; k < 5; ++k) {
                        if (avail_move(k, px[i], py[i], size)) {
                            if (pick == 0) { a = k; break; }
                            --pick;
                        }
                    }
                }
                actions[(e * horizon + t) * N + i] = a;
            }
            for (int i = 0; i < N; ++i) {
                apply_move(actions[(e * horizon + t) * N + i], &px[i], &py[i], size);
                positions[((e * (horizon + 1) + t + 1) * N + i) * 2] = px[i];
                positions[((e * (horizon + 1) + t + 1) * N + i) * 2 + 1] = py[i];
            }
            rewards[e * horizon + t] = team_reward(px, py, lm, N, L, &cov);
        }
        success[e] = cov;
    }
}

extern "C" __global__ void segment_rewards(const float* __restrict__ q, const float* __restrict__ w,
                                           const float* __restrict__ b, const float* __restrict__ v_next,
                                           const float* __restrict__ w_next, const float* __restrict__ b_next,
                                           const float* __restrict__ dones, float gamma,
                                           float* __restrict__ r, float* __restrict__ seg_sum,
                                           long long S, int T, int N) {
    // S = 2 B segments; one thread per segment
    for (long long s = (long long)blockIdx.x * blockDim.x + threadIdx.x; s < S;
         s += (long long)gridDim.x * blockDim.x) {
        float total = 0.0f, alive = 1.0f;
        for (int t = 0; t < T; ++t) {
            long long st = s * T + t;
            float qt = b[st], vn = b_next[st];
            for (int i = 0; i < N; ++i) {
                qt += w[st * N + i] * q[st * N + i];
                vn += w_next[st * N + i] * v_next[st * N + i];
            }
            float d = dones[st];
            float rt = (qt - gamma * (1.0f - d) * vn) * alive;
            r[st] = rt;
            total += rt;
            if (d > 0.5f) alive = 0.0f;
        }
        seg_sum[s] = total;
    }
}

extern "C" __global__ void bt_logits(const float* __restrict__ seg_sum, float* __restrict__ logit, long long B) {
    for (long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x; k < B;
         k += (long long)gridDim.x * blockDim.x) {
        logit[k] = seg_sum[k] - seg_sum[B + k];
    }
}
