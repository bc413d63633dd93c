// Random program inputs, reproducible from a seed.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "graph/graph.h"

namespace tilefuse {

// One contiguous tensor per g.parameters(), drawn from a generator seeded by
// `seed` (the same seed gives the same inputs on every machine):
// - floating: uniform in [-1, 1), rounded to the dtype; never all zeros;
// - integer with `in [lo, hi)`: uniform in [lo, hi), with lo and hi-1 each
//   present at least once (when numel >= 2), so edge values are always tried;
// - integer used as a gather index without a range: uniform in the valid
//   range [0, size) of the dim it indexes (the smallest such size if it
//   indexes several), a random permutation when its numel equals that size;
// - other integers: uniform in the dtype's range clipped to [-128, 128);
// - bool: fair coin.
std::vector<Tensor> make_random_inputs(const Graph& g, uint64_t seed);

}  // namespace tilefuse
