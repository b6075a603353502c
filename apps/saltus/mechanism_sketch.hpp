#pragma once
// The geometry of a planar mechanism for pictures (mechanism.json beside the CSV files): what
// to draw between which places, so that the plot script can animate outputs.csv.
//
//   {"points": [names], "bodies": [names],
//    "elements": [{"name", "type", "a": anchor, "b": anchor (two-ended elements); a rotational
//                  spring between bars has "bars": [name, name] instead}],
//    "contacts": [{"name", "point": anchor, "line_point": [x, y], "normal": [nx, ny],
//                  "line_body": name (a line carried by a body: point and normal in its frame)}]}
//   anchor: {"ground": [x, y]} | {"point": name} | {"body": name, "at": [x, y]} (body frame,
//   relative to the centre of mass) [m]
// Values that depend on parameters are evaluated at p.
#include <saltus/multibody/model.hpp>

#include <nlohmann/json.hpp>

namespace saltus::cli {

nlohmann::json mechanism_sketch(const multibody::Model& model, const Eigen::VectorXd& p);

}  // namespace saltus::cli
