// "What was assumed": a note for every default the user might not expect, said in the text,
// the JSON notes and the HTML summary of every command that prices a plan.
#pragma once

#include "options.hpp"

namespace shardplan::cli {

/// What a command prices, for the notes that concern it.
struct AssumedFor {
  bool plan_given = true;  // the plan comes from the flags (estimate, memory, comm), not a search
  bool prices = false;     // the command reports the time and cost to train
};

/// Adds to in.notes: the sequence length capped below the model's own, ZeRO-0 taken when no
/// --zero was given, a --gpu that replaces the cluster preset's GPU, links measured by the
/// probe's CPU back-end; and, when the command prices a run of --tokens with no
/// --gpu-hour-cost, sets the GPU's list price (and says so).
void note_assumptions(const PlanningOptions& o, Inputs& in, AssumedFor what);

/// memory and comm time no run: --tokens and --gpu-hour-cost are refused there (exit 2).
void refuse_run_flags(const PlanningOptions& o, const char* command);

}  // namespace shardplan::cli
