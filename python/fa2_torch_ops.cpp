// The PyTorch operators fa2::forward and fa2::backward: step05's kernels (and step07's fast
// forward and backward) behind torch.ops, and fa2::varlen_decode, fa2::varlen_packed and
// fa2::varlen_packed_backward (step07's decoding kernel, v6's packed forward and v6b's packed
// backward, CUDA only), for the Python package fa2_attention. The CUDA implementations
// launch on Torch's current stream; the CPU ones run the same kernel bodies on the host.
//   cmake --build --preset sm90 --target fa2_torch_ops     (python/README.md: install, API, tests)
#include <ATen/ATen.h>
#include <c10/core/ScalarType.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Exception.h>
#include <c10/util/Half.h>
#include <c10/util/string_view.h>
#include <torch/library.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/bf16.hpp"
#include "common/tensor.hpp"
#include "step05_fa2_kernel/flash_bwd.hpp"
#include "step05_fa2_kernel/flash_fwd.hpp"

#if FA2_TORCH_OPS_WITH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include "step05_fa2_kernel/flash_bwd_cuda.hpp"
#include "step05_fa2_kernel/flash_fwd_cuda.hpp"
#include "step07_benchmark/kernels/product/flash_attention.hpp"
#endif

// Torch's bfloat16 and ours are the same two bytes (the top half of a float32), so the data of a
// kBFloat16 tensor is a buffer of fa2::bf16 as it stands: the kernels get its address, unconverted.
static_assert(sizeof(c10::BFloat16) == sizeof(fa2::bf16) && alignof(c10::BFloat16) == alignof(fa2::bf16),
              "c10::BFloat16 and fa2::bf16 must have one layout");
// Likewise torch's float16 (c10::Half) and fa2::fp16: both IEEE binary16.
static_assert(sizeof(c10::Half) == sizeof(fa2::fp16) && alignof(c10::Half) == alignof(fa2::fp16),
              "c10::Half and fa2::fp16 must have one layout");

namespace {

constexpr const char* kForward = "fa2::forward";
constexpr const char* kBackward = "fa2::backward";

enum class Kernel { step05, fast };
enum class Where { cpu, cuda };

// The names torch prints for dtypes ("float16", not "Half").
std::string dtype_name(const at::Tensor& t) {
  const at::ScalarType s = t.scalar_type();
  if (s == at::kFloat) return "float32";
  if (s == at::kBFloat16) return "bfloat16";
  if (s == at::kHalf) return "float16";
  if (s == at::kDouble) return "float64";
  if (s == at::kComplexFloat) return "complex64";
  if (s == at::kComplexDouble) return "complex128";
  if (s == at::kInt) return "int32";
  if (s == at::kLong) return "int64";
  return c10::toString(s);
}

// "B", "H", "N" or "D": the name of axis `dim` of a (B, H, N, D) or (B, N, D) tensor.
std::string axis_name(const at::Tensor& t, std::int64_t dim) {
  return std::string(1, t.dim() == 4 ? "BHND"[dim] : "BND"[dim]);
}

Kernel parse_kernel(const char* op, c10::string_view name) {
  const std::string s(name.data(), name.size());
  if (s == "step05") return Kernel::step05;
  TORCH_CHECK(s == "fast", op, ": unknown kernel \"", s,
              "\"; choose \"step05\" (forward and backward, float32, bfloat16 and float16, CPU and CUDA) or \"fast\" "
              "(forward and backward, bfloat16 and float16, CUDA)");
  return Kernel::fast;
}

void check_lengths(const char* op, const char* name, const at::Tensor& t) {
  for (std::int64_t dim = 0; dim < t.dim(); ++dim) {
    TORCH_CHECK(t.size(dim) >= 1, op, ": ", name, ".shape ", t.sizes(), " has length 0 in dim ", dim, " (",
                axis_name(t, dim), "); every length must be at least 1");
  }
}

// q (B, H, N_q, D) or (B, N_q, D); k and v (B, H_kv, N_k, D) or (B, N_k, D), H_kv dividing H
// (grouped-query attention, as scaled_dot_product_attention's enable_gqa=True); one dtype
// (float32, bfloat16 or float16), one device.
void check_qkv(const char* op, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  TORCH_CHECK(q.dim() == 4 || q.dim() == 3, op, ": q must be 4-D (B, H, N, D) or 3-D (B, N, D), got ", q.dim(),
              "-D with shape ", q.sizes());
  TORCH_CHECK(q.scalar_type() == at::kFloat || q.scalar_type() == at::kBFloat16 || q.scalar_type() == at::kHalf, op,
              ": q has dtype ", dtype_name(q),
              "; the kernels take float32, bfloat16 or float16 (convert with .float(), .bfloat16() or .half())");
  for (const auto& [name, t] : {std::pair{"k", &k}, std::pair{"v", &v}}) {
    TORCH_CHECK(t->dim() == q.dim(), op, ": ", name, " is ", t->dim(), "-D but q is ", q.dim(),
                "-D; q, k and v must have one rank");
    TORCH_CHECK(t->scalar_type() == q.scalar_type(), op, ": ", name, " has dtype ", dtype_name(*t), " but q has ",
                dtype_name(q), "; q, k and v must have one dtype");
    TORCH_CHECK(t->device() == q.device(), op, ": ", name, " is on ", t->device(), " but q is on ", q.device(),
                "; q, k and v must be on one device");
  }
  check_lengths(op, "q", q);
  check_lengths(op, "k", k);
  TORCH_CHECK(k.size(0) == q.size(0), op, ": k.shape ", k.sizes(), " does not fit q.shape ", q.sizes(), ": dim 0 (",
              axis_name(q, 0), ") must match");
  if (q.dim() == 4) {  // the query heads of a group read one kv head: query head h reads h / (H / H_kv)
    TORCH_CHECK(k.size(1) >= 1 && q.size(1) % k.size(1) == 0, op, ": k.shape ", k.sizes(), " does not fit q.shape ",
                q.sizes(), ": dim 1 (H) of k must divide q's (equal, or grouped-query attention)");
  }
  TORCH_CHECK(k.size(-1) == q.size(-1), op, ": k.shape ", k.sizes(), " does not fit q.shape ", q.sizes(),
              ": the head dim D must match");
  TORCH_CHECK(v.sizes().equals(k.sizes()), op, ": v.shape ", v.sizes(), " must equal k.shape ", k.sizes());
}

// dout and out of the backward: q's shape, dtype and device.
void check_like_q(const char* op, const char* name, const at::Tensor& t, const at::Tensor& q) {
  TORCH_CHECK(t.sizes().equals(q.sizes()), op, ": ", name, ".shape ", t.sizes(), " must equal q.shape ", q.sizes());
  TORCH_CHECK(t.scalar_type() == q.scalar_type(), op, ": ", name, " has dtype ", dtype_name(t), " but q has ",
              dtype_name(q), "; they must have one dtype");
  TORCH_CHECK(t.device() == q.device(), op, ": ", name, " is on ", t.device(), " but q is on ", q.device(),
              "; every tensor must be on one device");
}

// q's shape without its head dim: the shape of lse, (B, H, N_q) or (B, N_q).
std::vector<std::int64_t> lse_shape(const at::Tensor& q) {
  const at::IntArrayRef sizes = q.sizes();
  return std::vector<std::int64_t>(sizes.begin(), sizes.end() - 1);
}

std::optional<float> checked_scale(const char* op, std::optional<double> scale) {
  if (!scale) return std::nullopt;  // the kernels' default, 1/sqrt(D)
  TORCH_CHECK(std::isfinite(*scale), op, ": scale must be a finite number, got ", *scale);
  return static_cast<float>(*scale);
}

// The kernels' view of a (B, H, N, D) or (B, N, D) tensor: (batch, N, D) with a contiguous head
// dim and one batch stride, which is what FlashFwdArgs and FlashBwdArgs take. What is copied:
//   - a head dim whose stride is not 1 (a slice such as x[..., ::2], an expanded dO): the whole
//     tensor, into a contiguous one;
//   - a 4-D tensor whose B and H do not merge into one stride (stride(B) != H * stride(H), B and
//     H both > 1; e.g. (B, N, H, D).transpose(1, 2)): the whole tensor, by reshape.
//   - for kernel="fast", whose loads move 16-byte chunks, a tensor whose rows do not all start on
//     a 16-byte boundary (a data pointer offset by a few elements, a row or batch stride that is
//     not a multiple of 16 bytes): the whole tensor, into a fresh contiguous one.
// Everything else is a view: any stride of N, any stride of a 3-D batch, a contiguous (B, H, N, D)
// tensor, one head of a larger tensor. Outputs are always fresh contiguous tensors.
bool rows_16_byte_aligned(const at::Tensor& t3) {
  const auto chunk = static_cast<std::int64_t>(16 / t3.element_size());
  return reinterpret_cast<std::uintptr_t>(t3.const_data_ptr()) % 16 == 0 && t3.stride(0) % chunk == 0 &&
         t3.stride(1) % chunk == 0;
}

at::Tensor kernel_view(const at::Tensor& t, Kernel kernel) {
  const at::Tensor dense_d = t.stride(-1) == 1 ? t : t.contiguous();
  at::Tensor view = dense_d.dim() == 3
                        ? dense_d
                        : dense_d.reshape({dense_d.size(0) * dense_d.size(1), dense_d.size(2), dense_d.size(3)});
  // A fresh allocation is aligned far beyond 16 bytes, and its rows are D elements apart: aligned
  // for every head dim the fast kernels take.
  if (kernel == Kernel::fast && !rows_16_byte_aligned(view)) view = view.clone(at::MemoryFormat::Contiguous);
  return view;
}

template <int Rank>
fa2::Extents<Rank> shape_of(const at::Tensor& t) {
  fa2::Extents<Rank> e{};
  for (int i = 0; i < Rank; ++i) e[static_cast<std::size_t>(i)] = t.size(i);
  return e;
}

template <int Rank>
fa2::Extents<Rank> strides_of(const at::Tensor& t) {
  fa2::Extents<Rank> e{};
  for (int i = 0; i < Rank; ++i) e[static_cast<std::size_t>(i)] = t.stride(i);
  return e;
}

fa2::DType kernel_dtype(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kBFloat16:
      return fa2::DType::bfloat16;
    case at::kHalf:
      return fa2::DType::float16;
    default:
      return fa2::DType::float32;  // check_qkv let nothing else through
  }
}

// The kernels' own checks (validate) throw std::invalid_argument naming the argument, e.g.
// "head_dim: got 48, allowed 16, 32, 64 or 128"; Python gets it as a RuntimeError, as every
// other message here, prefixed with the operator's name.
template <class Fn>
void run_checked(const char* op, Fn&& fn) {
  try {
    std::forward<Fn>(fn)();
  } catch (const std::invalid_argument& e) {
    TORCH_CHECK(false, op, ": ", e.what());
  }
}

// ---- forward ------------------------------------------------------------------------------------

// One forward call: the kernels' views of the inputs (kept alive until the launch is queued),
// the outputs, and the arguments for the launchers.
struct ForwardCall {
  Kernel kernel = Kernel::step05;
  at::Tensor q3, k3, v3;  // (batch, N_q or N_k, D)
  at::Tensor out;         // q's shape and dtype, contiguous
  at::Tensor lse;         // q's shape without D, float32, contiguous
  fa2::FlashFwdArgs args;
};

ForwardCall prepare_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool is_causal,
                            std::optional<double> scale, c10::string_view kernel, fa2::Window window, bool allow_tf32,
                            Where where) {
  ForwardCall c;
  c.kernel = parse_kernel(kForward, kernel);
  check_qkv(kForward, q, k, v);
  TORCH_CHECK(c.kernel == Kernel::step05 || where == Where::cuda, kForward,
              ": kernel=\"fast\" runs on CUDA only; on the CPU use kernel=\"step05\"");
  c.q3 = kernel_view(q, c.kernel);
  c.k3 = kernel_view(k, c.kernel);
  c.v3 = kernel_view(v, c.kernel);
  c.out = at::empty(q.sizes(), q.options());
  c.lse = at::empty(lse_shape(q), q.options().dtype(at::kFloat));
  const std::int64_t batch = c.q3.size(0), n_q = c.q3.size(1), head_dim = c.q3.size(2);
  const at::Tensor out3 = c.out.view({batch, n_q, head_dim});
  const at::Tensor lse2 = c.lse.view({batch, n_q});

  fa2::FlashFwdArgs& a = c.args;
  a.dtype = kernel_dtype(q);
  a.q = c.q3.const_data_ptr(), a.q_shape = shape_of<3>(c.q3), a.q_strides = strides_of<3>(c.q3);
  a.k = c.k3.const_data_ptr(), a.k_shape = shape_of<3>(c.k3), a.k_strides = strides_of<3>(c.k3);
  a.v = c.v3.const_data_ptr(), a.v_shape = shape_of<3>(c.v3), a.v_strides = strides_of<3>(c.v3);
  a.o = out3.mutable_data_ptr(), a.o_shape = shape_of<3>(out3), a.o_strides = strides_of<3>(out3);
  a.l = lse2.mutable_data_ptr<float>(), a.l_shape = shape_of<2>(lse2), a.l_strides = strides_of<2>(lse2);
  a.causal = is_causal;
  a.scale = checked_scale(kForward, scale);
  a.window = window;
  a.allow_tf32 = allow_tf32;
  run_checked(kForward, [&] { fa2::validate(a); });  // head dim, batch, window, ...: before anything runs
  return c;
}

std::tuple<at::Tensor, at::Tensor> forward_cpu(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                               bool is_causal, std::optional<double> scale, c10::string_view kernel,
                                               std::int64_t window_left, std::int64_t window_right, bool allow_tf32) {
  ForwardCall c =
      prepare_forward(q, k, v, is_causal, scale, kernel, {window_left, window_right}, allow_tf32, Where::cpu);
  run_checked(kForward, [&] { fa2::flash_fwd_host(c.args); });
  return {c.out, c.lse};
}

// ---- backward -----------------------------------------------------------------------------------

struct BackwardCall {
  at::Tensor q3, k3, v3, o3, do3, lse2;  // the kernels' views of the inputs
  at::Tensor dq, dk, dv;                 // q's, k's and v's shapes and dtype, contiguous
  at::Tensor d_rows, dq_accum;           // float32 workspaces (batch, N_q) and (batch, N_q, D)
  at::Tensor dq_semaphores;              // deterministic with kernel="fast": int32, cleared by the kernel
  at::Tensor dkv_partial;                // kernel="fast", few kv heads: float32 parts of dK and dV
  fa2::FlashBwdArgs args;
  Kernel kernel = Kernel::step05;
};

BackwardCall prepare_backward(const at::Tensor& dout, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                              const at::Tensor& out, const at::Tensor& lse, bool is_causal, std::optional<double> scale,
                              c10::string_view kernel, bool deterministic, fa2::Window window, bool allow_tf32,
                              Where where) {
  const Kernel chosen = parse_kernel(kBackward, kernel);
  check_qkv(kBackward, q, k, v);
  TORCH_CHECK(chosen == Kernel::step05 || where == Where::cuda, kBackward,
              ": kernel=\"fast\" runs on CUDA only; on the CPU use kernel=\"step05\"");
  check_like_q(kBackward, "out", out, q);
  check_like_q(kBackward, "dout", dout, q);
  const std::vector<std::int64_t> l_shape = lse_shape(q);
  TORCH_CHECK(lse.scalar_type() == at::kFloat, kBackward, ": lse has dtype ", dtype_name(lse),
              "; it must be float32, the forward's lse");
  TORCH_CHECK(lse.sizes().equals(at::IntArrayRef(l_shape)), kBackward, ": lse.shape ", lse.sizes(),
              " must be q.shape without its head dim, ", at::IntArrayRef(l_shape));
  TORCH_CHECK(lse.device() == q.device(), kBackward, ": lse is on ", lse.device(), " but q is on ", q.device(),
              "; every tensor must be on one device");

  BackwardCall c;
  c.kernel = chosen;
  c.q3 = kernel_view(q, c.kernel);
  c.k3 = kernel_view(k, c.kernel);
  c.v3 = kernel_view(v, c.kernel);
  c.o3 = kernel_view(out, c.kernel);
  c.do3 = kernel_view(dout, c.kernel);
  const std::int64_t batch = c.q3.size(0), n_q = c.q3.size(1), head_dim = c.q3.size(2);
  c.lse2 = lse.reshape({batch, n_q});  // any strides will do for L: a view when (B, H) merge
  c.dq = at::empty(q.sizes(), q.options());
  c.dk = at::empty(k.sizes(), k.options());
  c.dv = at::empty(v.sizes(), v.options());
  c.d_rows = at::empty({batch, n_q}, q.options().dtype(at::kFloat));
  c.dq_accum = at::empty({batch, n_q, head_dim}, q.options().dtype(at::kFloat));  // zeroed by the kernel's phase 1
  const at::Tensor dq3 = c.dq.view({batch, n_q, head_dim});
  const at::Tensor dk3 = c.dk.view({c.k3.size(0), c.k3.size(1), head_dim});  // B x H_kv batch elements
  const at::Tensor dv3 = c.dv.view({c.v3.size(0), c.v3.size(1), head_dim});

  fa2::FlashBwdArgs& a = c.args;
  a.dtype = kernel_dtype(q);
  a.q = c.q3.const_data_ptr(), a.q_shape = shape_of<3>(c.q3), a.q_strides = strides_of<3>(c.q3);
  a.k = c.k3.const_data_ptr(), a.k_shape = shape_of<3>(c.k3), a.k_strides = strides_of<3>(c.k3);
  a.v = c.v3.const_data_ptr(), a.v_shape = shape_of<3>(c.v3), a.v_strides = strides_of<3>(c.v3);
  // FlashFwdArgs holds O and L as the forward's outputs; the backward only reads them.
  a.o = const_cast<void*>(c.o3.const_data_ptr()), a.o_shape = shape_of<3>(c.o3), a.o_strides = strides_of<3>(c.o3);
  a.l = const_cast<float*>(c.lse2.const_data_ptr<float>());
  a.l_shape = shape_of<2>(c.lse2), a.l_strides = strides_of<2>(c.lse2);
  a.do_ = c.do3.const_data_ptr(), a.do_shape = shape_of<3>(c.do3), a.do_strides = strides_of<3>(c.do3);
  a.d_rows = c.d_rows.mutable_data_ptr<float>();
  a.d_rows_shape = shape_of<2>(c.d_rows), a.d_rows_strides = strides_of<2>(c.d_rows);
  a.dq_accum = c.dq_accum.mutable_data_ptr<float>();
  a.dq_accum_shape = shape_of<3>(c.dq_accum), a.dq_accum_strides = strides_of<3>(c.dq_accum);
  a.dq = dq3.mutable_data_ptr(), a.dq_shape = shape_of<3>(dq3), a.dq_strides = strides_of<3>(dq3);
  a.dk = dk3.mutable_data_ptr(), a.dk_shape = shape_of<3>(dk3), a.dk_strides = strides_of<3>(dk3);
  a.dv = dv3.mutable_data_ptr(), a.dv_shape = shape_of<3>(dv3), a.dv_strides = strides_of<3>(dv3);
  a.causal = is_causal;
  a.scale = checked_scale(kBackward, scale);
  a.window = window;
  a.allow_tf32 = allow_tf32;
  // Deterministic gradients: step 5's backward runs its key tiles one launch after another (the
  // host path always does); the fast ones take turns on one counter per 32 query rows.
  a.deterministic = deterministic;
  if (deterministic && c.kernel == Kernel::fast) {
    c.dq_semaphores = at::empty({fa2::dq_semaphore_count(a.q_shape)}, q.options().dtype(at::kInt));
    a.dq_semaphores = c.dq_semaphores.mutable_data_ptr<std::int32_t>();
  }
  run_checked(kBackward, [&] { fa2::validate(a); });
  return c;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> backward_cpu(
    const at::Tensor& dout, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& out,
    const at::Tensor& lse, bool is_causal, std::optional<double> scale, c10::string_view kernel, bool deterministic,
    std::int64_t window_left, std::int64_t window_right, bool allow_tf32) {
  BackwardCall c = prepare_backward(dout, q, k, v, out, lse, is_causal, scale, kernel, deterministic,
                                    {window_left, window_right}, allow_tf32, Where::cpu);
  run_checked(kBackward, [&] { fa2::flash_bwd_host(c.args); });
  return {c.dq, c.dk, c.dv};
}

// ---- CUDA ---------------------------------------------------------------------------------------
#if FA2_TORCH_OPS_WITH_CUDA

// The launches go to Torch's current stream of the tensors' device, so they are ordered with the
// caller's other work and with the caching allocator's reuse of the inputs and workspaces.
std::tuple<at::Tensor, at::Tensor> forward_cuda(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                                bool is_causal, std::optional<double> scale, c10::string_view kernel,
                                                std::int64_t window_left, std::int64_t window_right, bool allow_tf32) {
  ForwardCall c =
      prepare_forward(q, k, v, is_causal, scale, kernel, {window_left, window_right}, allow_tf32, Where::cuda);
  const c10::cuda::CUDAGuard on_device(q.device());
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(q.device().index()).stream();
  if (c.kernel == Kernel::fast) {
    // The arguments are checked once, into the plan (the sm90 path on sm_90, else sm80). Never a silent
    // fallback: what the fast kernel refuses is an error that says why.
    const fa2::flash::ForwardPlan plan = fa2::flash::plan_forward(c.args);
    TORCH_CHECK(plan.runs(), kForward, ": kernel=\"fast\" cannot run these inputs: ", plan.refused,
                ". kernel=\"step05\" takes float32, bfloat16 and float16 with head dims 16, 32, 64 and 128");
    run_checked(kForward, [&] { fa2::flash::run(plan, stream); });
  } else {
    run_checked(kForward, [&] { fa2::flash_fwd_cuda(c.args, stream); });
  }
  return {c.out, c.lse};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> backward_cuda(
    const at::Tensor& dout, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& out,
    const at::Tensor& lse, bool is_causal, std::optional<double> scale, c10::string_view kernel, bool deterministic,
    std::int64_t window_left, std::int64_t window_right, bool allow_tf32) {
  BackwardCall c = prepare_backward(dout, q, k, v, out, lse, is_causal, scale, kernel, deterministic,
                                    {window_left, window_right}, allow_tf32, Where::cuda);
  const c10::cuda::CUDAGuard on_device(q.device());
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(q.device().index()).stream();
  if (c.kernel == Kernel::fast) {
    // The plan chooses the kernel for this GPU and sizes its optional workspace (few kv heads: the
    // float32 parts of dK and dV that let the sm90 backward spread a group over several blocks).
    fa2::flash::BackwardPlan plan = fa2::flash::plan_backward(c.args);
    TORCH_CHECK(plan.runs(), kBackward, ": kernel=\"fast\" cannot run these inputs: ", plan.refused,
                ". kernel=\"step05\" takes float32, bfloat16 and float16 with head dims 16, 32, 64 and 128");
    if (plan.dkv_partial_floats > 0) {
      c.dkv_partial = at::empty({plan.dkv_partial_floats}, q.options().dtype(at::kFloat));
      plan.args.dkv_partial = c.dkv_partial.mutable_data_ptr<float>();
    }
    run_checked(kBackward, [&] { fa2::flash::run(plan, stream); });
  } else {
    run_checked(kBackward, [&] { fa2::flash_bwd_cuda(c.args, stream); });
  }
  return {c.dq, c.dk, c.dv};
}

// ---- decoding: packed sequences of few queries (python/fa2_attention/varlen.py) -----------------

constexpr const char* kVarlenDecode = "fa2::varlen_decode";

const std::int32_t* int32_data(const char* name, const std::optional<at::Tensor>& t, const at::Tensor& q) {
  if (!t) return nullptr;
  TORCH_CHECK(t->scalar_type() == at::kInt && t->is_contiguous() && t->device() == q.device(), kVarlenDecode, ": ",
              name, " must be a contiguous int32 tensor on q's device");
  return t->const_data_ptr<std::int32_t>();
}

// The tensors of a varlen call, as the kernels read them: q, k, v and out (rows, heads, D) views,
// lse (H, T_q).
void set_tensors(fa2::FlashVarlenArgs& a, const at::Tensor& qv, const at::Tensor& kv, const at::Tensor& vv,
                 const at::Tensor& out, const at::Tensor& lse) {
  a.q = qv.const_data_ptr(), a.q_shape = shape_of<3>(qv), a.q_strides = strides_of<3>(qv);
  a.k = kv.const_data_ptr(), a.k_shape = shape_of<3>(kv), a.k_strides = strides_of<3>(kv);
  a.v = vv.const_data_ptr(), a.v_shape = shape_of<3>(vv), a.v_strides = strides_of<3>(vv);
  a.o = out.mutable_data_ptr(), a.o_shape = shape_of<3>(out), a.o_strides = strides_of<3>(out);
  a.l = lse.mutable_data_ptr<float>(), a.l_shape = shape_of<2>(lse), a.l_strides = strides_of<2>(lse);
}

// The decoding kernel on CUDA (kernel="fast" with few queries per sequence), with no copy to the
// host: varlen.py checks the index tensors' values against the tensors (cu_seq_q, cu_seq_k,
// seqused_k, block_table, max_q, max_k) unless told not to, and the kernel bounds every read and
// write by the tensors whatever they hold. out starts at 0 and lse at +inf, what rows of no
// sequence keep.
std::tuple<at::Tensor, at::Tensor> varlen_decode_cuda(
    const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& cu_seq_q,
    const std::optional<at::Tensor>& cu_seq_k, const std::optional<at::Tensor>& seqused_k,
    const std::optional<at::Tensor>& block_table, std::int64_t max_q, std::int64_t max_k, std::optional<double> scale,
    std::int64_t window_left, std::int64_t window_right, std::int64_t num_splits) {
  TORCH_CHECK(q.dim() == 3, kVarlenDecode, ": q must be (T_q, H, D), got shape ", q.sizes());
  const bool paged = block_table.has_value();
  TORCH_CHECK(k.dim() == (paged ? 4 : 3) && v.sizes().equals(k.sizes()), kVarlenDecode, ": k and v must both be ",
              paged ? "(pages, page_size, H_kv, D)" : "(T_k, H_kv, D)", ", got ", k.sizes(), " and ", v.sizes());
  for (const auto& [name, t] : {std::pair{"k", &k}, std::pair{"v", &v}}) {
    TORCH_CHECK(t->scalar_type() == q.scalar_type() && t->device() == q.device(), kVarlenDecode, ": ", name,
                " must have q's dtype and device");
  }
  std::int64_t page_size = 0;
  at::Tensor k3 = k, v3 = v;
  if (paged) {  // (pages, page_size, H_kv, D) as rows of the whole cache
    page_size = k.size(1);
    k3 = k.reshape({k.size(0) * k.size(1), k.size(2), k.size(3)});
    v3 = v.reshape({v.size(0) * v.size(1), v.size(2), v.size(3)});
  }
  // (rows, heads, D) views read in place where their rows are 16-byte aligned, as kernel="fast" reads them.
  const at::Tensor qv = kernel_view(q, Kernel::fast), kv = kernel_view(k3, Kernel::fast),
                   vv = kernel_view(v3, Kernel::fast);
  at::Tensor out = at::zeros(q.sizes(), q.options());
  at::Tensor lse =
      at::full({q.size(1), q.size(0)}, std::numeric_limits<float>::infinity(), q.options().dtype(at::kFloat));

  fa2::FlashVarlenArgs a;
  a.dtype = kernel_dtype(q);
  TORCH_CHECK(q.scalar_type() == at::kBFloat16 || q.scalar_type() == at::kHalf, kVarlenDecode,
              ": the decoding kernel takes bfloat16 or float16, got ", dtype_name(q));
  set_tensors(a, qv, kv, vv, out, lse);
  // The index tensors' sizes (their values are the caller's to check): the kernel reads batch + 1
  // offsets and batch lengths and table rows.
  TORCH_CHECK(cu_seq_q.dim() == 1 && cu_seq_q.numel() >= 1, kVarlenDecode,
              ": cu_seq_q must be 1-D with batch + 1 entries, got shape ", cu_seq_q.sizes());
  a.batch = cu_seq_q.numel() - 1;
  TORCH_CHECK(paged || (cu_seq_k && cu_seq_k->dim() == 1 && cu_seq_k->numel() == a.batch + 1), kVarlenDecode,
              ": cu_seq_k must be 1-D with cu_seq_q's ", a.batch + 1, " entries");
  TORCH_CHECK(!seqused_k || (seqused_k->dim() == 1 && seqused_k->numel() == a.batch), kVarlenDecode,
              ": seqused_k must be 1-D with one entry per sequence (", a.batch, ")");
  a.cu_seq_q = int32_data("cu_seq_q", cu_seq_q, q);
  a.cu_seq_k = paged ? nullptr : int32_data("cu_seq_k", cu_seq_k, q);
  a.seqused_k = int32_data("seqused_k", seqused_k, q);
  if (paged) {
    TORCH_CHECK(block_table->dim() == 2 && block_table->size(0) == a.batch, kVarlenDecode,
                ": block_table must be 2-D (batch, pages per sequence) with one row per sequence (", a.batch,
                "), got shape ", block_table->sizes());
    a.block_table = int32_data("block_table", block_table, q);
    a.block_table_stride = block_table->size(1);
    a.page_size = page_size;
  }
  a.max_q = max_q, a.max_k = max_k;
  a.scale = checked_scale(kVarlenDecode, scale);
  a.window = {window_left, window_right};
  TORCH_CHECK(num_splits >= 0 && num_splits <= 65535, kVarlenDecode, ": num_splits must be 0 (choose) to 65535, got ",
              num_splits);
  a.num_splits = static_cast<int>(num_splits);

  const c10::cuda::CUDAGuard on_device(q.device());
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(q.device().index()).stream();
  fa2::flash::VarlenPlan plan = fa2::flash::plan_varlen_forward(a);
  TORCH_CHECK(plan.runs(), kVarlenDecode, ": ", plan.refused);
  at::Tensor partial;
  if (plan.partial_floats > 0) {
    partial = at::empty({plan.partial_floats}, q.options().dtype(at::kFloat));
    plan.args.partial = partial.mutable_data_ptr<float>();
  }
  run_checked(kVarlenDecode, [&] { fa2::flash::run(plan, stream); });
  return {out, lse};
}

// ---- packed batches: sequences of any lengths in one launch (python/fa2_attention/varlen.py) ------

constexpr const char* kVarlenPacked = "fa2::varlen_packed";

// v6's packed forward on CUDA (kernel="fast" on an sm_90 GPU): every sequence's query tiles in one
// launch, the longest first, the rows read and written where they lie. The plan reads the lengths
// from host copies of the index tensors and checks them against the tensors. The rows past
// cu_seq_q[-1] are left for the caller to fill.
std::tuple<at::Tensor, at::Tensor> varlen_packed_cuda(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                                      const at::Tensor& cu_seq_q, const at::Tensor& cu_seq_k,
                                                      const std::optional<at::Tensor>& seqused_k, std::int64_t max_q,
                                                      std::int64_t max_k, std::optional<double> scale,
                                                      std::int64_t window_left, std::int64_t window_right) {
  TORCH_CHECK(q.dim() == 3 && k.dim() == 3 && v.sizes().equals(k.sizes()), kVarlenPacked,
              ": q must be (T_q, H, D) and k, v both (T_k, H_kv, D), got ", q.sizes(), ", ", k.sizes(), " and ",
              v.sizes());
  TORCH_CHECK(q.scalar_type() == at::kBFloat16 || q.scalar_type() == at::kHalf, kVarlenPacked,
              ": v6's packed forward takes bfloat16 or float16, got ", dtype_name(q));
  for (const auto& [name, t] : {std::pair{"k", &k}, std::pair{"v", &v}}) {
    TORCH_CHECK(t->scalar_type() == q.scalar_type() && t->device() == q.device(), kVarlenPacked, ": ", name,
                " must have q's dtype and device");
  }
  const at::Tensor qv = kernel_view(q, Kernel::fast), kv = kernel_view(k, Kernel::fast),
                   vv = kernel_view(v, Kernel::fast);
  at::Tensor out = at::empty(q.sizes(), q.options());
  at::Tensor lse = at::empty({q.size(1), q.size(0)}, q.options().dtype(at::kFloat));
  // The plan builds the schedule from the lengths on the host.
  const at::Tensor cu_q_host = cu_seq_q.to(at::kCPU).contiguous(), cu_k_host = cu_seq_k.to(at::kCPU).contiguous();
  at::Tensor used_host;
  if (seqused_k) used_host = seqused_k->to(at::kCPU).contiguous();

  fa2::FlashVarlenArgs a;
  a.dtype = kernel_dtype(q);
  set_tensors(a, qv, kv, vv, out, lse);
  a.batch = cu_seq_q.numel() - 1;
  TORCH_CHECK(cu_seq_k.numel() == cu_seq_q.numel(), kVarlenPacked, ": cu_seq_k must have cu_seq_q's length");
  a.cu_seq_q = int32_data("cu_seq_q", cu_seq_q, q);
  a.cu_seq_k = int32_data("cu_seq_k", cu_seq_k, q);
  a.seqused_k = int32_data("seqused_k", seqused_k, q);
  a.cu_seq_q_host = cu_q_host.const_data_ptr<std::int32_t>();
  a.cu_seq_k_host = cu_k_host.const_data_ptr<std::int32_t>();
  if (seqused_k) a.seqused_k_host = used_host.const_data_ptr<std::int32_t>();
  a.max_q = max_q, a.max_k = max_k;
  a.scale = checked_scale(kVarlenPacked, scale);
  a.window = {window_left, window_right};

  const c10::cuda::CUDAGuard on_device(q.device());
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(q.device().index()).stream();
  fa2::flash::PackedPlan plan = fa2::flash::plan_packed_forward(a);
  TORCH_CHECK(plan.runs(), kVarlenPacked, ": ", plan.refused);
  const at::Tensor schedule = at::empty({std::max<std::int64_t>(plan.schedule_bytes, 1)}, q.options().dtype(at::kByte));
  plan.args.schedule = schedule.data_ptr();
  run_checked(kVarlenPacked, [&] { fa2::flash::run(plan, stream); });
  return {out, lse};
}

constexpr const char* kVarlenPackedBackward = "fa2::varlen_packed_backward";

// v6b's packed backward on CUDA (kernel="fast" on an sm_90 GPU): every sequence's key tiles in one
// launch, between the preprocess and dQ's conversion, which run on the packed rows as they lie.
// dQ comes back for every row of q (0 where no sequence has the row or no key is seen), dK and dV
// for every row of k (0 where no sequence has the row).
std::tuple<at::Tensor, at::Tensor, at::Tensor> varlen_packed_backward_cuda(
    const at::Tensor& dout, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& out,
    const at::Tensor& lse, const at::Tensor& cu_seq_q, const at::Tensor& cu_seq_k, std::int64_t max_q,
    std::int64_t max_k, std::optional<double> scale, std::int64_t window_left, std::int64_t window_right,
    bool deterministic) {
  TORCH_CHECK(q.dim() == 3 && k.dim() == 3 && v.sizes().equals(k.sizes()), kVarlenPackedBackward,
              ": q must be (T_q, H, D) and k, v both (T_k, H_kv, D), got ", q.sizes(), ", ", k.sizes(), " and ",
              v.sizes());
  TORCH_CHECK(dout.sizes().equals(q.sizes()) && out.sizes().equals(q.sizes()), kVarlenPackedBackward,
              ": dout and out must have q's shape ", q.sizes(), ", got ", dout.sizes(), " and ", out.sizes());
  TORCH_CHECK(q.scalar_type() == at::kBFloat16 || q.scalar_type() == at::kHalf, kVarlenPackedBackward,
              ": v6b's packed backward takes bfloat16 or float16, got ", dtype_name(q));
  for (const auto& [name, t] :
       {std::pair{"k", &k}, std::pair{"v", &v}, std::pair{"out", &out}, std::pair{"dout", &dout}}) {
    TORCH_CHECK(t->scalar_type() == q.scalar_type() && t->device() == q.device(), kVarlenPackedBackward, ": ", name,
                " must have q's dtype and device");
  }
  TORCH_CHECK(lse.dim() == 2 && lse.size(0) == q.size(1) && lse.size(1) == q.size(0) &&
                  lse.scalar_type() == at::kFloat && lse.device() == q.device(),
              kVarlenPackedBackward, ": lse must be float32 (H, T_q) on q's device, got ", lse.sizes());
  TORCH_CHECK(cu_seq_k.numel() == cu_seq_q.numel(), kVarlenPackedBackward, ": cu_seq_k must have cu_seq_q's length");
  const at::Tensor qv = kernel_view(q, Kernel::fast), kv = kernel_view(k, Kernel::fast),
                   vv = kernel_view(v, Kernel::fast), ov = kernel_view(out, Kernel::fast),
                   dov = kernel_view(dout, Kernel::fast);
  const at::Tensor cu_q_host = cu_seq_q.to(at::kCPU).contiguous(), cu_k_host = cu_seq_k.to(at::kCPU).contiguous();
  at::Tensor dq = at::empty(q.sizes(), q.options());
  at::Tensor dk = at::empty(k.sizes(), k.options()), dv = at::empty(v.sizes(), v.options());
  at::Tensor d_rows = at::empty({q.size(1), q.size(0)}, q.options().dtype(at::kFloat));
  at::Tensor dq_accum = at::empty(q.sizes(), q.options().dtype(at::kFloat));

  fa2::FlashVarlenBwdArgs a;
  a.dtype = kernel_dtype(q);
  // out and lse are read only here; set_tensors takes them as the forward's outputs.
  set_tensors(a, qv, kv, vv, ov, lse);
  a.do_ = dov.const_data_ptr(), a.do_shape = shape_of<3>(dov), a.do_strides = strides_of<3>(dov);
  a.dq = dq.mutable_data_ptr(), a.dq_shape = shape_of<3>(dq), a.dq_strides = strides_of<3>(dq);
  a.dk = dk.mutable_data_ptr(), a.dk_shape = shape_of<3>(dk), a.dk_strides = strides_of<3>(dk);
  a.dv = dv.mutable_data_ptr(), a.dv_shape = shape_of<3>(dv), a.dv_strides = strides_of<3>(dv);
  a.d_rows = d_rows.mutable_data_ptr<float>();
  a.dq_accum = dq_accum.mutable_data_ptr<float>();
  a.batch = cu_seq_q.numel() - 1;
  a.cu_seq_q = int32_data("cu_seq_q", cu_seq_q, q);
  a.cu_seq_k = int32_data("cu_seq_k", cu_seq_k, q);
  a.cu_seq_q_host = cu_q_host.const_data_ptr<std::int32_t>();
  a.cu_seq_k_host = cu_k_host.const_data_ptr<std::int32_t>();
  a.max_q = max_q, a.max_k = max_k;
  a.scale = checked_scale(kVarlenPackedBackward, scale);
  a.window = {window_left, window_right};
  a.deterministic = deterministic;

  const c10::cuda::CUDAGuard on_device(q.device());
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(q.device().index()).stream();
  fa2::flash::PackedBackwardPlan plan = fa2::flash::plan_packed_backward(a);
  TORCH_CHECK(plan.runs(), kVarlenPackedBackward, ": ", plan.refused);
  const at::Tensor schedule = at::empty({std::max<std::int64_t>(plan.schedule_bytes, 1)}, q.options().dtype(at::kByte));
  plan.args.schedule = schedule.data_ptr();
  at::Tensor semaphores;
  if (deterministic) {
    semaphores = at::empty({fa2::packed_dq_semaphore_count(a.q_shape, a.batch)}, q.options().dtype(at::kInt));
    plan.args.dq_semaphores = semaphores.mutable_data_ptr<std::int32_t>();
  }
  // The key rows no sequence holds (before the first, after the last) get no block.
  const std::int64_t first_key = a.batch > 0 ? a.cu_seq_k_host[0] : 0;
  const std::int64_t end_key = a.batch > 0 ? a.cu_seq_k_host[a.batch] : 0;
  for (at::Tensor* g : {&dk, &dv}) {
    g->narrow(0, 0, first_key).zero_();
    g->narrow(0, end_key, k.size(0) - end_key).zero_();
  }
  run_checked(kVarlenPackedBackward, [&] { fa2::flash::run(plan, stream); });
  return {dq, dk, dv};
}

#endif  // FA2_TORCH_OPS_WITH_CUDA

// Empty when kernel="fast" can run v6 (and its packed forward) on the current CUDA device, else why
// not (varlen.py asks before it chooses the packed forward).
std::string sm90_unavailable() {
#if FA2_TORCH_OPS_WITH_CUDA
  return fa2::flash::sm90_unavailable();
#else
  return "this build of the operators has no CUDA";
#endif
}

}  // namespace

// The schemas: what torch.ops.fa2.forward / backward take and return (python/README.md, "API").
TORCH_LIBRARY(fa2, m) {
  m.def(
      "forward(Tensor q, Tensor k, Tensor v, bool is_causal, float? scale, str kernel, int window_left=-1, "
      "int window_right=-1, bool allow_tf32=True) -> (Tensor out, Tensor lse)");
  m.def(
      "backward(Tensor dout, Tensor q, Tensor k, Tensor v, Tensor out, Tensor lse, bool is_causal, float? scale, "
      "str kernel, bool deterministic=False, int window_left=-1, int window_right=-1, bool allow_tf32=True) -> (Tensor "
      "dq, Tensor dk, Tensor dv)");
  // CUDA only: varlen.py calls it for kernel="fast" when every sequence has few queries.
  m.def(
      "varlen_decode(Tensor q, Tensor k, Tensor v, Tensor cu_seq_q, Tensor? cu_seq_k, Tensor? seqused_k, "
      "Tensor? block_table, int max_q, int max_k, float? scale, int window_left, int window_right, int num_splits) "
      "-> (Tensor out, Tensor lse)");
  // CUDA only: varlen.py calls it for kernel="fast" on an sm_90 GPU for sequences of any lengths.
  m.def(
      "varlen_packed(Tensor q, Tensor k, Tensor v, Tensor cu_seq_q, Tensor cu_seq_k, Tensor? seqused_k, int max_q, "
      "int max_k, float? scale, int window_left, int window_right) -> (Tensor out, Tensor lse)");
  // CUDA only: varlen.py calls it for the backward of what varlen_packed ran.
  m.def(
      "varlen_packed_backward(Tensor dout, Tensor q, Tensor k, Tensor v, Tensor out, Tensor lse, Tensor cu_seq_q, "
      "Tensor cu_seq_k, int max_q, int max_k, float? scale, int window_left, int window_right, bool deterministic) "
      "-> (Tensor dq, Tensor dk, Tensor dv)");
  m.def("sm90_unavailable() -> str", &sm90_unavailable);
}

TORCH_LIBRARY_IMPL(fa2, CPU, m) {
  m.impl("forward", &forward_cpu);
  m.impl("backward", &backward_cpu);
}

#if FA2_TORCH_OPS_WITH_CUDA
TORCH_LIBRARY_IMPL(fa2, CUDA, m) {
  m.impl("forward", &forward_cuda);
  m.impl("backward", &backward_cuda);
  m.impl("varlen_decode", &varlen_decode_cuda);
  m.impl("varlen_packed", &varlen_packed_cuda);
  m.impl("varlen_packed_backward", &varlen_packed_backward_cuda);
}
#endif
