// The kernels of pipecast's CUDA backend: the contract between the CUDA C
// in this folder and the Go that launches it (tensor/cuda generates its
// typed launch functions from these prototypes; see gen_launch.go).
//
// Conventions:
//   - every kernel is extern "C" and named pc_*; its parameters are
//     float* / const float* (device pointers, already offset to the
//     tensor's first element), const int* (labels, index lists),
//     double* (per-row losses), int, long long, float, double (RoPE's
//     base) or unsigned long long; nothing else;
//   - tensors are dense, row-major, NCHW for images;
//   - element counts that may pass 2^31 are long long; kernels loop with
//     a grid stride, so any grid covers any size;
//   - a kernel whose name ends in _acc accumulates into its output (+=),
//     as parameter gradients are accumulated; every other kernel
//     overwrites its output;
//   - reductions are deterministic: no atomics on floats, each output
//     summed by one thread block in a fixed order, accumulated in double
//     where the comment says so.
#ifndef PIPECAST_KERNELS_H
#define PIPECAST_KERNELS_H

#ifdef __cplusplus
extern "C" {
#endif

// ---- elementwise ----
__global__ void pc_fill(float* y, long long n, float v);
__global__ void pc_scale(float* y, long long n, float alpha);
// y = a + b; y may alias a or b.
__global__ void pc_add(float* y, const float* a, const float* b, long long n);
// y += alpha·x.
__global__ void pc_axpy(float* y, const float* x, long long n, float alpha);
// y = max(x, 0); y may alias x.
__global__ void pc_relu_fwd(const float* x, float* y, long long n);
// dx = dy where y > 0, else 0; dx may alias dy.
__global__ void pc_relu_bwd(const float* y, const float* dy, float* dx, long long n);

// ---- bias ----
// y[r, c] += bias[c] for y [rows, cols] (linear layers).
__global__ void pc_bias_rows(float* y, const float* bias, long long rows, int cols);
// y[n, c, p] += bias[c] for y [n, c, hw] (convolutions).
__global__ void pc_bias_nchw(float* y, const float* bias, int n, int c, int hw);
// dbias[c] += Σ_r dy[r, c] for dy [rows, cols]; one block per column
// group, summed in double.
__global__ void pc_col_sums_acc(const float* dy, float* dbias, int rows, int cols);
// dbias[c] += Σ_{n,p} dy[n, c, p] for dy [n, c, hw]; one block per
// channel, summed in double.
__global__ void pc_channel_sums_acc(const float* dy, float* dbias, int n, int c, int hw);

// ---- matrix product (the fallback when cuBLAS is absent) ----
// c = alpha·op(a)·op(b) + beta·c, row-major: op(a) m×k, op(b) k×n, c m×n;
// op(a) = aᵀ when transA (a is then k×m), lda/ldb/ldc the row strides.
// beta == 0 overwrites c (NaNs in c do not survive).
__global__ void pc_sgemm(int transA, int transB, int m, int n, int k, float alpha,
                         const float* a, int lda, const float* b, int ldb,
                         float beta, float* c, int ldc);
// gridDim.z products of pc_sgemm's form at once: product z reads a +
// z·strideA and b + z·strideB and writes c + z·strideC (cuBLAS's
// cublasSgemmStridedBatched, row-major).
__global__ void pc_sgemm_batched(int transA, int transB, int m, int n, int k, float alpha,
                                 const float* a, int lda, long long strideA,
                                 const float* b, int ldb, long long strideB,
                                 float beta, float* c, int ldc, long long strideC);

// ---- convolution (implicit GEMM: the fallback when cuDNN is absent) ----
// Shapes: x [n, c, h, w], weights [o, c, kh, kw], y [n, o, oh, ow];
// strides sh, sw and zero padding ph, pw (groups 1, dilation 1).
// y = conv(x, w) (no bias: pc_bias_nchw adds it).
__global__ void pc_conv_fwd(const float* x, const float* wt, float* y,
                            int n, int c, int h, int w, int o, int kh, int kw,
                            int sh, int sw, int ph, int pw, int oh, int ow);
// dx = the gradient with respect to x (overwritten). Block z computes
// phase z = ry·sw + rx of the sh·sw phases: the inputs with (ih + ph) mod
// sh = ry and (iw + pw) mod sw = rx, from the taps that reach them.
__global__ void pc_conv_bwd_data(const float* dy, const float* wt, float* dx,
                                 int n, int c, int h, int w, int o, int kh, int kw,
                                 int sh, int sw, int ph, int pw, int oh, int ow);
// dw += the gradient with respect to the weights, over the whole depth
// K = n·oh·ow.
__global__ void pc_conv_bwd_filter_acc(const float* x, const float* dy, float* dw,
                                       int n, int c, int h, int w, int o, int kh, int kw,
                                       int sh, int sw, int ph, int pw, int oh, int ow);
// The depth split over gridDim.z: block z sums the depths [z·kchunk,
// min((z + 1)·kchunk, K)) of the weights' gradient and writes (overwrites)
// its tile in part + z·(o·c·kh·kw), laid out as dw.
__global__ void pc_conv_bwd_filter_part(const float* x, const float* dy, float* part,
                                        int n, int c, int h, int w, int o, int kh, int kw,
                                        int sh, int sw, int ph, int pw, int oh, int ow,
                                        int kchunk);
// dw[i] += Σ_z part[z·len + i] for z = 0, 1, …, parts − 1 in that order,
// in double, rounded once.
__global__ void pc_sum_parts_acc(const float* part, float* dw, long long len, int parts);

// ---- batch norm (x [n, c, hw]; hw = 1 for [n, c]) ----
// Per channel, one block each, in double: mean, the biased variance, and
// invstd = 1/sqrt(var + eps).
__global__ void pc_bn_stats(const float* x, float* mean, float* var, float* invstd,
                            int n, int c, int hw, float eps);
// run = (1 − momentum)·run + momentum·stat with the unbiased variance
// var·count/(count − 1), count = n·hw > 1.
__global__ void pc_bn_running(float* runMean, float* runVar, const float* mean,
                              const float* var, int c, long long count, float momentum);
// invstd = 1/sqrt(runVar + eps) (for the eval forward).
__global__ void pc_bn_invstd(const float* runVar, float* invstd, int c, float eps);
// y = (x − mean)·invstd·gamma + beta.
__global__ void pc_bn_apply(const float* x, float* y, const float* mean, const float* invstd,
                            const float* gamma, const float* beta, int n, int c, int hw);
// Per channel, one block each, in double: sumdy = Σ dy and sumdyxhat =
// Σ dy·(x − mean)·invstd.
__global__ void pc_bn_bwd_reduce(const float* x, const float* dy, const float* mean,
                                 const float* invstd, float* sumdy, float* sumdyxhat,
                                 int n, int c, int hw);
// dx = gamma·invstd·(dy − sumdy/M − xhat·sumdyxhat/M), M = n·hw.
__global__ void pc_bn_bwd_data(const float* x, const float* dy, const float* mean,
                               const float* invstd, const float* gamma,
                               const float* sumdy, const float* sumdyxhat, float* dx,
                               int n, int c, int hw);
// dgamma += sumdyxhat, dbeta += sumdy.
__global__ void pc_bn_param_grads_acc(float* dgamma, float* dbeta, const float* sumdy,
                                      const float* sumdyxhat, int c);

// ---- pooling (x [n, c, h, w], y [n, c, oh, ow]) ----
// The maximum of each window, padding counting as −∞.
__global__ void pc_maxpool_fwd(const float* x, float* y, int n, int c, int h, int w,
                               int oh, int ow, int kh, int kw, int sh, int sw, int ph, int pw);
// dx: each window's dy goes to the first position (row-major) holding the
// window's maximum; each dx element gathers the windows it is that of.
__global__ void pc_maxpool_bwd(const float* x, const float* dy, float* dx, int n, int c,
                               int h, int w, int oh, int ow, int kh, int kw,
                               int sh, int sw, int ph, int pw);
// The mean of each window, the divisor kh·kw (padding counts as zeros).
__global__ void pc_avgpool_fwd(const float* x, float* y, int n, int c, int h, int w,
                               int oh, int ow, int kh, int kw, int sh, int sw, int ph, int pw);
// dx gathers dy/(kh·kw) from each window that holds it.
__global__ void pc_avgpool_bwd(const float* dy, float* dx, int n, int c, int h, int w,
                               int oh, int ow, int kh, int kw, int sh, int sw, int ph, int pw);
// Output cell (i, j) averages rows floor(i·h/oh) to ceil((i+1)·h/oh) and
// the columns likewise (torch's AdaptiveAvgPool2d).
__global__ void pc_adaptive_avgpool_fwd(const float* x, float* y, int n, int c, int h, int w,
                                        int oh, int ow);
__global__ void pc_adaptive_avgpool_bwd(const float* dy, float* dx, int n, int c, int h, int w,
                                        int oh, int ow);

// ---- channels ----
// dst[:, coff:coff+ci] = src for src [n, ci, hw], dst [n, ctotal, hw].
__global__ void pc_concat_part(const float* src, float* dst, int n, int ci, int ctotal,
                               int coff, int hw);
// dst = src[:, coff:coff+ci] for src [n, ctotal, hw], dst [n, ci, hw].
__global__ void pc_split_part(const float* src, float* dst, int n, int ci, int ctotal,
                              int coff, int hw);

// ---- dropout ----
// y[r, e] = x[r, e]·scale where tensor.DropoutKeep keeps element e of
// sample sample0 + r (rows of rowLen elements), else 0: the sample's hash
// is mix64 of the key as tensor.DropoutSampleHash computes it, and the
// element is kept when mix64(hash + e·0x9e3779b97f4a7c15) >> 40 ≥
// threshold. scale = 1/(1 − p). Used for the backward too (x = dy).
__global__ void pc_dropout(const float* x, float* y, int rows, int rowLen,
                           unsigned long long seed, unsigned long long step,
                           unsigned long long layer, long long sample0,
                           int threshold, float scale);

// ---- loss ----
// For each row r of logits [rows, classes], one block: losses[r] =
// scale·(logsumexp(row) − row[labels[r]]) in double and, unless dlogits
// is NULL, dlogits[r] = scale·(softmax(row) − onehot(labels[r])).
__global__ void pc_softmax_xent(const float* logits, const int* labels, float* dlogits,
                                double* losses, int rows, int classes, float scale);

// ---- optimizer ----
// One step of torch.optim.SGD (tensor.SGDParams): d = g + wd·w; buf = d
// when first, else momentum·buf + (1 − dampening)·d; d = d + momentum·buf
// if nesterov, else buf; w −= lr·d. buf is NULL when momentum is 0 (then
// d is used as is).
__global__ void pc_sgd(float* w, const float* g, float* buf, long long n, float lr,
                       float momentum, float dampening, float wd, int nesterov, int first);

// One step of torch.optim.AdamW (tensor.AdamWStepIn) with the scalars
// the caller worked out in float64 as torch does: w = w·decay; m =
// m·beta1 + keep1·g; v = v·beta2 + keep2·g·g; denom = sqrt(v)/bc2Sqrt +
// eps; w = w + negStepSize·m/denom, every operation rounded to float32
// in that order (no fused multiply-adds); then g = 0 when zeroGrad.
__global__ void pc_adamw(float* w, float* g, float* m, float* v, long long n, float decay, float beta1,
                         float beta2, float keep1, float keep2, float negStepSize, float bc2Sqrt,
                         float eps, int zeroGrad);

// ---- decoder transformers (tensor.TransformerKernels) ----
// Rows are tokens: x [rows, dim]. Sums over a row or a column run in
// double, one block per row or column, and each output rounds once.

// y[i, c] = table[ids[i], c] for n ids (whole numbers in [0, vocab) held
// as floats, checked by the caller) and rows of dim values.
__global__ void pc_embedding_fwd(const float* ids, const float* table, float* y, long long n, int dim);
// dtable[v, c] += dy[i, c] over the rows i of each token v: the rows
// grouped by token as order[starts[s]], …, order[starts[s + 1] − 1]
// (ascending within a group), v = ids[order[starts[s]]]. One thread per
// (group, column) adds its rows in that order in float32, as the CPU's
// loop does: no two threads write one element.
__global__ void pc_embedding_bwd_acc(const float* ids, const int* order, const int* starts, const float* dy,
                                     float* dtable, int groups, int dim);
// One block per row: mean, the biased variance (two passes), rstd =
// 1/sqrt(var + eps), y = (x − mean)·rstd·gamma + beta.
__global__ void pc_layernorm_fwd(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                                 float* rstd, int rows, int dim, float eps);
// One block per row: with x̂ = (x − mean)·rstd and g = dy·gamma, dx =
// rstd·(g − mean(g) − x̂·mean(g·x̂)).
__global__ void pc_layernorm_bwd_data(const float* x, const float* dy, const float* gamma, const float* mean,
                                      const float* rstd, float* dx, int rows, int dim);
// One block per row: rstd = 1/sqrt(mean(x²) + eps), y = x·rstd·gamma.
__global__ void pc_rmsnorm_fwd(const float* x, const float* gamma, float* y, float* rstd, int rows, int dim,
                               float eps);
// One block per row: with x̂ = x·rstd and g = dy·gamma, dx = rstd·(g −
// x̂·mean(g·x̂)).
__global__ void pc_rmsnorm_bwd_data(const float* x, const float* dy, const float* gamma, const float* rstd,
                                    float* dx, int rows, int dim);
// One block per column c: dgamma[c] += Σ_r dy·x̂ and dbeta[c] += Σ_r dy,
// x̂ = (x − mean)·rstd, or x·rstd when mean is NULL (RMSNorm); a NULL
// dgamma or dbeta is skipped.
__global__ void pc_norm_param_grads_acc(const float* x, const float* dy, const float* mean, const float* rstd,
                                        float* dgamma, float* dbeta, int rows, int dim);
// y = ½x(1 + tanh(√(2/π)(x + 0.044715x³))) in double; y may alias x.
__global__ void pc_gelu_tanh_fwd(const float* x, float* y, long long n);
// dx = dy·gelu′(x) in double; dx may alias dy.
__global__ void pc_gelu_tanh_bwd(const float* x, const float* dy, float* dx, long long n);
// y = silu(gate)·up in double.
__global__ void pc_swiglu_fwd(const float* gate, const float* up, float* y, long long n);
// dgate = dy·up·silu′(gate), dup = dy·silu(gate) in double; a NULL one
// is skipped.
__global__ void pc_swiglu_bwd(const float* gate, const float* up, const float* dy, float* dgate, float* dup,
                              long long n);
// The rotate-half rotary embedding of x [rows, heads, headDim] into y
// (which may alias x), row r at position r mod seq: pair (i, i + hd/2) of
// each head turns by a = s·theta^(−2i/hd) (−a when inverse), the angle,
// its cosine and sine in double. One thread per pair.
__global__ void pc_rope(const float* x, float* y, long long rows, int seq, int heads, int headDim, double theta,
                        int inverse);
// One block per row of probs [rows, seq] (rows = B·H·S, the query
// position t = row mod seq): the softmax of the row in place, the
// maximum, exponentials and sum in double; under causal only positions
// ≤ t count, and the others are set to exactly 0.
__global__ void pc_attn_softmax(float* probs, long long rows, int seq, int causal);
// One block per row: dprobs = probs·(dprobs − Σ dprobs·probs) in place,
// the sum in double; the masked positions (causal) set to 0.
__global__ void pc_attn_softmax_bwd(const float* probs, float* dprobs, long long rows, int seq, int causal);
// x[row, u] = 0 for u > row mod seq: the causal mask on rows [rows,
// seq].
__global__ void pc_attn_mask(float* x, long long rows, int seq);

#ifdef __cplusplus
}
#endif

#endif
