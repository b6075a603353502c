#include <saltus/core/heap_settings.hpp>

#include <iostream>

#include "cli.hpp"

int main(int argc, char** argv) {
  saltus::retain_freed_heap_memory();  // heap_settings.hpp: the dense formulations' matrix churn
  return saltus::cli::run(argc, argv, std::cout, std::cerr);
}
