// A strided view of (batch, seq, dim) data and a host tensor that owns its storage.
// Shapes and strides count elements, exactly like PyTorch's x.shape and x.stride(), so a
// transposed or sliced tensor is just another set of strides over the same storage.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "common/bf16.hpp"
#include "common/numeric.hpp"

namespace fa2 {

template <int Rank>
using Extents = std::array<index_t, static_cast<std::size_t>(Rank)>;

template <int Rank>
Extents<Rank> contiguous_strides(const Extents<Rank>& shape) {
  Extents<Rank> strides{};
  index_t step = 1;
  for (int axis = Rank - 1; axis >= 0; --axis) {
    strides[static_cast<std::size_t>(axis)] = step;
    step *= shape[static_cast<std::size_t>(axis)];
  }
  return strides;
}

template <int Rank>
std::string to_string(const Extents<Rank>& e) {
  std::string s = "(";
  for (int i = 0; i < Rank; ++i) {
    s += std::to_string(e[static_cast<std::size_t>(i)]);
    s += (i + 1 < Rank) ? ", " : (Rank == 1 ? ",)" : ")");
  }
  return s;
}

// Non-owning: a pointer to element (0, 0, ...), a shape and element strides.
template <class T, int Rank = 3>
class TensorView {
 public:
  static_assert(Rank >= 1, "a tensor view needs at least one axis");
  using value_type = std::remove_const_t<T>;
  using Shape = Extents<Rank>;

  TensorView() = default;
  TensorView(T* data, const Shape& shape, const Shape& strides) : data_(data), shape_(shape), strides_(strides) {}
  TensorView(T* data, const Shape& shape) : TensorView(data, shape, contiguous_strides<Rank>(shape)) {}

  // A view of non-const elements converts to a view of const elements.
  template <class U, std::enable_if_t<std::is_same_v<const U, T> && !std::is_same_v<U, T>, int> = 0>
  TensorView(const TensorView<U, Rank>& other)  // NOLINT(google-explicit-constructor)
      : data_(other.data()), shape_(other.shape()), strides_(other.strides()) {}

  T* data() const { return data_; }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  index_t size(int axis) const { return shape_[static_cast<std::size_t>(axis)]; }
  index_t stride(int axis) const { return strides_[static_cast<std::size_t>(axis)]; }

  index_t numel() const {
    index_t n = 1;
    for (index_t s : shape_) n *= s;
    return n;
  }

  bool is_contiguous() const { return strides_ == contiguous_strides<Rank>(shape_); }

  template <class... I>
  index_t offset(I... idx) const {
    static_assert(sizeof...(I) == Rank, "one index per axis");
    const Extents<Rank> i{static_cast<index_t>(idx)...};
    index_t off = 0;
    for (std::size_t a = 0; a < Rank; ++a) off += i[a] * strides_[a];
    return off;
  }

  template <class... I>
  T& operator()(I... idx) const {
    return data_[offset(idx...)];
  }

  // Element at a multi-index given as an array (used by generic loops).
  T& at(const Shape& idx) const {
    index_t off = 0;
    for (std::size_t a = 0; a < Rank; ++a) off += idx[a] * strides_[a];
    return data_[off];
  }

 private:
  T* data_ = nullptr;
  Shape shape_{};
  Shape strides_{};
};

// Calls f(index) for every multi-index of `shape`, last axis fastest.
template <int Rank, class F>
void for_each_index(const Extents<Rank>& shape, F&& f) {
  for (index_t s : shape) {
    if (s == 0) return;
  }
  Extents<Rank> idx{};
  while (true) {
    f(idx);
    int axis = Rank - 1;
    while (axis >= 0) {
      auto& i = idx[static_cast<std::size_t>(axis)];
      if (++i < shape[static_cast<std::size_t>(axis)]) break;
      i = 0;
      --axis;
    }
    if (axis < 0) return;
  }
}

// Owns host storage. By default contiguous; `Tensor::strided` lays the same shape out with
// any non-negative strides inside a larger buffer (padded rows, a head slice of a
// (B, N, H, D) tensor, a transposed matrix...). The gaps are real memory that tests can
// fill with a poison value to prove that a kernel never writes there.
template <class T, int Rank = 3>
class Tensor {
 public:
  using Shape = Extents<Rank>;

  Tensor() = default;
  explicit Tensor(const Shape& shape, T fill = T{}) : Tensor(shape, contiguous_strides<Rank>(shape), fill) {}

  static Tensor strided(const Shape& shape, const Shape& strides, T fill = T{}) { return Tensor(shape, strides, fill); }

  TensorView<T, Rank> view() { return {storage_.data(), view_shape_, view_strides_}; }
  TensorView<const T, Rank> view() const { return {storage_.data(), view_shape_, view_strides_}; }
  TensorView<const T, Rank> cview() const { return view(); }

  const Shape& shape() const { return view_shape_; }
  const Shape& strides() const { return view_strides_; }
  index_t size(int axis) const { return view_shape_[static_cast<std::size_t>(axis)]; }
  index_t numel() const { return view().numel(); }

  template <class... I>
  T& operator()(I... idx) {
    return view()(idx...);
  }
  template <class... I>
  const T& operator()(I... idx) const {
    return view()(idx...);
  }

  // The whole buffer, gaps included.
  std::vector<T>& storage() { return storage_; }
  const std::vector<T>& storage() const { return storage_; }

 private:
  Tensor(const Shape& shape, const Shape& strides, T fill) : view_shape_(shape), view_strides_(strides) {
    index_t extent = 1;  // one past the largest offset the view can reach
    for (std::size_t a = 0; a < Rank; ++a) {
      if (shape[a] < 0)
        throw std::invalid_argument("Tensor: shape entries must be >= 0, got " + to_string<Rank>(shape));
      if (strides[a] < 0) throw std::invalid_argument("Tensor: strides must be >= 0, got " + to_string<Rank>(strides));
      if (shape[a] == 0) extent = 0;
    }
    if (extent != 0) {
      for (std::size_t a = 0; a < Rank; ++a) extent += (shape[a] - 1) * strides[a];
    }
    storage_.assign(static_cast<std::size_t>(extent), fill);
  }

  std::vector<T> storage_;
  Shape view_shape_{};
  Shape view_strides_{};
};

// Copies `src` into `dst` element by element, converting the element type.
template <class Dst, class Src, int Rank>
void copy_convert(TensorView<const Src, Rank> src, TensorView<Dst, Rank> dst) {
  if (src.shape() != dst.shape()) {
    throw std::invalid_argument("copy_convert: shapes differ, " + to_string<Rank>(src.shape()) + " vs " +
                                to_string<Rank>(dst.shape()));
  }
  for_each_index<Rank>(src.shape(), [&](const Extents<Rank>& i) { dst.at(i) = convert<Dst>(src.at(i)); });
}

// A contiguous copy of `src` with elements of type To (e.g. the float64 copy a reference uses).
template <class To, class From, int Rank>
Tensor<To, Rank> converted(TensorView<const From, Rank> src) {
  Tensor<To, Rank> out(src.shape());
  copy_convert<To, From, Rank>(src, out.view());
  return out;
}

}  // namespace fa2
