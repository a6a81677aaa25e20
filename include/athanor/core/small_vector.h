// SmallVec: a vector with fixed inline capacity and no heap allocation. Shapes, strides and
// op-output lists use it so that creating a tensor or dispatching an op never mallocs for
// metadata (the dispatch-overhead budget is a few hundred nanoseconds).
//
//   SmallVec<int64_t, 16> dims{2, 3};
//   dims.push_back(4);  // throws ShapeError past the capacity, never overflows
//   assert(dims.size() == 3 && dims[2] == 4);
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <initializer_list>
#include <span>
#include <vector>

#include "athanor/core/error.h"

namespace ath {

template <class T, std::size_t N>
class SmallVec {
 public:
  using value_type = T;
  using iterator = T*;
  using const_iterator = const T*;

  SmallVec() = default;
  // Copies only the live entries: shapes are copied on every op call.
  SmallVec(const SmallVec& o) : size_(o.size_) { std::copy(o.begin(), o.end(), data_.begin()); }
  SmallVec& operator=(const SmallVec& o) {
    size_ = o.size_;
    std::copy(o.begin(), o.end(), data_.begin());
    return *this;
  }
  SmallVec(std::initializer_list<T> init) { assign(init.begin(), init.end()); }
  explicit SmallVec(std::size_t n, const T& value = T()) { resize(n, value); }
  template <class It>
  SmallVec(It first, It last) {
    assign(first, last);
  }
  SmallVec(std::span<const T> s) { assign(s.begin(), s.end()); }     // NOLINT: implicit by design
  SmallVec(const std::vector<T>& v) { assign(v.begin(), v.end()); }  // NOLINT

  template <class It>
  void assign(It first, It last) {
    size_ = 0;
    for (; first != last; ++first) push_back(*first);
  }
  void push_back(const T& v) {
    ATH_CHECK(size_ < N, ShapeError, "at most {} entries are supported, got more", N);
    data_[size_++] = v;
  }
  void pop_back() { --size_; }
  void resize(std::size_t n, const T& value = T()) {
    ATH_CHECK(n <= N, ShapeError, "at most {} entries are supported, got {}", N, n);
    for (std::size_t i = size_; i < n; ++i) data_[i] = value;
    size_ = n;
  }
  void insert(const_iterator pos, const T& v) {
    std::size_t at = static_cast<std::size_t>(pos - begin());
    push_back(v);
    std::rotate(begin() + at, end() - 1, end());
  }
  void erase(const_iterator pos) {
    std::size_t at = static_cast<std::size_t>(pos - begin());
    std::move(begin() + at + 1, end(), begin() + at);
    --size_;
  }
  void clear() { size_ = 0; }

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  static constexpr std::size_t capacity() { return N; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }
  T& back() { return data_[size_ - 1]; }
  const T& back() const { return data_[size_ - 1]; }
  T* data() { return data_.data(); }
  const T* data() const { return data_.data(); }
  T* begin() { return data_.data(); }
  T* end() { return data_.data() + size_; }
  const T* begin() const { return data_.data(); }
  const T* end() const { return data_.data() + size_; }

  operator std::span<const T>() const { return {data(), size_}; }  // NOLINT
  std::vector<T> to_vector() const { return {begin(), end()}; }

  friend bool operator==(const SmallVec& a, const SmallVec& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  // Not value-initialized: only [0, size_) is ever read, and zeroing 12 entries per shape shows
  // up in the dispatch overhead.
  std::array<T, N> data_;
  std::size_t size_ = 0;
};

}  // namespace ath
