// The method's inputs for forward mode (ETFT file or ones) and its outputs as ETFT tensors.
#pragma once

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/core/exec_aten/util/scalar_type_util.h>

#include "etfarm_args.h"
#include "etfarm_etft.h"

namespace etfarm {

using ::executorch::aten::ScalarType;
using ::executorch::extension::Module;
using ::executorch::extension::TensorPtr;
using ::executorch::runtime::Error;
using ::executorch::runtime::EValue;
using ::executorch::runtime::MethodMeta;
using ::executorch::runtime::Tag;

inline std::string describe(Error err) {
  char code[16];
  std::snprintf(code, sizeof(code), "0x%" PRIx32, static_cast<uint32_t>(err));
  return std::string(::executorch::runtime::to_string(err)) + " (" + code + ")";
}

inline std::string dtype_name(uint32_t code) {
  static const char* names[] = {"Byte", "Char", "Short", "Int", "Long", "Half", "Float", "Double",
                                "ComplexHalf", "ComplexFloat", "ComplexDouble", "Bool"};
  return code < sizeof(names) / sizeof(names[0]) ? names[code] : "ScalarType(" + std::to_string(code) + ")";
}

inline void fill_ones(ScalarType type, uint8_t* data, size_t numel, size_t elsize) {
  for (size_t i = 0; i < numel; ++i) {
    uint8_t* p = data + i * elsize;
    switch (type) {
      case ScalarType::Float: {
        const float one = 1.0f;
        std::memcpy(p, &one, 4);
        break;
      }
      case ScalarType::Double: {
        const double one = 1.0;
        std::memcpy(p, &one, 8);
        break;
      }
      case ScalarType::Half:
        p[0] = 0x00, p[1] = 0x3C;  // IEEE half 1.0, little-endian
        break;
      case ScalarType::BFloat16:
        p[0] = 0x80, p[1] = 0x3F;
        break;
      default:  // integers and bool: little-endian 1
        std::memset(p, 0, elsize);
        p[0] = 1;
    }
  }
}

// The method's inputs, in buffers this runner owns for the whole run.
struct Inputs {
  std::vector<std::vector<uint8_t>> buffers;
  std::vector<TensorPtr> tensors;
  std::vector<std::string> given_shapes;  // for error messages when set_input refuses one
};

inline bool prepare_inputs(const MethodMeta& meta, const Options& opts, Inputs* in, std::string* error) {
  std::vector<HostTensor> given;
  const std::string src = opts.inputs.empty() ? "" : "inputs file '" + opts.inputs + "'";
  if (!opts.inputs.empty()) {
    std::vector<uint8_t> raw;
    std::string why;
    if (!read_file(opts.inputs, &raw, &why) || !parse_etft(raw, &given, &why)) {
      *error = src + ": " + why;
      return false;
    }
    if (given.size() != meta.num_inputs()) {
      *error = src + " holds " + std::to_string(given.size()) + " tensors but method '" + opts.method_name +
          "' takes " + std::to_string(meta.num_inputs()) + " inputs";
      return false;
    }
  }
  for (size_t i = 0; i < meta.num_inputs(); ++i) {
    const std::string where = "input " + std::to_string(i) + ": ";
    auto tag = meta.input_tag(i);
    if (!tag.ok() || tag.get() != Tag::Tensor) {
      *error = where + "only tensor inputs are supported";
      return false;
    }
    auto info = meta.input_tensor_meta(i);
    if (!info.ok()) {
      *error = where + "no tensor metadata: " + describe(info.error());
      return false;
    }
    const ScalarType type = info->scalar_type();
    const uint32_t code = static_cast<uint32_t>(type);
    const size_t elsize = ::executorch::runtime::elementSize(type);
    std::vector<int64_t> bound(info->sizes().begin(), info->sizes().end());
    std::vector<uint8_t> dim_order(info->dim_order().begin(), info->dim_order().end());
    std::vector<int64_t> sizes = bound;
    if (!given.empty()) {
      const HostTensor& g = given[i];
      if (g.scalar_type != code) {
        *error = where + src + " has dtype " + dtype_name(g.scalar_type) + " but the method expects " +
            dtype_name(code);
        return false;
      }
      bool fits = g.sizes.size() == bound.size();
      for (size_t d = 0; fits && d < bound.size(); ++d) {
        fits = g.sizes[d] <= bound[d];
      }
      if (!fits) {
        *error = where + src + " has shape " + shape_str(g.sizes) + " but the method expects " +
            shape_str(bound);
        return false;
      }
      sizes = g.sizes;  // below the bound only for dynamic shapes; set_input checks
    }
    size_t numel = 1;
    for (int64_t s : sizes) numel *= static_cast<size_t>(s);
    std::vector<uint8_t> buffer(std::max<size_t>(numel * elsize, 1));
    const std::vector<int64_t> strides = strides_from_dim_order(sizes, dim_order);
    if (given.empty()) {
      fill_ones(type, buffer.data(), numel, elsize);
    } else {  // ETFT is row-major; the method may want another dim order
      copy_strided(given[i].data.data(), contiguous_strides(sizes), buffer.data(), strides, sizes,
                           elsize);
    }
    std::vector<::executorch::aten::SizesType> sizes32(sizes.begin(), sizes.end());
    std::vector<::executorch::aten::StridesType> strides32(strides.begin(), strides.end());
    in->tensors.push_back(::executorch::extension::from_blob(buffer.data(), sizes32, strides32, type));
    in->buffers.push_back(std::move(buffer));
    in->given_shapes.push_back(shape_str(sizes) + " (method bound " + shape_str(bound) + ")");
  }
  return true;
}

// Re-set before every execution: a method may reuse input memory for
// intermediates, and every execution must see the same inputs.
inline bool set_inputs(Module& module, const std::string& method, const Inputs& in, std::string* error) {
  for (size_t i = 0; i < in.tensors.size(); ++i) {
    const Error err = module.set_input(method, EValue(*in.tensors[i]), i);
    if (err != Error::Ok) {
      *error = "input " + std::to_string(i) + ": the method refused shape " + in.given_shapes[i] + ": " +
          describe(err);
      return false;
    }
  }
  return true;
}

inline bool collect_outputs(const std::vector<EValue>& outputs, std::vector<HostTensor>* host, std::string* error) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const EValue& v = outputs[i];
    HostTensor h;
    if (v.isTensor()) {
      const auto& t = v.toTensor();
      h.scalar_type = static_cast<uint32_t>(t.scalar_type());
      const size_t elsize = etft_element_size(h.scalar_type);
      if (elsize == 0) {
        *error = "output " + std::to_string(i) + " has dtype " + dtype_name(h.scalar_type) +
            ", which an ETFT file cannot hold";
        return false;
      }
      h.sizes.assign(t.sizes().begin(), t.sizes().end());
      std::vector<int64_t> strides(t.strides().begin(), t.strides().end());
      h.data.resize(t.numel() * elsize);
      copy_strided(static_cast<const uint8_t*>(t.const_data_ptr()), strides, h.data.data(),
                           contiguous_strides(h.sizes), h.sizes, elsize);
    } else if (v.isInt()) {  // scalars become 0-dim tensors
      const int64_t x = v.toInt();
      h.scalar_type = static_cast<uint32_t>(ScalarType::Long);
      h.data.assign(reinterpret_cast<const uint8_t*>(&x), reinterpret_cast<const uint8_t*>(&x) + 8);
    } else if (v.isDouble()) {
      const double x = v.toDouble();
      h.scalar_type = static_cast<uint32_t>(ScalarType::Double);
      h.data.assign(reinterpret_cast<const uint8_t*>(&x), reinterpret_cast<const uint8_t*>(&x) + 8);
    } else if (v.isBool()) {
      h.scalar_type = static_cast<uint32_t>(ScalarType::Bool);
      h.data.assign(1, v.toBool() ? 1 : 0);
    } else {
      *error = "output " + std::to_string(i) + " is not a tensor or scalar; it cannot be written as ETFT";
      return false;
    }
    host->push_back(std::move(h));
  }
  return true;
}

}  // namespace etfarm
