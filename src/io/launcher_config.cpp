// The launchers' names (launcher_config.hpp).
#include "shardplan/launcher_config.hpp"

namespace shardplan {

const char* to_string(ConfigFormat f) {
  switch (f) {
    case ConfigFormat::megatron:
      return "Megatron-LM";
    case ConfigFormat::deepspeed:
      return "DeepSpeed";
    case ConfigFormat::torchtitan:
      return "torchtitan";
    case ConfigFormat::accelerate:
      return "accelerate";
  }
  return "Megatron-LM";
}

}  // namespace shardplan
