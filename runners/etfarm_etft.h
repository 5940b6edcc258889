// ETFT tensor files (spec: orchestrator/tensorfile.py) and layout helpers.
// Little-endian: "ETFT", u32 version=1, u32 count, then per tensor
// u32 scalar_type, u32 ndim, i64 sizes[ndim], u64 nbytes, data (row-major).
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace etfarm {

struct HostTensor {
  uint32_t scalar_type = 0;  // ExecuTorch ScalarType code
  std::vector<int64_t> sizes;
  std::vector<uint8_t> data;  // contiguous row-major
};

constexpr uint32_t kEtftVersion = 1;
constexpr uint32_t kEtftMaxDims = 16;

// Element size of the ScalarType codes ETFT carries; 0 for the others.
// Must stay in sync with SCALAR_TYPES in orchestrator/tensorfile.py.
inline size_t etft_element_size(uint32_t code) {
  switch (code) {
    case 0:  // Byte
    case 1:  // Char
    case 11:  // Bool
      return 1;
    case 2:  // Short
    case 5:  // Half
      return 2;
    case 3:  // Int
    case 6:  // Float
      return 4;
    case 4:  // Long
    case 7:  // Double
      return 8;
    default:
      return 0;
  }
}

inline std::string shape_str(const std::vector<int64_t>& sizes) {
  std::string out = "[";
  for (size_t i = 0; i < sizes.size(); ++i) {
    out += (i ? ", " : "") + std::to_string(sizes[i]);
  }
  return out + "]";
}

inline bool read_file(const std::string& path, std::vector<uint8_t>* out, std::string* error) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    *error = "cannot open '" + path + "': " + std::strerror(errno);
    return false;
  }
  out->clear();
  uint8_t chunk[1 << 16];
  size_t n = 0;
  while ((n = std::fread(chunk, 1, sizeof(chunk), f)) > 0) {
    out->insert(out->end(), chunk, chunk + n);
  }
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) {
    *error = "cannot read '" + path + "'";
    return false;
  }
  return true;
}

// Writes to PATH.tmp then renames, so a reader never sees a half-written file.
inline bool write_file_atomic(const std::string& path, const void* data, size_t size, std::string* error) {
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) {
    *error = "cannot create '" + tmp + "': " + std::strerror(errno);
    return false;
  }
  const bool wrote = size == 0 || std::fwrite(data, 1, size, f) == size;
  const bool closed = std::fclose(f) == 0;
  if (!wrote || !closed || std::rename(tmp.c_str(), path.c_str()) != 0) {
    *error = "cannot write '" + path + "': " + std::strerror(errno);
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

namespace detail {

class Reader {
 public:
  Reader(const std::vector<uint8_t>& buf) : buf_(buf) {}
  template <typename T>
  bool take(T* out) {
    if (buf_.size() - pos_ < sizeof(T)) {
      return false;
    }
    std::memcpy(out, buf_.data() + pos_, sizeof(T));  // host is little-endian (x86, arm)
    pos_ += sizeof(T);
    return true;
  }
  bool take_bytes(size_t n, std::vector<uint8_t>* out) {
    if (buf_.size() - pos_ < n) {
      return false;
    }
    out->assign(buf_.begin() + pos_, buf_.begin() + pos_ + n);
    pos_ += n;
    return true;
  }

 private:
  const std::vector<uint8_t>& buf_;
  size_t pos_ = 0;
};

inline void put(std::vector<uint8_t>* out, const void* p, size_t n) {
  const uint8_t* b = static_cast<const uint8_t*>(p);
  out->insert(out->end(), b, b + n);
}

}  // namespace detail

inline bool parse_etft(const std::vector<uint8_t>& buf, std::vector<HostTensor>* out, std::string* error) {
  detail::Reader r(buf);
  char magic[4];
  uint32_t version = 0, count = 0;
  if (!r.take(&magic) || std::memcmp(magic, "ETFT", 4) != 0) {
    *error = "not an ETFT tensor file (bad magic)";
    return false;
  }
  if (!r.take(&version) || version != kEtftVersion) {
    *error = "unsupported ETFT version " + std::to_string(version);
    return false;
  }
  if (!r.take(&count)) {
    *error = "truncated header";
    return false;
  }
  out->clear();
  for (uint32_t t = 0; t < count; ++t) {
    HostTensor tensor;
    uint32_t ndim = 0;
    const std::string where = "tensor " + std::to_string(t) + ": ";
    if (!r.take(&tensor.scalar_type) || !r.take(&ndim)) {
      *error = where + "truncated";
      return false;
    }
    const size_t elsize = etft_element_size(tensor.scalar_type);
    if (elsize == 0) {
      *error = where + "unsupported scalar type " + std::to_string(tensor.scalar_type);
      return false;
    }
    if (ndim > kEtftMaxDims) {
      *error = where + "too many dimensions (" + std::to_string(ndim) + ")";
      return false;
    }
    uint64_t numel = 1;
    for (uint32_t d = 0; d < ndim; ++d) {
      int64_t size = 0;
      if (!r.take(&size)) {
        *error = where + "truncated";
        return false;
      }
      if (size < 0 || (size > 0 && numel > (UINT64_MAX / 16) / static_cast<uint64_t>(size))) {
        *error = where + "invalid size " + std::to_string(size);
        return false;
      }
      numel *= static_cast<uint64_t>(size);
      tensor.sizes.push_back(size);
    }
    uint64_t nbytes = 0;
    if (!r.take(&nbytes)) {
      *error = where + "truncated";
      return false;
    }
    if (nbytes != numel * elsize) {
      *error = where + "holds " + std::to_string(nbytes) + " bytes but shape " + shape_str(tensor.sizes) +
          " needs " + std::to_string(numel * elsize);
      return false;
    }
    if (!r.take_bytes(nbytes, &tensor.data)) {
      *error = where + "truncated data";
      return false;
    }
    out->push_back(std::move(tensor));
  }
  return true;
}

inline std::vector<uint8_t> serialize_etft(const std::vector<HostTensor>& tensors) {
  std::vector<uint8_t> out;
  detail::put(&out, "ETFT", 4);
  const uint32_t version = kEtftVersion;
  const uint32_t count = static_cast<uint32_t>(tensors.size());
  detail::put(&out, &version, 4);
  detail::put(&out, &count, 4);
  for (const HostTensor& t : tensors) {
    const uint32_t ndim = static_cast<uint32_t>(t.sizes.size());
    const uint64_t nbytes = t.data.size();
    detail::put(&out, &t.scalar_type, 4);
    detail::put(&out, &ndim, 4);
    detail::put(&out, t.sizes.data(), 8 * t.sizes.size());
    detail::put(&out, &nbytes, 8);
    detail::put(&out, t.data.data(), t.data.size());
  }
  return out;
}

// Row-major strides (in elements) of `sizes`.
inline std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> strides(sizes.size(), 1);
  for (size_t d = sizes.size(); d-- > 1;) {
    strides[d - 1] = strides[d] * sizes[d];
  }
  return strides;
}

// Strides of a tensor laid out in `dim_order` (outermost dimension first).
inline std::vector<int64_t> strides_from_dim_order(const std::vector<int64_t>& sizes, const std::vector<uint8_t>& dim_order) {
  std::vector<int64_t> strides(sizes.size(), 1);
  int64_t running = 1;
  for (size_t k = dim_order.size(); k-- > 0;) {
    strides[dim_order[k]] = running;
    running *= sizes[dim_order[k]];
  }
  return strides;
}

// Copies every element of a `sizes` tensor between two layouts.
inline void copy_strided(const uint8_t* src, const std::vector<int64_t>& src_strides, uint8_t* dst,
                         const std::vector<int64_t>& dst_strides, const std::vector<int64_t>& sizes, size_t elsize) {
  int64_t numel = 1;
  for (int64_t s : sizes) {
    numel *= s;
  }
  if (numel == 0) {
    return;
  }
  if (src_strides == dst_strides && src_strides == contiguous_strides(sizes)) {
    std::memcpy(dst, src, static_cast<size_t>(numel) * elsize);
    return;
  }
  std::vector<int64_t> index(sizes.size(), 0);
  for (int64_t n = 0; n < numel; ++n) {
    int64_t so = 0, doff = 0;
    for (size_t d = 0; d < sizes.size(); ++d) {
      so += index[d] * src_strides[d];
      doff += index[d] * dst_strides[d];
    }
    std::memcpy(dst + doff * elsize, src + so * elsize, elsize);
    for (size_t d = sizes.size(); d-- > 0;) {  // odometer increment, last dim fastest
      if (++index[d] < sizes[d]) {
        break;
      }
      index[d] = 0;
    }
  }
}

}  // namespace etfarm
