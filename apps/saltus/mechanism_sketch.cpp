#include "mechanism_sketch.hpp"

namespace saltus::cli {

namespace {

using multibody::ElementType;
using multibody::PointRef;

nlohmann::json xy(const multibody::Value& x, const multibody::Value& y, const Eigen::VectorXd& p) {
  return nlohmann::json::array({x.at<double>(p), y.at<double>(p)});
}

nlohmann::json anchor(const multibody::Model& m, const PointRef& r, const Eigen::VectorXd& p) {
  switch (r.kind) {
    case PointRef::Kind::Ground:
      return {{"ground", xy(r.x, r.y, p)}};
    case PointRef::Kind::Point:
      return {{"point", m.points.at(static_cast<size_t>(r.index)).name}};
    case PointRef::Kind::Body:
      return {{"body", m.bodies.at(static_cast<size_t>(r.index)).name}, {"at", xy(r.x, r.y, p)}};
  }
  return {};
}

/// A body's centre of mass, or the ground origin for body -1.
nlohmann::json body_anchor(const multibody::Model& m, int body) {
  if (body < 0) return {{"ground", nlohmann::json::array({0.0, 0.0})}};
  return {{"body", m.bodies.at(static_cast<size_t>(body)).name}, {"at", nlohmann::json::array({0.0, 0.0})}};
}

bool two_ended(ElementType type) {
  return type == ElementType::Bar || type == ElementType::Revolute || type == ElementType::PointOnLine ||
         type == ElementType::DistanceDriver || type == ElementType::Spring;
}

}  // namespace

nlohmann::json mechanism_sketch(const multibody::Model& model, const Eigen::VectorXd& p) {
  nlohmann::json j;
  j["points"] = nlohmann::json::array();
  for (const auto& point : model.points) j["points"].push_back(point.name);
  j["bodies"] = nlohmann::json::array();
  for (const auto& body : model.bodies) j["bodies"].push_back(body.name);
  nlohmann::json elements = nlohmann::json::array();
  for (const auto& e : model.elements) {
    nlohmann::json el = {{"name", e.name}, {"type", multibody::to_string(e.type)}};
    if (two_ended(e.type)) {
      el["a"] = anchor(model, e.a, p);
      el["b"] = anchor(model, e.b, p);
    } else if (e.type == ElementType::RotationalSpring && e.bar_a >= 0) {
      el["bars"] = {model.elements.at(static_cast<size_t>(e.bar_a)).name, model.elements.at(static_cast<size_t>(e.bar_b)).name};
    } else if (e.type == ElementType::Prismatic || e.type == ElementType::RotationalSpring) {
      el["a"] = body_anchor(model, e.body_a);
      el["b"] = body_anchor(model, e.body_b);
    } else if (e.type == ElementType::Force || e.type == ElementType::PointMass) {
      el["a"] = anchor(model, e.a, p);
    }
    elements.push_back(std::move(el));
  }
  j["elements"] = std::move(elements);
  nlohmann::json contacts = nlohmann::json::array();
  for (const auto& c : model.contacts) {
    if (c.kind != multibody::ContactKind::PointLine) continue;  // joint stops are not drawn
    nlohmann::json contact = {{"name", c.name},
                              {"point", anchor(model, c.point, p)},
                              {"line_point", xy(c.line_x, c.line_y, p)},
                              {"normal", xy(c.normal_x, c.normal_y, p)}};
    if (c.line_body >= 0) contact["line_body"] = model.bodies[static_cast<size_t>(c.line_body)].name;
    contacts.push_back(std::move(contact));
  }
  j["contacts"] = std::move(contacts);
  return j;
}

}  // namespace saltus::cli
