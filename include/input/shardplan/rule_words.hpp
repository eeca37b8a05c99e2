// The edge's words for the plan rules: each broken rule becomes the flag that would fix it and a
// sentence saying what is wrong and what is valid.
#pragma once

#include <string>
#include <vector>

#include "shardplan/rules.hpp"

namespace shardplan {

/// A reason a plan cannot run, naming the flag that would fix it.
struct PlanProblem {
  std::string field;    // e.g. "--tp"
  std::string message;  // what is wrong and what would be valid
};

/// The flag and the sentence for one broken rule.
PlanProblem words(const RuleProblem& problem, const RuleContext& context);

/// What a rule asks of a plan, in a few words and without a particular plan ("the framework has
/// no ZeRO stage this rung needs"): for reasons that count refused plans by rule.
std::string rule_gist(RuleId rule);

/// Words for every rule the plan breaks (empty when it runs).
std::vector<PlanProblem> plan_problems(const ParallelPlan& plan, const RuleContext& context);

/// Throws InputError for the first rule no plan can keep (check_inputs).
void require_runnable_inputs(const RuleContext& context);

/// Throws InputError for the first rule the plan breaks, naming its flag; `prefix` goes before
/// the flag (a plan file's location); the message lists the other broken rules too.
void require_runnable(const ParallelPlan& plan, const RuleContext& context,
                      const std::string& prefix = "");

}  // namespace shardplan
