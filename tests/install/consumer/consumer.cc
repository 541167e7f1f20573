// A program that knows libcollective only through its installed package.
#include <collective/collective.h>

#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
  collective::Environment environment(argc, argv);
  auto world = collective::Communicator::world();
  std::vector<float> values(1000, static_cast<float>(world.rank() + 1));
  world.all_reduce(std::span<float>(values));
  const float expected = static_cast<float>(world.size() * (world.size() + 1) / 2);
  for (float v : values) {
    if (v != expected) {
      std::fprintf(stderr, "rank %d: expected %g, got %g\n", world.rank(), expected, v);
      return 1;
    }
  }
  if (world.rank() == 0)
    std::printf("consumer: all_reduce OK on %d ranks (libcollective %s)\n", world.size(),
                collective::version_string());
  return 0;
}
