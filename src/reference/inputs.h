// Random program inputs, reproducible from a seed.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "graph/graph.h"

namespace tilefuse {

// One contiguous tensor per g.parameters(), drawn from a generator seeded by
// `seed`: the same seed gives the same inputs on every machine and with any
// `num_threads` (the threads that draw: 0 means all hardware threads; inputs
// of one block, 65536 elements, or less start none):
// - floating: uniform in [-1, 1), rounded to the dtype; never zero;
// - integer with `in [lo, hi)`: uniform in [lo, hi), with lo and hi-1 each
//   present at least once (when numel >= 2), so edge values are always tried;
// - integer used as a gather index without a range: uniform in the valid
//   range [0, size) of the dim it indexes (the smallest such size if it
//   indexes several), a random permutation when its numel equals that size;
//   a UserError (at the parameter, naming it and the indexed dim) when that
//   size is 0 and the parameter has elements: no index value is valid;
// - other integers: uniform in the dtype's range clipped to [-128, 128);
// - bool: fair coin.
// Each parameter draws from its own streams (one per block of its elements),
// so adding a parameter leaves the values of those before it unchanged.
// A parameter whose position is true in `given` (the caller has its value,
// e.g. from a file) is neither drawn nor checked: its tensor is left
// undefined (Tensor()) for the caller to replace; the others draw the same
// values as without it. A UserError also when a symbolic range is empty at
// these sizes.
std::vector<Tensor> make_random_inputs(const Graph& g, uint64_t seed, int num_threads = 0,
                                       const std::vector<bool>& given = {});

namespace detail {
// The stored bits of a float input drawn as k * 2^-52 (|k| <= 2^52; the
// elements are uniform draws of k) for floating dtype `dt`, computed with
// integer arithmetic; all ones when that draw is redrawn (it rounds to 0 or
// up to 1). The tests check it against store_element(dt, k * 0x1p-52).
uint64_t random_float_bits(DType dt, int64_t k);
}  // namespace detail

}  // namespace tilefuse
