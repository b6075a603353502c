// Block tangents: a right-hand side evaluated in DualBlock scalars gives kTangentBlock tangents
// from one evaluation (Problem::set_block_tangents). The forward sensitivities of a 64-rod chain
// evaluate its right-hand side about 20,000 times per parameter in Dual; with blocks, once for
// up to four parameters, and the shared work (assembly, the KKT factorization) is done once.
#include <saltus/core/problem.hpp>

#include <algorithm>

namespace saltus {

namespace {

/// The DualBlock vectors of one evaluation, kept per thread so that no evaluation allocates
/// once the sizes are reached.
struct BlockWorkspace {
  VectorX<DualBlock> x, xdot, p, out, out_rates;
};

/// value + directions.col(first .. first + width - 1) as the directional parts of `block`
/// (the remaining directions zero).
void seed_block(VectorX<DualBlock>& block, In<double> value, const Eigen::Ref<const Eigen::MatrixXd>& directions,
                Eigen::Index first, int width) {
  block.resize(value.size());
  for (Eigen::Index i = 0; i < value.size(); ++i) {
    DualBlock& b = block[i];
    b.a = value[i];
    b.v.fill(0.0);
    for (int k = 0; k < width; ++k) b.v[k] = directions(i, first + k);
  }
}

/// The directional parts of `block` into out.col(first .. first + width - 1).
void write_directions(const VectorX<DualBlock>& block, Eigen::Index first, int width, Eigen::Ref<Eigen::MatrixXd> out) {
  for (Eigen::Index i = 0; i < block.size(); ++i) {
    for (int k = 0; k < width; ++k) out(i, first + k) = block[i].v[k];
  }
}

/// Calls evaluate(first, width) once per block of kTangentBlock of `directions` directions.
template <class Evaluate>
void per_block(Eigen::Index directions, Evaluate&& evaluate) {
  for (Eigen::Index first = 0; first < directions; first += kTangentBlock) {
    evaluate(first, static_cast<int>(std::min<Eigen::Index>(kTangentBlock, directions - first)));
  }
}

}  // namespace

RhsTangentsFn block_tangents(RhsFn<DualBlock> f) {
  return [f = std::move(f)](double t, In<double> x, In<double> p, const Eigen::Ref<const Eigen::MatrixXd>& dx,
                            const Eigen::Ref<const Eigen::MatrixXd>& dp, Eigen::Ref<Eigen::MatrixXd> out) {
    thread_local BlockWorkspace ws;
    ws.out.resize(x.size());
    per_block(dx.cols(), [&](Eigen::Index first, int width) {
      seed_block(ws.x, x, dx, first, width);
      seed_block(ws.p, p, dp, first, width);
      f(DualBlock(t), ws.x, ws.p, ws.out);
      write_directions(ws.out, first, width, out);
    });
  };
}

ResidualTangentsFn block_residual_tangents(ResidualFn<DualBlock> f) {
  return [f = std::move(f)](double t, In<double> x, In<double> xdot, In<double> p,
                            const Eigen::Ref<const Eigen::MatrixXd>& dx, const Eigen::Ref<const Eigen::MatrixXd>& dxdot,
                            const Eigen::Ref<const Eigen::MatrixXd>& dp, Eigen::Ref<Eigen::MatrixXd> out) {
    thread_local BlockWorkspace ws;
    ws.out.resize(x.size());
    per_block(dx.cols(), [&](Eigen::Index first, int width) {
      seed_block(ws.x, x, dx, first, width);
      seed_block(ws.xdot, xdot, dxdot, first, width);
      seed_block(ws.p, p, dp, first, width);
      f(DualBlock(t), ws.x, ws.xdot, ws.p, ws.out);
      write_directions(ws.out, first, width, out);
    });
  };
}

CompletionTangentsFn block_completion_tangents(CompletionFn<DualBlock> f) {
  return [f = std::move(f)](double t, In<double> x_guess, In<double> p, const Eigen::Ref<const Eigen::MatrixXd>& dx_guess,
                            const Eigen::Ref<const Eigen::MatrixXd>& dp, Eigen::Ref<Eigen::MatrixXd> x_out,
                            Eigen::Ref<Eigen::MatrixXd> xdot_out) {
    thread_local BlockWorkspace ws;
    ws.out.resize(x_guess.size());
    ws.out_rates.resize(x_guess.size());
    per_block(dx_guess.cols(), [&](Eigen::Index first, int width) {
      seed_block(ws.x, x_guess, dx_guess, first, width);
      seed_block(ws.p, p, dp, first, width);
      f(DualBlock(t), ws.x, ws.p, ws.out, ws.out_rates);
      write_directions(ws.out, first, width, x_out);
      write_directions(ws.out_rates, first, width, xdot_out);
    });
  };
}

}  // namespace saltus
