#pragma once
// The built-in examples: the canonical problems of docs/benchmarks.md, exactly as defined
// there, with the parameter and cost names used in reports.
#include <saltus/core/problem.hpp>

#include <functional>
#include <string>
#include <vector>

namespace saltus::examples {

struct ExampleInfo {
  std::string name;
  std::string summary;
  std::function<Problem()> make;
};

/// Every built-in example, in the order `saltus list` shows them: the problems written in C++,
/// then the shipped mechanism model files by name (saltus/multibody/shipped_models.hpp: fivebar,
/// fivebar_floor, slidercrank, chain), each in its file's formulation.
const std::vector<ExampleInfo>& builtin_examples();

/// The example called `name`; throws InputError naming the known examples otherwise, or, for
/// the name of a folder, saying what a model is (refuse_a_folder).
Problem make_example(const std::string& name);

/// Throws InputError when `name` is no built-in example's but a folder's: "'NAME' is a
/// directory: a model is ...". A built-in's name wins over a folder of that name.
void refuse_a_folder(const std::string& name);

Problem ball1d();       ///< bouncing ball with linear drag
Problem galan();        ///< switched scalar ODE of Galan et al. (seed 002, Sec. 5.1)
Problem box2d();        ///< point mass bouncing in a box with quadratic drag
Problem time_events();  ///< time-triggered events with state-dependent jumps
Problem robertson();    ///< stiff chemical kinetics (SUNDIALS CVODES examples)
Problem robertson_dae();  ///< the same as a DAE with the conservation law (SUNDIALS IDAS examples)
Problem hiskens();      ///< switched linear system (Hiskens & Pai 2000)
Problem circle_drift();  ///< Hessenberg index-2 DAE with an event (docs/dae.md)
Problem hysteretic();   ///< oscillator with EM hysteresis and memory (seed 002, Sec. 5.2)

}  // namespace saltus::examples
