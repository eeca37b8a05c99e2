// --headroom: memory each device keeps free. A plan fits when its reserved peak leaves at least
// the headroom; the search, the ladder and the memory verdict all decide on that one figure.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "support.hpp"

using shardplan::test::check_refused;
using shardplan::test::contains;
using shardplan::test::run_cli;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

const std::string kMemory =
    "memory --model llama-2-7b --gpu H100-SXM --gpus 8 --zero 1 --micro-batch 1 --seq-len 4096 "
    "--json";

std::string fmt_headroom(double gib) {
  return " --headroom " + std::to_string(static_cast<long long>(gib)) + "GiB";
}

nlohmann::json memory_json(const std::string& extra) {
  const auto r = run_cli(kMemory + extra);
  REQUIRE(r.out.size() > 0);
  return nlohmann::json::parse(r.out).at("memory");
}

}  // namespace

TEST_CASE("memory --headroom: fits while the spare covers it, not once it does not") {
  const auto plain = memory_json("");
  REQUIRE(plain.at("fits") == true);
  CHECK(plain.at("headroom_bytes").get<double>() == 0.0);
  const double capacity = plain.at("capacity_bytes").get<double>();
  const double margin = plain.at("margin_bytes").get<double>();
  REQUIRE(margin > 2 * kGiB);

  // A size in GiB is 2^30 bytes each; the spare is what it was (headroom changes no term).
  const double below_gib = std::floor(margin / kGiB) - 1;
  const auto below = memory_json(fmt_headroom(below_gib));
  CHECK(below.at("headroom_bytes").get<double>() == doctest::Approx(below_gib * kGiB));
  CHECK(below.at("fits") == true);
  CHECK(below.at("margin_bytes").get<double>() == doctest::Approx(margin));

  const double above_gib = std::ceil(margin / kGiB) + 1;
  const auto r = run_cli(kMemory + fmt_headroom(above_gib));
  CHECK(r.status == 1);  // does not fit
  const auto above = nlohmann::json::parse(r.out).at("memory");
  CHECK(above.at("fits") == false);
  CHECK(above.at("margin_bytes").get<double>() == doctest::Approx(margin));

  // A share is of the device's memory.
  const auto share = memory_json(" --headroom 10%");
  CHECK(share.at("headroom_bytes").get<double>() == doctest::Approx(0.10 * capacity));

  // The table says how the spare stands against the headroom.
  const auto text = run_cli("memory --model llama-2-7b --gpu H100-SXM --gpus 8 --zero 1 "
                            "--micro-batch 1 --seq-len 4096 --headroom " +
                            std::to_string(static_cast<int>(above_gib)) + "GiB");
  CHECK(text.status == 1);
  CHECK(contains(text.out, "DOES NOT FIT"));
  CHECK(contains(text.out, "short of the"));
  CHECK(contains(text.out, "kept free"));
}

TEST_CASE("plan --headroom: every plan it ranks or recommends leaves the headroom free") {
  const std::string args =
      "plan --model llama-3.1-70b --cluster dgx-h100 --gpus 64 --global-batch 256 --top 20 --json";
  const auto plain = run_cli(args);
  REQUIRE(plain.status == 0);
  const auto p = nlohmann::json::parse(plain.out);
  const double spare0 = p.at("recommended").at("memory").at("margin_bytes").get<double>();
  const double capacity = p.at("recommended").at("memory").at("capacity_bytes").get<double>();
  // Ask for more than the plain recommendation leaves: it can no longer be the one.
  const double headroom_gib = std::ceil(spare0 / kGiB) + 2;
  REQUIRE(headroom_gib * kGiB < capacity / 2);
  const auto r = run_cli(args + fmt_headroom(headroom_gib));
  REQUIRE(r.status == 0);
  const auto h = nlohmann::json::parse(r.out);
  const auto& rec = h.at("recommended").at("memory");
  CHECK(rec.at("headroom_bytes").get<double>() == doctest::Approx(headroom_gib * kGiB));
  CHECK(rec.at("margin_bytes").get<double>() >= headroom_gib * kGiB);
  CHECK(h.at("recommended").at("plan") != p.at("recommended").at("plan"));
  REQUIRE(h.at("ranked").size() > 0);
  for (const auto& x : h.at("ranked"))
    CHECK(x.at("memory").at("margin_bytes").get<double>() >= headroom_gib * kGiB);
}

TEST_CASE("plan's text says what the recommended plan leaves free, the figures of its JSON") {
  const std::string args =
      "plan --model llama-3.1-70b --cluster dgx-h100 --gpus 64 --global-batch 256 --headroom 8GiB";
  const auto text = run_cli(args);
  const auto json = run_cli(args + " --json");
  REQUIRE(text.status == 0);
  REQUIRE(json.status == 0);
  const auto mem = nlohmann::json::parse(json.out).at("recommended").at("memory");
  const double capacity = mem.at("capacity_bytes").get<double>() / kGiB;
  const double margin = mem.at("margin_bytes").get<double>() / kGiB;
  REQUIRE(mem.at("headroom_bytes").get<double>() == doctest::Approx(8 * kGiB));
  REQUIRE(margin > 8);
  char line[256];
  std::snprintf(line, sizeof line,
                "  memory %.2f GiB of %.2f GiB per device, %.2f GiB to spare, %.2f GiB beyond the "
                "8.00 GiB headroom asked\n",
                capacity - margin, capacity, margin, margin - 8);
  const std::string after_recommended = text.out.substr(text.out.find("Recommended ("));
  CHECK(contains(after_recommended.substr(0, after_recommended.find("Fastest found")), line));
}

TEST_CASE("provision --headroom: a share of each GPU type stays free on every option") {
  const auto r = run_cli(
      "provision --model llama-3.1-70b --tokens 15T --gpu H100,H200 --gpus 64,128 --headroom 20% "
      "--json");
  REQUIRE(r.status == 0);
  const auto options = nlohmann::json::parse(r.out).at("provision").at("options");
  REQUIRE(options.size() > 0);
  for (const auto& o : options) {
    if (!o.at("fits").get<bool>()) continue;
    // What each device leaves free (provision's "headroom" column) is at least 20% of it:
    // H100-SXM 79.65 GiB, H200 140.4 GiB as nvidia-smi reports them (profiles/gpus/).
    const double device = (o.at("gpu") == "H200" ? 140.4 : 79.65) * kGiB;
    CHECK(o.at("headroom_bytes").get<double>() >= 0.2 * device);
  }
}

TEST_CASE("--headroom refuses what is not a headroom, naming the flag") {
  const std::string base = "memory --model llama-2-7b --gpu H100-SXM --gpus 8 --zero 1 ";
  check_refused(base + "--headroom 8", "--headroom");        // no unit: bytes nobody means
  check_refused(base + "--headroom 100%", "--headroom");     // nothing left to use
  check_refused(base + "--headroom -1GiB", "--headroom");    // negative
  check_refused(base + "--headroom 200GiB", "--headroom");   // more than the device
  check_refused(base + "--headroom lots", "--headroom");     // not a size
}
